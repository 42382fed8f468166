package kafkasink_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/kafkasink"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// New produces the failed records to a dead-letter topic with a franz-go client
// (here on an in-process cluster, kfake). The record keeps its key and headers; its value is
// the envelope.
func ExampleNew() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders.dlq"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	client, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	ev := kafkaeventtest.NewBuilder().Add("orders", 2, []byte(`{"id":`), kafkaeventtest.WithKey([]byte("o-1"))).Event()
	resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		return batch.Permanent(errors.New("schema mismatch"))
	}, batch.WithSink(kafkasink.New(client, "orders.dlq"), batch.SinkPermanent), batch.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("reported:", len(resp.BatchItemFailures))

	// Read the dead-letter topic back.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics("orders.dlq"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		log.Fatal(err)
	}
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var records []*kgo.Record
	for len(records) == 0 {
		fetches := consumer.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			log.Fatal(err)
		}
		records = fetches.Records()
	}
	for _, rec := range records {
		e, err := batch.ReadEnvelope(rec.Value)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("key %s: %s-%d@%d: %s\n", rec.Key, e.Topic, e.Partition, e.Offset, e.Error)
	}
	// Output:
	// reported: 0
	// key o-1: orders-2@0: schema mismatch
}
