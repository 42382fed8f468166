package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/samlint"
)

// posPrefix is the "FILE:LINE:COL " that starts every line of klt lint.
var posPrefix = regexp.MustCompile(`^(.+):([1-9][0-9]*):([1-9][0-9]*) `)

// cutPos checks that line starts with file's FILE:LINE:COL and a space, and returns the rest.
func cutPos(t *testing.T, line, file string) string {
	t.Helper()
	m := posPrefix.FindStringSubmatch(line)
	if m == nil || m[1] != file {
		t.Errorf("line %q does not start with %s:LINE:COL", line, file)
		return line
	}
	return line[len(m[0]):]
}

// TestLintPitfalls: each pitfall-*.yaml template has one of the settings that deploy and then
// behave otherwise than meant, and klt lint reports exactly that one, at the line of the
// setting, with the consequence and the fix.
func TestLintPitfalls(t *testing.T) {
	tests := []struct {
		file string
		line int    // the line the problem points at
		want string // the start of the line after FILE:LINE:COL
		has  string // and a part of the rest of it
	}{
		{"pitfall-filter-twice.yaml", 29, "ConsumerFunction Properties.Events.Orders.Properties.FilterCriteria: these FilterCriteria and the FILTER_CRITERIA guard of ConsumerFunction are different filters", "fix: give both the same patterns"},
		{"pitfall-kafka-destination-on-demand.yaml", 27, "ConsumerMapping Properties.DestinationConfig.OnFailure.Destination: a Kafka topic on-failure destination (kafka://orders-failed) needs provisioned mode", "fix: add ProvisionedPollerConfig"},
		{"pitfall-schema-registry-on-demand.yaml", 30, "ConsumerMapping Properties.AmazonManagedKafkaEventSourceConfig.SchemaRegistryConfig: a schema registry needs provisioned mode", "fix: add ProvisionedPollerConfig"},
		{"pitfall-infinite-retries.yaml", 25, "ConsumerMapping Properties.MaximumRetryAttempts: MaximumRetryAttempts -1 asks for retrying a failed batch for ever, but with an on-failure destination Lambda caps the retries at 10", "fix: set MaximumRetryAttempts to the number of retries you mean"},
		{"pitfall-fifo-window.yaml", 19, "WorkerFunction Properties.Events.Work.Properties.MaximumBatchingWindowInSeconds: MaximumBatchingWindowInSeconds 5 on the FIFO queue WorkQueue", "fix: remove MaximumBatchingWindowInSeconds"},
		{"pitfall-idempotency-key.yaml", 44, `IdempotencyTable Properties.KeySchema: ConsumerFunction keeps idempotency records here, which idempotency/dynamodb writes under a partition key "id" (a string) alone, but the partition key is "pk"`, "fix: use KeySchema: [{AttributeName: id, KeyType: HASH}]"},
		{"pitfall-logging-on-demand.yaml", 28, "ConsumerMapping Properties.LoggingConfig: the event pollers' system logs (LoggingConfig) need provisioned mode", "fix: add ProvisionedPollerConfig"},
		{"pitfall-kafka-metrics-sqs.yaml", 19, "WorkerFunction Properties.Events.Work.Properties.MetricsConfig.Metrics: the ErrorCount metrics are for Amazon MSK and self-managed Apache Kafka mappings only", "fix: keep Metrics: [EventCount]"},
		{"pitfall-logging-sqs.yaml", 20, "WorkMapping Properties.LoggingConfig: LoggingConfig (the event pollers' system logs) is for Amazon MSK and self-managed Apache Kafka mappings only", "fix: remove LoggingConfig"},
		{"pitfall-alarm-queue-url.yaml", 16, "FailureQueueAlarm Properties.Dimensions[0].Value: the AWS/SQS QueueName dimension is !Ref FailureQueue, which gives the queue's URL", "fix: write !GetAtt FailureQueue.QueueName"},
		{"pitfall-alarm-logical-id.yaml", 20, `ConsumerErrorsAlarm Properties.Dimensions[0].Value: the AWS/Lambda FunctionName dimension is "ConsumerFunction", the logical ID of ConsumerFunction`, "fix: write !Ref ConsumerFunction"},
		{"pitfall-lmi-runtime.yaml", 10, "ConsumerFunction Properties.Runtime: Runtime python3.12 on Lambda Managed Instances (Properties.CapacityProviderConfig), which runs Java 21 and later, Python 3.13 and later", "fix: use a runtime LMI supports (provided.al2023 for a Go bootstrap)"},
		{"pitfall-lmi-memory.yaml", 12, "ConsumerFunction Properties.MemorySize: MemorySize 1024 on Lambda Managed Instances, whose smallest function is 2 GB and 1 vCPU", "fix: set MemorySize to at least 2048"},
		{"pitfall-lmi-concurrency.yaml", 16, "ConsumerFunction Properties.CapacityProviderConfig.PerExecutionEnvironmentMaxConcurrency: PerExecutionEnvironmentMaxConcurrency 100 is over the 64 per vCPU LMI allows: MemorySize 2048 at 2 GiB per vCPU is 1 vCPU, so at most 64", "fix: set it to at most 64"},
		{"pitfall-lmi-concurrency-range.yaml", 16, "ConsumerFunction Properties.CapacityProviderConfig.PerExecutionEnvironmentMaxConcurrency: PerExecutionEnvironmentMaxConcurrency 2000 is out of its range, 1 to 1600", "fix: set it from 1 to 1600"},
		{"pitfall-withidempotency-no-table.yaml", 13, "ConsumerFunction Properties.Environment.Variables: the code calls batch.WithIdempotency but no environment variable names a table of the template", "fix: name the table in IDEMPOTENCY_TABLE"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			file := filepath.Join("testdata/lint", tt.file)
			code, out, errOut := runLintCmd(t, file)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if code != base.ExitFail || len(lines) != 1 {
				t.Fatalf("exit %d, want 1 and one line; stdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			m := posPrefix.FindStringSubmatch(lines[0])
			if m == nil || m[2] != itoa(tt.line) {
				t.Errorf("line %q, want it at line %d of %s", lines[0], tt.line, file)
			}
			rest := cutPos(t, lines[0], file)
			if !strings.HasPrefix(rest, tt.want) || !strings.Contains(rest, tt.has) {
				t.Errorf("got\n  %s\nwant it starting\n  %s\nand with %q", rest, tt.want, tt.has)
			}
		})
	}
	files, _ := filepath.Glob("testdata/lint/pitfall-*.yaml")
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s has no case in TestLintPitfalls", f)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// pitfallTemplate is a template with a FILTER_CRITERIA guard and a mapping's FilterCriteria,
// and an MSK mapping with settings that the cases vary: %GUARD%, %PATTERN% and %MAPPING%.
const pitfallTemplate = `AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Parameters:
  Provisioned:
    Type: String
    Default: "false"
Conditions:
  UseProvisioned: !Equals [!Ref Provisioned, "true"]
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: s3://example-bucket/fn.zip
      Runtime: provided.al2023
      Handler: bootstrap
      Environment:
        Variables:
          FILTER_CRITERIA: '%GUARD%'
  Mapping:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      FunctionName: !Ref Fn
      EventSourceArn: arn:aws:kafka:us-east-1:123456789012:cluster/demo/1
      Topics: [orders]
      StartingPosition: TRIM_HORIZON
      FilterCriteria:
        Filters:
%PATTERN%
%MAPPING%
  FailureQueue:
    Type: AWS::SQS::Queue
`

// TestLintPitfallCases: what the pitfall checks pass and refuse beyond the fixtures: filters
// compared as patterns (not text), settings made under a condition, retries other than -1.
func TestLintPitfallCases(t *testing.T) {
	const guard = `{"Filters":[{"Pattern":"{\"value\":{\"type\":[\"order\",\"refund\"]}}"}]}`
	const pattern = `          - Pattern: '{"value":{"type":["order","refund"]}}'`
	tests := []struct {
		name, guard, pattern, mapping string
		want                          string // the rule of the one problem; "" for none
	}{
		{"same text", guard, pattern, "", ""},
		{"same patterns written otherwise", `{"Filters":[{"Pattern":"{ \"value\" : {\"type\":[\"refund\", \"order\"]} }"}]}`, pattern, "", ""},
		{"same patterns in another order", `{"Filters":[{"Pattern":"{\"value\":{\"a\":[1]}}"},{"Pattern":"{\"value\":{\"b\":[2]}}"}]}`,
			"          - Pattern: '{\"value\":{\"b\":[2]}}'\n          - Pattern: '{\"value\":{\"a\":[1]}}'", "", ""},
		{"a pattern fewer", guard, pattern + "\n          - Pattern: '{\"value\":{\"type\":[\"void\"]}}'", "", samlint.RuleFilterTwice},
		{"another field", `{"Filters":[{"Pattern":"{\"value\":{\"kind\":[\"order\",\"refund\"]}}"}]}`, pattern, "", samlint.RuleFilterTwice},
		{"kafka destination, provisioned", guard, pattern, "      DestinationConfig: {OnFailure: {Destination: kafka://failed}}\n      ProvisionedPollerConfig: {MinimumPollers: 1, MaximumPollers: 2}", ""},
		{"kafka destination, provisioned under a false condition", guard, pattern,
			"      DestinationConfig: {OnFailure: {Destination: kafka://failed}}\n      ProvisionedPollerConfig: !If [UseProvisioned, {MinimumPollers: 1, MaximumPollers: 2}, !Ref AWS::NoValue]", samlint.RuleOnDemandFeature},
		{"SQS destination, on demand", guard, pattern, "      DestinationConfig: {OnFailure: {Destination: !GetAtt FailureQueue.Arn}}", ""},
		{"retries 10 with a destination", guard, pattern, "      MaximumRetryAttempts: 10\n      DestinationConfig: {OnFailure: {Destination: !GetAtt FailureQueue.Arn}}", ""},
		{"retries -1 without a destination", guard, pattern, "      MaximumRetryAttempts: -1", ""},
		{"retries -1 as a string with a destination", guard, pattern, "      MaximumRetryAttempts: \"-1\"\n      DestinationConfig: {OnFailure: {Destination: !GetAtt FailureQueue.Arn}}", samlint.RuleInfiniteRetries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.NewReplacer("%GUARD%", tt.guard, "%PATTERN%", tt.pattern, "%MAPPING%", tt.mapping).Replace(pitfallTemplate)
			rules, problems := pitfallRules(t, text)
			if (tt.want == "" && len(rules) != 0) || (tt.want != "" && (len(rules) != 1 || rules[0] != tt.want)) {
				t.Errorf("rules %v, want [%s]; problems: %v", rules, tt.want, problems)
			}
		})
	}
}

// TestLintJSON: "klt lint --format json" prints one JSON array of the problems, with file,
// line, column, resource, path, problem, fix, severity and the rule, and exits as the text
// form does; a template without problems gives [] and exit 0.
func TestLintJSON(t *testing.T) {
	lintJSON := func(file string) (int, []samlint.ProblemJSON, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"lint", "--format", "json", file}, strings.NewReader(""), &out, &errOut)
		var got []samlint.ProblemJSON
		dec := json.NewDecoder(&out)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("%s: stdout is not one JSON array of problems: %v\n%s", file, err, out.String())
		}
		if dec.More() {
			t.Fatalf("%s: more than one JSON document", file)
		}
		return code, got, errOut.String()
	}
	file := "testdata/lint/pitfall-infinite-retries.yaml"
	code, got, errOut := lintJSON(file)
	want := samlint.ProblemJSON{File: file, Line: 25, Column: 29, Resource: "ConsumerMapping", Path: "Properties.MaximumRetryAttempts",
		Severity: "error", Rule: samlint.RuleInfiniteRetries}
	if code != base.ExitFail || len(got) != 1 {
		t.Fatalf("exit %d, %d problems, want 1 and 1; stderr %s", code, len(got), errOut)
	}
	g := got[0]
	if g.Problem == "" || g.Fix == "" {
		t.Errorf("problem %q, fix %q: want both", g.Problem, g.Fix)
	}
	g.Problem, g.Fix = "", ""
	if g != want {
		t.Errorf("got %+v\nwant %+v", g, want)
	}
	code, got, _ = lintJSON("testdata/lint/schema.yaml")
	if code != base.ExitFail || len(got) != 1 || got[0].Line == 0 || got[0].Column == 0 || got[0].Rule != "" {
		t.Errorf("schema.yaml: exit %d, problems %+v: want one with its line and column", code, got)
	}
	code, got, errOut = lintJSON("../../template.yaml")
	if code != base.ExitOK || len(got) != 0 || errOut != "" {
		t.Errorf("template.yaml: exit %d, problems %+v, stderr %q: want 0, [] and nothing", code, got, errOut)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: !Bogus x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, got, errOut = lintJSON(bad)
	if code != base.ExitFail || len(got) != 1 || got[0].Line != 5 || got[0].Column != 18 || !strings.Contains(errOut, "unknown tag !Bogus") {
		t.Errorf("a template that cannot be read: exit %d, problems %+v, stderr %q: want 1, one problem at 5:18, the error", code, got, errOut)
	}
	var out, stderr bytes.Buffer
	if code := run(context.Background(), []string{"lint", "--format", "xml", file}, strings.NewReader(""), &out, &stderr); code != base.ExitUsage {
		t.Errorf("--format xml: exit %d, want %d; stderr %s", code, base.ExitUsage, stderr.String())
	}
}

// pitfallRules lints text as klt lint does and returns the rules of its problems, and the
// problems; a problem of another check (no rule) fails the test: the template under test must
// be clean but for the pitfall.
func pitfallRules(t *testing.T, text string) ([]string, []samlint.Problem) {
	t.Helper()
	problems, err := samlint.LintData(context.Background(), "t.yaml", ".", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, p := range problems {
		if p.Rule == "" {
			t.Errorf("a problem of another check: %s", p)
		}
		rules = append(rules, p.Rule)
	}
	return rules, problems
}
