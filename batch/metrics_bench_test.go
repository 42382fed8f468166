package batch

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// BenchmarkBatchMetrics is what WithMetrics costs a batch: observe's EMF document of the
// batch's eleven metrics (with the summary line to a logger that drops it, as the cost of
// the line is not the document's), written to io.Discard, for an invocation whose context
// carries its request ID and no other wrapper's state, as in Lambda without metrics.Handle.
// docs/performance.md compares it before and after package metrics wrote the document:
//
//	go test -run='^$' -bench=BenchmarkBatchMetrics -benchmem -count=6 ./batch
func BenchmarkBatchMetrics(b *testing.B) {
	lambdacontext.FunctionName = "bench" // as Lambda's runtime sets it from the environment
	c := kafkaConfig([]Option{WithMetrics(io.Discard), WithMetricsNamespace("Bench"), WithLogger(slog.New(slog.DiscardHandler))})
	if c.err != nil {
		b.Fatal(c.err)
	}
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "8476a536-e9f4-5d9b-a4b8-61b1e3a0a1c4"})
	now := time.Now()
	st := local{processed: 990, failed: 10, reported: 25, filtered: 3, oldest: now.Add(-time.Minute), newest: now.Add(-time.Second)}
	b.ReportAllocs()
	for b.Loop() {
		c.observe(ctx, "kafka", 1000, &st)
	}
}
