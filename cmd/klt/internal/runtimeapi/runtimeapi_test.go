package runtimeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/limits"
)

// bootstrap is testdata/fn, built by TestMain.
var bootstrap string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runtimeapi-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bootstrap = filepath.Join(dir, "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, "./testdata/fn")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building testdata/fn:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// logs collects what a pool's processes write.
type logs struct {
	mu    sync.Mutex
	lines []logLine
}

func (l *logs) add(n int, line []byte) {
	l.mu.Lock()
	l.lines = append(l.lines, logLine{n, line})
	l.mu.Unlock()
}

func (l *logs) all() []logLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func (l *logs) String() string {
	var b strings.Builder
	for _, x := range l.all() {
		fmt.Fprintf(&b, "[%d] %s\n", x.instance, x.line)
	}
	return b.String()
}

// newPool starts a pool of testdata/fn; edit adjusts the config. The pool is closed when the
// test ends.
func newPool(t testing.TB, edit func(*Config)) (*Pool, *logs) {
	t.Helper()
	l := &logs{}
	cfg := Config{
		Name:      "fn",
		Bootstrap: bootstrap,
		Env:       []string{"PATH=" + os.Getenv("PATH")},
		Timeout:   5 * time.Second,
		Logs:      l.add,
	}
	if edit != nil {
		edit(&cfg)
	}
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p, l
}

type answer struct {
	Pid        int             `json:"pid"`
	Data       json.RawMessage `json:"data"`
	DeadlineMs int64           `json:"deadline_ms"`
	RequestID  string          `json:"request_id"`
	ARN        string          `json:"arn"`
	Trace      string          `json:"trace"`
	Env        []string        `json:"env"`
	Child      int             `json:"child"`
	Bogus      int             `json:"bogus_status"`
}

func invoke(t testing.TB, p *Pool, event map[string]any) esm.Response {
	t.Helper()
	payload, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatalf("Invoke(%s): %v", payload, err)
	}
	return resp
}

// invokeOK invokes and decodes a successful answer.
func invokeOK(t testing.TB, p *Pool, event map[string]any) answer {
	t.Helper()
	resp := invoke(t, p, event)
	if resp.Err != nil {
		t.Fatalf("Invoke(%v): %v", event, resp.Err)
	}
	var a answer
	if err := json.Unmarshal(resp.Payload, &a); err != nil {
		t.Fatalf("answer %q: %v", resp.Payload, err)
	}
	return a
}

// invokeErr invokes and returns the invocation's error, failing if it succeeded.
func invokeErr(t testing.TB, p *Pool, event map[string]any) *esm.InvokeError {
	t.Helper()
	resp := invoke(t, p, event)
	if resp.Err == nil {
		t.Fatalf("Invoke(%v) = %s, want an error", event, resp.Payload)
	}
	return resp.Err
}

