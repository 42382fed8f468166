package main

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
)

// TestInvokeLMI: klt invoke --lmi-concurrency runs the consumer as a Lambda Managed Instances
// function on klt's Runtime API server (not the emulator): the same response as under the
// emulator, and stderr says how it ran. A value out of PerExecutionEnvironmentMaxConcurrency's
// range is a usage error.
func TestInvokeLMI(t *testing.T) {
	const event = "../../testdata/events/consumer/orders.json"
	want, err := os.ReadFile(strings.TrimSuffix(event, ".json") + ".response.json")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runKLT(t, "invoke", "--lmi-concurrency", "4", "--template", "../../template.yaml", "ConsumerFunction", event)
	if code != base.ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var got, wantV any
	if json.Unmarshal([]byte(out), &got) != nil || json.Unmarshal(want, &wantV) != nil || !reflect.DeepEqual(got, wantV) {
		t.Errorf("response\n%s\nwant\n%s", out, want)
	}
	if !strings.Contains(errOut, "klt invoke: ConsumerFunction ran as a Lambda Managed Instances function, 4 invocations at once per execution environment (AWS_LAMBDA_MAX_CONCURRENCY=4)") {
		t.Errorf("stderr does not say how the function ran:\n%s", errOut)
	}
	if code, _, errOut := runKLT(t, "invoke", "--lmi-concurrency", "1601", "ConsumerFunction", event); code != base.ExitUsage || !strings.Contains(errOut, "--lmi-concurrency 1601: want 1 to 1600") {
		t.Errorf("--lmi-concurrency 1601: exit %d, %s", code, errOut)
	}
}
