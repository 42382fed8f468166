package oteltrace_test

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/kafkalambda/toolkit/oteltrace"
)

// The hook is also a franz-go producer hook: kgo.WithHooks(hook) (or the producer package's
// WithClientOptions(kgo.WithHooks(hook))) makes kgo call it for each record produced, with the
// record's Context set to the context given to Produce. Here it is called as kgo would, under
// a span context a request brought in, without an SDK: the header written is that context's,
// and the stale traceparent the record had (copied from an input, say) is replaced.
func ExampleHook_OnProduceRecordBuffered() {
	hook := oteltrace.New(oteltrace.WithTracerProvider(noop.NewTracerProvider()), // no SDK
		oteltrace.WithPropagator(propagation.TraceContext{}))
	_ = kgo.WithHooks(hook) // with kgo.NewClient, or producer.WithClientOptions

	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	r := &kgo.Record{Topic: "orders", Value: []byte(`{"id":1}`), Context: ctx, Headers: []kgo.RecordHeader{
		{Key: "content-type", Value: []byte("application/json")},
		{Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
	}}
	hook.OnProduceRecordBuffered(r) // kgo: when the record is buffered
	for _, h := range r.Headers {
		fmt.Printf("%s: %s\n", h.Key, h.Value)
	}
	hook.OnProduceRecordUnbuffered(r, nil) // kgo: when the broker acknowledged it
	fmt.Println(r.Context == ctx, trace.SpanContextFromContext(r.Context).TraceID())
	// Output:
	// content-type: application/json
	// traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
	// true 4bf92f3577b34da6a3ce929d0e0e4736
}
