package capacity

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
)

// FuzzMake reads any JSON as an Input and makes its plan: Make never panics, fails only with
// ErrInput, and a plan always marshals to JSON (no Inf or NaN anywhere in it) with every
// figure, stage and cost finite or, for a standard queue's maximum, null.
func FuzzMake(f *testing.F) {
	for _, seed := range []string{
		`{"rate":20000,"batch_size":20,"batch_duration":"50ms"}`,
		`{"rate":100,"partitions":5,"duration":300,"batch_size":100,"burst":300,"burst_for":"60s"}`,
		`{"rate":1e9,"record_size":6291456,"duration":"1ns"}`,
		`{"rate":1e9,"burst":1e9,"burst_for":"168h","duration":"1ns","partitions":100000,"partitions_per_invocation":100000}`,
		`{"rate":1e-300,"duration":"1ns","low_latency":true}`,
		`{"rate":0}`,
		`{"rate":-1,"duration":1}`,
		`{"rate":1,"duration":840000,"batch_size":1}`,
		`{"rate":1e9,"duration":"1ms","mode":"on-demand","concurrency":1000000}`,
		`{"rate":5e8,"duration":"1us","fanout":{"queue":"standard","worker_batch_size":10000,"maximum_concurrency":2}}`,
		`{"rate":3000,"duration":"10ms","fanout":{"high_throughput":true,"fifo_calls_per_second":1000000,"message_groups":100000000}}`,
		`{"rate":1,"record_size":1,"duration":1,"idempotency_writes":100,"idempotency_item_size":409600,"egress_bytes":1000000000,"poller_group":true}`,
		`{"rate":1,"duration":1,"prices":{"lambda_gb_second":1e6,"sqs_fifo_per_million":1e6}}`,
		`{"rate":1,"duration":"99999999999h"}`,
		`{"rate":1,"duration":1e300}`,
		`{"rate":1e9,"batch_duration":"1ns","batch_size":10000,"fanout":{"queue":"standard"}}`,
		`{}`,
		`[]`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var in Input
		if json.Unmarshal([]byte(s), &in) != nil {
			return
		}
		p, err := Make(in)
		if err != nil {
			if !errors.Is(err, ErrInput) {
				t.Fatalf("Make: %v, want ErrInput", err)
			}
			return
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if strings.Contains(string(b), "NaN") || strings.Contains(string(b), "Inf") {
			t.Fatalf("plan JSON has NaN or Inf: %.300s", b)
		}
		for _, d := range []Design{p.Direct, p.Fanout} {
			checkFinite(t, d)
		}
	})
}

func checkFinite(t *testing.T, d Design) {
	t.Helper()
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }
	if bad(d.MaxRecordsPerSecond) || d.MonthlyCostUSD != nil && bad(*d.MonthlyCostUSD) {
		t.Fatalf("%s: max %v, cost %v", d.Name, d.MaxRecordsPerSecond, d.MonthlyCostUSD)
	}
	if (d.MonthlyCostUSD == nil) == d.ReachesTarget || (d.Recommended == nil) == d.ReachesTarget {
		t.Fatalf("%s: reaches %v with cost %v and recommended %v: want both exactly when it reaches the target", d.Name, d.ReachesTarget, d.MonthlyCostUSD, d.Recommended)
	}
	for _, f := range d.Figures {
		if bad(f.Value) {
			t.Fatalf("%s: figure %s = %v", d.Name, f.Name, f.Value)
		}
	}
	for _, l := range d.CostLines {
		if bad(l.Quantity) || bad(l.MonthlyUSD) {
			t.Fatalf("%s: cost %s = %v, $%v", d.Name, l.Item, l.Quantity, l.MonthlyUSD)
		}
	}
	for _, s := range d.Stages {
		if math.IsNaN(s.MaxRecordsPerSecond) || s.MaxRecordsPerSecond < 0 || math.IsInf(s.MaxRecordsPerSecond, 0) && s.Name != "queue" {
			t.Fatalf("%s: stage %s = %v", d.Name, s.Name, s.MaxRecordsPerSecond)
		}
	}
	if d.PollersNeeded < 0 || d.ConcurrencyNeeded < 0 || d.PartitionsNeeded < 0 {
		t.Fatalf("%s: negative needs %+v", d.Name, d)
	}
}

