package capacity

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
)

// Stats FromReport reads a duration at.
const (
	StatMean = "mean"
	StatP50  = "p50"
	StatP99  = "p99"
)

// FromReport makes an Input from a klt local report: the stack's configuration as the run
// had it (partitions, batch sizes, windows, the SQS mapping's MaximumConcurrency, the local
// concurrency) and the durations it measured per function, taken at stat ("mean", "p50" or
// "p99"). Rate is the measured records per second of the run's direct pipeline (the caller
// may override it). The notes say what was read and what was assumed.
//
// The direct design is read from the Kafka mapping of the report's direct pipeline (one
// function); the fan-out design's dispatcher from the Kafka mapping of its fan-out pipeline
// (two functions) and its workers from that pipeline's SQS mapping. Each invocation time is
// the measured one scaled to a full batch: BatchDuration = invocation time at stat x
// batch_size / records_per_invocation (the plan takes an invocation's time as linear in its
// records). The local concurrency is the most worker invocations that ran at once
// (concurrency_max of the SQS mapping): on this machine the workers share its CPU, and their
// measured invocation times carry that.
func FromReport(r *report.Report, stat string) (in Input, notes []string, err error) {
	if r == nil {
		return Input{}, nil, fmt.Errorf("%w: no report", ErrInput)
	}
	if stat != StatMean && stat != StatP50 && stat != StatP99 {
		return Input{}, nil, fmt.Errorf("%w: stat %q: want mean, p50 or p99", ErrInput, stat)
	}
	direct, fan := reportPipelines(r)
	if direct == nil && fan == nil {
		return Input{}, nil, fmt.Errorf("%w: the report has no load pipeline (run klt local with a load)", ErrInput)
	}
	// from maps each Input field FromReport sets to the report's field it was read from, so
	// that an Input out of the model's bounds is refused naming the report's field.
	from := map[string]string{}
	in.Mode = "provisioned"
	if direct != nil {
		k, path, err := reportMapping(r, direct, 0, report.KindKafka, stat)
		if err != nil {
			return Input{}, nil, err
		}
		frKafkaInput(&in, k, path, stat, from)
		rp := pipelinePath(r, direct) + ".records_per_second"
		if err := reportRange(rp, direct.RecordsPerSecond, minRate, maxRate, "a measured rate, records per second,"); err != nil {
			return Input{}, nil, err
		}
		in.Rate, from["rate"] = direct.RecordsPerSecond, rp
		notes = append(notes, fmt.Sprintf("direct: from %s of pipeline %q: %d invocations, %s ms each at %s for %s records from %s partitions",
			k.Name, direct.Name, k.Load.Invocations, frNum(frStatMS(k.Load, stat)), stat, frNum(k.Load.RecordsPerInvocation), frNum(k.Load.PartitionsPerInvocation)))
	}
	if fan != nil {
		notes2, err := frFanoutInput(&in, r, fan, stat, direct == nil, from)
		if err != nil {
			return Input{}, nil, err
		}
		notes = append(notes, notes2...)
		if direct == nil {
			rp := pipelinePath(r, fan) + ".records_per_second"
			if err := reportRange(rp, fan.RecordsPerSecond, minRate, maxRate, "a measured rate, records per second,"); err != nil {
				return Input{}, nil, err
			}
			in.Rate, from["rate"] = fan.RecordsPerSecond, rp
		}
	}
	// The figures each in their range can still make an Input out of the model's (a time
	// scaled to a full batch past 14 minutes): refused here, naming the report's field.
	if err := in.check(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) && from[fe.Field] != "" {
			return Input{}, nil, &FieldError{Field: from[fe.Field], Value: fe.Value, Want: fe.Want + " (as the plan's " + fe.Field + ")"}
		}
		return Input{}, nil, err
	}
	notes = append(notes, fmt.Sprintf("rate: %s records/s, the measured %s", frNum(in.Rate), frRateSource(direct, fan)),
		fmt.Sprintf("pollers: klt local ran %d poller(s) on the Kafka mapping (MinimumPollers, or the emulator's default of 1), planned as provisioned mode with MaximumPollers %d", in.MaximumPollers, in.MaximumPollers))
	return in, notes, nil
}

