package esm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/internal/kfaketest"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// kafkaDLQ is a local-aws-sqs queue used as an on-failure destination.
type kafkaDLQ struct {
	t      *testing.T
	client *sqs.Client
	url    string
}

func newKafkaDLQ(t *testing.T) *kafkaDLQ {
	t.Helper()
	srv := standintest.StartSQS(t)
	client := srv.Client()
	url, err := standin.CreateQueue(context.Background(), client, "ofd", nil)
	if err != nil {
		t.Fatal(err)
	}
	return &kafkaDLQ{t: t, client: client, url: url}
}

// receive waits for n on-failure records and decodes them.
func (q *kafkaDLQ) receive(n int) []map[string]any {
	q.t.Helper()
	var out []map[string]any
	deadline := time.Now().Add(15 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		msgs, err := standintest.Receive(context.Background(), q.client, q.url, 10, 500*time.Millisecond)
		if err != nil {
			q.t.Fatal(err)
		}
		for _, m := range msgs {
			var rec map[string]any
			if err := json.Unmarshal([]byte(*m.Body), &rec); err != nil {
				q.t.Fatalf("on-failure record is not JSON: %v: %s", err, *m.Body)
			}
			out = append(out, rec)
		}
	}
	if len(out) != n {
		q.t.Fatalf("received %d on-failure records, want %d", len(out), n)
	}
	return out
}

// path reads a nested field of a decoded JSON object.
func path(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// TestKafkaRetryAttemptsExhaustedToSQS checks MaximumRetryAttempts (the first attempt not
// counted) and the SQS on-failure record, then that the partition moves on.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html): "Maximum
// retry attempts – The maximum number of times Lambda retries when your function returns an
// error. This doesn't count the initial invocation attempt." (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html):
// the SQS/SNS record has requestContext (requestId, functionArn, condition
// "RetryAttemptsExhausted", approximateInvokeCount), responseContext (statusCode,
// executedVersion, functionError), version, timestamp and KafkaBatchInfo (batchSize,
// eventSourceArn, bootstrapServers, payloadSize, recordsInfo with first/last record offsets and
// timestamps).
func TestKafkaRetryAttemptsExhaustedToSQS(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1)
	q := newKafkaDLQ(t)
	ts := time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)
	f.produce(&kgo.Record{Value: []byte("a"), Timestamp: ts}, &kgo.Record{Value: []byte("b"), Timestamp: ts.Add(time.Second)})
	fn := newKafkaFunction(t, func(n int, ev *kafkaevent.Event) Response {
		if slices.Contains(callValues(ev), "a") {
			return kafkaFailed("boom")
		}
		return Response{}
	})
	arn := "arn:aws:kafka:us-east-1:123456789012:cluster/local/abc"
	m := newKafkaMapping(t, f, fn, WithBatchSize(2), WithMaximumRetryAttempts(2), WithGroupID("g"),
		WithOnFailure(OnFailureSQS(q.client, q.url)), WithEventSource(kafkaevent.SourceMSK, arn),
		WithFunctionARN("arn:aws:lambda:us-east-1:123456789012:function:consumer"))
	runKafka(t, m)
	rec := q.receive(1)[0]
	kafkaWaitFor(t, 10*time.Second, "offset 2 committed", func() bool { return f.committed("g", 1)[0] == 2 })
	if n := len(fn.snapshot()); n != 3 {
		t.Errorf("%d invocations, want 3 (1 + 2 retries)", n)
	}
	want := map[string]any{
		"requestContext.functionArn":                               "arn:aws:lambda:us-east-1:123456789012:function:consumer",
		"requestContext.condition":                                 "RetryAttemptsExhausted",
		"requestContext.approximateInvokeCount":                    3.0,
		"responseContext.statusCode":                               200.0,
		"responseContext.executedVersion":                          "$LATEST",
		"responseContext.functionError":                            "Unhandled",
		"version":                                                  "1.0",
		"KafkaBatchInfo.batchSize":                                 2.0,
		"KafkaBatchInfo.eventSourceArn":                            arn,
		"KafkaBatchInfo.bootstrapServers":                          strings.Join(f.brokers(), ","),
		"KafkaBatchInfo.payloadSize":                               float64(len(fn.snapshot()[0].payload)),
		"KafkaBatchInfo.recordsInfo.orders-0.firstRecordOffset":    "0",
		"KafkaBatchInfo.recordsInfo.orders-0.lastRecordOffset":     "1",
		"KafkaBatchInfo.recordsInfo.orders-0.firstRecordTimestamp": "2026-01-15T10:00:00.000Z",
		"KafkaBatchInfo.recordsInfo.orders-0.lastRecordTimestamp":  "2026-01-15T10:00:01.000Z",
	}
	for k, v := range want {
		if got := path(rec, strings.Split(k, ".")...); got != v {
			t.Errorf("%s = %v (%T), want %v", k, got, got, v)
		}
	}
	if id, _ := path(rec, "requestContext", "requestId").(string); len(id) != 36 {
		t.Errorf("requestId %q is not a UUID", id)
	}
	if ts, _ := rec["timestamp"].(string); !strings.HasSuffix(ts, "Z") || len(ts) != 24 {
		t.Errorf("timestamp %q is not ISO 8601 with milliseconds", ts)
	}
	if s := settled(t, m.Counters()); s.DeadLettered != 2 || s.Errors != 3 || (s.ReportedFailed+s.ErrorFailed) != 6 {
		t.Errorf("counters %+v", s)
	}
}