// alive reports whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// waitDead fails unless every pid is gone within 3 s.
func waitDead(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d is still alive", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// waitInstances waits until Instances reports total processes.
func waitInstances(t *testing.T, p *Pool, total int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		n, _ := p.Instances()
		if n == total {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Instances() total = %d, want %d", n, total)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestEchoAndContext(t *testing.T) {
	const timeout = 7 * time.Second
	p, _ := newPool(t, func(c *Config) {
		c.Timeout = timeout
		c.Env = append(c.Env, "AWS_LAMBDA_RUNTIME_API=127.0.0.1:1", "LAMBDA_TASK_ROOT=/var/task")
	})
	a := invokeOK(t, p, map[string]any{"op": "echo", "data": map[string]any{"k": []int{1, 2}}})
	if string(a.Data) != `{"k":[1,2]}` {
		t.Errorf("echo data = %s", a.Data)
	}

	before := time.Now()
	a = invokeOK(t, p, map[string]any{"op": "context"})
	after := time.Now()
	// The deadline aws-lambda-go gives the handler is the Lambda-Runtime-Deadline-Ms header:
	// when the event was handed over plus Timeout (in whole milliseconds).
	lo, hi := before.Add(timeout).UnixMilli()-1, after.Add(timeout).UnixMilli()
	if a.DeadlineMs < lo || a.DeadlineMs > hi {
		t.Errorf("ctx deadline = %d, want within [%d, %d] (now + Timeout)", a.DeadlineMs, lo, hi)
	}
	if !uuidRE.MatchString(a.RequestID) {
		t.Errorf("request id %q is not a v4 UUID", a.RequestID)
	}
	if want := "arn:aws:lambda:us-east-1:123456789012:function:fn"; a.ARN != want {
		t.Errorf("invoked function ARN = %q, want %q", a.ARN, want)
	}
	if !regexp.MustCompile(`^Root=1-[0-9a-f]{8}-[0-9a-f]{24};Parent=[0-9a-f]{16};Sampled=0$`).MatchString(a.Trace) {
		t.Errorf("trace id = %q", a.Trace)
	}
	env := map[string]string{}
	for _, kv := range a.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if api := env["AWS_LAMBDA_RUNTIME_API"]; !strings.HasPrefix(api, "127.0.0.1:") || api == "127.0.0.1:1" {
		t.Errorf("AWS_LAMBDA_RUNTIME_API = %q, want the instance's server", api)
	}
	for k, want := range map[string]string{
		"AWS_LAMBDA_FUNCTION_NAME":  "fn",
		"AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/fn",
		"LAMBDA_TASK_ROOT":          "/var/task", // from Env: kept
		"_HANDLER":                  "bootstrap",
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	if !regexp.MustCompile(`^\d{4}/\d\d/\d\d/\[\$LATEST\][0-9a-f]{32}$`).MatchString(env["AWS_LAMBDA_LOG_STREAM_NAME"]) {
		t.Errorf("AWS_LAMBDA_LOG_STREAM_NAME = %q", env["AWS_LAMBDA_LOG_STREAM_NAME"])
	}
	if _, ok := env["HOME"]; ok {
		t.Errorf("HOME leaked from the parent's environment into the function's")
	}
}

func TestWarmReuseAfterSuccessAndError(t *testing.T) {
	p, _ := newPool(t, nil)
	first := invokeOK(t, p, map[string]any{"op": "echo"}).Pid
	e := invokeErr(t, p, map[string]any{"op": "error", "msg": "bad record"})
	if e.Type != "errorString" || e.Message != "bad record" {
		t.Errorf("error = %+v, want errorString: bad record", e)
	}
	if pid := invokeOK(t, p, map[string]any{"op": "echo"}).Pid; pid != first {
		t.Errorf("after a success and a function error, pid = %d, want the warm instance %d", pid, first)
	}
	if total, busy := p.Instances(); total != 1 || busy != 0 {
		t.Errorf("Instances() = %d, %d, want 1, 0", total, busy)
	}
}

func TestPanicReplacesInstance(t *testing.T) {
	p, _ := newPool(t, nil)
	first := invokeOK(t, p, map[string]any{"op": "echo"}).Pid
	e := invokeErr(t, p, map[string]any{"op": "panic", "msg": "kaboom"})
	// aws-lambda-go names a panic's error type after the panic value's type.
	if e.Type != "string" || e.Message != "kaboom" {
		t.Errorf("panic error = %+v, want string: kaboom", e)
	}
	// aws-lambda-go exits after reporting a panic: the next event goes to a new process.
	if pid := invokeOK(t, p, map[string]any{"op": "echo"}).Pid; pid == first {
		t.Errorf("after a panic, the event went to the old process %d", pid)
	}
	waitDead(t, first)
}

func TestTimeoutResetsInstance(t *testing.T) {
	p, _ := newPool(t, func(c *Config) { c.Timeout = 300 * time.Millisecond })
	first := invokeOK(t, p, map[string]any{"op": "echo"}).Pid
	start := time.Now()
	e := invokeErr(t, p, map[string]any{"op": "sleep", "ms": 5000})
	took := time.Since(start)
	if e.Type != "Sandbox.Timedout" || e.Message != "Task timed out after 0.30 seconds" {
		t.Errorf("error = %+v", e)
	}
	if took < 300*time.Millisecond || took > 1500*time.Millisecond {
		t.Errorf("timed-out Invoke took %v, want about 300ms", took)
	}
	waitDead(t, first)
	if pid := invokeOK(t, p, map[string]any{"op": "echo"}).Pid; pid == first {
		t.Errorf("after a timeout the event went to the old process")
	}
	waitInstances(t, p, 1)
}

func TestCrashResetsInstance(t *testing.T) {
	p, _ := newPool(t, nil)
	first := invokeOK(t, p, map[string]any{"op": "echo"}).Pid
	e := invokeErr(t, p, map[string]any{"op": "exit"})
	if e.Type != "Runtime.ExitError" || !regexp.MustCompile(`^RequestId: [0-9a-f-]{36} Error: Runtime exited with error: exit status 3$`).MatchString(e.Message) {
		t.Errorf("error = %+v", e)
	}
	if pid := invokeOK(t, p, map[string]any{"op": "echo"}).Pid; pid == first {
		t.Errorf("after a crash the event went to the old process")
	}
	waitInstances(t, p, 1)
}

func TestIdleExitIsReplaced(t *testing.T) {
	p, _ := newPool(t, nil)
	first := invokeOK(t, p, map[string]any{"op": "echo"}).Pid
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitInstances(t, p, 0)
	if pid := invokeOK(t, p, map[string]any{"op": "echo"}).Pid; pid == first {
		t.Errorf("pid %d reused after it died", pid)
	}
}

// concurrently runs n invocations at once and returns their answers and the elapsed time.
func concurrently(t *testing.T, p *Pool, n int, event map[string]any) ([]answer, time.Duration) {
	t.Helper()
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() { answers[i] = invokeOK(t, p, event) })
	}
	wg.Wait()
	return answers, time.Since(start)
}

func pids(as []answer) []int {
	var ps []int
	for _, a := range as {
		if !slices.Contains(ps, a.Pid) {
			ps = append(ps, a.Pid)
		}
	}
	slices.Sort(ps)
	return ps
}

func TestConcurrentInvokesRunInParallel(t *testing.T) {
	const n = 8
	p, _ := newPool(t, nil)
	sleep := map[string]any{"op": "sleep", "ms": 300}
	cold, _ := concurrently(t, p, n, sleep)
	if got := pids(cold); len(got) != n {
		t.Fatalf("%d concurrent invocations ran on %d processes, want %d", n, len(got), n)
	}
	warm, took := concurrently(t, p, n, sleep)
	if took > 2*300*time.Millisecond {
		t.Errorf("%d concurrent 300ms invocations took %v, want about 300ms (not %v)", n, took, n*300*time.Millisecond)
	}
	if !slices.Equal(pids(warm), pids(cold)) {
		t.Errorf("warm invocations ran on %v, want the instances started first %v", pids(warm), pids(cold))
	}
	if total, busy := p.Instances(); total != n || busy != 0 {
		t.Errorf("Instances() = %d, %d, want %d, 0", total, busy, n)
	}
}

func TestMaxInstances(t *testing.T) {
	p, _ := newPool(t, func(c *Config) { c.MaxInstances = 2 })
	stop := make(chan struct{})
	var most int
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if total, busy := p.Instances(); total > most || busy > most {
				most = max(total, busy)
			}
		}
	})
	answers, took := concurrently(t, p, 6, map[string]any{"op": "sleep", "ms": 200})
	close(stop)
	sampler.Wait()
	if got := pids(answers); len(got) != 2 {
		t.Errorf("6 invocations with MaxInstances 2 ran on %d processes", len(got))
	}
	if most > 2 {
		t.Errorf("Instances() reached %d, want at most 2", most)
	}
	if took < 600*time.Millisecond {
		t.Errorf("6 invocations of 200ms on 2 instances took %v, want at least 600ms", took)
	}
}

