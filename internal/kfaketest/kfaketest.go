// Package kfaketest starts franz-go's kfake for tests and reads what was produced to it back
// as the event a Kafka event source mapping would deliver.
package kfaketest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// Cluster starts a one-broker kfake with topic of the given partitions, closed when the test
// ends.
func Cluster(t testing.TB, topic string, partitions int32) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Client is a kgo client of c with opts, closed when the test ends.
func Client(t testing.TB, c *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Event reads n records of topic from the start, and returns them as the event the event
// source mapping would deliver, keys, offsets and headers included.
func Event(t testing.TB, c *kfake.Cluster, topic string, n int) *kafkaevent.Event {
	t.Helper()
	cl := Client(t, c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := kafkaeventtest.NewBuilder()
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("fetching: %v (after %d records of %d)", err, got, n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			opts := []kafkaeventtest.RecordOption{kafkaeventtest.WithKey(r.Key), kafkaeventtest.WithOffset(r.Offset)}
			for _, h := range r.Headers {
				opts = append(opts, kafkaeventtest.WithHeader(h.Key, h.Value))
			}
			b.Add(r.Topic, r.Partition, r.Value, opts...)
			got++
		})
	}
	return b.Event()
}
