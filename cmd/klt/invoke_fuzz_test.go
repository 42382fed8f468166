package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kafkalambda/toolkit/esm/samspec"
)

// FuzzInvokeTemplate: whatever the template says, reading its functions and resolving their
// environment (the intrinsics klt invoke evaluates: Ref, GetAtt, Sub, Join, Select, Split,
// If and conditions), and reading its event source mappings as klt local does, ends with a
// value or an error, never a panic or a hang.
func FuzzInvokeTemplate(f *testing.F) {
	for _, name := range []string{"testdata/invoke/template.yaml", "testdata/invoke/envvars-template.yaml", "../../template.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("Resources:\n  M:\n    Type: AWS::Lambda::EventSourceMapping\n    Condition: X\n    Properties:\n      FunctionName: !Ref F\n      EventSourceArn: !GetAtt Q.Arn\n      BatchSize: 10\n      ScalingConfig: {MaximumConcurrency: 1}\n      FilterCriteria: {Filters: [{Pattern: '{\"body\":[1]}'}]}\n  Q:\n    Type: AWS::SQS::Queue\n  F:\n    Type: AWS::Serverless::Function\n    Properties:\n      Events:\n        K: {Type: SelfManagedKafka, Properties: {Topics: [t], MaximumRetryAttempts: -1}}\nConditions:\n  X: !Equals [a, a]\n"))
	f.Add([]byte("Resources:\n  F:\n    Type: AWS::Serverless::Function\n    Properties:\n      Environment:\n        Variables:\n          A: !Sub '${AWS::Region}-${B}-${!C}'\n          B: !Select [5, !Split [',', 'a,b']]\n          C: !If [X, !Ref P, !Join ['', [a, !GetAtt Q.Arn]]]\nConditions:\n  X: !Not [!Condition X]\nParameters:\n  P: {Type: String}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "template.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		tpl, err := samspec.ReadInvokeTemplate(path)
		if err != nil {
			return
		}
		tables, err := tpl.Tables()
		if err != nil {
			return
		}
		r := &samspec.Resolver{T: tpl, Tables: map[string]samspec.LocalTable{}, Queues: map[string]samspec.LocalQueue{}, QueueURLs: map[string]string{}}
		for _, tb := range tables {
			r.Tables[tb.LogicalID] = tb
		}
		for _, q := range tpl.Queues() {
			r.Queues[q.LogicalID] = q
		}
		_, _, _ = samspec.LocalMappings(tpl, r) // mappings or an error: both fine
		for _, name := range tpl.FunctionNames() {
			fn, err := tpl.Function(name)
			if err != nil {
				continue
			}
			for _, k := range fn.EnvOrder {
				_, _ = r.Str(fn.Env[k], k) // a value or an error: both fine
			}
		}
	})
}
