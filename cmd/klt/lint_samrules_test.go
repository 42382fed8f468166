package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
)

// samRulesWant is, for each template of testdata/lint/samrules, the message of the SAM
// transform (or CloudFormation) that klt lint quotes for its one mistake, as `sam deploy`
// and cfn-lint give it; the pass-* templates have none. TestLintAgreesWithCfnLint checks
// the same messages against cfn-lint's where it is installed.
var samRulesWant = map[string]string{
	"smk-no-bootstrap.yaml":    "Resource with id [ConsumerFunction] is invalid. Event with id [Orders] is invalid. No KafkaBootstrapServers provided for self managed kafka as an event source",
	"smk-two-topics.yaml":      "Resource with id [ConsumerFunction] is invalid. Event with id [Orders] is invalid. Topics for self managed kafka only supports single configuration entry.",
	"smk-two-auth.yaml":        "Resource with id [ConsumerFunction] is invalid. Event with id [Orders] is invalid. Multiple auth mechanism properties specified in SourceAccessConfigurations for self managed kafka event.",
	"smk-access-string.yaml":   "Resource with id [ConsumerFunctionOrders] is invalid. Type of property 'SourceAccessConfigurations' is invalid.",
	"smk-subnet-only.yaml":     "Resource with id [ConsumerFunction] is invalid. Event with id [Orders] is invalid. VPC_SUBNET and VPC_SECURITY_GROUP in SourceAccessConfigurations for SelfManagedKafka must be both provided.",
	"msk-schema-registry.yaml": "Resource with id [ConsumerFunction] is invalid. Event with id [Orders] is invalid. Missing required field SchemaValidationConfigs in SchemaRegistryConfig",
	"msk-onfailure-type.yaml":  "Resource with id [ConsumerFunction] is invalid. Event with id [ConsumerFunctionOrders] is invalid. The only valid values for 'Type' are 'SQS', 'SNS', 'S3', and 'Kafka'",
	"msk-two-topics.yaml":      "expected maximum item count: 1, found: 2",
	"pass-msk.yaml":            "",
	// KafkaBootstrapServers: !Ref a CommaDelimitedList, SqsSubscription with BatchSize: 8,
	// CodeUri: target/app.zip: the transform takes all three.
	"pass-sam-accepts.yaml": "",
}

// TestLintSAMRules: klt lint refuses what the SAM transform refuses for pull event sources,
// one line quoting the transform's message, and passes what it takes.
func TestLintSAMRules(t *testing.T) {
	files, err := filepath.Glob("testdata/lint/samrules/*.yaml")
	if err != nil || len(files) != len(samRulesWant) {
		t.Fatalf("testdata/lint/samrules: %d templates (%v), samRulesWant has %d", len(files), err, len(samRulesWant))
	}
	for _, file := range files {
		want, ok := samRulesWant[filepath.Base(file)]
		if !ok {
			t.Errorf("%s: not in samRulesWant", file)
			continue
		}
		code, out, errOut := runLintCmd(t, file)
		if want == "" {
			if code != base.ExitOK || !strings.HasPrefix(out, "ok: ") {
				t.Errorf("%s: exit %d, want ok; stdout:\n%s\nstderr:\n%s", file, code, out, errOut)
			}
			continue
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], `"`+want+`"`) || !strings.Contains(lines[0], "; fix: ") {
			t.Errorf("%s: exit %d, want 1 and one line quoting\n  %s\nstdout:\n%s", file, code, want, out)
		}
	}
}
