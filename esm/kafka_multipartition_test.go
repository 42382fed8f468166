package esm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// Conformance tests of multi-partition invocations. AWS
// (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-process.html): "Lambda reads messages
// sequentially for each Kafka topic partition. A single Lambda payload can contain messages
// from multiple partitions."

// partitionsOf lists an event's "records" keys, and the offsets under each.
func partitionsOf(ev *kafkaevent.Event) map[string][]int64 {
	out := map[string][]int64{}
	for _, p := range ev.Partitions {
		for _, r := range p.Records {
			out[p.ID()] = append(out[p.ID()], r.Offset)
		}
	}
	return out
}

// observed is an Observer that keeps every event.
type observed struct {
	mu     sync.Mutex
	events []Event
}

func (o *observed) Observe(e Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}

// of returns the events of kind k.
func (o *observed) of(k EventKind) []Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []Event
	for _, e := range o.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// records counts the records in the events of kind k.
func (o *observed) records(k EventKind) int {
	n := 0
	for _, e := range o.of(k) {
		n += len(e.Records)
	}
	return n
}

// checkSettled asserts the counters' invariant once every record is settled: In = Filtered +
// Succeeded + DeadLettered, nothing in flight. A mapping counts records as committed just after
// the broker took the commit, so a test that waited for the broker's offset gives the counters
// a moment (up to 5 s) to follow.
func checkSettled(t *testing.T, c *Counters) {
	t.Helper()
	settled(t, c)
}

