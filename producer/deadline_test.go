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
			cl, err := producer.NewClient(producer.WithBootstrapServers(c.ListenAddrs()...), producer.WithPlaintext(),
				producer.WithClientOptions(tc.extra...))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.Close)

			recs := make([]*kgo.Record, 20)
			for i := range recs {
				recs[i] = &kgo.Record{Topic: "slow", Value: []byte("v")}
			}
			// The context reports a deadline and never ends: Produce can only return by giving
			// up on its own, before the deadline (WaitDeadline; TestWaitDeadline gives it the
			// time). So no scheduling of the machine decides the outcome.
			const timeout = 400 * time.Millisecond
			start := time.Now()
			produced := make(chan producer.Results, 1)
			go func() { produced <- producer.Produce(deadlineOnly(start.Add(timeout)), cl, recs...) }()
			var rs producer.Results
			select {
			case rs = <-produced:
			case <-time.After(time.Minute): // not a margin: code that waits for the context never returns
				t.Fatalf("Produce still blocked a minute after a %v deadline: it waits for the context to end", timeout)
			}
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
			// Not before its margin of a tenth of the time (timers never fire early).
			if took < timeout*9/10 {
				t.Errorf("returned after %v, before the margin: want at least %v", took, timeout*9/10)
			}
		})
	}
}

// deadlineOnly is a context whose Deadline is dl and that never ends.
type deadlineOnly time.Time

func (deadlineOnly) Done() <-chan struct{}         { return nil }
func (deadlineOnly) Err() error                    { return nil }
func (deadlineOnly) Value(any) any                 { return nil }
func (d deadlineOnly) Deadline() (time.Time, bool) { return time.Time(d), true }

// TestWaitDeadline: Produce stops waiting a tenth of the time left before the deadline, at
// most MaxDeadlineMargin before it; at once when the deadline has passed. The clock is the
// test's.
func TestWaitDeadline(t *testing.T) {
	dl := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		left, want time.Duration // time left at the call; how long before dl Produce stops
	}{
		{400 * time.Millisecond, 40 * time.Millisecond},
		{2 * time.Second, 200 * time.Millisecond},
		{10 * time.Second, time.Second},
		{15 * time.Minute, producer.MaxDeadlineMargin},
		{0, 0},
		{-time.Second, 0},
	} {
		if got := dl.Sub(producer.WaitDeadline(dl, dl.Add(-tc.left))); got != tc.want {
			t.Errorf("with %v left, Produce stops %v before the deadline, want %v", tc.left, got, tc.want)
		}
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
			cl, err := producer.NewClient(producer.WithBootstrapServers(c.ListenAddrs()...), producer.WithPlaintext(),
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
