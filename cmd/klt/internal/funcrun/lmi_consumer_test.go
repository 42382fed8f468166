package funcrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// orderSink is the orders API the consumer applies orders to (ORDERS_API_URL). An order is
// applied when the sink answers it 2xx to a client still waiting, as an API that commits
// with its answer; it keeps the order of application per partition, by the request's
// Idempotency-Key (topic-partition-offset). The first request for hold is held for holdFor.
type orderSink struct {
	hold    string
	holdFor time.Duration

	mu      sync.Mutex
	applied map[string]int     // by Idempotency-Key
	order   map[string][]int64 // by topic-partition: offsets in the order applied
	seen    map[string]bool    // keys requested at least once
	holding chan struct{}      // closed when the held request has come
	held    chan struct{}      // closed when the held request has ended
}

func (s *orderSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The order is read whole first, as an API reads its request before it commits; only
	// then does net/http watch the connection, so that a client giving up ends r.Context().
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return
	}
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	first := !s.seen[key]
	s.seen[key] = true
	s.mu.Unlock()
	if key == s.hold && first {
		close(s.holding)
		defer close(s.held)
		select {
		case <-time.After(s.holdFor):
		case <-r.Context().Done():
		}
	}
	if r.Context().Err() != nil {
		return // the client gave up: nothing is applied
	}
	i := strings.LastIndexByte(key, '-')
	var off int64
	fmt.Sscan(key[i+1:], &off)
	s.mu.Lock()
	s.applied[key]++
	s.order[key[:i]] = append(s.order[key[:i]], off)
	s.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

// TestConsumerAsLMIFunction is the concurrent-process test of issue 30: samples/consumer,
// built with -race, runs under the Runtime API stand-in as a Lambda Managed Instances
// function, 8 invocations at once per execution environment. Eight partitions are delivered
// at once, each batch after the last one's answer (resuming from the first failed offset, as
// the Kafka mapping does), so batches of different partitions overlap in one process; one
// order's API call is held past the function's timeout, so its batch is delivered again while
// the first delivery still runs. Every order is applied exactly once (0 lost, 0 twice), in
// offset order per partition, and the race detector reports nothing.
func TestConsumerAsLMIFunction(t *testing.T) {
	// The held call ends within the invocation's time; the batch is delivered again beside
	// its first delivery, as the mapping does after a timeout.
	runConsumerLMI(t, time.Second, true)
}

// TestConsumerAsLMIFunctionPastDeadline holds the call past the deadline margin: the batch
// reports that record failed at the margin, and the handler's context, which ends there,
// ends the call, so that an API that commits with its answer does not apply it; the
// redelivery applies it once. (LMI does not stop the function at its timeout: only the
// context stops the call.)
func TestConsumerAsLMIFunctionPastDeadline(t *testing.T) {
	runConsumerLMI(t, 5*time.Second, false)
}

// The concurrent-process test's load: partitions x perPart orders, batches of batchSize,
// the function's timeout.
const (
	lmiPartitions = 8
	lmiPerPart    = 30
	lmiBatchSize  = 10
	lmiTimeout    = 3 * time.Second
	lmiTopic      = "orders"
)

// runConsumerLMI runs the concurrent-process test with the held call held for holdFor; with
// overlap, the held batch is delivered a second time as soon as the held call has come.
func runConsumerLMI(t *testing.T, holdFor time.Duration, overlap bool) {
	if testing.Short() {
		t.Skip("builds samples/consumer with -race and starts dynalite and local-aws-sqs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sink := &orderSink{hold: fmt.Sprintf("%s-3-12", lmiTopic), holdFor: holdFor, applied: map[string]int{},
		order: map[string][]int64{}, seen: map[string]bool{}, holding: make(chan struct{}), held: make(chan struct{})}
	d := &lmiDriver{t: t, ctx: ctx, sink: sink}
	logs := d.start()
	d.run(overlap)
	select {
	case <-sink.held:
	case <-ctx.Done():
		t.Fatal("the held request never ended")
	}
	stats, overruns := d.pool.Stats(), d.pool.Overruns()
	d.pool.Close()

	lost, twice := sink.check(t)
	most := 0
	var perEnv []string
	for _, s := range stats {
		most = max(most, s.MaxInFlight)
		perEnv = append(perEnv, fmt.Sprintf("environment %d: %d invocations, %d at most at once", s.N, s.Invocations, s.MaxInFlight))
	}
	t.Logf("%d records over %d partitions, %d invocations (%d deliveries again, %d of them timed out), LMI concurrency 8: %s; %d past their deadline; lost %d, applied twice %d",
		lmiPartitions*lmiPerPart, lmiPartitions, d.invocations, d.redelivered, d.timedOut, strings.Join(perEnv, "; "), len(overruns), lost, twice)
	if lost != 0 || twice != 0 {
		t.Errorf("lost %d, applied twice %d; want 0 and 0", lost, twice)
	}
	if d.redelivered == 0 {
		t.Error("no batch was delivered again: the held order did not overlap its redelivery")
	}
	if most < 2 {
		t.Errorf("at most %d invocations ran at once in an environment: the process never ran invocations concurrently", most)
	}
	out := logs.String()
	if os.Getenv("LMI_TEST_LOGS") != "" {
		t.Logf("logs:\n%s", out)
	}
	if strings.Contains(out, "DATA RACE") {
		t.Errorf("the race detector reported a race in the consumer:\n%s", out)
	}
}

// check counts the orders not applied and those applied more than once, and fails t for a
// partition applied out of offset order.
func (s *orderSink) check(t *testing.T) (lost, twice int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range lmiPartitions {
		for o := range lmiPerPart {
			switch n := s.applied[fmt.Sprintf("%s-%d-%d", lmiTopic, p, o)]; {
			case n == 0:
				lost++
				t.Logf("lost: %s-%d-%d", lmiTopic, p, o)
			case n > 1:
				twice++
				t.Logf("applied %d times: %s-%d-%d", n, lmiTopic, p, o)
			}
		}
		if got := s.order[fmt.Sprintf("%s-%d", lmiTopic, p)]; !slices.IsSorted(got) {
			t.Errorf("partition %d applied out of order: %v", p, got)
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

// lmiDriver delivers the orders' batches to the consumer as the Kafka mapping would.
type lmiDriver struct {
	t    *testing.T
	ctx  context.Context
	sink *orderSink
	pool *runtimeapi.Pool

	mu                                 sync.Mutex
	invocations, redelivered, timedOut int
}

// start builds samples/consumer with -race, starts the local servers of template.yaml and the
// sink, and runs the consumer as an LMI function at concurrency 8; all of it stops when the
// test ends. It returns the buffer of the processes' lines.
func (d *lmiDriver) start() *lockedBuffer {
	t := d.t
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-race", "-tags", "lambda.norpc", "-o", filepath.Join(dir, "bootstrap"), "./samples/consumer")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -race ./samples/consumer: %v\n%s", err, out)
	}
	api := httptest.NewServer(d.sink)
	t.Cleanup(api.Close)
	tpl, err := samspec.ReadInvokeTemplate(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]string{"OrdersApiUrl": api.URL}
	f, err := (&samspec.Resolver{T: tpl, Params: params}).Function("ConsumerFunction")
	if err != nil {
		t.Fatal(err)
	}
	env, stop, err := localEnvironment(d.ctx, tpl, f, params, nil)
	t.Cleanup(stop)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	d.pool, err = runtimeapi.Start(runtimeapi.Config{
		Name: "ConsumerFunction", Bootstrap: filepath.Join(dir, "bootstrap"), Env: env,
		Timeout: lmiTimeout, LMIConcurrency: 8, Logs: logs.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.pool.Close() })
	return logs
}

// deliver invokes the batch of partition p from offset next and returns where the next
// batch starts: its end, or its first failed offset (the batch again).
func (d *lmiDriver) deliver(p int32, next int64) (int64, bool) {
	t := d.t
	b := kafkaeventtest.NewBuilder()
	end := min(next+lmiBatchSize, lmiPerPart)
	for o := next; o < end; o++ {
		v := fmt.Sprintf(`{"orderId":%d,"customer":"c%d","total":%d.5,"currency":"EUR","status":"placed"}`, int64(p)*1000+o+1, p, o)
		b.Add(lmiTopic, p, []byte(v), kafkaeventtest.WithOffset(o))
	}
	event, err := b.Event().MarshalJSON()
	if err != nil {
		t.Error(err)
		return next, false
	}
	resp, err := d.pool.Invoke(d.ctx, event)
	if err != nil {
		t.Errorf("partition %d: %v", p, err)
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
			ItemIdentifier struct{ Offset int64 } `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(resp.Payload, &r); err != nil {
		t.Errorf("partition %d: answer %s: %v", p, resp.Payload, err)
		return next, false
	}
	if len(r.BatchItemFailures) == 0 {
		return end, true
	}
	failed := r.BatchItemFailures[0].ItemIdentifier.Offset
	for _, f := range r.BatchItemFailures {
		failed = min(failed, f.ItemIdentifier.Offset)
	}
	d.redelivered++
	return failed, true
}

// run delivers every partition's batches, the partitions at once, each partition's batches in
// turn; with overlap, partition 3's batch from offset 10 (the held order's) twice at once.
func (d *lmiDriver) run(overlap bool) {
	var wg sync.WaitGroup
	for p := range int32(lmiPartitions) {
		wg.Go(func() {
			next := int64(0)
			dup := overlap && p == 3
			for attempt := 0; next < lmiPerPart; attempt++ {
				if attempt > 300 || d.ctx.Err() != nil {
					d.t.Errorf("partition %d: stuck at offset %d after %d invocations", p, next, attempt)
					return
				}
				if dup && next == 10 {
					dup = false
					second := make(chan int64, 1)
					go func() {
						select { // the second delivery once the first's held call has come
						case <-d.sink.holding:
						case <-d.ctx.Done():
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
