package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
)

// The edges of a lease (issue 27): the expiry counted from the completion, a lease shorter
// than fn, a completion retried after Do returned. The abandoned handler is batch's
// (TestAbandonedHandlerKeepsKey), the stress run is TestStress.

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestExpiryFromCompletion: WithExpiry(1s), and fn takes 2.5 s by the clock. The completed
// entry expires 1 s after the completion, as Powertools sets it when it saves the success, so
// a delivery 0.5 s after the completion replays it. Before, the expiry ran from the claim:
// the completed entry was written already expired, and the next delivery ran fn again.
func TestExpiryFromCompletion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) idempotency.Store
	}{
		{"memory", func(*testing.T) idempotency.Store { return idempotencytest.NewStore() }},
		{"python", func(t *testing.T) idempotency.Store { return newStore(t, e.client, e.newTable(t)) }},
		{"typescript", func(t *testing.T) idempotency.Store {
			return newStore(t, e.client, e.newTable(t), dynamodb.WithFormat(idempotency.FormatTypeScript))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := tc.store(t)
			clock := &fakeClock{now: time.Now().Truncate(time.Second)}
			opts := []idempotency.Option{idempotency.WithExpiry(time.Second), idempotency.WithClock(clock.Now)}
			var ran atomic.Int32
			fn := func(context.Context) (string, error) {
				ran.Add(1)
				clock.Add(2500 * time.Millisecond)
				return "done", nil
			}
			if _, err := idempotency.Do(context.Background(), store, "k", nil, fn, opts...); err != nil {
				t.Fatal(err)
			}
			clock.Add(500 * time.Millisecond)
			got, err := idempotency.Do(context.Background(), store, "k", nil, fn, opts...)
			if err != nil || got != "done" || ran.Load() != 1 {
				t.Errorf("delivery 0.5 s after the completion = %q, %v, fn ran %d times; want the stored result, fn run once", got, err, ran.Load())
			}
			clock.Add(time.Second)
			if _, err := idempotency.Do(context.Background(), store, "k", nil, fn, opts...); err != nil || ran.Load() != 2 {
				t.Errorf("delivery 1.5 s after the completion = %v, fn ran %d times; want it expired and run again", err, ran.Load())
			}
		})
	}
}

// TestLeaseRenewedWhileFnRuns: WithMaxLease(1s), and fn runs past the lease written at the
// claim. The lease is renewed while fn runs, so a second delivery after the first lease's end
// gets ErrInProgress. Before, the second delivery took the key over while the first still
// ran, and both applied the record.
func TestLeaseRenewedWhileFnRuns(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"memory", "python"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var store idempotency.Store = idempotencytest.NewStore()
			var table string
			var e *env
			if name == "python" {
				e = newEnv(t)
				table = e.newTable(t)
				store = newStore(t, e.client, table)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			const lease = time.Second
			var ran atomic.Int32
			_, err := idempotency.Do(ctx, store, "k", nil, func(ctx context.Context) (string, error) {
				ran.Add(1)
				first := time.Now().Add(lease)
				time.Sleep(time.Until(first) + 50*time.Millisecond) // the first lease has ended
				other, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if _, err := idempotency.Do(other, store, "k", nil, counted(&ran, value("second"))); !errors.Is(err, idempotency.ErrInProgress) {
					t.Errorf("second delivery after the first lease's end, fn still running = %v, want ErrInProgress", err)
				}
				if ctx.Err() != nil {
					t.Errorf("fn's context ended (%v) while its lease was renewed", context.Cause(ctx))
				}
				return "first", nil
			}, idempotency.WithMaxLease(lease))
			if err != nil {
				t.Errorf("first delivery = %v, want its completion stored", err)
			}
			if ran.Load() != 1 {
				t.Errorf("fn ran %d times, want 1", ran.Load())
			}
			if e != nil {
				if it := e.item(t, table, keyID(t, "k")); it == nil || str(t, it, "status") != "COMPLETED" {
					t.Errorf("item = %v, want COMPLETED", it)
				}
			}
		})
	}
}

// renewRefused is an in-memory store whose Renew fails, as a store that cannot be reached.
type renewRefused struct {
	*idempotencytest.Store
	renewals atomic.Int32
}

var errUnreachable = errors.New("store unreachable")

func (s *renewRefused) Renew(context.Context, *idempotency.Entry) error {
	s.renewals.Add(1)
	return errUnreachable
}

// TestLeaseLostEndsFn: WithMaxLease(300ms) and a store that cannot renew it. fn's context
// ends when the lease does (its cause ErrLeaseLost), a second delivery then takes the key,
// and the first call's result is ErrLeaseLost, not a success (nor ErrNotRecorded, which
// batch counts as one). Before, fn's context did not end with its lease, and Do returned
// ErrNotRecorded: the batch reported a success whose completion was not stored.
func TestLeaseLostEndsFn(t *testing.T) {
	t.Parallel()
	store := &renewRefused{Store: idempotencytest.NewStore()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ran atomic.Int32
	_, err := idempotency.Do(ctx, store, "k", nil, func(ctx context.Context) (string, error) {
		ran.Add(1)
		select {
		case <-ctx.Done():
			if cause := context.Cause(ctx); !errors.Is(cause, idempotency.ErrLeaseLost) {
				t.Errorf("fn's context ended with %v, want ErrLeaseLost", cause)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("fn's context still live 10 s after its 300 ms lease ended unrenewed")
		}
		other, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := idempotency.Do(other, store, "k", nil, counted(&ran, value("second"))); err != nil {
			t.Errorf("second delivery after the lease ended = %v, want it to take the key", err)
		}
		return "first, late", nil // as a handler that did not look at its context would
	}, idempotency.WithMaxLease(300*time.Millisecond))
	if !errors.Is(err, idempotency.ErrLeaseLost) || errors.Is(err, idempotency.ErrNotRecorded) {
		t.Errorf("first delivery = %v, want ErrLeaseLost, not a success", err)
	}
	if store.renewals.Load() == 0 {
		t.Error("the lease was never renewed")
	}
	if ran.Load() != 2 {
		t.Errorf("fn ran %d times, want 2 (the second delivery took the ended lease)", ran.Load())
	}
}

// completeRefused is an in-memory store whose Complete fails with a transient error until
// heal is called.
type completeRefused struct {
	*idempotencytest.Store
	healed atomic.Bool
}

// errThrottled is transient by the AWS SDK's rules: it says it may be retried.
type errThrottled struct{}

func (errThrottled) Error() string        { return "throttled" }
func (errThrottled) RetryableError() bool { return true }

func (s *completeRefused) Complete(ctx context.Context, r *idempotency.Entry) error {
	if !s.healed.Load() {
		return errThrottled{}
	}
	return s.Store.Complete(ctx, r)
}

// TestCompletionRetriedUnderLease: the completion fails until Do's deadline. A concurrent
// delivery after the first lease would have ended still gets ErrInProgress (the lease was
// renewed while the completion was retried), and once the store takes the completion, the
// next delivery replays it. Before, the lease ended at the deadline and the next delivery ran
// fn again.
func TestCompletionRetriedUnderLease(t *testing.T) {
	t.Parallel()
	store := &completeRefused{Store: idempotencytest.NewStore()}
	const deadline = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var ran atomic.Int32
	_, err := idempotency.Do(ctx, store, "k", nil, counted(&ran, value("first")))
	if !errors.Is(err, idempotency.ErrNotRecorded) {
		t.Fatalf("Do = %v, want ErrNotRecorded", err)
	}
	// Another execution environment: the same entries, another Store value (a Do on this
	// one would wait for the pending completion first).
	elsewhere := store.Store
	dl, _ := ctx.Deadline()
	time.Sleep(time.Until(dl) + 100*time.Millisecond) // the lease written at the claim has ended
	if _, err := idempotency.Do(context.Background(), elsewhere, "k", nil, counted(&ran, value("second"))); !errors.Is(err, idempotency.ErrInProgress) {
		t.Errorf("delivery after the first deadline, completion pending = %v, want ErrInProgress", err)
	}
	store.healed.Store(true)
	if !idempotency.Settle(store, 10*time.Second) {
		t.Fatal("the completion was still being retried 10 s after the store took writes again")
	}
	after := idempotency.WithClock(func() time.Time { return time.Now().Add(time.Minute) })
	if got, err := idempotency.Do(context.Background(), store, "k", nil, counted(&ran, value("third")), after); err != nil || got != "first" {
		t.Errorf("delivery after the completion was stored = %q, %v; want the first result", got, err)
	}
	if ran.Load() != 1 {
		t.Errorf("fn ran %d times, want 1", ran.Load())
	}
}

// freezable is a store of an execution environment that can be frozen: while frozen, its
// calls do not reach the store (they wait for the thaw, or for their context to end), as
// those of a process the Lambda service froze after its response.
type freezable struct {
	idempotency.Store
	mu     sync.Mutex
	thawed chan struct{} // nil: not frozen
}

func (f *freezable) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.thawed = make(chan struct{})
}

func (f *freezable) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.thawed)
	f.thawed = nil
}