func callValues(ev *kafkaevent.Event) []string {
	var out []string
	for r := range ev.All() {
		out = append(out, string(r.Value))
	}
	return out
}

// TestKafkaInfiniteRetriesWithDestinationCapAt10 checks that infinite retries become 10 when an
// on-failure destination is set.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html): "When
// you configure both infinite retries and an on-failure destination, Lambda automatically
// applies a maximum of 10 retry attempts."
func TestKafkaInfiniteRetriesWithDestinationCapAt10(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1, "orders-dlt")
	f.produceN(0, 1)
	fn := newKafkaFunction(t, func(int, *kafkaevent.Event) Response { return kafkaFailed("boom") })
	m := newKafkaMapping(t, f, fn, WithGroupID("g"), WithOnFailure(OnFailureKafkaTopic("orders-dlt")))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "offset 1 committed", func() bool { return f.committed("g", 1)[0] == 1 })
	if n := len(fn.snapshot()); n != 11 {
		t.Errorf("%d invocations, want 11 (1 + 10 retries)", n)
	}
}

// TestKafkaInfiniteRetriesWithoutDestination checks that, with the defaults, a failing batch is
// retried and never skipped: the next record waits behind it.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html): "Maximum
// retry attempts ... The default is -1 (infinite)." (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-process.html):
// "Lambda retries the whole batch of messages until processing succeeds or the messages expire."
func TestKafkaInfiniteRetriesWithoutDestination(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1)
	f.produce(&kgo.Record{Value: []byte("poison")})
	heal := make(chan struct{})
	fn := newKafkaFunction(t, func(n int, ev *kafkaevent.Event) Response {
		select {
		case <-heal:
			return Response{}
		default:
			return kafkaFailed("boom")
		}
	})
	m := newKafkaMapping(t, f, fn, WithBatchSize(1), WithGroupID("g"))
	runKafka(t, m)
	f.produce(&kgo.Record{Value: []byte("next")})
	kafkaWaitFor(t, 10*time.Second, "30 attempts", func() bool { return len(fn.snapshot()) >= 30 })
	for _, c := range fn.snapshot() {
		if v := c.values(); !slices.Equal(v, []string{"poison"}) {
			t.Fatalf("delivered %q while the first record still fails", v)
		}
	}
	close(heal)
	kafkaWaitFor(t, 10*time.Second, "offset 2 committed", func() bool { return f.committed("g", 1)[0] == 2 })
	if got := fn.delivered(); got[len(got)-1] != "next" || got[len(got)-2] != "poison" {
		t.Errorf("last deliveries %q", got[len(got)-2:])
	}
}

