package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
	"github.com/kafkalambda/toolkit/internal/standin"
)

// demoGenerate is make demo's order template (the Makefile's), and demoPoison the value of
// its poison record: a negative total, which the samples refuse (samples/internal/orders).
const (
	demoGenerate = `{"orderId":{{seq}},"customer":"{{key}}","total":{{seq}}.5,"currency":"EUR","status":"placed"}`
	demoPoison   = `{"orderId":{{seq}},"customer":"{{key}}","total":-1,"currency":"EUR","status":"placed"}`
)

// TestLocalStack runs the sample stack of template.yaml under klt local, as make demo does on a
// smaller load, with the generic flags only (nothing of the sample's domain is in klt): both
// pipelines, then the fault run with a poison value, a transient sink error and a timeout. It
// checks the report: each pipeline's own record count (no header count for all), nothing
// lost, applied twice or out of key order, each fault where it belongs, and charts that cover
// every phase, the fault run included.
func TestLocalStack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"local", "--template", "../../template.yaml", "--partitions", "5",
		"--http-sink", "OrdersApiUrl", "--work", "100ms", "--generate", demoGenerate, "--keys", "20",
		"--header", "correlation-id=order-{{seq}}",
		"--variant", "KeyConcurrentConsumer=ConsumerFunction:KeyConcurrency=20",
		"--load", "ConsumerFunction=50", "--load", "300", "--fault-load", "30",
		"--fault", "value:seq=6:" + demoPoison, "--fault", "http:seq=10", "--fault", "timeout:seq=15",
		"--report", dir}, nil, &stdout, &stderr)
	if code != base.ExitOK {
		t.Fatalf("klt local: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("%s", stdout.String())
	// The header states where the records came from, never one count for every pipeline.
	if m := regexp.MustCompile(`(?m)^scenario:.*`).FindString(stdout.String()); !strings.Contains(m, "generated from") || regexp.MustCompile(`\d+ records`).MatchString(m) {
		t.Errorf("the report's scenario line: %q", m)
	}
	rep := readReport(t, filepath.Join(dir, "report.json"))
	// The consumer with key concurrency (--variant) is a third pipeline, measured as the others
	// are; it shares the consumer's failure queue, each listing its own message.
	want := map[string]int64{"direct": 50, "fan-out": 300, "direct, KeyConcurrency=20": 300,
		"direct, with faults": 30, "fan-out, with faults": 30, "direct, KeyConcurrency=20, with faults": 30}
	if len(rep.Pipelines) != len(want) {
		t.Fatalf("pipelines: %+v", rep.Pipelines)
	}
	for _, p := range rep.Pipelines {
		if p.Records != want[p.Name] || !p.Lost.Is(0) || !p.AppliedTwice.Is(0) || !p.OrderViolations.Is(0) || p.RecordsPerSecond <= 0 {
			t.Errorf("pipeline %s: records %d, lost %s, twice %s, order %s, %v/s", p.Name, p.Records, p.Lost, p.AppliedTwice, p.OrderViolations, p.RecordsPerSecond)
		}
	}
	// Every message on the failure queues counted, and the poison record there once, however
	// often its batch came back (the timeout's redelivery): sunk once, under idempotency.
	for _, p := range rep.Pipelines {
		wantFQ := map[bool]int64{true: 1, false: 0}[strings.HasSuffix(p.Name, "with faults")]
		if !p.FailureQueue.Is(wantFQ) || !p.FailureQueueMessages.Is(wantFQ) || len(p.Duplicates) != 0 {
			t.Errorf("pipeline %s: failure queue %s records, %s messages, duplicates %+v; want %d, %d, none",
				p.Name, p.FailureQueue, p.FailureQueueMessages, p.Duplicates, wantFQ, wantFQ)
		}
	}
	if rep.Speedup == nil || rep.Speedup.Of != "fan-out" || rep.Speedup.Over != "direct" || rep.Speedup.Ratio <= 1 {
		t.Errorf("speedup %+v", rep.Speedup)
	}
	poison := "value:seq=6:" + demoPoison
	wantFault := map[string]string{
		"direct/" + poison:                         "sent to ConsumerFailureQueue",
		"fan-out/" + poison:                        "sent to WorkerFailureQueue",
		"direct/http:seq=10":                       "the HTTP sink answered 503 to its first request; applied 1 time(s)",
		"fan-out/http:seq=10":                      "the HTTP sink answered 503 to its first request; applied 1 time(s)",
		"direct/timeout:seq=15":                    "the invocation of ConsumerFunction carrying it timed out",
		"fan-out/timeout:seq=15":                   "the invocation of WorkerFunction carrying it timed out",
		"direct, KeyConcurrency=20/" + poison:      "sent to ConsumerFailureQueue",
		"direct, KeyConcurrency=20/http:seq=10":    "the HTTP sink answered 503 to its first request; applied 1 time(s)",
		"direct, KeyConcurrency=20/timeout:seq=15": "the invocation of KeyConcurrentConsumer carrying it timed out",
	}
	if len(rep.Faults) != len(wantFault) {
		t.Errorf("faults: %+v", rep.Faults)
	}
	for _, f := range rep.Faults {
		k := strings.TrimSuffix(f.Pipeline, ", with faults") + "/" + f.Fault
		if !strings.Contains(f.Outcome, wantFault[k]) {
			t.Errorf("fault %s: %q, want %q", k, f.Outcome, wantFault[k])
		}
		if wantApplied := map[bool]int64{true: 0, false: 1}[f.Fault == poison]; !f.Applied.Is(wantApplied) {
			t.Errorf("fault %s applied %s times, want %d", k, f.Applied, wantApplied)
		}
	}
	checkPhases(t, rep, []string{"direct", "fan-out", "direct, KeyConcurrency=20", "faults"})
	// The samples log through lambdalog: every invocation has lines carrying its request ID,
	// no line lacks one, and each applied order's line carries the correlation ID of its
	// record's correlation-id header (--header), through the fan-out too.
	if !strings.Contains(stdout.String(), "\nfunction logs (function_request_id, correlation_id):\n") {
		t.Errorf("the text report has no function logs table")
	}
	minCorrelated := map[string]int64{"ConsumerFunction": 50 + 29, "DispatcherFunction": 0, "WorkerFunction": 300 + 29, "KeyConcurrentConsumer": 300 + 29}
	if len(rep.Logs) != len(minCorrelated) {
		t.Errorf("function logs of %d functions, want %d: %+v", len(rep.Logs), len(minCorrelated), rep.Logs)
	}
	for _, l := range rep.Logs {
		if l.Invocations == 0 || l.InvocationsLogged != l.Invocations || l.WithoutRequestID+l.OtherRequestID+l.TextLines != 0 ||
			l.WithCorrelationID < minCorrelated[l.Function] || l.EMFDocuments == 0 {
			t.Errorf("function logs of %s: %+v; want every invocation logged, every line with its request ID, at least %d with a correlation ID, EMF documents",
				l.Function, l, minCorrelated[l.Function])
		}
	}
	for _, fn := range []string{"ConsumerFunction", "WorkerFunction", "KeyConcurrentConsumer"} {
		b, _ := os.ReadFile(filepath.Join(dir, "logs", fn+".log"))
		if !strings.Contains(string(b), "invocation failed: Sandbox.Timedout") {
			t.Errorf("%s's log does not say its invocation timed out", fn)
		}
	}
	for _, name := range []string{"report.html", "report.svg", "logs/ConsumerFunction.log", "logs/WorkerFunction.log"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
}

// checkPhases checks that the report's charts cover every phase, the fault run included: the
// phases are marked, and the throughput series go on to the end of the last one.
func checkPhases(t *testing.T, rep *report.Report, want []string) {
	t.Helper()
	var got []string
	for _, ph := range rep.Series.Phases {
		got = append(got, ph.Name)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("phases on the charts: %v, want %v", got, want)
		return
	}
	last := rep.Series.Phases[len(rep.Series.Phases)-1]
	for fn, pts := range rep.Series.Throughput {
		if len(pts) == 0 || pts[len(pts)-1][0] < last.Start {
			t.Errorf("throughput of %s stops before the last phase (%s, from %.1fs)", fn, last.Name, last.Start)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader at a time.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLocalServe runs klt local without a load, as a user does to try a stack by hand: it
// prints the broker and the klt produce line; the records of testdata/local/orders.jsonl (the
// ones docs/local.md gives) all pass the sample's filter and are applied by both pipelines;
// a poison order goes to both failure queues and stays there (klt lists it, it does not take
// it); an idle stack prints nothing; and Ctrl-C stops everything with exit status 0 and a
// summary that lists the failure queues' messages.
func TestLocalServe(t *testing.T) {
	t.Parallel()
	logs := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"local", "--template", "../../template.yaml", "--partitions", "2", "--logs", logs}, nil, out, &stderr)
	}()
	brokerRE := regexp.MustCompile(`klt produce --brokers (\S+) --no-tls --topic orders`)
	var broker string
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Minute); !cond(); time.Sleep(100 * time.Millisecond) {
			select {
			case c := <-code:
				t.Fatalf("klt local exited with %d before %s\nstdout:\n%s\nstderr:\n%s", c, what, out.String(), stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s\nstdout:\n%s", what, out.String())
			}
		}
	}
	waitFor("broker line", func() bool {
		m := brokerRE.FindStringSubmatch(out.String())
		if m != nil {
			broker = m[1]
		}
		return m != nil
	})
	// The produce line the docs give, on the records they give.
	var pout, perr bytes.Buffer
	if c := run(ctx, []string{"produce", "--brokers", broker, "--no-tls", "--topic", "orders", "testdata/local/orders.jsonl"}, nil, &pout, &perr); c != base.ExitOK {
		t.Fatalf("klt produce: exit %d: %s", c, perr.String())
	}
	poison := `{"key":"customer-9","value":{"orderId":99,"customer":"customer-9","total":-1,"currency":"EUR"}}` + "\n"
	if c := run(ctx, []string{"produce", "--brokers", broker, "--no-tls", "--topic", "orders"}, strings.NewReader(poison), &pout, &perr); c != base.ExitOK {
		t.Fatalf("klt produce: exit %d: %s", c, perr.String())
	}
	read := func(fn string) string {
		b, _ := os.ReadFile(filepath.Join(logs, fn+".log"))
		return string(b)
	}
	// Every order of the file passes the consumer's filter and is accepted; the worker,
	// behind the dispatcher, applies each; the poison order is refused by both.
	waitFor("orders applied", func() bool {
		return strings.Count(read("ConsumerFunction"), `"order accepted"`) == 5 && strings.Count(read("WorkerFunction"), `"order applied"`) == 5 &&
			strings.Contains(read("ConsumerFunction"), `invalid order 99`) && strings.Contains(read("WorkerFunction"), `invalid order 99`)
	})
	// The failure queues keep the poison order: klt lists their messages, it does not take them.
	sqsRE := regexp.MustCompile(`AWS_ENDPOINT_URL_SQS=(\S+?),`)
	m := sqsRE.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no SQS endpoint printed:\n%s", out.String())
	}
	waitFor("the poison order kept in ConsumerFailureQueue", func() bool { return queueHolds(t, ctx, m[1], "ConsumerFailureQueue") > 0 })
	// Idle: once the counters settle, nothing more is printed.
	time.Sleep(3 * time.Second)
	before := out.String()
	time.Sleep(5 * time.Second)
	if after := out.String(); after != before {
		t.Errorf("an idle stack printed:\n%s", strings.TrimPrefix(after, before))
	}
	cancel()
	select {
	case c := <-code:
		if c != base.ExitOK {
			t.Errorf("klt local after Ctrl-C: exit %d\nstderr:\n%s", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("klt local did not stop within 30 s of Ctrl-C")
	}
	summary := strings.TrimPrefix(out.String(), before)
	for _, want := range []string{"ConsumerSelfManagedMapping", "WorkerFunction.Work", "ConsumerFailureQueue", "WorkerFailureQueue", "invalid order 99"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary at Ctrl-C does not say %q:\n%s", want, summary)
		}
	}
}

// queueHolds returns the messages the queue named name holds at the SQS endpoint, visible or
// not (a lister holding one does not take it away).
func queueHolds(t *testing.T, ctx context.Context, endpoint, name string) int {
	t.Helper()
	cl := sqs.NewFromConfig(standin.ClientConfig(standin.Region), func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
	u, err := cl.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("GetQueueUrl %s: %v", name, err)
	}
	a, err := cl.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: u.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatalf("GetQueueAttributes %s: %v", name, err)
	}
	n := 0
	for _, k := range []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible} {
		v, _ := strconv.Atoi(a.Attributes[string(k)])
		n += v
	}
	return n
}
