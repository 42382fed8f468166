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
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
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

var benchHandler batch.KafkaRecordHandler = func(context.Context, *kafkaevent.Record) error { return nil }

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
