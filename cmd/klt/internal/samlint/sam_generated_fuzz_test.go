package samlint

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLintGenerated: any template, the transform fixtures and their mutations, lints without a
// panic: the checks of what the transform makes (the function and mappings it writes, cycles,
// primary identifiers) take whatever shape a template has.
func FuzzLintGenerated(f *testing.F) {
	files, err := filepath.Glob("../../testdata/lint/transform/*.yaml")
	if err != nil || len(files) == 0 {
		f.Fatalf("transform fixtures: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("Resources:\n  A: {Type: AWS::SQS::Queue, DependsOn: [A, B], Properties: {QueueName: !Sub '${B.Arn}'}}\n  B: {Type: AWS::Serverless::Function, Properties: {Policies: !GetAtt A.Arn, FunctionName: !Ref AWS::NoValue, Events: {E: {Type: SQS, Properties: {Queue: !Ref A, DestinationConfig: {OnFailure: {Type: SQS}}}}}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = LintData(context.Background(), "fuzz.yaml", t.TempDir(), data)
	})
}
