// Package dynamodb is the DynamoDB store of package idempotency: [NewStore] keeps
// idempotency entries in a DynamoDB table, in the layout of the idempotency records of
// Powertools for AWS Lambda (Python, the default, or TypeScript: [WithFormat]), so that Go and
// Powertools functions can share a table. It is a package of its own, as Powertools keeps its
// stores under persistence/, so that a function that imports idempotency (or batch) without
// this store links no DynamoDB client.
//
//	ddb := awsdynamodb.NewFromConfig(cfg) // github.com/aws/aws-sdk-go-v2/service/dynamodb
//	store, err := dynamodb.NewStore(ddb, "idempotency", dynamodb.WithLocalCache(256))
//	if err != nil {
//		log.Fatal(err) // an invalid option, found at start-up
//	}
//	receipt, err := idempotency.Do(ctx, store, idempotency.KafkaKey(r), nil, charge)
//
// [TableInput] gives the table's definition; turn on TTL on "expiration". The function's role
// needs dynamodb:GetItem, dynamodb:PutItem and dynamodb:DeleteItem on the table.
//
// An invalid option makes NewStore return a *toolkit.OptionError (matching
// toolkit.ErrInvalidOption) naming the option, and no store:
// "idempotency/dynamodb: invalid option WithLocalCache: want a size of at least 1, not 0".
package dynamodb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/idempotency"
)

// API is the part of the aws-sdk-go-v2 DynamoDB client the store uses: the
// function's role needs dynamodb:GetItem, dynamodb:PutItem and dynamodb:DeleteItem on the
// table, and nothing else.
type API interface {
	PutItem(ctx context.Context, in *awsdynamodb.PutItemInput, optFns ...func(*awsdynamodb.Options)) (*awsdynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *awsdynamodb.GetItemInput, optFns ...func(*awsdynamodb.Options)) (*awsdynamodb.GetItemOutput, error)
	DeleteItem(ctx context.Context, in *awsdynamodb.DeleteItemInput, optFns ...func(*awsdynamodb.Options)) (*awsdynamodb.DeleteItemOutput, error)
}

// Attributes names the attributes of the table. The defaults are Powertools'.
type Attributes struct {
	Key              string // partition key, "id"
	Expiry           string // "expiration", epoch seconds: the table's TTL attribute
	InProgressExpiry string // "in_progress_expiration", epoch milliseconds
	Status           string // "status"
	Data             string // "data", the result: a JSON string (FormatPython) or a DynamoDB value (FormatTypeScript)
	Validation       string // "validation", the payload hash
	// Owner is "owner": the Do call that holds the entry (Entry.Owner). Powertools neither
	// writes nor reads it; its completion (an UpdateItem) leaves it in place.
	Owner string
	// SortKey, when set, makes the entry key the sort key, under a partition key whose value
	// is StaticPartitionKey, as in Powertools' sort_key_attr and static_pk_value.
	SortKey            string
	StaticPartitionKey string
}

// DefaultAttributes are Powertools' attribute names, the same in both formats. Read it, do
// not assign to it: WithAttributes sets a store's names.
var DefaultAttributes = Attributes{
	Key:              "id",
	Expiry:           "expiration",
	InProgressExpiry: "in_progress_expiration",
	Status:           "status",
	Data:             "data",
	Validation:       "validation",
	Owner:            "owner",
}

// Store is an idempotency.Store that keeps entries in a DynamoDB table, in the layout of
// Powertools for Python ([idempotency.FormatPython], the default) or for TypeScript
// ([WithFormat]), so that Go and Powertools functions can share one table. Its methods are
// safe for concurrent use.
type Store struct {
	client API
	table  string
	attr   Attributes
	format idempotency.Format
	cache  *lru.Cache[string, idempotency.Entry]
	err    error // the first invalid option, while NewStore applies them
}

// Option configures a Store. An invalid option makes [NewStore] return a
// *toolkit.OptionError naming the option and the value, and no store.
type Option func(*Store)

// invalid records the first invalid option: option is its name, reason says what is wrong
// with the value it was given.
func (s *Store) invalid(option, reason string, args ...any) {
	if s.err == nil {
		s.err = optionError(option, fmt.Sprintf(reason, args...))
	}
}

