package oteltrace_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/oteltrace"
)

// A function brings its own TracerProvider (here the SDK with an in-memory exporter; in
// Lambda, an OTLP exporter) and propagator, and passes the hook to batch.WithHooks. The
// first record carries its producer's trace context, which its span links to.
func Example() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	hook := oteltrace.New(oteltrace.WithTracerProvider(tp), oteltrace.WithPropagator(propagation.TraceContext{}))

	ev := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte(`{"id":1}`), kafkaeventtest.WithHeader("traceparent",
			[]byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))).
		Add("orders", 0, []byte(`{"id":2}`)).
		Event()
	handle := func(ctx context.Context, r *kafkaevent.Record) error { return nil }
	quiet := batch.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := batch.ProcessKafka(context.Background(), ev, handle, batch.WithHooks(hook), quiet); err != nil {
		fmt.Println(err)
		return
	}

	var lines []string
	for _, s := range exp.GetSpans() {
		line := fmt.Sprintf("%s (%s)", s.Name, s.SpanKind)
		for _, l := range s.Links {
			line += " linked to " + l.SpanContext.TraceID().String()
		}
		lines = append(lines, line)
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// partition orders (internal)
	// process (consumer)
	// process orders (consumer)
	// process orders (consumer) linked to 4bf92f3577b34da6a3ce929d0e0e4736
}