func TestContextCancel(t *testing.T) {
	p, _ := newPool(t, func(c *Config) { c.MaxInstances = 1 })
	first := invokeOK(t, p, map[string]any{"op": "echo"}).Pid

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Invoke(ctx, []byte(`{"op":"sleep","ms":5000}`))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Invoke with a context that ends = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("cancelled Invoke took %v", took)
	}
	// The instance was reset: its process is gone.
	waitDead(t, first)

	// Waiting for a free instance is bounded by ctx too.
	var wg sync.WaitGroup
	wg.Go(func() { invokeOK(t, p, map[string]any{"op": "sleep", "ms": 500}) })
	waitBusy(t, p, 1)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if _, err := p.Invoke(ctx2, []byte(`{"op":"echo"}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Invoke waiting for a free instance = %v, want context.DeadlineExceeded", err)
	}
	wg.Wait()
}

func waitBusy(t *testing.T, p *Pool, busy int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		if _, b := p.Instances(); b == busy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never %d busy", busy)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCloseKillsEverything(t *testing.T) {
	p, _ := newPool(t, nil)
	answers, _ := concurrently(t, p, 3, map[string]any{"op": "sleep", "ms": 100})
	child := invokeOK(t, p, map[string]any{"op": "spawn"}).Child
	all := append(pids(answers), child)
	for _, pid := range all {
		if !alive(pid) {
			t.Fatalf("process %d is not running before Close", pid)
		}
	}
	// One invocation in flight while Close runs.
	inflight := make(chan error, 1)
	go func() {
		_, err := p.Invoke(context.Background(), []byte(`{"op":"sleep","ms":5000}`))
		inflight <- err
	}()
	waitBusy(t, p, 1)
	start := time.Now()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Close took %v; the function exits on SIGTERM", took)
	}
	for _, pid := range all {
		if alive(pid) {
			t.Errorf("process %d survived Close (the function's child was %d)", pid, child)
		}
	}
	if err := <-inflight; !errors.Is(err, ErrClosed) {
		t.Errorf("Invoke in flight during Close = %v, want ErrClosed", err)
	}
	if _, err := p.Invoke(context.Background(), []byte(`{"op":"echo"}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("Invoke after Close = %v, want ErrClosed", err)
	}
	if total, busy := p.Instances(); total != 0 || busy != 0 {
		t.Errorf("after Close, Instances() = %d, %d", total, busy)
	}
}