// optionError is the error of an option, or an argument of NewStore, given a value the store
// cannot use.
func optionError(option, reason string) error {
	return &toolkit.OptionError{Package: "idempotency/dynamodb", Option: option, Reason: reason}
}

// errNotMade is the error of every call of a Store that NewStore did not
// make (a zero Store has no client and no table): it fails closed.
var errNotMade = optionError("Store", "a Store not made by NewStore")

func (s *Store) check() error {
	if s == nil || s.client == nil {
		return errNotMade
	}
	return nil
}

// WithAttributes sets the table's attribute names. Empty fields keep their defaults,
// [DefaultAttributes] (Powertools' names); by default there is no sort key.
func WithAttributes(a Attributes) Option {
	return func(s *Store) {
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
		set(&s.attr.Owner, a.Owner)
		s.attr.SortKey, s.attr.StaticPartitionKey = a.SortKey, a.StaticPartitionKey
	}
}

// WithLocalCache keeps up to size completed entries in memory (an LRU), so that a replay
// within the same execution environment makes no DynamoDB call; size must be at least 1.
// In-progress entries are never cached. By default there is no cache.
func WithLocalCache(size int) Option {
	return func(s *Store) {
		c, err := lru.New[string, idempotency.Entry](size)
		if err != nil {
			s.invalid("WithLocalCache", "want a size of at least 1, not %d", size)
			return
		}
		s.cache = c
	}
}

// WithFormat sets the layout of the entries: [idempotency.FormatPython] (the default) or
// [idempotency.FormatTypeScript]. Functions share entries only when they use the same
// format, the same key prefix and the same attribute names. The format decides how Do hashes
// keys and payloads, and how this store keeps a result (a JSON string, or a DynamoDB value)
// and the lease of a completed entry (dropped, or kept): see [idempotency.Format].
func WithFormat(f idempotency.Format) Option {
	return func(s *Store) {
		if f != idempotency.FormatPython && f != idempotency.FormatTypeScript {
			s.invalid("WithFormat", "%v: want FormatPython or FormatTypeScript", f)
			return
		}
		s.format = f
	}
}

// NewStore returns a store on the DynamoDB table. TableInput gives the table's
// definition. A nil client, an empty table name or an option given an invalid value is a
// *toolkit.OptionError (matching toolkit.ErrInvalidOption) that names the option and the
// value ("idempotency/dynamodb: invalid option WithLocalCache: want a size of at least 1,
// not 0"), and no store: options are checked once, here, as kgo.NewClient checks its own.
func NewStore(client API, table string, opts ...Option) (*Store, error) {
	s := &Store{client: client, table: table, attr: DefaultAttributes}
	if client == nil {
		s.invalid("NewStore", "nil client: want a DynamoDB client")
	}
	if table == "" {
		s.invalid("NewStore", "empty table name: want a table name")
	}
	for _, o := range opts {
		if o == nil {
			s.invalid("Option", "nil: want an option")
			continue
		}
		o(s)
	}
	if s.attr.SortKey != "" && s.attr.SortKey == s.attr.Key {
		s.invalid("WithAttributes", "the sort key %q is also the partition key", s.attr.SortKey)
	}
	if s.attr.SortKey != "" && s.attr.StaticPartitionKey == "" {
		s.attr.StaticPartitionKey = "idempotency#" + defaultPrefix()
	}
	if s.err != nil {
		return nil, s.err
	}
	return s, nil
}

// Format returns the layout of the store's entries.
func (s *Store) Format() idempotency.Format { return s.format }

