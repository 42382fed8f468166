package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/internal/report"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLocalStack runs the sample stack of template.yaml under klt local, as make demo does on a
// smaller load: both pipelines, then the faults. It checks the report: nothing lost, applied
// twice or out of key order, and each fault where it belongs.
func TestLocalStack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"local", "--template", "../../template.yaml", "--partitions", "5", "--keys", "20",
		"--work", "100ms", "--load", "ConsumerFunction=50", "--load", "300", "--faults", "30", "--report", dir}, nil, &stdout, &stderr)
	if code != base.ExitOK {
		t.Fatalf("klt local: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("%s", stdout.String())
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"direct": 50, "fan-out": 300, "direct, with faults": 30, "fan-out, with faults": 30}
	if len(rep.Pipelines) != len(want) {
		t.Fatalf("pipelines: %+v", rep.Pipelines)
	}
	for _, p := range rep.Pipelines {
		if p.Records != want[p.Name] || !p.Lost.Is(0) || !p.AppliedTwice.Is(0) || !p.OrderViolations.Is(0) || p.RecordsPerSecond <= 0 {
			t.Errorf("pipeline %+v", p)
		}
	}
	if rep.Speedup == nil || rep.Speedup.Of != "fan-out" || rep.Speedup.Over != "direct" || rep.Speedup.Ratio <= 1 {
		t.Errorf("speedup %+v", rep.Speedup)
	}
	wantFault := map[string]string{
		"direct/poison":     "sent to ConsumerFailureQueue",
		"fan-out/poison":    "sent to WorkerFailureQueue",
		"direct/transient":  "applied once, after 2 attempts",
		"fan-out/transient": "applied once, after 2 attempts",
		"direct/timeout":    "the invocation of ConsumerFunction timed out",
		"fan-out/timeout":   "the invocation of WorkerFunction timed out",
	}
	if len(rep.Faults) != len(wantFault) {
		t.Errorf("faults: %+v", rep.Faults)
	}
	for _, f := range rep.Faults {
		k := strings.TrimSuffix(f.Pipeline, ", with faults") + "/" + f.Fault
		if !strings.HasPrefix(f.Outcome, wantFault[k]) {
			t.Errorf("fault %s: %q, want %q...", k, f.Outcome, wantFault[k])
		}
		if wantApplied := map[bool]int{true: 0, false: 1}[f.Fault == "poison"]; !f.Applied.Is(int64(wantApplied)) {
			t.Errorf("fault %s applied %s times, want %d", k, f.Applied, wantApplied)
		}
	}
	for _, fn := range []string{"ConsumerFunction", "WorkerFunction"} {
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

// TestLocalServe runs klt local without --load, as a user does to try a stack by hand: it
// prints the broker, a record produced there goes through the consumer (filtered or applied as
// the template says), and cancelling (Ctrl-C) stops everything with exit status 0.
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
	brokerRE := regexp.MustCompile(`--brokers (\S+) --no-tls --topic orders`)
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
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := []*kgo.Record{
		{Topic: "orders", Key: []byte("c-1"), Value: []byte(`{"orderId":41,"customer":"c-1","total":5,"currency":"EUR"}`)},
		{Topic: "orders", Key: []byte("c-2"), Value: []byte(`{"orderId":42,"customer":"c-2","total":5,"currency":"GBP"}`)},
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	read := func(fn string) string {
		b, _ := os.ReadFile(filepath.Join(logs, fn+".log"))
		return string(b)
	}
	// The consumer applies the EUR order and never sees the GBP one (its mapping's filter);
	// the worker, behind the dispatcher and with no filter, applies both.
	waitFor("orders applied", func() bool {
		return strings.Contains(read("ConsumerFunction"), `"orderId":41`) && strings.Count(read("WorkerFunction"), `"order applied"`) == 2
	})
	if strings.Contains(read("ConsumerFunction"), `"orderId":42`) {
		t.Error("the consumer saw the order its mapping's FilterCriteria filter out")
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
}
