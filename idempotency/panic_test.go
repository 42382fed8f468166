package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
)

// renewPanics is a store of the caller's whose Renew panics.
type renewPanics struct {
	*idempotencytest.Store
	renews atomic.Int32
}

func (s *renewPanics) Renew(context.Context, *idempotency.Entry) error {
	s.renews.Add(1)
	panic("Renew boom")
}

// The lease is renewed on a timer's goroutine, where a panic of the store would end the
// process (on Lambda Managed Instances, every invocation it serves). The panic is the
// renewal's error instead: the lease then ends unrenewed, and fn's context with it
// (ErrLeaseLost), as for any renewal that fails; nobody having taken the key, fn's completion
// is still stored.
func TestRenewPanic(t *testing.T) {
	store := &renewPanics{Store: idempotencytest.NewStore()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := idempotency.Do(ctx, store, "k", nil, func(ctx context.Context) (string, error) {
		<-ctx.Done() // the lease ends: its renewal panicked
		if !errors.Is(context.Cause(ctx), idempotency.ErrLeaseLost) {
			t.Errorf("fn's context ended with %v, want ErrLeaseLost", context.Cause(ctx))
		}
		return "late", nil
	}, idempotency.WithMaxLease(200*time.Millisecond))
	if store.renews.Load() == 0 {
		t.Fatal("Renew was not called")
	}
	if err != nil { // nobody took the key meanwhile: the completion is still stored
		t.Errorf("Do = %v, want the completion stored", err)
	}
}

// A panic of a store's Acquire is Do's error, naming it; fn does not run.
func TestAcquirePanic(t *testing.T) {
	store := acquirePanics{idempotencytest.NewStore()}
	ran := false
	_, err := idempotency.Do(context.Background(), store, "k", nil, func(context.Context) (string, error) {
		ran = true
		return "", nil
	})
	var pe *idempotency.PersistenceError
	if ran || !errors.As(err, &pe) || pe.Op != "acquire" || !strings.Contains(err.Error(), "Acquire panicked: Acquire boom") {
		t.Errorf("Do = %v (fn ran: %v), want a *PersistenceError for acquire that says it panicked", err, ran)
	}
}

type acquirePanics struct{ *idempotencytest.Store }

func (acquirePanics) Acquire(context.Context, *idempotency.Entry, time.Time) (*idempotency.Entry, error) {
	panic("Acquire boom")
}
