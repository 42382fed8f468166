// Package runtimeapi runs a Lambda function's bootstrap executable as local processes that speak
// the Lambda Runtime API, and invokes it synchronously, many invocations at once.
//
// A [Pool] is one function. Each instance of the pool is one OS process (what Lambda calls an
// execution environment) with a Runtime API server of its own on a free 127.0.0.1 port, given
// to the process as AWS_LAMBDA_RUNTIME_API. An instance runs one invocation at a time, as on
// Lambda (default); concurrency comes from running several instances (a Lambda Managed
// Instances function is the exception, below):
//
//	pool, err := runtimeapi.Start(runtimeapi.Config{
//		Name:      "worker",
//		Bootstrap: ".aws-sam/build/Worker/bootstrap",
//		Env:       env, // the whole environment, AWS_LAMBDA_FUNCTION_NAME included
//		Timeout:   30 * time.Second,
//	})
//	if err != nil { ... }
//	defer pool.Close()
//	resp, err := pool.Invoke(ctx, []byte(`{"Records":[]}`))
//
// # Lifecycle
//
// Start validates the configuration and starts no process: like Lambda's on-demand
// concurrency, an instance is started by the first [Pool.Invoke] that finds none idle (a cold
// start). Its process must call GET /runtime/invocation/next within 10 seconds, Lambda's Init
// phase limit; the invocation's own Timeout starts only once the event is handed to the
// process, so a cold invocation may take up to 10 s of init plus Timeout. [lambda-local.md §1,
// "Lifecycle, timeout and reset"]
//
// An instance is reused (kept warm) after a success and after a function error, since "A
// Lambda Function continues to be re-used for future invokes even after a failure"
// (aws-lambda-go, runtime_api_client.go). It becomes idle again only when its process calls
// /next once more, as on Lambda, where an invocation is complete only then: a process that
// reports an error and exits (aws-lambda-go does so after a panic) is therefore never handed
// another event. An instance whose invocation timed out, whose process exited, or whose
// caller's context ended is reset: its whole process group is killed and a fresh instance is
// started when one is next needed, as Lambda "resets the execution environment" after a crash
// or timeout.
//
// # Outcomes
//
// [Pool.Invoke] returns the function's answer as an [esm.Response]: Payload on success, or Err
// with Lambda's error type: the errorType the runtime reported (aws-lambda-go sends the Go
// type of the error, e.g. "errorString", or of a panic's value, e.g. "string"),
// "Sandbox.Timedout" on timeout, "Runtime.ExitError" when the process died,
// "Function.ResponseSizeTooLarge" for a response over [limits.MaxLambdaResponseBytes] (a 413 to the
// process, as the runtime interface emulator answers), and
// "RequestEntityTooLarge" for an event over [MaxRequestSize]. It returns an error only when
// no invocation could be made: its context ended, the pool is closed ([ErrClosed]), or the
// bootstrap could not be started.
//
// # Logs
//
// Every line a process writes to stdout or stderr is passed whole to [Config.Logs] with the
// instance's number. Lines are queued (up to 4096 for the pool) so that a slow callback never
// blocks a process; lines that do not fit are dropped and counted, and the instance's last line
// says how many were dropped.
//
// # Lambda Managed Instances
//
// With [Config.LMIConcurrency] N, the pool runs a Lambda Managed Instances (LMI) function:
// "Multiple invocations can execute simultaneously within the same execution environment,
// each handled by a different runtime worker" (AWS, "Understanding the Lambda Managed
// Instances execution environment"). Each process gets AWS_LAMBDA_MAX_CONCURRENCY=N, with
// which aws-lambda-go runs N goroutines, each in its own /next long-poll; the server hands
// each event to one of them and takes each answer by its request ID, so up to N invocations
// run at once in one process. Lambda-Runtime-Trace-Id is sent with each event, as always;
// under concurrency aws-lambda-go no longer copies it into _X_AMZN_TRACE_ID (a process-wide
// variable), and the pool never sets that variable either.
//
// Timeouts are not enforced: at an invocation's deadline (still sent as
// Lambda-Runtime-Deadline-Ms) Invoke returns "Sandbox.Timedout", as Lambda returns a timeout
// error, but the process is not reset: "Lambda Managed Instances do not enforce the timeout,
// and your code continues to run" (same page). The invocation keeps its slot until the
// process answers it; that late answer is taken (202) and dropped, and [Pool.Overruns] lists
// every such invocation. A caller's context that ends does not reset the process either.
// The Init phase may last max(130 s, Timeout), as that page says.
//
// Scaling: LMI "does not scale when invocations arrive" but "asynchronously based on CPU
// resource utilization and multi-concurrency saturation" ("Scaling Lambda Managed
// Instances"). The emulator scales on saturation alone, at once: it fills an instance to N
// invocations before it gives one to the next, and starts another instance only when every
// instance is full, up to MaxInstances. It does not start the three execution environments
// Lambda starts when a version is published, nor throttle while it scales; those are
// deployment and capacity behaviours a local run has no use for. [Pool.Stats] gives each
// instance's invocations and the most it ran at once.
//
// Lambdaemu runs on Linux and other Unix systems (process groups); elsewhere it kills only the
// bootstrap process itself.
package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/internal/procgroup"
)

