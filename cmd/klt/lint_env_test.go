package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/samlint"
)

// TestLintEnvironment: env-powertools.yaml has each mistake of a function's environment that
// deploys and is then silently not what was meant, in Globals and in the functions' own
// Variables, and klt lint reports exactly these, at the name (a misspelt name, with the known
// name it is nearest to) or at the value (a value the variable cannot take). Its
// WorkerFunction has right values (warning, false, "0"), and values an intrinsic gives that the
// template cannot know (a parameter without a Default, !Sub of a pseudo parameter), which pass;
// a parameter's Default is checked, as the other checks do.
func TestLintEnvironment(t *testing.T) {
	file := filepath.Join("testdata/lint", "env-powertools.yaml")
	const levels = "a log level (TRACE, DEBUG, INFO, WARN, WARNING, ERROR, CRITICAL, FATAL, in any case)"
	const notThere = " is no variable Powertools or the toolkit reads, so its setting is silently not there"
	want := []string{
		file + `:16:9 Globals Function.Environment.Variables.POWERTOOL_SERVICE_NAME: POWERTOOL_SERVICE_NAME` + notThere + ` (did you mean POWERTOOLS_SERVICE_NAME?); fix: rename it POWERTOOLS_SERVICE_NAME`,
		file + `:18:31 Globals Function.Environment.Variables.POWERTOOLS_LOG_LEVEL: POWERTOOLS_LOG_LEVEL is "verbose", which is not ` + levels + `: lambdalog ignores it and logs at INFO; fix: set it to ` + levels,
		file + `:29:11 ConsumerFunction Properties.Environment.Variables.POWERTOOLS-LOG-LEVEL: POWERTOOLS-LOG-LEVEL` + notThere + ` (did you mean POWERTOOLS_LOG_LEVEL?); fix: rename it POWERTOOLS_LOG_LEVEL`,
		file + `:30:11 ConsumerFunction Properties.Environment.Variables.POWERTOOLS_LOGGER_LOG_LEVEL: POWERTOOLS_LOGGER_LOG_LEVEL` + notThere + ` (did you mean POWERTOOLS_LOG_LEVEL?); fix: rename it POWERTOOLS_LOG_LEVEL`,
		file + `:31:11 ConsumerFunction Properties.Environment.Variables.POWERTOOLS_TRACING: POWERTOOLS_TRACING` + notThere + `; fix: use a name Powertools documents (docs/cli.md lists them), or rename it so that it does not start with POWERTOOLS_`,
		file + `:32:42 ConsumerFunction Properties.Environment.Variables.POWERTOOLS_LOGGER_SAMPLE_RATE: POWERTOOLS_LOGGER_SAMPLE_RATE is "1.5", which is not a number from 0 to 1: lambdalog turns sampling off; fix: set it to a number from 0 to 1`,
		file + `:33:40 ConsumerFunction Properties.Environment.Variables.POWERTOOLS_METRICS_DISABLED: POWERTOOLS_METRICS_DISABLED is "maybe", which is not a boolean (true or false): metrics.New refuses to start, as Powertools' strtobool refuses it; fix: set it to a boolean (true or false)`,
		file + `:34:27 ConsumerFunction Properties.Environment.Variables.POWERTOOLS_DEV: POWERTOOLS_DEV is "2", which is not a boolean (true or false): metrics.New refuses to start, as Powertools' strtobool refuses it; fix: set it to a boolean (true or false)`,
		file + `:35:33 ConsumerFunction Properties.Environment.Variables.AWS_LAMBDA_LOG_LEVEL: AWS_LAMBDA_LOG_LEVEL is "Loud", which is not ` + levels + `: lambdalog ignores it; fix: set it to ` + levels,
		file + `:48:42 WorkerFunction Properties.Environment.Variables.POWERTOOLS_LOGGER_SAMPLE_RATE: POWERTOOLS_LOGGER_SAMPLE_RATE is "2", which is not a number from 0 to 1: lambdalog turns sampling off; fix: set it to a number from 0 to 1`,
	}
	code, out, errOut := runLintCmd(t, file)
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != base.ExitFail || !strings.Contains(errOut, "10 problems") {
		t.Errorf("exit %d, stderr %q; want 1 and 10 problems", code, errOut)
	}
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d:\n got  %s\n want %s", i+1, g, w)
		}
	}

	// The rules, as --format json gives them.
	var buf, errBuf bytes.Buffer
	run(context.Background(), []string{"lint", "--format", "json", file}, strings.NewReader(""), &buf, &errBuf)
	var problems []samlint.ProblemJSON
	if err := json.Unmarshal(buf.Bytes(), &problems); err != nil {
		t.Fatalf("--format json: %v\n%s", err, buf.String())
	}
	var rules []string
	for _, p := range problems {
		rules = append(rules, p.Rule)
	}
	n, v := samlint.RuleEnvName, samlint.RuleEnvValue
	if want := []string{n, v, n, n, n, v, v, v, v, v}; strings.Join(rules, " ") != strings.Join(want, " ") {
		t.Errorf("rules %v, want %v", rules, want)
	}
}

