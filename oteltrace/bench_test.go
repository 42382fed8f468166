package oteltrace_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"testing"

	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/oteltrace"
	"github.com/kafkalambda/toolkit/xraytrace"
)

// benchRecords is the size of the tracing benchmark's batch: 1,000 records over 4 partitions
// of one topic, each with a W3C traceparent header as a traced producer writes it.
const benchRecords = 1000

var benchHandler batch.RecordFunc = func(context.Context, *kafkaevent.Record) error { return nil }

// BenchmarkTracingOverhead measures what each tracing adapter adds to batch.ProcessKafka per
// record, beside batch without hooks, with a handler that does nothing, one partition at a
// time (WithConcurrency(1)) so that the figures are CPU per record:
//
//   - impl=none: no hooks;
//   - impl=xraytrace: X-Ray subsegments for the batch and each partition, sent to a UDP
//     listener as the X-Ray daemon, in a context holding a sampled Lambda trace header;
//   - impl=oteltrace-noop: oteltrace with a no-op TracerProvider (a function that imports
//     oteltrace but installed no SDK): spans are not recording;
//   - impl=oteltrace-sdk: oteltrace with the OpenTelemetry SDK, every span sampled and ended
//     into a no-op exporter synchronously, and the producer's traceparent read from each
//     record and linked.
//
// Run: scripts/bench -bench TracingOverhead ./oteltrace/
func BenchmarkTracingOverhead(b *testing.B) {
	eb := kafkaeventtest.NewBuilder()
	for i := 0; i < benchRecords; i++ {
		eb.Add("orders", int32(i%4), fmt.Appendf(nil, `{"orderId":%d}`, i),
			kafkaeventtest.WithHeader("traceparent", []byte(traceparent)))
	}
	ev := eb.Event()
	quiet := batch.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer pc.Close()
	go func() { // drain, as the daemon would
		buf := make([]byte, 64<<10)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	if err := xray.Configure(xray.Config{DaemonAddr: pc.LocalAddr().String()}); err != nil {
		b.Fatal(err)
	}
	//lint:ignore SA1029 the key is the SDK's own.
	xctx := context.WithValue(context.Background(), xray.LambdaTraceHeaderKey,
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")

	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())

	for _, c := range []struct {
		name string
		ctx  context.Context
		opts []batch.Option
	}{
		{"none", context.Background(), nil},
		{"xraytrace", xctx, []batch.Option{batch.WithHooks(xraytrace.New())}},
		{"oteltrace-noop", context.Background(), []batch.Option{batch.WithHooks(oteltrace.New(
			oteltrace.WithTracerProvider(noop.NewTracerProvider()), oteltrace.WithPropagator(propagation.TraceContext{})))}},
		{"oteltrace-sdk", context.Background(), []batch.Option{batch.WithHooks(oteltrace.New(
			oteltrace.WithTracerProvider(tp), oteltrace.WithPropagator(propagation.TraceContext{})))}},
	} {
		opts := append([]batch.Option{quiet, batch.WithConcurrency(1)}, c.opts...)
		b.Run("impl="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				if _, err := batch.ProcessKafka(c.ctx, ev, benchHandler, opts...); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			n := float64(b.N) * benchRecords
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/record")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/record")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/record")
		})
	}
}

// BenchmarkProduceTracing measures what each adapter, as a kgo producer hook, adds to
// producing 1,000 records to kfake in process with ProduceSync, beside kgo without hooks:
//
//   - impl=none: no hooks;
//   - impl=xraytrace: a "send" subsegment per record, in a context holding a sampled Lambda
//     trace header, sent to a UDP listener as the X-Ray daemon, and the X-Amzn-Trace-Id header;
//   - impl=oteltrace-noop: oteltrace with a no-op TracerProvider, under a remote span context:
//     no span is recorded, traceparent is still written;
//   - impl=oteltrace-sdk: a "send" span per record with the SDK, every span sampled and ended
//     into a no-op exporter synchronously, and traceparent written.
//
// Run: scripts/bench -bench ProduceTracing ./oteltrace/
func BenchmarkProduceTracing(b *testing.B) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "orders"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	if err := xray.Configure(xray.Config{DaemonAddr: pc.LocalAddr().String()}); err != nil {
		b.Fatal(err)
	}
	//lint:ignore SA1029 the key is the SDK's own.
	xctx := context.WithValue(context.Background(), xray.LambdaTraceHeaderKey,
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	sctx, span := tp.Tracer("bench").Start(context.Background(), "handler")
	defer span.End()
	tid, _ := trace.TraceIDFromHex(producerTrace)
	sid, _ := trace.SpanIDFromHex(producerSpan)
	rctx := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}))

	for _, bc := range []struct {
		name string
		ctx  context.Context
		hook any
	}{
		{"none", context.Background(), nil},
		{"xraytrace", xctx, xraytrace.New()},
		{"oteltrace-noop", rctx, oteltrace.New(oteltrace.WithTracerProvider(noop.NewTracerProvider()),
			oteltrace.WithPropagator(propagation.TraceContext{}))},
		{"oteltrace-sdk", sctx, oteltrace.New(oteltrace.WithTracerProvider(tp), oteltrace.WithPropagator(propagation.TraceContext{}))},
	} {
		opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("orders")}
		if bc.hook != nil {
			opts = append(opts, kgo.WithHooks(bc.hook))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			b.Fatal(err)
		}
		recs := make([]*kgo.Record, benchRecords)
		b.Run("impl="+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i := range recs {
					recs[i] = &kgo.Record{Key: []byte{byte(i)}, Value: []byte(`{"orderId":1}`)}
				}
				if err := cl.ProduceSync(bc.ctx, recs...).FirstErr(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*benchRecords), "ns/record")
		})
		cl.Close()
	}
}
