package capacity

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// The strings an Input takes.
const (
	archArm     = "arm64"
	archX86     = "x86_64"
	modeProv    = "provisioned"
	modeOnDem   = "on-demand"
	queueFIFO   = "fifo"
	queueStd    = "standard"
	designDir   = "direct"
	designFan   = "fanout"
	noWrites    = -1
	maxBurstFor = maxRecordAge
)

// Defaults of an Input's fields, besides the AWS defaults of limits.go.
const (
	defaultRecordSize       = 1_024
	defaultMemory           = 256
	defaultPPI              = 1
	defaultKeys             = 1_000
	defaultDispatchDuration = time.Millisecond
	defaultDispatchBatch    = 500
	defaultWorkerBatch      = 10
	defaultWrites           = 2
	defaultItemSize         = 300
)

// filled checks in against its bounds and returns it with every default in, and the notes
// of what was assumed. Every error wraps ErrInput and names the field by its JSON name.
func (in Input) filled() (Input, []string, error) {
	if err := in.check(); err != nil {
		return Input{}, nil, err
	}
	var notes []string
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&in.RecordSize, defaultRecordSize)
	def(&in.BatchSize, defaultBatchSize)
	if in.Window == 0 && !in.LowLatency {
		in.Window = Duration(defaultWindow)
	}
	if in.PartitionsPerInvocation == 0 {
		in.PartitionsPerInvocation = defaultPPI
	}
	if in.Mode == "" {
		in.Mode = modeProv
	}
	def(&in.MaximumPollers, defaultMaximumPollers)
	def(&in.Memory, defaultMemory)
	if in.Architecture == "" {
		in.Architecture = archArm
	}
	def(&in.Concurrency, defaultConcurrency)
	def(&in.IdempotencyWrites, defaultWrites)
	def(&in.IdempotencyItemSize, defaultItemSize)
	def(&in.Keys, defaultKeys)
	in.Prices = in.Prices.fill(DefaultPrices(in.Architecture))
	if err := in.LMI.fill(&in); err != nil {
		return Input{}, nil, err
	}
	f := &in.Fanout
	if f.Queue == "" {
		f.Queue = queueFIFO
	}
	def(&f.MessageGroups, in.Keys)
	if f.HighThroughput {
		def(&f.FIFOCallsPerSecond, defaultHighThroughputCalls)
	}
	if f.DispatchDuration == 0 && f.DispatchBatchDuration == 0 {
		f.DispatchDuration = Duration(defaultDispatchDuration)
	}
	def(&f.DispatchBatchSize, defaultDispatchBatch)
	def(&f.WorkerBatchSize, defaultWorkerBatch)
	if f.WorkerDuration == 0 && f.WorkerBatchDuration == 0 {
		if in.Duration > 0 {
			f.WorkerDuration = in.Duration
		} else {
			f.WorkerDuration = Duration(max(1, int64(in.BatchDuration)/int64(in.BatchSize)))
			notes = append(notes, fmt.Sprintf("a worker's time per message is taken as the batch_duration per record, %v / %d = %v (worker_duration not given)", in.BatchDuration, in.BatchSize, f.WorkerDuration))
		}
	}
	if f.Queue == queueStd && f.WorkerBatchSize > sqsBatchEntries && f.WorkerBatchDuration == 0 {
		notes = append(notes, "an SQS mapping with a BatchSize over 10 needs a MaximumBatchingWindowInSeconds of at least 1 s (API_EventSourceMappingConfiguration); the plan assumes the backlog fills the batch")
	}
	return in, notes, nil
}

// FieldError is a figure out of its range: the field, its value as read, and the range it
// must be in. It wraps ErrInput. Field is an Input's JSON name ("batch_size",
// "fanout.queue", "prices.lambda_gb_second") for Make, and the report's JSON path
// ("mappings[0].load.record_bytes_mean") for FromReport and PredictRuns, so that a caller
// can say where the figure came from.
type FieldError struct {
	Field string
	Value string
	Want  string
}

func (e *FieldError) Error() string {
	return ErrInput.Error() + ": " + e.Field + " " + e.Value + ": " + e.Want
}

func (e *FieldError) Unwrap() error { return ErrInput }

// errField is the error of a field out of its bounds.
func errField(field string, v any, want string) error {
	var text string
	switch v := v.(type) {
	case float64:
		text = strconv.FormatFloat(v, 'g', -1, 64)
	default:
		text = fmt.Sprint(v)
	}
	return &FieldError{Field: field, Value: text, Want: want}
}

// intIn checks 0 (not given) or lo..hi.
func intIn(field string, v, lo, hi int) error {
	if v != 0 && (v < lo || v > hi) {
		return errField(field, v, fmt.Sprintf("want %d to %d (or 0 for the default)", lo, hi))
	}
	return nil
}

// durIn checks 0 (not given) or a positive duration up to hi.
func durIn(field string, d Duration, hi time.Duration) error {
	if d < 0 || time.Duration(d) > hi {
		return errField(field, d, fmt.Sprintf("want 0 to %v", hi))
	}
	return nil
}

