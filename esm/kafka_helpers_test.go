package esm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalambda/toolkit/internal/kfaketest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// kafkaFixture is a kfake cluster with one topic and a producer client.
type kafkaFixture struct {
	t       *testing.T
	cluster *kfake.Cluster
	topic   string
	prod    *kgo.Client
}

func newKafkaFixture(t *testing.T, topic string, partitions int32, extra ...string) *kafkaFixture {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, append([]string{topic}, extra...)...),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": fmt.Sprint(16 << 20)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	prod := kfaketest.Client(t, c, kgo.ProducerBatchMaxBytes(16<<20), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	return &kafkaFixture{t: t, cluster: c, topic: topic, prod: prod}
}

func (f *kafkaFixture) brokers() []string { return f.cluster.ListenAddrs() }

// produce writes recs (Topic defaults to the fixture's topic) and waits for the acks.
func (f *kafkaFixture) produce(recs ...*kgo.Record) {
	f.t.Helper()
	for _, r := range recs {
		if r.Topic == "" {
			r.Topic = f.topic
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		f.t.Fatalf("producing: %v", err)
	}
}

// produceN writes n records "v0".."v{n-1}" to partition p.
func (f *kafkaFixture) produceN(p int32, n int) {
	f.t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "v%d", i)}
	}
	f.produce(recs...)
}

// committed reads the group's committed offsets of the topic (-1 when none).
func (f *kafkaFixture) committed(group string, partitions int32) map[int32]int64 {
	f.t.Helper()
	cl := kfaketest.Client(f.t, f.cluster)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = f.topic
	for p := range partitions {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.Offset
		}
	}
	return out
}

// call is one invocation the test function received.
type kafkaCall struct {
	payload []byte
	event   *kafkaevent.Event
	at      time.Time
}

func (c kafkaCall) offsets() []int64 {
	var out []int64
	for r := range c.event.All() {
		out = append(out, r.Offset)
	}
	return out
}

func (c kafkaCall) values() []string {
	var out []string
	for r := range c.event.All() {
		out = append(out, string(r.Value))
	}
	return out
}

// function is the Go function a test mapping invokes: it parses and records every event,
// checks that no two invocations of one partition overlap, and answers with answer (success
// when nil).
type kafkaFunction struct {
	t      *testing.T
	answer func(n int, ev *kafkaevent.Event) Response

	mu          sync.Mutex
	calls       []kafkaCall
	inflight    map[string]int
	maxParallel int
	parallel    int
	overlap     error
}

func newKafkaFunction(t *testing.T, answer func(n int, ev *kafkaevent.Event) Response) *kafkaFunction {
	return &kafkaFunction{t: t, answer: answer, inflight: map[string]int{}}
}

func (f *kafkaFunction) Invoke(ctx context.Context, payload []byte) (Response, error) {
	ev, err := kafkaevent.Parse(payload)
	if err != nil {
		f.t.Errorf("the mapping sent an event kafkaevent.Parse rejects: %v", err)
		return Response{Err: &InvokeError{Type: "Parse", Message: err.Error()}}, nil
	}
	f.mu.Lock()
	n := len(f.calls)
	f.calls = append(f.calls, kafkaCall{payload: payload, event: ev, at: time.Now()})
	for _, p := range ev.Partitions {
		f.inflight[p.ID()]++
		if f.inflight[p.ID()] > 1 && f.overlap == nil {
			f.overlap = fmt.Errorf("two invocations of %s at once", p.ID())
		}
	}
	f.parallel++
	f.maxParallel = max(f.maxParallel, f.parallel)
	f.mu.Unlock()
	var resp Response
	if f.answer != nil {
		resp = f.answer(n, ev)
	}
	f.mu.Lock()
	for _, p := range ev.Partitions {
		f.inflight[p.ID()]--
	}
	f.parallel--
	f.mu.Unlock()
	return resp, nil
}

func (f *kafkaFunction) snapshot() []kafkaCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]kafkaCall(nil), f.calls...)
}

// delivered lists the values delivered, in invocation order.
func (f *kafkaFunction) delivered() []string {
	var out []string
	for _, c := range f.snapshot() {
		out = append(out, c.values()...)
	}
	return out
}

// run starts m.Run and stops it when the test ends, failing the test if Run returned an error.
func runKafka(t *testing.T, m *Kafka) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				err = errors.New("Run did not return within 20s of cancel")
			}
		})
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return stop
}

// waitFor polls cond until it holds or timeout passes.
func kafkaWaitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func kafkaFailed(msg string) Response {
	return Response{Err: &InvokeError{Type: "errorString", Message: msg}}
}
