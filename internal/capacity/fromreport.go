package capacity

import (
	"fmt"
	"math"
	"time"

	"github.com/kafkalambda/toolkit/internal/report"
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
	in.Mode = "provisioned"
	if direct != nil {
		k, err := reportMapping(r, direct, 0, report.KindKafka)
		if err != nil {
			return Input{}, nil, err
		}
		if err := frKafkaInput(&in, k, stat); err != nil {
			return Input{}, nil, err
		}
		in.Rate = direct.RecordsPerSecond
		notes = append(notes, fmt.Sprintf("direct: from %s of pipeline %q: %d invocations, %s ms each at %s for %s records from %s partitions",
			k.Name, direct.Name, k.Load.Invocations, frNum(frStatMS(k.Load, stat)), stat, frNum(k.Load.RecordsPerInvocation), frNum(k.Load.PartitionsPerInvocation)))
	}
	if fan != nil {
		notes2, err := frFanoutInput(&in, r, fan, stat, direct == nil)
		if err != nil {
			return Input{}, nil, err
		}
		notes = append(notes, notes2...)
		if direct == nil {
			in.Rate = fan.RecordsPerSecond
		}
	}
	if !(in.Rate > 0) {
		return Input{}, nil, fmt.Errorf("%w: the report's pipeline measured %v records per second: no rate to plan for", ErrInput, in.Rate)
	}
	notes = append(notes, fmt.Sprintf("rate: %s records/s, the measured %s", frNum(in.Rate), frRateSource(direct, fan)),
		fmt.Sprintf("pollers: klt local ran %d poller(s) on the Kafka mapping (MinimumPollers, or the emulator's default of 1), planned as provisioned mode with MaximumPollers %d", in.MaximumPollers, in.MaximumPollers))
	return in, notes, nil
}

// frKafkaInput fills the direct design's Kafka figures from mapping k.
func frKafkaInput(in *Input, k *report.Mapping, stat string) error {
	c, l := k.Config, k.Load
	in.Partitions, in.BatchSize, in.MaximumPollers = c.Partitions, c.BatchSize, c.Pollers
	in.Window = Duration(time.Duration(c.WindowMS * float64(time.Millisecond)))
	in.PartitionsPerInvocation = max(1, l.PartitionsPerInvocation)
	if c.OnePartitionPerInvocation {
		in.PartitionsPerInvocation = 1
	}
	in.RecordSize = max(1, int(math.Round(l.RecordBytesMean)))
	d, err := frFullBatch(k, stat)
	if err != nil {
		return err
	}
	in.BatchDuration = d
	return nil
}

// frFanoutInput fills the fan-out design from pipeline fan's mappings: the dispatcher's Kafka
// mapping first, the workers' SQS mapping last. With alone (no direct pipeline), the
// dispatcher's mapping also gives the Input's Kafka figures.
func frFanoutInput(in *Input, r *report.Report, fan *report.Pipeline, stat string, alone bool) ([]string, error) {
	k, err := reportMapping(r, fan, 0, report.KindKafka)
	if err != nil {
		return nil, err
	}
	q, err := reportMapping(r, fan, len(fan.Mappings)-1, report.KindSQS)
	if err != nil {
		return nil, err
	}
	var notes []string
	if alone {
		if err := frKafkaInput(in, k, stat); err != nil {
			return nil, err
		}
		notes = append(notes, fmt.Sprintf("no direct pipeline: the topic, the window and partitions per invocation are the dispatcher's (%s)", k.Name))
	} else if k.Load.PartitionsPerInvocation != in.PartitionsPerInvocation {
		notes = append(notes, fmt.Sprintf("the dispatcher is planned with the direct mapping's %s partitions per invocation (its own: %s); the plan has one figure for both",
			frNum(in.PartitionsPerInvocation), frNum(k.Load.PartitionsPerInvocation)))
	}
	f := &in.Fanout
	f.DispatchBatchSize = k.Config.BatchSize
	if f.DispatchBatchDuration, err = frFullBatch(k, stat); err != nil {
		return nil, err
	}
	f.WorkerBatchSize, f.MaximumConcurrency, f.Queue = q.Config.BatchSize, q.Config.MaximumConcurrency, q.Config.Queue
	if f.WorkerBatchDuration, err = frFullBatch(q, stat); err != nil {
		return nil, err
	}
	if q.Config.Queue == report.QueueFIFO {
		f.MessageGroups = max(1, q.Load.MessageGroups)
	}
	in.Concurrency = q.Load.ConcurrencyMax
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

// reportMapping returns mapping i of pipeline p, which must be of kind and have its
// configuration and load figures with at least one invocation.
func reportMapping(r *report.Report, p *report.Pipeline, i int, kind string) (*report.Mapping, error) {
	if i < 0 || i >= len(p.Mappings) {
		return nil, fmt.Errorf("%w: pipeline %q names no mapping %d", ErrInput, p.Name, i+1)
	}
	name := p.Mappings[i]
	for j := range r.Mappings {
		m := &r.Mappings[j]
		if m.Name != name {
			continue
		}
		switch {
		case m.Config == nil || m.Load == nil:
			return nil, fmt.Errorf("%w: mapping %s has no config or load figures (a report of klt local before they were measured?)", ErrInput, name)
		case m.Config.Kind != kind:
			return nil, fmt.Errorf("%w: mapping %s of pipeline %q is a %s mapping, want %s", ErrInput, name, p.Name, m.Config.Kind, kind)
		case m.Load.Invocations == 0 || !(m.Load.RecordsPerInvocation > 0):
			return nil, fmt.Errorf("%w: mapping %s made no invocation in the load phases: nothing measured", ErrInput, name)
		}
		return m, nil
	}
	return nil, fmt.Errorf("%w: pipeline %q names mapping %s, which the report does not have", ErrInput, p.Name, name)
}

// frFullBatch is m's invocation time at stat scaled to a full batch: time x batch_size /
// records_per_invocation.
func frFullBatch(m *report.Mapping, stat string) (Duration, error) {
	ms := frStatMS(m.Load, stat) * float64(m.Config.BatchSize) / m.Load.RecordsPerInvocation
	if !(ms > 0) || math.IsInf(ms, 0) {
		return 0, fmt.Errorf("%w: mapping %s: invocation time %v ms at %s: want > 0", ErrInput, m.Name, frStatMS(m.Load, stat), stat)
	}
	return Duration(time.Duration(ms * float64(time.Millisecond))), nil
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

// frNum prints a figure with up to three decimals, without trailing zeros.
func frNum(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	for len(s) > 1 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}
