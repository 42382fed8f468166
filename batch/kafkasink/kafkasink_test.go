package kafkasink_test

// The Kafka failure destination against franz-go's kfake, in process.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/internal/sinktest"
	"github.com/kafkalambda/toolkit/batch/kafkasink"
	"github.com/kafkalambda/toolkit/producer"
)

// sinkKafka starts a kfake cluster with the given topics (3 partitions each) and a producer
// client for it, made by package producer as a function would.
func sinkKafka(t *testing.T, opts []kgo.Opt, topics ...string) (*kfake.Cluster, *kgo.Client) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	cl, err := producer.NewClient(producer.WithBootstrapServers(cluster.ListenAddrs()...), producer.WithPlaintext(),
		producer.WithClientOptions(opts...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cluster, cl
}

// sinkConsume reads n records of topic from the start.
func sinkConsume(t *testing.T, ctx context.Context, cluster *kfake.Cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d records of %s, want %d", len(out), topic, n)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("fetch: %v", errs)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func TestKafkaSink(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cluster, cl := sinkKafka(t, nil, "orders.dlq")

	ev := sinktest.Event("orders")
	h, seen := sinktest.FailOn(batch.Permanent(errors.New("schema mismatch")), "0@1", "0@3", "1@1")
	var emf bytes.Buffer
	resp, err := batch.ProcessKafka(ctx, ev, h, append(sinktest.Quiet(&emf), batch.WithSink(kafkasink.New(cl, "orders.dlq"), batch.SinkPermanent))...)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v, want none", resp.BatchItemFailures)
	}
	if n := len(seen()); n != 7 {
		t.Errorf("handler called %d times, want 7 (every record once)", n)
	}
	if n := sinktest.Metric(t, &emf, "SentToSink"); n != 3 {
		t.Errorf("SentToSink = %v, want 3", n)
	}

	recs := sinkConsume(t, ctx, cluster, "orders.dlq", 3)
	got := map[string]bool{}
	for _, rec := range recs {
		env, err := batch.ReadEnvelope(rec.Value)
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("%d@%d", env.Partition, env.Offset)
		got[id] = true
		want := sinktest.Record(t, ev, env.Partition, env.Offset)
		sinktest.SameRecord(t, env.Record(), want)
		if env.Error != "schema mismatch" || !env.Permanent || env.Attempts != 1 {
			t.Errorf("%s: error %q permanent %v attempts %d", id, env.Error, env.Permanent, env.Attempts)
		}
		if !bytes.Equal(rec.Key, want.Key) {
			t.Errorf("%s: key %q, want the original %q", id, rec.Key, want.Key)
		}
		// The original headers, in order, then ours.
		wantHeaders := []kgo.RecordHeader{}
		for _, h := range want.Headers {
			wantHeaders = append(wantHeaders, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		wantHeaders = append(wantHeaders,
			kgo.RecordHeader{Key: kafkasink.HeaderError, Value: []byte("schema mismatch")},
			kgo.RecordHeader{Key: kafkasink.HeaderSourceTopic, Value: []byte("orders")},
			kgo.RecordHeader{Key: kafkasink.HeaderSourcePartition, Value: []byte(strconv.Itoa(int(want.Partition)))},
			kgo.RecordHeader{Key: kafkasink.HeaderSourceOffset, Value: []byte(strconv.FormatInt(want.Offset, 10))})
		if len(rec.Headers) != len(wantHeaders) {
			t.Fatalf("%s: headers %v\nwant %v", id, rec.Headers, wantHeaders)
		}
		for i, w := range wantHeaders {
			if g := rec.Headers[i]; g.Key != w.Key || !bytes.Equal(g.Value, w.Value) {
				t.Errorf("%s: header %d %q=%q, want %q=%q", id, i, g.Key, g.Value, w.Key, w.Value)
			}
		}
	}
	if !got["0@1"] || !got["0@3"] || !got["1@1"] {
		t.Errorf("the topic has %v, want 0@1, 0@3 and 1@1", got)
	}
}

func TestKafkaSinkSQSMessage(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cluster, cl := sinkKafka(t, nil, "jobs.dlq")
	m := events.SQSMessage{MessageId: "m-1", Body: "job", Attributes: map[string]string{"MessageGroupId": "tenant-7"},
		EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:jobs.fifo"}
	ev := &events.SQSEvent{Records: []events.SQSMessage{m}}
	resp, err := batch.ProcessSQS(ctx, ev, func(context.Context, *events.SQSMessage) error { return batch.Permanent(errors.New("nope")) },
		append(sinktest.Quiet(nil), batch.WithSink(kafkasink.New(cl, "jobs.dlq"), batch.SinkPermanent))...)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("response %+v, %v", resp, err)
	}
	rec := sinkConsume(t, ctx, cluster, "jobs.dlq", 1)[0]
	env, err := batch.ReadEnvelope(rec.Value)
	if err != nil || env.Message == nil || env.Message.Body != "job" {
		t.Fatalf("envelope %+v, %v", env, err)
	}
	if string(rec.Key) != "tenant-7" {
		t.Errorf("key %q, want the message group", rec.Key)
	}
	want := map[string]string{kafkasink.HeaderError: "nope", kafkasink.HeaderSourceQueue: m.EventSourceARN, kafkasink.HeaderSourceMessageID: "m-1"}
	if len(rec.Headers) != len(want) {
		t.Errorf("headers %v", rec.Headers)
	}
	for _, h := range rec.Headers {
		if want[h.Key] != string(h.Value) {
			t.Errorf("header %s = %q, want %q", h.Key, h.Value, want[h.Key])
		}
	}
}

// A produce that fails (here: the dead letter topic does not exist) reports the record.
func TestKafkaSinkFailureReportsRecord(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, cl := sinkKafka(t, []kgo.Opt{kgo.UnknownTopicRetries(1), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond })}, "other")

	ev := sinktest.Event("orders")
	h, _ := sinktest.FailOn(batch.Permanent(errors.New("bad")), "1@1")
	sink := kafkasink.New(cl, "missing.dlq")
	start := time.Now()
	resp, err := batch.ProcessKafka(ctx, ev, h, append(sinktest.Quiet(nil), batch.WithSink(sink, batch.SinkPermanent))...)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(resp)
	want := `{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-1","offset":1}},{"itemIdentifier":{"partition":"orders-1","offset":10}}]}`
	if string(out) != want {
		t.Errorf("response %s\nwant %s", out, want)
	}
	t.Logf("failed produce reported after %v", time.Since(start).Round(time.Millisecond))
	err = sink.Send(ctx, &batch.Envelope{Version: batch.EnvelopeVersion, Source: "kafka", Topic: "orders", Partition: 1, Offset: 1})
	if err == nil || !strings.Contains(err.Error(), "missing.dlq") || !strings.Contains(err.Error(), "orders-1@1") {
		t.Errorf("Send: %v, want an error naming the topic and the record", err)
	}
	t.Log(err)
}

