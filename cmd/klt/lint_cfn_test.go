package main

import (
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
