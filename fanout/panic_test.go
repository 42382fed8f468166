package fanout_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// panicAt says where the caller's code panics, for invocation "req-3" only.
type panicAt struct{ at string }

func (p *panicAt) on(at string, ctx context.Context) bool {
	lc, ok := lambdacontext.FromContext(ctx)
	return p.at == at && ok && lc.AwsRequestID == "req-3"
}

// panicQueue takes every entry but those whose body is "poison" (refused, the sender's
// fault), and panics for the panicking invocation.
type panicQueue struct {
	sqssink.API
	p *panicAt
}

func (q *panicQueue) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if q.p.on("SendMessageBatch", ctx) {
		panic("client boom")
	}
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		if aws.ToString(e.MessageBody) == "poison" {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidParameterValue"), SenderFault: true})
			continue
		}
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

type panicFanoutSink struct{ p *panicAt }

func (s panicFanoutSink) Send(ctx context.Context, _ *batch.Envelope) error {
	if s.p.on("Sink.Send", ctx) {
		panic("sink boom")
	}
	return nil
}

type panicMetrics struct{ p *panicAt }

func (w *panicMetrics) Write(b []byte) (int, error) {
	if w.p.at == "WithMetrics writer" && strings.Contains(string(b), `"req-3"`) {
		panic("metrics boom")
	}
	return len(b), nil
}

// Eight Dispatch invocations at once in one process (Lambda Managed Instances), one of them
// meeting a panic of the caller's code: the SQS client and the sink run on goroutines the
// Dispatcher starts, where a panic would end the process (this test binary) and the seven
// others; the group function and the metrics writer on the invocation's, where aws-lambda-go
// would exit the process after reporting it.
func TestDispatchPanic(t *testing.T) {
	reported := func(resp batch.KafkaResponse) []string {
		var out []string
		for _, f := range resp.BatchItemFailures {
			out = append(out, fmt.Sprintf("%s@%d", f.ItemIdentifier.Partition, f.ItemIdentifier.Offset))
		}
		return out
	}
	poison := []string{"t%d-0@1", "t%d-0@2"}
	all := []string{"t%d-0@0", "t%d-0@1", "t%d-0@2"}
	cases := []struct {
		at   string
		sink bool
		err  bool
		want []string // the panicking invocation's, with %d its topic's number
	}{
		{at: "SendMessageBatch", want: all},
		{at: "Sink.Send", sink: true, want: poison},
		{at: "WithMessageGroup", want: all},
		{at: "WithMetrics writer", err: true},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.at, " ", "_"), func(t *testing.T) {
			p := &panicAt{at: tc.at}
			bopts := []batch.Option{batch.WithLogger(slog.New(slog.DiscardHandler)), batch.WithMetrics(&panicMetrics{p: p})}
			opts := []fanout.Option{fanout.WithMessageGroup(func(r *kafkaevent.Record) string {
				if p.at == "WithMessageGroup" && r.Topic == "t3" && r.Offset == 0 {
					panic("group boom")
				}
				return "g"
			})}
			if tc.sink {
				bopts = append(bopts, batch.WithSink(panicFanoutSink{p}, batch.SinkPermanent))
			}
			d, err := fanout.NewDispatcher(&panicQueue{p: p}, "https://sqs.us-east-1.amazonaws.com/123456789012/q.fifo",
				append(opts, fanout.WithBatchOptions(bopts...))...)
			if err != nil {
				t.Fatal(err)
			}
			resps, errs := make([]batch.KafkaResponse, 8), make([]error, 8)
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: fmt.Sprint("req-", i)})
					topic := fmt.Sprint("t", i)
					ev := kafkaeventtest.NewBuilder().Add(topic, 0, []byte("a")).Add(topic, 0, []byte("poison")).Add(topic, 0, []byte("c")).Event()
					resps[i], errs[i] = d.Dispatch(ctx, ev)
				})
			}
			wg.Wait()
			expand := func(f []string, i int) []string {
				var out []string
				for _, s := range f {
					out = append(out, fmt.Sprintf(s, i))
				}
				return out
			}
			for i := range 8 {
				want := expand(poison, i)
				if tc.sink {
					want = nil
				}
				if i == 3 {
					if tc.err {
						if errs[i] == nil || !strings.Contains(errs[i].Error(), "panicked") {
							t.Errorf("invocation 3: error %v, want one that says it panicked", errs[i])
						}
						continue
					}
					want = expand(tc.want, i)
				}
				if errs[i] != nil || !slices.Equal(reported(resps[i]), want) {
					t.Errorf("invocation %d: %v %v, want %v", i, reported(resps[i]), errs[i], want)
				}
			}
		})
	}
}

// countingQueue counts SendMessageBatch calls.
type countingQueue struct {
	sqssink.API
	calls atomic.Int64
}

func (q *countingQueue) SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	q.calls.Add(1)
	return &sqs.SendMessageBatchOutput{}, nil
}

// A Dispatch whose deadline less the margin has passed when it starts (Lambda Managed
// Instances do not stop a function at its timeout) is answered at once: every record
// reported, no SQS call.
func TestDispatchNoTimeLeft(t *testing.T) {
	q := &countingQueue{}
	d, err := fanout.NewDispatcher(q, "https://sqs.us-east-1.amazonaws.com/123456789012/q",
		fanout.WithBatchOptions(batch.WithLogger(slog.New(slog.DiscardHandler))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	ev := kafkaeventtest.NewBuilder().Add("t", 0, []byte("a")).Add("t", 0, []byte("b")).Add("t", 1, []byte("c")).Event()
	resp, err := d.Dispatch(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 3 || q.calls.Load() != 0 {
		t.Errorf("%d reported, error %v, %d SQS calls; want 3, nil, 0", len(resp.BatchItemFailures), err, q.calls.Load())
	}
}