// frKafkaInput fills the direct design's Kafka figures from mapping k (at path, checked by
// reportMapping), recording in from where each came from.
func frKafkaInput(in *Input, k *report.Mapping, path, stat string, from map[string]string) {
	c, l := k.Config, k.Load
	in.Partitions, in.BatchSize, in.MaximumPollers = c.Partitions, c.BatchSize, c.Pollers
	in.Window = Duration(math.Round(c.WindowMS * float64(time.Millisecond)))
	in.PartitionsPerInvocation = max(1, l.PartitionsPerInvocation)
	if c.OnePartitionPerInvocation {
		in.PartitionsPerInvocation = 1
	}
	in.RecordSize = max(1, int(math.Round(l.RecordBytesMean)))
	in.BatchDuration = frFullBatch(k, stat)
	for key, field := range map[string]string{"partitions": "config.partitions", "batch_size": "config.batch_size", "maximum_pollers": "config.pollers",
		"window": "config.window_ms", "partitions_per_invocation": "load.partitions_per_invocation", "record_size": "load.record_bytes_mean",
		"batch_duration": "load." + statField(stat)} {
		from[key] = path + "." + field
	}
}

// frFanoutInput fills the fan-out design from pipeline fan's mappings: the dispatcher's Kafka
// mapping first, the workers' SQS mapping last. With alone (no direct pipeline), the
// dispatcher's mapping also gives the Input's Kafka figures.
func frFanoutInput(in *Input, r *report.Report, fan *report.Pipeline, stat string, alone bool, from map[string]string) ([]string, error) {
	k, kp, err := reportMapping(r, fan, 0, report.KindKafka, stat)
	if err != nil {
		return nil, err
	}
	q, qp, err := reportMapping(r, fan, len(fan.Mappings)-1, report.KindSQS, stat)
	if err != nil {
		return nil, err
	}
	var notes []string
	if alone {
		frKafkaInput(in, k, kp, stat, from)
		notes = append(notes, fmt.Sprintf("no direct pipeline: the topic, the window and partitions per invocation are the dispatcher's (%s)", k.Name))
	} else if k.Load.PartitionsPerInvocation != in.PartitionsPerInvocation {
		notes = append(notes, fmt.Sprintf("the dispatcher is planned with the direct mapping's %s partitions per invocation (its own: %s); the plan has one figure for both",
			frNum(in.PartitionsPerInvocation), frNum(k.Load.PartitionsPerInvocation)))
	}
	f := &in.Fanout
	f.DispatchBatchSize = k.Config.BatchSize
	f.DispatchBatchDuration = frFullBatch(k, stat)
	f.WorkerBatchSize, f.MaximumConcurrency, f.Queue = q.Config.BatchSize, q.Config.MaximumConcurrency, q.Config.Queue
	f.WorkerBatchDuration = frFullBatch(q, stat)
	if q.Config.Queue == report.QueueFIFO {
		f.MessageGroups = max(1, q.Load.MessageGroups)
	}
	in.Concurrency = q.Load.ConcurrencyMax
	for key, field := range map[string]string{"fanout.dispatch_batch_size": kp + ".config.batch_size", "fanout.dispatch_batch_duration": kp + ".load." + statField(stat),
		"fanout.worker_batch_size": qp + ".config.batch_size", "fanout.maximum_concurrency": qp + ".config.maximum_concurrency", "fanout.queue": qp + ".config.queue",
		"fanout.worker_batch_duration": qp + ".load." + statField(stat), "fanout.message_groups": qp + ".load.message_groups", "concurrency": qp + ".load.concurrency_max"} {
		from[key] = field
	}
	aws := "no MaximumConcurrency: up to 1,250"
	if q.Config.MaximumConcurrency > 0 {
		aws = fmt.Sprintf("up to %d (MaximumConcurrency)", q.Config.MaximumConcurrency)
	}
	notes = append(notes,
		fmt.Sprintf("fan-out: dispatcher from %s (%s ms per invocation at %s for %s records), workers from %s (%s ms at %s for %s messages)",
			k.Name, frNum(frStatMS(k.Load, stat)), stat, frNum(k.Load.RecordsPerInvocation), q.Name, frNum(frStatMS(q.Load, stat)), stat, frNum(q.Load.RecordsPerInvocation)),
		fmt.Sprintf("local concurrency %d: this machine ran at most %d worker invocations at once, each %s ms on average: they share its CPU with the local servers, which bounds the fan-out here; AWS would run %s, each at the handler's own time",
			in.Concurrency, in.Concurrency, frNum(q.Load.InvocationMsMean), aws))
	return notes, nil
}

