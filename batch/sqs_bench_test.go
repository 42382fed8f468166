package batch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/sqsparse/sqsgen"
)

// sqsPayload is the SQS benchmarks' event: 10,000 messages (the most an SQS event source mapping
// delivers at once) with 200-byte JSON bodies, the event of the peer benchmark (bench/peer).
var sqsPayload = sync.OnceValue(func() []byte { return sqsgen.Event(overheadRecords, 200) })

var benchNoopSQS batch.MessageFunc = func(context.Context, *events.SQSMessage) error { return nil }

// BenchmarkSQSInvoke measures the whole path of an SQS invocation per message, as lambda.Start
// runs it: decode the payload, ProcessSQS with a handler that does nothing, marshal the
// partial-batch response, under a context with a deadline.
//
//   - impl=toolkit: batch.SQSHandler(h).Invoke, which decodes with internal/sqsparse;
//   - impl=encoding-json: the same with encoding/json into events.SQSEvent, which is what
//     Invoke did before, and what lambda.Start does for a plain func(ctx, events.SQSEvent).
//
// Run: scripts/bench -bench SQSInvoke ./batch/ (or go test -run '^$' -bench SQSInvoke -count 10
// ./batch/ | tee bench.txt; GOWORK=off go tool -modfile=tools/go.mod benchstat -col /impl bench.txt)
func BenchmarkSQSInvoke(b *testing.B) {
	payload := sqsPayload()
	h := batch.SQSHandler(benchNoopSQS, quiet...)
	for _, impl := range []struct {
		name   string
		invoke func(context.Context, []byte) ([]byte, error)
	}{
		{"toolkit", h.Invoke},
		{"encoding-json", func(ctx context.Context, p []byte) ([]byte, error) { return encodingJSONInvoke(ctx, h, p) }},
	} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			perRecord(b, overheadRecords, func() {
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
				out, err := impl.invoke(ctx, payload)
				cancel()
				if err != nil || string(out) != `{"batchItemFailures":[]}` {
					b.Fatalf("Invoke: %s, %v", out, err)
				}
			})
		})
	}
}
