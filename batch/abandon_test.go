package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// stuck is a handler's way of ignoring its context: it sleeps past the function's deadline,
// then fails (so that, if its result were taken, the response would change).
type stuck struct {
	sleep   time.Duration
	running atomic.Int64 // calls not returned
	ended   atomic.Int64 // calls returned
}

func (s *stuck) run() error {
	s.running.Add(1)
	defer s.running.Add(-1)
	time.Sleep(s.sleep)
	s.ended.Add(1)
	return batch.Permanent(errors.New("finished late"))
}

// waitZero waits until n is 0: the handler calls it counts have returned.
func waitZero(t *testing.T, n *atomic.Int64) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); n.Load() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d handler calls still running after 10s", n.Load())
		}
	}
}

// observed records every hook call and log write with its time, to show that nothing is
// said after the response.
type observed struct {
	mu    sync.Mutex
	last  time.Time
	n     int
	lines []string
}

func (o *observed) note() {
	o.mu.Lock()
	o.last, o.n = time.Now(), o.n+1
	o.mu.Unlock()
}
func (o *observed) OnBatchStart(ctx context.Context, _ *batch.BatchInfo) context.Context {
	o.note()
	return ctx
}
func (o *observed) OnBatchEnd(context.Context, *batch.BatchInfo, *batch.BatchResult) { o.note() }
func (o *observed) OnGroupStart(ctx context.Context, _ *batch.GroupInfo) context.Context {
	o.note()
	return ctx
}
func (o *observed) OnGroupEnd(context.Context, *batch.GroupInfo, int) { o.note() }
func (o *observed) OnRecordStart(ctx context.Context, _ *batch.Item) context.Context {
	o.note()
	return ctx
}
func (o *observed) OnRecordEnd(context.Context, *batch.Item, error) { o.note() }
func (o *observed) OnFailure(context.Context, *batch.Failure)       { o.note() }
func (o *observed) Write(p []byte) (int, error) {
	o.note()
	o.mu.Lock()
	o.lines = append(o.lines, string(p))
	o.mu.Unlock()
	return len(p), nil
}
func (o *observed) Send(context.Context, *batch.Envelope) error { o.note(); return nil }

// count returns the calls so far.
func (o *observed) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

// abandonOptions are the options of the tests below: every kind of hook, a logger, metrics
// and a sink, all on o, and a margin of 300 ms.
func abandonOptions(o *observed) []batch.Option {
	return []batch.Option{batch.WithHooks(o), batch.WithLogger(slog.New(slog.NewJSONHandler(o, nil))), batch.WithMetrics(o),
		batch.WithSink(o, batch.SinkPermanent), batch.WithDeadlineMargin(300 * time.Millisecond), batch.WithRetry(1, 0)}
}

// afterResponse waits for the stuck handlers to end, then fails t if anything was said after
// returned (a hook, a log line, the metrics, the sink), or if the response changed.
func afterResponse(t *testing.T, s *stuck, o *observed, returned time.Time, before int, resp any, snapshot []byte) {
	t.Helper()
	waitZero(t, &s.running)
	if s.ended.Load() == 0 {
		t.Fatal("no handler was left running")
	}
	time.Sleep(20 * time.Millisecond) // what a late goroutine would do after its handler
	if n := o.count(); n != before {
		o.mu.Lock()
		t.Errorf("%d hook calls, log lines or sends after the response (the last %v after it)", n-before, o.last.Sub(returned))
		o.mu.Unlock()
	}
	if b, _ := json.Marshal(resp); string(b) != string(snapshot) {
		t.Errorf("the response changed after it was returned: %s, was %s", b, snapshot)
	}
}