// MaxRequestSize is the largest event Invoke passes to a function, in bytes: Lambda's 6 MB
// quota for a synchronous invocation's request, which Lambda enforces as 6,291,456 bytes.
// [lambda-local.md §1, "Payload limits"]
const MaxRequestSize = 6 * 1024 * 1024

// ErrClosed is returned by Invoke once Close has been called.
var ErrClosed = errors.New("runtimeapi: pool closed")

// initTimeout is Lambda's limit on the Init phase: the time from process start to its first
// call of /next. [lambda-local.md §1, "Lifecycle, timeout and reset"]
const initTimeout = 10 * time.Second

// lmiInitTimeout is the least Init phase of a Lambda Managed Instances function: "The
// timeout is the maximum of 130 seconds or the configured function timeout" (AWS,
// "Understanding the Lambda Managed Instances execution environment").
const lmiInitTimeout = 130 * time.Second

// MaxLMIConcurrency is the largest Config.LMIConcurrency: the range of
// PerExecutionEnvironmentMaxConcurrency, 1 to 1600 (AWS CloudFormation, "AWS::Lambda::Function
// LambdaManagedInstancesCapacityProviderConfig").
const MaxLMIConcurrency = 1600

// shutdownGrace is Lambda's Shutdown phase: SIGTERM, then SIGKILL after 2 s.
const shutdownGrace = 2 * time.Second