// TestKafkaMaximumRecordAge checks that records older than MaximumRecordAge are not sent to the
// function but to the on-failure destination (here a Kafka topic), and the rest are delivered.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html): "Maximum
// record age – The maximum age of a record that Lambda sends to your function."
// (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html): "When Lambda
// can't process records after exhausting retry attempts or when records exceed the maximum age,
// Lambda sends the failed records to the specified Kafka topic for later processing."
func TestKafkaMaximumRecordAge(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1, "orders-dlt")
	old := time.Now().Add(-2 * time.Hour).Truncate(time.Millisecond)
	f.produce(&kgo.Record{Key: []byte("k-old"), Value: []byte("old"), Timestamp: old},
		&kgo.Record{Value: []byte("new"), Timestamp: time.Now()})
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithGroupID("g"), WithMaximumRecordAge(time.Hour), WithOnFailure(OnFailureKafkaTopic("orders-dlt")))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "offset 2 committed", func() bool { return f.committed("g", 1)[0] == 2 })
	if got := fn.delivered(); !slices.Equal(got, []string{"new"}) {
		t.Errorf("delivered %q, want only the new record", got)
	}
	msgs := readTopic(t, f, "orders-dlt", 1)
	rec := decodeOFD(t, msgs[0])
	if c := path(rec, "requestContext", "condition"); c != ConditionRecordAgeExceeded {
		t.Errorf("condition %v", c)
	}
	if rc := rec["responseContext"]; rc != nil {
		t.Errorf("responseContext %v, want null: no invocation held the record", rc)
	}
	if !bytes.Equal(msgs[0].Key, []byte("k-old")) {
		t.Errorf("key %q, want the record's", msgs[0].Key)
	}
	if got := path(rec, "KafkaBatchInfo", "recordInfo", "timestamp"); got != isoMillis(old) {
		t.Errorf("recordInfo.timestamp %v, want %s", got, isoMillis(old))
	}
}

