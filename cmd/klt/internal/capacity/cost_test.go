package capacity

import (
	"math"
	"testing"
	"time"
)

// The prices below are written out by hand from the pages, us-east-1:
//   - https://aws.amazon.com/lambda/pricing/: $0.20 per million requests; $0.0000133334 per
//     GB-second on Arm; $0.185 per EPU-hour, 720 hours a month.
//   - https://aws.amazon.com/sqs/pricing/: $0.40 per million standard requests, each 64 KB
//     chunk of a payload one request.
//   - https://aws.amazon.com/dynamodb/pricing/on-demand/: $0.625 per million write request
//     units, one unit per 1 KB of item.
//   - https://aws.amazon.com/ec2/pricing/on-demand/: $0.09 per GB out to the internet.

type wantLine struct {
	item     string
	quantity float64
	usd      float64
}

func checkLines(t *testing.T, d Design, want []wantLine) {
	t.Helper()
	if len(d.CostLines) != len(want) {
		for _, l := range d.CostLines {
			t.Logf("%s: %v %s = $%v (%s)", l.Item, l.Quantity, l.Unit, l.MonthlyUSD, l.Formula)
		}
		t.Fatalf("%s: %d cost lines, want %d", d.Name, len(d.CostLines), len(want))
	}
	total := 0.0
	for i, w := range want {
		l := d.CostLines[i]
		if l.Item != w.item || !near(l.Quantity, w.quantity) || !near(l.MonthlyUSD, w.usd) || l.Source == "" || l.Formula == "" {
			t.Errorf("line %d = %q %v %s $%v (%s); want %q %v $%v", i, l.Item, l.Quantity, l.Unit, l.MonthlyUSD, l.Formula, w.item, w.quantity, w.usd)
		}
		total += w.usd
	}
	if d.MonthlyCostUSD == nil || !near(*d.MonthlyCostUSD, total) {
		t.Errorf("monthly_cost_usd = %v, want the lines' sum %v", d.MonthlyCostUSD, total)
	}
}

// TestDirectCost: 1,000 records/s of 1 KB, 10 ms each, batches of 100 within a 1 s window,
// 512 MB, 2,000 bytes a record sent out of the Region.
func TestDirectCost(t *testing.T) {
	p := mustMake(t, Input{Rate: 1_000, Duration: ms(10), BatchSize: 100, Window: Duration(time.Second), Memory: 512, EgressBytes: 2_000})
	// Invocations of 100 records last 1 s: 10 at once, 2 pollers (5 each; 1 MB/s needs 1),
	// 10 partitions. A poller gathers 1,000 / 2 × 1 s = 500 records in a window, more than a
	// batch: every invocation carries 100, 10 a second, 10 × 2,592,000 s = 25,920,000 a month.
	checkLines(t, p.Direct, []wantLine{
		// 25.92 million requests × $0.20.
		{"Lambda requests (ConsumerFunction)", 25.92, 25.92 * 0.20},
		// 25,920,000 × 1 s × 512/1024 GB = 12,960,000 GB-s × $0.0000133334.
		{"Lambda duration (ConsumerFunction, arm64)", 12_960_000, 12_960_000 * 0.0000133334},
		// max(ceil(2 / 10), ceil(1.024 MB/s / 20 MB/s)) = 1 EPU × 720 h × $0.185.
		{"Event poller units (ConsumerFunction's Kafka mapping)", 720, 133.2},
		// 1,000 × 2 writes × ceil(300 / 1024) = 2,000 units/s × 2,592,000 s = 5,184 million × $0.625.
		{"DynamoDB writes (idempotency, ConsumerFunction)", 5_184, 5_184 * 0.625},
		// 1,000 × 2,000 B × 2,592,000 s / 1e9 = 5,184 GB × $0.09.
		{"Data transfer out of the Region", 5_184, 5_184 * 0.09},
	})
	if d := p.Direct; d.PollersNeeded != 2 || d.ConcurrencyNeeded != 10 || d.PartitionsNeeded != 10 || d.EventPollerUnits != 1 {
		t.Errorf("needed = %d pollers, %d concurrency, %d partitions, %d EPUs; want 2, 10, 10, 1", d.PollersNeeded, d.ConcurrencyNeeded, d.PartitionsNeeded, d.EventPollerUnits)
	}
}