// A handler that ignores its context does not hold the response past the deadline: at the
// deadline less the margin, ProcessKafka answers, reporting the record in flight and the
// rest of its partition; the other partitions' records are done. The stuck handler is left
// running, and when it ends it changes nothing: no hook, log line, metric or sink call comes
// after the response (and the race detector sees no race on them).
func TestAbandonKafka(t *testing.T) {
	s := &stuck{sleep: 1500 * time.Millisecond}
	o := &observed{}
	ev := kafkaParts("orders", []int32{0, 1}, 5, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	resp, err := batch.ProcessKafka(ctx, ev, func(ctx context.Context, r *kafkaevent.Record) error {
		if r.Partition == 0 && r.Offset == 2 {
			return s.run()
		}
		return nil
	}, abandonOptions(o)...)
	returned := time.Now()
	before := o.count()
	if err != nil {
		t.Fatal(err)
	}
	if !returned.Before(deadline) {
		t.Fatalf("returned %v after the function's deadline", returned.Sub(deadline))
	}
	if got, want := kafkaJSON(t, resp), wantKafka("orders-0@2", "orders-0@3", "orders-0@4"); got != want {
		t.Errorf("response %s, want %s", got, want)
	}
	o.mu.Lock()
	var failed, summary []string
	for _, l := range o.lines {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			switch m["msg"] {
			case "record failed":
				failed = append(failed, lineWhere(m)+" "+m["error"].(string))
			case "batch processed":
				summary = append(summary, l)
			}
		}
	}
	o.mu.Unlock()
	if !slices.Equal(failed, []string{"orders-0@2 " + batch.ErrAbandoned.Error()}) || len(summary) != 1 {
		t.Errorf("failure lines %q, summary %q", failed, summary)
	}
	snapshot, _ := json.Marshal(resp)
	afterResponse(t, s, o, returned, before, resp, snapshot)
}

// The same through KafkaHandler's Invoke, the path lambda.Start takes.
func TestAbandonKafkaInvoke(t *testing.T) {
	s := &stuck{sleep: 1500 * time.Millisecond}
	o := &observed{}
	payload, err := json.Marshal(kafkaParts("orders", []int32{0, 1, 2}, 3, 7))
	if err != nil {
		t.Fatal(err)
	}
	h := batch.KafkaHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		if r.Partition == 1 && r.Offset == 7 {
			return s.run()
		}
		return nil
	}, abandonOptions(o)...)
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	out, err := h.Invoke(ctx, payload)
	returned := time.Now()
	before := o.count()
	if err != nil {
		t.Fatal(err)
	}
	if !returned.Before(deadline) {
		t.Fatalf("returned %v after the function's deadline", returned.Sub(deadline))
	}
	want := `{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-1","offset":7}},{"itemIdentifier":{"partition":"orders-1","offset":8}},{"itemIdentifier":{"partition":"orders-1","offset":9}}]}`
	if string(out) != want {
		t.Errorf("response %s, want %s", out, want)
	}
	var resp batch.KafkaResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	afterResponse(t, s, o, returned, before, resp, out)
}

// ProcessSQS answers at the deadline less the margin too: on a standard queue the stuck
// message alone is reported, on a FIFO queue the rest of its message group with it.
func TestAbandonSQS(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   *events.SQSEvent
		slow string
		want []string
	}{
		{"standard", standardEvent(6), "m-2", []string{"m-2"}},
		{"fifo", fifoEvent(2, 4), "g1-1", []string{"g1-1", "g1-2", "g1-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &stuck{sleep: 1500 * time.Millisecond}
			o := &observed{}
			ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
			defer cancel()
			deadline, _ := ctx.Deadline()
			resp, err := batch.ProcessSQS(ctx, tc.ev, func(ctx context.Context, m *events.SQSMessage) error {
				if m.MessageId == tc.slow {
					return s.run()
				}
				return nil
			}, abandonOptions(o)...)
			returned := time.Now()
			before := o.count()
			if err != nil {
				t.Fatal(err)
			}
			if !returned.Before(deadline) {
				t.Fatalf("returned %v after the function's deadline", returned.Sub(deadline))
			}
			if got, want := sqsJSON(t, resp), wantSQS(tc.want...); got != want {
				t.Errorf("response %s, want %s", got, want)
			}
			snapshot, _ := json.Marshal(resp)
			afterResponse(t, s, o, returned, before, resp, snapshot)
		})
	}
}

// With no deadline in the context nothing is abandoned: ProcessKafka waits for the slow
// handler, whose record succeeds.
func TestAbandonNoDeadline(t *testing.T) {
	start := time.Now()
	resp, err := batch.ProcessKafka(context.Background(), kafkaParts("orders", []int32{0}, 3, 0), func(ctx context.Context, r *kafkaevent.Record) error {
		if r.Offset == 1 {
			time.Sleep(300 * time.Millisecond)
		}
		return nil
	}, silent(batch.WithDeadlineMargin(time.Hour))...)
	if err != nil || kafkaJSON(t, resp) != wantKafka() || time.Since(start) < 300*time.Millisecond {
		t.Errorf("response %s, %v after %v", kafkaJSON(t, resp), err, time.Since(start))
	}
}
