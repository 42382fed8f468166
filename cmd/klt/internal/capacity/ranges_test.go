package capacity

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
)

// TestFromReportRanges: every figure FromReport and PredictRuns read from a report is checked
// against its range before it is converted (a float to an int, milliseconds to a Duration),
// and the error names the report's field, by its JSON path, and its value. On a report's
// huge, negative or non-finite figure nothing is planned: no 1-byte records from an
// overflowed conversion, no negative duration blamed on an input the report did not have.
func TestFromReportRanges(t *testing.T) {
	for _, tc := range []struct {
		path string // the field the error must name
		edit func(r *report.Report)
	}{
		{"mappings[0].load.record_bytes_mean", func(r *report.Report) { r.Mappings[0].Load.RecordBytesMean = 9.3e18 }},
		{"mappings[0].load.record_bytes_mean", func(r *report.Report) { r.Mappings[0].Load.RecordBytesMean = 1e300 }},
		{"mappings[0].load.record_bytes_mean", func(r *report.Report) { r.Mappings[0].Load.RecordBytesMean = math.NaN() }},
		{"mappings[0].load.record_bytes_mean", func(r *report.Report) { r.Mappings[0].Load.RecordBytesMean = -1 }},
		{"mappings[0].config.window_ms", func(r *report.Report) { r.Mappings[0].Config.WindowMS = 1e300 }},
		{"mappings[0].config.window_ms", func(r *report.Report) { r.Mappings[0].Config.WindowMS = math.Inf(1) }},
		{"mappings[0].config.window_ms", func(r *report.Report) { r.Mappings[0].Config.WindowMS = -5 }},
		{"mappings[0].load.invocation_ms_mean", func(r *report.Report) { r.Mappings[0].Load.InvocationMsMean = 1e13 }},
		{"mappings[0].load.invocation_ms_mean", func(r *report.Report) { r.Mappings[0].Load.InvocationMsMean = math.NaN() }},
		{"mappings[0].config.batch_size", func(r *report.Report) { r.Mappings[0].Config.BatchSize = -100 }},
		{"mappings[0].config.batch_size", func(r *report.Report) { r.Mappings[0].Config.BatchSize = 1 << 40 }},
		{"mappings[0].config.partitions", func(r *report.Report) { r.Mappings[0].Config.Partitions = 1 << 40 }},
		{"mappings[0].config.pollers", func(r *report.Report) { r.Mappings[0].Config.Pollers = 5000 }},
		{"mappings[0].load.records_per_invocation", func(r *report.Report) { r.Mappings[0].Load.RecordsPerInvocation = 1e308 }},
		{"mappings[0].load.partitions_per_invocation", func(r *report.Report) { r.Mappings[0].Load.PartitionsPerInvocation = math.Inf(1) }},
		{"mappings[1].load.invocation_ms_mean", func(r *report.Report) { r.Mappings[1].Load.InvocationMsMean = 1e13 }},
		{"mappings[2].config.batch_size", func(r *report.Report) { r.Mappings[2].Config.BatchSize = -100 }},
		{"mappings[2].config.maximum_concurrency", func(r *report.Report) { r.Mappings[2].Config.MaximumConcurrency = 1 << 40 }},
		{"mappings[2].load.invocation_ms_mean", func(r *report.Report) { r.Mappings[2].Load.InvocationMsMean = 1e300 }},
		{"mappings[2].load.concurrency_max", func(r *report.Report) { r.Mappings[2].Load.ConcurrencyMax = -3 }},
		{"mappings[2].load.message_groups", func(r *report.Report) { r.Mappings[2].Load.MessageGroups = -3 }},
		{"pipelines[0].records_per_second", func(r *report.Report) { r.Pipelines[0].RecordsPerSecond = 1e300 }},
		{"pipelines[0].records_per_second", func(r *report.Report) { r.Pipelines[0].RecordsPerSecond = math.Inf(1) }},
	} {
		r := frDemoReport()
		tc.edit(r)
		in, _, err := FromReport(r, StatMean)
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), ": "+tc.path+" ") {
			t.Errorf("%s: FromReport = %+v, %v; want ErrInput naming %s", tc.path, in, err, tc.path)
		}
	}
	// PredictRuns reads the run's records and production rate.
	for _, tc := range []struct {
		path string
		edit func(r *report.Report)
	}{
		{"scenario.rate", func(r *report.Report) { r.Scenario.Rate = math.NaN() }},
		{"scenario.rate", func(r *report.Report) { r.Scenario.Rate = -1 }},
		{"pipelines[0].records", func(r *report.Report) { r.Pipelines[0].Records = -1 }},
		{"pipelines[0].filtered", func(r *report.Report) { r.Pipelines[0].Filtered = math.MinInt64 }},
	} {
		r := frDemoReport()
		tc.edit(r)
		if _, err := PredictRuns(frDemoPlan(), r, StatMean); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), ": "+tc.path+" ") {
			t.Errorf("%s: PredictRuns: %v; want ErrInput naming %s", tc.path, err, tc.path)
		}
	}
}