// TestLintEnvironmentCases: what the environment checks pass and refuse beyond the fixture:
// every value a variable can take, in any case, passes; a value in either branch of an Fn::If
// is checked; a variable that is no Powertools one, however near its first word, passes.
func TestLintEnvironmentCases(t *testing.T) {
	tests := []struct {
		name, vars string
		want       []string // the rules of the problems, in order
	}{
		{"right values", `POWERTOOLS_LOG_LEVEL: debug
          AWS_LAMBDA_LOG_LEVEL: WARN
          POWERTOOLS_LOGGER_SAMPLE_RATE: 0.1
          POWERTOOLS_METRICS_DISABLED: true
          POWERTOOLS_DEV: "off"
          POWERTOOLS_IDEMPOTENCY_DISABLED: "1"
          POWERTOOLS_PARAMETERS_MAX_AGE: 300
          POWERTOOLS_SERVICE_NAME: orders
          POWERTOOLS_TRACER_CAPTURE_RESPONSE: "false"`, nil},
		{"levels in any case", "POWERTOOLS_LOG_LEVEL: Critical\n          AWS_LAMBDA_LOG_LEVEL: trace", nil},
		{"a rate of 0 and of 1", "POWERTOOLS_LOGGER_SAMPLE_RATE: 0\n          POWERTOOLS_DEV: \"1\"", nil},
		{"sample rate not a number", "POWERTOOLS_LOGGER_SAMPLE_RATE: half", []string{samlint.RuleEnvValue}},
		{"negative max age", "POWERTOOLS_PARAMETERS_MAX_AGE: -1", []string{samlint.RuleEnvValue}},
		{"max age as a duration", "POWERTOOLS_PARAMETERS_MAX_AGE: 5m", []string{samlint.RuleEnvValue}},
		{"idempotency kill switch not a boolean", "POWERTOOLS_IDEMPOTENCY_DISABLED: sometimes", []string{samlint.RuleEnvValue}},
		{"a wrong value in one branch", `POWERTOOLS_LOG_LEVEL: !If [IsProd, INFO, LOUD]`, []string{samlint.RuleEnvValue}},
		{"both branches right", `POWERTOOLS_LOG_LEVEL: !If [IsProd, INFO, DEBUG]`, nil},
		{"lower case name", "powertools_service_name: orders", []string{samlint.RuleEnvName}},
		{"prefix without the S", "POWERTOOL_LOG_LEVEL: INFO", []string{samlint.RuleEnvName}},
		{"prefix split", "POWER_TOOLS_DEV: \"true\"", []string{samlint.RuleEnvName}},
		{"prefix slip", "POWERTOLS_METRICS_NAMESPACE: Shop", []string{samlint.RuleEnvName}},
		{"other variables", "POWER_LEVEL: \"9000\"\n          TOOLS_DIR: /opt\n          LOG_LEVEL: verbose", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl := `AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Parameters:
  Stage:
    Type: String
    Default: dev
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: s3://example-bucket/fn.zip
      Runtime: provided.al2023
      Handler: bootstrap
      Environment:
        Variables:
          ` + tt.vars + "\n"
			problems, err := samlint.LintData(context.Background(), "env.yaml", ".", []byte(tpl))
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, p := range problems {
				rules = append(rules, p.Rule)
			}
			if strings.Join(rules, " ") != strings.Join(tt.want, " ") {
				t.Errorf("rules %q, want %q; problems:\n%v", rules, tt.want, problems)
			}
		})
	}
}
