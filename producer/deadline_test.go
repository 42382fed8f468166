package producer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalambda/toolkit/producer"
)

// stallProduce makes c hold every produce request until the test ends.
func stallProduce(t *testing.T, c *kfake.Cluster) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
}

func TestDeadlineFailsRecordsStillBufferedOrInFlight(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []kgo.Opt
	}{
		{"in flight", nil},
		// With room for 5 records, kgo.Client.Produce blocks for buffer space: Produce must not.
		{"buffer full", []kgo.Opt{kgo.MaxBufferedRecords(5)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.SeedTopics(2, "slow"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			stallProduce(t, c)
			cl, err := producer.NewClient(producer.WithBrokers(c.ListenAddrs()...), producer.WithPlaintext(),
				producer.WithClientOptions(tc.extra...))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.Close)

			recs := make([]*kgo.Record, 20)
			for i := range recs {
				recs[i] = &kgo.Record{Topic: "slow", Value: []byte("v")}
			}
			const timeout = 400 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			rs := producer.Produce(ctx, cl, recs...)
			took := time.Since(start)

			if len(rs) != len(recs) {
				t.Fatalf("%d results for %d records", len(rs), len(recs))
			}
			for i, r := range rs {
				if r.Record != recs[i] {
					t.Errorf("result %d is not record %d", i, i)
				}
				if !errors.Is(r.Err, producer.ErrNotAcknowledged) || !errors.Is(r.Err, context.DeadlineExceeded) {
					t.Errorf("record %d: %v, want ErrNotAcknowledged and context.DeadlineExceeded", i, r.Err)
				}
			}
			if !errors.Is(rs.Err(), producer.ErrNotAcknowledged) {
				t.Errorf("Results.Err: %v", rs.Err())
			}
			// Back before the deadline, by a margin of a tenth of the time (40 ms).
			if took >= timeout || took < timeout*9/10-20*time.Millisecond {
				t.Errorf("returned after %v, want within [%v, %v)", took, timeout*9/10-20*time.Millisecond, timeout)
			}
		})
	}
}

func TestProduceContextAlreadyDone(t *testing.T) {
	_, cl := plaintextCluster(t, kfake.SeedTopics(1, "t"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rs := producer.Produce(ctx, cl, &kgo.Record{Topic: "t", Value: []byte("v")})
	if !errors.Is(rs[0].Err, producer.ErrNotAcknowledged) || !errors.Is(rs[0].Err, context.Canceled) {
		t.Fatalf("%v, want ErrNotAcknowledged (context canceled)", rs[0].Err)
	}
}

func TestProduceNilClientAndRecord(t *testing.T) {
	rs := producer.Produce(context.Background(), nil, &kgo.Record{Topic: "t"})
	if rs[0].Err == nil {
		t.Fatal("nil client: no error")
	}
	_, cl := plaintextCluster(t, kfake.SeedTopics(1, "t"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rs = producer.Produce(ctx, cl, nil, &kgo.Record{Topic: "t", Value: []byte("v")})
	if rs[0].Err == nil || rs[1].Err != nil {
		t.Fatalf("nil record: %v; good record: %v", rs[0].Err, rs[1].Err)
	}
	if len(producer.Produce(ctx, cl)) != 0 {
		t.Fatal("results for no records")
	}
}

func TestProduceSetsRecordContext(t *testing.T) {
	_, cl := plaintextCluster(t, kfake.SeedTopics(1, "t"))
	type key struct{}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), key{}, "span"), 5*time.Second)
	defer cancel()
	own := context.WithValue(context.Background(), key{}, "own")
	a := &kgo.Record{Topic: "t", Value: []byte("a")}
	b := &kgo.Record{Topic: "t", Value: []byte("b"), Context: own}
	if err := producer.Produce(ctx, cl, a, b).Err(); err != nil {
		t.Fatal(err)
	}
	if a.Context == nil || a.Context.Value(key{}) != "span" {
		t.Errorf("record without a context: not given the caller's")
	}
	if b.Context != own {
		t.Errorf("record with its own context: replaced")
	}
}

// Produce does not wait out kgo's linger, nor hang on a client that flushes by hand.
func TestProduceDoesNotLinger(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  kgo.Opt
	}{
		{"linger", kgo.ProducerLinger(2 * time.Second)},
		{"manual flushing", kgo.ManualFlushing()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.SeedTopics(3, "orders"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cl, err := producer.NewClient(producer.WithBrokers(c.ListenAddrs()...), producer.WithPlaintext(),
				producer.WithClientOptions(tc.opt))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for range 3 {
				start := time.Now()
				if err := producer.Produce(ctx, cl, records(5)...).Err(); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took > time.Second {
					t.Fatalf("Produce took %v", took)
				}
			}
		})
	}
}
