package capacity

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func ms(n float64) Duration { return Duration(n * float64(time.Millisecond)) }

func mustMake(t *testing.T, in Input) *Plan {
	t.Helper()
	p, err := Make(in)
	if err != nil {
		t.Fatalf("Make(%+v): %v", in, err)
	}
	return p
}

// figure returns the value of a design's figure by name; the test fails without it.
func figure(t *testing.T, d Design, name string) float64 {
	t.Helper()
	for _, f := range d.Figures {
		if f.Name == name {
			return f.Value
		}
	}
	t.Fatalf("%s: no figure %q", d.Name, name)
	return 0
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestTalkExample reproduces the talk's example: 5 partitions at 300 ms per record reach
// 16.7 records a second however many arrive, since "Lambda reads messages sequentially for
// each Kafka topic partition" (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-process.html):
// one invocation of 100 records takes 30 s, and 5 partitions hold 5 invocations at a time.
func TestTalkExample(t *testing.T) {
	p := mustMake(t, Input{Rate: 100, Partitions: 5, Duration: ms(300), BatchSize: 100})
	d := p.Direct
	if !near(d.MaxRecordsPerSecond, 5.0/0.3) {
		t.Errorf("max_records_per_second = %v, want 5 x 1/0.3 s = 16.667", d.MaxRecordsPerSecond)
	}
	if !strings.HasPrefix(d.Bound, "5 partitions, one invocation each at a time") {
		t.Errorf("bound = %q, want the partitions", d.Bound)
	}
	if d.ReachesTarget {
		t.Error("reaches_target = true at 100 records/s")
	}
	// 100 records/s at 30 s per 100 records: 30 invocations at once, so 30 partitions and 6
	// pollers (5 invocations each).
	if d.ConcurrencyNeeded != 30 || d.PartitionsNeeded != 30 || d.PollersNeeded != 6 {
		t.Errorf("needed = %d concurrency, %d partitions, %d pollers; want 30, 30, 6", d.ConcurrencyNeeded, d.PartitionsNeeded, d.PollersNeeded)
	}
}

// TestPollerExample reproduces AWS's sizing example: "With a batch size of 20 records and an
// average target function duration of 50ms, each event poller can process 2,000 records per
// second ... to handle 20,000 records per second, you need at least 10 event pollers"
// (https://docs.aws.amazon.com/lambda/latest/dg/with-kafka-low-latency.html).
func TestPollerExample(t *testing.T) {
	p := mustMake(t, Input{Rate: 20_000, BatchSize: 20, BatchDuration: ms(50)})
	d := p.Direct
	if v := figure(t, d, "function.records_per_second_per_poller"); v != 2_000 {
		t.Errorf("records per second per poller = %v, want 2,000", v)
	}
	if d.PollersNeeded != 10 || d.ConcurrencyNeeded != 50 || d.PartitionsNeeded != 50 {
		t.Errorf("needed = %d pollers, %d concurrency, %d partitions; want 10, 50, 50", d.PollersNeeded, d.ConcurrencyNeeded, d.PartitionsNeeded)
	}
	if !d.ReachesTarget {
		t.Errorf("reaches_target = false at its own partitions: %s", d.Bound)
	}
}

// TestPollersCappedAtPartitions: "to maintain ordered processing within partitions, Lambda
// caps the MaximumPollers to the number of partitions in the topic"
// (https://docs.aws.amazon.com/lambda/latest/dg/kafka-scaling-modes.html).
func TestPollersCappedAtPartitions(t *testing.T) {
	p := mustMake(t, Input{Rate: 10, Partitions: 3, MaximumPollers: 10, Duration: ms(10)})
	if v := figure(t, p.Direct, "function.pollers_max"); v != 3 {
		t.Errorf("pollers = %v with 3 partitions and MaximumPollers 10, want 3", v)
	}
}

// TestPollerBytes: "each event poller can handle up to 5 MB/sec of throughput or up to 5
// concurrent invocations" (https://docs.aws.amazon.com/lambda/latest/dg/kafka-scaling-modes.html):
// records of 1 MB make 5 records a second a poller, however short the handler.
func TestPollerBytes(t *testing.T) {
	p := mustMake(t, Input{Rate: 100, RecordSize: 1_000_000, Duration: ms(1), Partitions: 1})
	d := p.Direct
	if v := figure(t, d, "function.records_per_second_per_poller"); v != 5 {
		t.Errorf("records per second per poller = %v, want 5 by the 5 MB/s", v)
	}
	if d.MaxRecordsPerSecond != 5 || !strings.Contains(d.Bound, "5 MB/s") {
		t.Errorf("1 partition: max %v, bound %q; want 5 records/s by the 5 MB/s", d.MaxRecordsPerSecond, d.Bound)
	}
	// 100 MB/s needs 20 pollers.
	if d.PollersNeeded != 20 {
		t.Errorf("pollers_needed = %d, want 20", d.PollersNeeded)
	}
}

// TestFIFOLimits: "If you use batching, non-high throughput FIFO queues support up to 3,000
// messages per second, per API action" (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html);
// "For FIFO queues, concurrent invocations are capped at the number of message group IDs"
// (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html): 4 groups at 1 s
// per batch of 10 make 40 messages a second.
func TestFIFOLimits(t *testing.T) {
	p := mustMake(t, Input{Rate: 100, Duration: ms(10)})
	if q := p.Fanout.Stages[1]; q.Name != "queue" || q.MaxRecordsPerSecond != 3_000 {
		t.Errorf("queue stage = %+v, want 3,000 messages/s", q)
	}
	p = mustMake(t, Input{Rate: 100, Duration: ms(10), Fanout: Fanout{MessageGroups: 4, WorkerBatchDuration: Duration(time.Second), WorkerBatchSize: 10}})
	f := p.Fanout
	if w := f.Stages[2]; w.MaxRecordsPerSecond != 40 || !strings.Contains(w.Bound, "message groups") {
		t.Errorf("workers stage = %+v, want 40 by the message groups", w)
	}
	if f.MaxRecordsPerSecond != 40 || !strings.HasPrefix(f.Bound, "workers:") || f.ReachesTarget || f.ConcurrencyNeeded != 0 {
		t.Errorf("fanout = max %v, bound %q, reaches %v, concurrency %d; want 40, the workers, false, 0", f.MaxRecordsPerSecond, f.Bound, f.ReachesTarget, f.ConcurrencyNeeded)
	}
}

// TestHighThroughputFIFO: high throughput mode is up to 70,000 transactions per second per
// action in us-east-1 (quotas-messages); the plan's Region-free default is 2,400.
func TestHighThroughputFIFO(t *testing.T) {
	for _, c := range []struct {
		calls int
		want  float64
	}{{0, 24_000}, {70_000, 700_000}} {
		p := mustMake(t, Input{Rate: 100, Duration: ms(10), Fanout: Fanout{HighThroughput: true, FIFOCallsPerSecond: c.calls}})
		if q := p.Fanout.Stages[1]; q.MaxRecordsPerSecond != c.want {
			t.Errorf("calls %d: queue max = %v, want %v", c.calls, q.MaxRecordsPerSecond, c.want)
		}
	}
}

// TestStandardQueueJSON: a standard queue has no documented limit, +Inf in the model and
// null in JSON, which has no infinity.
func TestStandardQueueJSON(t *testing.T) {
	p := mustMake(t, Input{Rate: 100, Duration: ms(10), Fanout: Fanout{Queue: "standard"}})
	q := p.Fanout.Stages[1]
	if !math.IsInf(q.MaxRecordsPerSecond, 1) {
		t.Fatalf("standard queue max = %v, want +Inf", q.MaxRecordsPerSecond)
	}
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"max_records_per_second":null`) {
		t.Errorf("JSON %s: want a null max_records_per_second", b)
	}
	var back Stage
	if err := json.Unmarshal(b, &back); err != nil || !math.IsInf(back.MaxRecordsPerSecond, 1) || back.Bound != q.Bound {
		t.Errorf("read back %+v, %v; want the stage with +Inf", back, err)
	}
}

// TestMessageTooLarge: a record whose message is over SQS's 1 MiB leaves the fan-out design
// unreachable, bound by the queue; the direct design still plans.
func TestMessageTooLarge(t *testing.T) {
	p := mustMake(t, Input{Rate: 1, RecordSize: 900_000, Duration: ms(10)})
	if f := p.Fanout; f.ReachesTarget || f.MaxRecordsPerSecond != 0 || !strings.Contains(f.Bound, "1 MiB") {
		t.Errorf("fanout = %v, %v, %q; want unreachable by the 1 MiB message", f.ReachesTarget, f.MaxRecordsPerSecond, f.Bound)
	}
	if !p.Direct.ReachesTarget || p.Cheaper != "direct" {
		t.Errorf("direct reaches %v, cheaper %q; want direct", p.Direct.ReachesTarget, p.Cheaper)
	}
}

// TestUnreachable: more than 2,000 pollers, or more invocations than the concurrency, reach
// no rate: the needed counts are 0 and the bound says why.
func TestUnreachable(t *testing.T) {
	// 1 MB records at 20 GB/s: 4,000 pollers.
	p := mustMake(t, Input{Rate: 20_000, RecordSize: 1_000_000, Duration: ms(1)})
	if d := p.Direct; d.ReachesTarget || d.PollersNeeded != 0 || !strings.Contains(d.Bound, "4000 pollers needed") {
		t.Errorf("direct = %+v", d)
	}
	p = mustMake(t, Input{Rate: 1_000, Duration: ms(100), Concurrency: 50})
	if d := p.Direct; d.ReachesTarget || d.ConcurrencyNeeded != 0 || !strings.Contains(d.Bound, "over the concurrency of 50") || len(d.CostLines) != 0 {
		t.Errorf("direct = reaches %v, concurrency %d, bound %q, %d cost lines", d.ReachesTarget, d.ConcurrencyNeeded, d.Bound, len(d.CostLines))
	}
}

// TestOnDemand: on-demand mode has no pollers to plan, no EPUs and no 5 MB/s per poller.
func TestOnDemand(t *testing.T) {
	p := mustMake(t, Input{Rate: 100, RecordSize: 1_000_000, Duration: ms(1), Partitions: 1, Mode: "on-demand"})
	d := p.Direct
	if d.PollersNeeded != 0 || d.EventPollerUnits != 0 || d.MaxRecordsPerSecond != 1000 {
		t.Errorf("on-demand: pollers %d, EPUs %d, max %v; want 0, 0, 1,000 (4 records / 4 ms)", d.PollersNeeded, d.EventPollerUnits, d.MaxRecordsPerSecond)
	}
	for _, l := range d.CostLines {
		if l.Unit == "EPU-hours" {
			t.Errorf("on-demand cost line %q", l.Item)
		}
	}
}

// TestPayloadBatch: the records of a batch go in one call "up to the payload limit for
// synchronous invocation (6 MB)" (API_EventSourceMappingConfiguration): 100 KB records make
// batches of 47, not 100.
func TestPayloadBatch(t *testing.T) {
	p := mustMake(t, Input{Rate: 10, RecordSize: 100_000, Duration: ms(1)})
	// ceil(100,000 × 4/3) + 200 = 133,534 bytes a record; 6,291,456 / 133,534 = 47.1.
	if v := figure(t, p.Direct, "function.records_per_invocation"); v != 47 {
		t.Errorf("records per invocation = %v, want 47", v)
	}
	if _, err := Make(Input{Rate: 1, RecordSize: 5_000_000, Duration: ms(1)}); err == nil || !strings.Contains(err.Error(), "record_size") {
		t.Errorf("a 5 MB record: %v, want an error naming record_size", err)
	}
}
