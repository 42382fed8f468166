package batch_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// countingStore counts every call the batch makes to its store.
type countingStore struct {
	*idempotencytest.Store
	calls atomic.Int64
}

func (s *countingStore) Format() idempotency.Format { s.calls.Add(1); return s.Store.Format() }
func (s *countingStore) Acquire(ctx context.Context, r *idempotency.Entry, now time.Time) (*idempotency.Entry, error) {
	s.calls.Add(1)
	return s.Store.Acquire(ctx, r, now)
}
func (s *countingStore) Complete(ctx context.Context, r *idempotency.Entry) error {
	s.calls.Add(1)
	return s.Store.Complete(ctx, r)
}
func (s *countingStore) Release(ctx context.Context, r *idempotency.Entry) error {
	s.calls.Add(1)
	return s.Store.Release(ctx, r)
}
func (s *countingStore) Renew(ctx context.Context, r *idempotency.Entry) error {
	s.calls.Add(1)
	return s.Store.Renew(ctx, r)
}

// countingHook counts every hook call.
type countingHook struct{ calls atomic.Int64 }

func (h *countingHook) OnBatchStart(ctx context.Context, _ *batch.BatchInfo) context.Context {
	h.calls.Add(1)
	return ctx
}
func (h *countingHook) OnBatchEnd(context.Context, *batch.BatchInfo, *batch.BatchResult) {
	h.calls.Add(1)
}
func (h *countingHook) OnGroupStart(ctx context.Context, _ *batch.GroupInfo) context.Context {
	h.calls.Add(1)
	return ctx
}
func (h *countingHook) OnGroupEnd(context.Context, *batch.GroupInfo, int) { h.calls.Add(1) }
func (h *countingHook) OnRecordStart(ctx context.Context, _ *batch.Item) context.Context {
	h.calls.Add(1)
	return ctx
}
func (h *countingHook) OnRecordEnd(context.Context, *batch.Item, error) { h.calls.Add(1) }
func (h *countingHook) OnFailure(context.Context, *batch.Failure)       { h.calls.Add(1) }

// On Lambda Managed Instances a function is not stopped at its timeout, so an invocation can
// start with its time already spent (AWS: "Understanding the Lambda Managed Instances
// execution environment"). A batch whose deadline less the margin has passed at its start is
// answered at once: every record reported, one WARN line, no handler, hook or store called.
// The clock is the batch's (a fake one), against the context's deadline.
func TestNoTimeLeft(t *testing.T) {
	now := time.Now().Add(time.Hour) // the fake clock: the context's deadlines are real, in the future
	cases := []struct {
		name   string
		left   time.Duration // the deadline, from the fake now
		margin time.Duration
		ran    bool // time was left: the batch runs
	}{
		{"deadline passed", -time.Second, 500 * time.Millisecond, false},
		{"deadline now, no margin", 0, 0, false},
		{"less than the margin", 499 * time.Millisecond, 500 * time.Millisecond, false},
		{"exactly the margin", 500 * time.Millisecond, 500 * time.Millisecond, false},
		{"a millisecond more than the margin", 501 * time.Millisecond, 500 * time.Millisecond, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := batch.WithClock(func() time.Time { return now }, func(context.Context, time.Duration) error { return nil })
			ctx, cancel := context.WithDeadline(context.Background(), now.Add(tc.left))
			defer cancel()
			store := &countingStore{Store: idempotencytest.NewStore()}
			hook := &countingHook{}
			var handled atomic.Int64
			var logs failureLog
			opts := []batch.Option{clock, batch.WithDeadlineMargin(tc.margin), batch.WithIdempotency(store), batch.WithHooks(hook), batch.WithLogger(logs.logger())}

			resp, err := batch.ProcessKafka(ctx, kafkaParts("orders", []int32{0, 1}, 3, 0), func(context.Context, *kafkaevent.Record) error {
				handled.Add(1)
				return nil
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if tc.ran {
				if handled.Load() != 6 || len(resp.BatchItemFailures) != 0 || store.calls.Load() == 0 || hook.calls.Load() == 0 {
					t.Fatalf("time left: %d handled, %s, %d store calls, %d hook calls", handled.Load(), kafkaJSON(t, resp), store.calls.Load(), hook.calls.Load())
				}
				if n := len(logs.lines(t, "batch not processed: no time left")); n != 0 {
					t.Errorf("%d lines saying no time was left", n)
				}
				return
			}
			if got := kafkaJSON(t, resp); got != wantKafka("orders-0@0", "orders-0@1", "orders-0@2", "orders-1@0", "orders-1@1", "orders-1@2") {
				t.Errorf("response %s", got)
			}
			sq, err := batch.ProcessSQS(ctx, fifoEvent(2, 2), func(context.Context, *events.SQSMessage) error {
				handled.Add(1)
				return nil
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, f := range sq.BatchItemFailures {
				ids = append(ids, f.ItemIdentifier)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, []string{"g0-0", "g0-1", "g1-0", "g1-1"}) {
				t.Errorf("SQS response %v, want every message", ids)
			}
			if handled.Load() != 0 || store.calls.Load() != 0 || hook.calls.Load() != 0 {
				t.Errorf("%d handler calls, %d store calls, %d hook calls; want none", handled.Load(), store.calls.Load(), hook.calls.Load())
			}
			lines := logs.lines(t, "batch not processed: no time left")
			if len(lines) != 2 || lines[0]["level"] != "WARN" || lines[0]["reported"] != float64(6) || lines[1]["reported"] != float64(4) {
				t.Errorf("want one WARN line per batch:\n%s", logs.String())
			}
			if n := len(logs.all(t)); n != 2 {
				t.Errorf("%d lines, want 2:\n%s", n, logs.String())
			}
		})
	}
}

// The same with the real clock and a context whose deadline has passed, as an invocation on
// Lambda Managed Instances that runs past its timeout hands its context on.
func TestNoTimeLeftDeadlinePassed(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	store := &countingStore{Store: idempotencytest.NewStore()}
	var handled atomic.Int64
	var logs failureLog
	resp, err := batch.SQSHandler(func(context.Context, *events.SQSMessage) error {
		handled.Add(1)
		return nil
	}, batch.WithIdempotency(store), batch.WithLogger(logs.logger()))(ctx, standardEvent(5))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 5 || handled.Load() != 0 || store.calls.Load() != 0 {
		t.Errorf("%d reported, %d handled, %d store calls; want 5, 0, 0", len(resp.BatchItemFailures), handled.Load(), store.calls.Load())
	}
	if lines := logs.lines(t, "batch not processed: no time left"); len(lines) != 1 || lines[0]["remainingMs"].(float64) > -900 {
		t.Errorf("want one line with the time left, negative:\n%s", logs.String())
	}
}
