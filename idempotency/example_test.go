package idempotency_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

func ExampleDo() {
	// An in-memory store shows the flow; a function uses dynamodb.NewStore (package
	// idempotency/dynamodb).
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
