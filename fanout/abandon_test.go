package fanout

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// deaf is an SQS client, or a sink, that ignores its context: each call first sleeps past
// the function's deadline, then does its work (the call goes to local-aws-sqs, the envelope
// is kept), as a client with a retry loop of its own would.
type deaf struct {
	next    sqssink.API
	sink    *memSink
	sleep   time.Duration
	running atomic.Int64
	ended   atomic.Int64
}

// SendMessage completes sqssink.API; the Dispatcher does not call it.
func (d *deaf) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return d.next.SendMessage(ctx, in, optFns...)
}

func (d *deaf) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	d.running.Add(1)
	defer d.running.Add(-1)
	time.Sleep(d.sleep)
	defer d.ended.Add(1)
	return d.next.SendMessageBatch(context.WithoutCancel(ctx), in, optFns...)
}

func (d *deaf) Send(ctx context.Context, e *batch.Envelope) error {
	d.running.Add(1)
	defer d.running.Add(-1)
	time.Sleep(d.sleep)
	defer d.ended.Add(1)
	return d.sink.Send(ctx, e)
}

// wait waits for the calls left running to end.
func (d *deaf) wait(t *testing.T) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); d.running.Load() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("calls still running after 10s")
		}
	}
	if d.ended.Load() == 0 {
		t.Fatal("no call was left running")
	}
}

// A client or a sink that ignores its context does not hold Dispatch past the deadline: at
// the deadline less the margin it answers, reporting what was not accepted by then; the calls
// left behind change nothing when they end, and nothing is logged after the response.
func TestDispatchAnswersAtTheMargin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		deaf string // "client" or "sink"
	}{{"client ignores its context", "client"}, {"sink ignores its context", "sink"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, client := dispServer(t, nil)
			q := dispQueue(t, srv, "work")
			d := &deaf{next: client, sink: &memSink{}, sleep: 1500 * time.Millisecond}
			var ev *kafkaevent.Event
			var dsp *Dispatcher
			logs := &logBuffer{}
			if tc.deaf == "client" {
				ev = simple(2, 5, 3)
				dsp = dispatcher(t, d, q, WithBatchOptions(batch.WithDeadlineMargin(300*time.Millisecond)), WithBatchOptions(batch.WithLogger(logs.logger())))
			} else {
				// orders-0@1 cannot travel: it goes to the sink, which hangs.
				ev = event(rec(0, 0, "k", "a"), rec(0, 1, "k", strings.Repeat("x", limits.MaxSQSMessageBytes)), rec(0, 2, "k", "c"), rec(1, 0, "j", "d"))
				dsp = dispatcher(t, client, q, WithBatchOptions(batch.WithSink(d, batch.SinkPermanent)), WithBatchOptions(batch.WithDeadlineMargin(300*time.Millisecond)), WithBatchOptions(batch.WithLogger(logs.logger())))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
			defer cancel()
			deadline, _ := ctx.Deadline()
			resp, err := dsp.Dispatch(ctx, ev)
			returned := time.Now()
			if err != nil {
				t.Fatal(err)
			}
			if !returned.Before(deadline) {
				t.Fatalf("returned %v after the function's deadline", returned.Sub(deadline))
			}
			snapshot, _ := json.Marshal(resp)
			logged := logs.String()
			want := append(tail("orders-0", 0, 5), tail("orders-1", 0, 5)...)
			if tc.deaf == "sink" {
				want = tail("orders-0", 1, 3)
			}
			if got := reported(resp); !slices.Equal(got, want) {
				t.Errorf("reported %v, want %v", got, want)
			}
			if s := logs.lines(t, "records dispatched"); len(s) != 1 || s[0]["reported"] != float64(len(want)) {
				t.Errorf("summary %v", s)
			}
			d.wait(t)
			time.Sleep(20 * time.Millisecond) // what a late goroutine would do after its call
			if b, _ := json.Marshal(resp); string(b) != string(snapshot) {
				t.Errorf("the response changed after it was returned: %s, was %s", b, snapshot)
			}
			if after := logs.String(); after != logged {
				t.Errorf("logged after the response: %s", strings.TrimPrefix(after, logged))
			}
		})
	}
}

// The worker answers at the deadline less the margin too: a handler that ignores its context
// has its message reported (on a FIFO queue, with the rest of its group), and it cannot
// change the response when it ends.
func TestWorkerAnswersAtTheMargin(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			t.Parallel()
			ev := &events.SQSEvent{}
			arn := "arn:aws:sqs:us-east-1:123456789012:work"
			if fifo {
				arn += ".fifo"
			}
			for i := range 4 {
				r := rec(0, int64(i), "k", fmt.Sprint("v", i))
				e, _, err := entry(&r, fifo, nil)
				if err != nil {
					t.Fatal(err)
				}
				m := entryMessage(t, fmt.Sprint("m-", i), e)
				m.EventSourceARN = arn
				if fifo {
					m.Attributes["MessageGroupId"] = "k"
				}
				ev.Records = append(ev.Records, m)
			}
			var running, ended atomic.Int64
			w := WorkerHandler(func(ctx context.Context, r *kafkaevent.Record) error {
				if r.Offset == 1 {
					running.Add(1)
					defer running.Add(-1)
					time.Sleep(1500 * time.Millisecond)
					ended.Add(1)
					return batch.Permanent(fmt.Errorf("finished late"))
				}
				return nil
			}, wQuiet(batch.WithDeadlineMargin(300*time.Millisecond))...)
			ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
			defer cancel()
			deadline, _ := ctx.Deadline()
			resp, err := w(ctx, ev)
			if err != nil {
				t.Fatal(err)
			}
			if !time.Now().Before(deadline) {
				t.Fatalf("returned %v after the function's deadline", time.Since(deadline))
			}
			var got []string
			for _, f := range resp.BatchItemFailures {
				got = append(got, f.ItemIdentifier)
			}
			want := []string{"m-1"}
			if fifo {
				want = []string{"m-1", "m-2", "m-3"}
			}
			if !slices.Equal(got, want) {
				t.Errorf("reported %v, want %v", got, want)
			}
			for end := time.Now().Add(10 * time.Second); running.Load() != 0 || ended.Load() == 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatal("the stuck handler never ended")
				}
			}
			var again []string
			for _, f := range resp.BatchItemFailures {
				again = append(again, f.ItemIdentifier)
			}
			if !slices.Equal(again, got) {
				t.Errorf("the response changed after it was returned: %v, was %v", again, got)
			}
		})
	}
}
