package runtimeapi

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// envOf returns the environment an answer of op "context" carries, as a map.
func envOf(a answer) map[string]string {
	env := map[string]string{}
	for _, kv := range a.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// TestLMIRunsManyInvocationsInOneProcess: with LMIConcurrency 4, eight invocations of 300 ms
// run on two processes, four at once in each, and the process is told its concurrency.
func TestLMIRunsManyInvocationsInOneProcess(t *testing.T) {
	const perEnv, n = 4, 8
	p, _ := newPool(t, func(c *Config) {
		c.LMIConcurrency = perEnv
		c.Env = append(c.Env, "AWS_LAMBDA_MAX_CONCURRENCY=1") // the platform's value wins
	})
	answers, took := concurrently(t, p, n, map[string]any{"op": "sleep", "ms": 300})
	if got := pids(answers); len(got) != n/perEnv {
		t.Fatalf("%d invocations at LMIConcurrency %d ran on processes %v, want %d", n, perEnv, got, n/perEnv)
	}
	if took > 2*300*time.Millisecond+time.Second { // two cold starts, then one round
		t.Errorf("%d concurrent 300ms invocations took %v, want them to overlap", n, took)
	}
	stats := p.Stats()
	if len(stats) != n/perEnv {
		t.Fatalf("Stats() = %+v, want %d instances", stats, n/perEnv)
	}
	for _, s := range stats {
		if s.Concurrency != perEnv || s.Invocations != perEnv || s.MaxInFlight != perEnv {
			t.Errorf("instance %d: %+v, want Concurrency, Invocations and MaxInFlight %d", s.N, s, perEnv)
		}
	}

	a := invokeOK(t, p, map[string]any{"op": "context"})
	env := envOf(a)
	if env["AWS_LAMBDA_MAX_CONCURRENCY"] != "4" {
		t.Errorf("AWS_LAMBDA_MAX_CONCURRENCY = %q, want 4", env["AWS_LAMBDA_MAX_CONCURRENCY"])
	}
	// Under concurrency the trace ID is only the invocation's (its context), never the
	// process's variable (aws-lambda-go #602).
	if v, ok := env["_X_AMZN_TRACE_ID"]; ok {
		t.Errorf("_X_AMZN_TRACE_ID = %q in an LMI process, want it unset", v)
	}
	if !strings.HasPrefix(a.Trace, "Root=1-") {
		t.Errorf("trace ID in the context = %q", a.Trace)
	}
	if !slices.Contains(pids(answers), a.Pid) {
		t.Errorf("a later invocation ran on a new process %d, want a warm one of %v", a.Pid, pids(answers))
	}
}

// TestLMITimeoutNotEnforced: an LMI invocation past its deadline fails for its caller at the
// deadline, the process goes on (its other invocations are answered), its late answer is
// taken, and Overruns lists it.
func TestLMITimeoutNotEnforced(t *testing.T) {
	p, _ := newPool(t, func(c *Config) {
		c.LMIConcurrency = 2
		c.Timeout = 400 * time.Millisecond
	})
	pid := invokeOK(t, p, map[string]any{"op": "echo"}).Pid

	var wg sync.WaitGroup
	var other answer
	wg.Go(func() {
		// Runs beside the late one, in the same process, and ends after its deadline.
		other = invokeOK(t, p, map[string]any{"op": "sleep", "ms": 300})
	})
	start := time.Now()
	e := invokeErr(t, p, map[string]any{"op": "sleep", "ms": 1200})
	took := time.Since(start)
	wg.Wait()
	if e.Type != "Sandbox.Timedout" {
		t.Errorf("late invocation: %+v, want Sandbox.Timedout", e)
	}
	if took > time.Second {
		t.Errorf("the late invocation's caller waited %v, want about the 400ms timeout", took)
	}
	if other.Pid != pid {
		t.Errorf("the other invocation ran on %d, want the warm process %d", other.Pid, pid)
	}
	if !alive(pid) {
		t.Fatalf("process %d was reset at a timeout: LMI does not enforce timeouts", pid)
	}
	o := p.Overruns()
	if len(o) != 1 || o[0].Instance != 1 || o[0].RequestID == "" {
		t.Fatalf("Overruns() = %+v, want the late invocation on instance 1", o)
	}
	// The late answer comes about 800 ms after the deadline, and frees the slot.
	waitFor(t, 5*time.Second, func() bool { return !p.Overruns()[0].Answered.IsZero() })
	if late := p.Overruns()[0].Answered.Sub(o[0].Deadline); late < 500*time.Millisecond {
		t.Errorf("late answer %v after the deadline, want about 800ms", late)
	}
	for range 2 { // both slots serve again, on the same process
		if got := invokeOK(t, p, map[string]any{"op": "echo"}).Pid; got != pid {
			t.Errorf("after the late answer, pid = %d, want %d", got, pid)
		}
	}
	if total, _ := p.Instances(); total != 1 {
		t.Errorf("Instances() total = %d, want 1", total)
	}
}

// TestLMIContextEndKeepsProcess: an LMI invocation whose caller gives up does not reset the
// process, whose other invocations are in flight.
func TestLMIContextEndKeepsProcess(t *testing.T) {
	p, _ := newPool(t, func(c *Config) { c.LMIConcurrency = 2 })
	pid := invokeOK(t, p, map[string]any{"op": "echo"}).Pid
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := p.Invoke(ctx, []byte(`{"op":"sleep","ms":500}`)); err == nil {
		t.Fatal("Invoke with a context that ends succeeded")
	}
	if got := invokeOK(t, p, map[string]any{"op": "echo"}).Pid; got != pid {
		t.Errorf("after a caller gave up, pid = %d, want the same process %d", got, pid)
	}
}

// waitFor fails unless cond holds within d.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLMIOnAnswerHoldsPastDeadline: for an LMI function, OnAnswer's false holds the answer
// until the invocation has timed out for its caller, then takes it late; the process runs on.
func TestLMIOnAnswerHoldsPastDeadline(t *testing.T) {
	var held atomic.Bool
	p, _ := newPool(t, func(c *Config) {
		c.LMIConcurrency = 2
		c.Timeout = 300 * time.Millisecond
		c.OnAnswer = func(_, _ int, _ string) bool { return !held.CompareAndSwap(false, true) }
	})
	e := invokeErr(t, p, map[string]any{"op": "echo"})
	if e.Type != "Sandbox.Timedout" {
		t.Fatalf("held answer: %+v, want Sandbox.Timedout", e)
	}
	waitFor(t, 5*time.Second, func() bool { o := p.Overruns(); return len(o) == 1 && !o[0].Answered.IsZero() })
	a := invokeOK(t, p, map[string]any{"op": "echo"})
	if st := p.Stats(); len(st) != 1 || st[0].PID != a.Pid {
		t.Errorf("after a held answer: Stats %+v, next answer from %d; want the same process", st, a.Pid)
	}
}
