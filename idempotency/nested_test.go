package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/kafkalambda/toolkit/idempotency"
)

// TestNestedDo: a Do inside another Do's fn, on the same store and key (batch.WithIdempotency
// around a handler that calls Do on KafkaKey), runs inside the outer lease. Before nested
// calls were recognised, the inner call found the outer's in-progress record and failed with
// ErrInProgress on every delivery.
func TestNestedDo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	table := e.newTable(t)
	store := newStore(t, e.client, table)
	ctx := context.Background()

	t.Run("same key runs inside the outer lease", func(t *testing.T) { nestedSameKey(t, e, table, store) })

	t.Run("another key takes its own record", func(t *testing.T) {
		_, err := idempotency.Do(ctx, store, "outer-a", nil, func(ctx context.Context) (int, error) {
			return idempotency.Do(ctx, store, "inner-b", nil, value(2))
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"outer-a", "inner-b"} {
			if it := e.item(t, table, keyID(t, k)); it == nil || str(t, it, "data") != "2" {
				t.Errorf("record of %s = %v, want completed with 2", k, it)
			}
		}
	})

	t.Run("held key deeper down", func(t *testing.T) {
		var innermost atomic.Int32
		_, err := idempotency.Do(ctx, store, "deep-1", nil, func(ctx context.Context) (int, error) {
			return idempotency.Do(ctx, store, "deep-2", nil, func(ctx context.Context) (int, error) {
				return idempotency.Do(ctx, store, "deep-1", nil, counted(&innermost, value(3)))
			})
		})
		if err != nil || innermost.Load() != 1 {
			t.Errorf("Do(k1, Do(k2, Do(k1))) = %v, innermost ran %d times; want it run inside k1's lease", err, innermost.Load())
		}
	})

	t.Run("payload checked against the outer call's", func(t *testing.T) {
		var inner atomic.Int32
		_, err := idempotency.Do(ctx, store, "pay-1", "order A", func(ctx context.Context) (int, error) {
			if _, err := idempotency.Do(ctx, store, "pay-1", "order B", counted(&inner, value(0))); !errors.Is(err, idempotency.ErrPayloadMismatch) {
				t.Errorf("nested Do with another payload: %v, want ErrPayloadMismatch", err)
			}
			return idempotency.Do(ctx, store, "pay-1", "order A", counted(&inner, value(1)))
		})
		if err != nil || inner.Load() != 1 {
			t.Errorf("outer Do = %v, inner ran %d times; want the same-payload call run once", err, inner.Load())
		}
		// The outer call gave no payload: the nested one's is not checked (nothing to check
		// against) and not stored.
		_, err = idempotency.Do(ctx, store, "pay-2", nil, func(ctx context.Context) (int, error) {
			return idempotency.Do(ctx, store, "pay-2", "order C", value(2))
		})
		if err != nil {
			t.Errorf("nested Do with a payload under an outer call without: %v", err)
		}
		if it := e.item(t, table, keyID(t, "pay-2")); it["validation"] != nil {
			t.Errorf("record = %v, want no validation (the outer call's record)", it)
		}
	})

	t.Run("another store is another caller", func(t *testing.T) {
		other := newStore(t, e.client, table) // same table, another Store value
		_, err := idempotency.Do(ctx, store, "stores-1", nil, func(ctx context.Context) (int, error) {
			_, err := idempotency.Do(ctx, other, "stores-1", nil, value(0))
			if !errors.Is(err, idempotency.ErrInProgress) {
				t.Errorf("nested Do on another store: %v, want ErrInProgress", err)
			}
			return 1, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("another prefix is another key", func(t *testing.T) {
		var inner atomic.Int32
		_, err := idempotency.Do(ctx, store, "prefix-1", nil, func(ctx context.Context) (int, error) {
			return idempotency.Do(ctx, store, "prefix-1", nil, counted(&inner, value(1)), idempotency.WithKeyPrefix("other"))
		})
		if err != nil || inner.Load() != 1 {
			t.Fatalf("nested Do under another prefix = %v (ran %d)", err, inner.Load())
		}
		if e.item(t, table, keyID(t, "prefix-1", idempotency.WithKeyPrefix("other"))) == nil {
			t.Error("nested Do under another prefix stored no record of its own")
		}
	})

	t.Run("inner failure fails the outer call", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := idempotency.Do(ctx, store, "fail-1", nil, func(ctx context.Context) (int, error) {
			return idempotency.Do(ctx, store, "fail-1", nil, func(context.Context) (int, error) { return 0, boom })
		})
		if !errors.Is(err, boom) {
			t.Fatalf("outer Do = %v, want the inner error", err)
		}
		if it := e.item(t, table, keyID(t, "fail-1")); it != nil {
			t.Errorf("record after the failure = %v, want it released", it)
		}
	})

	t.Run("the marker stays inside fn", func(t *testing.T) {
		if _, err := idempotency.Do(ctx, store, "scope-1", nil, value(1)); err != nil {
			t.Fatal(err)
		}
		// ctx is the caller's, not fn's: a later call with it is an ordinary one (a replay).
		var ran atomic.Int32
		if _, err := idempotency.Do(ctx, store, "scope-1", nil, counted(&ran, value(2))); err != nil || ran.Load() != 0 {
			t.Errorf("later Do = %v (ran %d), want a replay", err, ran.Load())
		}
	})
}

// nestedSameKey is the subtest "same key runs inside the outer lease".
func nestedSameKey(t *testing.T, e *env, table string, store idempotency.Store) {
	ctx := context.Background()
	var outer, inner atomic.Int32
	handler := func(ctx context.Context) (string, error) {
		outer.Add(1)
		r, err := idempotency.Do(ctx, store, "orders-0-7", nil, counted(&inner, value(receipt{ID: "ch-7", Amount: 7})))
		if err != nil {
			return "", err
		}
		return r.ID, nil
	}
	e.calls.reset()
	got, err := idempotency.Do(ctx, store, "orders-0-7", nil, handler)
	if err != nil || got != "ch-7" {
		t.Fatalf("outer Do = %q, %v; want ch-7, <nil>", got, err)
	}
	if outer.Load() != 1 || inner.Load() != 1 {
		t.Errorf("outer fn ran %d times, inner %d; want 1 and 1", outer.Load(), inner.Load())
	}
	// The nested call makes no store call: acquire and complete are the outer call's.
	e.calls.expectCalls(t, "nested Do", map[string]int{"PutItem": 2})
	if it := e.item(t, table, keyID(t, "orders-0-7")); str(t, it, "status") != "COMPLETED" || str(t, it, "data") != `"ch-7"` {
		t.Errorf("stored record = %v, want the outer result completed", it)
	}

	// A redelivery replays the outer result; neither function runs.
	got, err = idempotency.Do(ctx, store, "orders-0-7", nil, handler)
	if err != nil || got != "ch-7" || outer.Load() != 1 || inner.Load() != 1 {
		t.Errorf("redelivery = %q, %v (outer %d, inner %d runs); want ch-7 replayed", got, err, outer.Load(), inner.Load())
	}
}