// A broker that does not answer cannot hold Send past the context's deadline: the record is
// reported not acknowledged, before the deadline.
func TestKafkaSinkRespectsDeadline(t *testing.T) {
	t.Parallel()
	cluster, cl := sinkKafka(t, nil, "slow.dlq")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cluster.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		cluster.SleepControl(func() { <-release })
		return nil, nil, false
	})
	// The context reports a deadline and never ends: Send can only return by giving up on its
	// own, before the deadline (producer.Produce keeps a tenth of the time left), so no
	// scheduling of the machine decides the outcome.
	const timeout = 500 * time.Millisecond
	start := time.Now()
	sent := make(chan error, 1)
	go func() {
		sent <- kafkasink.New(cl, "slow.dlq").Send(deadlineOnly(start.Add(timeout)), &batch.Envelope{Version: batch.EnvelopeVersion, Source: "kafka", Topic: "orders", Partition: 1, Offset: 7})
	}()
	var err error
	select {
	case err = <-sent:
	case <-time.After(time.Minute): // not a margin: code that waits for the context never returns
		t.Fatalf("Send still blocked a minute after a %v deadline: it waits for the context to end", timeout)
	}
	took := time.Since(start)
	if !errors.Is(err, producer.ErrNotAcknowledged) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "orders-1@7") {
		t.Fatalf("Send: %v, want ErrNotAcknowledged at the deadline, naming the record", err)
	}
	t.Logf("Send gave up after %v of %v", took.Round(time.Millisecond), timeout)
}

// deadlineOnly is a context whose Deadline is dl and that never ends.
type deadlineOnly time.Time

func (deadlineOnly) Done() <-chan struct{}         { return nil }
func (deadlineOnly) Err() error                    { return nil }
func (deadlineOnly) Value(any) any                 { return nil }
func (d deadlineOnly) Deadline() (time.Time, bool) { return time.Time(d), true }