func TestCloseKillsAfterGrace(t *testing.T) {
	p, l := newPool(t, func(c *Config) { c.Env = append(c.Env, "FN_SIGTERM=ignore") })
	pid := invokeOK(t, p, map[string]any{"op": "echo"}).Pid
	start := time.Now()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < shutdownGrace || took > shutdownGrace+time.Second {
		t.Log(l)
		t.Errorf("Close of a process that ignores SIGTERM took %v, want %v then SIGKILL", took, shutdownGrace)
	}
	if alive(pid) {
		t.Errorf("process %d survived Close", pid)
	}
	if !strings.Contains(l.String(), "SIGTERM received") {
		t.Errorf("the function never saw SIGTERM; logs:\n%s", l)
	}
}

func TestLogsLineByLine(t *testing.T) {
	const n = 300
	p, l := newPool(t, nil)
	answers, _ := concurrently(t, p, 3, map[string]any{"op": "print", "n": n, "width": 20})
	long := invokeOK(t, p, map[string]any{"op": "print", "n": 1, "width": 200_000}).Pid
	huge := invokeOK(t, p, map[string]any{"op": "print", "n": 1, "width": 2 << 20}).Pid
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}    // line -> count
	instOf := map[string]int{} // pid -> instance
	for _, x := range l.all() {
		line := string(x.line)
		f := strings.Fields(line)
		if len(f) != 4 || (f[0] != "out" && f[0] != "err") {
			continue
		}
		if i, ok := instOf[f[1]]; ok && i != x.instance {
			t.Errorf("pid %s's lines came with instances %d and %d", f[1], i, x.instance)
		}
		instOf[f[1]] = x.instance
		if len(f[3]) == 20 {
			got[line]++
			continue
		}
		pid := strconv.Itoa(long)
		if f[1] == pid && len(f[3]) == 200_000 {
			got["long "+f[0]]++
			continue
		}
		t.Errorf("unexpected line %.100q... (%d bytes)", line, len(line))
	}
	for _, pid := range pids(answers) {
		for i := range n {
			for _, s := range []string{"out", "err"} {
				want := fmt.Sprintf("%s %d %d %s", s, pid, i, strings.Repeat(s[:1], 20))
				if got[want] != 1 {
					t.Fatalf("line %q delivered %d times", want, got[want])
				}
			}
		}
	}
	for _, k := range []string{"long out", "long err"} {
		if got[k] != 1 {
			t.Errorf("a 200,000-byte line (%s) was delivered whole %d times", k, got[k])
		}
	}
	cutNote := regexp.MustCompile(`\.\.\. \[runtimeapi: \d+ bytes of this line cut\]$`)
	var cuts int
	for _, x := range l.all() {
		if loc := cutNote.FindIndex(x.line); loc != nil {
			cuts++
			if loc[0] != maxLine || !strings.Contains(string(x.line[:20]), strconv.Itoa(huge)) {
				t.Errorf("cut line: %d bytes kept, starts %q", loc[0], x.line[:20])
			}
		}
	}
	if cuts != 2 {
		t.Errorf("%d lines over 1 MiB carry the cut note, want 2", cuts)
	}
	seen := map[int]bool{}
	for _, i := range instOf {
		if seen[i] {
			t.Errorf("two processes logged as instance %d", i)
		}
		seen[i] = true
	}
}

func TestLogsSlowCallbackDropsAndCounts(t *testing.T) {
	const n = 6000 // 12,000 lines, more than the queue holds
	release := make(chan struct{})
	var mu sync.Mutex
	var lines []string
	p, _ := newPool(t, func(c *Config) {
		c.Logs = func(_ int, line []byte) {
			<-release
			mu.Lock()
			lines = append(lines, string(line))
			mu.Unlock()
		}
	})
	start := time.Now()
	invokeOK(t, p, map[string]any{"op": "print", "n": n})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("with a stuck Logs callback, the invocation took %v", took)
	}
	close(release)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	var printed, dropped int
	re := regexp.MustCompile(`^runtimeapi: instance 1: (\d+) log lines dropped: the Logs callback did not keep up$`)
	for i, line := range lines {
		if m := re.FindStringSubmatch(line); m != nil {
			if i != len(lines)-1 {
				t.Errorf("the dropped-lines note is line %d of %d, want the last", i+1, len(lines))
			}
			dropped, _ = strconv.Atoi(m[1])
		}
		if strings.HasPrefix(line, "out ") || strings.HasPrefix(line, "err ") {
			printed++
		}
	}
	if dropped == 0 {
		t.Fatalf("no dropped-lines note; %d lines delivered", len(lines))
	}
	// Every line is either delivered or counted (the SIGTERM line may be one of either).
	if total := len(lines) - 1 + dropped; total != 2*n && total != 2*n+1 {
		t.Errorf("delivered %d (%d printed) + dropped %d = %d, want %d (+1)", len(lines)-1, printed, dropped, total, 2*n)
	}
}

func TestResponseSize(t *testing.T) {
	p, l := newPool(t, nil)
	// The answer is a JSON string: N characters and two quotes.
	resp := invoke(t, p, map[string]any{"op": "huge", "n": limits.MaxLambdaResponseBytes - 2})
	if resp.Err != nil || len(resp.Payload) != limits.MaxLambdaResponseBytes {
		t.Fatalf("a response of exactly limits.MaxLambdaResponseBytes: %d bytes, err %v", len(resp.Payload), resp.Err)
	}
	e := invokeErr(t, p, map[string]any{"op": "huge", "n": limits.MaxLambdaResponseBytes - 1})
	want := fmt.Sprintf("Response payload size (%d bytes) exceeded maximum allowed payload size (%d bytes).", limits.MaxLambdaResponseBytes+1, limits.MaxLambdaResponseBytes)
	if e.Type != "Function.ResponseSizeTooLarge" || e.Message != want {
		t.Errorf("error = %+v, want Function.ResponseSizeTooLarge: %s", e, want)
	}
	// aws-lambda-go exits when its answer is refused (413); the next event finds a new process.
	invokeOK(t, p, map[string]any{"op": "echo"})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.String(), "unexpected status code: 413") {
		t.Errorf("the function never saw the 413; logs:\n%s", l)
	}
}

func TestRequestSize(t *testing.T) {
	p, _ := newPool(t, nil)
	big := `{"op":"sleep","data":"` + strings.Repeat("x", MaxRequestSize) + `"}`
	resp, err := p.Invoke(context.Background(), []byte(big))
	if err != nil {
		t.Fatal(err)
	}
	want := esm.InvokeError{Type: "RequestEntityTooLarge", Message: "Request must be smaller than 6291456 bytes for the InvokeFunction operation"}
	if resp.Err == nil || *resp.Err != want {
		t.Errorf("oversized request: %+v, want %+v", resp.Err, want)
	}
	if total, _ := p.Instances(); total != 0 {
		t.Errorf("an oversized request started %d processes", total)
	}
	// Exactly MaxRequestSize bytes is allowed.
	pad := MaxRequestSize - len(`{"op":"sleep","data":""}`)
	exact := `{"op":"sleep","data":"` + strings.Repeat("x", pad) + `"}`
	if len(exact) != MaxRequestSize {
		t.Fatal(len(exact))
	}
	if resp, err := p.Invoke(context.Background(), []byte(exact)); err != nil || resp.Err != nil {
		t.Errorf("a request of exactly MaxRequestSize: %v %v", err, resp.Err)
	}
}

