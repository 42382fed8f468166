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