// finite checks a float: finite, 0 or within lo..hi.
func finite(field string, v, lo, hi float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v != 0 && (v < lo || v > hi) {
		return errField(field, v, fmt.Sprintf("want a finite number from %g to %g (or 0 for the default)", lo, hi))
	}
	return nil
}

// oneOf checks an enumerated string: empty (the default) or one of want.
func oneOf(field, v string, want ...string) error {
	if v == "" {
		return nil
	}
	for _, w := range want {
		if v == w {
			return nil
		}
	}
	return errField(field, fmt.Sprintf("%q", v), fmt.Sprintf("want one of %q", want))
}

// check returns the first field of in out of its bounds.
func (in Input) check() error {
	if math.IsNaN(in.Rate) || math.IsInf(in.Rate, 0) || in.Rate < minRate || in.Rate > maxRate {
		return errField("rate", in.Rate, fmt.Sprintf("want records per second from %s to %s", rangeNum(minRate), rangeNum(maxRate)))
	}
	if err := in.checkBurst(); err != nil {
		return err
	}
	if err := in.checkKafka(); err != nil {
		return err
	}
	if err := in.checkFunctions(); err != nil {
		return err
	}
	if err := in.checkKeys(); err != nil {
		return err
	}
	if err := in.Fanout.check(); err != nil {
		return err
	}
	return in.Prices.check()
}

func (in Input) checkBurst() error {
	switch {
	case math.IsNaN(in.Burst) || math.IsInf(in.Burst, 0) || in.Burst < 0 || in.Burst > maxRate:
		return errField("burst", in.Burst, fmt.Sprintf("want 0 or a finite rate up to %g", float64(maxRate)))
	case in.Burst > 0 && in.Burst < in.Rate:
		return errField("burst", in.Burst, fmt.Sprintf("want at least the rate, %g (or 0 for none)", in.Rate))
	case in.Burst > 0 && in.BurstFor <= 0:
		return errField("burst_for", in.BurstFor, "want the burst's length, above 0, with a burst")
	case in.Burst == 0 && in.BurstFor != 0:
		return errField("burst_for", in.BurstFor, "want 0 without a burst")
	}
	return durIn("burst_for", in.BurstFor, maxBurstFor)
}

func (in Input) checkKafka() error {
	if in.RecordSize < 0 || in.RecordSize > payloadBytes {
		return errField("record_size", in.RecordSize, fmt.Sprintf("want 1 to %d bytes (the 6 MB payload), or 0 for the default", payloadBytes))
	}
	switch {
	case in.Duration < 0:
		return errField("duration", in.Duration, "want a duration above 0")
	case in.BatchDuration < 0:
		return errField("batch_duration", in.BatchDuration, "want a duration above 0")
	case (in.Duration > 0) == (in.BatchDuration > 0):
		return errField("duration", fmt.Sprintf("%v, batch_duration %v", in.Duration, in.BatchDuration), "want exactly one of duration (per record) and batch_duration (per invocation)")
	}
	if err := durIn("duration", in.Duration, kafkaTimeout); err != nil {
		return err
	}
	if err := durIn("batch_duration", in.BatchDuration, kafkaTimeout); err != nil {
		return err
	}
	if err := intIn("batch_size", in.BatchSize, 1, maxBatchSize); err != nil {
		return err
	}
	if err := durIn("window", in.Window, maxWindow); err != nil {
		return err
	}
	if in.LowLatency && in.Window != 0 {
		return errField("window", in.Window, "want 0 with low_latency (its window is 0)")
	}
	if in.Partitions < 0 || in.Partitions > maxPartitions {
		return errField("partitions", in.Partitions, fmt.Sprintf("want 1 to %d (the planner's bound), or 0 to be told how many", maxPartitions))
	}
	if err := finite("partitions_per_invocation", in.PartitionsPerInvocation, 1, maxPPI); err != nil {
		return err
	}
	if err := oneOf("mode", in.Mode, modeProv, modeOnDem); err != nil {
		return err
	}
	if in.MaximumPollers < 0 || in.MaximumPollers > maxPollers {
		return errField("maximum_pollers", in.MaximumPollers, fmt.Sprintf("want 1 to %d, or 0 for AWS's default of %d", maxPollers, defaultMaximumPollers))
	}
	if in.Mode == modeOnDem && (in.MaximumPollers != 0 || in.PollerGroup) {
		return errField("mode", in.Mode, "maximum_pollers and poller_group are settings of provisioned mode")
	}
	return nil
}

func (in Input) checkKeys() error {
	if err := intIn("key_concurrency", in.KeyConcurrency, 1, maxBatchSize); err != nil {
		return err
	}
	if err := intIn("keys", in.Keys, 1, maxKeys); err != nil {
		return err
	}
	if math.IsNaN(in.KeySkew) || in.KeySkew < 0 || in.KeySkew > maxKeySkew {
		return errField("key_skew", in.KeySkew, fmt.Sprintf("want a Zipf exponent from 0 (every key alike) to %d", maxKeySkew))
	}
	switch {
	case in.KeysInTurn && in.KeySkew != 0:
		return errField("key_skew", in.KeySkew, "want 0 with keys_in_turn (keys sent in turn come equally often)")
	case in.KeyConcurrency == 0 && in.KeySkew != 0:
		return errField("key_skew", in.KeySkew, "describes the keys of the key-concurrent design: give key_concurrency too")
	case in.KeyConcurrency == 0 && in.KeysInTurn:
		return errField("keys_in_turn", in.KeysInTurn, "describes the keys of the key-concurrent design: give key_concurrency too")
	}
	return nil
}