// FuzzFromReport reads any JSON as a klt local report (what klt plan --from-report reads
// from a file) and plans from it: FromReport, Make and PredictRuns never panic, fail with an
// error rather than a figure that is not a number, and a plan made marshals to JSON. The
// seeds are a real report (cmd/klt/testdata/plan/report.json, klt local's), its
// figures pushed to zero, huge and negative, and deep nesting.
func FuzzFromReport(f *testing.F) {
	real, err := os.ReadFile("../../testdata/plan/report.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(real))
	for _, r := range []*strings.Replacer{
		strings.NewReplacer(`"records_per_second": `, `"records_per_second": 0`),
		strings.NewReplacer(`"invocation_ms_mean": `, `"invocation_ms_mean": -`),
		strings.NewReplacer(`"batch_size": `, `"batch_size": 1000000`),
		strings.NewReplacer(`"partitions": `, `"partitions": 99999999`),
		strings.NewReplacer(`"records_per_invocation": `, `"records_per_invocation": 1e308`),
		strings.NewReplacer(`"kind": "kafka"`, `"kind": "sqs"`),
		// Huge figures: a float past every int and Duration, a mean record size past 2^63 ns
		// of milliseconds; what a conversion without a range check wraps into a valid figure.
		strings.NewReplacer(`"record_bytes_mean": `, `"record_bytes_mean": 9.3e18, "x": `),
		strings.NewReplacer(`"record_bytes_mean": `, `"record_bytes_mean": 1e300, "x": `),
		strings.NewReplacer(`"window_ms": `, `"window_ms": 1e300, "x": `),
		strings.NewReplacer(`"invocation_ms_mean": `, `"invocation_ms_mean": 1e13, "x": `),
		strings.NewReplacer(`"invocation_ms_p99": `, `"invocation_ms_p99": -1e300, "x": `),
		strings.NewReplacer(`"batch_size": `, `"batch_size": -100, "x": `),
		strings.NewReplacer(`"records_per_second": `, `"records_per_second": 1e-300, "x": `),
		strings.NewReplacer(`"concurrency_max": `, `"concurrency_max": 9223372036854775807, "x": `),
		strings.NewReplacer(`"records": `, `"records": -9223372036854775808, "x": `),
		// Not finite: JSON has no NaN or infinity; the reader refuses them as text.
		strings.NewReplacer(`"record_bytes_mean": `, `"record_bytes_mean": NaN, "x": `),
		strings.NewReplacer(`"window_ms": `, `"window_ms": Infinity, "x": `),
		strings.NewReplacer(`"window_ms": `, `"window_ms": 1e999, "x": `),
	} {
		f.Add(r.Replace(string(real)))
	}
	f.Add(`{"pipelines":[{"name":"direct","phase":"load","mappings":["M"],"records":1,"records_per_second":1}],"mappings":[{"name":"M"}]}`)
	f.Add(strings.Repeat(`{"pipelines":[`, 10000))
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, s string) {
		var r report.Report
		if json.Unmarshal([]byte(s), &r) != nil {
			return
		}
		for _, stat := range []string{StatMean, StatP50, StatP99} {
			in, _, err := FromReport(&r, stat)
			if err != nil {
				if !errors.Is(err, ErrInput) {
					t.Fatalf("%s: FromReport: %v, want ErrInput", stat, err)
				}
				continue
			}
			// What FromReport returns is within the model's ranges: no figure wrapped by a
			// conversion (a 1-byte record from 9.3e18, a negative window from 1e300).
			if err := in.check(); err != nil {
				t.Fatalf("%s: FromReport returned an Input out of range: %v", stat, err)
			}
			if in.RecordSize < 1 || in.Window < 0 || in.BatchDuration <= 0 || in.Fanout.DispatchBatchDuration < 0 || in.Fanout.WorkerBatchDuration < 0 {
				t.Fatalf("%s: FromReport: %+v", stat, in)
			}
			p, err := Make(in)
			if err != nil {
				continue
			}
			runs, err := PredictRuns(p, &r, stat)
			if err == nil {
				p.Runs = runs
			}
			if _, err := json.Marshal(p); err != nil {
				t.Fatalf("%s: the plan from the report does not marshal: %v", stat, err)
			}
		}
	})
}
