package capacity

import (
	"fmt"
	"math"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
)

// A plan's max_records_per_second is the rate a long run settles at. A klt local run is
// finite: its N records are produced at once (or at the scenario's rate λ), and its time is
// not N / max. PredictRuns says what the same plan predicts for the run itself, from the
// plan's stage rates R and the run's measured invocation times:
//
//   - a Kafka stage runs in rounds: its poller fills batches from every partition with
//     records waiting, and a partition is in one invocation at a time, so its invocations
//     start together and the next ones when they end. A round is the plan's C concurrent
//     invocations of a full batch of B records, each taking the plan's batch time Db (the
//     measured invocation time scaled to a full batch): R × Db = C × B records a round, and
//     k = ceil(N / (R × Db)) rounds. (A round lasts as long as its longest invocations, those
//     that hold the most records of one partition: the mean invocation, pulled down by the
//     short ones that carry a partition's last records beside them, would make it too short.)
//   - a batch that is not full waits: it is sent when the batching window has passed since
//     its oldest record arrived. The last round holds rem = N − (k − 1) × R × Db records:
//     with a full batch among them it starts at once (its last, partial batch waits beside
//     the full ones, and is shorter), T_kafka = k × Db; with less than a batch it is that
//     partial batch alone, which starts no earlier than the window and takes Db × rem / B
//     (the plan's time is linear in the records): T_kafka = max((k − 1) × Db, window) + Db ×
//     rem / B. So N < B records take the window and then their batch. (With a produce rate
//     λ the records arrive over N / λ, and the run lasts at least N / λ plus the stages'
//     time for the last record.)
//   - an SQS stage runs continuously: its mapping starts a batch as soon as one is received
//     and a slot is free, and the dispatcher sends while it runs, so the workers start with
//     the first batch (after the window when N < B: w_first) and stay busy until the queue is
//     empty; with D the measured invocation time of the workers: the slots' work is done at N / R on average, and since each slot's last
//     invocation ends at its own time, spread over about one invocation, the last one ends
//     half an invocation later: T_sqs = N / R + D / 2. A standard queue's mapping starts
//     with 5 concurrent batches and adds 5 a second (300 a minute) up to its cap C = R × D /
//     r (r messages a batch), so in t seconds it first does (r/D) × (5t + 2.5t²) messages;
//   - the fan-out pipeline ends when the workers are done, and no earlier than one worker
//     invocation after the dispatcher's last: T = max(T_kafka + D_worker, w_first + T_sqs).
//
// The direct pipeline: T = T_kafka. The prediction is N / T, never above the steady rate
// (T >= N / max).

// RunPrediction is what a plan predicts for one load pipeline of a klt local run, beside
// what the run measured. klt plan --from-report prints them (Plan.Runs).
type RunPrediction struct {
	Pipeline string `json:"pipeline"` // the report's pipeline name
	Design   string `json:"design"`   // "direct" or "fanout"
	// Measured is the run's measured records per second (the report's records_per_second),
	// and Ratio is Measured / RecordsPerSecond.
	Measured float64 `json:"measured_records_per_second"`
	Ratio    float64 `json:"ratio"`
	// RecordsPerSecond is the prediction for the run, N / Seconds.
	RecordsPerSecond float64 `json:"records_per_second"`
	Seconds          float64 `json:"seconds"`
	// Steady and Bound are the plan's max_records_per_second and bound for the design.
	Steady float64 `json:"steady_records_per_second"`
	Bound  string  `json:"bound"`
	// Formula is the run's formula with its numbers put in.
	Formula string   `json:"formula"`
	Notes   []string `json:"notes"`
}

// PredictRuns predicts each load pipeline of r (its first direct and first fan-out
// pipeline, as FromReport reads them) from p, the plan FromReport(r, stat)'s Input made, and
// each other pipeline of one function fed by a Kafka mapping (a klt local --variant, such as
// make demo's consumer with KeyConcurrency=100) from its own mapping's figures.
func PredictRuns(p *Plan, r *report.Report, stat string) ([]RunPrediction, error) {
	if p == nil || r == nil {
		return nil, fmt.Errorf("%w: no plan or no report", ErrInput)
	}
	direct, fan := reportPipelines(r)
	var out []RunPrediction
	if direct != nil {
		pr, err := runPredictDirect(p, r, direct, stat)
		if err != nil {
			return nil, err
		}
		out = append(out, pr)
	}
	if fan != nil {
		pr, err := runPredictFanout(p, r, fan, stat)
		if err != nil {
			return nil, err
		}
		out = append(out, pr)
	}
	for i := range r.Pipelines {
		v := &r.Pipelines[i]
		if v == direct || v.Phase == report.PhaseFaults || len(v.Functions) != 1 || !kafkaFed(r, v) {
			continue
		}
		pr, err := runPredictVariant(p, r, v, stat)
		if err != nil {
			return nil, err
		}
		out = append(out, pr)
	}
	return out, nil
}

