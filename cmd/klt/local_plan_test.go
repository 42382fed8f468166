package main

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/internal/capacity"
)

// TestLocalPlanAgrees closes the loop on make demo's stack (template.yaml, 5 partitions, the
// HTTP sink taking 300 ms per order), on a smaller run: klt local measures both pipelines,
// plans the stack from what it measured and predicts the run, and the prediction agrees with
// the measurement within 20% for each pipeline (issue 20: "prediction and measurement agree
// within 20% for both pipelines"). The plan from report.json (what `klt plan --from-report`
// reads: capacity.FromReport, capacity.Make) gives the same predicted figures as the report.
//
// The direct pipeline's 150 records (30 a partition) are packed into 3 invocations of about 2
// partitions each, so 2 run at once: one round of full batches; the fan-out's workers share
// this machine's CPU, and the prediction is told the concurrency they reached.
func TestLocalPlanAgrees(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"local", "--template", "../../template.yaml", "--partitions", "5",
		"--http-sink", "OrdersApiUrl", "--work", "300ms", "--generate", demoGenerate, "--keys", "1000",
		"--load", "ConsumerFunction=150", "--load", "1000", "--report", dir}, nil, &stdout, &stderr)
	if code != base.ExitOK {
		t.Fatalf("klt local: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	path := filepath.Join(dir, "report.json")
	rep := readReport(t, path)
	if len(rep.Pipelines) != 2 {
		t.Fatalf("pipelines: %+v", rep.Pipelines)
	}
	for _, p := range rep.Pipelines {
		pr := p.Predicted
		if pr == nil || pr.Error != "" {
			t.Fatalf("pipeline %s: no prediction: %+v", p.Name, pr)
		}
		t.Logf("%s: measured %.2f records/s, predicted %.2f (steady %.2f, %s): %s", p.Name, p.RecordsPerSecond, pr.RecordsPerSecond, pr.SteadyRecordsPerSecond, pr.Bound, pr.Formula)
		if math.Abs(pr.Ratio-1) > 0.2 {
			t.Errorf("pipeline %s: measured %.2f records/s, predicted %.2f: ratio %.3f, want within 20%%\n%s", p.Name, p.RecordsPerSecond, pr.RecordsPerSecond, pr.Ratio, stdout.String())
		}
		if want := "klt plan --from-report " + path; pr.Command != want {
			t.Errorf("pipeline %s: command %q, want %q", p.Name, pr.Command, want)
		}
	}
	if !strings.Contains(stdout.String(), "predicted by klt plan") {
		t.Errorf("the text report does not show the prediction:\n%s", stdout.String())
	}

	// What klt plan --from-report makes of report.json.
	in, _, err := capacity.FromReport(rep, capacity.StatMean)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := capacity.Make(in)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := capacity.PredictRuns(plan, rep, capacity.StatMean)
	if err != nil {
		t.Fatal(err)
	}
	steady := map[string]float64{"direct": plan.Direct.MaxRecordsPerSecond, "fanout": plan.Fanout.MaxRecordsPerSecond}
	if len(runs) != 2 {
		t.Fatalf("predicted runs: %+v", runs)
	}
	for _, pr := range runs {
		var got *float64
		for _, p := range rep.Pipelines {
			if p.Name == pr.Pipeline {
				got = &p.Predicted.RecordsPerSecond
				if !near(p.Predicted.SteadyRecordsPerSecond, steady[pr.Design]) {
					t.Errorf("%s: the report's steady %v records/s, the plan from report.json %v", p.Name, p.Predicted.SteadyRecordsPerSecond, steady[pr.Design])
				}
			}
		}
		if got == nil || !near(*got, pr.RecordsPerSecond) {
			t.Errorf("%s: the report predicts %v records/s, the plan from report.json %v", pr.Pipeline, got, pr.RecordsPerSecond)
		}
	}
}

// near reports whether a and b agree to 1e-6 of their size: report.json writes its floats in
// full, so the plan read back from it is the plan klt local made.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }
