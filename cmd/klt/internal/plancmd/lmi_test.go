package plancmd

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/capacity"
)

// TestPlanLMIText: the lmi part of the text for the talk's load on the 30 partitions it needs
// (3 m7g.large: 3 × 720 h × $0.0816 = $176.26, fee × 0.15 = $26.44; LMI cheaper than the
// $259.20 of on-demand GB-seconds by $56.51; break-even $202.6944 / $2.59201296 = 78.2
// records/s), the unconfirmed figures said as such, and the --lmi flags and the lmi: key of
// --config reaching the model.
func TestPlanLMIText(t *testing.T) {
	code, out, errOut := runPlan(t, "--rate", "100", "--partitions", "30", "--duration", "300ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"\nlmi: the direct design's function on Lambda Managed Instances (m7g.large instances Lambda manages)\n",
		"  lmi reaches 100/s   yes\n",
		"  lmi instances       3 × m7g.large (2 vCPU, 8 GiB)",
		"$176.26  EC2 instances (m7g.large, LMI): 2,160 instance-hours x $0.0816",
		"$26.44  LMI management fee: 2,160 instance-hours x $0.01224",
		"  lmi beside on demand: $722.62 (the direct design above)\n",
		"  lmi cheaper for 100 records/s: LMI, by $56.51 a month\n",
		"  lmi break-even: 78.2 records/s: ",
		"  lmi unconfirmed:\n    - the m7g.large price, $0.0816 an hour: NOT CONFIRMED on an AWS page",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`\n  --price lmi_instance_hour +\$0\.0816 \*\n  --price lmi_management_fee +15% of the instance price \*\n`).MatchString(out) {
		t.Errorf("the inputs do not show the LMI prices as the model's defaults:\n%s", out)
	}
	// A price given is the user's: the cost follows it (3 × 720 × $0.1 = $216, fee $32.40).
	_, out, _ = runPlan(t, "--rate", "100", "--partitions", "30", "--duration", "300ms", "--price", "lmi_instance_hour=0.1")
	if !strings.Contains(out, "$216.00  EC2 instances") || !strings.Contains(out, "$32.40  LMI management fee") {
		t.Errorf("--price lmi_instance_hour=0.1 not in the cost:\n%s", out)
	}
	// The flags and the config key reach the model.
	cfg := configFile(t, "c.yaml", "rate: 100\npartitions: 30\nduration: 300ms\nlmi:\n  max_concurrency: 10\n")
	code, out, errOut = runPlan(t, "--config", cfg, "--lmi-instance-type", "c7g.large", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var p capacity.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	// 30 invocations / (10 × 0.5) = 6 environments of 1 vCPU, 2 GiB: c7g.large (2 vCPU, 4 GiB)
	// holds 2: 3 instances.
	if p.Input.LMI.MaxConcurrency != 10 || p.LMI.InstanceType != "c7g.large" || p.LMI.Environments != 6 || p.LMI.Instances != 3 {
		t.Errorf("lmi %+v from max_concurrency 10, c7g.large; want 6 environments on 3 c7g.large", p.LMI)
	}
	code, _, errOut = runPlan(t, "--rate", "100", "--duration", "300ms", "--lmi-max-concurrency", "65")
	if code == 0 || !strings.Contains(errOut, "--lmi-max-concurrency 65: want 1 to 64: at most 64 per vCPU on 1 vCPU") {
		t.Errorf("--lmi-max-concurrency 65: exit %d, %q; want the 64 per vCPU", code, errOut)
	}
}