// kafkaFed reports whether pipeline p's first mapping is a Kafka mapping of the report: the
// shape of the direct design (a function fed by another source is not planned).
func kafkaFed(r *report.Report, p *report.Pipeline) bool {
	if len(p.Mappings) == 0 {
		return false
	}
	for _, m := range r.Mappings {
		if m.Name == p.Mappings[0] {
			return m.Config != nil && m.Config.Kind == report.KindKafka
		}
	}
	return false
}

// runPredictVariant predicts a one-function pipeline other than the first (a --variant of the
// direct consumer, such as make demo's with KeyConcurrency=100) as the direct design made from
// its own mapping's measured figures: its invocations' time scaled to a full batch, its
// partitions per invocation. The key model is not applied again: the measured times already
// carry the records run at once.
func runPredictVariant(p *Plan, r *report.Report, pipe *report.Pipeline, stat string) (RunPrediction, error) {
	k, path, err := reportMapping(r, pipe, 0, report.KindKafka, stat)
	if err != nil {
		return RunPrediction{}, err
	}
	in := p.Input
	in.Duration, in.Burst, in.BurstFor, in.LowLatency = 0, 0, 0, false
	in.KeyConcurrency, in.KeySkew, in.KeysInTurn = 0, 0, false
	frKafkaInput(&in, k, path, stat, map[string]string{})
	if rate := pipe.RecordsPerSecond; rate >= minRate && rate <= maxRate {
		in.Rate = rate
	}
	sub, err := Make(in)
	if err != nil {
		return RunPrediction{}, fmt.Errorf("pipeline %q (%s): %w", pipe.Name, path, err)
	}
	pr, err := runPredictDirect(sub, r, pipe, stat)
	if err != nil {
		return RunPrediction{}, err
	}
	pr.Notes = append(pr.Notes, fmt.Sprintf("planned as the direct design from its own mapping %s: %s ms per invocation at %s for %s records from %s partitions (the measured times carry what the function runs at once)",
		k.Name, frNum(frStatMS(k.Load, stat)), stat, frNum(k.Load.RecordsPerInvocation), frNum(k.Load.PartitionsPerInvocation)))
	return pr, nil
}

// runRecords is the records of pipeline p a run's stages carried: those not filtered. It
// checks the run's figures first (checkRun).
func runRecords(r *report.Report, p *report.Pipeline) (float64, error) {
	if err := checkRun(r, p); err != nil {
		return 0, err
	}
	n := float64(p.Records - p.Filtered)
	if !(n > 0) {
		return 0, fmt.Errorf("%w: pipeline %q carried no record", ErrInput, p.Name)
	}
	return n, nil
}

// runKafka is a Kafka stage's time for n records at rate (the stage's records/s), d seconds
// for a full batch of b records, and window (s).
func runKafka(n, rate, d float64, b int, window float64) (float64, string) {
	perRound := rate * d
	k := math.Ceil(n/perRound - 1e-9)
	rem := n - (k-1)*perRound
	if rem >= float64(b)-1e-9 {
		t := k * d
		return t, fmt.Sprintf("k = ceil(%s / (%s/s x %s s)) = %s rounds of %s s = %s s", frNum(n), frNum(rate), frNum(d), frNum(k), frNum(d), frNum(t))
	}
	t := math.Max((k-1)*d, window) + d*rem/float64(b)
	return t, fmt.Sprintf("k = ceil(%s / (%s/s x %s s)) = %s rounds, the last a partial batch of %s records after the %s s window: max(%s x %s, %s) + %s x %s / %d = %s s",
		frNum(n), frNum(rate), frNum(d), frNum(k), frNum(rem), frNum(window), frNum(k-1), frNum(d), frNum(window), frNum(d), frNum(rem), b, frNum(t))
}

func runPredictDirect(p *Plan, r *report.Report, pipe *report.Pipeline, stat string) (RunPrediction, error) {
	k, _, err := reportMapping(r, pipe, 0, report.KindKafka, stat)
	if err != nil {
		return RunPrediction{}, err
	}
	n, err := runRecords(r, pipe)
	if err != nil {
		return RunPrediction{}, err
	}
	R := p.Direct.MaxRecordsPerSecond
	if !(R > 0) {
		return RunPrediction{}, fmt.Errorf("capacity: the plan's direct design reaches %v records/s: nothing to predict the run from (%s)", R, p.Direct.Bound)
	}
	d := time.Duration(frFullBatch(k, stat)).Seconds()
	t, tf := runKafka(n, R, d, k.Config.BatchSize, k.Config.WindowMS/1000)
	formula := fmt.Sprintf("N / T_kafka = %s / %s ; T_kafka: %s", frNum(n), frNum(t), tf)
	return runFinishRun(pipe, "direct", p.Direct, n, t, r.Scenario.Rate, d, formula), nil
}

