package batch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// keyedBenchEvent is records records over partitions partitions of one topic, the keys
// "k0" ... cycling over keys distinct keys.
func keyedBenchEvent(records, partitions, keys int) *kafkaevent.Event {
	b := kafkaeventtest.NewBuilder()
	for i := 0; i < records; i++ {
		b.Add("orders", int32(i%partitions), fmt.Appendf(nil, `{"orderId":%d}`, i), kafkaeventtest.WithKey(fmt.Appendf(nil, "k%d", i%keys)))
	}
	return b.Event()
}

// BenchmarkKeyConcurrency compares ProcessKafka with WithKeyConcurrency(16) (impl=keys16)
// and without it (impl=in-order), both under WithIdempotency with the in-memory store (a
// new one per batch, so that no record is replayed), which the option needs:
//
//   - work=1ms: one partition of 100 records of 100 keys, a handler that takes 1 ms: the
//     wall time of the batch (in order about 100 ms; with 16 keys at once about 7);
//   - work=none: 1,000 records over 4 partitions of 100 keys, a handler that does nothing:
//     what the option costs per record (ns/record, allocs/record).
//
// Run: go test -run '^$' -bench KeyConcurrency -count 6 ./batch/ | tee kc.txt; go tool benchstat -col /impl kc.txt
func BenchmarkKeyConcurrency(b *testing.B) {
	work := func(context.Context, *kafkaevent.Record) error { time.Sleep(time.Millisecond); return nil }
	for _, bc := range []struct {
		name    string
		ev      *kafkaevent.Event
		h       batch.RecordFunc
		records int
	}{
		{"work=1ms", keyedBenchEvent(100, 1, 100), work, 100},
		{"work=none", keyedBenchEvent(1000, 4, 100), benchNoop, 1000},
	} {
		for _, impl := range []string{"in-order", "keys16"} {
			b.Run(bc.name+"/impl="+impl, func(b *testing.B) {
				perRecord(b, bc.records, func() {
					opts := withQuiet(batch.WithIdempotency(idempotencytest.NewStore()))
					if impl == "keys16" {
						opts = append(opts, batch.WithKeyConcurrency(16))
					}
					resp, err := batch.ProcessKafka(context.Background(), bc.ev, bc.h, opts...)
					if err != nil || len(resp.BatchItemFailures) != 0 {
						b.Fatal(err, resp.BatchItemFailures)
					}
				})
			})
		}
	}
}
