package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/lambdalog"
)

// The panic test of issue 30: eight invocations in flight at once in one process, as on
// Lambda Managed Instances (aws-lambda-go runs AWS_LAMBDA_MAX_CONCURRENCY handler goroutines;
// AWS: "Understanding the Lambda Managed Instances execution environment"), one of them
// meeting a panic in one place of the user's code at a time. Before the fix, a panic on a
// batch goroutine (a group or record hook, Sink.Send, the key function, the store, the replay
// hook) ended this test binary; one on the invocation's goroutine (OnBatchStart, OnBatchEnd,
// the metrics writer) reached aws-lambda-go, which exits the process. What matters most is
// that the binary survives; then that the seven others answer exactly as without the panic,
// and the panicking one with its record failed, or with an error where no record is in hand.

const (
	panicInvocations = 8
	panicking        = 3 // the invocation that meets the panic
)

// panicPlace says where the user's code panics, for the invocation panicking: each method
// reports whether to panic.
type panicPlace struct {
	at string
}

func (p *panicPlace) on(at string, ctx context.Context) bool {
	if p.at != at {
		return false
	}
	lc, ok := lambdacontext.FromContext(ctx)
	return ok && lc.AwsRequestID == requestID(panicking)
}

func requestID(i int) string { return fmt.Sprintf("req-%d", i) }
func topic(i int) string     { return fmt.Sprintf("t%d", i) }

// recordID is a record's correlation ID (its "id" header): which record a store call is for.
func recordID(i int, p int32, off int64) string { return fmt.Sprintf("%s-%d-%d", topic(i), p, off) }

// onRecord reports whether ctx is the panicking invocation's, for the record given.
func (p *panicPlace) onRecord(at string, ctx context.Context, part int32, off int64) bool {
	id, _ := lambdalog.CorrelationID(ctx)
	return p.on(at, ctx) && id == recordID(panicking, part, off)
}

type panicHooks struct{ p *panicPlace }

func (h panicHooks) OnBatchStart(ctx context.Context, b *batch.BatchInfo) context.Context {
	if h.p.on("OnBatchStart", ctx) {
		panic("OnBatchStart boom")
	}
	return ctx
}

func (h panicHooks) OnBatchEnd(ctx context.Context, b *batch.BatchInfo, r *batch.BatchResult) {
	if h.p.on("OnBatchEnd", ctx) {
		panic("OnBatchEnd boom")
	}
}

func (h panicHooks) OnGroupStart(ctx context.Context, g *batch.GroupInfo) context.Context {
	if h.p.on("OnGroupStart", ctx) && g.ID == topic(panicking)+"-0" {
		panic("OnGroupStart boom")
	}
	return ctx
}

func (h panicHooks) OnGroupEnd(ctx context.Context, g *batch.GroupInfo, reported int) {
	if h.p.on("OnGroupEnd", ctx) && g.ID == topic(panicking)+"-0" {
		panic("OnGroupEnd boom")
	}
}

func (h panicHooks) OnRecordStart(ctx context.Context, it *batch.Item) context.Context {
	if h.p.on("OnRecordStart", ctx) && it.Kafka.Partition == 0 && it.Kafka.Offset == 0 {
		panic("OnRecordStart boom")
	}
	return ctx
}

func (h panicHooks) OnRecordEnd(ctx context.Context, it *batch.Item, err error) {
	if h.p.on("OnRecordEnd", ctx) && it.Kafka.Partition == 0 && it.Kafka.Offset == 0 {
		panic("OnRecordEnd boom")
	}
}

func (h panicHooks) OnFailure(ctx context.Context, f *batch.Failure) {
	if h.p.on("OnFailure", ctx) {
		panic("OnFailure boom")
	}
}

// panicStore is a custom store of the user's that panics in one of its methods.
type panicStore struct {
	*idempotencytest.Store
	p *panicPlace
}

func (s panicStore) Acquire(ctx context.Context, r *idempotency.Entry, now time.Time) (*idempotency.Entry, error) {
	if s.p.onRecord("Acquire", ctx, 0, 0) {
		panic("Acquire boom")
	}
	return s.Store.Acquire(ctx, r, now)
}

func (s panicStore) Complete(ctx context.Context, r *idempotency.Entry) error {
	if s.p.onRecord("Complete", ctx, 0, 0) {
		panic("Complete boom")
	}
	return s.Store.Complete(ctx, r)
}

func (s panicStore) Release(ctx context.Context, r *idempotency.Entry) error {
	if s.p.onRecord("Release", ctx, 1, 1) { // the record whose handler fails
		panic("Release boom")
	}
	return s.Store.Release(ctx, r)
}

// panicSink takes every record, and panics for the panicking invocation.
type panicSink struct{ p *panicPlace }

func (s panicSink) Send(ctx context.Context, e *batch.Envelope) error {
	if s.p.on("Sink.Send", ctx) {
		panic("Sink.Send boom")
	}
	return nil
}

// panicWriter is a metrics writer that panics on the panicking invocation's document.
type panicWriter struct {
	p  *panicPlace
	mu sync.Mutex
}

