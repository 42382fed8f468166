package idempotency_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
)

// callCounter counts DynamoDB operations (one per API call, not per HTTP attempt) through a
// middleware on the Initialize step.
type callCounter struct {
	mu    sync.Mutex
	ops   map[string]int
	total atomic.Int64
}

// option is a client option that installs the counter.
func (c *callCounter) option(o *awsdynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("countCalls",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.add(awsmiddleware.GetOperationName(ctx))
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

func (c *callCounter) add(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ops == nil {
		c.ops = map[string]int{}
	}
	c.ops[op]++
	c.total.Add(1)
}

// snapshot returns the counts per operation since the last reset.
func (c *callCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.ops)
}

func (c *callCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops = nil
	c.total.Store(0)
}

// expectCalls fails t unless the counts since the last reset are want (nil or empty: none).
func (c *callCounter) expectCalls(t testing.TB, what string, want map[string]int) {
	t.Helper()
	got := c.snapshot()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s: DynamoDB calls = %v, want %v", what, got, want)
	}
}

// env is one dynalite server for a test (or a group of subtests), with a client whose calls
// are counted. Tables are per subtest: newTable.
type env struct {
	srv    *standin.DynamoDB
	client *awsdynamodb.Client
	calls  *callCounter
}

// newEnv starts dynalite for t; it fails t (never skips) if the server cannot start.
func newEnv(t testing.TB) *env {
	t.Helper()
	srv := standintest.StartDynamoDB(t)
	calls := &callCounter{}
	return &env{srv: srv, client: srv.Client(calls.option), calls: calls}
}

var tableSeq atomic.Int64

// newTable creates a table with dynamodb.TableInput and returns its name.
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
	e.calls.reset()
}

// getItem reads an item with a consistent read, without counting the call. It returns nil
// when there is none.
func (e *env) getItem(t testing.TB, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := e.srv.Client().GetItem(context.Background(), &awsdynamodb.GetItemInput{
		TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// item reads the item with the default key layout ("id").
func (e *env) item(t testing.TB, table, id string) map[string]types.AttributeValue {
	t.Helper()
	return e.getItem(t, table, map[string]types.AttributeValue{"id": s(id)})
}

// putItem writes an item directly, without counting the call.
func (e *env) putItem(t testing.TB, table string, item map[string]types.AttributeValue) {
	t.Helper()
	_, err := e.srv.Client().PutItem(context.Background(), &awsdynamodb.PutItemInput{TableName: aws.String(table), Item: item})
	if err != nil {
		t.Fatalf("PutItem: %v", err)
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int64) types.AttributeValue { return &types.AttributeValueMemberN{Value: fmt.Sprint(v)} }

// attrNames returns the sorted attribute names of an item.
func attrNames(it map[string]types.AttributeValue) []string {
	return slices.Sorted(maps.Keys(it))
}

// str returns a string attribute, failing t if it is not one.
func str(t testing.TB, it map[string]types.AttributeValue, name string) string {
	t.Helper()
	v, ok := it[name].(*types.AttributeValueMemberS)
	if !ok {
		t.Fatalf("attribute %q = %#v, want a string (S); item has %v", name, it[name], attrNames(it))
	}
	return v.Value
}

// num returns a number attribute's text, failing t if it is not one.
func num(t testing.TB, it map[string]types.AttributeValue, name string) string {
	t.Helper()
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("attribute %q = %#v, want a number (N); item has %v", name, it[name], attrNames(it))
	}
	return v.Value
}

// keyID is the stored ID Do writes for key.
func keyID(t testing.TB, key string, opts ...idempotency.Option) string {
	t.Helper()
	id, err := idempotency.KeyID(idempotency.FormatPython, key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// fixedClock returns a clock that always says at.
func fixedClock(at time.Time) idempotency.Option {
	return idempotency.WithClock(func() time.Time { return at })
}

// counted wraps fn, counting its calls.
func counted[T any](calls *atomic.Int32, fn func(context.Context) (T, error)) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		calls.Add(1)
		return fn(ctx)
	}
}

// value returns a function that returns v.
func value[T any](v T) func(context.Context) (T, error) {
	return func(context.Context) (T, error) { return v, nil }
}

// newStore is dynamodb.NewStore for options the test knows to be valid: an error
// fails the test.
func newStore(tb testing.TB, client dynamodb.API, table string, opts ...dynamodb.Option) *dynamodb.Store {
	tb.Helper()
	s, err := dynamodb.NewStore(client, table, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
