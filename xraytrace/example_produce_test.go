package xraytrace_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/xraytrace"
)

// The producer hook goes to franz-go: kgo.WithHooks(hook) (or the producer package's
// WithClientOptions(kgo.WithHooks(hook))) makes kgo call it for each record produced, with the
// record's Context set to the context given to Produce. Here it is called as kgo would, in a
// Lambda invocation's context: the header names the function's segment.
func ExampleProducerHook_OnProduceRecordBuffered() {
	hook := xraytrace.NewProducerHook()
	_ = kgo.WithHooks(hook) // with kgo.NewClient, or producer.WithClientOptions

	// aws-lambda-go puts the invocation's trace header in the context under this key.
	//lint:ignore SA1029 the key is the SDK's own.
	ctx := context.WithValue(context.Background(), xray.LambdaTraceHeaderKey,
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	r := &kgo.Record{Topic: "orders", Value: []byte(`{"id":1}`), Context: ctx}
	hook.OnProduceRecordBuffered(r) // kgo: when the record is buffered
	for _, h := range r.Headers {
		fmt.Printf("%s: %s\n", h.Key, h.Value)
	}
	// Output:
	// X-Amzn-Trace-Id: Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1
}
