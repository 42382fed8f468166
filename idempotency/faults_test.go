package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/internal/faulthttp"
)

// Faults injected by internal/faulthttp between the SDK and dynalite, at each store call of
// Do: the acquire (the first PutItem), the completion (the second) and the release (the
// DeleteItem after fn fails).

const (
	opPut    = "DynamoDB_20120810.PutItem"
	opDelete = "DynamoDB_20120810.DeleteItem"
)

// faultEnv is dynalite with a table, and a store whose client goes through a faulthttp
// Transport (with the tests' SDK retryer: 3 attempts, backoff at most 100 ms).
type faultEnv struct {
	*env
	table string
	ft    *faulthttp.Transport
	store *dynamodb.Store
}

func newFaultEnv(t *testing.T, e *env, opts ...dynamodb.Option) *faultEnv {
	t.Helper()
	ft := faulthttp.New(nil)
	table := e.newTable(t)
	client := e.srv.Client(func(o *awsdynamodb.Options) { o.HTTPClient = ft.Client() })
	return &faultEnv{env: e, table: table, ft: ft, store: newStore(t, client, table, opts...)}
}

// within runs do and fails t unless it returns within limit; a call still blocked is left
// behind, so a test of a deadline fails in time on code that ignores it.
func within(t *testing.T, limit time.Duration, do func()) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() { defer close(done); do() }()
	select {
	case <-done:
		return time.Since(start)
	case <-time.After(limit):
		t.Fatalf("Do still blocked %v after it started, past its deadline", limit)
		return 0
	}
}

// deadlineOnly is a context that reports the deadline dl and does not end at it: it ends
// only when cancelled. Code under it that returns by dl does so on its own reading of the
// deadline, whatever the machine's scheduling.
type deadlineOnly struct {
	context.Context
	dl time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.dl, true }

// deadlineStore records, for each call to the store, when it was made and the deadline of
// its context.
type deadlineStore struct {
	idempotency.Store
	mu    sync.Mutex
	calls []storeCall
}

type storeCall struct {
	op       string
	at, dl   time.Time
	deadline bool
}

func (s *deadlineStore) record(ctx context.Context, op string) {
	dl, ok := ctx.Deadline()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, storeCall{op: op, at: time.Now(), dl: dl, deadline: ok})
}

func (s *deadlineStore) made() []storeCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]storeCall(nil), s.calls...)
}

func (s *deadlineStore) Acquire(ctx context.Context, r *idempotency.Entry, now time.Time) (*idempotency.Entry, error) {
	s.record(ctx, "acquire")
	return s.Store.Acquire(ctx, r, now)
}

func (s *deadlineStore) Complete(ctx context.Context, r *idempotency.Entry) error {
	s.record(ctx, "complete")
	return s.Store.Complete(ctx, r)
}

func (s *deadlineStore) Release(ctx context.Context, r *idempotency.Entry) error {
	s.record(ctx, "release")
	return s.Store.Release(ctx, r)
}

