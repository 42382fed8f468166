package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
)

// transformWant is, for each template of testdata/lint/transform, the cfn-lint rule that
// refuses what the SAM transform makes of it and what klt lint says of it at the SAM property;
// the pass-* templates have neither. TestLintAgreesWithCfnLint checks the rules against
// cfn-lint where it is installed.
var transformWant = map[string]struct{ rule, klt string }{
	"pass-smk-destination.yaml":    {},
	"pass-references.yaml":         {},
	"queue-cycle.yaml":             {"E3004", `16:7 ConsumerFunction Properties.Environment: CloudFormation fails: circular dependency: ConsumerFunction -> OutQueue -> ConsumerFunction`},
	"runtime-enum.yaml":            {"E3030", `11:7 ConsumerFunction Properties.Runtime: CloudFormation fails: "PYTHON3_VERSION" is not one of the allowed values`},
	"logging-config.yaml":          {"E3002", `14:9 ConsumerFunction Properties.LoggingConfig.LogGroupName: CloudFormation fails: unknown property LogGroupName`},
	"self-cycle.yaml":              {"E3004", `12:7 ConsumerFunction Properties.Environment: CloudFormation fails: circular dependency: ConsumerFunction refers to itself`},
	"policy-cycle.yaml":            {"E3004", `12:7 ConsumerFunction Properties.Policies: CloudFormation fails: circular dependency: ConsumerFunctionRole`},
	"duplicate-function-name.yaml": {"E3019", `9:7 ConsumerFunction Properties.FunctionName: CloudFormation fails: FunctionName: "orders-consumer" is also that of ReplayFunction`},
}

// TestLintTransformed: klt lint checks what the SAM transform makes of a template: a
// SelfManagedKafka event's DestinationConfig, which the transform accepts, passes; the
// function properties the transform copies into the AWS::Lambda::Function are held to its
// schema (Runtime's enum, LoggingConfig's properties); a reference cycle (through the role the
// transform writes, too) and two functions of one FunctionName are refused, each at the
// property the user wrote.
func TestLintTransformed(t *testing.T) {
	files, err := filepath.Glob("testdata/lint/transform/*.yaml")
	if err != nil || len(files) != len(transformWant) {
		t.Fatalf("testdata/lint/transform: %d templates (%v), transformWant has %d", len(files), err, len(transformWant))
	}
	for _, file := range files {
		want, ok := transformWant[filepath.Base(file)]
		if !ok {
			t.Errorf("%s: not in transformWant", file)
			continue
		}
		code, out, errOut := runLintCmd(t, file)
		if want.klt == "" {
			if code != base.ExitOK || !strings.HasPrefix(out, "ok: ") {
				t.Errorf("%s: exit %d, want ok; stdout:\n%s\nstderr:\n%s", file, code, out, errOut)
			}
			continue
		}
		if code != 1 || !strings.Contains(out, file+":"+want.klt) {
			t.Errorf("%s: exit %d, want 1 and a line with\n  %s:%s\nstdout:\n%s", file, code, file, want.klt, out)
		}
	}
}
