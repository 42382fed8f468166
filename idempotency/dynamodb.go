package idempotency

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	lru "github.com/hashicorp/golang-lru/v2"
)

// DynamoDBAPI is the part of the aws-sdk-go-v2 DynamoDB client the store uses.
type DynamoDBAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Attributes names the attributes of the table. The defaults are Powertools'.
type Attributes struct {
	Key              string // partition key, "id"
	Expiry           string // "expiration", epoch seconds: the table's TTL attribute
	InProgressExpiry string // "in_progress_expiration", epoch milliseconds
	Status           string // "status"
	Data             string // "data", the result as a JSON string
	Validation       string // "validation", the payload hash
	// SortKey, when set, makes the record key the sort key, under a partition key whose value
	// is StaticPartitionKey, as in Powertools' sort_key_attr and static_pk_value.
	SortKey            string
	StaticPartitionKey string
}

// DefaultAttributes are Powertools' attribute names.
var DefaultAttributes = Attributes{
	Key:              "id",
	Expiry:           "expiration",
	InProgressExpiry: "in_progress_expiration",
	Status:           "status",
	Data:             "data",
	Validation:       "validation",
}

// DynamoDBStore keeps idempotency records in a DynamoDB table, in the layout Powertools for
// Python uses, so that Go and Python functions can share one table.
type DynamoDBStore struct {
	client DynamoDBAPI
	table  string
	attr   Attributes
	cache  *lru.Cache[string, Record]
}

// StoreOption configures a DynamoDBStore.
type StoreOption func(*DynamoDBStore)

// WithAttributes sets the table's attribute names; empty fields keep their defaults.
func WithAttributes(a Attributes) StoreOption {
	return func(s *DynamoDBStore) {
		set := func(dst *string, v string) {
			if v != "" {
				*dst = v
			}
		}
		set(&s.attr.Key, a.Key)
		set(&s.attr.Expiry, a.Expiry)
		set(&s.attr.InProgressExpiry, a.InProgressExpiry)
		set(&s.attr.Status, a.Status)
		set(&s.attr.Data, a.Data)
		set(&s.attr.Validation, a.Validation)
		s.attr.SortKey, s.attr.StaticPartitionKey = a.SortKey, a.StaticPartitionKey
	}
}

// WithLocalCache keeps up to size completed records in memory (an LRU), so that a replay
// within the same execution environment makes no DynamoDB call. In-progress records are
// never cached.
func WithLocalCache(size int) StoreOption {
	return func(s *DynamoDBStore) {
		if size > 0 {
			s.cache, _ = lru.New[string, Record](size)
		}
	}
}

// NewDynamoDBStore returns a store on the DynamoDB table. TableInput gives the table's
// definition.
func NewDynamoDBStore(client DynamoDBAPI, table string, opts ...StoreOption) *DynamoDBStore {
	s := &DynamoDBStore{client: client, table: table, attr: DefaultAttributes}
	for _, o := range opts {
		o(s)
	}
	if s.attr.SortKey != "" && s.attr.StaticPartitionKey == "" {
		s.attr.StaticPartitionKey = "idempotency#" + defaultFunctionName()
	}
	return s
}

func defaultFunctionName() string {
	cfg := newConfig(nil)
	return cfg.prefix
}

// TableInput returns the CreateTable input for a table with the default attribute names,
// on demand. Turn on TTL on "expiration" after creating it (UpdateTimeToLive), so that
// DynamoDB deletes expired records; the store checks expiry itself either way.
func TableInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(DefaultAttributes.Key), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(DefaultAttributes.Key), KeyType: types.KeyTypeHash},
		},
	}
}

func (s *DynamoDBStore) key(id string) map[string]types.AttributeValue {
	if s.attr.SortKey != "" {
		return map[string]types.AttributeValue{
			s.attr.Key:     &types.AttributeValueMemberS{Value: s.attr.StaticPartitionKey},
			s.attr.SortKey: &types.AttributeValueMemberS{Value: id},
		}
	}
	return map[string]types.AttributeValue{s.attr.Key: &types.AttributeValueMemberS{Value: id}}
}