// TestStoreCallsEndByDeadline: with DynamoDB black-holed at acquire, complete or release,
// Do returns by the context's deadline, even when the caller's context was cancelled
// meanwhile; without a deadline, by the end of the default lease. Before, the completion and
// the release ran under context.WithoutCancel, with no deadline at all: Do stayed blocked
// until the HTTP client's own timeout, 10 s per attempt.
//
// The caller's context reports its deadline and does not end at it, so that only Do's own
// reading of the deadline can end a black-holed call: Do returning at all shows that it ends
// its calls itself, and each call's context shows by when (the deadline less
// WithStoreDeadlineMargin, 100 ms). No wall-clock margin decides the outcome.
func TestStoreCallsEndByDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	errFn := errors.New("fn failed")
	for _, tc := range []deadlineCase{
		{name: "acquire", rule: faulthttp.Rule{Op: opPut, Fault: faulthttp.BlackHole}, wantOp: "acquire"},
		{name: "acquire without deadline", rule: faulthttp.Rule{Op: opPut, Fault: faulthttp.BlackHole}, noDL: true, wantOp: "acquire"},
		{name: "complete", rule: faulthttp.Rule{Op: opPut, First: 2, Fault: faulthttp.BlackHole}, wantOp: "complete", wantRan: 1},
		{name: "complete after the caller cancelled", rule: faulthttp.Rule{Op: opPut, First: 2, Fault: faulthttp.BlackHole}, cancel: true, wantOp: "complete", wantRan: 1},
		{name: "complete without deadline", rule: faulthttp.Rule{Op: opPut, First: 2, Fault: faulthttp.BlackHole}, noDL: true, wantOp: "complete", wantRan: 1},
		{name: "release", rule: faulthttp.Rule{Op: opDelete, Fault: faulthttp.BlackHole}, fnErr: errFn, wantOp: "release", wantRan: 1},
		{name: "release after the caller cancelled", rule: faulthttp.Rule{Op: opDelete, Fault: faulthttp.BlackHole}, cancel: true, fnErr: errFn, wantOp: "release", wantRan: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The deadline is also the time the calls before the one under test (the
			// acquire, for the completion and the release) have to succeed in. On a machine
			// so loaded that they did not, the case runs again with twice the time: nothing
			// the call under test does is excused, only its set-up is given time.
			for deadline := time.Second; !tc.run(t, e, deadline); deadline *= 2 {
				if deadline >= 16*time.Second {
					t.Fatalf("the calls before the %s did not succeed within %v", tc.wantOp, deadline)
				}
			}
		})
	}
}

// deadlineCase is a case of TestStoreCallsEndByDeadline.
type deadlineCase struct {
	name    string
	rule    faulthttp.Rule
	cancel  bool // fn cancels the caller's context
	fnErr   error
	noDL    bool // no deadline: WithDefaultLease(deadline)
	wantOp  string
	wantRan int32
}

// run runs the case with the given deadline, on a table of its own, and checks it unless the
// store call under test was never made (the calls before it did not succeed in time): then
// it reports false.
func (tc deadlineCase) run(t *testing.T, e *env, deadline time.Duration) bool {
	t.Helper()
	const margin = 100 * time.Millisecond // WithStoreDeadlineMargin's default
	fe := newFaultEnv(t, e)
	fe.ft.Add(tc.rule)
	store := &deadlineStore{Store: fe.store}
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	var ctx context.Context = deadlineOnly{Context: parent, dl: start.Add(deadline)}
	var opts []idempotency.Option
	if tc.noDL {
		ctx = parent
		opts = append(opts, idempotency.WithDefaultLease(deadline))
	}
	var ran atomic.Int32
	var got string
	var err error
	var calls []storeCall
	// A minute is no margin: code that ignores the deadline blocks until the HTTP client
	// gives up, or for ever.
	elapsed := within(t, time.Minute, func() {
		got, err = idempotency.Do(ctx, store, "k", nil, func(context.Context) (string, error) {
			ran.Add(1)
			if tc.cancel {
				cancel()
			}
			return "ran", tc.fnErr
		}, opts...)
		calls = store.made()
	})
	if !slices.ContainsFunc(calls, func(c storeCall) bool { return c.op == tc.wantOp }) {
		t.Logf("with a %v deadline, Do = %v before any %s: the set-up did not succeed in time", deadline, err, tc.wantOp)
		return false
	}
	var pe *idempotency.PersistenceError
	if !errors.As(err, &pe) || pe.Op != tc.wantOp || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do = %v, want a *PersistenceError Op %s ending in context.DeadlineExceeded", err, tc.wantOp)
	}
	if ran.Load() != tc.wantRan {
		t.Errorf("fn ran %d times, want %d", ran.Load(), tc.wantRan)
	}
	switch tc.wantOp {
	case "complete":
		if got != "ran" || !errors.Is(err, idempotency.ErrNotRecorded) {
			t.Errorf("Do = %q, %v; want fn's result with ErrNotRecorded", got, err)
		}
	case "release":
		if !errors.Is(err, tc.fnErr) {
			t.Errorf("Do = %v, want fn's error in it", err)
		}
	}
	// Every store call ends by the deadline less the margin: with a deadline, that one;
	// without, Do's start plus the default lease, which the call cannot have begun before.
	if calls[len(calls)-1].op != tc.wantOp {
		t.Errorf("store calls %+v, want the last one a %s", calls, tc.wantOp)
	}
	releases := 0
	for _, c := range calls {
		if c.op == "release" {
			// A second release is releaseLater's, in the background once Do has returned
			// (its own release having failed): it runs until the lease ends, by design, and
			// may be recorded before calls is read, or not, as the scheduler has it.
			if releases++; releases > 1 {
				continue
			}
		}
		limit := start.Add(deadline - margin)
		if tc.noDL {
			limit = c.at.Add(deadline - margin)
		}
		if !c.deadline || c.dl.After(limit) {
			t.Errorf("%s: its context ends %v after Do started (deadline %v), want by %v", c.op, c.dl.Sub(start), c.deadline, limit.Sub(start))
		}
	}
	t.Logf("returned after %v: %v", elapsed.Round(time.Millisecond), err)
	return true
}

