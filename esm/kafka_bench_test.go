package esm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/internal/kfaketest"
)

// BenchmarkKafkaThroughput runs 20,000 records of 8 partitions through a mapping (batch size
// 500, a function that returns at once) and reports records/s from the start of Run to the
// last success. It uses the public API only, so that it runs on older versions of the package
// too (for benchstat).
func BenchmarkKafkaThroughput(b *testing.B) {
	const parts, total = 8, 20000
	for b.Loop() {
		c := kfaketest.Cluster(b, "bench", parts)
		prod := kfaketest.Client(b, c, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		recs := make([]*kgo.Record, total)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: "bench", Value: fmt.Appendf(nil, `{"n":%d,"pad":"0123456789abcdef0123456789abcdef"}`, i)}
		}
		if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
		fn := InvokerFunc(func(context.Context, []byte) (Response, error) { return Response{}, nil })
		m, err := NewKafka(c.ListenAddrs(), "bench", fn, WithBatchSize(500))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- m.Run(ctx) }()
		for m.Counters().Succeeded.Load() < total {
			if time.Since(start) > time.Minute {
				b.Fatal("not done in a minute")
			}
			time.Sleep(time.Millisecond)
		}
		d := time.Since(start)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(total/d.Seconds(), "records/s")
	}
}
