package xraytrace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/invocation"
	"github.com/kafkalambda/toolkit/internal/lmitest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/lambdalog"
	"github.com/kafkalambda/toolkit/xraytrace"
)

// The SDK reads the Lambda trace header from the context key aws-lambda-go writes, which
// internal/invocation names too.
func TestTraceHeaderKey(t *testing.T) {
	if xray.LambdaTraceHeaderKey != invocation.TraceHeaderKey {
		t.Fatalf("xray.LambdaTraceHeaderKey %q, invocation.TraceHeaderKey %q", xray.LambdaTraceHeaderKey, invocation.TraceHeaderKey)
	}
}

// lmiFunction is a Kafka function traced with xraytrace that logs through lambdalog: the
// handler of each record waits until every invocation of the test is in flight, logs a
// line, and produces a record through the producer hook; the header each produces is kept
// by its request ID.
func lmiFunction(out *lmitest.Output, meet *lmitest.Barrier, produced map[string]string, mu *sync.Mutex) lmitest.Handler {
	logger := slog.New(lambdalog.NewHandler(slog.NewJSONHandler(out, &slog.HandlerOptions{ReplaceAttr: lambdalog.ReplaceAttr})))
	ph := xraytrace.NewProducerHook()
	return lambdalog.WrapHandler(batch.KafkaHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		if err := meet.Wait(ctx); err != nil {
			return err
		}
		logger.InfoContext(ctx, "handled")
		kr := &kgo.Record{Topic: "out", Value: r.Value, Context: ctx}
		ph.OnProduceRecordBuffered(kr)
		mu.Lock()
		defer mu.Unlock()
		for _, h := range kr.Headers {
			if h.Key == xraytrace.TraceHeader {
				produced[string(r.Value)] = string(h.Value)
			}
		}
		return nil
	}, batch.WithHooks(xraytrace.New()), batch.WithLogger(logger)))
}

// Two invocations at once in one process, as aws-lambda-go runs them under
// AWS_LAMBDA_MAX_CONCURRENCY=2 (each with its trace header in its context only): each one's
// subsegments, produced records and log lines carry its own trace, with _X_AMZN_TRACE_ID
// unset and with it set to a third trace, which must not win.
func TestLMITracePerInvocation(t *testing.T) {
	for _, env := range []string{"", lmitest.TraceHeader(2)} {
		name := "2_invocations_concurrency_2_env=unset"
		if env != "" {
			name = "2_invocations_concurrency_2_env=third_trace"
		}
		t.Run(name, func(t *testing.T) { tracePerInvocation(t, env) })
	}
}

func tracePerInvocation(t *testing.T, env string) {
	_, pc := daemon(t)
	t.Setenv(invocation.TraceEnv, env)
	if env == "" {
		os.Unsetenv(invocation.TraceEnv)
	}
	var (
		out      lmitest.Output
		mu       sync.Mutex
		produced = map[string]string{}
	)
	h := lmiFunction(&out, lmitest.NewBarrier(2), produced, &mu)
	invs := make([]lmitest.Invocation, 2)
	for i := range invs {
		b := kafkaeventtest.NewBuilder()
		b.Add("orders", int32(i), fmt.Appendf(nil, "inv-%d", i))
		invs[i].Payload, _ = json.Marshal(b.Event())
		invs[i].Timeout = 10 * time.Second
	}
	for _, r := range lmitest.Run(h, 2, invs) {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.RequestID, r.Err)
		}
		if string(r.Response) != `{"batchItemFailures":[]}` {
			t.Errorf("%s: response %s", r.RequestID, r.Response)
		}
	}
	docs := receiveAll(t, pc, func(d []map[string]any) bool {
		return len(named(d, "kafka batch")) == 2 && len(named(d, "partition orders-0")) == 1 && len(named(d, "partition orders-1")) == 1
	})
	for i := range 2 {
		if got := named(docs, fmt.Sprintf("partition orders-%d", i))[0]["trace_id"]; got != lmitest.TraceRoot(i) {
			t.Errorf("invocation %d: its partition's subsegment is in trace %v, want its own %s", i, got, lmitest.TraceRoot(i))
		}
		if got := produced[fmt.Sprintf("inv-%d", i)]; !strings.HasPrefix(got, "Root="+lmitest.TraceRoot(i)+";") {
			t.Errorf("invocation %d produced a record with trace header %q, want its own trace %s", i, got, lmitest.TraceRoot(i))
		}
	}
	batches := map[any]int{}
	for _, d := range named(docs, "kafka batch") {
		batches[d["trace_id"]]++
	}
	if batches[lmitest.TraceRoot(0)] != 1 || batches[lmitest.TraceRoot(1)] != 1 {
		t.Errorf("batch subsegments by trace %v, want one in each invocation's trace", batches)
	}
	checkLogTraces(t, &out, 2)
}

// checkLogTraces: every line of invocation req-I says xray_trace_id TraceRoot(I), and each of
// n invocations wrote some.
func checkLogTraces(t *testing.T, out *lmitest.Output, n int) {
	t.Helper()
	lines, err := out.Lines()
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, l := range lines {
		req, _ := l["function_request_id"].(string)
		var i int
		if _, err := fmt.Sscanf(req, "req-%d", &i); err != nil {
			t.Errorf("a line without an invocation's request ID: %v", l)
			continue
		}
		per[req]++
		if l["xray_trace_id"] != lmitest.TraceRoot(i) {
			t.Errorf("%s: line %q has xray_trace_id %v, want %s", req, l["message"], l["xray_trace_id"], lmitest.TraceRoot(i))
		}
	}
	if len(per) != n {
		t.Errorf("lines of %d invocations (%v), want %d", len(per), per, n)
	}
}

// A handler called without aws-lambda-go's context (no trace header in it at all) is traced
// from _X_AMZN_TRACE_ID, which is right while one invocation runs at a time; an empty header
// in the context means the invocation is not traced, whatever the variable says.
func TestTraceFromEnvironmentOnlyWithoutHeader(t *testing.T) {
	_, pc := daemon(t)
	t.Setenv(invocation.TraceEnv, lmitest.TraceHeader(7))
	ev := twoPartitions()
	noop := func(context.Context, *kafkaevent.Record) error { return nil }
	//lint:ignore SA1029 the string key is aws-lambda-go's
	empty := context.WithValue(context.Background(), xray.LambdaTraceHeaderKey, "")
	if _, err := batch.ProcessKafka(empty, ev, noop, batch.WithHooks(xraytrace.New())); err != nil {
		t.Fatal(err)
	}
	if doc := readOne(pc, 300*time.Millisecond); doc != "" {
		t.Errorf("an invocation with an empty trace header was traced: %s", doc)
	}
	if _, err := batch.ProcessKafka(context.Background(), ev, noop, batch.WithHooks(xraytrace.New())); err != nil {
		t.Fatal(err)
	}
	docs := receiveAll(t, pc, count("kafka batch", 1))
	if got := named(docs, "kafka batch")[0]["trace_id"]; got != lmitest.TraceRoot(7) {
		t.Errorf("without a header in the context the batch is in trace %v, want the variable's %s", got, lmitest.TraceRoot(7))
	}
}

// readOne returns the next document the daemon receives within d, or "".
func readOne(pc net.PacketConn, d time.Duration) string {
	_ = pc.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 64<<10)
	n, _, err := pc.ReadFrom(buf)
	if err != nil {
		return ""
	}
	return string(buf[:n])
}
