package samlint

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPowertoolsEnvKnowsTheToolkit: every POWERTOOLS_* name the toolkit's own packages
// (lambdalog, metrics, idempotency, parameters ...) read or document is one klt lint knows, so
// that lint never calls a variable the toolkit reads a typo.
func TestPowertoolsEnvKnowsTheToolkit(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..")
	name := regexp.MustCompile(`POWERTOOLS_[A-Z0-9_]*[A-Z0-9]`)
	found := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "cmd" || rel == "node_modules" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range name.FindAllString(string(data), -1) {
			found[n] = rel
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_LOG_LEVEL", "POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_IDEMPOTENCY_DISABLED"} {
		if found[must] == "" {
			t.Errorf("%s is not in the toolkit's code: the walk of %s missed it", must, root)
		}
	}
	for n, file := range found {
		if !slices.Contains(powertoolsEnv, n) {
			t.Errorf("%s (%s) is not in powertoolsEnv: klt lint would call it a typo", n, file)
		}
	}
}

// TestMisspeltPowertools: which names are taken for slips of a Powertools variable, and the
// name suggested for each.
func TestMisspeltPowertools(t *testing.T) {
	tests := []struct {
		name string
		bad  bool
		near string
	}{
		{"POWERTOOLS_SERVICE_NAME", false, ""},
		{"POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS", false, ""},
		{"POWERTOOL_SERVICE_NAME", true, "POWERTOOLS_SERVICE_NAME"},
		{"POWERTOOLS-SERVICE-NAME", true, "POWERTOOLS_SERVICE_NAME"},
		{"powertools_metrics_namespace", true, "POWERTOOLS_METRICS_NAMESPACE"},
		{"POWER_TOOLS_LOG_LEVEL", true, "POWERTOOLS_LOG_LEVEL"},
		{"POWERTOLS_DEV", true, "POWERTOOLS_DEV"},
		{"POWERTOOLS_LOGGER_LOG_LEVEL", true, "POWERTOOLS_LOG_LEVEL"},
		{"POWERTOOLS_LOGGER_SAMPLING_RATE", true, "POWERTOOLS_LOGGER_SAMPLE_RATE"},
		{"POWERTOOLS_METRIC_NAMESPACE", true, "POWERTOOLS_METRICS_NAMESPACE"},
		{"POWERTOOLS_SERVICENAME", true, "POWERTOOLS_SERVICE_NAME"},
		{"POWERTOOLS_TRACE_DISABLE", true, "POWERTOOLS_TRACE_DISABLED"},
		{"POWERTOOLS_X", true, ""},
		{"POWERTOOLSSERVICE_NAME", true, "POWERTOOLS_SERVICE_NAME"},
		{"POWER_LEVEL", false, ""},
		{"LOG_LEVEL", false, ""},
		{"AWS_LAMBDA_LOG_LEVEL", false, ""},
		{"IDEMPOTENCY_TABLE", false, ""},
		{"P", false, ""},
		{"", false, ""},
		{strings.Repeat("POWERTOOLS_", 20), true, ""},
	}
	for _, tt := range tests {
		bad, near := misspeltPowertools(tt.name)
		if bad != tt.bad || near != tt.near {
			t.Errorf("misspeltPowertools(%q) = %v, %q; want %v, %q", tt.name, bad, near, tt.bad, tt.near)
		}
	}
}

// FuzzMisspeltPowertools: any name is answered, a known name is never a slip, and what is
// suggested is a known name.
func FuzzMisspeltPowertools(f *testing.F) {
	for _, s := range []string{"POWERTOOLS_DEV", "POWERTOOL_DEV", "powertools-log-level", "X", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		bad, near := misspeltPowertools(name)
		if bad && slices.Contains(powertoolsEnv, name) {
			t.Errorf("%q is known, and taken for a slip", name)
		}
		if near != "" && (!bad || !slices.Contains(powertoolsEnv, near)) {
			t.Errorf("%q: bad %v, suggests %q", name, bad, near)
		}
	})
}
