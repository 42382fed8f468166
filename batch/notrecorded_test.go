package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/internal/completion"
	"github.com/kafkalambda/toolkit/internal/faulthttp"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// resultHook keeps the BatchResult of each batch.
type resultHook struct {
	mu  sync.Mutex
	got []batch.BatchResult
}

func (h *resultHook) OnBatchStart(ctx context.Context, _ *batch.BatchInfo) context.Context {
	return ctx
}
func (h *resultHook) OnBatchEnd(_ context.Context, _ *batch.BatchInfo, r *batch.BatchResult) {
	h.mu.Lock()
	h.got = append(h.got, *r)
	h.mu.Unlock()
}

// emfCounts reads the counts of the one EMF line in buf.
func emfCounts(t *testing.T, buf *bytes.Buffer) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &doc); err != nil {
		t.Fatalf("EMF line: %v\n%s", err, buf)
	}
	for k, v := range doc { // a metric's value is an array of one, as package metrics writes it
		if a, ok := v.([]any); ok {
			if len(a) != 1 {
				t.Fatalf("metric %s: %d values, want one: %s", k, len(a), buf)
			}
			doc[k] = a[0]
		}
	}
	return doc
}

// A success stays a success: when the handler succeeded but the store could not record its
// completion (idempotency.ErrNotRecorded), the record is processed, not reported (a
// redelivery would apply its effect again once the lease ends), and it is logged, one line at
// level Error with where it is and why, and counted as NotRecorded in the BatchResult, the
// summary line and the metrics. It is not a failure: no "record failed" line, no FailureHook
// call, nothing to the sink.
func TestNotRecorded(t *testing.T) {
	errStore := errors.New("throttled")
	store := &failingStore{Store: idempotencytest.NewStore(), completeErr: errStore}
	var logs failureLog
	var metrics bytes.Buffer
	fails, results := &failureHook{}, &resultHook{}
	sink := &memSink{}
	var calls atomic.Int64
	ev := kafkaParts("orders", []int32{0, 1}, 2, 10)
	resp, err := batch.ProcessKafka(context.Background(), ev, func(context.Context, *kafkaevent.Record) error {
		calls.Add(1)
		return nil
	}, batch.WithIdempotency(store), batch.WithSink(sink, batch.SinkExhausted), batch.WithLogger(logs.logger()),
		batch.WithHooks(fails, results), batch.WithMetrics(&metrics))
	if err != nil {
		t.Fatal(err)
	}
	if got := kafkaJSON(t, resp); got != wantKafka() || calls.Load() != 4 {
		t.Errorf("response %s after %d calls, want no record reported after 4 calls", got, calls.Load())
	}
	if len(sink.got) != 0 || len(fails.got) != 0 || len(logs.lines(t, "record failed")) != 0 {
		t.Errorf("treated as failures: sink %d, hook %d, lines %v", len(sink.got), len(fails.got), logs.lines(t, "record failed"))
	}
	lines := logs.lines(t, "record completion not stored")
	where := map[string]bool{}
	for _, l := range lines {
		where[lineWhere(l)] = true
		if l["level"] != "ERROR" || !strings.Contains(fmt.Sprint(l["error"]), "throttled") ||
			!strings.Contains(fmt.Sprint(l["error"]), idempotency.ErrNotRecorded.Error()) {
			t.Errorf("line %v", l)
		}
		for _, k := range []string{"value", "key", "headers"} {
			if _, ok := l[k]; ok {
				t.Errorf("line with the record's %s: %v", k, l)
			}
		}
	}
	if len(lines) != 4 || !where["orders-0@10"] || !where["orders-0@11"] || !where["orders-1@10"] || !where["orders-1@11"] {
		t.Errorf("not-recorded lines %v", lines)
	}
	if len(results.got) != 1 || results.got[0] != (batch.BatchResult{Processed: 4, NotRecorded: 4}) {
		t.Errorf("BatchResult %+v", results.got)
	}
	sum := logs.lines(t, "batch processed")
	if len(sum) != 1 || sum[0]["notRecorded"] != 4.0 || sum[0]["processed"] != 4.0 || sum[0]["failed"] != 0.0 || sum[0]["level"] != "WARN" {
		t.Errorf("summary %v", sum)
	}
	if m := emfCounts(t, &metrics); m["NotRecorded"] != 4.0 || m["Processed"] != 4.0 || m["Failed"] != 0.0 || m["Reported"] != 0.0 {
		t.Errorf("metrics %v", m)
	}
	// The keys stay in progress: a redelivery within the lease is reported, not handled.
	resp, err = batch.ProcessKafka(context.Background(), ev, func(context.Context, *kafkaevent.Record) error {
		calls.Add(1)
		return nil
	}, silent(batch.WithIdempotency(store.Store))...)
	if err != nil || len(resp.BatchItemFailures) != 4 || calls.Load() != 4 {
		t.Errorf("redelivery: %s after %d calls, %v", kafkaJSON(t, resp), calls.Load(), err)
	}
}

