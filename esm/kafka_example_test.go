package esm_test

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// A mapping on an in-process Kafka invokes a Go function with the events Lambda would send.
func ExampleNewKafka() {
	cluster, err := kfake.NewCluster(kfake.SeedTopics(1, "orders"))
	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		panic(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, v := range []string{"a", "b", "c"} {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr(); err != nil {
			panic(err)
		}
	}

	fn := esm.InvokerFunc(func(_ context.Context, payload []byte) (esm.Response, error) {
		ev, err := kafkaevent.Parse(payload)
		if err != nil {
			return esm.Response{}, err
		}
		for r := range ev.All() {
			fmt.Printf("%s offset %d: %s\n", r.PartitionID(), r.Offset, r.Value)
		}
		return esm.Response{}, nil
	})
	m, err := esm.NewKafka(cluster.ListenAddrs(), "orders", fn, esm.WithBatchSize(10), esm.WithBatchingWindow(100*time.Millisecond))
	if err != nil {
		panic(err)
	}
	go func() {
		for m.Counters().Succeeded.Load() < 3 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	if err := m.Run(ctx); err != nil {
		panic(err)
	}
	// Output:
	// orders-0 offset 0: a
	// orders-0 offset 1: b
	// orders-0 offset 2: c
}
