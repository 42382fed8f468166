package idempotencytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/idempotency"
)

// TestStore checks that a Store keeps the contract Do relies on. newStore returns the store
// under test for one subtest; it may return the same store every time, as the subtests use
// IDs of their own. The subtests call the store directly, with times they choose (a store
// must decide liveness by the now it is given, not by its own clock), and then through Do:
//
//   - Acquire writes into an empty slot, and returns the live record it finds with ErrExists:
//     an in-progress one up to the last millisecond of its lease (even past its expiration),
//     a completed one up to the last second of its expiration, and one without a lease until
//     it expires;
//   - a record past its lease or its expiration is taken over;
//   - Acquire of a record with the caller's Owner (a retried write) succeeds;
//   - Complete stores the result, which reads back as the same JSON, and its Owner; a retried
//     Complete succeeds; Complete of a record that is no longer the caller's fails and
//     leaves it;
//   - Release deletes only the caller's own in-progress record (the same Owner);
//   - Renew moves the lease of the caller's own in-progress record, even after the lease
//     ended if no one took it over, and of no other record (ErrLeaseLost): not one taken
//     over, completed, or gone;
//   - of concurrent Acquires of one ID, exactly one wins;
//   - Format is FormatPython or FormatTypeScript;
//   - Do runs once, replays, reports ErrInProgress and ErrPayloadMismatch, runs a nested
//     call on the held key inside the outer lease, and frees the key when fn fails.
//
// A test of a store:
//
//	func TestMyStore(t *testing.T) {
//		idempotencytest.TestStore(t, func(t *testing.T) idempotency.Store { return newMyStore(t) })
//	}
func TestStore(t *testing.T, newStore func(t *testing.T) idempotency.Store) {
	var seq atomic.Int64
	s := &suite{newStore: newStore, seq: &seq, base: time.Now().Truncate(time.Second).Add(250 * time.Millisecond)}
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"Format", s.format},
		{"AcquireEmpty", s.acquireEmpty},
		{"InProgressIsReturned", s.inProgressIsReturned},
		{"LeaseBoundary", s.leaseBoundary},
		{"NoLeaseHoldsUntilExpiry", s.noLease},
		{"LeaseOutlivesExpiration", s.leaseOutlivesExpiration},
		{"AcquireOwnRetry", s.acquireOwnRetry},
		{"CompleteStoresResult", s.completeStoresResult},
		{"ExpiryBoundary", s.expiryBoundary},
		{"CompletedIgnoresLease", s.completedIgnoresLease},
		{"CompleteRetry", s.completeRetry},
		{"CompleteOnlyOwn", s.completeOnlyOwn},
		{"ReleaseOwn", s.releaseOwn},
		{"ReleaseOnlyOwn", s.releaseOnlyOwn},
		{"RenewOwn", s.renewOwn},
		{"RenewOnlyOwn", s.renewOnlyOwn},
		{"ConcurrentAcquire", s.concurrentAcquire},
		{"IndependentIDs", s.independentIDs},
		{"Do", s.do},
	} {
		t.Run(tc.name, tc.run)
	}
}

type suite struct {
	newStore func(t *testing.T) idempotency.Store
	seq      *atomic.Int64
	base     time.Time
}

func (s *suite) id(t *testing.T) string {
	return fmt.Sprintf("idempotencytest#%s-%d-%d", t.Name(), s.base.UnixNano(), s.seq.Add(1))
}

// inProgress is an in-progress record of a new owner, as Do writes it.
func (s *suite) inProgress(id string, now time.Time, lease time.Duration) *idempotency.Entry {
	return &idempotency.Entry{
		ID:                   id,
		Status:               idempotency.StatusInProgress,
		Expiration:           now.Add(time.Hour).Truncate(time.Second),
		InProgressExpiration: now.Add(lease).Truncate(time.Millisecond),
		Validation:           "v-" + id,
		Owner:                fmt.Sprintf("owner-%d", s.seq.Add(1)),
	}
}

// acquire calls Acquire and fails t on an error other than ErrExists.
func acquire(t *testing.T, st idempotency.Store, r *idempotency.Entry, now time.Time) (*idempotency.Entry, bool) {
	t.Helper()
	existing, err := st.Acquire(context.Background(), r, now)
	switch {
	case err == nil:
		if existing != nil {
			t.Fatalf("Acquire(%s) = %+v, nil: a record with a nil error", r.ID, existing)
		}
		return nil, true
	case errors.Is(err, idempotency.ErrExists):
		if existing == nil {
			t.Fatalf("Acquire(%s) = nil, ErrExists: the existing record is missing", r.ID)
		}
		return existing, false
	default:
		t.Fatalf("Acquire(%s): %v", r.ID, err)
		return nil, false
	}
}

func mustAcquire(t *testing.T, st idempotency.Store, r *idempotency.Entry, now time.Time) {
	t.Helper()
	if existing, ok := acquire(t, st, r, now); !ok {
		t.Fatalf("Acquire(%s) at %v = ErrExists with %+v, want it written", r.ID, now, existing)
	}
}

func mustExist(t *testing.T, st idempotency.Store, r *idempotency.Entry, now time.Time) *idempotency.Entry {
	t.Helper()
	existing, ok := acquire(t, st, r, now)
	if ok {
		t.Fatalf("Acquire(%s) at %v wrote the record, want ErrExists (a live record is there)", r.ID, now)
	}
	return existing
}

// sameRecord fails t unless got is want as a store keeps it.
func sameRecord(t *testing.T, got, want *idempotency.Entry) {
	t.Helper()
	if got.ID != want.ID || got.Status != want.Status || got.Validation != want.Validation ||
		got.Expiration.Unix() != want.Expiration.Unix() || got.Owner != want.Owner {
		t.Errorf("existing record = %+v, want %+v", got, want)
	}
	if want.Status == idempotency.StatusInProgress && got.InProgressExpiration.UnixMilli() != want.InProgressExpiration.UnixMilli() {
		t.Errorf("existing lease = %v, want %v", got.InProgressExpiration, want.InProgressExpiration)
	}
	if !sameJSON(got.Data, want.Data) {
		t.Errorf("existing data = %s, want %s", got.Data, want.Data)
	}
}

func sameJSON(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func (s *suite) format(t *testing.T) {
	if f := s.newStore(t).Format(); f != idempotency.FormatPython && f != idempotency.FormatTypeScript {
		t.Errorf("Format() = %v, want FormatPython or FormatTypeScript", f)
	}
}

func (s *suite) acquireEmpty(t *testing.T) {
	st := s.newStore(t)
	mustAcquire(t, st, s.inProgress(s.id(t), s.base, time.Minute), s.base)
}

func (s *suite) inProgressIsReturned(t *testing.T) {
	st := s.newStore(t)
	id := s.id(t)
	first := s.inProgress(id, s.base, time.Minute)
	mustAcquire(t, st, first, s.base)
	later := s.base.Add(time.Second)
	sameRecord(t, mustExist(t, st, s.inProgress(id, later, time.Minute), later), first)
}

func (s *suite) leaseBoundary(t *testing.T) {
	st := s.newStore(t)
	id := s.id(t)
	first := s.inProgress(id, s.base, time.Minute)
	mustAcquire(t, st, first, s.base)
	end := first.InProgressExpiration
	mustExist(t, st, s.inProgress(id, end, time.Minute), end)
	after := end.Add(time.Millisecond)
	second := s.inProgress(id, after, time.Minute)
	mustAcquire(t, st, second, after) // the lease has ended: taken over
	sameRecord(t, mustExist(t, st, s.inProgress(id, after, time.Minute), after), second)
}

func (s *suite) noLease(t *testing.T) {
	st := s.newStore(t)
	id := s.id(t)
	r := s.inProgress(id, s.base, 0)
	r.InProgressExpiration = time.Time{}
	mustAcquire(t, st, r, s.base)
	mid := s.base.Add(30 * time.Minute)
	mustExist(t, st, s.inProgress(id, mid, time.Minute), mid)
	after := r.Expiration.Add(time.Second)
	mustAcquire(t, st, s.inProgress(id, after, time.Minute), after)
}

func (s *suite) leaseOutlivesExpiration(t *testing.T) {
	st := s.newStore(t)
	id := s.id(t)
	// Expiration one second after now, lease a minute: a short WithExpiry under a long
	// deadline, as an older writer (or Powertools) may leave it.
	r := s.inProgress(id, s.base, time.Minute)
	r.Expiration = s.base.Add(time.Second).Truncate(time.Second)
	mustAcquire(t, st, r, s.base)
	past := s.base.Add(3 * time.Second) // past the expiration, inside the lease
	sameRecord(t, mustExist(t, st, s.inProgress(id, past, time.Minute), past), r)
	after := r.InProgressExpiration.Add(time.Millisecond)
	mustAcquire(t, st, s.inProgress(id, after, time.Minute), after)
}

func (s *suite) acquireOwnRetry(t *testing.T) {
	st := s.newStore(t)
	id := s.id(t)
	r := s.inProgress(id, s.base, time.Minute)
	mustAcquire(t, st, r, s.base)
	later := s.base.Add(time.Second)
	mustAcquire(t, st, r, later) // the same write again: its answer was lost the first time
	sameRecord(t, mustExist(t, st, s.inProgress(id, later, time.Minute), later), r)
}

func (s *suite) completeRetry(t *testing.T) {
	st := s.newStore(t)
	id := s.id(t)
	r := s.inProgress(id, s.base, time.Minute)
	mustAcquire(t, st, r, s.base)
	done := s.complete(t, st, r, `"once"`)
	if err := st.Complete(context.Background(), done); err != nil {
		t.Fatalf("Complete again (a retry whose first answer was lost): %v, want nil", err)
	}
	sameRecord(t, mustExist(t, st, s.inProgress(id, s.base, time.Minute), s.base), done)
}

func (s *suite) completeOnlyOwn(t *testing.T) {
	st := s.newStore(t)
	ctx := context.Background()
	id := s.id(t)
	first := s.inProgress(id, s.base, time.Second)
	mustAcquire(t, st, first, s.base)
	later := s.base.Add(2 * time.Second)
	second := s.inProgress(id, later, time.Minute)
	mustAcquire(t, st, second, later) // the first's lease ended: taken over
	done := *first
	done.Status = idempotency.StatusCompleted
	done.Data = `"late"`
	if err := st.Complete(ctx, &done); err == nil {
		t.Errorf("Complete of a record taken over by another owner = nil, want an error")
	}
	sameRecord(t, mustExist(t, st, s.inProgress(id, later, time.Minute), later), second)

	// Nor is a record that is gone.
	gone := s.inProgress(s.id(t), s.base, time.Minute)
	gone.Status = idempotency.StatusCompleted
	if err := st.Complete(ctx, gone); err == nil {
		t.Errorf("Complete of a record that was never acquired = nil, want an error")
	}
}

func (s *suite) complete(t *testing.T, st idempotency.Store, r *idempotency.Entry, data string) *idempotency.Entry {
	t.Helper()
	done := *r
	done.Status = idempotency.StatusCompleted
	done.Data = data
	if err := st.Complete(context.Background(), &done); err != nil {
		t.Fatalf("Complete(%s): %v", r.ID, err)
	}
	return &done
}

func (s *suite) completeStoresResult(t *testing.T) {
	st := s.newStore(t)
	for _, data := range []string{
		`{"id":"r-1","amount":9.99,"items":[1,"two",true,null,{"x":-1.5e-3}],"empty":{},"none":[]}`,
		`"sent"`, `""`, `42`, `-0.125`, `true`, `null`, `[]`, `{}`,
		`"\u00fcnic\u00f6de \u2028 \ud83d\ude00 \"quoted\" \\ \n"`,
		``, // no result stored (WithoutResult)
	} {
		id := s.id(t)
		r := s.inProgress(id, s.base, time.Minute)
		mustAcquire(t, st, r, s.base)
		done := s.complete(t, st, r, data)
		later := s.base.Add(2 * time.Minute)
		sameRecord(t, mustExist(t, st, s.inProgress(id, later, time.Minute), later), done)
	}
}

func (s *suite) expiryBoundary(t *testing.T) {
	st := s.newStore(t)
	id := s.id(t)
	r := s.inProgress(id, s.base, time.Minute)
	mustAcquire(t, st, r, s.base)
	done := s.complete(t, st, r, `1`)
	last := done.Expiration.Add(999 * time.Millisecond) // the expiration second's last millisecond
	sameRecord(t, mustExist(t, st, s.inProgress(id, last, time.Minute), last), done)
	after := done.Expiration.Add(time.Second)
	mustAcquire(t, st, s.inProgress(id, after, time.Minute), after)
}

func (s *suite) completedIgnoresLease(t *testing.T) {
	st := s.newStore(t)
	id := s.id(t)
	r := s.inProgress(id, s.base, time.Second)
	mustAcquire(t, st, r, s.base)
	done := s.complete(t, st, r, `"kept"`) // keeps the lease, as Do passes it
	later := s.base.Add(10 * time.Minute)
	sameRecord(t, mustExist(t, st, s.inProgress(id, later, time.Minute), later), done)
}

func (s *suite) releaseOwn(t *testing.T) {
	st := s.newStore(t)
	id := s.id(t)
	r := s.inProgress(id, s.base, time.Minute)
	mustAcquire(t, st, r, s.base)
	if err := st.Release(context.Background(), r); err != nil {
		t.Fatalf("Release: %v", err)
	}
	mustAcquire(t, st, s.inProgress(id, s.base, time.Minute), s.base)
}

func (s *suite) releaseOnlyOwn(t *testing.T) {
	st := s.newStore(t)
	ctx := context.Background()

	// A record taken over after its lease ended is not the first holder's to release.
	id := s.id(t)
	first := s.inProgress(id, s.base, time.Second)
	mustAcquire(t, st, first, s.base)
	later := s.base.Add(2 * time.Second)
	second := s.inProgress(id, later, time.Minute)
	mustAcquire(t, st, second, later)
	if err := st.Release(ctx, first); err != nil {
		t.Fatalf("Release of a record taken over: %v, want nil (nothing of the caller's to release)", err)
	}
	sameRecord(t, mustExist(t, st, s.inProgress(id, later, time.Minute), later), second)

	// A completed record is not released.
	id = s.id(t)
	r := s.inProgress(id, s.base, time.Minute)
	mustAcquire(t, st, r, s.base)
	done := s.complete(t, st, r, `"done"`)
	if err := st.Release(ctx, r); err != nil {
		t.Fatalf("Release of a completed record: %v, want nil", err)
	}
	sameRecord(t, mustExist(t, st, s.inProgress(id, s.base, time.Minute), s.base), done)

	// Nothing to release.
	if err := st.Release(ctx, s.inProgress(s.id(t), s.base, time.Minute)); err != nil {
		t.Fatalf("Release of a missing record: %v, want nil", err)
	}

	// A record of another owner with the same lease (two callers with one deadline) is not
	// the caller's either.
	id = s.id(t)
	mine := s.inProgress(id, s.base, time.Second)
	mustAcquire(t, st, mine, s.base)
	theirs := *mine
	theirs.Owner = mine.Owner + "-other"
	if err := st.Release(ctx, &theirs); err != nil {
		t.Fatalf("Release by another owner: %v, want nil", err)
	}
	sameRecord(t, mustExist(t, st, s.inProgress(id, s.base, time.Minute), s.base), mine)
}

// renewed is r with its lease moved to now+lease, as Do renews it.
func renewed(r *idempotency.Entry, now time.Time, lease time.Duration) *idempotency.Entry {
	c := *r
	c.InProgressExpiration = now.Add(lease).Truncate(time.Millisecond)
	if end := c.InProgressExpiration.Truncate(time.Second); end.After(c.Expiration) {
		c.Expiration = end
	}
	return &c
}

func (s *suite) renewOwn(t *testing.T) {
	st := s.newStore(t)
	ctx := context.Background()
	id := s.id(t)
	r := s.inProgress(id, s.base, time.Second)
	mustAcquire(t, st, r, s.base)
	// Renewed before the lease ends: a caller past the first lease still finds it.
	longer := renewed(r, s.base.Add(500*time.Millisecond), time.Minute)
	if err := st.Renew(ctx, longer); err != nil {
		t.Fatalf("Renew of the caller's own record: %v", err)
	}
	later := s.base.Add(2 * time.Second)
	sameRecord(t, mustExist(t, st, s.inProgress(id, later, time.Minute), later), longer)

	// Renewed after its lease ended, no one having taken it: still the caller's.
	id = s.id(t)
	r = s.inProgress(id, s.base, time.Second)
	mustAcquire(t, st, r, s.base)
	late := renewed(r, later, time.Minute)
	if err := st.Renew(ctx, late); err != nil {
		t.Fatalf("Renew after the lease ended, the record not taken: %v", err)
	}
	sameRecord(t, mustExist(t, st, s.inProgress(id, later, time.Minute), later), late)
}

func (s *suite) renewOnlyOwn(t *testing.T) {
	st := s.newStore(t)
	ctx := context.Background()
	lost := func(what string, r *idempotency.Entry) {
		t.Helper()
		if err := st.Renew(ctx, r); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Errorf("Renew of %s = %v, want ErrLeaseLost", what, err)
		}
	}

	// Taken over after its lease ended.
	id := s.id(t)
	first := s.inProgress(id, s.base, time.Second)
	mustAcquire(t, st, first, s.base)
	later := s.base.Add(2 * time.Second)
	second := s.inProgress(id, later, time.Minute)
	mustAcquire(t, st, second, later)
	lost("a record taken over", renewed(first, later, time.Hour))
	sameRecord(t, mustExist(t, st, s.inProgress(id, later, time.Minute), later), second)

	// Completed: a renewal that comes after the completion must not undo it.
	id = s.id(t)
	r := s.inProgress(id, s.base, time.Minute)
	mustAcquire(t, st, r, s.base)
	done := s.complete(t, st, r, `"done"`)
	lost("a completed record", renewed(r, s.base, time.Hour))
	sameRecord(t, mustExist(t, st, s.inProgress(id, s.base, time.Minute), s.base), done)

	// Released, or never there.
	id = s.id(t)
	r = s.inProgress(id, s.base, time.Minute)
	mustAcquire(t, st, r, s.base)
	if err := st.Release(ctx, r); err != nil {
		t.Fatal(err)
	}
	lost("a released record", renewed(r, s.base, time.Hour))
	mustAcquire(t, st, s.inProgress(id, s.base, time.Minute), s.base)
}

func (s *suite) concurrentAcquire(t *testing.T) {
	st := s.newStore(t)
	id := s.id(t)
	const n = 8
	var wg sync.WaitGroup
	var won atomic.Int32
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			r := s.inProgress(id, s.base, time.Minute+time.Duration(i)*time.Millisecond)
			existing, err := st.Acquire(context.Background(), r, s.base)
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, idempotency.ErrExists):
				if existing == nil {
					errs <- fmt.Errorf("ErrExists without the existing record")
				}
			default:
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if won.Load() != 1 {
		t.Errorf("%d of %d concurrent Acquires of one ID succeeded, want exactly 1", won.Load(), n)
	}
}

func (s *suite) independentIDs(t *testing.T) {
	st := s.newStore(t)
	a, b := s.id(t), s.id(t)
	mustAcquire(t, st, s.inProgress(a, s.base, time.Minute), s.base)
	mustAcquire(t, st, s.inProgress(b, s.base, time.Minute), s.base)
}

// do runs Do on the store, with a key prefix of the subtest's own.
func (s *suite) do(t *testing.T) {
	st := s.newStore(t)
	ctx := context.Background()
	prefix := idempotency.WithKeyPrefix(s.id(t))
	runs := 0
	fn := func(v string) func(context.Context) (string, error) {
		return func(context.Context) (string, error) { runs++; return v, nil }
	}

	got, err := idempotency.Do(ctx, st, "k", "p", fn("first"), prefix)
	if err != nil || got != "first" || runs != 1 {
		t.Fatalf("first Do = %q, %v (runs %d), want first, <nil>, 1", got, err, runs)
	}
	got, err = idempotency.Do(ctx, st, "k", "p", fn("second"), prefix)
	if err != nil || got != "first" || runs != 1 {
		t.Fatalf("second Do = %q, %v (runs %d), want the stored first, <nil>, 1", got, err, runs)
	}
	if _, err := idempotency.Do(ctx, st, "k", "other", fn("third"), prefix); !errors.Is(err, idempotency.ErrPayloadMismatch) {
		t.Fatalf("Do with another payload: %v, want ErrPayloadMismatch", err)
	}

	// While a call holds a key: another caller gets ErrInProgress, a nested call runs inside
	// the lease.
	got, err = idempotency.Do(ctx, st, "held", nil, func(ctx context.Context) (string, error) {
		if _, err := idempotency.Do(context.Background(), st, "held", nil, fn("other caller"), prefix); !errors.Is(err, idempotency.ErrInProgress) {
			return "", fmt.Errorf("another caller: %v, want ErrInProgress", err)
		}
		inner, err := idempotency.Do(ctx, st, "held", nil, fn("nested"), prefix)
		if err != nil || inner != "nested" {
			return "", fmt.Errorf("nested Do = %q, %v, want nested, <nil>", inner, err)
		}
		return "outer", nil
	}, prefix)
	if err != nil || got != "outer" {
		t.Fatalf("outer Do = %q, %v", got, err)
	}

	// A second caller's fn does not run while the first holds the key, even when the
	// record's expiry is shorter than the lease and has passed.
	short := idempotency.WithExpiry(time.Second)
	got, err = idempotency.Do(ctx, st, "short", nil, func(context.Context) (string, error) {
		later := idempotency.WithClock(func() time.Time { return time.Now().Add(3 * time.Second) })
		if _, err := idempotency.Do(context.Background(), st, "short", nil, fn("second"), prefix, short, later); !errors.Is(err, idempotency.ErrInProgress) {
			return "", fmt.Errorf("another caller past the expiry, inside the lease: %v, want ErrInProgress", err)
		}
		return "first", nil
	}, prefix, short)
	if err != nil || got != "first" {
		t.Fatalf("Do with a short expiry = %q, %v", got, err)
	}

	// A failure frees the key.
	boom := errors.New("boom")
	if _, err := idempotency.Do(ctx, st, "fails", nil, func(context.Context) (int, error) { return 0, boom }, prefix); !errors.Is(err, boom) {
		t.Fatalf("failing Do: %v, want its error", err)
	}
	got, err = idempotency.Do(ctx, st, "fails", nil, fn("retried"), prefix)
	if err != nil || got != "retried" {
		t.Fatalf("Do after a failure = %q, %v, want it run again", got, err)
	}
}