func runPredictFanout(p *Plan, r *report.Report, pipe *report.Pipeline, stat string) (RunPrediction, error) {
	k, _, err := reportMapping(r, pipe, 0, report.KindKafka, stat)
	if err != nil {
		return RunPrediction{}, err
	}
	q, _, err := reportMapping(r, pipe, len(pipe.Mappings)-1, report.KindSQS, stat)
	if err != nil {
		return RunPrediction{}, err
	}
	n, err := runRecords(r, pipe)
	if err != nil {
		return RunPrediction{}, err
	}
	rk, rq, rw := runStageRate(p.Fanout, "dispatcher"), runStageRate(p.Fanout, "queue"), runStageRate(p.Fanout, "workers")
	if !(rk > 0) || !(rw > 0) {
		return RunPrediction{}, fmt.Errorf("capacity: the plan's fan-out has no dispatcher or workers stage reaching a rate (%v, %v records/s; %s)", rk, rw, p.Fanout.Bound)
	}
	dk, dw := time.Duration(frFullBatch(k, stat)).Seconds(), frStatMS(q.Load, stat)/1000
	window := k.Config.WindowMS / 1000
	tk, rkf := runKafka(n, rk, dk, k.Config.BatchSize, window)
	ts, rsf := runContinuous(n, rw, rq, dw, q.Load.RecordsPerInvocation, q.Config.Queue == report.QueueStandard)
	wf := 0.0
	if n < float64(k.Config.BatchSize) {
		wf = window
	}
	t := math.Max(tk+dw, wf+ts)
	formula := fmt.Sprintf("N / max(T_kafka + D_worker, w_first + T_sqs) = %s / max(%s + %s, %s + %s) ; T_kafka (dispatcher): %s ; T_sqs (workers): %s",
		frNum(n), frNum(tk), frNum(dw), frNum(wf), frNum(ts), rkf, rsf)
	return runFinishRun(pipe, "fanout", p.Fanout, n, t, r.Scenario.Rate, dk+dw, formula), nil
}

// runContinuous is an SQS stage's time for n messages at the workers' rate rw (the queue's rq
// when lower, 0 for none), with the standard queue's ramp when standard: D is an
// invocation's time and r its messages.
func runContinuous(n, rw, rq, d, r float64, standard bool) (float64, string) {
	rate := rw
	if rq > 0 && rq < rw {
		rate = rq
	}
	c := rw * d / r // the workers' concurrency the plan's rate stands for
	if !standard || c <= 5 || rate < rw {
		t := n/rate + d/2
		return t, fmt.Sprintf("%s / %s/s + %s s / 2 = %s s", frNum(n), frNum(rate), frNum(d), frNum(t))
	}
	per := r / d // records a second one invocation slot does
	tr := (c - 5) / 5
	nr := per * (5*tr + 2.5*tr*tr)
	var t float64
	if n <= nr {
		t = (-5 + math.Sqrt(25+10*n/per)) / 5
	} else {
		t = tr + (n-nr)/rate
	}
	t += d / 2
	return t, fmt.Sprintf("a standard queue's ramp from 5 concurrent batches, +5/s up to %s, %s records/s a batch, + %s s / 2: %s s", frNum(c), frNum(per), frNum(d), frNum(t))
}

// runStageRate is the max_records_per_second of the design's stage named name; 0 when absent,
// which the callers refuse (queue: no limit).
func runStageRate(d Design, name string) float64 {
	for _, s := range d.Stages {
		if s.Name == name {
			return s.MaxRecordsPerSecond
		}
	}
	return 0
}

// runFinishRun makes the prediction of t seconds for n records: with a produce rate, the run
// lasts at least the production and the stages' time for its last record (last); never
// shorter than n / the design's steady rate.
func runFinishRun(pipe *report.Pipeline, design string, d Design, n, t, rate, last float64, formula string) RunPrediction {
	pr := RunPrediction{Pipeline: pipe.Name, Design: design, Steady: d.MaxRecordsPerSecond, Bound: d.Bound}
	if rate > 0 && n/rate+last > t {
		t = n/rate + last
		pr.Notes = append(pr.Notes, fmt.Sprintf("the production at %s records/s bounds the run: T = N / rate + %s s", frNum(rate), frNum(last)))
	}
	if steady := n / d.MaxRecordsPerSecond; t < steady {
		t = steady
		pr.Notes = append(pr.Notes, "the steady rate bounds the run: T = N / max")
	}
	pr.Seconds, pr.RecordsPerSecond = t, n/t
	pr.Measured, pr.Ratio = pipe.RecordsPerSecond, pipe.RecordsPerSecond/pr.RecordsPerSecond
	pr.Formula = formula + fmt.Sprintf(" ; = %s records/s (steady: %s)", frNum(pr.RecordsPerSecond), frNum(d.MaxRecordsPerSecond))
	return pr
}
