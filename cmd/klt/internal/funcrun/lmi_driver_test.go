package funcrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/runtimeapi"
	"github.com/kafkalambda/toolkit/esm/samspec"
)

// The concurrent-process tests' load: streams (Kafka partitions, SQS message groups, stream
// shards) of lmiPerPart records each, delivered in batches of lmiBatchSize; the function's
// timeout unless the test sets one. Seven streams and the batch delivered twice make eight
// invocations at once, the concurrency of one environment: the two deliveries of a batch run
// in one process (with eight streams the ninth invocation starts a second environment).
const (
	lmiPartitions = 7
	lmiPerPart    = 30
	lmiBatchSize  = 10
	lmiTimeout    = 3 * time.Second
	lmiTopic      = "orders"
)

// lmiSource is a sample's event source as the driver plays it: the event of records
// [from, end) of stream p, and the record an itemIdentifier of the partial-batch response
// names.
type lmiSource interface {
	event(p int32, from, end int64) ([]byte, error)
	failedAt(item json.RawMessage) (int64, error)
}

// lmiFunction is the sample a test runs: its package, the template's function whose
// environment it gets, and the template's parameters and environment overrides.
type lmiFunction struct {
	pkg, name string
	params    map[string]string
	overrides map[string]string
	timeout   time.Duration // 0: lmiTimeout
}

// lmiDriver delivers a sample's batches as its event source mapping would: the streams at
// once, each stream's batches in turn, resuming from the first failed record.
type lmiDriver struct {
	t   *testing.T
	ctx context.Context
	src lmiSource
	// holding, when set, is closed when the first delivery of the batch run delivers twice
	// is in the middle of its work; the second delivery waits for it. Nil: both go at once.
	holding <-chan struct{}
	pool    *runtimeapi.Pool
	env     []string // the function's environment

	mu                                 sync.Mutex
	invocations, redelivered, timedOut int
}

// lmiBuilds holds each sample's -race build, made once per test binary.
var lmiBuilds struct {
	sync.Mutex
	dir  string
	done map[string]string
}

// TestMain removes the samples' -race builds.
func TestMain(m *testing.M) {
	code := m.Run()
	if lmiBuilds.dir != "" {
		os.RemoveAll(lmiBuilds.dir)
	}
	os.Exit(code)
}

// buildRace builds the sample package pkg (./samples/...) with -race once per test binary and
// returns its bootstrap.
func buildRace(t *testing.T, root, pkg string) string {
	lmiBuilds.Lock()
	defer lmiBuilds.Unlock()
	if out, ok := lmiBuilds.done[pkg]; ok {
		return out
	}
	if lmiBuilds.dir == "" {
		dir, err := os.MkdirTemp("", "klt-lmi-")
		if err != nil {
			t.Fatal(err)
		}
		lmiBuilds.dir, lmiBuilds.done = dir, map[string]string{}
	}
	out := filepath.Join(lmiBuilds.dir, filepath.Base(pkg), "bootstrap")
	build := exec.Command("go", "build", "-race", "-tags", "lambda.norpc", "-o", out, pkg)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -race %s: %v\n%s", pkg, err, b)
	}
	lmiBuilds.done[pkg] = out
	return out
}

// start builds the sample with -race, starts the local servers its template function's
// environment names, and runs it as an LMI function at concurrency 8; all of it stops when
// the test ends. It returns the buffer of the processes' lines.
func (d *lmiDriver) start(fn lmiFunction) *lockedBuffer {
	t := d.t
	if testing.Short() {
		t.Skipf("builds %s with -race and starts the local servers of its function", fn.pkg)
	}
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	bootstrap := buildRace(t, root, fn.pkg)
	tpl, err := samspec.ReadInvokeTemplate(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := (&samspec.Resolver{T: tpl, Params: fn.params}).Function(fn.name)
	if err != nil {
		t.Fatal(err)
	}
	env, stop, err := localEnvironment(d.ctx, tpl, f, fn.params, fn.overrides)
	t.Cleanup(stop)
	if err != nil {
		t.Fatal(err)
	}
	d.env = env
	timeout := fn.timeout
	if timeout == 0 {
		timeout = lmiTimeout
	}
	logs := &lockedBuffer{}
	d.pool, err = runtimeapi.Start(runtimeapi.Config{
		Name: fn.name, Bootstrap: bootstrap, Env: env,
		Timeout: timeout, LMIConcurrency: 8, Logs: logs.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.pool.Close() })
	return logs
}

// getenv returns the value of the function's environment variable k.
func (d *lmiDriver) getenv(k string) string {
	for _, kv := range d.env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v
		}
	}
	d.t.Fatalf("the function's environment has no %s", k)
	return ""
}