func (s *DynamoDBStore) keyAttr() string {
	if s.attr.SortKey != "" {
		return s.attr.SortKey
	}
	return s.attr.Key
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// item writes a record as an item.
func (s *DynamoDBStore) item(r *Record) map[string]types.AttributeValue {
	it := s.key(r.ID)
	it[s.attr.Expiry] = num(r.Expiration.Unix())
	it[s.attr.Status] = &types.AttributeValueMemberS{Value: string(r.Status)}
	if r.Status == StatusInProgress {
		it[s.attr.InProgressExpiry] = num(r.InProgressExpiration.UnixMilli())
	}
	if r.Data != "" {
		it[s.attr.Data] = &types.AttributeValueMemberS{Value: r.Data}
	}
	if r.Validation != "" {
		it[s.attr.Validation] = &types.AttributeValueMemberS{Value: r.Validation}
	}
	return it
}

// record reads an item.
func (s *DynamoDBStore) record(it map[string]types.AttributeValue) *Record {
	str := func(name string) string {
		if v, ok := it[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	n := func(name string) int64 {
		if v, ok := it[name].(*types.AttributeValueMemberN); ok {
			f, _ := strconv.ParseFloat(v.Value, 64) // Powertools writes integers; be lenient
			return int64(f)
		}
		return 0
	}
	r := &Record{ID: str(s.keyAttr()), Status: Status(str(s.attr.Status)), Data: str(s.attr.Data), Validation: str(s.attr.Validation)}
	if e := n(s.attr.Expiry); e != 0 {
		r.Expiration = time.Unix(e, 0)
	}
	if e := n(s.attr.InProgressExpiry); e != 0 {
		r.InProgressExpiration = time.UnixMilli(e)
	}
	return r
}

// Acquire writes the in-progress record with Powertools' condition: no record, or an
// expired one, or an in-progress one whose lease has ended. When the condition fails it reads
// the existing record from the failure (ReturnValuesOnConditionCheckFailure=ALL_OLD) or, when
// the response carries none, with a consistent GetItem.
func (s *DynamoDBStore) Acquire(ctx context.Context, r *Record, now time.Time) (*Record, error) {
	if s.cache != nil {
		if c, ok := s.cache.Get(r.ID); ok && c.Status == StatusCompleted && c.live(now) {
			return &c, ErrExists
		}
	}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item:      s.item(r),
		ConditionExpression: aws.String("attribute_not_exists(#id) OR #expiry < :now OR " +
			"(#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)"),
		ExpressionAttributeNames: map[string]string{
			"#id":                 s.keyAttr(),
			"#expiry":             s.attr.Expiry,
			"#status":             s.attr.Status,
			"#in_progress_expiry": s.attr.InProgressExpiry,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":           num(now.Unix()),
			":now_in_millis": num(now.UnixMilli()),
			":inprogress":    &types.AttributeValueMemberS{Value: string(StatusInProgress)},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return nil, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, err
	}
	var existing *Record
	if len(ccf.Item) > 0 {
		existing = s.record(ccf.Item)
	} else {
		out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(s.table),
			Key:            s.key(r.ID),
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return nil, err
		}
		if len(out.Item) > 0 {
			existing = s.record(out.Item)
		}
	}
	if existing != nil && s.cache != nil && existing.Status == StatusCompleted {
		s.cache.Add(r.ID, *existing)
	}
	return existing, ErrExists
}

// Complete stores the completed record.
func (s *DynamoDBStore) Complete(ctx context.Context, r *Record) error {
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: s.item(r)})
	if err == nil && s.cache != nil {
		s.cache.Add(r.ID, *r)
	}
	return err
}

// Release deletes the in-progress record, on condition that it is still the caller's: in
// progress, with the lease the caller wrote. A record another caller has taken over since is
// left alone.
func (s *DynamoDBStore) Release(ctx context.Context, r *Record) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:           aws.String(s.table),
		Key:                 s.key(r.ID),
		ConditionExpression: aws.String("#status = :inprogress AND #in_progress_expiry = :lease"),
		ExpressionAttributeNames: map[string]string{
			"#status":             s.attr.Status,
			"#in_progress_expiry": s.attr.InProgressExpiry,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":inprogress": &types.AttributeValueMemberS{Value: string(StatusInProgress)},
			":lease":      num(r.InProgressExpiration.UnixMilli()),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // no longer ours: nothing to release
	}
	return err
}
