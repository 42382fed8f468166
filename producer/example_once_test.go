package producer_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/producer"
)

// A transform function: orders in, payments out. Its first response is lost after it
// produced (a timeout, say), so Lambda delivers the same batch again; ProduceOnce produces
// each order's payment once, with the order's identity in the kafkalambda-source header.
//
// Here the cluster is kfake, in process, and the store in memory; in Lambda, the client
// comes from producer.NewClient() made once outside the handler, and the store is
// dynamodb.NewStore.
func ExampleProduceOnce() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "payments"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	cl, err := producer.NewClient(producer.WithBootstrapServers(cluster.ListenAddrs()...), producer.WithPlaintext())
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	store := idempotencytest.NewStore()

	transform := batch.KafkaHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		payment := &kgo.Record{Topic: "payments", Key: r.Key, Value: append([]byte("pay "), r.Value...)}
		return producer.ProduceOnce(ctx, cl, store, r, []*kgo.Record{payment})
	}, batch.WithLogger(slog.New(slog.DiscardHandler)))

	orders := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte("order 1"), kafkaeventtest.WithKey([]byte("c1"))).
		Add("orders", 0, []byte("order 2"), kafkaeventtest.WithKey([]byte("c2"))).
		Event()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 { // the first response is lost: the same batch again
		if _, err := transform(ctx, orders); err != nil {
			log.Fatal(err)
		}
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics("payments"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer consumer.Close()
	for n := 0; n < 2 && ctx.Err() == nil; {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			n++
			src := ""
			for _, h := range r.Headers {
				if h.Key == producer.SourceHeader {
					src = string(h.Value)
				}
			}
			fmt.Printf("%s at %d: %s, %s: %s\n", r.Topic, r.Offset, r.Value, producer.SourceHeader, src)
		})
	}
	// Output:
	// payments at 0: pay order 1, kafkalambda-source: orders/0/0/0
	// payments at 1: pay order 2, kafkalambda-source: orders/0/1/0
}
