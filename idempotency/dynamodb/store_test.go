package dynamodb_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
)

// TestConformance runs idempotencytest's suite on the DynamoDB store, on dynalite, in both
// formats and in the sort-key layout.
func TestConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		opts []dynamodb.Option
		sort bool
	}{
		{"python", nil, false},
		{"typescript", []dynamodb.Option{dynamodb.WithFormat(idempotency.FormatTypeScript)}, false},
		{"python-sort-key", []dynamodb.Option{dynamodb.WithAttributes(dynamodb.Attributes{Key: "pk", SortKey: "sk"})}, true},
		{"typescript-sort-key", []dynamodb.Option{dynamodb.WithFormat(idempotency.FormatTypeScript),
			dynamodb.WithAttributes(dynamodb.Attributes{Key: "pk", SortKey: "sk"})}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := e.newTable(t)
			if tc.sort {
				table += "-sk"
				e.createTable(t, &awsdynamodb.CreateTableInput{
					TableName: aws.String(table),
					AttributeDefinitions: []types.AttributeDefinition{
						{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
						{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
					},
					KeySchema: []types.KeySchemaElement{
						{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
						{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
					},
				})
			}
			store := newStore(t, e.client, table, tc.opts...)
			idempotencytest.TestStore(t, func(*testing.T) idempotency.Store { return store })
		})
	}
}

// TestInvalidOptions: NewStore checks its arguments and options once, when it
// is called: a bad one is an error wrapping ErrInvalidOption that names it, and no store.
// Before, the store was made and every call of it failed.
func TestInvalidOptions(t *testing.T) {
	e := newEnv(t)
	table := e.newTable(t)
	client := &countingAPI{API: e.client}
	for _, tc := range []struct {
		name   string
		client dynamodb.API
		table  string
		opts   []dynamodb.Option
		want   string
	}{
		{"WithLocalCache(0)", client, table, []dynamodb.Option{dynamodb.WithLocalCache(0)}, "idempotency/dynamodb: invalid option WithLocalCache: want a size of at least 1, not 0"},
		{"WithFormat(7)", client, table, []dynamodb.Option{dynamodb.WithFormat(7)}, "invalid option WithFormat: Format(7)"},
		{"empty table", client, "", nil, `idempotency/dynamodb: invalid option NewStore: empty table name: want a table name`},
		{"nil client", nil, table, nil, "invalid option NewStore: nil client"},
		{"nil Option", client, table, []dynamodb.Option{nil}, "invalid option Option: nil"},
		{"sort key is the key", client, table, []dynamodb.Option{dynamodb.WithAttributes(dynamodb.Attributes{SortKey: "id"})}, `sort key "id"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client.calls.Store(0)
			store, err := dynamodb.NewStore(tc.client, tc.table, tc.opts...)
			if !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) || store != nil {
				t.Errorf("NewStore = %v, %v, want no store and ErrInvalidOption naming %s", store, err, tc.want)
			}
			if n := client.calls.Load(); n != 0 {
				t.Errorf("NewStore made %d DynamoDB calls, want none", n)
			}
		})
	}
	// A dynamodb.Store not made by NewStore fails closed.
	ran := 0
	_, err := idempotency.Do(context.Background(), &dynamodb.Store{}, "k", nil, func(context.Context) (int, error) { ran++; return 1, nil })
	if !errors.Is(err, toolkit.ErrInvalidOption) || ran != 0 {
		t.Errorf("Do on a zero dynamodb.Store = %v (fn ran %d times), want ErrInvalidOption", err, ran)
	}
}

// countingAPI counts the calls that reach the DynamoDB client.
type countingAPI struct {
	dynamodb.API
	calls atomic.Int32
}

func (c *countingAPI) PutItem(ctx context.Context, in *awsdynamodb.PutItemInput, optFns ...func(*awsdynamodb.Options)) (*awsdynamodb.PutItemOutput, error) {
	c.calls.Add(1)
	return c.API.PutItem(ctx, in, optFns...)
}

func (c *countingAPI) GetItem(ctx context.Context, in *awsdynamodb.GetItemInput, optFns ...func(*awsdynamodb.Options)) (*awsdynamodb.GetItemOutput, error) {
	c.calls.Add(1)
	return c.API.GetItem(ctx, in, optFns...)
}

func (c *countingAPI) DeleteItem(ctx context.Context, in *awsdynamodb.DeleteItemInput, optFns ...func(*awsdynamodb.Options)) (*awsdynamodb.DeleteItemOutput, error) {
	c.calls.Add(1)
	return c.API.DeleteItem(ctx, in, optFns...)
}

// env is one dynalite server for a test, with a client.
type env struct {
	srv    *standin.DynamoDB
	client *awsdynamodb.Client
}

// newEnv starts dynalite for t; it fails t (never skips) if the server cannot start.
func newEnv(t testing.TB) *env {
	t.Helper()
	srv := standintest.StartDynamoDB(t)
	return &env{srv: srv, client: srv.Client()}
}

var tableSeq atomic.Int64

// newTable creates a table with TableInput and returns its name.
func (e *env) newTable(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("idempotency-%d", tableSeq.Add(1))
	e.createTable(t, dynamodb.TableInput(name))
	return name
}

func (e *env) createTable(t testing.TB, in *awsdynamodb.CreateTableInput) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := standin.CreateTable(ctx, e.client, in); err != nil {
		t.Fatalf("create table: %v\ndynalite output:\n%s", err, e.srv.Output())
	}
}

func newStore(tb testing.TB, client dynamodb.API, table string, opts ...dynamodb.Option) *dynamodb.Store {
	tb.Helper()
	s, err := dynamodb.NewStore(client, table, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