func (w *panicWriter) Write(b []byte) (int, error) {
	if w.p.at == "WithMetrics writer" && strings.Contains(string(b), `"`+requestID(panicking)+`"`) {
		panic("metrics writer boom")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(b), nil
}

// panicEvent is invocation i's batch: partitions 0 and 1 of its own topic, three records each,
// each with its correlation ID in the header "id".
func panicEvent(i int) *kafkaevent.Event {
	b := kafkaeventtest.NewBuilder()
	for p := int32(0); p < 2; p++ {
		for off := int64(0); off < 3; off++ {
			b.Add(topic(i), p, []byte("v"), kafkaeventtest.WithOffset(off), kafkaeventtest.WithHeader("id", []byte(recordID(i, p, off))))
		}
	}
	return b.Event()
}

// reported is what the response reports, as "topic-N@offset", sorted.
func reported(resp batch.KafkaResponse) []string {
	var out []string
	for _, f := range resp.BatchItemFailures {
		out = append(out, fmt.Sprintf("%s@%d", f.ItemIdentifier.Partition, f.ItemIdentifier.Offset))
	}
	slices.Sort(out)
	return out
}

func TestPanicStaysWithItsRecord(t *testing.T) {
	cases := []panicCase{
		{at: "handler", want: both, lineMsg: "record failed"},
		{at: "OnBatchStart", err: true, lineMsg: "batch invocation failed"},
		{at: "OnBatchEnd", err: true, lineMsg: "batch invocation failed"},
		{at: "OnGroupStart", want: both, lineMsg: "record failed"},
		{at: "OnGroupEnd", err: true, lineMsg: "batch invocation failed"},
		{at: "OnRecordStart", want: both, lineMsg: "record failed"},
		{at: "OnRecordEnd", want: both, lineMsg: "record failed"},
		{at: "OnFailure", want: p1, lineMsg: "hook panicked"},
		{at: "Sink.Send", sink: true, want: p1, lineMsg: "record failed"},
		{at: "WithIdempotencyKey", store: true, want: both, lineMsg: "record failed"},
		{at: "Acquire", store: true, want: both, lineMsg: "record failed"},
		// The effect has happened: a success not recorded, never applied twice.
		{at: "Complete", store: true, want: p1, lineMsg: "record completion not stored"},
		{at: "Release", store: true, want: p1, lineMsg: "record failed"},
		{at: "WithReplayHook", store: true, warm: true, want: both, lineMsg: "record failed"},
		{at: "WithMetrics writer", err: true, lineMsg: "batch invocation failed"},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.at, " ", "_"), func(t *testing.T) { runPanicCase(t, tc) })
	}
}

// p0, p1 and both are what invocation i's response reports: its partition 0, its partition 1
// from the record its handler fails (t-1@1), and the two.
func p0(i int) []string   { return []string{topic(i) + "-0@0", topic(i) + "-0@1", topic(i) + "-0@2"} }
func p1(i int) []string   { return []string{topic(i) + "-1@1", topic(i) + "-1@2"} }
func both(i int) []string { return append(p0(i), p1(i)...) }

// panicCase is one place of the panic test.
type panicCase struct {
	at      string
	sink    bool // with a sink that takes the failed record
	store   bool // with idempotency
	warm    bool // the panicking batch was processed once before (its records completed)
	err     bool // the panicking invocation fails: no record in hand
	want    func(i int) []string
	lineMsg string // the line that carries the panic
}

