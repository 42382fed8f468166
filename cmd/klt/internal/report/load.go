package report

import (
	"fmt"
	"math"
	"strings"
)

// The closed loop: what a run measured of each mapping that `klt plan` needs (the mapping's
// configuration, its invocation times, how full its batches were, how many invocations ran
// at once), and, per load pipeline, the throughput `klt plan` predicts from those
// measurements beside the one measured. The JSON names below are part of report.json's
// contract; each carries its unit.

// MappingConfig is the configuration a mapping ran with: the template's properties, or,
// where the template leaves one out, the emulator's default (which is Lambda's).
type MappingConfig struct {
	// Kind is "kafka" or "sqs".
	Kind string `json:"kind"`
	// BatchSize is the mapping's BatchSize; WindowMS its MaximumBatchingWindowInSeconds, in
	// milliseconds.
	BatchSize int     `json:"batch_size"`
	WindowMS  float64 `json:"window_ms"`
	// Partitions is the Kafka topic's partition count; Pollers the mapping's event pollers
	// (klt local runs one: the emulator's default; ProvisionedPollerConfig is not emulated);
	// OnePartitionPerInvocation is klt local's --one-partition-per-invocation. 0 and false
	// for SQS.
	Partitions                int  `json:"partitions"`
	Pollers                   int  `json:"pollers"`
	OnePartitionPerInvocation bool `json:"one_partition_per_invocation"`
	// MaximumConcurrency is an SQS mapping's ScalingConfig.MaximumConcurrency, 0 when not
	// set (and for Kafka); Queue is "fifo" or "standard" for SQS, "" for Kafka.
	MaximumConcurrency int    `json:"maximum_concurrency"`
	Queue              string `json:"queue"`
}

// Kinds of mapping (MappingConfig.Kind) and of queue (MappingConfig.Queue).
const (
	KindKafka     = "kafka"
	KindSQS       = "sqs"
	QueueFIFO     = "fifo"
	QueueStandard = "standard"
)

// MappingLoad is what a mapping's invocations measured over the run's load phases (the
// fault phase, which waits out timeouts and retries, is left out). An invocation lasts from
// its Delivered event to the last Succeeded or Failed event of its records (for Kafka, the
// commit after the function returned); one that never ended is not counted.
type MappingLoad struct {
	// Seconds is the load phases' time the mapping ran in, summed: each from its first
	// record produced to its last record's fate, or to the mapping's last invocation's end
	// when that came later.
	Seconds float64 `json:"seconds"`
	// Invocations counts the invocations that ended; Unfinished those that did not.
	Invocations int64 `json:"invocations"`
	Unfinished  int64 `json:"unfinished_invocations"`
	// InvocationMs*: percentiles (nearest rank) and mean of the invocations' durations, in
	// milliseconds.
	InvocationMsP50  float64 `json:"invocation_ms_p50"`
	InvocationMsP99  float64 `json:"invocation_ms_p99"`
	InvocationMsMean float64 `json:"invocation_ms_mean"`
	// RecordsPerInvocation is the mean of the records (messages, for SQS) each invocation
	// carried; PartitionsPerInvocation the mean of the distinct partitions each carried
	// (Kafka; 0 for SQS).
	RecordsPerInvocation    float64 `json:"records_per_invocation"`
	PartitionsPerInvocation float64 `json:"partitions_per_invocation"`
	// RecordMs*: per record, an invocation's duration divided by its records: percentiles
	// and mean over the invocations, in milliseconds.
	RecordMsP50  float64 `json:"record_ms_p50"`
	RecordMsP99  float64 `json:"record_ms_p99"`
	RecordMsMean float64 `json:"record_ms_mean"`
	// ConcurrencyMean is the invocations' durations summed, divided by Seconds: the mean
	// number of invocations running; ConcurrencyMax the most that ran at one moment.
	ConcurrencyMean float64 `json:"concurrency_mean"`
	ConcurrencyMax  int     `json:"concurrency_max"`
	// MessageGroups counts the distinct message groups a FIFO queue's mapping delivered (0
	// for Kafka and standard queues).
	MessageGroups int `json:"message_groups"`
	// RecordBytesMean is the mean size, in bytes, of the records a Kafka mapping delivered
	// (key and value as produced); 0 for SQS.
	RecordBytesMean float64 `json:"record_bytes_mean"`
}