// TestCompletionRetried: a handler succeeds, then the completion is throttled past the
// SDK's own three attempts. Do retries it within the deadline, and the record is completed.
// Before, Do gave up after the SDK's attempts.
func TestCompletionRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fe := newFaultEnv(t, e)
	fe.ft.Add(faulthttp.Rule{Op: opPut, First: 2, Count: 4, Fault: faulthttp.Throttle})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ran atomic.Int32
	got, err := idempotency.Do(ctx, fe.store, "k", nil, counted(&ran, value("ran")))
	if err != nil || got != "ran" {
		t.Fatalf("Do with the completion throttled 4 times = %q, %v; want it retried and stored", got, err)
	}
	if it := e.item(t, fe.table, keyID(t, "k")); it == nil || str(t, it, "status") != "COMPLETED" {
		t.Fatalf("item = %v, want COMPLETED", it)
	}
	// The first failed completion asks for a renewal of the lease, so that the retries
	// happen under it: one more PutItem, unless the completion is stored before it is sent.
	if n := fe.ft.Calls(opPut); n != 6 && n != 7 {
		t.Errorf("PutItem calls = %d, want 6 or 7 (acquire, 4 throttled, the stored completion, a renewal)", n)
	}
}

// TestNotRecorded: the completion stays throttled until the deadline. Do returns fn's
// result with ErrNotRecorded in a *PersistenceError Op "complete", and does not release: the
// entry stays in progress. Once DynamoDB answers again, the completion is stored by the
// retries that go on after Do returned, under a renewed lease: a redelivery after the first
// lease would have ended replays it. Before, the entry stayed in progress until its lease ended,
// and the next delivery ran fn again.
func TestNotRecorded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, format := range []idempotency.Format{idempotency.FormatPython, idempotency.FormatTypeScript} {
		t.Run(format.String(), func(t *testing.T) {
			t.Parallel()
			fe := newFaultEnv(t, e, dynamodb.WithFormat(format))
			fe.ft.Add(faulthttp.Rule{Op: opPut, First: 2, Fault: faulthttp.Throttle})
			const deadline = 1500 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			var ran atomic.Int32
			start := time.Now()
			got, err := idempotency.Do(ctx, fe.store, "k", nil, counted(&ran, value("ran")))
			elapsed := time.Since(start)
			var pe *idempotency.PersistenceError
			if !errors.Is(err, idempotency.ErrNotRecorded) || !errors.As(err, &pe) || pe.Op != "complete" {
				t.Fatalf("Do = %v, want ErrNotRecorded in a *PersistenceError Op complete", err)
			}
			if got != "ran" {
				t.Errorf("result = %q, want fn's", got)
			}
			if elapsed > deadline {
				t.Errorf("Do returned after %v, past its deadline", elapsed)
			}
			if n := fe.ft.Calls(opPut); n < 5 {
				t.Errorf("PutItem calls = %d, want the completion retried beyond the SDK's 3 attempts", n)
			}
			if n := fe.ft.Calls(opDelete); n != 0 {
				t.Errorf("DeleteItem calls = %d: a success whose completion failed was released", n)
			}
			id, _ := idempotency.KeyID(format, "k")
			if it := e.item(t, fe.table, id); it == nil || str(t, it, "status") != "INPROGRESS" {
				t.Fatalf("item = %v, want it left INPROGRESS", it)
			}
			fe.ft.Clear()
			if !idempotency.Settle(fe.store, 10*time.Second) {
				t.Fatal("the completion was still being retried 10 s after DynamoDB answered again")
			}
			if it := e.item(t, fe.table, id); it == nil || str(t, it, "status") != "COMPLETED" {
				t.Fatalf("item = %v, want COMPLETED by the retries after Do returned", it)
			}
			after := idempotency.WithClock(func() time.Time { return time.Now().Add(deadline + time.Second) })
			if got, err := idempotency.Do(context.Background(), fe.store, "k", nil, counted(&ran, value("again")), after); err != nil || got != "ran" {
				t.Errorf("redelivery after the first lease = %q, %v; want the stored result", got, err)
			}
			if ran.Load() != 1 {
				t.Errorf("fn ran %d times, want 1", ran.Load())
			}
		})
	}
}