func TestInvalidRequestID(t *testing.T) {
	p, l := newPool(t, nil)
	a := invokeOK(t, p, map[string]any{"op": "double"})
	if a.Bogus != 400 {
		t.Errorf("an answer for an unknown request id got %d, want 400", a.Bogus)
	}
	// The second answer (aws-lambda-go's own) was refused with 400, and aws-lambda-go exits.
	if pid := invokeOK(t, p, map[string]any{"op": "echo"}).Pid; pid == a.Pid {
		t.Errorf("the process survived a refused answer")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.String(), "unexpected status code: 400") {
		t.Errorf("the repeated answer was not refused with 400; logs:\n%s", l)
	}
}

func TestErrorTypeFromHeader(t *testing.T) {
	p, _ := newPool(t, nil)
	e := invokeErr(t, p, map[string]any{"op": "raw-error", "msg": "plain words, not JSON"})
	if e.Type != "Function.Custom" || e.Message != "plain words, not JSON" {
		t.Errorf("error = %+v", e)
	}
}

func TestStreamedResponseFailure(t *testing.T) {
	p, _ := newPool(t, nil)
	e := invokeErr(t, p, map[string]any{"op": "stream-fail"})
	if e.Type != "errorString" || e.Message != "stream broke" {
		t.Errorf("error = %+v, want errorString: stream broke (from the trailers)", e)
	}
}