// settled waits until every record in the counters is settled (In = Filtered + Succeeded +
// DeadLettered, none in flight) and returns that snapshot. A mapping counts a record Succeeded
// just after its commit, so a test that saw the commit waits here before it reads the counts.
func settled(t *testing.T, c *Counters) Snapshot {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := c.Snapshot()
		if s.In == s.Filtered+s.Succeeded+s.DeadLettered && s.InFlight == 0 {
			return s
		}
		if time.Now().After(deadline) {
			t.Errorf("counters %+v: In != Filtered + Succeeded + DeadLettered, or records in flight", s)
			return s
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// produceTo writes n records to each of the partitions.
func (f *kafkaFixture) produceTo(n int, partitions ...int32) {
	f.t.Helper()
	var recs []*kgo.Record
	for _, p := range partitions {
		for i := range n {
			recs = append(recs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
	}
	f.produce(recs...)
}

// TestKafkaEventHoldsSeveralPartitions checks that records waiting in several partitions go in
// one invocation, each partition under its own "topic-N" key in offset order.
//
// AWS (with-msk-process.html): "A single Lambda payload can contain messages from multiple
// partitions."
func TestKafkaEventHoldsSeveralPartitions(t *testing.T) {
	f := newKafkaFixture(t, "orders", 3)
	f.produceTo(3, 0, 1, 2)
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithBatchingWindow(time.Second))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "9 records", func() bool { return m.Counters().Succeeded.Load() == 9 })
	calls := fn.snapshot()
	if len(calls) != 1 {
		t.Fatalf("%d invocations, want 1", len(calls))
	}
	got := partitionsOf(calls[0].event)
	want := map[string][]int64{"orders-0": {0, 1, 2}, "orders-1": {0, 1, 2}, "orders-2": {0, 1, 2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("event holds %v, want %v", got, want)
	}
	if !strings.Contains(string(calls[0].payload), `"records":{"orders-0":[`) {
		t.Errorf("event %s: partitions not in ascending order", calls[0].payload)
	}
	checkSettled(t, m.Counters())
}

// TestKafkaPartialResponseRetriesOnlyNamedPartition checks the partial batch response of a
// multi-partition event: the partition it names resumes from the reported offset; the
// partition it does not name is done and committed at once.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html#kafka-partial-batch-response):
// the response lists batchItemFailures with itemIdentifier {"partition": "topic-partition_number",
// "offset": number}; "If you return an empty valid JSON or null, the event source mapping will
// consider a batch as successfully processed."
func TestKafkaPartialResponseRetriesOnlyNamedPartition(t *testing.T) {
	f := newKafkaFixture(t, "orders", 2)
	f.produceTo(3, 0, 1)
	fn := newKafkaFunction(t, func(n int, ev *kafkaevent.Event) Response {
		if n == 0 {
			return Response{Payload: []byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-1","offset":1}}]}`)}
		}
		return Response{}
	})
	obs := &observed{}
	m := newKafkaMapping(t, f, fn, WithBatchingWindow(time.Second), WithReportBatchItemFailures(), WithGroupID("g"), WithObserver(obs))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "both partitions committed at 3", func() bool {
		c := f.committed("g", 2)
		return c[0] == 3 && c[1] == 3
	})
	calls := fn.snapshot()
	if len(calls) != 2 {
		t.Fatalf("%d invocations, want 2", len(calls))
	}
	if got := partitionsOf(calls[1].event); fmt.Sprint(got) != fmt.Sprint(map[string][]int64{"orders-1": {1, 2}}) {
		t.Errorf("retry holds %v, want orders-1 offsets 1 and 2 only", got)
	}
	s := settled(t, m.Counters())
	if s.Delivered != 8 || s.ReportedFailed != 2 || s.Retried != 2 || s.Succeeded != 6 || s.Invocations != 2 || s.Errors != 0 {
		t.Errorf("counters %+v", s)
	}
	checkSettled(t, m.Counters())
	if f := obs.of(Failed); len(f) != 1 || f[0].Reason != "ReportBatchItemFailures" || len(f[0].Records) != 2 {
		t.Errorf("Failed events %+v", f)
	}
	if n := obs.records(Succeeded); n != 6 {
		t.Errorf("Succeeded events name %d records, want 6", n)
	}
}

// TestKafkaForeignPartitionFailsWholeBatch checks that an item naming a partition the event
// did not hold fails every partition of the batch.
//
// AWS (kafka-retry-configurations.html): "Any invalid topic-partition_number or offset returned
// that was not present in the invoked event will be treated as failure and entire batch will be
// retried."
func TestKafkaForeignPartitionFailsWholeBatch(t *testing.T) {
	f := newKafkaFixture(t, "orders", 2)
	f.produceTo(2, 0, 1)
	fn := newKafkaFunction(t, func(n int, ev *kafkaevent.Event) Response {
		if n == 0 {
			return Response{Payload: []byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-7","offset":0}}]}`)}
		}
		return Response{}
	})
	m := newKafkaMapping(t, f, fn, WithBatchingWindow(time.Second), WithReportBatchItemFailures())
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "4 records", func() bool { return m.Counters().Succeeded.Load() == 4 })
	var again []string
	for _, c := range fn.snapshot()[1:] {
		for id, offs := range partitionsOf(c.event) {
			again = append(again, fmt.Sprint(id, offs))
		}
	}
	slices.Sort(again)
	if fmt.Sprint(again) != "[orders-0[0 1] orders-1[0 1]]" {
		t.Errorf("retried %v, want every record of both partitions", again)
	}
	if s := settled(t, m.Counters()); s.ErrorFailed != 4 || s.Errors != 1 || s.ReportedFailed != 0 {
		t.Errorf("counters %+v", s)
	}
	checkSettled(t, m.Counters())
}

// TestKafkaFunctionErrorRetriesEveryPartition checks that a function error retries each
// partition of the batch, from its first record, and that a partition failing again does not
// hold back the other, which goes on.
//
// AWS (kafka-retry-configurations.html): "Maximum retry attempts – The maximum number of times
// Lambda retries when your function returns an error." AWS does not say how a multi-partition
// batch is retried; the emulator retries each partition's records on their own, so that a
// failing partition does not hold back the others (see Kafka's doc).
func TestKafkaFunctionErrorRetriesEveryPartition(t *testing.T) {
	f := newKafkaFixture(t, "orders", 2)
	f.produceTo(2, 0, 1)
	var mu sync.Mutex
	fails := 0
	fn := newKafkaFunction(t, func(n int, ev *kafkaevent.Event) Response {
		mu.Lock()
		defer mu.Unlock()
		// The first invocation fails; then partition 0 fails 3 more times.
		if _, p0 := partitionsOf(ev)["orders-0"]; n == 0 || p0 && fails < 4 {
			fails++
			return kafkaFailed("boom")
		}
		return Response{}
	})
	m := newKafkaMapping(t, f, fn, WithBatchingWindow(time.Second), WithGroupID("g"))
	m.cfg.backoff = func(int) time.Duration { return 100 * time.Millisecond }
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "partition 1 committed", func() bool { return f.committed("g", 2)[1] == 2 })
	if c := f.committed("g", 2)[0]; c == 2 {
		t.Errorf("partition 0 committed while it was still failing")
	}
	kafkaWaitFor(t, 10*time.Second, "4 records", func() bool { return m.Counters().Succeeded.Load() == 4 })
	calls := fn.snapshot()
	if got := partitionsOf(calls[0].event); len(got) != 2 {
		t.Fatalf("first invocation holds %v, want both partitions", got)
	}
	for _, c := range calls[1:] {
		got := partitionsOf(c.event)
		for id, offs := range got {
			if len(got) != 1 || len(offs) != 2 {
				t.Errorf("a retry holds %v, want one partition from its first record (%s)", got, id)
			}
		}
	}
	// Delivered: 4 in the first invocation, 2 in partition 1's retry, 2 in each of partition
	// 0's four retries (three fail).
	s := settled(t, m.Counters())
	if s.Errors != 4 || s.ErrorFailed != 4+2*3 || s.Delivered != 4+2+2*4 || s.Retried != 2+2*4 || s.Succeeded != 4 {
		t.Errorf("counters %+v", s)
	}
	checkSettled(t, m.Counters())
}

// TestKafkaOnePartitionPerInvocation checks WithOnePartitionPerInvocation: every event holds one
// partition's records, as a mapping did before AWS batched partitions together.
func TestKafkaOnePartitionPerInvocation(t *testing.T) {
	f := newKafkaFixture(t, "orders", 3)
	f.produceTo(3, 0, 1, 2)
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithBatchingWindow(200*time.Millisecond), WithOnePartitionPerInvocation())
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "9 records", func() bool { return m.Counters().Succeeded.Load() == 9 })
	seen := map[string]bool{}
	for _, c := range fn.snapshot() {
		got := partitionsOf(c.event)
		if len(got) != 1 {
			t.Errorf("an event holds %v", got)
		}
		for id := range got {
			seen[id] = true
		}
	}
	if len(seen) != 3 {
		t.Errorf("partitions delivered: %v", seen)
	}
}

