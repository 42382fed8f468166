package dynamodb_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// A Lambda function keeps one store for all invocations, made once at start-up from the
// function's AWS configuration. The table is created from TableInput (with TTL on
// "expiration"). An invalid option is an error of NewStore, at start-up, not of
// the first record.
func ExampleNewStore() {
	// In a function: cfg, err := config.LoadDefaultConfig(ctx); client := awsdynamodb.NewFromConfig(cfg).
	client := awsdynamodb.New(awsdynamodb.Options{Region: "eu-west-1"})
	store, err := dynamodb.NewStore(client, "idempotency", dynamodb.WithLocalCache(256))
	if err != nil {
		fmt.Println(err) // in a function: log.Fatal, at start-up
		return
	}
	fmt.Println("entries in the layout of", store.Format())

	handle := func(ctx context.Context, r *kafkaevent.Record) (string, error) {
		return idempotency.Do(ctx, store, idempotency.KafkaKey(r), nil, func(ctx context.Context) (string, error) {
			return "sent", nil // the side effect, once per record
		}, idempotency.WithMaxLease(time.Minute))
	}
	_ = handle

	_, err = dynamodb.NewStore(client, "idempotency", dynamodb.WithLocalCache(0))
	fmt.Println(err)
	fmt.Println(errors.Is(err, toolkit.ErrInvalidOption))

	// Output:
	// entries in the layout of python
	// idempotency/dynamodb: invalid option WithLocalCache: want a size of at least 1, not 0
	// true
}

// TableInput is the definition of a table in the default layout, for CreateTable (or for
// comparing with a CloudFormation resource).
func ExampleTableInput() {
	in := dynamodb.TableInput("idempotency")
	fmt.Println(*in.TableName, in.BillingMode)
	for _, k := range in.KeySchema {
		fmt.Println(*k.AttributeName, k.KeyType)
	}
	// Then: client.CreateTable(ctx, in), and UpdateTimeToLive on "expiration".

	// Output:
	// idempotency PAY_PER_REQUEST
	// id HASH
}

// WithFormat selects the record layout of Powertools for TypeScript, so that a Go function
// and a TypeScript function that use the same table, key prefix and key share records. The
// same key is stored under another ID in each format.
func ExampleWithFormat() {
	client := awsdynamodb.New(awsdynamodb.Options{Region: "eu-west-1"})
	store, err := dynamodb.NewStore(client, "idempotency", dynamodb.WithFormat(idempotency.FormatTypeScript))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(store.Format())

	// The IDs each format writes, shown with in-memory stores of each format.
	for _, f := range []idempotency.Format{idempotency.FormatPython, idempotency.FormatTypeScript} {
		mem := idempotencytest.NewStore(idempotencytest.WithFormat(f))
		_, err := idempotency.Do(context.Background(), mem, "orders-0-42", nil,
			func(context.Context) (string, error) { return "sent", nil }, idempotency.WithKeyPrefix("orders-fn"))
		fmt.Println(f, mem.Records()[0].ID, err)
	}

	// Output:
	// typescript
	// python orders-fn#524c0e2c37707af4f090042a2c5af8d9 <nil>
	// typescript orders-fn#UkwOLDdwevTwkAQqLFr42Q== <nil>
}
