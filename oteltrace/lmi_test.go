package oteltrace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/invocation"
	"github.com/kafkalambda/toolkit/internal/lmitest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/lambdalog"
	"github.com/kafkalambda/toolkit/oteltrace"
)

// otelTraceID is lmitest.TraceRoot(i) as an OpenTelemetry trace ID.
func otelTraceID(i int) string { return strings.ReplaceAll(lmitest.TraceRoot(i)[2:], "-", "") }

// Two invocations at once in one process, as aws-lambda-go runs them under
// AWS_LAMBDA_MAX_CONCURRENCY=2 (each with its trace header in its context only): with
// WithLambdaParent each one's spans (batch, partition, record, and the send span of the
// record it produces) are in its own Lambda trace, and its log lines name it, with
// _X_AMZN_TRACE_ID unset and with it set to a third trace, which must not win.
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
	t.Setenv(invocation.TraceEnv, env)
	if env == "" {
		os.Unsetenv(invocation.TraceEnv)
	}
	tp, exp := recorder(t)
	hook := oteltrace.New(oteltrace.WithTracerProvider(tp), oteltrace.WithLambdaParent(),
		oteltrace.WithPropagator(propagation.TraceContext{}))
	var (
		out      lmitest.Output
		mu       sync.Mutex
		produced = map[string]string{} // traceparent by the value of the record produced
		meet     = lmitest.NewBarrier(2)
	)
	logger := slog.New(lambdalog.NewHandler(slog.NewJSONHandler(&out, &slog.HandlerOptions{ReplaceAttr: lambdalog.ReplaceAttr})))
	h := lambdalog.WrapHandler(batch.KafkaHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		if err := meet.Wait(ctx); err != nil {
			return err
		}
		logger.InfoContext(ctx, "handled")
		kr := &kgo.Record{Topic: "out", Value: r.Value, Context: ctx}
		hook.OnProduceRecordBuffered(kr)
		hook.OnProduceRecordUnbuffered(kr, nil)
		mu.Lock()
		defer mu.Unlock()
		for _, hd := range kr.Headers {
			if hd.Key == "traceparent" {
				produced[string(r.Value)] = string(hd.Value)
			}
		}
		return nil
	}, batch.WithHooks(hook), batch.WithLogger(logger)))

	invs := make([]lmitest.Invocation, 2)
	for i := range invs {
		b := kafkaeventtest.NewBuilder()
		b.Add("orders", int32(i), fmt.Appendf(nil, "inv-%d", i))
		invs[i].Payload, _ = json.Marshal(b.Event())
		invs[i].Timeout = 10 * time.Second
	}
	for _, r := range lmitest.Run(h, 2, invs) {
		if r.Err != nil || string(r.Response) != `{"batchItemFailures":[]}` {
			t.Fatalf("%s: response %s, error %v", r.RequestID, r.Response, r.Err)
		}
	}
	byTrace := map[string][]string{}
	for _, s := range exp.GetSpans() {
		byTrace[s.SpanContext.TraceID().String()] = append(byTrace[s.SpanContext.TraceID().String()], s.Name)
		if s.Name == "process" && (!s.Parent.IsRemote() || s.Parent.SpanID().String() != fmt.Sprintf("%016x", traceIndex(s)+1)) {
			t.Errorf("batch span of trace %s: parent %v, want the Lambda segment of the header", s.SpanContext.TraceID(), s.Parent)
		}
	}
	for i := range 2 {
		if got := byTrace[otelTraceID(i)]; len(got) != 4 {
			t.Errorf("invocation %d: spans %q in its trace, want process, partition, process orders, send out", i, got)
		}
		if got := produced[fmt.Sprintf("inv-%d", i)]; !strings.HasPrefix(got, "00-"+otelTraceID(i)+"-") {
			t.Errorf("invocation %d produced a record with traceparent %q, want its own trace %s", i, got, otelTraceID(i))
		}
	}
	if len(byTrace) != 2 {
		t.Errorf("spans in %d traces, want the 2 invocations': %v", len(byTrace), byTrace)
	}
	checkLogTraces(t, &out, 2)
}

// traceIndex is the i of a span in trace lmitest.TraceRoot(i), or -1.
func traceIndex(s tracetest.SpanStub) int {
	for i := range 3 {
		if s.SpanContext.TraceID().String() == otelTraceID(i) {
			return i
		}
	}
	return -1
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

// Without WithLambdaParent a batch without a span in its context starts a trace of its own;
// with it, a span already in the context stays the parent; a context without a header falls
// back to _X_AMZN_TRACE_ID; an invalid or empty header gives no parent; Sampled=0 is carried.
func TestLambdaParentSources(t *testing.T) {
	t.Setenv(invocation.TraceEnv, lmitest.TraceHeader(5))
	//lint:ignore SA1029 the string key is aws-lambda-go's
	withHeader := func(h string) context.Context { return context.WithValue(context.Background(), "x-amzn-trace-id", h) }
	own := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{9}, TraceFlags: trace.FlagsSampled})
	for _, tc := range []struct {
		name    string
		opts    []oteltrace.Option
		ctx     context.Context
		want    string // the batch span's trace ID; "" for a new trace
		sampled bool
	}{
		{"default: a trace of its own", nil, withHeader(lmitest.TraceHeader(0)), "", true},
		{"the context's header", []oteltrace.Option{oteltrace.WithLambdaParent()}, withHeader(lmitest.TraceHeader(0)), otelTraceID(0), true},
		{"a span in the context wins", []oteltrace.Option{oteltrace.WithLambdaParent()},
			trace.ContextWithSpanContext(withHeader(lmitest.TraceHeader(0)), own), own.TraceID().String(), true},
		{"no header: the variable", []oteltrace.Option{oteltrace.WithLambdaParent()}, context.Background(), otelTraceID(5), true},
		{"empty header: none", []oteltrace.Option{oteltrace.WithLambdaParent()}, withHeader(""), "", true},
		{"invalid header: none", []oteltrace.Option{oteltrace.WithLambdaParent()}, withHeader("Root=1-xyz;Parent=1;Sampled=1"), "", true},
		{"not sampled", []oteltrace.Option{oteltrace.WithLambdaParent()},
			withHeader(strings.Replace(lmitest.TraceHeader(0), "Sampled=1", "Sampled=0", 1)), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp, exp := recorder(t)
			hook := oteltrace.New(append(tc.opts, oteltrace.WithTracerProvider(tp))...)
			b := kafkaeventtest.NewBuilder()
			b.Add("orders", 0, []byte("v"))
			if _, err := batch.ProcessKafka(tc.ctx, b.Event(), func(context.Context, *kafkaevent.Record) error { return nil },
				batch.WithHooks(hook)); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range exp.GetSpans() {
				if s.Name == "process" {
					got = append(got, s.SpanContext.TraceID().String())
				}
			}
			switch {
			case !tc.sampled && len(got) != 0:
				t.Errorf("spans recorded under a header that says Sampled=0: %v", got)
			case tc.sampled && len(got) != 1:
				t.Fatalf("batch spans %v, want 1", got)
			case tc.sampled && tc.want != "" && got[0] != tc.want:
				t.Errorf("batch span in trace %s, want %s", got[0], tc.want)
			case tc.sampled && tc.want == "" && (got[0] == otelTraceID(0) || got[0] == otelTraceID(5)):
				t.Errorf("batch span in Lambda's trace %s, want a trace of its own", got[0])
			}
		})
	}
}
