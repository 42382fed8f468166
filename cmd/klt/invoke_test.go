package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/funcrun"
	"github.com/kafkalambda/toolkit/esm/samspec"
	"github.com/kafkalambda/toolkit/internal/standin"
)

const invokeTemplateFile = "testdata/invoke/template.yaml"

// testEmulator builds the pinned emulator once for the tests that give --emulator (the tests
// without it build it as users do).
var testEmulator = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "klt-rie-")
	if err != nil {
		return "", err
	}
	return funcrun.BuildEmulator(context.Background(), dir)
})

func emulatorT(t *testing.T) string {
	t.Helper()
	p, err := testEmulator()
	if err != nil {
		t.Fatalf("building the emulator: %v", err)
	}
	return p
}

// runKLT runs klt with args and returns its exit code, stdout and stderr.
func runKLT(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code := run(ctx, args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeInvokeEvent(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInvokeEnvironment(t *testing.T) {
	// Under the real emulator, built from tools/go.mod as a user's run builds it: the function
	// gets sam local invoke's variables and the template's, intrinsics resolved to the local
	// table and queue, KAFKA_AUTH replaced by plaintext, nothing of klt's own environment
	// (AWS_PROFILE), and its log line goes to stderr.
	t.Setenv("AWS_PROFILE", "someone-elses")
	code, out, errOut := runKLT(t, "invoke", "--template", invokeTemplateFile, "EchoFunction", writeInvokeEvent(t, `{"mode":"env"}`))
	if code != base.ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not the response JSON: %v\n%s", err, out)
	}
	url, _ := got["QUEUE_URL"].(string)
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/123456789012/WorkQueue\.fifo$`).MatchString(url) {
		t.Errorf("QUEUE_URL = %q, want the local queue's URL", url)
	}
	delete(got, "QUEUE_URL")
	want := map[string]any{
		"AWS_LAMBDA_FUNCTION_NAME": "EchoFunction", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		"AWS_LAMBDA_FUNCTION_TIMEOUT": "30", "AWS_REGION": "us-east-1", "AWS_SAM_LOCAL": "true",
		"STAGE": "dev", "GREETING": "hello-dev-us-east-1", "TABLE_NAME": "ItemsTable",
		"TABLE_ARN": "arn:aws:dynamodb:us-east-1:123456789012:table/ItemsTable",
		"QUEUE_ARN": "arn:aws:sqs:us-east-1:123456789012:WorkQueue.fifo", "KAFKA_AUTH": "plaintext",
		"OVERRIDDEN": "from-template", "AWS_PROFILE": "", "requestIdSet": true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("response\n%v\nwant\n%v", got, want)
	}
	if !strings.Contains(errOut, "fn: mode=env") || !strings.Contains(errOut, "REPORT RequestId") {
		t.Errorf("stderr lacks the function's log and the emulator's REPORT:\n%s", errOut)
	}
	if strings.Contains(out, "fn: mode") {
		t.Errorf("the function's log reached stdout:\n%s", out)
	}
}

func TestInvokeLocalServers(t *testing.T) {
	// The function writes to and reads from the local DynamoDB table, sends to the local FIFO
	// queue (created with its dead-letter queue) and produces to the local Kafka, all through
	// the SDK's default configuration and KAFKA_BOOTSTRAP_SERVERS.
	code, out, errOut := runKLT(t, "invoke", "--emulator", emulatorT(t), "--template", invokeTemplateFile,
		"EchoFunction", writeInvokeEvent(t, `{"mode":"aws","id":"o-1"}`))
	if code != base.ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if strings.TrimSpace(out) != `{"produced":true,"sent":true,"stored":true}` {
		t.Errorf("response %s", out)
	}
}

func TestInvokeEnvVarsOverride(t *testing.T) {
	// An --env-vars file overrides declared variables, per function over "Parameters", and
	// ignores undeclared ones, as sam local invoke does.
	f := filepath.Join(t.TempDir(), "env.json")
	os.WriteFile(f, []byte(`{"Parameters":{"OVERRIDDEN":"global","STAGE":"prod"},"EchoFunction":{"OVERRIDDEN":"mine","UNDECLARED":"x"}}`), 0o644)
	code, out, errOut := runKLT(t, "invoke", "--emulator", emulatorT(t), "--template", invokeTemplateFile, "--env-vars", f,
		"EchoFunction", writeInvokeEvent(t, `{"mode":"env"}`))
	if code != base.ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var got map[string]any
	json.Unmarshal([]byte(out), &got)
	if got["OVERRIDDEN"] != "mine" || got["STAGE"] != "prod" {
		t.Errorf("OVERRIDDEN=%v STAGE=%v, want mine and prod", got["OVERRIDDEN"], got["STAGE"])
	}
}

func TestInvokeMakefile(t *testing.T) {
	// BuildMethod makefile: the function's make target runs with ARTIFACTS_DIR and the host's
	// GOARCH on the command line; a target that builds for another architecture is refused.
	code, out, errOut := runKLT(t, "invoke", "--emulator", emulatorT(t), "--template", invokeTemplateFile,
		"MakeFunction", writeInvokeEvent(t, `{"id":"x"}`))
	if code != base.ExitOK || strings.TrimSpace(out) != `{"echo":"x"}` {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if goarch := runtimeGOARCH(); goarch != "arm64" {
		code, _, errOut = runKLT(t, "invoke", "--emulator", emulatorT(t), "--template", invokeTemplateFile,
			"ArmOnlyFunction", writeInvokeEvent(t, `{}`))
		if code != base.ExitFail || !strings.Contains(errOut, "not for this machine's "+goarch) {
			t.Errorf("exit %d, stderr:\n%s", code, errOut)
		}
	}
}

func TestInvokeFailures(t *testing.T) {
	// Each failure ends klt invoke with status 1 and one clear message, in bounded time.
	notJSON := writeInvokeEvent(t, `{"mode": oops}`)
	env := writeInvokeEvent(t, `{"mode":"env"}`)
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
		out  string // stdout, exactly (the function's response when there is one)
	}{
		{"missing function", []string{"NoSuchFunction", env},
			`no function "NoSuchFunction"; functions in the template: ArmOnlyFunction, BrokenFunction, EchoFunction`, ""},
		{"not a function", []string{"ItemsTable", env}, "ItemsTable is AWS::DynamoDB::Table, not an AWS::Serverless::Function", ""},
		{"event not JSON", []string{"EchoFunction", notJSON}, "event.json is not JSON (invalid character 'o'", ""},
		{"missing event", []string{"EchoFunction", "no-such-event.json"}, "no-such-event.json: no such file", ""},
		{"build failure", []string{"BrokenFunction", env}, "build failed: go build of", ""},
		{"function error", []string{"EchoFunction", writeInvokeEvent(t, `{"mode":"fail","id":"o-9"}`)},
			"klt: invoke EchoFunction: function error: errorString: boom: o-9", `{"errorMessage":"boom: o-9","errorType":"errorString"}` + "\n"},
		{"timeout", []string{"SlowFunction", writeInvokeEvent(t, `{"mode":"sleep"}`)}, "timed out (Timeout 1 s)", "Task timed out after 1.00 seconds\n"},
		{"unresolvable intrinsic", []string{"UnresolvableFunction", env},
			"UnresolvableFunction.Environment.Variables.CLUSTER: !ImportValue is an intrinsic function klt cannot evaluate; klt has no local value for it", ""},
		{"emulator does not start", []string{"--emulator", "/bin/false", "EchoFunction", env}, "the emulator exited before it listened", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"invoke", "--template", invokeTemplateFile}, tc.args...)
			if !strings.HasPrefix(tc.args[0], "--emulator") {
				args = append([]string{"invoke", "--emulator", emulatorT(t), "--template", invokeTemplateFile}, tc.args...)
			}
			start := time.Now()
			code, out, errOut := runKLT(t, args...)
			if code != base.ExitFail {
				t.Errorf("exit %d, want %d", code, base.ExitFail)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, errOut)
			}
			if out != tc.out {
				t.Errorf("stdout %q, want %q", out, tc.out)
			}
			if d := time.Since(start); d > 2*time.Minute {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestInvokeUsage(t *testing.T) {
	code, _, errOut := runKLT(t, "invoke", "EchoFunction")
	if code != base.ExitUsage || !strings.Contains(errOut, "want FUNCTION and EVENT, got 1 arguments") {
		t.Errorf("exit %d, stderr %s", code, errOut)
	}
	code, out, _ := runKLT(t, "help", "invoke")
	if code != base.ExitOK || !strings.Contains(out, "Usage: klt invoke [flags] FUNCTION EVENT") {
		t.Errorf("help: exit %d\n%s", code, out)
	}
}

func TestEnvVarsFile(t *testing.T) {
	// klt env-vars writes a --env-vars file pointing each function at the servers it started,
	// which answer while it serves.
	out := filepath.Join(t.TempDir(), "env.json")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stdout, stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"env-vars", "--template", "testdata/invoke/envvars-template.yaml", "-o", out}, strings.NewReader(""), &stdout, &stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != base.ExitOK {
			t.Errorf("exit %d\n%s", code, stderr.String())
		}
	}()
	var data []byte
	for deadline := time.Now().Add(time.Minute); ; {
		var err error
		if data, err = os.ReadFile(out); err == nil && len(data) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no %s after a minute; stderr:\n%s", out, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var file map[string]map[string]string
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	w := file["WriterFunction"]
	if w["TABLE_NAME"] != "ItemsTable" || !strings.HasPrefix(w["QUEUE_URL"], "http://127.0.0.1:") ||
		w["KAFKA_AUTH"] != "plaintext" || !strings.HasPrefix(w["KAFKA_BOOTSTRAP_SERVERS"], "127.0.0.1:") ||
		!strings.HasPrefix(w["AWS_ENDPOINT_URL_DYNAMODB"], "http://127.0.0.1:") || !strings.HasPrefix(w["AWS_ENDPOINT_URL_SQS"], "http://127.0.0.1:") {
		t.Errorf("WriterFunction: %v", w)
	}
	if r := file["ReaderFunction"]; r["TABLE_NAME"] != "ItemsTable" || len(r) != 1 {
		t.Errorf("ReaderFunction: %v", r)
	}
	// The servers answer while klt env-vars serves: the queue URL is the local queue's.
	client := sqs.NewFromConfig(standin.ClientConfig("us-east-1"), func(o *sqs.Options) { o.BaseEndpoint = aws.String(w["AWS_ENDPOINT_URL_SQS"]) })
	if _, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(w["QUEUE_URL"])}); err != nil {
		t.Errorf("the local queue does not answer: %v", err)
	}
	if !strings.Contains(stderr.String(), "ReaderFunction does not declare AWS_ENDPOINT_URL_DYNAMODB") {
		t.Errorf("no warning about ReaderFunction:\n%s", stderr.String())
	}
}

// runtimeGOARCH is the GOARCH go builds for here.
func runtimeGOARCH() string {
	out, err := exec.Command(funcrun.GoCommand(), "env", "GOARCH").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func TestInvokeSamples(t *testing.T) {
	// Must show of issue 11: every sample, invoked with each fixture of
	// testdata/events/<sample>/ through klt invoke (what make invoke runs) under the real
	// emulator, with the repository's template.yaml and make build-<LogicalId> targets, returns
	// the .response.json beside the fixture.
	fixtures, err := filepath.Glob("../../testdata/events/*/*.response.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(fixtures) == 0 {
		t.Fatal("no testdata/events/<sample>/*.response.json fixtures")
	}
	emulator := emulatorT(t)
	for _, resp := range fixtures {
		dir := filepath.Base(filepath.Dir(resp))
		fn := strings.ToUpper(dir[:1]) + dir[1:] + "Function" // samples/consumer -> ConsumerFunction
		event := strings.TrimSuffix(resp, ".response.json") + ".json"
		t.Run(dir+"/"+filepath.Base(event), func(t *testing.T) {
			want, err := os.ReadFile(resp)
			if err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runKLT(t, "invoke", "--emulator", emulator, "--template", "../../template.yaml", fn, event)
			if code != base.ExitOK {
				t.Fatalf("klt invoke %s %s: exit %d\nstdout: %s\nstderr: %s", fn, event, code, out, errOut)
			}
			var got, wantV any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("response is not JSON: %v\n%s", err, out)
			}
			if err := json.Unmarshal(want, &wantV); err != nil {
				t.Fatalf("%s: %v", resp, err)
			}
			if !reflect.DeepEqual(got, wantV) {
				t.Errorf("response\n%s\nwant (%s)\n%s\nlogs:\n%s", out, resp, want, errOut)
			}
		})
	}
}

// TestBuildUnreadableSource: a Go file of the CodeUri that cannot be read (here a directory
// named like one) fails the build with its name, rather than count as "not a main package" and
// send the build down the makefile path.
func TestBuildUnreadableSource(t *testing.T) {
	code := t.TempDir()
	if err := os.Mkdir(filepath.Join(code, "main.go"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := funcrun.BuildBootstrap(context.Background(), &samspec.FunctionSpec{LogicalID: "Fn", CodeURI: code}, t.TempDir(), new(bytes.Buffer))
	if err == nil || !strings.HasPrefix(err.Error(), "CodeUri: ") || !strings.Contains(err.Error(), "main.go") {
		t.Fatalf("buildBootstrap = %v, want a CodeUri error naming main.go", err)
	}
}