func (in Input) checkFunctions() error {
	if err := intIn("memory", in.Memory, 128, 10_240); err != nil {
		return err
	}
	if err := oneOf("architecture", in.Architecture, archArm, archX86); err != nil {
		return err
	}
	if err := intIn("concurrency", in.Concurrency, 1, maxConcurrency); err != nil {
		return err
	}
	if in.IdempotencyWrites < noWrites || in.IdempotencyWrites > maxWrites {
		return errField("idempotency_writes", in.IdempotencyWrites, fmt.Sprintf("want -1 (none), 0 (the default, 2) or 1 to %d", maxWrites))
	}
	if err := intIn("idempotency_item_size", in.IdempotencyItemSize, 1, maxItemBytes); err != nil {
		return err
	}
	if in.EgressBytes < 0 || in.EgressBytes > maxEgressBytes {
		return errField("egress_bytes", in.EgressBytes, fmt.Sprintf("want 0 to %d bytes per record", maxEgressBytes))
	}
	return nil
}

func (f Fanout) check() error {
	if err := oneOf("fanout.queue", f.Queue, queueFIFO, queueStd); err != nil {
		return err
	}
	std := f.Queue == queueStd
	if std && (f.HighThroughput || f.FIFOCallsPerSecond != 0) {
		return errField("fanout.high_throughput", f.HighThroughput, "high throughput is a mode of FIFO queues")
	}
	if !f.HighThroughput && f.FIFOCallsPerSecond != 0 {
		return errField("fanout.fifo_calls_per_second", f.FIFOCallsPerSecond, "is the quota of high_throughput FIFO queues: set high_throughput")
	}
	if err := intIn("fanout.fifo_calls_per_second", f.FIFOCallsPerSecond, 1, maxHTCallsPerSec); err != nil {
		return err
	}
	if err := intIn("fanout.message_groups", f.MessageGroups, 1, maxGroups); err != nil {
		return err
	}
	if f.DispatchDuration > 0 && f.DispatchBatchDuration > 0 {
		return errField("fanout.dispatch_duration", f.DispatchDuration, "want at most one of dispatch_duration and dispatch_batch_duration")
	}
	if f.WorkerDuration > 0 && f.WorkerBatchDuration > 0 {
		return errField("fanout.worker_duration", f.WorkerDuration, "want at most one of worker_duration and worker_batch_duration")
	}
	for _, d := range []struct {
		name string
		v    Duration
		max  time.Duration
	}{
		{"fanout.dispatch_duration", f.DispatchDuration, kafkaTimeout},
		{"fanout.dispatch_batch_duration", f.DispatchBatchDuration, kafkaTimeout},
		{"fanout.worker_duration", f.WorkerDuration, lambdaTimeout},
		{"fanout.worker_batch_duration", f.WorkerBatchDuration, lambdaTimeout},
	} {
		if err := durIn(d.name, d.v, d.max); err != nil {
			return err
		}
	}
	if err := intIn("fanout.dispatch_batch_size", f.DispatchBatchSize, 1, maxBatchSize); err != nil {
		return err
	}
	maxWorker := sqsBatchEntries
	if std {
		maxWorker = maxBatchSize
	}
	if err := intIn("fanout.worker_batch_size", f.WorkerBatchSize, 1, maxWorker); err != nil {
		return err
	}
	return intIn("fanout.maximum_concurrency", f.MaximumConcurrency, minMaximumConcurrency, maxMaximumConcurrency)
}

func (p Prices) check() error {
	for _, v := range []struct {
		name string
		v    float64
	}{
		{"prices.lambda_gb_second", p.LambdaGBSecond},
		{"prices.lambda_requests_per_million", p.LambdaRequests},
		{"prices.event_poller_unit_hour", p.EventPollerUnitHour},
		{"prices.sqs_standard_per_million", p.SQSStandardRequests},
		{"prices.sqs_fifo_per_million", p.SQSFIFORequests},
		{"prices.dynamodb_write_per_million", p.DynamoDBWriteUnits},
		{"prices.data_transfer_out_per_gb", p.DataTransferOutPerGB},
		{"prices.lmi_instance_hour", p.LMIInstanceHour},
		{"prices.lmi_management_fee", p.LMIManagementFee},
	} {
		if math.IsNaN(v.v) || math.IsInf(v.v, 0) || v.v < 0 || v.v > maxPrice {
			return errField(v.name, v.v, fmt.Sprintf("want a finite price from 0 to %g", float64(maxPrice)))
		}
	}
	return nil
}
