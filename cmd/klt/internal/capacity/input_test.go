package capacity

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestValidation: every bound fails with ErrInput, naming the field.
func TestValidation(t *testing.T) {
	ok := func(mod func(*Input)) Input {
		in := Input{Rate: 100, Duration: ms(10)}
		mod(&in)
		return in
	}
	for _, c := range []struct {
		field string
		in    Input
	}{
		{"rate", Input{Duration: ms(1)}},
		{"rate", ok(func(i *Input) { i.Rate = math.NaN() })},
		{"rate", ok(func(i *Input) { i.Rate = math.Inf(1) })},
		{"rate", ok(func(i *Input) { i.Rate = -1 })},
		{"rate", ok(func(i *Input) { i.Rate = 2e9 })},
		{"burst", ok(func(i *Input) { i.Burst = 50; i.BurstFor = Duration(time.Second) })},
		{"burst", ok(func(i *Input) { i.Burst = math.Inf(1); i.BurstFor = Duration(time.Second) })},
		{"burst_for", ok(func(i *Input) { i.Burst = 200 })},
		{"burst_for", ok(func(i *Input) { i.BurstFor = Duration(time.Second) })},
		{"burst_for", ok(func(i *Input) { i.Burst = 200; i.BurstFor = Duration(8 * 24 * time.Hour) })},
		{"record_size", ok(func(i *Input) { i.RecordSize = -1 })},
		{"record_size", ok(func(i *Input) { i.RecordSize = 6_291_457 })},
		{"duration", Input{Rate: 1}},
		{"duration", ok(func(i *Input) { i.BatchDuration = ms(10) })},
		{"duration", ok(func(i *Input) { i.Duration = -1 })},
		{"duration", ok(func(i *Input) { i.Duration = Duration(15 * time.Minute) })},
		{"duration", ok(func(i *Input) { i.Duration = Duration(10 * time.Second) })}, // 100 × 10 s is over 14 minutes
		{"batch_duration", Input{Rate: 1, BatchDuration: Duration(15 * time.Minute)}},
		{"batch_size", ok(func(i *Input) { i.BatchSize = 10_001 })},
		{"batch_size", ok(func(i *Input) { i.BatchSize = -1 })},
		{"window", ok(func(i *Input) { i.Window = Duration(301 * time.Second) })},
		{"window", ok(func(i *Input) { i.Window = -1 })},
		{"window", ok(func(i *Input) { i.Window = Duration(time.Second); i.LowLatency = true })},
		{"partitions", ok(func(i *Input) { i.Partitions = 100_001 })},
		{"partitions", ok(func(i *Input) { i.Partitions = -1 })},
		{"partitions_per_invocation", ok(func(i *Input) { i.PartitionsPerInvocation = 0.5 })},
		{"partitions_per_invocation", ok(func(i *Input) { i.PartitionsPerInvocation = math.NaN() })},
		{"maximum_pollers", ok(func(i *Input) { i.MaximumPollers = 2_001 })},
		{"maximum_pollers", ok(func(i *Input) { i.MaximumPollers = -1 })},
		{"mode", ok(func(i *Input) { i.Mode = "Provisioned" })},
		{"mode", ok(func(i *Input) { i.Mode = "on-demand"; i.PollerGroup = true })},
		{"memory", ok(func(i *Input) { i.Memory = 127 })},
		{"memory", ok(func(i *Input) { i.Memory = 10_241 })},
		{"architecture", ok(func(i *Input) { i.Architecture = "arm" })},
		{"concurrency", ok(func(i *Input) { i.Concurrency = -1 })},
		{"concurrency", ok(func(i *Input) { i.Concurrency = 1_000_001 })},
		{"idempotency_writes", ok(func(i *Input) { i.IdempotencyWrites = -2 })},
		{"idempotency_writes", ok(func(i *Input) { i.IdempotencyWrites = 101 })},
		{"idempotency_item_size", ok(func(i *Input) { i.IdempotencyItemSize = 409_601 })},
		{"egress_bytes", ok(func(i *Input) { i.EgressBytes = -1 })},
		{"fanout.queue", ok(func(i *Input) { i.Fanout.Queue = "FIFO" })},
		{"fanout.high_throughput", ok(func(i *Input) { i.Fanout.Queue = "standard"; i.Fanout.HighThroughput = true })},
		{"fanout.fifo_calls_per_second", ok(func(i *Input) { i.Fanout.FIFOCallsPerSecond = 70_000 })},
		{"fanout.fifo_calls_per_second", ok(func(i *Input) { i.Fanout.HighThroughput = true; i.Fanout.FIFOCallsPerSecond = -5 })},
		{"fanout.message_groups", ok(func(i *Input) { i.Fanout.MessageGroups = -1 })},
		{"fanout.dispatch_duration", ok(func(i *Input) { i.Fanout.DispatchDuration = ms(1); i.Fanout.DispatchBatchDuration = ms(100) })},
		{"fanout.dispatch_duration", ok(func(i *Input) { i.Fanout.DispatchDuration = -1 })},
		{"fanout.dispatch_duration", ok(func(i *Input) { i.Fanout.DispatchDuration = Duration(2 * time.Second) })}, // × 500 records
		{"fanout.dispatch_batch_duration", ok(func(i *Input) { i.Fanout.DispatchBatchDuration = Duration(15 * time.Minute) })},
		{"fanout.dispatch_batch_size", ok(func(i *Input) { i.Fanout.DispatchBatchSize = 10_001 })},
		{"fanout.worker_duration", ok(func(i *Input) { i.Fanout.WorkerDuration = ms(1); i.Fanout.WorkerBatchDuration = ms(1) })},
		{"fanout.worker_duration", ok(func(i *Input) { i.Fanout.WorkerDuration = Duration(16 * time.Minute) })},
		{"fanout.worker_duration", ok(func(i *Input) { i.Fanout.WorkerDuration = Duration(2 * time.Minute) })}, // × 10 messages
		{"fanout.worker_batch_duration", ok(func(i *Input) { i.Fanout.WorkerBatchDuration = -1 })},
		{"fanout.worker_batch_size", ok(func(i *Input) { i.Fanout.WorkerBatchSize = 11 })},
		{"fanout.worker_batch_size", ok(func(i *Input) { i.Fanout.Queue = "standard"; i.Fanout.WorkerBatchSize = 10_001 })},
		{"fanout.maximum_concurrency", ok(func(i *Input) { i.Fanout.MaximumConcurrency = 1 })},
		{"fanout.maximum_concurrency", ok(func(i *Input) { i.Fanout.MaximumConcurrency = 1_001 })},
		{"prices.lambda_gb_second", ok(func(i *Input) { i.Prices.LambdaGBSecond = -1 })},
		{"prices.lambda_requests_per_million", ok(func(i *Input) { i.Prices.LambdaRequests = math.NaN() })},
		{"prices.event_poller_unit_hour", ok(func(i *Input) { i.Prices.EventPollerUnitHour = math.Inf(1) })},
		{"prices.sqs_standard_per_million", ok(func(i *Input) { i.Prices.SQSStandardRequests = -0.1 })},
		{"prices.sqs_fifo_per_million", ok(func(i *Input) { i.Prices.SQSFIFORequests = 2e6 })},
		{"prices.dynamodb_write_per_million", ok(func(i *Input) { i.Prices.DynamoDBWriteUnits = -1 })},
		{"prices.data_transfer_out_per_gb", ok(func(i *Input) { i.Prices.DataTransferOutPerGB = -1 })},
	} {
		_, err := Make(c.in)
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), ": "+c.field+" ") {
			t.Errorf("%s: Make(%+v) = %v, want ErrInput naming %s", c.field, c.in, err, c.field)
		}
	}
}

