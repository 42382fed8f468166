package esmtest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/esm/esmtest"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// handler adapts a function to lambda.Handler.
type handler func(ctx context.Context, event []byte) ([]byte, error)

func (h handler) Invoke(ctx context.Context, event []byte) ([]byte, error) { return h(ctx, event) }

// counted calls f with the invocation's number (1 for the first) and its parsed event.
func counted(t *testing.T, f func(ctx context.Context, n int, ev *kafkaevent.Event) ([]byte, error)) handler {
	var mu sync.Mutex
	n := 0
	return func(ctx context.Context, event []byte) ([]byte, error) {
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		ev, err := kafkaevent.Parse(event)
		if err != nil {
			t.Errorf("invocation %d: %v", i, err)
			return nil, err
		}
		return f(ctx, i, ev)
	}
}

func waitIdle(t *testing.T, m interface{ WaitIdle(time.Duration) error }) {
	t.Helper()
	if err := m.WaitIdle(15 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// deliveries counts how many invocations carried each offset of partition 0.
func deliveries(invs []esmtest.Invocation) map[int64]int {
	out := map[int64]int{}
	for _, inv := range invs {
		for _, o := range inv.Offsets(0) {
			out[o]++
		}
	}
	return out
}

// values returns one record per value, for Produce.
func values(vs ...string) []*kgo.Record {
	var out []*kgo.Record
	for _, v := range vs {
		out = append(out, kgo.StringRecord(v))
	}
	return out
}

// A partial batch response makes the partition resume from the offset it names: the records
// before it are committed and never delivered again, the named one and those after it are.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html#kafka-partial-batch-response):
// the response names failed records as {"itemIdentifier":{"partition":"mytopic-0","offset":15}};
// "If you return an empty valid JSON or null, the event source mapping will consider a batch as
// successfully processed."
func TestPartialBatchResponseResumesFromTheReportedOffset(t *testing.T) {
	h := counted(t, func(_ context.Context, n int, ev *kafkaevent.Event) ([]byte, error) {
		for r := range ev.All() {
			if r.Offset == 3 && n == 1 {
				return []byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"topic-0","offset":3}}]}`), nil
			}
		}
		return []byte(`{"batchItemFailures":[]}`), nil
	})
	k := esmtest.NewKafka(t, h, esmtest.KafkaMapping{
		BatchSize: 10, MaximumBatchingWindow: new(300 * time.Millisecond), FunctionResponseTypes: []string{esmtest.ReportBatchItemFailures}})
	k.Produce(values("0", "1", "2", "3", "4", "5")...)
	waitIdle(t, k)

	invs := k.Invocations()
	failedAt := -1
	for i, inv := range invs {
		if strings.Contains(string(inv.Response), `"offset":3`) {
			failedAt = i
		}
	}
	if failedAt < 0 || failedAt+1 >= len(invs) {
		t.Fatalf("no invocation after the one that reported offset 3: %d invocations", len(invs))
	}
	if next := invs[failedAt+1].Offsets(0); len(next) == 0 || next[0] != 3 {
		t.Errorf("the invocation after the partial batch response has offsets %v, want them from 3", next)
	}
	d := deliveries(invs)
	for o := range int64(6) {
		want := 1
		if o >= 3 && slices.Contains(invs[failedAt].Offsets(0), o) {
			want = 2
		}
		if d[o] != want {
			t.Errorf("offset %d delivered %d times, want %d (all: %v)", o, d[o], want, d)
		}
	}
	if got := k.Committed(); got[0] != 6 {
		t.Errorf("committed %v, want partition 0 at 6", got)
	}
}

type orderError struct{ id int }

func (e *orderError) Error() string { return fmt.Sprintf("order %d refused", e.id) }

// A handler's error, or its panic, fails the invocation as Lambda's Go runtime reports it
// (errorType the type's name, errorMessage its text), and the whole batch is retried.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/golang-exceptions.html): a Go function's
// error reaches the invoker as {"errorMessage": ..., "errorType": ...}, the type being the
// error's Go type name; (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html):
// "Maximum retry attempts – The maximum number of times Lambda retries when your function
// returns an error."
func TestErrorsAndPanicsAreInvocationErrors(t *testing.T) {
	h := counted(t, func(_ context.Context, n int, _ *kafkaevent.Event) ([]byte, error) {
		switch n {
		case 1:
			return nil, errors.New("plain")
		case 2:
			return nil, fmt.Errorf("wrapped: %w", &orderError{7})
		case 3:
			return nil, &orderError{8}
		case 4:
			panic("boom")
		case 5:
			panic(errors.New("boom error"))
		case 6:
			return nil, messages.InvokeResponse_Error{Type: "Orders.Refused", Message: "as given"}
		}
		return nil, nil
	})
	k := esmtest.NewKafka(t, h, esmtest.KafkaMapping{MaximumBatchingWindow: new(100 * time.Millisecond)})
	k.Produce(values("a")...)
	waitIdle(t, k)

	want := []esmtest.InvokeError{
		{Type: "errorString", Message: "plain"},
		{Type: "wrapError", Message: "wrapped: order 7 refused"},
		{Type: "orderError", Message: "order 8 refused"},
		{Type: "string", Message: "boom"},
		{Type: "errorString", Message: "boom error"},
		{Type: "Orders.Refused", Message: "as given"}, // aws-lambda-go's own error type passes as it is
	}
	invs := k.Invocations()
	if len(invs) != len(want)+1 {
		t.Fatalf("%d invocations, want %d", len(invs), len(want)+1)
	}
	for i, w := range want {
		if e := invs[i].Err; e == nil || *e != w {
			t.Errorf("invocation %d: error %v, want %v", i+1, e, w)
		}
		if invs[i].Response != nil {
			t.Errorf("invocation %d: a response beside its error", i+1)
		}
	}
	if invs[len(want)].Err != nil || !slices.Equal(invs[len(want)].Offsets(0), []int64{0}) {
		t.Errorf("last invocation: %+v", invs[len(want)])
	}
	if got := k.Committed()[0]; got != 1 {
		t.Errorf("committed %d, want 1", got)
	}
}

// A handler still running at its timeout fails the invocation as Lambda reports a timeout;
// its context's deadline is the timeout, and it carries the invocation's identity.
func TestTimeoutAndLambdaContext(t *testing.T) {
	type seen struct {
		deadline time.Duration
		lc       *lambdacontext.LambdaContext
	}
	var mu sync.Mutex
	var got []seen
	h := counted(t, func(ctx context.Context, n int, _ *kafkaevent.Event) ([]byte, error) {
		d, _ := ctx.Deadline()
		lc, _ := lambdacontext.FromContext(ctx)
		mu.Lock()
		got = append(got, seen{time.Until(d), lc})
		mu.Unlock()
		if n == 1 {
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond) // past the deadline: the result is dropped
			return []byte(`late`), nil
		}
		return nil, nil
	})
	k := esmtest.NewKafka(t, h, esmtest.KafkaMapping{MaximumBatchingWindow: new(100 * time.Millisecond)},
		esmtest.WithFunctionName("orders-fn"), esmtest.WithFunctionTimeout(300*time.Millisecond))
	k.Produce(values("a")...)
	waitIdle(t, k)

	invs := k.Invocations()
	if len(invs) != 2 {
		t.Fatalf("%d invocations, want 2", len(invs))
	}
	if e := invs[0].Err; e == nil || e.Type != "Sandbox.Timedout" || e.Message != "Task timed out after 0.30 seconds" {
		t.Errorf("first invocation: %v, want Sandbox.Timedout", e)
	}
	if invs[0].Duration < 300*time.Millisecond || invs[0].Duration > 2*time.Second {
		t.Errorf("the timed-out invocation took %v", invs[0].Duration)
	}
	if invs[1].Err != nil {
		t.Errorf("second invocation: %v", invs[1].Err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, s := range got {
		if s.deadline <= 0 || s.deadline > 300*time.Millisecond {
			t.Errorf("invocation %d: deadline in %v, want at most 300ms", i+1, s.deadline)
		}
		if s.lc == nil || s.lc.AwsRequestID != invs[i].RequestID || s.lc.InvokedFunctionArn != "arn:aws:lambda:us-east-1:123456789012:function:orders-fn" {
			t.Errorf("invocation %d: lambda context %+v, request ID %s", i+1, s.lc, invs[i].RequestID)
		}
	}
}

// Records the mapping gives up on reach its on-failure destination, one on-failure record
// per record for a Kafka topic, and the partition moves on past them.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html): "Maximum
// retry attempts – The maximum number of times Lambda retries when your function returns an
// error. This doesn't count the initial invocation attempt."
// (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html): a Kafka
// topic destination gets one message per failed record, with recordInfo and the payload.
func TestOnFailureTopic(t *testing.T) {
	h := counted(t, func(_ context.Context, _ int, ev *kafkaevent.Event) ([]byte, error) {
		for r := range ev.All() {
			if string(r.Value) == "poison" {
				return nil, errors.New("poison")
			}
		}
		return nil, nil
	})
	k := esmtest.NewKafka(t, h, esmtest.KafkaMapping{BatchSize: 1, MaximumRetryAttempts: new(1),
		DestinationConfig: &esmtest.DestinationConfig{OnFailure: esmtest.OnFailure{Destination: "kafka://failed"}}})
	k.Produce(values("a", "poison", "b")...)
	waitIdle(t, k)

	f := k.OnFailure()
	if len(f) != 1 {
		t.Fatalf("%d on-failure records, want 1: %+v", len(f), f)
	}
	if r := f[0]; r.Condition != esmtest.ConditionRetryAttemptsExhausted || r.InvokeCount != 2 || r.FunctionError != "Unhandled" ||
		r.Partition != "topic-0" || r.FirstOffset != 1 || r.LastOffset != 1 || !strings.Contains(string(r.Payload), `"topic-0"`) {
		t.Errorf("on-failure record %+v", r)
	}
	if d := deliveries(k.Invocations()); d[0] != 1 || d[1] != 2 || d[2] != 1 {
		t.Errorf("deliveries %v, want offset 1 twice (1 retry), the others once", d)
	}
	if got := k.Committed()[0]; got != 3 {
		t.Errorf("committed %d, want 3: past the record given up on", got)
	}
}

// A batch that fails forever, without a destination and with infinite retries (the default),
// keeps its partition where it is, as on AWS: WaitIdle says so instead of waiting forever.
func TestWaitIdleTimesOut(t *testing.T) {
	h := handler(func(context.Context, []byte) ([]byte, error) { return nil, errors.New("always") })
	k := esmtest.NewKafka(t, h, esmtest.KafkaMapping{MaximumBatchingWindow: new(50 * time.Millisecond)})
	k.Produce(values("a")...)
	start := time.Now()
	err := k.WaitIdle(700 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "topic-0 committed 0 of 1") {
		t.Fatalf("WaitIdle: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("WaitIdle took %v past its 700ms timeout", took)
	}
	if n := len(k.Invocations()); n < 2 {
		t.Errorf("%d invocations in 700ms, want retries", n)
	}
	if _, ok := k.Committed()[0]; ok {
		t.Errorf("committed %v, want nothing", k.Committed())
	}
}

// Filtered records are committed and never delivered, and the partitions are processed apart.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-filtering.html): "Lambda commits the
// offsets of messages that are filtered out"... records that do not match are not sent.
func TestFilterAndPartitions(t *testing.T) {
	crit, err := filter.ParseCriteria([]byte(`{"Filters":[{"Pattern":"{\"value\":{\"keep\":[true]}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	h := handler(func(context.Context, []byte) ([]byte, error) { return nil, nil })
	k := esmtest.NewKafka(t, h, esmtest.KafkaMapping{FilterCriteria: crit, MaximumBatchingWindow: new(100 * time.Millisecond)},
		esmtest.WithPartitions(2))
	for p := range int32(2) {
		for i := range 3 {
			k.ProduceTo(p, &kgo.Record{Value: fmt.Appendf(nil, `{"keep":%v}`, i != 1)})
		}
	}
	waitIdle(t, k)
	for _, inv := range k.Invocations() {
		for _, r := range inv.Records {
			if r.Offset == 1 {
				t.Errorf("filtered record %s-%d@1 delivered", r.Topic, r.Partition)
			}
		}
	}
	if got := k.Committed(); got[0] != 3 || got[1] != 3 {
		t.Errorf("committed %v, want 3 on both partitions", got)
	}
}