// TestFanoutCost: the same 1,000 records/s through the dispatcher (1 ms a record, batches of
// 500, 500 ms window), a standard queue, and workers at 20 ms a message in batches of 10; one
// idempotency write of a 2,000-byte item per record.
func TestFanoutCost(t *testing.T) {
	p := mustMake(t, Input{Rate: 1_000, Duration: ms(10), IdempotencyWrites: 1, IdempotencyItemSize: 2_000,
		Fanout: Fanout{Queue: "standard", WorkerDuration: ms(20)}})
	// Dispatcher: 500 records × 1 ms = 0.5 s an invocation, 1 at once, 1 poller, 1 partition;
	// a poller gathers 1,000 × 0.5 s = 500 records in a window: full batches, 2 a second,
	// 5,184,000 a month. Workers: 10 messages × 20 ms = 0.2 s, 100 a second, 259,200,000 a
	// month. A message: ceil(1,024 × 4/3) + 300 = 1,666 bytes, 10 in a call are 16,660 bytes,
	// one 64 KB chunk.
	checkLines(t, p.Fanout, []wantLine{
		{"Lambda requests (DispatcherFunction)", 5.184, 5.184 * 0.20},
		// 5,184,000 × 0.5 s × 256/1024 GB = 648,000 GB-s.
		{"Lambda duration (DispatcherFunction, arm64)", 648_000, 648_000 * 0.0000133334},
		{"Event poller units (DispatcherFunction's Kafka mapping)", 720, 133.2},
		{"Lambda requests (WorkerFunction)", 259.2, 259.2 * 0.20},
		// 259,200,000 × 0.2 s × 0.25 GB = 12,960,000 GB-s.
		{"Lambda duration (WorkerFunction, arm64)", 12_960_000, 12_960_000 * 0.0000133334},
		// 1,000 / 10 = 100 calls/s × 2,592,000 s × 1 chunk = 259.2 million × $0.40, for each of
		// the three actions.
		{"SQS standard requests (SendMessageBatch)", 259.2, 259.2 * 0.40},
		{"SQS standard requests (ReceiveMessage)", 259.2, 259.2 * 0.40},
		{"SQS standard requests (DeleteMessageBatch)", 259.2, 259.2 * 0.40},
		// 1,000 × 1 write × ceil(2,000 / 1024) = 2 units × 2,592,000 s = 5,184 million × $0.625.
		{"DynamoDB writes (idempotency, WorkerFunction)", 5_184, 5_184 * 0.625},
	})
	if f := p.Fanout; f.ConcurrencyNeeded != 20 || f.PollersNeeded != 1 || f.PartitionsNeeded != 1 {
		t.Errorf("needed = %d concurrency, %d pollers, %d partitions; want 20, 1, 1", f.ConcurrencyNeeded, f.PollersNeeded, f.PartitionsNeeded)
	}
	if p.Cheaper != "direct" && p.Cheaper != "fanout" {
		t.Errorf("cheaper = %q", p.Cheaper)
	}
	if want := map[bool]string{true: "direct", false: "fanout"}[*p.Direct.MonthlyCostUSD <= *p.Fanout.MonthlyCostUSD]; p.Cheaper != want {
		t.Errorf("cheaper = %q at $%v direct, $%v fan-out; want %q", p.Cheaper, *p.Direct.MonthlyCostUSD, *p.Fanout.MonthlyCostUSD, want)
	}
}

// TestLargeMessageChunks: SQS bills each 64 KB chunk: a 100 KB record's message is
// ceil(100,000 × 4/3) + 300 = 133,634 bytes; 7 fit in a 1 MiB SendMessageBatch (935,438
// bytes, 15 chunks); the mapping receives 10 a call (1,336,340 bytes, 21 chunks).
func TestLargeMessageChunks(t *testing.T) {
	p := mustMake(t, Input{Rate: 70, RecordSize: 100_000, Duration: ms(1), IdempotencyWrites: -1, Fanout: Fanout{Queue: "standard"}})
	lines := map[string]CostLine{}
	for _, l := range p.Fanout.CostLines {
		lines[l.Item] = l
	}
	month := 2_592_000.0
	for item, want := range map[string]float64{
		"SQS standard requests (SendMessageBatch)":   70.0 / 7 * month * 15 / 1e6,
		"SQS standard requests (ReceiveMessage)":     70.0 / 10 * month * 21 / 1e6,
		"SQS standard requests (DeleteMessageBatch)": 70.0 / 10 * month / 1e6,
	} {
		if l, ok := lines[item]; !ok || !near(l.Quantity, want) {
			t.Errorf("%s = %v (%s), want %v million", item, l.Quantity, l.Formula, want)
		}
	}
	if _, ok := lines["DynamoDB writes (idempotency, WorkerFunction)"]; ok {
		t.Error("idempotency_writes -1: a DynamoDB line")
	}
}

// TestEventPollerUnitsExample is AWS's: 10 mappings of one poller each take an EPU each
// ungrouped, 10 × 720 h × $0.185 = $1,332 a month, and one EPU in a poller group, $133.20
// (https://aws.amazon.com/lambda/pricing/, Provisioned Mode for ESM, pricing example 3).
func TestEventPollerUnitsExample(t *testing.T) {
	ten := []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	if got := EventPollerUnits(ten, false); got != 10 || !near(float64(got)*720*0.185, 1_332) {
		t.Errorf("ungrouped = %d EPUs, want 10 ($1,332)", got)
	}
	if got := EventPollerUnits(ten, true); got != 1 || !near(float64(got)*720*0.185, 133.2) {
		t.Errorf("grouped = %d EPUs, want 1 ($133.20)", got)
	}
	if got := EventPollerUnits([]int{11, 9}, false); got != 3 {
		t.Errorf("11 and 9 pollers ungrouped = %d, want 2 + 1", got)
	}
	if got := EventPollerUnits([]int{11, 9}, true); got != 2 {
		t.Errorf("11 and 9 pollers grouped = %d, want 2", got)
	}
	// Through Make: a one-poller mapping in a poller group pays a tenth of an EPU, 72
	// EPU-hours; ten such mappings, $133.20.
	p := mustMake(t, Input{Rate: 10, Duration: ms(1), PollerGroup: true})
	for _, l := range p.Direct.CostLines {
		if l.Unit == "EPU-hours" && (!near(l.Quantity, 72) || !near(10*l.MonthlyUSD, 133.2)) {
			t.Errorf("grouped mapping: %v EPU-hours, $%v; want 72 and a tenth of $133.20", l.Quantity, l.MonthlyUSD)
		}
	}
}

// TestNoWindowBatch: without a window an invocation takes what has arrived while the last
// one ran; the plan never carries more than a batch nor fewer than one record.
func TestNoWindowBatch(t *testing.T) {
	p := mustMake(t, Input{Rate: 1_000, Duration: ms(10), LowLatency: true})
	v := figure(t, p.Direct, "function.records_per_invocation_at_rate")
	if v < 1 || v > 100 || math.IsNaN(v) {
		t.Errorf("records per invocation at rate = %v, want 1..100", v)
	}
	if p.Input.Window != 0 {
		t.Errorf("low_latency: window %v, want 0", p.Input.Window)
	}
}