// TestDefaults: the filled Input carries every default, and zero prices take us-east-1's.
func TestDefaults(t *testing.T) {
	p := mustMake(t, Input{Rate: 1, Duration: ms(1), Architecture: "x86_64", Prices: Prices{LambdaRequests: 0.3}})
	in := p.Input
	if in.RecordSize != 1_024 || in.BatchSize != 100 || in.Window != ms(500) || in.Mode != "provisioned" ||
		in.MaximumPollers != 200 || in.Memory != 256 || in.Concurrency != 1_000 || in.IdempotencyWrites != 2 ||
		in.Fanout.Queue != "fifo" || in.Fanout.DispatchBatchSize != 500 || in.Fanout.WorkerBatchSize != 10 ||
		in.Fanout.WorkerDuration != ms(1) || in.Fanout.DispatchDuration != ms(1) || in.Fanout.MessageGroups != 1_000 {
		t.Errorf("defaults: %+v", in)
	}
	if in.Prices.LambdaRequests != 0.3 || in.Prices.LambdaGBSecond != 0.0000166667 || in.Prices.EventPollerUnitHour != 0.185 {
		t.Errorf("prices: %+v", in.Prices)
	}
	if DefaultPrices("arm64").LambdaGBSecond != 0.0000133334 {
		t.Error("arm64 GB-second price")
	}
}

// TestDurationJSON: durations read as text or milliseconds, and write as milliseconds.
func TestDurationJSON(t *testing.T) {
	for text, want := range map[string]Duration{`"300ms"`: ms(300), `300`: ms(300), `"1.5s"`: ms(1500), `0.5`: Duration(500 * time.Microsecond)} {
		var d Duration
		if err := json.Unmarshal([]byte(text), &d); err != nil || d != want {
			t.Errorf("%s = %v, %v; want %v", text, d, err, want)
		}
	}
	for _, bad := range []string{`"300"`, `"fast"`, `1e300`, `-1e300`, `true`, `"1e400ms"`} {
		var d Duration
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("%s = %v, want an error", bad, d)
		}
	}
	b, err := json.Marshal(struct{ D Duration }{ms(300)})
	if err != nil || string(b) != `{"D":300}` {
		t.Errorf("marshal = %s, %v", b, err)
	}
	if s := ms(1500).String(); s != "1.5s" {
		t.Errorf("String = %q", s)
	}
}