// Config describes one function. Name, Bootstrap and Timeout are required.
type Config struct {
	// Name is the function's name, used in messages, in the invoked function ARN
	// (arn:aws:lambda:us-east-1:123456789012:function:<Name>) and, when Env lacks them, in
	// AWS_LAMBDA_FUNCTION_NAME and the log group name.
	Name string
	// Bootstrap is the path of the executable every instance runs.
	Bootstrap string
	// Dir is the working directory of the processes; "" means the directory of Bootstrap
	// (Lambda's LAMBDA_TASK_ROOT, /var/task).
	Dir string
	// Env is the whole environment of the processes, as KEY=VALUE strings; the parent's
	// environment is not inherited. Lambdaemu sets AWS_LAMBDA_RUNTIME_API to the instance's
	// server, replacing any value in Env, as Lambda's platform variables override the
	// customer's. It adds these runtime variables only when Env lacks them:
	// AWS_LAMBDA_FUNCTION_NAME (Name), AWS_LAMBDA_FUNCTION_VERSION ($LATEST),
	// AWS_LAMBDA_INITIALIZATION_TYPE (on-demand), AWS_LAMBDA_LOG_GROUP_NAME
	// (/aws/lambda/<Name>), AWS_LAMBDA_LOG_STREAM_NAME (YYYY/MM/DD/[$LATEST]<32 hex>),
	// LAMBDA_TASK_ROOT (Dir) and _HANDLER (the base name of Bootstrap).
	// AWS_LAMBDA_MAX_CONCURRENCY above 1 is refused unless LMIConcurrency is set, which
	// replaces it.
	Env []string
	// Timeout bounds each invocation, from the moment its event is handed to the process.
	// It must be positive; Lambda allows up to 900 s.
	Timeout time.Duration
	// MaxInstances caps the number of processes; 0 means no cap. When every instance is busy
	// and the cap is reached, Invoke waits for one to become idle.
	MaxInstances int
	// LMIConcurrency, when positive, runs the function as a Lambda Managed Instances function
	// whose PerExecutionEnvironmentMaxConcurrency is LMIConcurrency (1 to
	// [MaxLMIConcurrency]): each instance runs that many invocations at once, its process has
	// AWS_LAMBDA_MAX_CONCURRENCY set to it, and timeouts are not enforced. See "Lambda
	// Managed Instances" in the package documentation. 0 is Lambda's default model.
	LMIConcurrency int
	// Logs receives every line the processes write to stdout and stderr, without its
	// newline, with the number of the instance that wrote it (1, 2, ... in start order). It
	// is called from one goroutine at a time, never after Close returns, and may keep line.
	// Lines longer than 1 MiB are cut to 1 MiB and end with a note of the bytes cut. A nil
	// Logs discards the output.
	Logs func(instance int, line []byte)
	// OnEvent, when set, is called as each event is handed to a process (its response to
	// /next), with the instance's number, the process ID, the invocation's request ID and
	// the payload, which it must not modify. It must return quickly. Fault injection uses
	// it: klt local stops (SIGSTOP) the process that receives a chosen record, so that its
	// invocation times out as a hung runtime's would.
	OnEvent func(instance, pid int, requestID string, payload []byte)
	// OnInvoke, when set, is called with each invocation's request ID (the
	// Lambda-Runtime-Aws-Request-Id the process gets) before the process gets the event, so
	// before any line the process logs for it. It must return quickly. klt local counts the
	// log lines that carry each request ID.
	OnInvoke func(requestID string)
	// OnAnswer, when set, is called as a process answers its invocation (its response or
	// error, read whole), before the answer is taken, with the instance's number, the
	// process ID and the request ID it answers. It must return quickly. When it returns
	// false the answer is not taken: the hook stopped or killed the process (klt local's
	// timeout and crash faults do it to the process that answers for a chosen record, once
	// its work is done, so that where the fault falls does not depend on timing), and the
	// invocation ends as the process does, or at its timeout. For a Lambda Managed Instances function, false instead holds the
	// answer past the invocation's deadline (the hook must not have stopped the process): the
	// invocation times out for its caller, then its answer is taken late (Pool.Overruns).
	OnAnswer func(instance, pid int, requestID string) bool
}

// Pool runs instances of one function and invokes them. It is safe for concurrent use and
// implements [esm.Invoker]. Close must be called to stop its processes.
type Pool struct {
	cfg         Config
	env         []string // cfg.Env with the runtime variables added, without AWS_LAMBDA_RUNTIME_API
	arn         string
	initTimeout time.Duration
	slots       int      // invocations at once per instance: 1, or Config.LMIConcurrency
	logs        *logSink // nil when cfg.Logs is nil

	mu      sync.Mutex
	closed  bool
	all     map[*instance]struct{}
	total   int // processes started and not yet reaped, plus those being started
	busy    int // Invokes holding a slot of an instance
	nextN   int
	seq     uint64        // counts slots freed; an instance's lastFree is its value then
	changed chan struct{} // closed and replaced when a slot frees or an instance ends
	stats   []*InstanceStats
	overrun []*Overrun
}

// InstanceStats is what one instance (execution environment) did, for a report.
type InstanceStats struct {
	N           int // 1, 2, ... in start order, as in Config.Logs
	PID         int
	Concurrency int // the invocations it may run at once: 1, or Config.LMIConcurrency
	Invocations int // events handed to it
	// MaxInFlight is the most invocations it ran at once: events handed to it and not yet
	// answered, a Lambda Managed Instances invocation past its deadline included.
	MaxInFlight int
}

// Overrun is a Lambda Managed Instances invocation that ran past its deadline: its caller
// got "Sandbox.Timedout" at the deadline, and the process kept running it, as LMI does.
type Overrun struct {
	RequestID string
	Instance  int
	Deadline  time.Time
	// Answered is when the process answered it (its answer was taken and dropped); zero when
	// it had not answered when the pool was closed or its process ended.
	Answered time.Time
}

var _ esm.Invoker = (*Pool)(nil)

// Start checks cfg and returns a Pool that starts its first instance on the first Invoke.
func Start(cfg Config) (*Pool, error) {
	if cfg.Name == "" {
		return nil, errors.New("runtimeapi: Config.Name is empty")
	}
	if cfg.Bootstrap == "" {
		return nil, fmt.Errorf("runtimeapi: function %s: Config.Bootstrap is empty", cfg.Name)
	}
	boot, err := filepath.Abs(cfg.Bootstrap)
	if err != nil {
		return nil, fmt.Errorf("runtimeapi: function %s: bootstrap %s: %w", cfg.Name, cfg.Bootstrap, err)
	}
	fi, err := os.Stat(boot)
	if err != nil {
		return nil, fmt.Errorf("runtimeapi: function %s: bootstrap: %w", cfg.Name, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("runtimeapi: function %s: bootstrap %s is not an executable file (mode %v)", cfg.Name, boot, fi.Mode())
	}
	cfg.Bootstrap = boot
	if cfg.Dir == "" {
		cfg.Dir = filepath.Dir(boot)
	}
	if fi, err := os.Stat(cfg.Dir); err != nil {
		return nil, fmt.Errorf("runtimeapi: function %s: working directory: %w", cfg.Name, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("runtimeapi: function %s: working directory %s is not a directory", cfg.Name, cfg.Dir)
	}
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("runtimeapi: function %s: Config.Timeout is %v, want a positive duration", cfg.Name, cfg.Timeout)
	}
	if cfg.MaxInstances < 0 {
		return nil, fmt.Errorf("runtimeapi: function %s: Config.MaxInstances is %d, want 0 (no cap) or more", cfg.Name, cfg.MaxInstances)
	}
	if cfg.LMIConcurrency < 0 || cfg.LMIConcurrency > MaxLMIConcurrency {
		return nil, fmt.Errorf("runtimeapi: function %s: Config.LMIConcurrency is %d, want 0 (Lambda's default model) or 1 to %d (PerExecutionEnvironmentMaxConcurrency's range)", cfg.Name, cfg.LMIConcurrency, MaxLMIConcurrency)
	}
	env, err := runtimeEnv(cfg)
	if err != nil {
		return nil, fmt.Errorf("runtimeapi: function %s: %w", cfg.Name, err)
	}
	p := &Pool{
		cfg:         cfg,
		env:         env,
		arn:         "arn:aws:lambda:us-east-1:123456789012:function:" + cfg.Name,
		initTimeout: initTimeout,
		slots:       max(1, cfg.LMIConcurrency),
		all:         map[*instance]struct{}{},
		changed:     make(chan struct{}),
	}
	if cfg.LMIConcurrency > 0 {
		// "The timeout is the maximum of 130 seconds or the configured function timeout"
		// (AWS, "Understanding the Lambda Managed Instances execution environment", Init phase).
		p.initTimeout = max(lmiInitTimeout, cfg.Timeout)
	}
	if cfg.Logs != nil {
		p.logs = newLogSink(cfg.Logs)
	}
	return p, nil
}

// lmi reports whether the pool runs a Lambda Managed Instances function.
func (p *Pool) lmi() bool { return p.cfg.LMIConcurrency > 0 }

// runtimeEnv returns cfg.Env with the runtime variables Lambda sets added where absent and
// AWS_LAMBDA_RUNTIME_API removed (each instance adds its own).
func runtimeEnv(cfg Config) ([]string, error) {
	env := make([]string, 0, len(cfg.Env)+8)
	has := map[string]bool{}
	for i, kv := range cfg.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("environment entry %d, %q, is not KEY=VALUE", i, kv)
		}
		switch k {
		case "AWS_LAMBDA_RUNTIME_API":
			continue
		case "AWS_LAMBDA_MAX_CONCURRENCY":
			if cfg.LMIConcurrency > 0 {
				continue // the platform's value, from LMIConcurrency, replaces it
			}
			if v != "" && v != "1" {
				return nil, fmt.Errorf("environment sets AWS_LAMBDA_MAX_CONCURRENCY=%s: an instance of a function that is not a Lambda Managed Instances one runs one invocation at a time (set LMIConcurrency)", v)
			}
		}
		has[k] = true
		env = append(env, kv)
	}
	add := func(k, v string) {
		if !has[k] {
			env = append(env, k+"="+v)
		}
	}
	if cfg.LMIConcurrency > 0 {
		env = append(env, "AWS_LAMBDA_MAX_CONCURRENCY="+strconv.Itoa(cfg.LMIConcurrency))
	}
	add("AWS_LAMBDA_FUNCTION_NAME", cfg.Name)
	add("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
	add("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
	add("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/"+cfg.Name)
	add("AWS_LAMBDA_LOG_STREAM_NAME", time.Now().UTC().Format("2006/01/02")+"/[$LATEST]"+randHex(16))
	add("LAMBDA_TASK_ROOT", cfg.Dir)
	add("_HANDLER", filepath.Base(cfg.Bootstrap))
	return env, nil
}

// Instances returns the number of processes (those starting included) and the number of
// invocations in progress or waiting for an instance being started for them.
func (p *Pool) Instances() (total, busy int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total, p.busy
}

// Stats returns what each instance the pool started did, in start order.
func (p *Pool) Stats() []InstanceStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]InstanceStats, len(p.stats))
	for i, s := range p.stats {
		out[i] = *s
	}
	return out
}