// The same on DynamoDB (dynalite), with every PutItem of the completion throttled by the
// network: the side effect happens exactly once, the record is not reported, and the batch
// answers before the function's deadline although the store is retried until close to it.
func TestNotRecordedThrottledDynamoDB(t *testing.T) {
	srv := standintest.StartDynamoDB(t)
	ctx := context.Background()
	if err := standin.CreateTable(ctx, srv.Client(), dynamodb.TableInput("not-recorded")); err != nil {
		t.Fatal(err)
	}
	ft := faulthttp.New(nil)
	store, err := dynamodb.NewStore(srv.Client(func(o *awsdynamodb.Options) { o.HTTPClient = ft.Client() }), "not-recorded")
	if err != nil {
		t.Fatal(err)
	}

	for _, source := range []string{"kafka", "sqs"} {
		t.Run(source, func(t *testing.T) {
			// The record's first PutItem acquires its key; every one after it (the completion,
			// and the SDK's and Do's retries of it) is throttled. The completion the subtest
			// before could not store is retried since: let it be stored first.
			ft.Clear()
			if !completion.Settle(store, 10*time.Second) {
				t.Fatal("the completion of the subtest before was still pending 10 s after the faults ended")
			}
			ft.Add(faulthttp.Rule{Op: "DynamoDB_20120810.PutItem", First: ft.Calls("DynamoDB_20120810.PutItem") + 2, Fault: faulthttp.Throttle})
			var logs failureLog
			var effects atomic.Int64
			opts := []batch.Option{batch.WithIdempotency(store, idempotency.WithKeyPrefix(source)), batch.WithLogger(logs.logger()),
				batch.WithDeadlineMargin(300 * time.Millisecond)}
			fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			deadline, _ := fctx.Deadline()
			var reported int
			switch source {
			case "kafka":
				resp, err := batch.ProcessKafka(fctx, kafkaParts("orders", []int32{0}, 1, 0), func(context.Context, *kafkaevent.Record) error {
					effects.Add(1)
					return nil
				}, opts...)
				if err != nil {
					t.Fatal(err)
				}
				reported = len(resp.BatchItemFailures)
			case "sqs":
				resp, err := batch.ProcessSQS(fctx, standardEvent(1), func(context.Context, *events.SQSMessage) error {
					effects.Add(1)
					return nil
				}, opts...)
				if err != nil {
					t.Fatal(err)
				}
				reported = len(resp.BatchItemFailures)
			}
			if time.Now().After(deadline) {
				t.Errorf("returned %v after the function's deadline", time.Since(deadline))
			}
			if faults := ft.Faults("DynamoDB_20120810.PutItem"); faults == 0 {
				t.Fatal("no completion was throttled")
			}
			if effects.Load() != 1 || reported != 0 {
				t.Errorf("effect applied %d times, %d reported; want once, none reported", effects.Load(), reported)
			}
			if l := logs.lines(t, "record completion not stored"); len(l) != 1 {
				t.Errorf("not-recorded lines %v\n%s", l, logs.String())
			}
			if sum := logs.lines(t, "batch processed"); len(sum) != 1 || sum[0]["notRecorded"] != 1.0 || sum[0]["reported"] != 0.0 {
				t.Errorf("summary %v", sum)
			}
		})
	}
}
