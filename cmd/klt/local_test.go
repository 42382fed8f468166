package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/internal/localreport"
)

// TestLocalStack runs the sample stack of template.yaml under klt local, as make demo does on a
// smaller load: both pipelines, then the faults. It checks the report: nothing lost, applied
// twice or out of key order, and each fault where it belongs.
func TestLocalStack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"local", "--template", "../../template.yaml", "--partitions", "5", "--keys", "20",
		"--work", "100ms", "--load", "ConsumerFunction=50", "--load", "300", "--faults", "30", "--report", dir}, nil, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("klt local: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("%s", stdout.String())
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep localreport.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"direct": 50, "fan-out": 300, "direct, with faults": 30, "fan-out, with faults": 30}
	if len(rep.Pipelines) != len(want) {
		t.Fatalf("pipelines: %+v", rep.Pipelines)
	}
	for _, p := range rep.Pipelines {
		if p.Records != want[p.Name] || p.Lost != 0 || p.AppliedTwice != 0 || p.OrderViolations != 0 || p.RecordsPerSecond <= 0 {
			t.Errorf("pipeline %+v", p)
		}
	}
	if rep.Speedup == nil || rep.Speedup.Of != "fan-out" || rep.Speedup.Over != "direct" || rep.Speedup.Ratio <= 1 {
		t.Errorf("speedup %+v", rep.Speedup)
	}
	wantFault := map[string]string{
		"direct/poison":     "sent to ConsumerFailureQueue",
		"fan-out/poison":    "sent to WorkerFailureQueue",
		"direct/transient":  "applied once, after 2 attempts",
		"fan-out/transient": "applied once, after 2 attempts",
		"direct/timeout":    "the invocation of ConsumerFunction timed out",
		"fan-out/timeout":   "the invocation of WorkerFunction timed out",
	}
	if len(rep.Faults) != len(wantFault) {
		t.Errorf("faults: %+v", rep.Faults)
	}
	for _, f := range rep.Faults {
		k := strings.TrimSuffix(f.Pipeline, ", with faults") + "/" + f.Fault
		if !strings.HasPrefix(f.Outcome, wantFault[k]) {
			t.Errorf("fault %s: %q, want %q...", k, f.Outcome, wantFault[k])
		}
		if wantApplied := map[bool]int{true: 0, false: 1}[f.Fault == "poison"]; f.Applied != wantApplied {
			t.Errorf("fault %s applied %d times, want %d", k, f.Applied, wantApplied)
		}
	}
	for _, name := range []string{"report.html", "report.svg", "logs/ConsumerFunction.log", "logs/WorkerFunction.log"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
}
