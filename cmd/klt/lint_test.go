package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/samlint"
	"github.com/kafkalambda/toolkit/internal/template"
)

// runLintCmd runs "klt lint file" and returns its exit code, stdout and stderr.
func runLintCmd(t *testing.T, file string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"lint", file}, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestLintGood: a template with none of the mistakes, written with short-form intrinsics
// (!Ref, !GetAtt A.B, !Sub), passes the SAM schema and every check.
func TestLintGood(t *testing.T) {
	code, out, errOut := runLintCmd(t, "testdata/lint/good.yaml")
	if code != base.ExitOK || errOut != "" || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("klt lint good.yaml: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestLintMistakes: each template of testdata/lint is good.yaml with one mistake, and klt
// lint reports exactly that one, as "FILE:LINE:COL RESOURCE PATH: problem; fix: ...", and
// exits 1.
func TestLintMistakes(t *testing.T) {
	tests := []struct {
		file string
		want string // the start of the one line
		has  string // and a part of the rest of it
	}{
		{"schema.yaml", `ConsumerFunction Properties.Events.Orders.Properties.BatchSzie: sam deploy fails: "Resource with id [ConsumerFunctionOrders] is invalid. property BatchSzie not defined for resource of type MSK"`, "fix: remove it"},
		{"no-pbr-kafka.yaml", "ConsumerFunction Properties.Events.Orders.Properties.FunctionResponseTypes: the code of ConsumerFunction returns partial-batch responses (it imports github.com/kafkalambda/toolkit/batch) but its MSK event source does not ask for them", "fix: add FunctionResponseTypes: [ReportBatchItemFailures]"},
		{"no-pbr-sqs.yaml", "WorkerFunction Properties.Events.Work.Properties.FunctionResponseTypes: the code of WorkerFunction returns partial-batch responses (it imports github.com/kafkalambda/toolkit/fanout) but its SQS event source", "fix: add FunctionResponseTypes: [ReportBatchItemFailures]"},
		{"no-pbr-dynamodb.yaml", "ProducerFunction Properties.Events.Outbox.Properties.FunctionResponseTypes: the code of ProducerFunction returns partial-batch responses (it uses aws-lambda-go's events.DynamoDBEventResponse) but its DynamoDB event source", "failures are lost"},
		{"makefile.yaml", "ConsumerFunction Properties.Events.Orders.Properties.FunctionResponseTypes: the code of ConsumerFunction returns partial-batch responses (it imports github.com/kafkalambda/toolkit/batch)", "fix: add FunctionResponseTypes"},
		{"esm-no-pbr.yaml", "ConsumerMapping Properties.FunctionResponseTypes: the code of ConsumerFunction returns partial-batch responses (it imports github.com/kafkalambda/toolkit/batch) but its MSK event source", "fix: add FunctionResponseTypes"},
		{"esm-kafka-batch.yaml", "ConsumerMapping Properties.BatchSize: BatchSize 0 is out of range", "fix: set BatchSize between 1 and 10000"},
		{"esm-visibility.yaml", "WorkQueue Properties.VisibilityTimeout: VisibilityTimeout 100s is under 6 x the 20s Timeout of WorkerFunction", "at least 120"},
		{"visibility.yaml", "WorkQueue Properties.VisibilityTimeout: VisibilityTimeout 60s is under 6 x the 20s Timeout of WorkerFunction", "fix: set VisibilityTimeout to at least 120"},
		{"fifo-batch.yaml", "WorkerFunction Properties.Events.Work.Properties.BatchSize: BatchSize 11 is over 10, the most an event source mapping on a FIFO queue (WorkQueue) takes", "fix: set BatchSize to 10 or less"},
		{"kafka-batch.yaml", "DispatcherFunction Properties.Events.Orders.Properties.BatchSize: BatchSize 10001 is out of range: Kafka event source mappings take 1 to 10000", "fix: set BatchSize between 1 and 10000"},
		{"kafka-window.yaml", "ConsumerFunction Properties.Events.Orders.Properties.MaximumBatchingWindowInSeconds: MaximumBatchingWindowInSeconds 301 is out of range", "fix: set MaximumBatchingWindowInSeconds between 0 and 300"},
		{"filter.yaml", `ConsumerFunction Properties.Events.Orders.Properties.FilterCriteria.Filters[0].Pattern: invalid FilterCriteria: value.type: must be an object or an array, got string "order"`, "fix: correct the pattern"},
		{"ttl-missing.yaml", "IdempotencyTable Properties.TimeToLiveSpecification: no TTL, and ConsumerFunction keeps idempotency records in it", "fix: add TimeToLiveSpecification: {AttributeName: expiration, Enabled: true}"},
		{"ttl-attribute.yaml", `IdempotencyTable Properties.TimeToLiveSpecification: TTL is on "expires_at"`, `expire through "expiration"`},
		{"iam-sqs.yaml", "ConsumerFunction Properties.Policies: IAM does not allow sqs:SendMessage on FailureQueue, which the code calls: it sends to SQS with sqssink.New", "fix: add SQSSendMessagePolicy: {QueueName: !GetAtt FailureQueue.QueueName}"},
		{"iam-wrong-queue.yaml", "ConsumerFunction Properties.Policies: IAM does not allow sqs:SendMessage on FailureQueue", "QueueName: !GetAtt FailureQueue.QueueName"},
		{"iam-dynamodb.yaml", "ConsumerFunction Properties.Policies: IAM does not allow dynamodb:PutItem, dynamodb:DeleteItem on IdempotencyTable", "fix: add DynamoDBCrudPolicy: {TableName: !Ref IdempotencyTable}"},
		{"iam-kafka.yaml", "ProducerFunction Properties.Policies: IAM does not allow kafka-cluster:WriteData on any resource, which the code calls: it produces to Kafka with IAM auth", "kafka-cluster:Connect on the cluster"},
	}
	seen := map[string]bool{"good.yaml": true, "lmi-good.yaml": true} // lmi-good.yaml: TestLintLMIGood
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			code, out, errOut := runLintCmd(t, filepath.Join("testdata/lint", tt.file))
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) == 1 {
				lines[0] = cutPos(t, lines[0], filepath.Join("testdata/lint", tt.file))
			}
			if code != base.ExitFail || len(lines) != 1 || !strings.HasPrefix(lines[0], tt.want) || !strings.Contains(lines[0], tt.has) {
				t.Fatalf("exit %d, want 1 and one line starting\n  %s\nand with %q; stdout:\n%s\nstderr:\n%s", code, tt.want, tt.has, out, errOut)
			}
			if !strings.Contains(errOut, "1 problem") {
				t.Errorf("stderr %q, want the count of problems", errOut)
			}
		})
	}
	// Every template of the directory is tested.
	files, _ := filepath.Glob("testdata/lint/*.yaml")
	for _, f := range files {
		// pitfall-*.yaml: TestLintPitfalls; schema-*.yaml have several mistakes each:
		// TestLintResourceSchemas; env-*.yaml too: TestLintEnvironment.
		if b := filepath.Base(f); !seen[b] && !strings.HasPrefix(b, "pitfall-") && !strings.HasPrefix(b, "schema-") && !strings.HasPrefix(b, "env-") {
			t.Errorf("%s has no case in TestLintMistakes", f)
		}
	}
}

