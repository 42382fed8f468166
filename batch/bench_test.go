package batch_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// overheadRecords is the size of the overhead benchmark's event: 10,000 records, the most a
// Kafka event source mapping delivers in one batch.
const overheadRecords = 10000

// overheadEvent is the overhead benchmark's input: 10,000 records over 4 partitions of one
// topic, each value a small JSON object. It is built once and shared.
var overheadEvent = sync.OnceValue(func() *kafkaevent.Event {
	b := kafkaeventtest.NewBuilder()
	for i := 0; i < overheadRecords; i++ {
		b.Add("orders", int32(i%4), fmt.Appendf(nil, `{"orderId":%d}`, i))
	}
	return b.Event()
})

// benchNoop is the handler of the overhead benchmark. It is a package variable so that no
// implementation gets to inline it: every one pays one indirect call per record.
var benchNoop batch.RecordFunc = func(context.Context, *kafkaevent.Record) error { return nil }

// quiet makes ProcessKafka and ProcessSQS build their per-batch EMF line (which WithMetrics
// turns on) and format their summary log line, as a function that asks for metrics would, but
// write both to io.Discard rather than to the benchmark's output. Every benchmark here passes
// these options first.
var quiet = []batch.Option{
	batch.WithMetrics(io.Discard),
	batch.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
}

// withQuiet returns quiet followed by opts.
func withQuiet(opts ...batch.Option) []batch.Option {
	return append(append([]batch.Option(nil), quiet...), opts...)
}

// perRecord runs fn, which processes records records, in a b.Loop and reports its cost per
// record besides the usual per-op figures: ns/record, allocs/record and B/record.
func perRecord(b *testing.B, records int, fn func()) {
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		fn()
	}
	runtime.ReadMemStats(&after)
	n := float64(b.N) * float64(records)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/record")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/record")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/record")
}

