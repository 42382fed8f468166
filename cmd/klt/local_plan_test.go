package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/capacity"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
)

// TestLocalPlanAgrees closes the loop on make demo's stack (template.yaml, 5 partitions, the
// HTTP sink taking 300 ms per order), on a smaller run: klt local measures both pipelines,
// plans the stack from what it measured and predicts the run, and the prediction agrees with
// the measurement within 20% for each pipeline (issue 20: "prediction and measurement agree
// within 20% for both pipelines"), and `klt plan --from-report report.json` shows the same
// measured and predicted figures side by side.
//
// The direct pipeline's 150 records (30 a partition) are packed into 3 invocations of about 2
// partitions each, so 2 run at once: one round of full batches; the fan-out's workers share
// this machine's CPU, and the prediction is told the concurrency they reached.
//
// Not parallel: its throughput is its subject, and TestLocalStack and TestLocalEnricher, which
// run their own stacks in parallel, would share the CPU with it (and it with them).
func TestLocalPlanAgrees(t *testing.T) {
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

	// klt plan --from-report on report.json: the same plan, and each pipeline's measured and
	// predicted figures side by side, within 20% (exit 0: the fan-out reaches the run's rate).
	var planOut, planErr bytes.Buffer
	if code := run(ctx, []string{"plan", "--from-report", path, "--format", "json"}, nil, &planOut, &planErr); code != base.ExitOK {
		t.Fatalf("klt plan --from-report: exit %d\n%s", code, planErr.String())
	}
	var plan capacity.Plan
	if err := json.Unmarshal(planOut.Bytes(), &plan); err != nil {
		t.Fatalf("klt plan --format json: %v\n%s", err, planOut.String())
	}
	steady := map[string]float64{"direct": plan.Direct.MaxRecordsPerSecond, "fanout": plan.Fanout.MaxRecordsPerSecond}
	if len(plan.Runs) != 2 {
		t.Fatalf("klt plan --from-report: runs %+v", plan.Runs)
	}
	for _, pr := range plan.Runs {
		var got *report.Pipeline
		for i, p := range rep.Pipelines {
			if p.Name == pr.Pipeline {
				got = &rep.Pipelines[i]
			}
		}
		if got == nil {
			t.Fatalf("klt plan predicts pipeline %q, not in the report", pr.Pipeline)
		}
		if !near(got.Predicted.SteadyRecordsPerSecond, steady[pr.Design]) || !near(got.Predicted.SteadyRecordsPerSecond, pr.Steady) {
			t.Errorf("%s: the report's steady %v records/s, klt plan's %v (run %v)", got.Name, got.Predicted.SteadyRecordsPerSecond, steady[pr.Design], pr.Steady)
		}
		if !near(got.Predicted.RecordsPerSecond, pr.RecordsPerSecond) || !near(got.RecordsPerSecond, pr.Measured) {
			t.Errorf("%s: the report says measured %v, predicted %v records/s; klt plan says %v and %v", got.Name, got.RecordsPerSecond, got.Predicted.RecordsPerSecond, pr.Measured, pr.RecordsPerSecond)
		}
		if math.Abs(pr.Ratio-1) > 0.2 {
			t.Errorf("klt plan --from-report: %s measured %.2f, predicted %.2f records/s: ratio %.3f, want within 20%%", pr.Pipeline, pr.Measured, pr.RecordsPerSecond, pr.Ratio)
		}
	}
}

// near reports whether a and b agree to 1e-6 of their size: report.json writes its floats in
// full, so the plan read back from it is the plan klt local made.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }
