// Package sampletest runs the sample functions' handlers on their fixtures against the real
// local servers (dynalite, local-aws-sqs; Kafka is kfake, started by each test), with the
// environment the template gives each function.
package sampletest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/internal/template"
)

// Events is the fixture directory, from a sample's directory (samples/<function>).
const Events = "../../testdata/events"

// Env sets what Lambda (and sam local invoke) set for the function with the logical ID fn,
// then vars, for the rest of t. The AWS shared config and credentials files are pointed at
// nothing, so that LoadDefaultConfig reads the environment alone, as in Lambda.
//
// vars must be what template.yaml gives the function (its Globals' variables and its own),
// with its references resolved to local resources: Env fails t when vars has a variable the
// template does not declare (Lambda would not set it; AWS_ENDPOINT_URL_* excepted, which point
// the SDK at the local servers), lacks one the template sets with a !Ref, or gives a literal
// another value. A literal vars leaves out (POWERTOOLS_SERVICE_NAME, say) is set as the
// template sets it, as Lambda would.
func Env(t *testing.T, fn string, vars map[string]string) {
	t.Helper()
	all := map[string]string{}
	for name, v := range templateLiterals(t, fn) {
		if !strings.HasPrefix(name, "AWS_ENDPOINT_URL_") {
			all[name] = v
		}
	}
	for k, v := range vars {
		all[k] = v
	}
	checkTemplate(t, fn, all)
	EnvUnchecked(t, fn, all)
}

// EnvUnchecked is Env without the comparison with template.yaml: for tests of a function
// started with a variable missing or wrong.
func EnvUnchecked(t *testing.T, fn string, vars map[string]string) {
	t.Helper()
	dir := t.TempDir()
	base := map[string]string{
		"AWS_REGION":                  "us-east-1",
		"AWS_DEFAULT_REGION":          "us-east-1",
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_LAMBDA_FUNCTION_NAME":    fn,
	}
	for k, v := range base {
		t.Setenv(k, v)
	}
	for k, v := range vars {
		t.Setenv(k, v)
	}
}

// Unset removes name from the environment for the rest of t.
func Unset(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "") // registers the restore
	os.Unsetenv(name)
}

// RequestID is the request ID of the invocations Context makes.
const RequestID = "52fdfc07-2182-154f-163f-5f0f9a621d72"

// Context is an invocation's context as aws-lambda-go gives one: a deadline, and the
// request ID (RequestID) and function ARN in lambdacontext, which lambdalog and metrics read.
func Context(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: RequestID,
		InvokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:" + os.Getenv("AWS_LAMBDA_FUNCTION_NAME")})
}

// CorrelationHeader is the record header the samples read their correlation ID from.
const CorrelationHeader = "correlation-id"

// WithCorrelationIDs returns the Kafka event payload with a correlation-id header added to
// each record: "corr-PARTITION-OFFSET".
func WithCorrelationIDs(t *testing.T, payload []byte) []byte {
	t.Helper()
	var ev struct {
		EventSource      string                      `json:"eventSource"`
		EventSourceArn   string                      `json:"eventSourceArn"`
		BootstrapServers string                      `json:"bootstrapServers"`
		Records          map[string][]map[string]any `json:"records"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	for _, recs := range ev.Records {
		for _, r := range recs {
			id := fmt.Sprintf("corr-%v-%v", r["partition"], r["offset"])
			var value []int
			for _, b := range []byte(id) {
				value = append(value, int(b))
			}
			hs, _ := r["headers"].([]any)
			r["headers"] = append(hs, map[string]any{CorrelationHeader: value})
		}
	}
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Fixture reads testdata/events/<fn>/<name>.
func Fixture(t *testing.T, fn, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Events, fn, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// SameJSON fails t unless got is the JSON of testdata/events/<fn>/<name> (compared as values).
func SameJSON(t *testing.T, got []byte, fn, name string) {
	t.Helper()
	want := Fixture(t, fn, name)
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("response %s is not JSON: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s/%s: %v", fn, name, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("response\n got %s\nwant %s (%s/%s)", gb, wb, fn, name)
	}
}

// DynamoDB starts dynalite with the idempotency table called table (dynamodb.TableInput),
// and returns its endpoint and a client.
func DynamoDB(t *testing.T, table string) (string, *awsdynamodb.Client) {
	t.Helper()
	srv := standintest.StartDynamoDB(t)
	client := srv.Client()
	if err := standin.CreateTable(context.Background(), client, dynamodb.TableInput(table)); err != nil {
		t.Fatal(err)
	}
	return srv.Endpoint(), client
}

// Items returns every item of table, string, number and boolean attributes as their text
// (any other type as its Go type's name).
func Items(t *testing.T, client *awsdynamodb.Client, table string) []map[string]string {
	t.Helper()
	out, err := client.Scan(context.Background(), &awsdynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	var items []map[string]string
	for _, it := range out.Items {
		m := map[string]string{}
		for k, v := range it {
			switch v := v.(type) {
			case *ddbtypes.AttributeValueMemberS:
				m[k] = v.Value
			case *ddbtypes.AttributeValueMemberN:
				m[k] = v.Value
			case *ddbtypes.AttributeValueMemberBOOL:
				m[k] = fmt.Sprint(v.Value)
			default:
				m[k] = fmt.Sprintf("%T", v)
			}
		}
		items = append(items, m)
	}
	return items
}

// SQS starts local-aws-sqs with a queue for each name (FIFO when it ends in .fifo), and
// returns its endpoint, a client and the queues' URLs by name.
func SQS(t *testing.T, names ...string) (string, *sqs.Client, map[string]string) {
	t.Helper()
	srv := standintest.StartSQS(t)
	client := srv.Client()
	urls := map[string]string{}
	for _, n := range names {
		u, err := standin.CreateQueue(context.Background(), client, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		urls[n] = u
	}
	return srv.Endpoint(), client, urls
}

// Drain receives every message of the queue (waiting up to wait for want of them), in the
// order the queue gives them.
func Drain(t *testing.T, client *sqs.Client, url string, want int, wait time.Duration) []types.Message {
	t.Helper()
	msgs, err := standintest.Receive(context.Background(), client, url, want+1, wait)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// LambdaSQSEvent is the JSON of the SQS event the SQS event source mapping would deliver for
// msgs received from the queue with the ARN arn, as klt local's mapping builds it
// (esm.SQSMessage): system attributes as strings, message attributes with stringValue or
// binaryValue (base64), empty list values, and dataType.
func LambdaSQSEvent(arn string, msgs []types.Message) ([]byte, error) {
	ev := events.SQSEvent{Records: []events.SQSMessage{}}
	for _, m := range msgs {
		ev.Records = append(ev.Records, esm.SQSMessage(m, arn, "us-east-1"))
	}
	return json.MarshalIndent(ev, "", "  ")
}

// Lines splits JSON log output into objects, failing t on a line that is not one.
func Lines(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("output line is not JSON: %s", l)
		}
		lines = append(lines, m)
	}
	return lines
}

// WithMsg returns the lines whose "message" (lambdalog's key for slog's msg) is msg.
func WithMsg(lines []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["message"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// Template is template.yaml, from a sample's directory.
const Template = "../../template.yaml"

// templateEnv returns the Environment.Variables of the function fn in Template, Globals'
// merged in as SAM merges them.
func templateEnv(t *testing.T, fn string) []template.Pair {
	t.Helper()
	tpl, err := template.ReadFile(Template)
	if err != nil {
		t.Fatal(err)
	}
	r := tpl.Resource(fn)
	if r == nil {
		t.Fatalf("%s: no Resources.%s", Template, fn)
	}
	env, err := tpl.Environment(r)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// isLiteral reports whether v is a literal value (not an intrinsic function).
func isLiteral(v *template.Node) bool {
	return v.Kind == template.Scalar && (v.Tag == template.TagStr || v.Tag == template.TagInt || v.Tag == template.TagBool)
}

// templateLiterals returns the variables the template gives fn a literal value.
func templateLiterals(t *testing.T, fn string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range templateEnv(t, fn) {
		if isLiteral(p.Value) {
			out[p.Key] = p.Value.Text
		}
	}
	return out
}

// checkTemplate compares vars with the Environment.Variables of the function fn in Template.
func checkTemplate(t *testing.T, fn string, vars map[string]string) {
	t.Helper()
	declared := map[string]bool{}
	for _, p := range templateEnv(t, fn) {
		name, v := p.Key, p.Value
		declared[name] = true
		got, ok := vars[name]
		ref, arg, isRef := v.Intrinsic()
		switch {
		case strings.HasPrefix(name, "AWS_ENDPOINT_URL_"):
			// Empty in the template; the tests point them at the local servers.
		case isLiteral(v):
			if !ok || got != v.Text {
				t.Errorf("%s sets %s=%s for %s; the test sets %q", Template, name, v.Text, fn, got)
			}
		case isRef && ref == "Ref" && !ok:
			t.Errorf("%s sets %s (!Ref %s) for %s; the test does not", Template, name, arg.Text, fn)
		}
	}
	for name := range vars {
		if !declared[name] && !strings.HasPrefix(name, "AWS_ENDPOINT_URL_") {
			t.Errorf("the test sets %s for %s, which %s does not declare (Lambda would not set it)", name, fn, Template)
		}
	}
}

// runMainEnv, set in a test binary's environment, makes Main run the sample's main instead of
// the tests.
const runMainEnv = "SAMPLETEST_RUN_MAIN"

// Main is a sample's TestMain: it runs the tests, or, in the process MainFails starts, the
// sample's main itself.
func Main(m *testing.M, main func()) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0) // main returned: lambda.Start does not, outside Lambda it exits
	}
	os.Exit(m.Run())
}

// MainFails runs the sample's main (through Main, in a new test process) with the environment
// Lambda would give fn plus vars, and fails t unless it exits with status 1 and says want on
// stderr.
func MainFails(t *testing.T, fn string, vars map[string]string, want string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{runMainEnv + "=1", "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_LAMBDA_FUNCTION_NAME=" + fn}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), want) {
		t.Errorf("main with %v: %v, stderr %q; want exit status 1 and %q", vars, err, stderr.String(), want)
	}
}

// Sunk reports whether an idempotency record, as Items reads it, is a record the sink took
// (batch completes its key with the outcome "sunk", so that a redelivery skips it) rather
// than one the handler applied.
func Sunk(item map[string]string) bool {
	return item["status"] == "COMPLETED" && item["data"] == `{"outcome":"sunk"}`
}

// Metric returns how many values of the metric name the EMF documents among lines hold,
// counting only documents that publish it with the service dimension (package metrics writes
// POWERTOOLS_SERVICE_NAME as "service").
func Metric(lines []map[string]any, name string) int {
	n := 0
	for _, l := range lines {
		aws, ok := l["_aws"].(map[string]any)
		if !ok || l["service"] == nil {
			continue
		}
		dims, _ := json.Marshal(aws["CloudWatchMetrics"])
		if !bytes.Contains(dims, []byte(`"service"`)) {
			continue
		}
		if vs, ok := l[name].([]any); ok {
			n += len(vs)
		}
	}
	return n
}
