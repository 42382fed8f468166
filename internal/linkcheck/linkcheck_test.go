package linkcheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The functions of testdata/ whose sizes are compared, in the README's order.
var functions = []struct{ name, what string }{
	{"kafkaevent", "kafkaevent.Parse + lambda.Start"},
	{"batch", "batch.KafkaHandler"},
	{"xraytrace", "batch.KafkaHandler + xraytrace"},
	{"oteltrace", "batch.KafkaHandler + oteltrace (API only)"},
	{"codec", "batch.KafkaHandler + codec.JSON"},
}

// maxBatchOverhead is how much larger than the kafkaevent-only function the batch one may be:
// 0.5 MB. The linker keeps the package initialisation of every imported package, used or
// not, so what counts is what batch imports. It was 1.6 MB while batch's Kafka sink lived in
// batch and imported producer (franz-go, and the secretsmanager client's initialisation);
// 1.1 MB with the sink in batch/kafkasink, while batch imported package idempotency and with
// it the DynamoDB client (its service schemas and endpoint tables); 0.75 MB with
// idempotency's engine apart from its store (idempotency/dynamodb); 0.44 MB with the
// SQS sink in batch/sqssink (issue 28), so that batch links no SQS client (its SQSAPI
// interface named the client's request types, whose package initialisation came with them).
const maxBatchOverhead = 1 << 19

// maxCodecOverhead is how much larger than the batch function the one that decodes its
// values with codec.JSON may be: 6.5 MB. It was 7.1 MB while codec held the AWS Glue
// registry, whose client every function that imported codec linked, used or not (and whose
// package initialisation took 2.3 MB of memory and 6.3M instructions at each cold start); 6.0
// MB with it in codec/glue. The rest is the codecs' libraries (hamba/avro, protobuf,
// goccy/go-json, franz-go's pkg/sr), which codec's Avro, Protobuf and registry code name.
const maxCodecOverhead = 6.5 * (1 << 20)

// glueClient is the AWS SDK's Glue client, which only codec/glue may bring.
const glueClient = "github.com/aws/aws-sdk-go-v2/service/glue"

// forbidden are the packages that a function importing batch must not link: tracing SDKs and
// what they bring, and AWS service clients.
var forbidden = []string{
	"github.com/aws/aws-xray-sdk-go",
	"google.golang.org/grpc",
	"github.com/valyala/fasthttp",
	"golang.org/x/net/trace",
	"go.opentelemetry.io/",
	// AWS service clients: batch's sinks and stores that need one are packages of their own
	// (batch/sqssink, idempotency's DynamoDB store).
	"github.com/aws/aws-sdk-go-v2/service/",
}

// lambdaEnv is the environment `sam build` uses for a Go function on arm64 (provided.al2023).
var lambdaEnv = []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0"}

// lambdaFlags are the flags `sam build` passes (and -buildvcs=false, so that sizes do not
// depend on the checkout).
var lambdaFlags = []string{"-trimpath", "-ldflags=-s -w", "-tags=lambda.norpc", "-buildvcs=false"}

func goCmd(t *testing.T, env []string, args ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the functions: %v", err)
	}
	cmd := exec.Command(gobin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

func pkgs(names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "./testdata/" + n
	}
	return out
}

// deps lists the packages a function links, for linux/arm64 with the lambda.norpc tag.
func deps(t *testing.T, name string) []string {
	t.Helper()
	out := goCmd(t, lambdaEnv, "list", "-deps", "-tags=lambda.norpc", "./testdata/"+name)
	return strings.Fields(out)
}

func linked(deps []string, prefix string) []string {
	var out []string
	for _, d := range deps {
		if d == strings.TrimSuffix(prefix, "/") || strings.HasPrefix(d, strings.TrimSuffix(prefix, "/")+"/") {
			out = append(out, d)
		}
	}
	return out
}

// The tests run in parallel: each is mostly a go command, and their builds overlap.

// TestBinarySizes builds the four functions at once, as `sam build` would for arm64, prints
// their sizes, and holds batch to at most maxBatchOverhead (0.5 MB) more than kafkaevent
// alone.
func TestBinarySizes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	names := make([]string, len(functions))
	for i, f := range functions {
		names[i] = f.name
	}
	args := append(append([]string{"build", "-o", dir + string(filepath.Separator)}, lambdaFlags...), pkgs(names...)...)
	goCmd(t, lambdaEnv, args...)
	size := map[string]int64{}
	for _, f := range functions {
		st, err := os.Stat(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		size[f.name] = st.Size()
	}
	base := size["kafkaevent"]
	var table strings.Builder
	fmt.Fprintf(&table, "| function (linux/arm64) | size | vs kafkaevent |\n| --- | ---: | ---: |\n")
	for _, f := range functions {
		fmt.Fprintf(&table, "| %s | %.1f MB | %+.2f MB |\n", f.what, mb(size[f.name]), mb(size[f.name]-base))
	}
	t.Logf("GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build %s\n%s", strings.Join(lambdaFlags, " "), table.String())
	if d := size["batch"] - base; d > maxBatchOverhead {
		t.Errorf("batch.KafkaHandler adds %.2f MB to kafkaevent alone, more than %.1f MB: see maxBatchOverhead for what batch may import", mb(d), mb(maxBatchOverhead))
	}
	if d := size["codec"] - size["batch"]; d > maxCodecOverhead {
		t.Errorf("codec.JSON adds %.2f MB to batch.KafkaHandler alone, more than %.1f MB: see maxCodecOverhead for what codec may import", mb(d), mb(maxCodecOverhead))
	}
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// TestLinkedPackages: batch links no tracing SDK, gRPC, fasthttp or AWS service client;
// oteltrace links the OpenTelemetry API but not its SDK; xraytrace links the X-Ray SDK (so
// that the check is seen to find what it looks for).
func TestLinkedPackages(t *testing.T) {
	t.Parallel()
	b := deps(t, "batch")
	for _, p := range forbidden {
		if l := linked(b, p); len(l) > 0 {
			t.Errorf("a function importing batch links %s: %v", p, l)
		}
	}
	if l := linked(deps(t, "codec"), glueClient); len(l) > 0 {
		t.Errorf("a function using codec.JSON links the Glue client (only codec/glue may import it): %v", l)
	}
	x := deps(t, "xraytrace")
	if len(linked(x, "github.com/aws/aws-xray-sdk-go")) == 0 || len(linked(x, "google.golang.org/grpc")) == 0 {
		t.Error("the xraytrace function links no aws-xray-sdk-go or gRPC: is the check looking at the right list?")
	}
	o := deps(t, "oteltrace")
	if len(linked(o, "go.opentelemetry.io/otel/trace")) == 0 {
		t.Error("the oteltrace function does not link go.opentelemetry.io/otel/trace")
	}
	for _, p := range append([]string{"go.opentelemetry.io/otel/sdk"}, forbidden[:4]...) {
		if l := linked(o, p); len(l) > 0 {
			t.Errorf("a function importing oteltrace links %s: %v", p, l)
		}
	}
}

// TestStartup runs small programs built for this machine: one importing batch starts with a
// malformed AWS_XRAY_DAEMON_ADDRESS and leaves /debug/requests unregistered; so does one with
// oteltrace; one with xraytrace does neither, as its package doc says.
func TestStartup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	probes := []string{"probe-batch", "probe-oteltrace", "probe-xraytrace"}
	goCmd(t, []string{"GOOS=" + runtime.GOOS, "GOARCH=" + runtime.GOARCH},
		append([]string{"build", "-buildvcs=false", "-o", dir + string(filepath.Separator)}, pkgs(probes...)...)...)
	run := func(name, daemon string) (string, error) {
		cmd := exec.Command(filepath.Join(dir, name))
		cmd.Env = append(os.Environ(), "AWS_XRAY_DAEMON_ADDRESS="+daemon, "LAMBDA_TASK_ROOT=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	const malformed = "not-a-host-and-port"
	const clean = "/debug/requests: \"\"\n/debug/events: \"\"\n"
	for _, p := range probes[:2] {
		out, err := run(p, malformed)
		if err != nil {
			t.Errorf("%s with AWS_XRAY_DAEMON_ADDRESS=%s: %v\n%s", p, malformed, err, out)
		} else if out != clean {
			t.Errorf("%s: the default ServeMux has handlers:\n%s", p, out)
		}
	}
	if out, err := run("probe-xraytrace", malformed); err == nil || !strings.Contains(out, "panic") {
		t.Errorf("xraytrace with a malformed daemon address: err %v, output:\n%s\nThe SDK no longer panics: update the xraytrace package doc.", err, out)
	}
	if out, err := run("probe-xraytrace", "127.0.0.1:2000"); err != nil || !strings.Contains(out, `/debug/requests: "/debug/requests"`) {
		t.Errorf("xraytrace: err %v, output:\n%s\nwant /debug/requests registered (golang.org/x/net/trace): update the xraytrace package doc if it is not.", err, out)
	}
}

// clientSymbol is a method of franz-go's client: a function that links one links the Kafka
// client, not just the record types its hooks name.
const clientSymbol = "github.com/twmb/franz-go/pkg/kgo.(*Client)."

// TestKafkaClientLinked: the tracing adapters' producer hooks name kgo's Record type. The linker leaves the client out of a consumer
// that does not make one: with batch alone, with oteltrace, and with xraytrace, whose producer
// hook is a type of its own for this reason (the X-Ray SDK's dependencies call reflect's
// Method, which makes the linker keep every exported method of every type put in an
// interface: a producer hook method on xraytrace.Hook kept the whole client, +3.2 MB).
func TestKafkaClientLinked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	names := []string{"batch", "oteltrace", "xraytrace"}
	// Symbols are kept (no -s -w) so that go tool nm can list them.
	goCmd(t, lambdaEnv, append([]string{"build", "-trimpath", "-tags=lambda.norpc", "-buildvcs=false",
		"-o", dir + string(filepath.Separator)}, pkgs(names...)...)...)
	for _, n := range names {
		syms := goCmd(t, nil, "tool", "nm", filepath.Join(dir, n))
		linked := strings.Count(syms, clientSymbol)
		if linked > 0 {
			t.Errorf("a function importing %s links %d methods of kgo.Client", n, linked)
		}
	}
}
