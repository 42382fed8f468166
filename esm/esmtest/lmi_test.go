package esmtest_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/esm/esmtest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// TestLMIEnvironments: with WithLMIConcurrency(4), five invocations at once (one per
// partition; a poller makes at most five at once) fill one emulated execution environment
// of four and start a second; the handler sees
// AWS_LAMBDA_MAX_CONCURRENCY; an invocation past its deadline fails as Sandbox.Timedout while
// no invocation is past its deadline.
func TestLMIEnvironments(t *testing.T) {
	const partitions = 5
	var mu sync.Mutex
	inFlight, most := 0, 0
	all := make(chan struct{})
	h := handler(func(ctx context.Context, event []byte) ([]byte, error) {
		ev, err := kafkaevent.Parse(event)
		if err != nil {
			return nil, err
		}
		if v := os.Getenv("AWS_LAMBDA_MAX_CONCURRENCY"); v != "4" {
			t.Errorf("AWS_LAMBDA_MAX_CONCURRENCY = %q, want 4", v)
		}
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		if inFlight == partitions {
			close(all)
		}
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		_ = ev
		select { // hold every invocation until all eight run at once
		case <-all:
		case <-time.After(5 * time.Second):
			t.Error("the five invocations never ran at once")
		}
		return nil, nil
	})
	k := esmtest.NewKafka(t, h, esmtest.KafkaMapping{Topics: []string{"orders"}},
		esmtest.WithPartitions(partitions), esmtest.WithOnePartitionPerInvocation(),
		esmtest.WithLMIConcurrency(4), esmtest.WithFunctionTimeout(10*time.Second))
	for p := range int32(partitions) {
		k.ProduceTo(p, values("a")...)
	}
	waitIdle(t, k)
	if most != partitions {
		t.Fatalf("at most %d invocations ran at once, want %d", most, partitions)
	}
	envs := k.Environments()
	if len(envs) != 2 || envs[0].MaxInFlight != 4 || envs[1].MaxInFlight != 1 {
		t.Errorf("Environments() = %+v, want one that ran 4 at once and one that ran 1", envs)
	}
	for _, inv := range k.Invocations() {
		if inv.Environment < 1 || inv.Environment > 2 || inv.PastDeadline {
			t.Errorf("invocation %d: environment %d, past deadline %v", inv.N, inv.Environment, inv.PastDeadline)
		}
	}
}

// TestLMIPastDeadline: an LMI invocation past its deadline fails as Sandbox.Timedout, is
// marked PastDeadline, and its handler keeps its place in its environment until it returns.
func TestLMIPastDeadline(t *testing.T) {
	release := make(chan struct{})
	returned := make(chan struct{})
	var first atomic.Bool
	h := handler(func(ctx context.Context, event []byte) ([]byte, error) {
		if first.CompareAndSwap(false, true) { // the first delivery runs past its deadline; the retry does not
			<-release
			close(returned)
		}
		return nil, nil
	})
	k := esmtest.NewKafka(t, h, esmtest.KafkaMapping{Topics: []string{"orders"}},
		esmtest.WithLMIConcurrency(2), esmtest.WithFunctionTimeout(200*time.Millisecond))
	k.Produce(values("slow")...)
	waitIdle(t, k) // the retry (offset 0 again) succeeds while the first handler still runs
	invs := k.Invocations()
	if len(invs) < 2 || invs[0].Err == nil || invs[0].Err.Type != "Sandbox.Timedout" || !invs[0].PastDeadline {
		t.Fatalf("invocations %+v, want the first past its deadline (Sandbox.Timedout)", invs)
	}
	envs := k.Environments()
	if len(envs) != 1 || envs[0].MaxInFlight != 2 {
		t.Errorf("Environments() = %+v, want one that ran the late invocation beside its retry", envs)
	}
	close(release)
	<-returned
}