// Predicted is the throughput `klt plan` predicts for a pipeline, from the run's own
// measurements (the mappings' Config and Load), beside the measured one.
type Predicted struct {
	// RecordsPerSecond is the prediction for this run: a run of a finite number of records,
	// which waits for its first batch, runs its invocations in whole rounds and ends with its
	// last invocation (Formula says how, with the numbers put in).
	RecordsPerSecond float64 `json:"records_per_second"`
	// SteadyRecordsPerSecond is the plan's max_records_per_second for the design: the rate a
	// long run settles at.
	SteadyRecordsPerSecond float64 `json:"steady_records_per_second"`
	// Bound is what limits the design, in the plan's words.
	Bound string `json:"bound"`
	// Ratio is the measured records_per_second over RecordsPerSecond.
	Ratio float64 `json:"ratio"`
	// Formula is the run's formula with its numbers.
	Formula string `json:"formula"`
	// Command is the `klt plan` command line that makes the same plan from report.json.
	Command string `json:"command"`
	// Notes are what the prediction read and assumed, for a reader to judge it by.
	Notes []string `json:"notes"`
	// Error is set when no prediction could be made, saying why; the figures are then 0.
	Error string `json:"error"`
}

// validate checks a mapping's configuration.
func (c *MappingConfig) validate(name string) error {
	switch c.Kind {
	case KindKafka:
		if c.Partitions < 1 || c.Pollers < 1 || c.Queue != "" || c.MaximumConcurrency != 0 {
			return fmt.Errorf("report: mapping %q: a Kafka mapping's config wants partitions and pollers >= 1, no queue and no maximum concurrency: %+v", name, *c)
		}
	case KindSQS:
		if c.Queue != QueueFIFO && c.Queue != QueueStandard || c.Partitions != 0 || c.Pollers != 0 || c.OnePartitionPerInvocation {
			return fmt.Errorf("report: mapping %q: an SQS mapping's config wants queue fifo or standard and no partitions or pollers: %+v", name, *c)
		}
		if c.MaximumConcurrency != 0 && c.MaximumConcurrency < 2 {
			return fmt.Errorf("report: mapping %q: maximum_concurrency %d, want 0 (none) or >= 2", name, c.MaximumConcurrency)
		}
	default:
		return fmt.Errorf("report: mapping %q: config kind %q, want kafka or sqs", name, c.Kind)
	}
	if c.BatchSize < 1 || !finiteNonNegative(c.WindowMS) {
		return fmt.Errorf("report: mapping %q: batch_size %d and window_ms %v, want >= 1 and a finite value >= 0", name, c.BatchSize, c.WindowMS)
	}
	return nil
}