// TestRangesBeforeUse: a rate too small to plan for is refused (its plan printed a
// 300-digit number), and MaximumPollers defaults to AWS's 200 (API_ProvisionedPollerConfig:
// "For Amazon MSK and self-managed Apache Kafka event source mappings, the accepted range is
// between 1 and 2,000, with a default of 200").
func TestRangesBeforeUse(t *testing.T) {
	for _, r := range []float64{1e-300, 1e-7, math.SmallestNonzeroFloat64} {
		if _, err := Make(Input{Rate: r, Duration: ms(1)}); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), ": rate ") {
			t.Errorf("rate %v: %v, want ErrInput naming rate", r, err)
		}
	}
	if p := mustMake(t, Input{Rate: 1, Duration: ms(1)}); p.Input.MaximumPollers != 200 {
		t.Errorf("maximum_pollers defaults to %d, want AWS's 200", p.Input.MaximumPollers)
	}
	// 300 pollers needed over AWS's default of 200: the design does not reach the target until
	// MaximumPollers is raised, and the plan says so.
	p := mustMake(t, Input{Rate: 1_500_000, RecordSize: 100, Duration: ms(1), Concurrency: 10_000})
	if p.Direct.ReachesTarget || p.Direct.PollersNeeded <= 200 || !hasLift(p.Direct, "maximum_pollers") {
		t.Errorf("direct: reaches %v, %d pollers needed, lifts %+v; want not reached with MaximumPollers 200, lifted by maximum_pollers",
			p.Direct.ReachesTarget, p.Direct.PollersNeeded, planJSONMap(t, p)["direct"].(map[string]any)["lifts"])
	}
}

// planJSONMap is the plan as its JSON reads, generic.
func planJSONMap(t *testing.T, p *Plan) map[string]any {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// hasLift reports whether the design's JSON names a lift of field.
func hasLift(d Design, field string) bool {
	b, _ := json.Marshal(d)
	var m struct {
		Lifts []struct {
			Field string `json:"field"`
		} `json:"lifts"`
	}
	_ = json.Unmarshal(b, &m)
	for _, l := range m.Lifts {
		if l.Field == field {
			return true
		}
	}
	return false
}

// TestUnreachedDesigns: a design that does not reach the target has no cost and no
// recommendation (null in JSON, not 0), whatever bounds it; "cheaper" names only a design
// that reaches the target; a design bound by its queue says what lifts the bound.
func TestUnreachedDesigns(t *testing.T) {
	for _, tc := range []struct {
		name           string
		in             Input
		direct, fanout bool   // whether each reaches the target
		cheaper        string // Plan.Cheaper
		lifts          map[string][]string
	}{
		{"the talk's example: direct bound by 5 partitions", Input{Rate: 100, Partitions: 5, Duration: ms(300), Fanout: Fanout{MaximumConcurrency: 300}},
			false, true, "fanout", map[string][]string{"direct": {"partitions"}}},
		{"a FIFO queue bounds the fan-out", Input{Rate: 5000, Duration: ms(10)},
			true, false, "direct", map[string][]string{"fanout": {"fanout.queue", "fanout.high_throughput"}}},
		{"a high-throughput FIFO queue at its default quota", Input{Rate: 30000, Duration: ms(1), Fanout: Fanout{HighThroughput: true, MessageGroups: 100_000}},
			true, false, "direct", map[string][]string{"fanout": {"fanout.queue", "fanout.fifo_calls_per_second"}}},
		{"message groups bound the workers", Input{Rate: 1000, Duration: ms(100), Fanout: Fanout{MessageGroups: 10}},
			true, false, "direct", map[string][]string{"fanout": {"fanout.message_groups", "fanout.queue"}}},
		{"neither: 8 partitions and a FIFO queue", Input{Rate: 20000, BatchSize: 20, BatchDuration: ms(50), Partitions: 8},
			false, false, "", map[string][]string{"direct": {"partitions"}, "fanout": {"fanout.queue"}}},
	} {
		p := mustMake(t, tc.in)
		m := planJSONMap(t, p)
		if p.Direct.ReachesTarget != tc.direct || p.Fanout.ReachesTarget != tc.fanout || p.Cheaper != tc.cheaper {
			t.Errorf("%s: direct reaches %v, fanout %v, cheaper %q; want %v, %v, %q", tc.name,
				p.Direct.ReachesTarget, p.Fanout.ReachesTarget, p.Cheaper, tc.direct, tc.fanout, tc.cheaper)
		}
		for _, d := range []Design{p.Direct, p.Fanout} {
			js := m[d.Name].(map[string]any)
			cost, hasCost := js["monthly_cost_usd"]
			rec, hasRec := js["recommended"]
			if d.ReachesTarget {
				if c, ok := cost.(float64); !ok || !(c > 0) || rec == nil {
					t.Errorf("%s: %s reaches the target: cost %v, recommended %v; want both", tc.name, d.Name, cost, rec)
				}
				continue
			}
			if !hasCost || cost != nil || !hasRec || rec != nil || len(d.CostLines) != 0 {
				t.Errorf("%s: %s does not reach the target: monthly_cost_usd %v, recommended %v, %d cost lines; want null, null, none",
					tc.name, d.Name, cost, rec, len(d.CostLines))
			}
			for _, f := range tc.lifts[d.Name] {
				if !hasLift(d, f) {
					t.Errorf("%s: %s: no lift of %s in %v", tc.name, d.Name, f, js["lifts"])
				}
			}
		}
	}
}
