package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
)

// TestLintResourceSchemas: klt lint checks plain CloudFormation resources against their
// resource provider schemas, and reports each mistake at the property's FILE:LINE:COL with a
// suggestion, as cfn-lint does (E3002, same lines and columns).
func TestLintResourceSchemas(t *testing.T) {
	tests := []struct {
		file string
		want []string // the lines, in order
	}{
		{"schema-misspelt.yaml", []string{
			"testdata/lint/schema-misspelt.yaml:20:7 ConsumerMapping Properties.MaximumBatchingWindowInSecond: unknown AWS::Lambda::EventSourceMapping property MaximumBatchingWindowInSecond; fix: did you mean MaximumBatchingWindowInSeconds?",
			"testdata/lint/schema-misspelt.yaml:21:7 ConsumerMapping Properties.FunctionResponseType: unknown AWS::Lambda::EventSourceMapping property FunctionResponseType; fix: did you mean FunctionResponseTypes?",
			"testdata/lint/schema-misspelt.yaml:26:7 WorkQueue Properties.VisiblityTimeout: unknown AWS::SQS::Queue property VisiblityTimeout; fix: did you mean VisibilityTimeout?",
		}},
		// Each line as cfn-lint 1.51.0 has it (same line and column), but for the one
		// ingress rule reported once where cfn-lint reports it at both keys, and the security
		// group ID's format (E1150), which klt does not check.
		{"schema-mistakes.yaml", []string{
			`testdata/lint/schema-mistakes.yaml:20:7 Mapping Properties.Topics: 2 items, want at most 1`,
			`testdata/lint/schema-mistakes.yaml:20:16 Mapping Properties.Topics[0]: "a" does not match the pattern ^[^.]([a-zA-Z0-9\-_.]+)`,
			`testdata/lint/schema-mistakes.yaml:20:19 Mapping Properties.Topics[1]: "b" does not match the pattern ^[^.]([a-zA-Z0-9\-_.]+)`,
			`testdata/lint/schema-mistakes.yaml:21:7 Mapping Properties.StartingPosition: "OLDEST" does not match the pattern (LATEST|TRIM_HORIZON|AT_TIMESTAMP)+`,
			`testdata/lint/schema-mistakes.yaml:22:7 Mapping Properties.BatchSize: got "lots", want integer`,
			`testdata/lint/schema-mistakes.yaml:23:7 Mapping Properties.Enabled: got "maybe", want boolean`,
			`testdata/lint/schema-mistakes.yaml:25:7 Mapping Properties.SourceAccessConfigurations: got "VPC_SUBNET", want array`,
			`testdata/lint/schema-mistakes.yaml:28:11 Mapping Properties.SelfManagedEventSource.Endpoints.KafkaBootstrapServers: !Ref gives a string, want array`,
			`testdata/lint/schema-mistakes.yaml:30:9 Mapping Properties.DestinationConfig.OnFailure: got "arn:aws:sqs:us-east-1:123456789012:dlq", want object`,
			`testdata/lint/schema-mistakes.yaml:35:7 Queue Properties.VisibilityTimeout: 50000 is over the maximum 43200`,
			`testdata/lint/schema-mistakes.yaml:36:37 Queue Properties.FifoQueue: got a list, want boolean`,
			`testdata/lint/schema-mistakes.yaml:41:5 Table Properties: missing required property KeySchema; fix: add KeySchema`,
			`testdata/lint/schema-mistakes.yaml:51:7 Rule Properties: only one of CidrIp, SourceSecurityGroupId may be set; fix: remove all but one`,
		}},
		// As cfn-lint 1.51.0 has them.
		{"schema-esm.yaml", []string{
			`testdata/lint/schema-esm.yaml:17:11 M Properties.AmazonManagedKafkaEventSourceConfig.SchemaRegistryConfig.EventRecordFormat: "JSONX" is not one of the allowed values; fix: use one of JSON, SOURCE`,
			`testdata/lint/schema-esm.yaml:19:9 M Properties.ProvisionedPollerConfig.MinimumPollers: 0 is under the minimum 1`,
			`testdata/lint/schema-esm.yaml:21:31 M Properties.MetricsConfig.Metrics[1]: "Bogus" is not one of the allowed values; fix: use one of EventCount, ErrorCount, KafkaMetrics`,
			`testdata/lint/schema-esm.yaml:24:11 M Properties.DestinationConfig.OnFailure.Destinaton: unknown property Destinaton; fix: did you mean Destination?`,
		}},
		// Placeholder ARNs in SAM properties the transform copies into the resources it
		// writes, at the value written (cfn-lint 1.51.0: E3510 and E3031, at the same places
		// but the Default, which it reports at Resources).
		{"schema-sam-arns.yaml", []string{
			`testdata/lint/schema-sam-arns.yaml:25:20 Worker Properties.DeadLetterQueue.TargetArn: CloudFormation fails: "my-dlq" does not match the pattern of an IAM policy Resource ^(arn:(aws[A-Za-z\-]*?|\*):[^:]+:[^:]*(:(?:\d{12}|\*|aws)?:.+|)|\*)$ (the transform writes it into the role's dead-letter statement); fix: give the ARN of the SQS dead-letter target (arn:aws:SERVICE:REGION:ACCOUNT:NAME), or a !Ref/!GetAtt of one in the template`,
			`testdata/lint/schema-sam-arns.yaml:30:60 Worker Properties.EventInvokeConfig.DestinationConfig.OnSuccess.Destination: CloudFormation fails: "done-queue" does not match the pattern ^$|arn:(aws[a-zA-Z0-9-]*):([a-zA-Z0-9\-])+:([a-z]+(-[a-z]+)+-\d{1})?:(\d{12})?:(.*) (the Destination of the AWS::Lambda::EventInvokeConfig the transform writes); fix: give the ARN of the queue, topic, function or event bus (arn:aws:SERVICE:REGION:ACCOUNT:NAME), or a !Ref/!GetAtt of one in the template`,
			`testdata/lint/schema-sam-arns.yaml:8:14 Worker Properties.EventInvokeConfig.DestinationConfig.OnFailure.Destination: CloudFormation fails: "my-topic" (the Default of parameter FailureTopic) does not match the pattern ^$|arn:(aws[a-zA-Z0-9-]*):([a-zA-Z0-9\-])+:([a-z]+(-[a-z]+)+-\d{1})?:(\d{12})?:(.*) (the Destination of the AWS::Lambda::EventInvokeConfig the transform writes); fix: give the ARN of the queue, topic, function or event bus (arn:aws:SERVICE:REGION:ACCOUNT:NAME), or a !Ref/!GetAtt of one in the template`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			code, out, errOut := runLintCmd(t, filepath.Join("testdata/lint", tt.file))
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if code != base.ExitFail || strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("exit %d, want 1 and\n%s\nstdout:\n%s\nstderr:\n%s", code, strings.Join(tt.want, "\n"), out, errOut)
			}
		})
	}
}

// TestLintResourceSchemasGood: a template with resources of every vendored service, written
// right (cfn-lint passes it), passes, and says nothing of unchecked types.
func TestLintResourceSchemasGood(t *testing.T) {
	code, out, errOut := runLintCmd(t, "testdata/lint/schema-good.yaml")
	if code != base.ExitOK || errOut != "" || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestLintUncheckedTypes: a resource type klt has no schema of is named in a note on stderr,
// once, and is no problem.
func TestLintUncheckedTypes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "template.yaml")
	tmpl := "Resources:\n  A:\n    Type: AWS::KMS::Key\n  B:\n    Type: AWS::KMS::Key\n  C:\n    Type: Custom::Thing\n"
	if err := os.WriteFile(file, []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runLintCmd(t, file)
	want := "note: not checked against a CloudFormation schema (klt carries none for them): AWS::KMS::Key\n"
	if code != base.ExitOK || errOut != want || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant stderr %q", code, out, errOut, want)
	}
}
