package capacity

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
)

// frDemoReport is a klt local report of make demo's stack, with the figures a run of 150
// records direct and 1,000 through the fan-out measured (rounded): the direct mapping made 3
// invocations of 50 records from 2 partitions in 8 s each; the dispatcher 2 of 500 in 0.5 s;
// the workers 100 of 10 messages in 4 s, at most 50 at once over 1,000 message groups.
func frDemoReport() *report.Report {
	kafka := func(name, fn string, batch int, load report.MappingLoad) report.Mapping {
		return report.Mapping{Name: name, Function: fn, Source: "orders", In: 1000, Delivered: 1000, Succeeded: 1000, Invocations: load.Invocations,
			Config: &report.MappingConfig{Kind: report.KindKafka, BatchSize: batch, WindowMS: 1000, Partitions: 5, Pollers: 1}, Load: &load}
	}
	return &report.Report{
		Tool: "klt local",
		Pipelines: []report.Pipeline{
			{Name: "direct", Functions: []string{"ConsumerFunction"}, Mappings: []string{"Consumer"}, Phase: report.PhaseLoad,
				Records: 150, Seconds: 17, RecordsPerSecond: 150.0 / 17},
			{Name: "fan-out", Functions: []string{"DispatcherFunction", "WorkerFunction"}, Mappings: []string{"Dispatcher", "Work"}, Phase: report.PhaseLoad,
				Records: 1000, Seconds: 10, RecordsPerSecond: 100},
			{Name: "direct, with faults", Functions: []string{"ConsumerFunction"}, Mappings: []string{"Consumer"}, Phase: report.PhaseFaults,
				Records: 60, Seconds: 40, RecordsPerSecond: 1.5},
		},
		Mappings: []report.Mapping{
			kafka("Consumer", "ConsumerFunction", 100, report.MappingLoad{Seconds: 17, Invocations: 3, InvocationMsP50: 9000, InvocationMsP99: 9500,
				InvocationMsMean: 8000, RecordsPerInvocation: 50, PartitionsPerInvocation: 2, ConcurrencyMax: 2, RecordBytesMean: 90.4}),
			kafka("Dispatcher", "DispatcherFunction", 500, report.MappingLoad{Seconds: 10, Invocations: 2, InvocationMsP50: 400, InvocationMsP99: 600,
				InvocationMsMean: 500, RecordsPerInvocation: 500, PartitionsPerInvocation: 5, ConcurrencyMax: 1, RecordBytesMean: 91}),
			{Name: "Work", Function: "WorkerFunction", Source: "WorkQueue", In: 1000, Delivered: 1000, Succeeded: 1000, Invocations: 100,
				Config: &report.MappingConfig{Kind: report.KindSQS, BatchSize: 10, MaximumConcurrency: 50, Queue: report.QueueFIFO},
				Load: &report.MappingLoad{Seconds: 10, Invocations: 100, InvocationMsP50: 3800, InvocationMsP99: 6000, InvocationMsMean: 4000,
					RecordsPerInvocation: 10, ConcurrencyMean: 40, ConcurrencyMax: 50, MessageGroups: 1000}},
		},
	}
}

func frMS(n float64) Duration { return Duration(time.Duration(n * float64(time.Millisecond))) }

// FromReport reads the direct design from the direct pipeline's Kafka mapping, the fan-out's
// dispatcher and workers from the fan-out pipeline's mappings, each invocation time scaled
// to a full batch, and the local concurrency from the workers.
func TestFromReport(t *testing.T) {
	for _, tc := range []struct {
		stat                    string
		batch, dispatch, worker Duration
	}{
		// 8,000 ms x 100 / 50 records; 500 ms x 500 / 500; 4,000 ms x 10 / 10.
		{StatMean, frMS(16000), frMS(500), frMS(4000)},
		{StatP50, frMS(18000), frMS(400), frMS(3800)},
		{StatP99, frMS(19000), frMS(600), frMS(6000)},
	} {
		in, notes, err := FromReport(frDemoReport(), tc.stat)
		if err != nil {
			t.Fatal(err)
		}
		want := Input{Rate: 150.0 / 17, RecordSize: 90, BatchDuration: tc.batch, BatchSize: 100, Window: frMS(1000), Partitions: 5,
			PartitionsPerInvocation: 2, Mode: "provisioned", MaximumPollers: 1, Concurrency: 50,
			Fanout: Fanout{Queue: "fifo", MessageGroups: 1000, DispatchBatchDuration: tc.dispatch, DispatchBatchSize: 500,
				WorkerBatchDuration: tc.worker, WorkerBatchSize: 10, MaximumConcurrency: 50}}
		if in != want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.stat, in, want)
		}
		text := strings.Join(notes, "\n")
		for _, w := range []string{"this machine ran at most 50 worker invocations at once", "AWS would run up to 50 (MaximumConcurrency)",
			"klt local ran 1 poller(s)", "the dispatcher is planned with the direct mapping's 2 partitions per invocation (its own: 5)"} {
			if !strings.Contains(text, w) {
				t.Errorf("%s: the notes lack %q:\n%s", tc.stat, w, text)
			}
		}
	}
}

// FromReport fails, wrapping ErrInput, on what it cannot plan from.
func TestFromReportRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, stat, want string
		edit             func(r *report.Report)
	}{
		{"stat", "p90", "stat", func(*report.Report) {}},
		{"no load pipeline", StatMean, "no load pipeline", func(r *report.Report) { r.Pipelines = r.Pipelines[2:] }},
		{"no load figures", StatMean, "no config or load", func(r *report.Report) { r.Mappings[0].Load = nil }},
		{"no invocation", StatMean, "no invocation", func(r *report.Report) { r.Mappings[2].Load = &report.MappingLoad{} }},
		{"wrong kind", StatMean, "want sqs", func(r *report.Report) { r.Pipelines[1].Mappings = []string{"Dispatcher", "Consumer"} }},
		{"unknown mapping", StatMean, "does not have", func(r *report.Report) { r.Pipelines[0].Mappings = []string{"Nope"} }},
		{"no rate", StatMean, "pipelines[0].records_per_second 0: want a measured rate", func(r *report.Report) { r.Pipelines[0].RecordsPerSecond = 0 }},
	} {
		r := frDemoReport()
		tc.edit(r)
		_, _, err := FromReport(r, tc.stat)
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInput saying %q", tc.name, err, tc.want)
		}
	}
}

// frDemoPlan is a plan with the stage rates Make gives frDemoReport's Input: direct 2
// invocations at once x 100 records / 16 s = 12.5 records/s; dispatcher 2 x 500 / 0.5 s =
// 2,000; a FIFO queue 3,000; workers 50 x 10 / 4 s = 125.
func frDemoPlan() *Plan {
	return &Plan{
		Direct: Design{Name: "direct", MaxRecordsPerSecond: 12.5, Bound: "partitions", Stages: []Stage{{Name: "function", MaxRecordsPerSecond: 12.5}}},
		Fanout: Design{Name: "fanout", MaxRecordsPerSecond: 125, Bound: "workers", Stages: []Stage{
			{Name: "dispatcher", MaxRecordsPerSecond: 2000}, {Name: "queue", MaxRecordsPerSecond: 3000}, {Name: "workers", MaxRecordsPerSecond: 125}}},
	}
}

// PredictRuns predicts the finite run, by hand:
//
//   - direct: N 150, R 12.5/s, a full batch's Db = 8 s x 100 / 50 = 16 s: a round carries
//     12.5 x 16 = 200 records (2 invocations of 100), so k = ceil(150 / 200) = 1 round, which
//     holds a full batch: T = 16 s, 9.375 records/s;
//   - fan-out: dispatcher k = ceil(1,000 / (2,000 x 0.5)) = 1, 1,000 fills batches of 500:
//     T_kafka = max(0, 0) + 0.5 = 0.5 s; workers T_sqs = 1,000 / 125 + 4 / 2 = 10 s;
//     T = max(0.5 + 4, 0 + 10) = 10 s, 100 records/s.
func TestPredictRuns(t *testing.T) {
	runs, err := PredictRuns(frDemoPlan(), frDemoReport(), StatMean)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("runs: %+v", runs)
	}
	for i, want := range []RunPrediction{
		{Pipeline: "direct", Design: "direct", Seconds: 16, RecordsPerSecond: 9.375, Steady: 12.5, Bound: "partitions"},
		{Pipeline: "fan-out", Design: "fanout", Seconds: 10, RecordsPerSecond: 100, Steady: 125, Bound: "workers"},
	} {
		got := runs[i]
		if got.Pipeline != want.Pipeline || got.Design != want.Design || !frClose(got.Seconds, want.Seconds) || !frClose(got.RecordsPerSecond, want.RecordsPerSecond) ||
			got.Steady != want.Steady || got.Bound != want.Bound || got.Formula == "" {
			t.Errorf("run %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
	if f := runs[0].Formula; !strings.Contains(f, "1 rounds of 16 s") {
		t.Errorf("the direct formula does not say its rounds: %s", f)
	}

	// 50 records do not fill a batch of 100: they wait the 1 s window, then take 16 x 50 /
	// 100 = 8 s.
	r := frDemoReport()
	r.Pipelines[0].Records = 50
	runs, err = PredictRuns(frDemoPlan(), r, StatMean)
	if err != nil {
		t.Fatal(err)
	}
	if !frClose(runs[0].Seconds, 9) || !strings.Contains(runs[0].Formula, "after the 1 s window") {
		t.Errorf("a partial batch: %+v, want 9 s", runs[0])
	}
}

// A standard queue's workers ramp: 5 concurrent batches, 5 more a second. Workers at 500
// records/s, 1 s and 10 messages a batch stand for 50 batches at once, reached after 9 s,
// when 10 x (5 x 9 + 2.5 x 81) = 2,475 messages are done; 1,000 messages take t with
// 2.5t² + 5t = 100: t = (-5 + sqrt(25 + 1,000)) / 5 = 5.403 s, and the last invocation half a
// second more. A run faster than the steady rate is held to it; a production rate bounds it.
func TestPredictRunsRampAndBounds(t *testing.T) {
	r := frDemoReport()
	r.Pipelines = r.Pipelines[1:2]
	r.Mappings[2].Config.Queue = report.QueueStandard
	r.Mappings[2].Load.InvocationMsMean = 1000
	p := frDemoPlan()
	p.Fanout.MaxRecordsPerSecond, p.Fanout.Stages[2].MaxRecordsPerSecond = 500, 500
	runs, err := PredictRuns(p, r, StatMean)
	if err != nil {
		t.Fatal(err)
	}
	if want := (-5+math.Sqrt(1025))/5 + 0.5; len(runs) != 1 || !frClose(runs[0].Seconds, want) || !strings.Contains(runs[0].Formula, "ramp") {
		t.Errorf("ramp: %+v, want %v s", runs, want)
	}

	r = frDemoReport()
	r.Scenario.Rate = 5 // 150 records over 30 s, then a batch's 16 s
	runs, err = PredictRuns(frDemoPlan(), r, StatMean)
	if err != nil {
		t.Fatal(err)
	}
	if !frClose(runs[0].Seconds, 46) || len(runs[0].Notes) != 1 {
		t.Errorf("production bound: %+v, want 46 s", runs[0])
	}

	p = frDemoPlan()
	p.Fanout.MaxRecordsPerSecond = 50 // a bound below its stages': 1,000 / 50 = 20 s, not the stages' 10
	runs, err = PredictRuns(p, frDemoReport(), StatMean)
	if err != nil {
		t.Fatal(err)
	}
	if !frClose(runs[1].Seconds, 20) || runs[1].RecordsPerSecond > 50 || len(runs[1].Notes) != 1 {
		t.Errorf("steady bound: %+v, want 20 s", runs[1])
	}

	p = frDemoPlan()
	p.Fanout.Stages = nil
	if _, err := PredictRuns(p, frDemoReport(), StatMean); err == nil || !strings.Contains(err.Error(), "no dispatcher or workers stage") {
		t.Errorf("a plan without stages: %v", err)
	}
}

func frClose(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

// TestPredictRunsVariant: a second one-function load pipeline (make demo's consumer with
// KeyConcurrency=100, a --variant) is predicted from its own mapping. Its 5 invocations of 100
// records from 2 partitions took 1.5 s each: floor(5 / 2) = 2 at once, 2 × 100 / 1.5 = 133.3
// records/s steady; 500 records are ceil(500 / (133.3 × 1.5)) = 3 rounds, the last of 100
// records, a full batch: 3 × 1.5 = 4.5 s, 111.1 records/s.
func TestPredictRunsVariant(t *testing.T) {
	r := frDemoReport()
	r.Pipelines = append(r.Pipelines, report.Pipeline{Name: "direct, KeyConcurrency=100", Functions: []string{"KeyConcurrentConsumer"},
		Mappings: []string{"KeyConcurrentConsumerMapping"}, Phase: report.PhaseLoad, Records: 500, Seconds: 5, RecordsPerSecond: 100})
	r.Mappings = append(r.Mappings, report.Mapping{Name: "KeyConcurrentConsumerMapping", Function: "KeyConcurrentConsumer", Source: "orders", In: 500, Delivered: 500, Succeeded: 500, Invocations: 5,
		Config: &report.MappingConfig{Kind: report.KindKafka, BatchSize: 100, WindowMS: 1000, Partitions: 5, Pollers: 1},
		Load: &report.MappingLoad{Seconds: 5, Invocations: 5, InvocationMsP50: 1500, InvocationMsP99: 1600, InvocationMsMean: 1500,
			RecordsPerInvocation: 100, PartitionsPerInvocation: 2, ConcurrencyMax: 2, RecordBytesMean: 90.4}})
	runs, err := PredictRuns(frDemoPlan(), r, StatMean)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("runs: %+v", runs)
	}
	v := runs[2]
	if v.Pipeline != "direct, KeyConcurrency=100" || !frClose(v.Steady, 200/1.5) || !frClose(v.Seconds, 4.5) || !frClose(v.RecordsPerSecond, 500/4.5) || !frClose(v.Ratio, 0.9) {
		t.Errorf("variant: %+v; want steady 133.3, 4.5 s, 111.1 records/s, ratio 0.9", v)
	}
}
