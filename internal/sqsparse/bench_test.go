package sqsparse_test

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/internal/sqsparse"
	"github.com/kafkalambda/toolkit/internal/sqsparse/sqsgen"
)

// The benchmark's event: 10,000 messages (the most an SQS event source mapping delivers in one
// batch) with 200-byte JSON bodies, as in issue 10 and the peer benchmark (bench/peer).
const (
	benchMessages = 10000
	benchBody     = 200
)

var benchEvent = sync.OnceValue(func() []byte { return sqsgen.Event(benchMessages, benchBody) })

// BenchmarkParse decodes the same 10,000-message event with Parse (impl=sqsparse) and with
// encoding/json into events.SQSEvent (impl=encoding-json), the obvious alternative and what
// aws-lambda-go's lambda.Start does, and reports the cost per message.
//
// Run: scripts/bench -bench 'Parse$' ./internal/sqsparse/ (or go test -run '^$' -bench 'Parse$'
// -count 10 ./internal/sqsparse/ | tee bench.txt; GOWORK=off go tool -modfile=tools/go.mod benchstat -col /impl bench.txt)
func BenchmarkParse(b *testing.B) {
	data := benchEvent()
	b.Run("impl=sqsparse", func(b *testing.B) {
		perMessage(b, data, func() {
			ev, err := sqsparse.Parse(data)
			if err != nil || len(ev.Records) != benchMessages {
				b.Fatalf("Parse: %v", err)
			}
		})
	})
	b.Run("impl=encoding-json", func(b *testing.B) {
		perMessage(b, data, func() {
			var ev events.SQSEvent
			if err := json.Unmarshal(data, &ev); err != nil || len(ev.Records) != benchMessages {
				b.Fatalf("Unmarshal: %v", err)
			}
		})
	})
}

// perMessage runs fn, which decodes the benchmark's event, in a b.Loop and reports the cost per
// message besides the per-op figures.
func perMessage(b *testing.B, data []byte, fn func()) {
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		fn()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchMessages, "ns/message")
}