// TableInput returns the CreateTable input for a table with the default attribute names,
// on demand. Turn on TTL on "expiration" after creating it (UpdateTimeToLive), so that
// DynamoDB deletes expired entries; the store checks expiry itself either way.
func TableInput(name string) *awsdynamodb.CreateTableInput {
	return &awsdynamodb.CreateTableInput{
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

func (s *Store) key(id string) map[string]types.AttributeValue {
	if s.attr.SortKey != "" {
		return map[string]types.AttributeValue{
			s.attr.Key:     &types.AttributeValueMemberS{Value: s.attr.StaticPartitionKey},
			s.attr.SortKey: &types.AttributeValueMemberS{Value: id},
		}
	}
	return map[string]types.AttributeValue{s.attr.Key: &types.AttributeValueMemberS{Value: id}}
}

func (s *Store) keyAttr() string {
	if s.attr.SortKey != "" {
		return s.attr.SortKey
	}
	return s.attr.Key
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// item writes an entry as an item, in the store's format.
func (s *Store) item(r *idempotency.Entry) (map[string]types.AttributeValue, error) {
	it := s.key(r.ID)
	if !r.Expiration.IsZero() {
		it[s.attr.Expiry] = num(r.Expiration.Unix())
	}
	it[s.attr.Status] = &types.AttributeValueMemberS{Value: string(r.Status)}
	// Python writes the lease on in-progress entries only; TypeScript's completion is an
	// UpdateItem that leaves it in place.
	if !r.InProgressExpiration.IsZero() && (r.Status == idempotency.StatusInProgress || s.format == idempotency.FormatTypeScript) {
		it[s.attr.InProgressExpiry] = num(r.InProgressExpiration.UnixMilli())
	}
	if r.Data != "" {
		if s.format == idempotency.FormatTypeScript {
			v, err := jsonToAttr(r.Data)
			if err != nil {
				return nil, fmt.Errorf("result as a DynamoDB value: %w", err)
			}
			it[s.attr.Data] = v
		} else {
			it[s.attr.Data] = &types.AttributeValueMemberS{Value: r.Data}
		}
	}
	if r.Validation != "" {
		it[s.attr.Validation] = &types.AttributeValueMemberS{Value: r.Validation}
	}
	if r.Owner != "" {
		it[s.attr.Owner] = &types.AttributeValueMemberS{Value: r.Owner}
	}
	return it, nil
}

// entry reads an item stored under id. An attribute of the wrong type or that does not parse
// is a *idempotency.CorruptEntryError: the entry is never read as if the attribute were missing.
func (s *Store) readEntry(id string, it map[string]types.AttributeValue) (*idempotency.Entry, error) {
	bad := func(name string, format string, args ...any) error {
		return &idempotency.CorruptEntryError{ID: id, Attribute: name, Err: fmt.Errorf(format, args...)}
	}
	str := func(name string, required bool) (string, error) {
		switch v := it[name].(type) {
		case *types.AttributeValueMemberS:
			return v.Value, nil
		case nil:
			if required {
				return "", bad(name, "missing")
			}
			return "", nil
		default:
			return "", bad(name, "is %s, want a string (S)", attrType(v))
		}
	}
	n := func(name string) (int64, bool, error) {
		switch v := it[name].(type) {
		case *types.AttributeValueMemberN:
			if i, err := strconv.ParseInt(v.Value, 10, 64); err == nil {
				return i, true, nil
			}
			// Powertools writes integers; a fraction is truncated, anything else is an error.
			f, err := strconv.ParseFloat(v.Value, 64)
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) >= 1<<62 {
				return 0, false, bad(name, "number %q is not an integer timestamp", v.Value)
			}
			return int64(f), true, nil
		case nil:
			return 0, false, nil
		default:
			return 0, false, bad(name, "is %s, want a number (N)", attrType(v))
		}
	}
	r := &idempotency.Entry{}
	var err error
	if r.ID, err = str(s.keyAttr(), true); err != nil {
		return nil, err
	}
	status, err := str(s.attr.Status, true)
	if err != nil {
		return nil, err
	}
	r.Status = idempotency.Status(status)
	if r.Status != idempotency.StatusInProgress && r.Status != idempotency.StatusCompleted {
		return nil, bad(s.attr.Status, "unknown status %q, want %s or %s", status, idempotency.StatusInProgress, idempotency.StatusCompleted)
	}
	if r.Validation, err = str(s.attr.Validation, false); err != nil {
		return nil, err
	}
	if r.Owner, err = str(s.attr.Owner, false); err != nil {
		return nil, err
	}
	if e, ok, err := n(s.attr.Expiry); err != nil {
		return nil, err
	} else if ok {
		r.Expiration = time.Unix(e, 0)
	}
	if e, ok, err := n(s.attr.InProgressExpiry); err != nil {
		return nil, err
	} else if ok {
		r.InProgressExpiration = time.UnixMilli(e)
	}
	switch v := it[s.attr.Data]; {
	case v == nil:
	case s.format == idempotency.FormatTypeScript:
		data, err := attrToJSON(v)
		if err != nil {
			return nil, bad(s.attr.Data, "%v", err)
		}
		r.Data = string(data)
	default:
		if r.Data, err = str(s.attr.Data, false); err != nil {
			return nil, err
		}
		if !json.Valid([]byte(r.Data)) {
			return nil, bad(s.attr.Data, "not JSON text: %.80q", r.Data)
		}
	}
	return r, nil
}

// Acquire writes the in-progress entry on condition that there is no live entry of
// another owner: no entry, or the caller's own (an earlier attempt of this write), or a
// completed one that has expired, or an in-progress one whose lease has ended (or, without a
// lease, that has expired). Unlike Powertools' condition, an in-progress entry's
// expiration never ends its lease. When the condition fails it reads the existing entry
// from the failure (ReturnValuesOnConditionCheckFailure=ALL_OLD) or, when the response
// carries none, with a consistent GetItem.
func (s *Store) Acquire(ctx context.Context, r *idempotency.Entry, now time.Time) (*idempotency.Entry, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	item, err := s.item(r)
	if err != nil {
		return nil, err
	}
	if s.cache != nil {
		if c, ok := s.cache.Get(r.ID); ok && c.Status == idempotency.StatusCompleted && completedLive(&c, now) {
			return &c, idempotency.ErrExists
		}
	}
	// One level of parentheses: dynalite's parser takes several times longer per request on
	// the nested form of the same condition.
	cond := "attribute_not_exists(#id) OR " +
		"(#status = :inprogress AND #in_progress_expiry < :now_in_millis) OR " +
		"(#status = :completed AND #expiry < :now) OR " +
		"(#status = :inprogress AND attribute_not_exists(#in_progress_expiry) AND #expiry < :now)"
	names := map[string]string{
		"#id":                 s.keyAttr(),
		"#expiry":             s.attr.Expiry,
		"#status":             s.attr.Status,
		"#in_progress_expiry": s.attr.InProgressExpiry,
	}
	values := map[string]types.AttributeValue{
		":now":           num(now.Unix()),
		":now_in_millis": num(now.UnixMilli()),
		":inprogress":    &types.AttributeValueMemberS{Value: string(idempotency.StatusInProgress)},
		":completed":     &types.AttributeValueMemberS{Value: string(idempotency.StatusCompleted)},
	}
	if r.Owner != "" {
		cond = "#owner = :owner OR " + cond
		names["#owner"] = s.attr.Owner
		values[":owner"] = &types.AttributeValueMemberS{Value: r.Owner}
	}
	_, err = s.client.PutItem(ctx, &awsdynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return nil, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, err
	}
	var existing *idempotency.Entry
	if len(ccf.Item) > 0 {
		if existing, err = s.readEntry(r.ID, ccf.Item); err != nil {
			return nil, err
		}
	} else {
		out, err := s.client.GetItem(ctx, &awsdynamodb.GetItemInput{
			TableName:      aws.String(s.table),
			Key:            s.key(r.ID),
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return nil, err
		}
		if len(out.Item) > 0 {
			if existing, err = s.readEntry(r.ID, out.Item); err != nil {
				return nil, err
			}
		}
	}
	if existing != nil && s.cache != nil && existing.Status == idempotency.StatusCompleted {
		s.cache.Add(r.ID, *existing)
	}
	return existing, idempotency.ErrExists
}

// Complete stores the completed entry with a PutItem on condition that the stored entry
// is still the caller's (see [Store.Release]); when it is not, it stores nothing and
// returns an error wrapping the ConditionalCheckFailedException.
func (s *Store) Complete(ctx context.Context, r *idempotency.Entry) error {
	if err := s.check(); err != nil {
		return err
	}
	err := s.putOwned(ctx, r, false)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("the entry is no longer this call's (its lease ended, and another caller took it over or it was deleted): %w", err)
	}
	if err == nil && s.cache != nil {
		s.cache.Add(r.ID, *r)
	}
	return err
}

// Release deletes the in-progress entry on condition that it is still the caller's: in
// progress, with the caller's owner; for an entry without an owner, with none and the lease
// the caller wrote. An entry another caller has taken over since, or no entry, is left
// alone.
func (s *Store) Release(ctx context.Context, r *idempotency.Entry) error {
	if err := s.check(); err != nil {
		return err
	}
	cond, names, values := s.owned(r, true)
	_, err := s.client.DeleteItem(ctx, &awsdynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       s.key(r.ID),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // no longer ours: nothing to release
	}
	return err
}

// Renew stores the in-progress entry r, with its later lease, with a PutItem on condition
// that the stored entry is still the caller's and in progress; when it is not, it stores
// nothing and returns an error wrapping idempotency.ErrLeaseLost. A PutItem rather than an
// UpdateItem,
// so that the function's role needs no more than it did.
func (s *Store) Renew(ctx context.Context, r *idempotency.Entry) error {
	if err := s.check(); err != nil {
		return err
	}
	if r.Owner == "" || r.Status != idempotency.StatusInProgress {
		return optionError("Renew", "an entry without an owner, or not in progress")
	}
	err := s.putOwned(ctx, r, true)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("%w: the entry is completed, taken over by another caller, or gone: %w", idempotency.ErrLeaseLost, err)
	}
	return err
}

// putOwned writes r with a PutItem on condition that the stored entry is still the caller's
// (see [Store.owned]; inProgress: and still in progress), for Complete and Renew,
// which say what a failed condition means.
func (s *Store) putOwned(ctx context.Context, r *idempotency.Entry, inProgress bool) error {
	item, err := s.item(r)
	if err != nil {
		return err
	}
	cond, names, values := s.owned(r, inProgress)
	_, err = s.client.PutItem(ctx, &awsdynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	return err
}

// owned is the condition that the stored entry is r's: it has r's owner, or, when r has
// none, it has none either and (for a release) r's lease. A release also wants it in
// progress.
func (s *Store) owned(r *idempotency.Entry, release bool) (string, map[string]string, map[string]types.AttributeValue) {
	names := map[string]string{"#owner": s.attr.Owner}
	values := map[string]types.AttributeValue{}
	var cond string
	if r.Owner != "" {
		cond = "#owner = :owner"
		values[":owner"] = &types.AttributeValueMemberS{Value: r.Owner}
	} else {
		// attribute_not_exists holds for a missing item too: require the item.
		cond = "attribute_exists(#id) AND attribute_not_exists(#owner)"
		names["#id"] = s.keyAttr()
		if release {
			cond += " AND #in_progress_expiry = :lease"
			names["#in_progress_expiry"] = s.attr.InProgressExpiry
			values[":lease"] = num(r.InProgressExpiration.UnixMilli())
		}
	}
	if release {
		cond += " AND #status = :inprogress"
		names["#status"] = s.attr.Status
		values[":inprogress"] = &types.AttributeValueMemberS{Value: string(idempotency.StatusInProgress)}
	}
	if len(values) == 0 {
		values = nil // DynamoDB refuses an empty map
	}
	return cond, names, values
}

// completedLive reports whether a completed entry still holds its key at now, by the
// store's condition: until its expiration second has passed (an entry without expiration
// never expires, by the condition as in Python).
func completedLive(r *idempotency.Entry, now time.Time) bool {
	return r.Expiration.IsZero() || now.Unix() <= r.Expiration.Unix()
}

// defaultPrefix is the function's name, or "idempotency" outside Lambda, as Do's default key
// prefix (idempotency.WithKeyPrefix).
func defaultPrefix() string {
	if p := os.Getenv("AWS_LAMBDA_FUNCTION_NAME"); p != "" {
		return p
	}
	return "idempotency"
}
