package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

func ExampleDo() {
	// An in-memory store shows the flow; a function uses NewDynamoDBStore.
	store := idempotencytest.NewStore()
	ctx := context.Background()

	type order struct {
		ID     string  `json:"id"`
		Amount float64 `json:"amount"`
	}
	type receipt struct {
		ChargeID string `json:"chargeId"`
	}
	charges := 0
	charge := func(o order) func(context.Context) (receipt, error) {
		return func(context.Context) (receipt, error) {
			charges++
			return receipt{ChargeID: fmt.Sprintf("ch-%d", charges)}, nil
		}
	}
	replayed := idempotency.WithReplayHook(func(_ context.Context, r *idempotency.Entry) {
		fmt.Println("replayed", r.Status)
	})

	o := order{ID: "o-1", Amount: 25}
	// The key is the order ID; the payload is the order, which must not change for that key.
	r1, err := idempotency.Do(ctx, store, o.ID, o, charge(o), replayed)
	fmt.Println(r1.ChargeID, err)

	// The same order delivered again: the stored receipt, without charging twice.
	r2, err := idempotency.Do(ctx, store, o.ID, o, charge(o), replayed)
	fmt.Println(r2.ChargeID, err)

	// The same key with another amount is refused.
	_, err = idempotency.Do(ctx, store, o.ID, order{ID: "o-1", Amount: 30}, charge(o))
	fmt.Println(errors.Is(err, idempotency.ErrPayloadMismatch))

	// A failed attempt leaves no record, so the retry runs.
	_, err = idempotency.Do(ctx, store, "o-2", nil, func(context.Context) (receipt, error) {
		return receipt{}, errors.New("card declined")
	})
	fmt.Println(err)
	r3, err := idempotency.Do(ctx, store, "o-2", nil, charge(order{ID: "o-2"}))
	fmt.Println(r3.ChargeID, err, "charges:", charges)

	// Output:
	// ch-1 <nil>
	// replayed COMPLETED
	// ch-1 <nil>
	// true
	// card declined
	// ch-2 <nil> charges: 2
}

// A Do inside another Do's function, on the same store and key, runs inside the outer call's
// lease: this is what happens when batch.WithIdempotency wraps a handler that calls Do on
// KafkaKey itself. The outer call's completion records both; a redelivery replays it.
func ExampleDo_nested() {
	store := idempotencytest.NewStore()
	ctx := context.Background()
	r := &kafkaevent.Record{Topic: "orders", Partition: 0, Offset: 7}

	handler := func(ctx context.Context) (string, error) {
		// In the handler: the same key, already held by the caller.
		return idempotency.Do(ctx, store, idempotency.KafkaKey(r), nil, func(context.Context) (string, error) {
			fmt.Println("charging")
			return "ch-7", nil
		})
	}
	for range 2 { // a delivery and a redelivery
		got, err := idempotency.Do(ctx, store, idempotency.KafkaKey(r), nil, handler)
		fmt.Println(got, err)
	}
	fmt.Println(len(store.Records()), "record")

	// Output:
	// charging
	// ch-7 <nil>
	// ch-7 <nil>
	// 1 record
}

// A Lambda function keeps one store for all invocations, made once at start-up from the
// function's AWS configuration. The table is created from TableInput (with TTL on
// "expiration"). An invalid option is an error of NewDynamoDBStore, at start-up, not of
// the first record.
func ExampleNewDynamoDBStore() {
	// In a function: cfg, err := config.LoadDefaultConfig(ctx); client := dynamodb.NewFromConfig(cfg).
	client := dynamodb.New(dynamodb.Options{Region: "eu-west-1"})
	store, err := idempotency.NewDynamoDBStore(client, "idempotency", idempotency.WithLocalCache(256))
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

	_, err = idempotency.NewDynamoDBStore(client, "idempotency", idempotency.WithLocalCache(0))
	fmt.Println(err)
	fmt.Println(errors.Is(err, idempotency.ErrInvalidOption))

	// Output:
	// entries in the layout of python
	// idempotency: WithLocalCache(0): invalid option: want a size of at least 1
	// true
}

// TableInput is the definition of a table in the default layout, for CreateTable (or for
// comparing with a CloudFormation resource).
func ExampleTableInput() {
	in := idempotency.TableInput("idempotency")
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
	client := dynamodb.New(dynamodb.Options{Region: "eu-west-1"})
	store, err := idempotency.NewDynamoDBStore(client, "idempotency", idempotency.WithFormat(idempotency.FormatTypeScript))
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

// KafkaKey identifies a Kafka record's redeliveries: topic, partition and offset.
func ExampleKafkaKey() {
	r := &kafkaevent.Record{Topic: "orders", Partition: 3, Offset: 42}
	fmt.Println(idempotency.KafkaKey(r))

	// Output:
	// orders-3-42
}

// SQSKey identifies an SQS message's redeliveries: its message ID.
func ExampleSQSKey() {
	m := &events.SQSMessage{MessageId: "059f36b4-87a3-44ab-83d2-661975830a7d", Body: "{}"}
	fmt.Println(idempotency.SQSKey(m))

	// Output:
	// 059f36b4-87a3-44ab-83d2-661975830a7d
}