func readTopic(t *testing.T, f *kafkaFixture, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := kfaketest.Client(t, f.cluster, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("reading %s: %v (after %d of %d)", topic, err, len(out), n)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func decodeOFD(t *testing.T, r *kgo.Record) map[string]any {
	t.Helper()
	var rec map[string]any
	if err := json.Unmarshal(r.Value, &rec); err != nil {
		t.Fatalf("on-failure message is not JSON: %v", err)
	}
	return rec
}

// TestKafkaBisectIsolatesBadRecord checks that a batch the function fails is split in two and
// each half retried, so that only the bad record ends up at the on-failure destination (a Kafka
// topic: one message per record, with the record's event as payload).
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html): "Split
// batch on error – When your function returns an error, split the batch into two smaller batches
// and retry each separately. This helps isolate problematic records."
// (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html): "Kafka
// destinations receive the actual failed records along with failure metadata."
func TestKafkaBisectIsolatesBadRecord(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1, "orders-dlt")
	var recs []*kgo.Record
	for i := range 8 {
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)})
	}
	f.produce(recs...)
	fn := newKafkaFunction(t, func(n int, ev *kafkaevent.Event) Response {
		if slices.Contains(callValues(ev), "v5") {
			return kafkaFailed("poison")
		}
		return Response{}
	})
	m := newKafkaMapping(t, f, fn, WithBatchSize(8), WithBatchingWindow(300*time.Millisecond), WithGroupID("g"),
		WithBisectBatchOnFunctionError(), WithMaximumRetryAttempts(1), WithOnFailure(OnFailureKafkaTopic("orders-dlt")))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "offset 8 committed", func() bool { return f.committed("g", 1)[0] == 8 })
	var got [][]string
	for _, c := range fn.snapshot() {
		got = append(got, c.values())
	}
	// 8 fail -> [0..3] ok, [4..7] fail -> [4,5] fail -> [4] ok, [5] fails twice (1 retry) -> [6,7] ok
	want := [][]string{{"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"}, {"v0", "v1", "v2", "v3"}, {"v4", "v5", "v6", "v7"},
		{"v4", "v5"}, {"v4"}, {"v5"}, {"v5"}, {"v6", "v7"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("invocations\n%v\nwant\n%v", got, want)
	}
	msgs := readTopic(t, f, "orders-dlt", 1)
	time.Sleep(200 * time.Millisecond)
	if more := readTopic(t, f, "orders-dlt", 1); len(more) != 1 {
		t.Errorf("%d on-failure messages, want 1", len(more))
	}
	if string(msgs[0].Key) != "k5" {
		t.Errorf("on-failure message key %q, want k5", msgs[0].Key)
	}
	rec := decodeOFD(t, msgs[0])
	for k, v := range map[string]any{
		"requestContext.condition":              "RetryAttemptsExhausted",
		"requestContext.approximateInvokeCount": 5.0,
		"responseContext.functionError":         "Unhandled",
		"KafkaBatchInfo.batchSize":              1.0,
		"KafkaBatchInfo.recordInfo.offset":      "5",
	} {
		if got := path(rec, strings.Split(k, ".")...); got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	payload, err := json.Marshal(rec["payload"])
	if err != nil {
		t.Fatal(err)
	}
	ev, err := kafkaevent.Parse(payload)
	if err != nil {
		t.Fatalf("payload is not a Kafka event: %v", err)
	}
	if got := callValues(ev); !slices.Equal(got, []string{"v5"}) {
		t.Errorf("payload holds %q, want the bad record alone", got)
	}
	if got := path(rec, "KafkaBatchInfo", "payloadSize"); got != float64(len(payload)) {
		t.Errorf("payloadSize %v, want %d", got, len(payload))
	}
}

// TestKafkaOversizeRecord checks that a record whose event alone exceeds 6 MB is never sent,
// goes to the on-failure destination with condition MaximumPayloadSizeExceeded and a null
// responseContext, and is skipped.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html): condition
// "RetryAttemptsExhausted" | "MaximumPayloadSizeExceeded"; "responseContext" is null for
// MaximumPayloadSizeExceeded (esm-contract.md §3.4).
func TestKafkaOversizeRecord(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1)
	q := newKafkaDLQ(t)
	f.produce(&kgo.Record{Value: []byte("small")}, &kgo.Record{Value: bytes.Repeat([]byte("x"), 5<<20)}, &kgo.Record{Value: []byte("after")})
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithGroupID("g"), WithOnFailure(OnFailureSQS(q.client, q.url)),
		withClientOptions(kgo.FetchMaxPartitionBytes(16<<20), kgo.FetchMaxBytes(32<<20)))
	runKafka(t, m)
	rec := q.receive(1)[0]
	kafkaWaitFor(t, 10*time.Second, "offset 3 committed", func() bool { return f.committed("g", 1)[0] == 3 })
	if got := fn.delivered(); !slices.Equal(got, []string{"small", "after"}) {
		t.Errorf("delivered %d records, want small and after", len(got))
	}
	if c := path(rec, "requestContext", "condition"); c != ConditionMaximumPayloadSizeExceeded {
		t.Errorf("condition %v", c)
	}
	if rc, ok := rec["responseContext"]; !ok || rc != nil {
		t.Errorf("responseContext %v (present %v), want null", rc, ok)
	}
	if n := path(rec, "requestContext", "approximateInvokeCount"); n != 0.0 {
		t.Errorf("approximateInvokeCount %v, want 0", n)
	}
	if size, _ := path(rec, "KafkaBatchInfo", "payloadSize").(float64); size <= limits.MaxLambdaPayloadBytes {
		t.Errorf("payloadSize %v, want over %d", size, limits.MaxLambdaPayloadBytes)
	}
}

// TestKafkaDestinationDown checks that when the on-failure destination cannot be written, Run
// fails and the records are not committed (fail closed; AWS does not document this case).
func TestKafkaDestinationDown(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1)
	srv := standintest.StartSQS(t)
	client := srv.Client()
	url, err := standin.CreateQueue(context.Background(), client, "ofd", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	f.produceN(0, 1)
	fn := newKafkaFunction(t, func(int, *kafkaevent.Event) Response { return kafkaFailed("boom") })
	m := newKafkaMapping(t, f, fn, WithGroupID("g"), WithMaximumRetryAttempts(0), WithOnFailure(OnFailureSQS(client, url)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = m.Run(ctx)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "on-failure") {
		t.Fatalf("Run = %v, want the destination's error", err)
	}
	if got := f.committed("g", 1)[0]; got != -1 {
		t.Errorf("committed %d, want nothing", got)
	}
}