// reportPipelines returns the report's first direct (one function) and first fan-out (more)
// load pipelines, nil when it has none.
func reportPipelines(r *report.Report) (direct, fan *report.Pipeline) {
	for i := range r.Pipelines {
		p := &r.Pipelines[i]
		if p.Phase == report.PhaseFaults {
			continue
		}
		if len(p.Functions) == 1 && direct == nil {
			direct = p
		}
		if len(p.Functions) > 1 && fan == nil {
			fan = p
		}
	}
	return direct, fan
}

// reportMapping returns mapping i of pipeline p and its JSON path ("mappings[2]"): it must be
// of kind, have its configuration and load figures with at least one invocation, and each
// figure the plan reads within its range (checkMapping), the invocation time at stat.
func reportMapping(r *report.Report, p *report.Pipeline, i int, kind, stat string) (*report.Mapping, string, error) {
	if i < 0 || i >= len(p.Mappings) {
		return nil, "", fmt.Errorf("%w: pipeline %q names no mapping %d", ErrInput, p.Name, i+1)
	}
	name := p.Mappings[i]
	for j := range r.Mappings {
		m := &r.Mappings[j]
		if m.Name != name {
			continue
		}
		path := fmt.Sprintf("mappings[%d]", j)
		switch {
		case m.Config == nil || m.Load == nil:
			return nil, "", fmt.Errorf("%w: mapping %s has no config or load figures (a report of klt local before they were measured?)", ErrInput, name)
		case m.Config.Kind != kind:
			return nil, "", fmt.Errorf("%w: mapping %s of pipeline %q is a %s mapping, want %s", ErrInput, name, p.Name, m.Config.Kind, kind)
		case m.Load.Invocations <= 0:
			return nil, "", fmt.Errorf("%w: mapping %s made no invocation in the load phases: nothing measured", ErrInput, name)
		}
		if err := checkMapping(m, path, kind, stat); err != nil {
			return nil, "", err
		}
		return m, path, nil
	}
	return nil, "", fmt.Errorf("%w: pipeline %q names mapping %s, which the report does not have", ErrInput, p.Name, name)
}

// frFullBatch is m's invocation time at stat scaled to a full batch: time x batch_size /
// records_per_invocation. checkMapping has bounded each (at most 15 minutes, 10,000 and at
// least 1 record), so the product fits a Duration; Make checks it against the timeout.
func frFullBatch(m *report.Mapping, stat string) Duration {
	ms := frStatMS(m.Load, stat) * float64(m.Config.BatchSize) / m.Load.RecordsPerInvocation
	return Duration(math.Round(ms * float64(time.Millisecond)))
}

// frStatMS is the invocation time at stat, in milliseconds.
func frStatMS(l *report.MappingLoad, stat string) float64 {
	switch stat {
	case StatP50:
		return l.InvocationMsP50
	case StatP99:
		return l.InvocationMsP99
	}
	return l.InvocationMsMean
}

func frRateSource(direct, fan *report.Pipeline) string {
	if direct != nil {
		return "records_per_second of pipeline " + fmt.Sprintf("%q", direct.Name)
	}
	return "records_per_second of pipeline " + fmt.Sprintf("%q", fan.Name)
}

// frNum prints a figure with up to three decimals, without trailing zeros; a figure too
// large or too small for that, with six significant digits (1e+20, 2.5e-07).
func frNum(v float64) string {
	if a := math.Abs(v); a >= 1e15 || a > 0 && a < 1e-3 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	s := fmt.Sprintf("%.3f", v)
	for len(s) > 1 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}