// TestShortExpiryKeepsLease: WithExpiry(1s) under a 60 s deadline. A second caller 2.2 s
// later, while the first is still inside fn, gets ErrInProgress. Before, the store's
// condition took the record over once its expiration passed, whatever its lease, and fn ran
// twice at once.
func TestShortExpiryKeepsLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) idempotency.Store
	}{
		{"python", func(t *testing.T) idempotency.Store { return newStore(t, e.client, e.newTable(t)) }},
		{"typescript", func(t *testing.T) idempotency.Store {
			return newStore(t, e.client, e.newTable(t), dynamodb.WithFormat(idempotency.FormatTypeScript))
		}},
		{"memory", func(*testing.T) idempotency.Store { return idempotencytest.NewStore() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := tc.store(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			expiry := idempotency.WithExpiry(time.Second)
			var ran atomic.Int32
			_, err := idempotency.Do(ctx, store, "k", nil, func(context.Context) (string, error) {
				ran.Add(1)
				later := idempotency.WithClock(func() time.Time { return time.Now().Add(2200 * time.Millisecond) })
				other, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if _, err := idempotency.Do(other, store, "k", nil, counted(&ran, value("second")), expiry, later); !errors.Is(err, idempotency.ErrInProgress) {
					t.Errorf("second caller 2.2 s later, inside the first's lease = %v, want ErrInProgress", err)
				}
				return "first", nil
			}, expiry)
			if err != nil {
				t.Fatal(err)
			}
			if ran.Load() != 1 {
				t.Errorf("fn ran %d times, want 1 (a live lease was taken over)", ran.Load())
			}
		})
	}

	t.Run("expiration written no earlier than the lease", func(t *testing.T) {
		table := e.newTable(t)
		store := newStore(t, e.client, table)
		now := time.Now()
		lease := now.Add(time.Minute)
		ctx, cancel := context.WithDeadline(context.Background(), lease)
		defer cancel()
		_, err := idempotency.Do(ctx, store, "k", nil, func(context.Context) (int, error) {
			it := e.item(t, table, keyID(t, "k"))
			if got, want := num(t, it, "expiration"), fmt.Sprint(lease.Unix()); got != want {
				t.Errorf("in-progress expiration = %s, want %s (the lease's second), so that Powertools and TTL keep it", got, want)
			}
			return 1, nil
		}, idempotency.WithExpiry(time.Second), fixedClock(now))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := num(t, e.item(t, table, keyID(t, "k")), "expiration"), fmt.Sprint(now.Add(time.Second).Unix()); got != want {
			t.Errorf("completed expiration = %s, want %s (now + WithExpiry)", got, want)
		}
	})
}