// Overruns returns the Lambda Managed Instances invocations that ran past their deadline, in
// the order their deadlines passed. It is empty for a function run in Lambda's default
// model, whose instance is reset at a timeout.
func (p *Pool) Overruns() []Overrun {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Overrun, len(p.overrun))
	for i, o := range p.overrun {
		out[i] = *o
	}
	return out
}

// Invoke runs the function once with payload as its event and waits for the outcome. See the
// package documentation for what the Response holds and when an error is returned instead.
//
// When ctx ends, Invoke returns ctx.Err(). If the event was already running, its instance is
// reset (killed), since the function may still be acting on it, unless the function is a
// Lambda Managed Instances one: then its other invocations go on, and so does this one; if
// it was still waiting for an instance, or for a new one to start, nothing is lost and the
// instance is kept.
func (p *Pool) Invoke(ctx context.Context, payload []byte) (esm.Response, error) {
	if len(payload) > MaxRequestSize {
		return esm.Response{Err: &esm.InvokeError{
			Type:    "RequestEntityTooLarge",
			Message: fmt.Sprintf("Request must be smaller than %d bytes for the InvokeFunction operation", MaxRequestSize),
		}}, nil
	}
	if err := ctx.Err(); err != nil {
		return esm.Response{}, err
	}
	id := newUUID()
	for {
		in, cold, err := p.acquire(ctx)
		if err != nil {
			return esm.Response{}, err
		}
		resp, retry, err := p.run(ctx, in, cold, id, payload)
		if !retry {
			return resp, err
		}
	}
}

// free returns how many more invocations in can take now. p.mu must be held.
func (in *instance) free() int {
	if in.dead {
		return 0
	}
	return in.p.slots - in.reserved - in.running
}

// better reports whether a is a better instance than b for the next invocation. A Lambda
// Managed Instances instance with more in flight wins (the emulator fills an execution
// environment before it uses the next, so that a test meets the most concurrency one process
// can see); then one whose process is waiting in /next; then the one freed last, as Lambda
// reuses the warm instance used last. p.mu must be held.
func (p *Pool) better(a, b *instance) bool {
	if b == nil {
		return true
	}
	if p.lmi() {
		if la, lb := a.reserved+a.running, b.reserved+b.running; la != lb {
			return la > lb
		}
	}
	if wa, wb := a.waiting > a.reserved, b.waiting > b.reserved; wa != wb {
		return wa
	}
	return a.lastFree > b.lastFree
}

// acquire returns an instance on which the caller holds a slot: one with a slot free, or a
// new one (cold) when none has and the cap allows, else it waits. cold also holds for an
// instance still in its Init phase.
func (p *Pool) acquire(ctx context.Context) (in *instance, cold bool, err error) {
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, false, ErrClosed
		}
		var best *instance
		for c := range p.all {
			if c.free() > 0 && p.better(c, best) {
				best = c
			}
		}
		if best != nil {
			best.reserved++
			p.busy++
			cold := !best.ready
			p.mu.Unlock()
			return best, cold, nil
		}
		if p.cfg.MaxInstances == 0 || p.total < p.cfg.MaxInstances {
			p.busy++
			p.nextN++
			in := p.newInstanceLocked(p.nextN)
			p.mu.Unlock()
			if err := p.startInstance(in); err != nil {
				p.mu.Lock()
				p.busy--
				p.notifyLocked()
				p.mu.Unlock()
				return nil, false, err
			}
			return in, true, nil
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
		p.mu.Lock()
	}
}

// release gives up the caller's slot on in before its event was handed over.
func (p *Pool) release(in *instance) {
	p.mu.Lock()
	in.reserved--
	p.busy--
	p.notifyLocked()
	p.mu.Unlock()
}

// finish ends the caller's hold on the pool once its handed-over invocation has an outcome.
// The slot itself frees when the process answers (instance.answer) or ends.
func (p *Pool) finish(inv *invocation) {
	p.mu.Lock()
	if !inv.settled {
		inv.settled = true
		p.busy--
		p.notifyLocked()
	}
	p.mu.Unlock()
}

// notifyLocked wakes every acquire waiting for a change. p.mu must be held.
func (p *Pool) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// run makes one invocation on in, on which the caller holds a slot. retry reports that in
// died before it took the event, while warm: the caller should try another instance.
func (p *Pool) run(ctx context.Context, in *instance, cold bool, id string, payload []byte) (resp esm.Response, retry bool, err error) {
	inv := &invocation{id: id, payload: payload, done: make(chan esm.Response, 1), handed: make(chan struct{}), claimed: make(chan struct{})}
	// The event waits for one of the process's calls of /next (a cold instance's first).
	select {
	case in.events <- inv:
	case <-in.exited:
		p.release(in)
		if cold {
			return p.exitResponse(in, id)
		}
		return esm.Response{}, true, nil
	case <-ctx.Done():
		// The instance is fine: the slot is free again.
		p.release(in)
		return esm.Response{}, false, ctx.Err()
	}
	<-inv.handed // the /next handler has set the deadline

	timer := time.NewTimer(time.Until(inv.deadline))
	defer timer.Stop()
	select {
	case resp = <-inv.done:
		p.finish(inv)
		return resp, false, nil
	case <-timer.C:
		var over *Overrun
		if p.lmi() {
			// "When a single invocation times out, Lambda returns a timeout error for that
			// invocation. However, Lambda Managed Instances do not enforce the timeout, and
			// your code continues to run" (AWS, "Understanding the Lambda Managed Instances
			// execution environment", Error handling and recovery).
			over = &Overrun{RequestID: id, Instance: in.n, Deadline: inv.deadline}
		}
		if !p.claimOverrun(inv, over) {
			resp = <-inv.done
			p.finish(inv)
			return resp, false, nil
		}
		if !p.lmi() {
			p.kill(in)
		}
		p.finish(inv)
		return esm.Response{Err: &esm.InvokeError{
			Type:    "Sandbox.Timedout",
			Message: fmt.Sprintf("Task timed out after %.2f seconds", p.cfg.Timeout.Seconds()),
		}}, false, nil
	case <-in.exited:
		if !p.claim(inv) {
			resp = <-inv.done
			p.finish(inv)
			return resp, false, nil
		}
		p.finish(inv)
		return p.exitResponse(in, id)
	case <-ctx.Done():
		if !p.claim(inv) {
			resp = <-inv.done
			p.finish(inv)
			return resp, false, nil
		}
		if !p.lmi() {
			p.kill(in)
		}
		p.finish(inv)
		return esm.Response{}, false, ctx.Err()
	}
}

