package idempotencytest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
)

// A unit test gives the code under test an in-memory store, checks what it stored, and moves
// the clock past the expiry with idempotency.WithClock instead of waiting an hour.
func ExampleNewStore() {
	store := idempotencytest.NewStore()
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := idempotency.WithClock(func() time.Time { return now })

	sends := 0
	send := func(context.Context) (string, error) { sends++; return fmt.Sprint("msg-", sends), nil }
	process := func() string { // the code under test
		id, err := idempotency.Do(ctx, store, "order-1", nil, send, clock, idempotency.WithKeyPrefix("fn"))
		if err != nil {
			return err.Error()
		}
		return id
	}

	fmt.Println(process(), process()) // once, then replayed
	for _, r := range store.Records() {
		fmt.Println(r.ID, r.Status, r.Data, r.Expiration.Format(time.TimeOnly))
	}
	now = now.Add(time.Hour + time.Second) // past the default expiry
	fmt.Println(process())

	// Output:
	// msg-1 msg-1
	// fn#729040816f7330c4cb31f54a56f59a7b COMPLETED "msg-1" 04:04:05
	// msg-2
}