func TestInitFailures(t *testing.T) {
	t.Run("init error", func(t *testing.T) {
		p, _ := newPool(t, func(c *Config) { c.Env = append(c.Env, "FN_INIT=error") })
		e := invokeErr(t, p, map[string]any{"op": "echo"})
		if e.Type != "InitConfigError" || e.Message != "config is missing" {
			t.Errorf("error = %+v", e)
		}
		waitInstances(t, p, 0)
	})
	t.Run("exit", func(t *testing.T) {
		p, l := newPool(t, func(c *Config) { c.Env = append(c.Env, "FN_INIT=exit") })
		e := invokeErr(t, p, map[string]any{"op": "echo"})
		if e.Type != "Runtime.ExitError" || !strings.HasSuffix(e.Message, "Runtime exited with error: exit status 4") {
			t.Errorf("error = %+v", e)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(l.String(), "[1] exiting during init") {
			t.Errorf("logs:\n%s", l)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		p, _ := newPool(t, func(c *Config) { c.Env = append(c.Env, "FN_INIT=hang") })
		p.initTimeout = 300 * time.Millisecond
		start := time.Now()
		e := invokeErr(t, p, map[string]any{"op": "echo"})
		if e.Type != "Sandbox.Timedout" || !strings.Contains(e.Message, "Init timed out") {
			t.Errorf("error = %+v", e)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("init timeout took %v", took)
		}
		waitInstances(t, p, 0)
	})
}

func TestStartValidates(t *testing.T) {
	ok := Config{Name: "fn", Bootstrap: bootstrap, Timeout: time.Second}
	for name, c := range map[string]struct {
		edit func(*Config)
		want string
	}{
		"no name":        {func(c *Config) { c.Name = "" }, "Name is empty"},
		"no bootstrap":   {func(c *Config) { c.Bootstrap = "" }, "Bootstrap is empty"},
		"missing":        {func(c *Config) { c.Bootstrap = "/nonexistent/bootstrap" }, "no such file"},
		"not executable": {func(c *Config) { c.Bootstrap = "runtimeapi.go" }, "not an executable"},
		"no timeout":     {func(c *Config) { c.Timeout = 0 }, "Timeout is 0s"},
		"negative max":   {func(c *Config) { c.MaxInstances = -1 }, "MaxInstances is -1"},
		"bad env":        {func(c *Config) { c.Env = []string{"NOEQUALS"} }, `environment entry 0, "NOEQUALS", is not KEY=VALUE`},
		"concurrency":    {func(c *Config) { c.Env = []string{"AWS_LAMBDA_MAX_CONCURRENCY=4"} }, "AWS_LAMBDA_MAX_CONCURRENCY=4"},
		"bad dir":        {func(c *Config) { c.Dir = "runtimeapi.go" }, "not a directory"},
		"lmi range":      {func(c *Config) { c.LMIConcurrency = MaxLMIConcurrency + 1 }, "LMIConcurrency is 1601"},
	} {
		cfg := ok
		c.edit(&cfg)
		if _, err := Start(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Start = %v, want an error containing %q", name, err, c.want)
		}
	}
}

func TestParseErrorBody(t *testing.T) {
	for _, c := range []struct {
		body, header string
		want         esm.InvokeError
	}{
		{`{"errorMessage":"m","errorType":"T"}`, "H", esm.InvokeError{Type: "T", Message: "m"}},
		{`{"errorMessage":"m"}`, "Function.X", esm.InvokeError{Type: "Function.X", Message: "m"}},
		{`{"errorMessage":"m"}`, "", esm.InvokeError{Type: "Unhandled", Message: "m"}},
		{`{"errorType":"T","stackTrace":[{"path":"a.go","line":1}]}`, "", esm.InvokeError{Type: "T"}},
		{``, "", esm.InvokeError{Type: "Unhandled"}},
		{`not json`, "", esm.InvokeError{Type: "Unhandled", Message: "not json"}},
		{`{"errorMessage":3}`, "", esm.InvokeError{Type: "Unhandled", Message: `{"errorMessage":3}`}},
		{`{"other":1}`, "", esm.InvokeError{Type: "Unhandled", Message: `{"other":1}`}},
		{"\xff\xfe", "", esm.InvokeError{Type: "Unhandled", Message: "\uFFFD"}},
	} {
		if got := parseErrorBody([]byte(c.body), c.header); *got != c.want {
			t.Errorf("parseErrorBody(%q, %q) = %+v, want %+v", c.body, c.header, *got, c.want)
		}
	}
}

func TestCloseDuringColdStarts(t *testing.T) {
	p, _ := newPool(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 20 {
		wg.Go(func() {
			for {
				_, err := p.Invoke(context.Background(), []byte(`{"op":"sleep","ms":20}`))
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	time.Sleep(30 * time.Millisecond) // some instances are starting, some running
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Invoke during Close = %v, want ErrClosed", err)
		}
	}
	if total, busy := p.Instances(); total != 0 || busy != 0 {
		t.Errorf("after Close, Instances() = %d, %d, want 0, 0", total, busy)
	}
}

// stopProcess stops pid (SIGSTOP) and waits until every thread of it has stopped: the signal
// is delivered to each thread as it next enters the kernel, and a busy Go process can answer
// an event before the last one has.
func stopProcess(t *testing.T, pid int) {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Errorf("SIGSTOP %d: %v", pid, err)
		return
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		stopped := len(tasks) > 0
		for _, task := range tasks {
			st, err := os.ReadFile(task)
			// The state is the field after the parenthesised command name.
			if i := strings.LastIndexByte(string(st), ')'); err != nil || i < 0 || !strings.HasPrefix(string(st[i:]), ") T") {
				stopped = false
			}
		}
		if stopped {
			return
		}
	}
	t.Errorf("process %d did not stop within 2 s", pid)
}

// TestOnEventFreezeTimesOut checks the fault-injection hook: OnEvent sees each event with the
// pid of the process that gets it, and a process stopped there (SIGSTOP, as klt local's timeout
// fault does) times out like a hung runtime, and is replaced.
func TestOnEventFreezeTimesOut(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	p, _ := newPool(t, func(c *Config) {
		c.Timeout = 500 * time.Millisecond
		c.OnEvent = func(instance, pid int, _ string, payload []byte) {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%d %d %s", instance, pid, payload))
			mu.Unlock()
			if strings.Contains(string(payload), "freeze") {
				stopProcess(t, pid)
			}
		}
	})
	first := invokeOK(t, p, map[string]any{"op": "echo"}).Pid
	start := time.Now()
	resp := invoke(t, p, map[string]any{"op": "echo", "data": "freeze"})
	if resp.Err == nil || resp.Err.Type != "Sandbox.Timedout" {
		mu.Lock()
		t.Fatalf("frozen process: after %v, %s %+v, want Sandbox.Timedout; OnEvent saw %q", time.Since(start), resp.Payload, resp.Err, seen)
	}
	waitDead(t, first)
	if pid := invokeOK(t, p, map[string]any{"op": "echo"}).Pid; pid == first {
		t.Error("after the timeout the event went to the frozen process")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || !strings.HasPrefix(seen[0], fmt.Sprintf("1 %d {", first)) || !strings.Contains(seen[1], "freeze") {
		t.Errorf("OnEvent saw %q", seen)
	}
}

// TestManyColdStartsWithOnEvent starts many instances at once, each invocation seen by
// OnEvent. A process can call /next before exec.Cmd.Start has returned in the pool; such an
// instance once went to the idle list, was handed to a second Invoke before its process was
// known, and OnEvent dereferenced a nil Process (the runtime saw EOF and exited).
func TestManyColdStartsWithOnEvent(t *testing.T) {
	var seen atomic.Int64
	p, _ := newPool(t, func(c *Config) {
		c.OnEvent = func(_, pid int, _ string, _ []byte) {
			if pid <= 0 {
				t.Errorf("OnEvent: pid %d", pid)
			}
			seen.Add(1)
		}
	})
	for round := range 3 {
		resps, _ := concurrently(t, p, 48, map[string]any{"op": "sleep", "ms": 50})
		for _, r := range resps {
			if r.Pid <= 0 {
				t.Fatalf("round %d: an invocation failed: %+v", round, r)
			}
		}
	}
	if seen.Load() != 3*48 {
		t.Errorf("OnEvent saw %d events, want %d", seen.Load(), 3*48)
	}
}

// TestOnAnswerStopsOrKills checks the fault-injection hook at the answer: OnAnswer sees the
// process that answers, and when it stops (SIGSTOP) or kills (SIGKILL) it and returns false,
// the answer, a response or an error, is not taken: the invocation times out like a hung
// runtime, or fails as Runtime.ExitError; the next event goes to a new process.
func TestOnAnswerStopsOrKills(t *testing.T) {
	var fault atomic.Int32 // the signal for the next answer; 0 takes it
	p, _ := newPool(t, func(c *Config) {
		c.Timeout = 500 * time.Millisecond
		c.OnAnswer = func(_, pid int, _ string) bool {
			sig := syscall.Signal(fault.Swap(0))
			if sig == 0 {
				return true
			}
			if err := syscall.Kill(pid, sig); err != nil {
				t.Errorf("%v to %d: %v", sig, pid, err)
			}
			return false
		}
	})
	for _, tc := range []struct {
		op   string
		sig  syscall.Signal
		want string
	}{
		{"echo", syscall.SIGSTOP, "Sandbox.Timedout"},
		{"echo", syscall.SIGKILL, "Runtime.ExitError"},
		{"error", syscall.SIGSTOP, "Sandbox.Timedout"},
		{"error", syscall.SIGKILL, "Runtime.ExitError"},
	} {
		pid := invokeOK(t, p, map[string]any{"op": "echo"}).Pid
		fault.Store(int32(tc.sig))
		if e := invokeErr(t, p, map[string]any{"op": tc.op}); e.Type != tc.want {
			t.Errorf("%s answered, then %v: %s %q, want %s", tc.op, tc.sig, e.Type, e.Message, tc.want)
		}
		waitDead(t, pid)
		if next := invokeOK(t, p, map[string]any{"op": "echo"}).Pid; next == pid {
			t.Errorf("%s, %v: the next event went to the same process", tc.op, tc.sig)
		}
	}
}

// TestOnInvokeSeesEachRequestID: OnInvoke is given each invocation's request ID, the one the
// process reads from Lambda-Runtime-Aws-Request-Id (klt local counts the log lines carrying
// it), before the process has the event.
func TestOnInvokeSeesEachRequestID(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	p, _ := newPool(t, func(c *Config) {
		c.OnInvoke = func(id string) {
			mu.Lock()
			seen = append(seen, id)
			mu.Unlock()
		}
	})
	var got []string
	for range 3 {
		got = append(got, invokeOK(t, p, map[string]any{"op": "context"}).RequestID)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(seen) != fmt.Sprint(got) || len(got) != 3 || got[0] == got[1] || got[1] == got[2] {
		t.Errorf("OnInvoke saw %q; the processes got %q", seen, got)
	}
}
