package batch_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// TestAbandonedHandlerKeepsKey: under WithIdempotency, a handler that ignores its context is
// abandoned at the deadline margin and goes on running, as in a process that keeps running
// (Lambda Managed Instances). Its lease is renewed meanwhile, so a redelivery after the
// function's deadline gets ErrInProgress instead of applying the record beside it; when the
// abandoned handler ends, its completion is stored, and the next redelivery replays it.
// Before, the lease ended at the function's deadline and the redelivery applied the record
// while the abandoned handler applied it too.
func TestAbandonedHandlerKeepsKey(t *testing.T) {
	t.Parallel()
	store := idempotencytest.NewStore()
	ev := kafkaParts("orders", []int32{0}, 1, 7)
	var applied atomic.Int32
	release := make(chan struct{})
	ignoresContext := func(context.Context, *kafkaevent.Record) error {
		<-release
		applied.Add(1)
		return nil
	}
	honours := func(ctx context.Context, _ *kafkaevent.Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		applied.Add(1)
		return nil
	}
	opts := silent(batch.WithIdempotency(store), batch.WithDeadlineMargin(300*time.Millisecond), batch.WithRetry(1, 0))
	const timeout = 2 * time.Second

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	resp, err := batch.ProcessKafka(ctx, ev, ignoresContext, opts...)
	if err != nil || kafkaJSON(t, resp) != wantKafka("orders-0@7") {
		t.Fatalf("first delivery = %s, %v; want the abandoned record reported", kafkaJSON(t, resp), err)
	}

	time.Sleep(time.Until(deadline) + 100*time.Millisecond) // the first function's deadline has passed
	ctx2, cancel2 := context.WithTimeout(context.Background(), timeout)
	defer cancel2()
	failures := &failureErrs{}
	resp, err = batch.ProcessKafka(ctx2, ev, honours, append(opts, batch.WithHooks(failures))...)
	if err != nil || kafkaJSON(t, resp) != wantKafka("orders-0@7") || len(failures.errs) != 1 || !errors.Is(failures.errs[0], idempotency.ErrInProgress) {
		t.Errorf("redelivery while the abandoned handler runs = %s, %v, failures %v; want it reported with ErrInProgress", kafkaJSON(t, resp), err, failures.errs)
	}
	if n := applied.Load(); n != 0 {
		t.Fatalf("applied %d times beside the abandoned handler, want 0", n)
	}

	close(release)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		rs := store.Records()
		if len(rs) == 1 && rs[0].Status == idempotency.StatusCompleted {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("entries %+v 10 s after the abandoned handler returned, want its one completed", rs)
		}
	}
	ctx3, cancel3 := context.WithTimeout(context.Background(), timeout)
	defer cancel3()
	resp, err = batch.ProcessKafka(ctx3, ev, honours, opts...)
	if err != nil || kafkaJSON(t, resp) != wantKafka() {
		t.Errorf("redelivery after the abandoned handler's completion = %s, %v; want it replayed", kafkaJSON(t, resp), err)
	}
	if n := applied.Load(); n != 1 {
		t.Errorf("applied %d times, want once", n)
	}
}

// failureErrs keeps the errors of the failures reported to it.
type failureErrs struct {
	mu   sync.Mutex
	errs []error
}

func (f *failureErrs) OnFailure(_ context.Context, fl *batch.Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fl.Err)
}

// renewRefused is an in-memory store that cannot renew a lease, as one out of reach.
type renewRefused struct{ *idempotencytest.Store }

func (renewRefused) Renew(context.Context, *idempotency.Entry) error {
	return errors.New("store unreachable")
}

// TestLeaseShorterThanHandler: under WithIdempotency and WithMaxLease(300ms), a handler runs
// past its lease, which cannot be renewed. Its context ends with the lease (cause
// idempotency.ErrLeaseLost), another delivery takes the key, and the record is reported
// (ErrLeaseLost), not counted as a success. Before, the handler's context did not end, and
// the batch reported a success whose completion was not stored (NotRecorded).
func TestLeaseShorterThanHandler(t *testing.T) {
	t.Parallel()
	store := renewRefused{idempotencytest.NewStore()}
	ev := kafkaParts("orders", []int32{0}, 1, 3)
	var applied atomic.Int32
	failures := &failureErrs{}
	results := &resultHook{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := batch.ProcessKafka(ctx, ev, func(ctx context.Context, r *kafkaevent.Record) error {
		select {
		case <-ctx.Done():
			if cause := context.Cause(ctx); !errors.Is(cause, idempotency.ErrLeaseLost) {
				t.Errorf("handler's context ended with %v, want ErrLeaseLost", cause)
			}
		case <-time.After(10 * time.Second):
			t.Error("handler's context still live 10 s after its 300 ms lease ended unrenewed")
		}
		// Another delivery, after the lease ended, takes the key and applies the record.
		other, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := batch.ProcessKafka(other, ev, func(context.Context, *kafkaevent.Record) error {
			applied.Add(1)
			return nil
		}, silent(batch.WithIdempotency(store.Store))...); err != nil {
			t.Error(err)
		}
		applied.Add(1)
		return nil // as a handler that did not look at its context would
	}, silent(batch.WithIdempotency(store, idempotency.WithMaxLease(300*time.Millisecond)), batch.WithRetry(1, 0), batch.WithHooks(failures, results))...)
	if err != nil || kafkaJSON(t, resp) != wantKafka("orders-0@3") {
		t.Errorf("response %s, %v; want the record reported", kafkaJSON(t, resp), err)
	}
	if len(failures.errs) != 1 || !errors.Is(failures.errs[0], idempotency.ErrLeaseLost) {
		t.Errorf("failures %v, want one with ErrLeaseLost", failures.errs)
	}
	if len(results.got) != 1 || results.got[0].NotRecorded != 0 || results.got[0].Processed != 0 {
		t.Errorf("results %+v, want nothing processed nor NotRecorded", results.got)
	}
	if n := applied.Load(); n != 2 {
		t.Errorf("applied %d times, want 2 (the window a lease that cannot be renewed leaves)", n)
	}
}