// TestLintTemplateYAML: the repository's template.yaml passes klt lint, the SAM schema
// included.
func TestLintTemplateYAML(t *testing.T) {
	code, out, errOut := runLintCmd(t, "../../template.yaml")
	if code != base.ExitOK {
		t.Fatalf("klt lint template.yaml: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestLintTemplateYAMLMistakes: klt lint does read template.yaml's functions (their code
// through "make -n build-<LogicalId>"): without FunctionResponseTypes, each event source of a
// function that returns partial-batch responses is reported.
func TestLintTemplateYAMLMistakes(t *testing.T) {
	data, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const pbr = "FunctionResponseTypes: [ReportBatchItemFailures]"
	if !bytes.Contains(data, []byte(pbr)) {
		t.Fatalf("template.yaml has no %q", pbr)
	}
	var kept []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) != pbr {
			kept = append(kept, line)
		}
	}
	problems, err := samlint.LintData(context.Background(), "template.yaml", "../..", []byte(strings.Join(kept, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	fns := map[string]bool{}
	for _, p := range problems {
		if !strings.HasSuffix(p.Path, "FunctionResponseTypes") {
			t.Errorf("unexpected problem: %s", p)
			continue
		}
		fn, _, _ := strings.Cut(strings.TrimPrefix(p.Problem, "the code of "), " ")
		fns[fn] = true
	}
	for _, fn := range []string{"ConsumerFunction", "DispatcherFunction", "WorkerFunction", "ProducerFunction"} {
		if !fns[fn] {
			t.Errorf("no FunctionResponseTypes problem for %s; problems: %v", fn, problems)
		}
	}
}

// TestLintReadErrors: what cannot be read is one clear error, exit 1, never "ok".
func TestLintReadErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ name, text, want string }{
		{"tag.yaml", "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: !Bogus x\n", "unknown tag !Bogus"},
		{"nores.yaml", "Description: x\n", "no Resources"},
		{"yaml.yaml", "Resources: [\n", "invalid YAML"},
		{"empty.yaml", "", "empty file"},
	}
	for _, tt := range tests {
		f := filepath.Join(dir, tt.name)
		if err := os.WriteFile(f, []byte(tt.text), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runLintCmd(t, f)
		if code != base.ExitFail || out != "" || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1 and %q", tt.name, code, out, errOut, tt.want)
		}
	}
	var out, usage bytes.Buffer
	if code := run(context.Background(), []string{"lint", "a.yaml", "b.yaml"}, strings.NewReader(""), &out, &usage); code != base.ExitUsage || !strings.Contains(usage.String(), "want one template") {
		t.Errorf("two templates: exit %d, stderr %q; want 2", code, usage.String())
	}
	code, _, errOut := runLintCmd(t, filepath.Join(dir, "missing.yaml"))
	if code != base.ExitFail || !strings.Contains(errOut, "missing.yaml") {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
}

// TestLintIntrinsicLongForms: short tags become the long forms CloudFormation reads.
func TestLintIntrinsicLongForms(t *testing.T) {
	doc := `A: !Ref X
B: !GetAtt Q.Arn
C: !GetAtt [Q, QueueName]
D: !Sub "${AWS::StackName}-${T}"
E: !If [Cond, !Ref Y, !Ref "AWS::NoValue"]
`
	v := mustTemplateValue(t, doc)
	want := `{"A":{"Ref":"X"},"B":{"Fn::GetAtt":["Q","Arn"]},"C":{"Fn::GetAtt":["Q","QueueName"]},"D":{"Fn::Sub":"${AWS::StackName}-${T}"},"E":{"Fn::If":["Cond",{"Ref":"Y"},{"Ref":"AWS::NoValue"}]}}`
	if v != want {
		t.Errorf("got  %s\nwant %s", v, want)
	}
	n, err := template.ReadNode("t.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := template.Refs(n); strings.Join(got, ",") != "X,Q,T,Y" {
		t.Errorf("refs = %v", got)
	}
}

func mustTemplateAny(t *testing.T, doc string) any {
	t.Helper()
	n, err := template.ReadNode("t.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	v, err := n.Plain()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustTemplateValue(t *testing.T, doc string) string {
	t.Helper()
	b, err := json.Marshal(mustTemplateAny(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzTemplateValue: any YAML either fails to convert with an error or converts to JSON that
// the schema validation takes, without a panic.
func FuzzTemplateValue(f *testing.F) {
	for _, name := range []string{"good.yaml", "schema.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata/lint", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("A: !GetAtt\nB: !Sub [x, {y: !Ref z}]\nC: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := template.ReadNode("fuzz.yaml", data)
		if err != nil {
			return
		}
		v, err := n.Plain()
		if err != nil {
			return
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("converted template does not marshal: %v", err)
		}
		if _, ok := v.(map[string]any); ok {
			if _, err := samlint.SchemaProblems(v); err != nil {
				t.Fatalf("schemaProblems: %v", err)
			}
		}
	})
}
