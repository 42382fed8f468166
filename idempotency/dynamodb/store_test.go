package dynamodb_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/internal/localserver"
	"github.com/kafkalambda/toolkit/internal/localservertest"
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

// env is one dynalite server for a test, with a client.
type env struct {
	srv    *localserver.DynamoDB
	client *awsdynamodb.Client
}

// newEnv starts dynalite for t; it fails t (never skips) if the server cannot start.
func newEnv(t testing.TB) *env {
	t.Helper()
	srv := localservertest.StartDynamoDB(t)
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
	if err := localserver.CreateTable(ctx, e.client, in); err != nil {
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