// claim marks inv as answered by the caller (timeout, exit, cancellation) unless the runtime
// answered first. After it, the runtime's answer gets 400 InvalidRequestID, or, for a Lambda
// Managed Instances function, is taken and dropped.
func (p *Pool) claim(inv *invocation) bool { return p.claimOverrun(inv, nil) }

// claimOverrun is claim that, when over is not nil, also lists over as the invocation's
// overrun, in the same critical section: a late answer, taken as soon as claimed is closed,
// must find it to record when it came.
func (p *Pool) claimOverrun(inv *invocation, over *Overrun) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if inv.answered {
		return false
	}
	inv.answered = true
	if over != nil {
		inv.overrun = over
		p.overrun = append(p.overrun, over)
	}
	close(inv.claimed)
	return true
}

// exitResponse is the outcome of an invocation whose instance died before answering: its
// init error, init timeout or exit status. in.exited must be closed.
func (p *Pool) exitResponse(in *instance, id string) (esm.Response, bool, error) {
	p.mu.Lock()
	closed, initErr, initTimedOut, startErr := p.closed, in.initErr, in.initTimedOut, in.startErr
	p.mu.Unlock()
	switch {
	case startErr != nil:
		return esm.Response{}, false, startErr
	case closed:
		return esm.Response{}, false, ErrClosed
	case initErr != nil:
		return esm.Response{Err: initErr}, false, nil
	case initTimedOut:
		return esm.Response{Err: &esm.InvokeError{
			Type:    "Sandbox.Timedout",
			Message: fmt.Sprintf("RequestId: %s Error: Init timed out: the runtime did not call /next within %.2f seconds", id, p.initTimeout.Seconds()),
		}}, false, nil
	case in.exitErr == nil:
		return esm.Response{Err: &esm.InvokeError{
			Type:    "Runtime.ExitError",
			Message: fmt.Sprintf("RequestId: %s Error: Runtime exited without providing a reason", id),
		}}, false, nil
	default:
		return esm.Response{Err: &esm.InvokeError{
			Type:    "Runtime.ExitError",
			Message: fmt.Sprintf("RequestId: %s Error: Runtime exited with error: %v", id, in.exitErr),
		}}, false, nil
	}
}

// Close stops every process as Lambda's Shutdown phase does: SIGTERM to its process group,
// then SIGKILL to those still alive after 2 s. It waits for them to exit and for their logs to
// be delivered. Invocations in flight and waiting return [ErrClosed]. Close is idempotent.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.notifyLocked()
	insts := make([]*instance, 0, len(p.all))
	for in := range p.all {
		insts = append(insts, in)
		// The processes are not told anything through the Runtime API (their /next calls
		// stay pending): Lambda's shutdown is signals only.
		in.dead = true
		if in.started && !in.reaped {
			procgroup.Terminate(in.cmd)
		}
	}
	p.mu.Unlock()

	grace := time.NewTimer(shutdownGrace)
	defer grace.Stop()
	for _, in := range insts {
		select {
		case <-in.exited:
			continue
		case <-grace.C:
		}
		break
	}
	p.mu.Lock()
	for _, in := range insts {
		if in.started && !in.reaped {
			procgroup.Kill(in.cmd)
		}
	}
	p.mu.Unlock()
	for _, in := range insts {
		<-in.exited
	}
	if p.logs != nil {
		p.logs.close()
	}
	return nil
}

// LMIConcurrency returns Config.LMIConcurrency: 0 for a function run in Lambda's default model.
func (p *Pool) LMIConcurrency() int { return p.cfg.LMIConcurrency }
