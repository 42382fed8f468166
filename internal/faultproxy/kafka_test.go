package faultproxy_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/internal/faultproxy"
)

// FailNext(2, "out") answers the next two Produce requests to topic out with
// NOT_ENOUGH_REPLICAS: the producer retries and the record lands once. A producer made
// with ExemptProduceTimeout (klt's own) is never faulted, and neither is a request to a
// topic outside OnlyTopics.
func TestKafkaProduceFaults(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	var seen []faultproxy.KafkaExchange
	k, err := faultproxy.NewKafkaFaults(c, func(x faultproxy.KafkaExchange) { mu.Lock(); seen = append(seen, x); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if err := k.OnlyTopics([]string{"out"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// franz-go refreshes its metadata before it retries a failed produce, at most every
	// MetadataMinAge (5 s by default): a short one keeps the test short.
	fn, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ClientID("function"), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer fn.Close()
	own, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ClientID("klt"),
		kgo.ProduceRequestTimeout(faultproxy.ExemptProduceTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()

	if err := k.FailNext(2, ""); err != nil {
		t.Fatal(err)
	}
	if err := own.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("klt")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := fn.ProduceSync(ctx, &kgo.Record{Topic: "in", Value: []byte("elsewhere")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if calls, faults := k.Calls(); faults != 0 || k.Pending() != 2 {
		t.Fatalf("exempt requests faulted: calls %d, faults %d, pending %d", calls, faults, k.Pending())
	}
	t0 := time.Now()
	if err := fn.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce with 2 faults: %v", err)
	}
	t.Logf("produce took %v", time.Since(t0))
	calls, faults := k.Calls()
	if faults != 2 || k.Pending() != 0 || calls < 3 {
		t.Fatalf("calls %d, faults %d, pending %d; want 2 faults and a request that passed", calls, faults, k.Pending())
	}
	mu.Lock()
	if len(seen) != calls || seen[0].Topics[0] != "in" || seen[0].Fault || !seen[1].Fault || !seen[2].Fault || seen[len(seen)-1].Fault {
		t.Errorf("observed %+v", seen)
	}
	mu.Unlock()
	rd, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	for len(got) < 2 && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 2 || got[0] != "klt" || got[1] != "v" {
		t.Fatalf("out holds %q, want klt and v once each", got)
	}
}