// TestKafkaPollers checks WithPollers: the partitions are spread over the pollers, each of
// which runs its own invocations, and no event mixes partitions of two pollers.
func TestKafkaPollers(t *testing.T) {
	f := newKafkaFixture(t, "orders", 4)
	f.produceTo(2, 0, 1, 2, 3)
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithBatchingWindow(300*time.Millisecond), WithPollers(2))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "8 records", func() bool { return m.Counters().Succeeded.Load() == 8 })
	m.mu.Lock()
	n := len(m.pollers)
	m.mu.Unlock()
	if n != 2 {
		t.Errorf("%d pollers, want 2", n)
	}
	for _, c := range fn.snapshot() {
		if got := partitionsOf(c.event); len(got) > 2 {
			t.Errorf("an event holds %v: more than one poller's partitions", got)
		}
	}
}

// TestKafkaOrderAndOneInvocationPerPartition runs many records through several partitions with a
// slow function and checks that each partition's records arrive in offset order, exactly once,
// never in two invocations at once, while invocations run in parallel; by default and with one
// partition per invocation.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-process.html): "Lambda reads
// messages sequentially for each Kafka topic partition." (https://docs.aws.amazon.com/lambda/latest/dg/kafka-scaling-modes.html):
// "to maintain ordered processing within partitions, Lambda caps the MaximumPollers to the
// number of partitions in the topic."
func TestKafkaOrderAndOneInvocationPerPartition(t *testing.T) {
	for _, single := range []bool{false, true} {
		t.Run(fmt.Sprintf("onePartition=%v", single), func(t *testing.T) {
			const parts, per = 4, 500
			f := newKafkaFixture(t, "orders", parts)
			fn := newKafkaFunction(t, func(n int, ev *kafkaevent.Event) Response {
				time.Sleep(time.Duration(n%5) * time.Millisecond)
				return Response{}
			})
			opts := []KafkaOption{WithBatchSize(37), WithBatchingWindow(5 * time.Millisecond)}
			if single {
				opts = append(opts, WithOnePartitionPerInvocation())
			}
			m := newKafkaMapping(t, f, fn, opts...)
			runKafka(t, m)
			for p := range int32(parts) {
				go f.produceN(p, per)
			}
			kafkaWaitFor(t, 30*time.Second, "all records", func() bool { return len(fn.delivered()) == parts*per })
			next := map[string]int64{}
			for _, c := range fn.snapshot() {
				if single && len(c.event.Partitions) != 1 {
					t.Fatalf("an invocation holds %d partitions", len(c.event.Partitions))
				}
				for _, p := range c.event.Partitions {
					for _, r := range p.Records {
						if r.Offset != next[p.ID()] {
							t.Fatalf("%s: offset %d after %d", p.ID(), r.Offset, next[p.ID()]-1)
						}
						next[p.ID()]++
					}
				}
			}
			fn.mu.Lock()
			defer fn.mu.Unlock()
			if fn.overlap != nil {
				t.Error(fn.overlap)
			}
			if fn.maxParallel < 2 {
				t.Errorf("at most %d invocations at once over %d partitions: invocations do not run in parallel", fn.maxParallel, parts)
			}
		})
	}
}

