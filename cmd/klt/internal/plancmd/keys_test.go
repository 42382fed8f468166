package plancmd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/capacity"
)

// TestPlanKeyConcurrency: --key-concurrency plans the third design, and the same key in a
// --config file gives the same plan. The talk's example at 500 records/s: direct does not
// reach it (16.7), the key-concurrent design does (508.5, 30.5x) and is cheaper than the
// fan-out; the text names the three, and a skew without --key-concurrency is refused as a
// usage error.
func TestPlanKeyConcurrency(t *testing.T) {
	args := []string{"--rate", "500", "--partitions", "5", "--duration", "300ms", "--batch-size", "100", "--keys", "1000"}
	code, out, errOut := runPlan(t, append(args, "--key-concurrency", "100", "--format", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var p capacity.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p.KeyConcurrent == nil || !p.KeyConcurrent.ReachesTarget || p.Direct.ReachesTarget || p.Cheaper != "key_concurrent" {
		t.Fatalf("key-concurrent %+v, direct reaches %v, cheaper %q", p.KeyConcurrent, p.Direct.ReachesTarget, p.Cheaper)
	}
	if x := p.KeyConcurrent.MaxRecordsPerSecond / p.Direct.MaxRecordsPerSecond; x < 30 {
		t.Errorf("%.1fx direct, want at least 30x", x)
	}

	cfg := configFile(t, "plan.yaml", "rate: 500\npartitions: 5\nduration: 300ms\nbatch_size: 100\nkeys: 1000\nkey_concurrency: 100\n")
	_, fromFile, _ := runPlan(t, "--config", cfg, "--format", "json")
	if fromFile != out {
		t.Errorf("--config key_concurrency: a different plan than the flags':\n%s", fromFile)
	}

	_, text, _ := runPlan(t, append(args, "--key-concurrency", "100")...)
	for _, want := range []string{"\ndirect: ", "\nkey_concurrent: ", "\nfanout: ", "\ncheaper: key_concurrent, $1,798.27 a month for 500 records/s (fanout: $3,274.88)\n", "--key-concurrency   "} {
		if !strings.Contains(text, want) {
			t.Errorf("the text has no %q", want)
		}
	}

	if code, _, errOut := runPlan(t, append(args, "--key-skew", "1")...); code != 2 || !strings.Contains(errOut, "--key-skew 1: describes the keys of the key-concurrent design") {
		t.Errorf("--key-skew without --key-concurrency: exit %d, %q; want 2 and why", code, errOut)
	}
	// Without --key-concurrency the plan is the two designs it was.
	_, out, _ = runPlan(t, append(args, "--format", "json")...)
	if strings.Contains(out, "key_concurrent") {
		t.Error("a key-concurrent design without --key-concurrency")
	}
}