// BenchmarkProcessKafkaOverhead measures what ProcessKafka costs on top of the handler, with a
// handler that does nothing, over 10,000 records in 4 partitions. The target is at most 1 µs
// and 1 allocation per record.
//
//   - impl=toolkit: ProcessKafka with default options (metrics and log line written to
//     io.Discard) and a context without a deadline;
//   - impl=toolkit-with-deadline: the same with a context that has a deadline, as every
//     Lambda invocation's has, so that each record also checks the clock;
//   - impl=plain-loop: the obvious alternative, a for loop over ev.All() calling the handler,
//     with no partial-batch response, retries, panic recovery or parallelism.
//
// Run: scripts/bench -bench ProcessKafkaOverhead ./batch/ (or go test -run '^$' -bench
// ProcessKafkaOverhead -benchmem -count 10 ./batch/ | tee bench.txt; go tool benchstat -col /impl bench.txt)
func BenchmarkProcessKafkaOverhead(b *testing.B) {
	ev := overheadEvent()
	if ev.Len() != overheadRecords || len(ev.Partitions) != 4 {
		b.Fatalf("event has %d records in %d partitions", ev.Len(), len(ev.Partitions))
	}
	run := func(b *testing.B, ctx context.Context) {
		perRecord(b, overheadRecords, func() {
			resp, err := batch.ProcessKafka(ctx, ev, benchNoop, quiet...)
			if err != nil || len(resp.BatchItemFailures) != 0 {
				b.Fatalf("ProcessKafka: %d failures, error %v", len(resp.BatchItemFailures), err)
			}
		})
	}
	b.Run("impl=toolkit", func(b *testing.B) { run(b, context.Background()) })
	b.Run("impl=toolkit-with-deadline", func(b *testing.B) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		run(b, ctx)
	})
	b.Run("impl=plain-loop", func(b *testing.B) {
		ctx := context.Background()
		perRecord(b, overheadRecords, func() {
			for r := range ev.All() {
				if err := benchNoop(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// Workload of the parallelism benchmarks and of TestParallelSpeedup: a handler that waits 1 ms
// per record, as one that makes a network call would.
const (
	ioPartitions   = 8
	ioPerPartition = 20
	ioMessages     = 80 // SQS standard queue
	ioWait         = time.Millisecond
)

var ioEvent = sync.OnceValue(func() *kafkaevent.Event {
	b := kafkaeventtest.NewBuilder()
	for i := 0; i < ioPartitions*ioPerPartition; i++ {
		b.Add("orders", int32(i%ioPartitions), fmt.Appendf(nil, `{"orderId":%d}`, i))
	}
	return b.Event()
})

var ioSQSEvent = sync.OnceValue(func() *events.SQSEvent {
	ev := &events.SQSEvent{Records: make([]events.SQSMessage, ioMessages)}
	for i := range ev.Records {
		ev.Records[i] = events.SQSMessage{
			MessageId:      fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			Body:           fmt.Sprintf(`{"orderId":%d}`, i),
			EventSource:    "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:orders",
			AWSRegion:      "us-east-1",
		}
	}
	return ev
})

func ioKafka(context.Context, *kafkaevent.Record) error { time.Sleep(ioWait); return nil }

func ioSQS(context.Context, *events.SQSMessage) error { time.Sleep(ioWait); return nil }

func runIOKafka(tb testing.TB, opts ...batch.Option) {
	resp, err := batch.ProcessKafka(context.Background(), ioEvent(), ioKafka, withQuiet(opts...)...)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		tb.Fatalf("ProcessKafka: %d failures, error %v", len(resp.BatchItemFailures), err)
	}
}

func runIOSQS(tb testing.TB, opts ...batch.Option) {
	resp, err := batch.ProcessSQS(context.Background(), ioSQSEvent(), ioSQS, withQuiet(opts...)...)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		tb.Fatalf("ProcessSQS: %d failures, error %v", len(resp.BatchItemFailures), err)
	}
}

// BenchmarkProcessKafkaParallel measures the wall time of a batch of 8 partitions × 20
// records whose handler waits 1 ms per record: impl=toolkit processes every partition at once
// (the default), so about 20 ms; impl=sequential, WithConcurrency(1), one partition after
// another, so about 160 ms.
func BenchmarkProcessKafkaParallel(b *testing.B) {
	b.Run("impl=toolkit", func(b *testing.B) {
		for b.Loop() {
			runIOKafka(b)
		}
	})
	b.Run("impl=sequential", func(b *testing.B) {
		for b.Loop() {
			runIOKafka(b, batch.WithConcurrency(1))
		}
	})
}

// BenchmarkProcessSQSParallel is BenchmarkProcessKafkaParallel for a standard queue: 80
// messages, 1 ms each, impl=toolkit at the default concurrency of 10 (about 8 ms) against
// impl=sequential, WithConcurrency(1) (about 80 ms).
func BenchmarkProcessSQSParallel(b *testing.B) {
	b.Run("impl=toolkit", func(b *testing.B) {
		for b.Loop() {
			runIOSQS(b)
		}
	})
	b.Run("impl=sequential", func(b *testing.B) {
		for b.Loop() {
			runIOSQS(b, batch.WithConcurrency(1))
		}
	})
}

// TestParallelSpeedup checks what the parallelism benchmarks' speedup comes from
// (BenchmarkProcessKafkaParallel measures 7.7x for Kafka's 8 partitions, 9.5x for SQS's
// default concurrency of 10; README), by events rather than wall time, which a loaded machine
// stretches: by default every partition of a Kafka batch is in its handler at the same time,
// and 10 messages of a standard queue; WithConcurrency(n) lets n at once and never more; a
// partition never has two records in its handler at once. The first handler calls wait until
// as many are running as should be (a barrier): parallel processing gets there at once,
// whatever the load, and processing that turned sequential or half-parallel never does.
func TestParallelSpeedup(t *testing.T) {
	for _, c := range []struct {
		name string
		want int // handler calls running at once
		run  func(testing.TB, *overlap, ...batch.Option)
		opts []batch.Option
	}{
		{"kafka-8x20", ioPartitions, runOverlapKafka, nil},
		{"kafka-8x20, WithConcurrency(3)", 3, runOverlapKafka, []batch.Option{batch.WithConcurrency(3)}},
		{"kafka-8x20, WithConcurrency(1)", 1, runOverlapKafka, []batch.Option{batch.WithConcurrency(1)}},
		{"sqs-standard-80", 10, runOverlapSQS, nil},
		{"sqs-standard-80, WithConcurrency(3)", 3, runOverlapSQS, []batch.Option{batch.WithConcurrency(3)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newOverlap(c.want)
			c.run(t, o, c.opts...)
			if o.timedOut {
				t.Errorf("at most %d handler calls ran at once, want %d", o.most, c.want)
			}
			if o.most != c.want {
				t.Errorf("%d handler calls ran at once, want %d", o.most, c.want)
			}
			if len(o.twice) > 0 {
				t.Errorf("partitions with two records in the handler at once: %v", o.twice)
			}
		})
	}
}

// overlap follows the handler calls running at once, overall and per partition (or message).
// The first want calls wait for one another (barrier), so that the most running at once is
// want when processing runs want at once, whatever the scheduling.
type overlap struct {
	want    int
	mu      sync.Mutex
	running int
	most    int
	arrived int
	in      map[string]bool
	twice   []string
	full    chan struct{} // closed when want calls have arrived
	// timedOut: a barrier call gave up waiting (and closed gaveUp, so that the others do
	// not wait too). Only processing that does not run want calls at once gets there: the
	// 30 seconds are not a margin that load could eat, but how long a failure takes.
	timedOut bool
	gaveUp   chan struct{}
	giveUp   sync.Once
}

func newOverlap(want int) *overlap {
	return &overlap{want: want, in: map[string]bool{}, full: make(chan struct{}), gaveUp: make(chan struct{})}
}

func (o *overlap) handle(part string) {
	o.mu.Lock()
	o.running++
	o.most = max(o.most, o.running)
	if o.in[part] {
		o.twice = append(o.twice, part)
	}
	o.in[part] = true
	wait := o.arrived < o.want
	if wait {
		if o.arrived++; o.arrived == o.want {
			close(o.full)
		}
	}
	o.mu.Unlock()
	if wait {
		select {
		case <-o.full:
		case <-o.gaveUp:
		case <-time.After(30 * time.Second):
			o.giveUp.Do(func() {
				o.mu.Lock()
				o.timedOut = true
				o.mu.Unlock()
				close(o.gaveUp)
			})
		}
	}
	o.mu.Lock()
	o.running--
	delete(o.in, part)
	o.mu.Unlock()
}

func runOverlapKafka(tb testing.TB, o *overlap, opts ...batch.Option) {
	resp, err := batch.ProcessKafka(context.Background(), ioEvent(), func(_ context.Context, r *kafkaevent.Record) error {
		o.handle(r.PartitionID())
		return nil
	}, withQuiet(opts...)...)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		tb.Fatalf("ProcessKafka: %d failures, error %v", len(resp.BatchItemFailures), err)
	}
}

func runOverlapSQS(tb testing.TB, o *overlap, opts ...batch.Option) {
	resp, err := batch.ProcessSQS(context.Background(), ioSQSEvent(), func(_ context.Context, m *events.SQSMessage) error {
		o.handle(m.MessageId)
		return nil
	}, withQuiet(opts...)...)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		tb.Fatalf("ProcessSQS: %d failures, error %v", len(resp.BatchItemFailures), err)
	}
}