// TestKafkaRebalanceMovesPartitions runs two mappings of one group: when the second joins, the
// first's poller gives up the partitions that move (after their invocations under way end) and
// keeps the others (kgo reports a rebalance that revokes nothing with an empty list, which once
// stopped every partition), every record is still delivered, and no partition is ever in two
// invocations at once.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-process.html): "Lambda reads
// messages sequentially for each Kafka topic partition."
func TestKafkaRebalanceMovesPartitions(t *testing.T) {
	const parts, per = 4, 300
	f := newKafkaFixture(t, "orders", parts)
	fn := newKafkaFunction(t, func(n int, ev *kafkaevent.Event) Response {
		time.Sleep(2 * time.Millisecond)
		return Response{}
	})
	opts := []KafkaOption{WithGroupID("shared"), WithBatchSize(20), WithBatchingWindow(5 * time.Millisecond)}
	m1 := newKafkaMapping(t, f, fn, opts...)
	runKafka(t, m1)
	for p := range int32(parts) {
		f.produceN(p, per/2)
	}
	kafkaWaitFor(t, 10*time.Second, "the first mapping under way", func() bool { return m1.Counters().Succeeded.Load() > 0 })
	m2 := newKafkaMapping(t, f, fn, opts...)
	runKafka(t, m2)
	held := func(m *Kafka) int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.parts)
	}
	kafkaWaitFor(t, 20*time.Second, "the partitions shared", func() bool { return held(m1) > 0 && held(m2) > 0 && held(m1)+held(m2) == parts })
	for p := range int32(parts) {
		f.produceN(p, per/2)
	}
	want := map[string]bool{}
	for p := range parts {
		for i := range per / 2 {
			want[fmt.Sprintf("%d/v%d", p, i)] = true
		}
	}
	kafkaWaitFor(t, 30*time.Second, "every record delivered", func() bool {
		got := map[string]int{}
		for _, c := range fn.snapshot() {
			for _, p := range c.event.Partitions {
				for _, r := range p.Records {
					got[fmt.Sprintf("%d/%s", p.Number, r.Value)]++
				}
			}
		}
		for k := range want {
			if got[k] < 2 { // each value was produced twice per partition
				return false
			}
		}
		return true
	})
	fn.mu.Lock()
	defer fn.mu.Unlock()
	if fn.overlap != nil {
		t.Error(fn.overlap)
	}
}

// TestKafkaEncodeConditionGivesUpAlone checks a record that encodeRecord refuses (with a
// schema registry: a schema not found, a record it cannot deserialize): it is given up alone,
// with its condition, in its partition's offset order; the records before and after it are
// delivered, and the partition is committed past it.
//
// AWS does not document the order in which such records are given up on; the emulator keeps the
// partition's offset order, so that the commit never passes a record not yet settled (see
// Kafka's doc and encodeRecord).
func TestKafkaEncodeConditionGivesUpAlone(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1)
	f.produce(&kgo.Record{Value: []byte("a")}, &kgo.Record{Value: []byte("bad")}, &kgo.Record{Value: []byte("c")})
	obs := &observed{}
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithObserver(obs), WithGroupID("g"))
	encode := m.encode
	m.encode = func(ctx context.Context, r *kgo.Record) ([]byte, string, error) {
		if string(r.Value) == "bad" {
			return nil, "SchemaNotFound", nil
		}
		return encode(ctx, r)
	}
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "offset 3 committed and counted", func() bool {
		return f.committed("g", 1)[0] == 3 && m.Counters().Snapshot().Succeeded == 2
	})
	if got := fn.delivered(); fmt.Sprint(got) != "[a c]" {
		t.Errorf("delivered %v, want [a c]", got)
	}
	var steps []string
	obs.mu.Lock()
	for _, e := range obs.events {
		if e.Kind == Delivered || e.Kind == GaveUp {
			steps = append(steps, fmt.Sprintf("%v %d %s", e.Kind, e.Records[0].Offset, e.Reason))
		}
	}
	obs.mu.Unlock()
	if fmt.Sprint(steps) != "[delivered 0  gave up 1 SchemaNotFound delivered 2 ]" {
		t.Errorf("steps %q: want a delivered, bad given up, c delivered", steps)
	}
	if s := settled(t, m.Counters()); s.DeadLettered != 1 || s.Succeeded != 2 {
		t.Errorf("counters %+v", s)
	}
	checkSettled(t, m.Counters())
}

// TestKafkaEncodeErrorRetries checks a schema registry that fails: the record is tried again
// after the backoff and delivered once the registry answers; a registry that fails every try for
// the mapping's patience (a minute; 2 s here) stops Run rather than skip records.
func TestKafkaEncodeErrorRetries(t *testing.T) {
	for _, failures := range []int{2, 1 << 30} { // 1<<30: the registry never answers
		t.Run(fmt.Sprint(failures), func(t *testing.T) {
			f := newKafkaFixture(t, "orders", 1)
			f.produceN(0, 2)
			fn := newKafkaFunction(t, nil)
			m := newKafkaMapping(t, f, fn, WithMetricsConfig(MetricsErrorCount))
			m.cfg.patience = 2 * time.Second
			encode := m.encode
			var mu sync.Mutex
			left := failures
			m.encode = func(ctx context.Context, r *kgo.Record) ([]byte, string, error) {
				mu.Lock()
				defer mu.Unlock()
				if left > 0 {
					left--
					return nil, "", errors.New("registry unreachable")
				}
				return encode(ctx, r)
			}
			if failures >= 5 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				err := m.Run(ctx)
				if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "times in a row over 2s") || !strings.Contains(err.Error(), "registry unreachable") {
					t.Errorf("Run: %v, want the registry's failure", err)
				}
				if got := m.Metrics()[metricSchemaRegistryErrorCount]; got < 3 {
					t.Errorf("SchemaRegistryErrorCount = %d, want every try of the 2 s counted", got)
				}
				if len(fn.snapshot()) != 0 {
					t.Error("records delivered without their encoding")
				}
				return
			}
			runKafka(t, m)
			kafkaWaitFor(t, 10*time.Second, "2 records", func() bool { return m.Counters().Succeeded.Load() == 2 })
			if got := m.Metrics()[metricSchemaRegistryErrorCount]; got != int64(failures) {
				t.Errorf("SchemaRegistryErrorCount = %d, want %d", got, failures)
			}
		})
	}
}
