package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
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
	replayed := idempotency.WithReplayHook(func(_ context.Context, r *idempotency.Record) {
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

// A Lambda function keeps one store for all invocations. Records of redeliveries of the same
// Kafka record are found under KafkaKey; the table is created from TableInput (with TTL on
// "expiration").
func ExampleNewDynamoDBStore() {
	// In a function: cfg, _ := config.LoadDefaultConfig(ctx); client := dynamodb.NewFromConfig(cfg).
	client := dynamodb.New(dynamodb.Options{Region: "eu-west-1"})
	store := idempotency.NewDynamoDBStore(client, "idempotency", idempotency.WithLocalCache(256))

	handle := func(ctx context.Context, key string, payload []byte) (string, error) {
		return idempotency.Do(ctx, store, key, payload, func(ctx context.Context) (string, error) {
			return "sent", nil // the side effect, once per key
		}, idempotency.WithMaxLease(time.Minute))
	}
	_ = handle
}