// deliver invokes the batch of stream p from record next and returns where the next batch
// starts: its end, or its first failed record (the batch again).
func (d *lmiDriver) deliver(p int32, next int64) (int64, bool) {
	t := d.t
	end := min(next+lmiBatchSize, lmiPerPart)
	event, err := d.src.event(p, next, end)
	if err != nil {
		t.Error(err)
		return next, false
	}
	resp, err := d.pool.Invoke(d.ctx, event)
	if err != nil {
		t.Errorf("stream %d: %v", p, err)
		return next, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.invocations++
	if resp.Err != nil { // the whole batch again
		d.redelivered++
		if resp.Err.Type == "Sandbox.Timedout" {
			d.timedOut++
		}
		return next, true
	}
	var r struct {
		BatchItemFailures []struct {
			ItemIdentifier json.RawMessage `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(resp.Payload, &r); err != nil {
		t.Errorf("stream %d: answer %s: %v", p, resp.Payload, err)
		return next, false
	}
	if len(r.BatchItemFailures) == 0 {
		return end, true
	}
	failed := end
	for _, f := range r.BatchItemFailures {
		o, err := d.src.failedAt(f.ItemIdentifier)
		if err != nil {
			t.Errorf("stream %d: answer %s: %v", p, resp.Payload, err)
			return next, false
		}
		failed = min(failed, o)
	}
	d.redelivered++
	return failed, true
}

// run delivers every stream's batches, the streams at once, each stream's batches in turn;
// with overlap, stream 3's batch from record 10 twice at once (the second once holding is
// closed, when set), as a mapping does when it delivers a batch again while its first
// delivery still runs (LMI does not stop an invocation at its timeout).
func (d *lmiDriver) run(overlap bool) {
	var wg sync.WaitGroup
	for p := range int32(lmiPartitions) {
		wg.Go(func() {
			next := int64(0)
			dup := overlap && p == 3
			for attempt := 0; next < lmiPerPart; attempt++ {
				if attempt > 300 || d.ctx.Err() != nil {
					d.t.Errorf("stream %d: stuck at record %d after %d invocations", p, next, attempt)
					return
				}
				if dup && next == 10 {
					dup = false
					second := make(chan int64, 1)
					go func() {
						if d.holding != nil {
							select { // the second delivery once the first's held call has come
							case <-d.holding:
							case <-d.ctx.Done():
							}
						}
						n, _ := d.deliver(p, next)
						second <- n
					}()
					n1, ok := d.deliver(p, next)
					n2 := <-second
					if !ok {
						return
					}
					d.mu.Lock()
					d.redelivered++
					d.mu.Unlock()
					next = min(n1, n2)
					continue
				}
				n, ok := d.deliver(p, next)
				if !ok {
					return
				}
				if n < min(next+lmiBatchSize, lmiPerPart) {
					time.Sleep(20 * time.Millisecond) // the mapping's retry is not a hot loop
				}
				next = n
			}
		})
	}
	wg.Wait()
}

// finish stops the function, checks what reached its effect and logs the run: invocations,
// concurrency per environment, records, lost and twice. It fails t for a record lost, for a
// record twice unless twiceAllowed (the sample's promise says which), when no environment ran
// two invocations at once, when no batch was delivered again, or when the race detector
// reported anything.
func (d *lmiDriver) finish(logs *lockedBuffer, effect *ledger, what string, twiceAllowed bool) {
	t := d.t
	stats, overruns := d.pool.Stats(), d.pool.Overruns()
	d.pool.Close()
	most := 0
	var perEnv []string
	for _, s := range stats {
		most = max(most, s.MaxInFlight)
		perEnv = append(perEnv, fmt.Sprintf("environment %d: %d invocations, %d at most at once", s.N, s.Invocations, s.MaxInFlight))
	}
	lost, twice := effect.check(t, lmiTopic)
	t.Logf("%d records over %d streams, %d invocations (%d deliveries again, %d of them timed out), LMI concurrency 8: %s; %d past their deadline; lost %d, %s twice %d",
		lmiPartitions*lmiPerPart, lmiPartitions, d.invocations, d.redelivered, d.timedOut, strings.Join(perEnv, "; "), len(overruns), lost, what, twice)
	if lost != 0 || twice != 0 && !twiceAllowed {
		t.Errorf("lost %d, %s twice %d; want 0 and 0", lost, what, twice)
	}
	if d.redelivered == 0 {
		t.Error("no batch was delivered again: the redelivery did not happen")
	}
	if most < 2 {
		t.Errorf("at most %d invocations ran at once in an environment: the process never ran invocations concurrently", most)
	}
	out := logs.String()
	if os.Getenv("LMI_TEST_LOGS") != "" {
		t.Logf("logs:\n%s", out)
	}
	if strings.Contains(out, "DATA RACE") {
		t.Errorf("the race detector reported a race:\n%s", out)
	}
}

// ledger records what reached a sample's effect (an API, a queue, a topic, its log): how many
// times each record (topic-stream-record) did, and per stream the order of their first
// arrivals.
type ledger struct {
	mu      sync.Mutex
	applied map[string]int     // by topic-stream-record
	order   map[string][]int64 // by topic-stream: records in the order of their first arrival
}

func newLedger() *ledger {
	return &ledger{applied: map[string]int{}, order: map[string][]int64{}}
}

// add records an arrival of key (topic-stream-record).
func (l *ledger) add(key string) error {
	i := strings.LastIndexByte(key, '-')
	var off int64
	if _, err := fmt.Sscan(key[i+1:], &off); i < 0 || err != nil {
		return fmt.Errorf("not topic-stream-record: %q", key)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.applied[key]++
	if l.applied[key] == 1 {
		l.order[key[:i]] = append(l.order[key[:i]], off)
	}
	return nil
}

// check counts the records of topic that never arrived and those that arrived more than
// once, and fails t for a stream whose records first arrived out of order.
func (l *ledger) check(t *testing.T, topic string) (lost, twice int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range lmiPartitions {
		for o := range lmiPerPart {
			switch n := l.applied[fmt.Sprintf("%s-%d-%d", topic, p, o)]; {
			case n == 0:
				lost++
				t.Logf("lost: %s-%d-%d", topic, p, o)
			case n > 1:
				twice++
				t.Logf("%d times: %s-%d-%d", n, topic, p, o)
			}
		}
		if got := l.order[fmt.Sprintf("%s-%d", topic, p)]; !slices.IsSorted(got) {
			t.Errorf("stream %d out of order: %v", p, got)
		}
	}
	return lost, twice
}

// lockedBuffer collects the processes' log lines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) add(n int, line []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, "[%d] %s\n", n, line)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
