package capacity

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
)

// The ranges of the figures FromReport and PredictRuns read from a klt local report. Each is
// checked before it is used or converted (a mean record size to an int, milliseconds to a
// Duration), so that a huge, negative or non-finite figure is refused naming its field by its
// JSON path ("mappings[0].load.record_bytes_mean"), never wrapped into a figure that looks
// valid. The ranges are the mappings' own (BatchSize 1-10,000, a window of 0-300 s, an
// invocation of at most 14 minutes behind a Kafka mapping and 15 minutes behind an SQS one)
// and the planner's (partitions, rates, concurrency).

// maxRunRecords bounds a run's record counts: a thousand billion, past any klt local run.
const maxRunRecords = 1e12

// reportRange checks a figure of the report: finite and within lo..hi; what names it in the
// error ("a mean record size, bytes").
func reportRange(path string, v, lo, hi float64, what string) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi {
		return errField(path, v, fmt.Sprintf("want %s from %s to %s", what, rangeNum(lo), rangeNum(hi)))
	}
	return nil
}

// reportPositive checks a figure that must be above 0 and at most hi.
func reportPositive(path string, v, hi float64, what string) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || !(v > 0) || v > hi {
		return errField(path, v, fmt.Sprintf("want %s above 0, at most %s", what, rangeNum(hi)))
	}
	return nil
}

// rangeNum writes a bound: whole numbers in full (10000, not 1e+04), others as %g.
func rangeNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// statField is the report's name of the invocation time at stat.
func statField(stat string) string {
	switch stat {
	case StatP50:
		return "invocation_ms_p50"
	case StatP99:
		return "invocation_ms_p99"
	}
	return "invocation_ms_mean"
}

// checkMapping checks the figures of mapping m (at path "mappings[j]") that the plan reads,
// for a mapping of kind and the invocation time at stat.
func checkMapping(m *report.Mapping, path, kind, stat string) error {
	c, l := m.Config, m.Load
	cp, lp := path+".config.", path+".load."
	ms := float64(lambdaTimeout / time.Millisecond)
	checks := []error{
		reportRange(lp+"records_per_invocation", l.RecordsPerInvocation, 1, maxBatchSize, "records per invocation"),
	}
	if kind == report.KindKafka {
		ms = float64(kafkaTimeout / time.Millisecond)
		checks = append(checks,
			reportRange(cp+"batch_size", float64(c.BatchSize), 1, maxBatchSize, "a BatchSize"),
			reportRange(cp+"window_ms", c.WindowMS, 0, float64(maxWindow/time.Millisecond), "a batching window, ms,"),
			reportRange(cp+"partitions", float64(c.Partitions), 1, maxPartitions, "a partition count"),
			reportRange(cp+"pollers", float64(c.Pollers), 1, maxPollers, "pollers"),
			reportRange(lp+"partitions_per_invocation", l.PartitionsPerInvocation, 0, maxPPI, "partitions per invocation"),
			reportRange(lp+"record_bytes_mean", l.RecordBytesMean, 0, payloadBytes, "a mean record size, bytes,"))
	} else {
		batch := maxBatchSize
		if c.Queue == report.QueueFIFO {
			batch = sqsBatchEntries
		}
		var queue error
		if c.Queue != report.QueueFIFO && c.Queue != report.QueueStandard {
			queue = errField(cp+"queue", strconv.Quote(c.Queue), "want fifo or standard")
		}
		var mc error
		if c.MaximumConcurrency != 0 {
			mc = reportRange(cp+"maximum_concurrency", float64(c.MaximumConcurrency), minMaximumConcurrency, maxMaximumConcurrency, "0 (none) or a MaximumConcurrency")
		}
		checks = append(checks, queue,
			reportRange(cp+"batch_size", float64(c.BatchSize), 1, float64(batch), "a BatchSize"),
			mc,
			reportRange(lp+"concurrency_max", float64(l.ConcurrencyMax), 1, maxConcurrency, "concurrent invocations"),
			reportRange(lp+"message_groups", float64(l.MessageGroups), 0, maxGroups, "message groups"))
	}
	checks = append(checks, reportPositive(lp+statField(stat), frStatMS(l, stat), ms, "an invocation's time, ms,"))
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

// pipelinePath is the JSON path of pipeline p of r: "pipelines[0]".
func pipelinePath(r *report.Report, p *report.Pipeline) string {
	for i := range r.Pipelines {
		if &r.Pipelines[i] == p {
			return fmt.Sprintf("pipelines[%d]", i)
		}
	}
	return "pipelines[?]"
}

// checkRun checks the figures of a run PredictRuns reads: the pipeline's records and filtered
// records, and the scenario's production rate (0: all at once).
func checkRun(r *report.Report, p *report.Pipeline) error {
	path := pipelinePath(r, p)
	for _, err := range []error{
		reportRange(path+".records", float64(p.Records), 0, maxRunRecords, "records"),
		reportRange(path+".filtered", float64(p.Filtered), 0, float64(max(0, p.Records)), "filtered records, at most the records,"),
		reportRange(path+".records_per_second", p.RecordsPerSecond, 0, maxRate, "records per second"),
		reportRange("scenario.rate", r.Scenario.Rate, 0, maxRate, "0 (all at once) or a production rate, records per second,"),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}
