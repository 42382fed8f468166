package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/samlint"
)

// TestLintLMIGood: a Kafka consumer on Lambda Managed Instances with settings LMI takes
// (provided.al2023, 4096 MB at 2 GiB per vCPU: 2 vCPU, 128 invocations per environment, 64 per
// vCPU) passes; the pitfall-lmi-*.yaml templates each fail on one setting (TestLintPitfalls).
func TestLintLMIGood(t *testing.T) {
	problems, err := samlint.LintFile(context.Background(), "testdata/lint/lmi-good.yaml")
	if err != nil || len(problems) > 0 {
		t.Fatalf("lmi-good.yaml: %v %v, want no problem", err, problems)
	}
}

// TestLintLMIKafkaMappings: an account has at most 100 standard Kafka mappings on LMI, a
// quota that cannot be increased (lambda-managed-instances-quotas): 101 Kafka events on LMI
// functions are one problem, 100 none.
func TestLintLMIKafkaMappings(t *testing.T) {
	for _, n := range []int{100, 101} {
		var b strings.Builder
		b.WriteString("AWSTemplateFormatVersion: \"2010-09-09\"\nTransform: AWS::Serverless-2016-10-31\nResources:\n")
		for i := range n {
			fmt.Fprintf(&b, `  Fn%03d:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: s3://example-bucket/fn.zip
      Runtime: provided.al2023
      Handler: bootstrap
      MemorySize: 2048
      CapacityProviderConfig:
        Arn: arn:aws:lambda:us-east-1:123456789012:capacity-provider:orders
      Events:
        Orders:
          Type: MSK
          Properties:
            Stream: arn:aws:kafka:us-east-1:123456789012:cluster/demo/1
            Topics: [orders%d]
            StartingPosition: TRIM_HORIZON
            FunctionResponseTypes: [ReportBatchItemFailures]
`, i, i)
		}
		problems, err := samlint.LintData(context.Background(), "many.yaml", ".", []byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		var got []samlint.Problem
		for _, p := range problems {
			if p.Rule == samlint.RuleLMIKafkaQuota {
				got = append(got, p)
			}
		}
		want := 0
		if n > 100 {
			want = 1
		}
		if len(got) != want || len(problems) != want {
			t.Errorf("%d Kafka events on LMI: %d quota problems of %d (%v), want %d", n, len(got), len(problems), problems, want)
		}
		if want == 1 && !strings.Contains(got[0].Problem, "101 Kafka event sources") {
			t.Errorf("problem %q, want the count", got[0].Problem)
		}
	}
}