// validate checks a mapping's load figures against each other and against its counters.
func (l *MappingLoad) validate(m *Mapping) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("report: mapping %q: load: "+format, append([]any{m.Name}, args...)...)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"seconds", l.Seconds}, {"invocation_ms_p50", l.InvocationMsP50}, {"invocation_ms_p99", l.InvocationMsP99},
		{"invocation_ms_mean", l.InvocationMsMean}, {"records_per_invocation", l.RecordsPerInvocation},
		{"partitions_per_invocation", l.PartitionsPerInvocation}, {"record_ms_p50", l.RecordMsP50},
		{"record_ms_p99", l.RecordMsP99}, {"record_ms_mean", l.RecordMsMean}, {"concurrency_mean", l.ConcurrencyMean},
		{"record_bytes_mean", l.RecordBytesMean}} {
		if !finiteNonNegative(f.v) {
			return bad("%s is %v, want a finite value >= 0", f.name, f.v)
		}
	}
	if l.Invocations < 0 || l.Unfinished < 0 || l.ConcurrencyMax < 0 || l.MessageGroups < 0 {
		return bad("a negative count: %+v", *l)
	}
	if l.Invocations+l.Unfinished > m.Invocations {
		return bad("%d invocations measured, more than the mapping's %d", l.Invocations+l.Unfinished, m.Invocations)
	}
	if l.Invocations == 0 {
		if l.ConcurrencyMax != 0 || l.InvocationMsMean != 0 || l.RecordsPerInvocation != 0 {
			return bad("figures without an invocation: %+v", *l)
		}
		return nil
	}
	if l.InvocationMsP50 > l.InvocationMsP99 || l.RecordMsP50 > l.RecordMsP99 {
		return bad("a p50 above its p99 (invocation %v > %v, or record %v > %v ms)", l.InvocationMsP50, l.InvocationMsP99, l.RecordMsP50, l.RecordMsP99)
	}
	if l.RecordsPerInvocation < 1 || l.ConcurrencyMax < 1 {
		return bad("records_per_invocation %v and concurrency_max %d, want >= 1 with invocations", l.RecordsPerInvocation, l.ConcurrencyMax)
	}
	if float64(l.Invocations)*l.RecordsPerInvocation > float64(m.Delivered)*(1+1e-9) {
		return bad("%d invocations of %v records each is more than the %d deliveries", l.Invocations, l.RecordsPerInvocation, m.Delivered)
	}
	if l.ConcurrencyMean > float64(l.ConcurrencyMax)*(1+1e-9) {
		return bad("concurrency_mean %v above concurrency_max %d", l.ConcurrencyMean, l.ConcurrencyMax)
	}
	if m.Config != nil {
		if m.Config.Kind == KindKafka && (l.PartitionsPerInvocation < 1 || l.PartitionsPerInvocation > float64(m.Config.Partitions)) {
			return bad("partitions_per_invocation %v, want 1 to the topic's %d partitions", l.PartitionsPerInvocation, m.Config.Partitions)
		}
		if l.RecordsPerInvocation > float64(m.Config.BatchSize) {
			return bad("records_per_invocation %v above the batch size %d", l.RecordsPerInvocation, m.Config.BatchSize)
		}
	}
	return nil
}

// validate checks a pipeline's prediction.
func (pr *Predicted) validate(p *Pipeline) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("report: pipeline %q: predicted: "+format, append([]any{p.Name}, args...)...)
	}
	if p.Phase == PhaseFaults {
		return bad("a fault phase's throughput is not predicted")
	}
	if pr.Error != "" {
		if pr.RecordsPerSecond != 0 || pr.SteadyRecordsPerSecond != 0 || pr.Ratio != 0 {
			return bad("figures beside the error %q", pr.Error)
		}
		return nil
	}
	if !(pr.RecordsPerSecond > 0) || !(pr.SteadyRecordsPerSecond > 0) || math.IsInf(pr.RecordsPerSecond, 0) || math.IsInf(pr.SteadyRecordsPerSecond, 0) {
		return bad("records_per_second %v and steady_records_per_second %v, want finite values > 0", pr.RecordsPerSecond, pr.SteadyRecordsPerSecond)
	}
	if pr.RecordsPerSecond > pr.SteadyRecordsPerSecond*(1+1e-9) {
		return bad("this run's %v records/s above the steady %v: a finite run cannot outrun the steady rate", pr.RecordsPerSecond, pr.SteadyRecordsPerSecond)
	}
	if want := p.RecordsPerSecond / pr.RecordsPerSecond; math.Abs(pr.Ratio-want) > 1e-9*math.Max(1, want) {
		return bad("ratio %v, but measured %v / predicted %v is %v", pr.Ratio, p.RecordsPerSecond, pr.RecordsPerSecond, want)
	}
	if strings.TrimSpace(pr.Formula) == "" || strings.TrimSpace(pr.Bound) == "" || !strings.HasPrefix(pr.Command, "klt plan ") {
		return bad("a formula, a bound and a klt plan command are needed: %+v", *pr)
	}
	return nil
}

func finiteNonNegative(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }
