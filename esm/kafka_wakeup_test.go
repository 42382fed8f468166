package esm

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// pushDuringDrain makes the first record m encodes (partition 0's) fail as a schema registry
// failure would, after a record of partition 1 was fetched and handed to the poller while the
// poller drained: the push lands between the poller reading its inboxes and going to sleep.
// The poller's backoff before trying partition 0 again is backoff.
func pushDuringDrain(t *testing.T, f *kafkaFixture, m *Kafka, backoff time.Duration) {
	m.cfg.backoff = func(int) time.Duration { return backoff }
	encode := m.encode
	var once sync.Once
	m.encode = func(ctx context.Context, r *kgo.Record) ([]byte, string, error) {
		first := false
		once.Do(func() { first = true })
		if !first {
			return encode(ctx, r)
		}
		f.produce(&kgo.Record{Partition: 1, Value: []byte("p1")})
		for m.Counters().In.Load() < 2 {
			time.Sleep(time.Millisecond)
		}
		// push counts In and wakes the poller under the poller's lock: once the lock is
		// free, the wake-up has happened.
		_ = m.pollers[0].size()
		return nil, "", errors.New("registry down (test)")
	}
}

// deliveredPartitions lists the partitions the function got records of.
func deliveredPartitions(fn *kafkaFunction) map[int32]bool {
	out := map[int32]bool{}
	for _, c := range fn.snapshot() {
		for r := range c.event.All() {
			out[r.Partition] = true
		}
	}
	return out
}

// TestKafkaPushDuringDrainIsNotLost is the test of the lost wake-up fixed in 98444f2 ("the
// poller takes its wake-up channel before draining"): records handed to the poller after it
// read its inboxes, and before it went to sleep, must wake it. Before that fix the poller took
// the channel after draining, so it slept on a channel the push had already replaced: here
// partition 1's record waited for the hour of partition 0's backoff (CI's TestLocalStack saw
// lag 30 for 5 minutes).
func TestKafkaPushDuringDrainIsNotLost(t *testing.T) {
	t.Parallel()
	f := newKafkaFixture(t, "wakeup", 2)
	f.produce(&kgo.Record{Partition: 0, Value: []byte("p0")})
	fn := newKafkaFunction(t, nil)
	m, err := NewKafka(f.brokers(), f.topic, fn, WithGroupID("g"), WithBatchingWindow(0))
	if err != nil {
		t.Fatal(err)
	}
	pushDuringDrain(t, f, m, time.Hour)
	runKafka(t, m)
	kafkaWaitFor(t, 30*time.Second, "partition 1's record delivered", func() bool { return deliveredPartitions(fn)[1] })
}

// TestKafkaRetryAfterRegistryFailureSurvivesWakeups: a partition whose record waits for the
// backoff after a schema registry failure is drained again when the backoff ends, even when
// the poller woke for something else meanwhile. Before, drain forgot a partition it skipped
// for its backoff: the poller woke for partition 1's record, drained it, and then slept with no
// timer for partition 0, whose record waited for the next unrelated wake-up (here: forever).
func TestKafkaRetryAfterRegistryFailureSurvivesWakeups(t *testing.T) {
	t.Parallel()
	f := newKafkaFixture(t, "retrywake", 2)
	f.produce(&kgo.Record{Partition: 0, Value: []byte("p0")})
	fn := newKafkaFunction(t, nil)
	m, err := NewKafka(f.brokers(), f.topic, fn, WithGroupID("g"), WithBatchingWindow(0))
	if err != nil {
		t.Fatal(err)
	}
	pushDuringDrain(t, f, m, time.Second)
	runKafka(t, m)
	kafkaWaitFor(t, 30*time.Second, "both partitions' records committed", func() bool {
		c := f.committed("g", 2)
		return c[0] == 1 && c[1] == 1
	})
}

// TestKafkaFlakyRegistryDoesNotStopTheMapping: a registry that fails now and then but answers
// for most records is not "failing every try": the mapping stops only when it answers for none
// for the patience. Before, failures counted "in a row" went on across drains that encoded
// records, so a registry failing for one record in each drain stopped Run after the patience.
func TestKafkaFlakyRegistryDoesNotStopTheMapping(t *testing.T) {
	t.Parallel()
	f := newKafkaFixture(t, "flaky", 1)
	f.produceN(0, 20)
	fn := newKafkaFunction(t, nil)
	m, err := NewKafka(f.brokers(), f.topic, fn, WithGroupID("g"), WithBatchingWindow(0))
	if err != nil {
		t.Fatal(err)
	}
	m.cfg.patience = 300 * time.Millisecond
	m.cfg.backoff = func(int) time.Duration { return 50 * time.Millisecond }
	encode := m.encode
	var mu sync.Mutex
	tried := map[int64]bool{}
	m.encode = func(ctx context.Context, r *kgo.Record) ([]byte, string, error) {
		mu.Lock()
		first := !tried[r.Offset]
		tried[r.Offset] = true
		mu.Unlock()
		if first && r.Offset%2 == 1 { // each odd record fails once
			return nil, "", errors.New("registry timed out (test)")
		}
		return encode(ctx, r)
	}
	runKafka(t, m)
	kafkaWaitFor(t, 30*time.Second, "the 20 records committed", func() bool { return f.committed("g", 1)[0] == 20 || m.runErr() != nil })
	if err := m.runErr(); err != nil {
		t.Fatalf("Run stopped: %v", err)
	}
}