// runPanicCase runs the eight invocations at once, the one panicking at tc.at.
func runPanicCase(t *testing.T, tc panicCase) {
	place := &panicPlace{}
	var logs failureLog
	gate := make(chan struct{}) // closed when the panicking invocation has answered
	h := func(ctx context.Context, r *kafkaevent.Record) error {
		lc, _ := lambdacontext.FromContext(ctx)
		if lc.AwsRequestID != requestID(panicking) && r.Partition == 0 && r.Offset == 0 {
			<-gate // the seven others are in flight while the panic happens
		}
		if r.Partition == 1 && r.Offset == 1 {
			return batch.Permanent(errors.New("refused"))
		}
		if place.at == "handler" && lc.AwsRequestID == requestID(panicking) && r.Partition == 0 && r.Offset == 0 {
			panic("handler boom")
		}
		return nil
	}
	opts := []batch.Option{
		batch.WithLogger(logs.logger()),
		batch.WithHooks(panicHooks{place}),
		batch.WithCorrelationIDFrom("id"),
		batch.WithMetrics(&panicWriter{p: place}),
	}
	if tc.sink {
		opts = append(opts, batch.WithSink(panicSink{place}, batch.SinkPermanent))
	}
	if tc.store {
		store := panicStore{idempotencytest.NewStore(), place}
		opts = append(opts,
			batch.WithIdempotency(store, idempotency.WithReplayHook(func(ctx context.Context, _ *idempotency.Entry) {
				if place.onRecord("WithReplayHook", ctx, 0, 0) {
					panic("WithReplayHook boom")
				}
			})),
			batch.WithIdempotencyKey(func(r *kafkaevent.Record) (string, error) {
				if place.at == "WithIdempotencyKey" && r.Topic == topic(panicking) && r.Partition == 0 && r.Offset == 0 {
					panic("WithIdempotencyKey boom")
				}
				return idempotency.KafkaKey(r), nil
			}))
	}
	handler := batch.KafkaHandler(h, opts...)
	invoke := func(i int) (batch.KafkaResponse, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: requestID(i),
			InvokedFunctionArn: "arn:aws:lambda:eu-west-1:123456789012:function:consumer"})
		return handler(ctx, panicEvent(i))
	}
	if tc.warm { // the panicking batch's records done once, so that the next delivery replays them
		if resp, err := invoke(panicking); err != nil || !slices.Equal(reported(resp), p1(panicking)) {
			t.Fatalf("first delivery: %v %v", reported(resp), err)
		}
	}
	place.at = tc.at

	resps := make([]batch.KafkaResponse, panicInvocations)
	errs := make([]error, panicInvocations)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range panicInvocations {
		wg.Go(func() {
			<-start
			resps[i], errs[i] = invoke(i)
			if i == panicking {
				close(gate)
			}
		})
	}
	close(start)
	wg.Wait()

	for i := range panicInvocations {
		if i == panicking {
			continue
		}
		want := p1(i)
		if tc.sink {
			want = nil // the sink took the failed record
		}
		if errs[i] != nil || !slices.Equal(reported(resps[i]), want) {
			t.Errorf("invocation %d: %v, error %v; want %v", i, reported(resps[i]), errs[i], want)
		}
	}
	if tc.err {
		if errs[panicking] == nil || !strings.Contains(errs[panicking].Error(), "panicked") {
			t.Errorf("panicking invocation: error %v, want one that says it panicked", errs[panicking])
		}
	} else if got := reported(resps[panicking]); errs[panicking] != nil || !slices.Equal(got, tc.want(panicking)) {
		t.Errorf("panicking invocation: %v, error %v; want %v", got, errs[panicking], tc.want(panicking))
	}
	// One line carries the panic: its value and its stack, bounded.
	var withPanic []map[string]any
	for _, l := range logs.all(t) {
		b, _ := json.Marshal(l)
		if strings.Contains(string(b), "boom") {
			withPanic = append(withPanic, l)
		}
	}
	if len(withPanic) != 1 || withPanic[0]["msg"] != tc.lineMsg {
		t.Fatalf("%d lines with the panic, want one %q:\n%s", len(withPanic), tc.lineMsg, logs.String())
	}
	stack, _ := withPanic[0]["stack"].(string)
	if !strings.Contains(stack, "goroutine") || len(stack) > 17<<10 || withPanic[0]["level"] != "ERROR" {
		t.Errorf("line %v: want level ERROR and the stack (at most 16 KiB)", withPanic[0])
	}
}

// A panic value is cut in the error and the line: a value of the user's may be anything.
func TestPanicValueBounded(t *testing.T) {
	ev := panicEvent(0)
	var logs failureLog
	resp, err := batch.ProcessKafka(context.Background(), ev, func(context.Context, *kafkaevent.Record) error {
		panic(strings.Repeat("x", 1<<20))
	}, batch.WithLogger(logs.logger()))
	if err != nil || len(resp.BatchItemFailures) != 6 {
		t.Fatalf("%v %v", reported(resp), err)
	}
	for _, l := range logs.lines(t, "record failed") {
		if e, _ := l["error"].(string); len(e) > 2048 {
			t.Errorf("error of %d bytes", len(e))
		}
	}
}

var _ io.Writer = (*panicWriter)(nil)

// sqsPanicHook panics in OnRecordStart for the message with ID id.
type sqsPanicHook struct{ id string }

func (h sqsPanicHook) OnRecordStart(ctx context.Context, it *batch.Item) context.Context {
	if it.SQS.MessageId == h.id {
		panic("OnRecordStart boom")
	}
	return ctx
}
func (sqsPanicHook) OnRecordEnd(context.Context, *batch.Item, error) {}

// SQS too: a hook's panic fails its message, and on a FIFO queue the rest of its message
// group; the other messages and groups are done.
func TestPanicStaysWithItsMessage(t *testing.T) {
	for _, tc := range []struct {
		ev   *events.SQSEvent
		id   string
		want []string
	}{
		{fifoEvent(3, 2), "g1-0", []string{"g1-0", "g1-1"}},
		{standardEvent(4), "m-2", []string{"m-2"}},
	} {
		var handled atomic.Int64
		resp, err := batch.ProcessSQS(context.Background(), tc.ev, func(context.Context, *events.SQSMessage) error {
			handled.Add(1)
			return nil
		}, batch.WithHooks(sqsPanicHook{tc.id}), batch.WithLogger(slog.New(slog.DiscardHandler)))
		var got []string
		for _, f := range resp.BatchItemFailures {
			got = append(got, f.ItemIdentifier)
		}
		slices.Sort(got)
		if err != nil || !slices.Equal(got, tc.want) || int(handled.Load()) != len(tc.ev.Records)-len(tc.want) {
			t.Errorf("%s: %v %v, %d handled; want %v", tc.id, got, err, handled.Load(), tc.want)
		}
	}
}