func (f *freezable) wait(ctx context.Context) error {
	f.mu.Lock()
	ch := f.thawed
	f.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *freezable) Renew(ctx context.Context, r *idempotency.Entry) error {
	if err := f.wait(ctx); err != nil {
		return err
	}
	return f.Store.Renew(ctx, r)
}

func (f *freezable) Complete(ctx context.Context, r *idempotency.Entry) error {
	if err := f.wait(ctx); err != nil {
		return err
	}
	return f.Store.Complete(ctx, r)
}

// TestFrozenProcessWindow measures what renewals cannot cover: a process frozen while fn
// runs (a handler that ignores its context, abandoned, then the execution environment frozen
// after its response). It renews nothing while frozen, so a redelivery takes the key once
// the lease last renewed ends, at most a renewal period (WithMaxLease) after it; when
// the process thaws, fn goes on and applies the record a second time. The test freezes the
// process just after a renewal, and logs how long the key stayed held after the freeze.
func TestFrozenProcessWindow(t *testing.T) {
	t.Parallel()
	shared := idempotencytest.NewStore()
	frozen := &freezable{Store: shared}
	const lease = 600 * time.Millisecond
	id := keyID(t, "k")
	var applied atomic.Int32
	proceed := make(chan struct{})
	first := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		_, err := idempotency.Do(ctx, frozen, "k", nil, func(context.Context) (string, error) {
			<-proceed // ignores its context
			applied.Add(1)
			return "first", nil
		}, idempotency.WithMaxLease(lease))
		first <- err
	}()

	// Wait for the first renewal, then freeze.
	var claimed time.Time
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		e, ok := shared.Entry(id)
		if ok && claimed.IsZero() {
			claimed = e.InProgressExpiration
		}
		if ok && e.InProgressExpiration.After(claimed) {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the lease was not renewed within 10 s")
		}
	}
	frozen.freeze()
	frozeAt := time.Now()
	held, _ := shared.Entry(id)

	// Redeliveries from another environment, until one takes the key.
	var tookAt time.Time
	for end := time.Now().Add(10 * time.Second); tookAt.IsZero(); time.Sleep(5 * time.Millisecond) {
		_, err := idempotency.Do(context.Background(), shared, "k", nil, func(context.Context) (string, error) {
			applied.Add(1)
			return "second", nil
		})
		switch {
		case err == nil:
			tookAt = time.Now()
		case !errors.Is(err, idempotency.ErrInProgress):
			t.Fatalf("redelivery: %v", err)
		case time.Now().After(end):
			t.Fatal("the key was still held 10 s after the freeze")
		}
	}
	if tookAt.Before(held.InProgressExpiration) {
		t.Errorf("the key was taken at %v, before the lease stored at the freeze ended (%v)", tookAt, held.InProgressExpiration)
	}
	if left := held.InProgressExpiration.Sub(frozeAt); left > lease {
		t.Errorf("the lease at the freeze ran %v past it, more than WithMaxLease (%v)", left, lease)
	}

	frozen.thaw()
	close(proceed)
	err := <-first
	if !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("the thawed call = %v, want ErrLeaseLost (its result not a success)", err)
	}
	if n := applied.Load(); n != 2 {
		t.Errorf("applied %d times, want 2: the window renewals cannot cover", n)
	}
	t.Logf("WithMaxLease(%v): frozen %v after the claim, just after the first renewal; the key stayed held %v after the freeze, then a redelivery took it; on the thaw the record was applied a second time",
		lease, frozeAt.Sub(claimed.Add(-lease)).Round(time.Millisecond), tookAt.Sub(frozeAt).Round(time.Millisecond))
}