// TestOwnAcquireRetried: the answer to the acquire's conditional PutItem is lost after
// DynamoDB applied it, and the SDK retries. The retry finds the caller's own record, and Do
// goes on. Before, it returned ErrInProgress and the key stayed blocked until the lease ended.
func TestOwnAcquireRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, format := range []idempotency.Format{idempotency.FormatPython, idempotency.FormatTypeScript} {
		t.Run(format.String(), func(t *testing.T) {
			fe := newFaultEnv(t, e, dynamodb.WithFormat(format))
			fe.ft.Add(faulthttp.Rule{Op: opPut, Count: 1, Fault: faulthttp.DropAfterApply})
			var ran atomic.Int32
			got, err := idempotency.Do(context.Background(), fe.store, "k", nil, counted(&ran, value("ran")))
			if err != nil || got != "ran" || ran.Load() != 1 {
				t.Fatalf("Do with the acquire's answer lost = %q, %v (fn ran %d times); want fn run once", got, err, ran.Load())
			}
			id, _ := idempotency.KeyID(format, "k")
			if it := e.item(t, fe.table, id); it == nil || str(t, it, "status") != "COMPLETED" {
				t.Errorf("item = %v, want COMPLETED", it)
			}
			if n := fe.ft.Calls(opPut); n != 3 {
				t.Errorf("PutItem calls = %d, want 3 (the lost acquire, its retry, the completion)", n)
			}
		})
	}
}

// TestFaults injects each fault at each store call of Do, then redelivers the record as the
// event source mapping would (when Do's error says to: not for a success, nor for
// ErrNotRecorded), until it is done. Every Do returns by its deadline, and each record's
// effect is applied exactly once: none lost, none twice.
func TestFaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const deadline = time.Second
	faults := []faulthttp.Fault{faulthttp.DropAfterApply, faulthttp.ServerError, faulthttp.Throttle, faulthttp.BlackHole}
	for _, at := range []string{"acquire", "complete", "release"} {
		for _, fault := range faults {
			t.Run(at+"/"+fault.String(), func(t *testing.T) {
				t.Parallel()
				fe := newFaultEnv(t, e)
				rule := faulthttp.Rule{Op: opPut, Count: 1, Fault: fault}
				switch at {
				case "complete":
					rule.First = 2
				case "release":
					rule.Op = opDelete
				}
				if fault == faulthttp.BlackHole {
					rule.Count = 0 // dead until cleared: every retry is lost too
				}
				fe.ft.Add(rule)

				var applied atomic.Int32
				failOnce := at == "release" // the first delivery's handler fails, before any effect
				fn := func(context.Context) (string, error) {
					if failOnce {
						failOnce = false
						return "", errors.New("handler failed")
					}
					applied.Add(1)
					return "done", nil
				}

				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				var err error
				elapsed := within(t, deadline+2*time.Second, func() { _, err = idempotency.Do(ctx, fe.store, "k", nil, fn) })
				if elapsed > deadline {
					t.Errorf("Do returned after %v, past its %v deadline", elapsed.Round(time.Millisecond), deadline)
				}
				t.Logf("first delivery: %v after %v", err, elapsed.Round(time.Millisecond))
				fe.ft.Clear()

				// Redeliveries: now, and then after the first delivery's lease has ended.
				for i, offset := range []time.Duration{0, deadline + time.Second} {
					if err == nil || errors.Is(err, idempotency.ErrNotRecorded) {
						break
					}
					clock := idempotency.WithClock(func() time.Time { return time.Now().Add(offset) })
					_, err = idempotency.Do(context.Background(), fe.store, "k", nil, fn, clock)
					t.Logf("redelivery %d: %v", i+1, err)
				}
				if err != nil && !errors.Is(err, idempotency.ErrNotRecorded) {
					t.Errorf("record still not done after its redeliveries: %v", err)
				}
				if n := applied.Load(); n != 1 {
					t.Errorf("effect applied %d times, want exactly once", n)
				}
				// However often it comes back now, the effect is not applied again: within the
				// lease whatever the outcome, and after it too once the completion is stored.
				late := []time.Duration{0}
				if err == nil {
					late = append(late, deadline+time.Second)
				}
				for _, offset := range late {
					clock := idempotency.WithClock(func() time.Time { return time.Now().Add(offset) })
					if _, err := idempotency.Do(context.Background(), fe.store, "k", nil, fn, clock); err != nil && !errors.Is(err, idempotency.ErrInProgress) {
						t.Errorf("late redelivery: %v", err)
					}
				}
				if n := applied.Load(); n != 1 {
					t.Errorf("effect applied %d times after late redeliveries, want exactly once", n)
				}
			})
		}
	}
}
