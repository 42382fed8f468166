package esm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

func newKafkaMapping(t *testing.T, f *kafkaFixture, fn Invoker, opts ...KafkaOption) *Kafka {
	t.Helper()
	opts = append([]KafkaOption{WithName(t.Name()), WithBatchingWindow(20 * time.Millisecond)}, opts...)
	m, err := NewKafka(f.brokers(), f.topic, fn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	m.cfg.backoff = func(int) time.Duration { return time.Millisecond }
	return m
}

// TestKafkaEventShape checks the event against the shape AWS documents: "records" keyed
// "topic-partition", key and value base64, headers as arrays of byte values, timestamp and
// timestampType, eventSource, eventSourceArn (MSK only) and bootstrapServers, and that
// kafkaevent.Parse reads back exactly what was produced.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/with-msk.html, example event): "eventSource":
// "aws:kafka", "eventSourceArn": ..., "bootstrapServers": ..., "records": {"mytopic-0": [{"topic":
// "mytopic", "partition": 0, "offset": 15, "timestamp": 1545084650987, "timestampType":
// "CREATE_TIME", "key": "abcDEFghiJKLmnoPQRstuVWXyz1234==", "value": "SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==",
// "headers": [{"headerKey": [104, 101, 97, 100, 101, 114, 86, 97, 108, 117, 101]}]}]}
func TestKafkaEventShape(t *testing.T) {
	for _, tc := range []struct {
		name   string
		source kafkaevent.Source
		arn    string
	}{
		{"MSK", kafkaevent.SourceMSK, "arn:aws:kafka:us-east-1:123456789012:cluster/local/abc"},
		{"SelfManaged", kafkaevent.SourceSelfManaged, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newKafkaFixture(t, "orders.v1-events", 2)
			ts := time.UnixMilli(1545084650987)
			produced := []*kgo.Record{
				{Partition: 1, Key: []byte("k1"), Value: []byte(`{"id":1}`), Timestamp: ts,
					Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("ë\x00\xff")}, {Key: "h", Value: []byte("2")}, {Key: "empty", Value: []byte{}}}},
				{Partition: 1, Value: nil, Timestamp: ts},                     // tombstone, no key
				{Partition: 1, Key: []byte{}, Value: []byte{}, Timestamp: ts}, // empty key and value
			}
			f.produce(produced...)
			fn := newKafkaFunction(t, nil)
			m := newKafkaMapping(t, f, fn, WithEventSource(tc.source, tc.arn), WithBootstrapServers("b-1:9092", "b-2:9092"))
			runKafka(t, m)
			kafkaWaitFor(t, 10*time.Second, "3 records", func() bool { return len(fn.delivered()) == 3 })

			c := fn.snapshot()[0]
			ev := c.event
			if ev.Source != tc.source || ev.SourceARN != tc.arn || !slices.Equal(ev.BootstrapServers, []string{"b-1:9092", "b-2:9092"}) {
				t.Errorf("envelope = %q %q %q", ev.Source, ev.SourceARN, ev.BootstrapServers)
			}
			if tc.arn == "" && bytes.Contains(c.payload, []byte("eventSourceArn")) {
				t.Errorf("self-managed event has an eventSourceArn: %s", c.payload)
			}
			if !bytes.Contains(c.payload, []byte(`"records":{"orders.v1-events-1":[`)) {
				t.Errorf("records not keyed topic-partition: %s", c.payload)
			}
			if !bytes.Contains(c.payload, []byte(`{"h":[-61,-85,0,-1]}`)) {
				t.Errorf("header not written as signed byte values: %s", c.payload)
			}
			var got []*kafkaevent.Record
			for r := range ev.All() {
				got = append(got, r)
			}
			if len(got) != 3 {
				t.Fatalf("got %d records in the first event, want 3", len(got))
			}
			for i, r := range got {
				p := produced[i]
				if r.Err != nil || r.Topic != f.topic || r.Partition != 1 || r.Offset != int64(i) ||
					!r.Timestamp.Equal(ts) || r.TimestampType != kafkaevent.CreateTime ||
					!bytes.Equal(r.Key, p.Key) || (r.Key == nil) != (p.Key == nil) ||
					!bytes.Equal(r.Value, p.Value) || (r.Value == nil) != (p.Value == nil) ||
					len(r.Headers) != len(p.Headers) {
					t.Errorf("record %d = %+v, produced %+v", i, r, p)
					continue
				}
				for j, h := range r.Headers {
					if h.Key != p.Headers[j].Key || !bytes.Equal(h.Value, p.Headers[j].Value) {
						t.Errorf("record %d header %d = %q %v, want %q %v", i, j, h.Key, h.Value, p.Headers[j].Key, p.Headers[j].Value)
					}
				}
			}
			// The round trip: what kafkaevent writes back for the parsed event is what we sent.
			back, _ := ev.MarshalJSON()
			if !bytes.Equal(back, c.payload) {
				t.Errorf("kafkaevent writes back\n%s\nthe mapping sent\n%s", back, c.payload)
			}
		})
	}
}

// TestKafkaBatchSize checks that an invocation holds at most BatchSize records, in offset order.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-esm-parameters.html): BatchSize
// "Default: 100. Maximum: 10,000"; (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-process.html)
// "Lambda reads messages sequentially for each Kafka topic partition."
func TestKafkaBatchSize(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1)
	f.produceN(0, 250)
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithBatchSize(100))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "250 records", func() bool { return len(fn.delivered()) == 250 })
	var next int64
	for i, c := range fn.snapshot() {
		offs := c.offsets()
		if len(offs) > 100 {
			t.Errorf("invocation %d holds %d records, batch size is 100", i, len(offs))
		}
		for _, o := range offs {
			if o != next {
				t.Fatalf("invocation %d: offset %d, want %d", i, o, next)
			}
			next++
		}
	}
	if n := len(fn.snapshot()); n != 3 {
		t.Errorf("%d invocations for 250 records at batch size 100, want 3", n)
	}
}

// TestKafkaBatchingWindow checks that a batch that is not full waits for the batching window,
// and that a full batch does not wait at all.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/api/API_EventSourceMappingConfiguration.html):
// "MaximumBatchingWindowInSeconds: The maximum amount of time, in seconds, that Lambda spends
// gathering records before invoking the function." ... "For streams and Amazon SQS event sources,
// the default batching window is 0 seconds. For Amazon MSK, Self-managed Apache Kafka, ... the
// default batching window is 500 ms."
func TestKafkaBatchingWindow(t *testing.T) {
	t.Run("not full waits", func(t *testing.T) {
		f := newKafkaFixture(t, "orders", 1)
		fn := newKafkaFunction(t, nil)
		m := newKafkaMapping(t, f, fn, WithBatchingWindow(600*time.Millisecond))
		runKafka(t, m)
		time.Sleep(500 * time.Millisecond) // the group has joined
		start := time.Now()
		f.produceN(0, 1)
		time.Sleep(200 * time.Millisecond)
		f.produceN(0, 1)
		kafkaWaitFor(t, 10*time.Second, "2 records", func() bool { return len(fn.delivered()) == 2 })
		calls := fn.snapshot()
		if len(calls) != 1 {
			t.Fatalf("%d invocations, want 1 with both records (window 600 ms)", len(calls))
		}
		if d := calls[0].at.Sub(start); d < 550*time.Millisecond {
			t.Errorf("invoked %v after the first record, before the 600 ms window", d)
		}
	})
	t.Run("full does not wait", func(t *testing.T) {
		f := newKafkaFixture(t, "orders", 1)
		f.produceN(0, 50)
		fn := newKafkaFunction(t, nil)
		m := newKafkaMapping(t, f, fn, WithBatchSize(10), WithBatchingWindow(10*time.Second))
		runKafka(t, m)
		kafkaWaitFor(t, 5*time.Second, "5 full batches well inside the 10 s window", func() bool { return len(fn.delivered()) == 50 })
	})
	t.Run("default is 500 ms", func(t *testing.T) {
		m, err := NewKafka([]string{"x:9092"}, "t", InvokerFunc(nil))
		if err == nil || m != nil {
			t.Fatalf("NewKafka with a nil InvokerFunc: %v, want an error", err)
		}
		m, err = NewKafka([]string{"x:9092"}, "t", newKafkaFunction(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		if m.cfg.window != 500*time.Millisecond || m.cfg.batchSize != 100 || m.cfg.retries != -1 {
			t.Errorf("defaults: window %v, batch %d, retries %d", m.cfg.window, m.cfg.batchSize, m.cfg.retries)
		}
	})
}

// TestKafkaPayloadCap checks that no event exceeds 6 MB: the batch is cut before the record
// that would take it over.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/api/API_EventSourceMappingConfiguration.html):
// "Lambda passes all of the records in the batch to the function in a single call, up to the
// payload limit for synchronous invocation (6 MB)."
func TestKafkaPayloadCap(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1)
	for i := range 7 {
		v := bytes.Repeat([]byte{byte('a' + i)}, 1600*1024) // 2.2 MB in base64: two fit in 6 MB, three do not
		f.produce(&kgo.Record{Value: v})
	}
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithBatchingWindow(300*time.Millisecond))
	runKafka(t, m)
	kafkaWaitFor(t, 20*time.Second, "7 records", func() bool { return len(fn.delivered()) == 7 })
	var next int64
	for i, c := range fn.snapshot() {
		if len(c.payload) > limits.MaxLambdaPayloadBytes {
			t.Errorf("invocation %d: %d bytes, over %d", i, len(c.payload), limits.MaxLambdaPayloadBytes)
		}
		if n := len(c.offsets()); n > 2 {
			t.Errorf("invocation %d holds %d records of 2 MB", i, n)
		}
		for _, o := range c.offsets() {
			if o != next {
				t.Errorf("offset %d, want %d", o, next)
			}
			next++
		}
	}
	if n := len(fn.snapshot()); n != 4 {
		t.Errorf("%d invocations for 7 records of 2 MB, want 4 (2+2+2+1)", n)
	}
}

// TestKafkaFilterCommitsUnmatched checks that records FilterCriteria rejects are never
// delivered and that their offsets are committed.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-filtering.html): "Lambda commits
// offsets for matched and unmatched messages after successfully invoking the function."
func TestKafkaFilterCommitsUnmatched(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1)
	crit, err := filter.ParseCriteria([]byte(`{"Filters":[{"Pattern":"{\"value\":{\"kind\":[\"order\"]}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 20 {
		kind := "order"
		if i%3 != 0 {
			kind = "noise"
		}
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, `{"kind":%q,"i":%d}`, kind, i)})
	}
	recs = append(recs, &kgo.Record{Value: []byte(`{"kind":"noise","i":20}`)}) // the last is filtered out
	f.produce(recs...)
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithFilter(crit), WithGroupID("g-filter"))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "offset 21 committed", func() bool { return f.committed("g-filter", 1)[0] == 21 })
	for _, v := range fn.delivered() {
		if !strings.Contains(v, `"order"`) {
			t.Errorf("delivered a record the filter rejects: %s", v)
		}
	}
	if n := len(fn.delivered()); n != 7 {
		t.Errorf("delivered %d records, want the 7 orders", n)
	}
	if got := m.Counters().Filtered.Load(); got != 14 {
		t.Errorf("Filtered = %d, want 14", got)
	}
}

// TestKafkaFilterUndecidableIsDelivered checks that a record the filter cannot decide on is
// delivered rather than dropped (fail closed; AWS does not document this case).
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html) only says
// that a record is dropped when it does not match: "If an event doesn't meet any of the
// filtering criteria, Lambda drops the event."
func TestKafkaFilterUndecidableIsDelivered(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1)
	crit, err := filter.ParseCriteria([]byte(`{"Filters":[{"Pattern":"{\"value\":{\"kind\":[\"order\"]}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	deep := []byte(`{"kind":"noise","x":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`)
	if _, err := crit.MatchKafka(&kafkaevent.Record{Value: deep}); err == nil {
		t.Fatal("the filter decides on the deep record; the test needs one it cannot decide on")
	}
	f.produce(&kgo.Record{Value: deep}, &kgo.Record{Value: []byte(`{"kind":"noise"}`)})
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithFilter(crit), WithGroupID("g-deep"))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "offset 2 committed", func() bool { return f.committed("g-deep", 1)[0] == 2 })
	if got := fn.delivered(); len(got) != 1 || got[0] != string(deep) {
		t.Errorf("delivered %d records, want the undecidable one alone", len(got))
	}
}

// TestKafkaCommitsAfterEachBatch checks that a mapping started again with the same group goes
// on after the last batch it finished.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-esm-parameters.html... esm-contract §2):
// "After Lambda processes each batch, it commits the offsets of the messages in that batch."
func TestKafkaCommitsAfterEachBatch(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1)
	f.produceN(0, 30)
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithBatchSize(10), WithGroupID("g-resume"))
	stop := runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "30 records", func() bool { return len(fn.delivered()) == 30 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := f.committed("g-resume", 1)[0]; got != 30 {
		t.Errorf("committed %d, want 30", got)
	}
	f.produce(&kgo.Record{Value: []byte("after")})
	fn2 := newKafkaFunction(t, nil)
	runKafka(t, newKafkaMapping(t, f, fn2, WithBatchSize(10), WithGroupID("g-resume")))
	kafkaWaitFor(t, 10*time.Second, "the new record", func() bool { return len(fn2.delivered()) >= 1 })
	time.Sleep(200 * time.Millisecond)
	if got := fn2.delivered(); !slices.Equal(got, []string{"after"}) {
		t.Errorf("second run delivered %q, want only the new record", got)
	}
}

// TestKafkaFunctionErrorRetriesWholeBatch checks that a failed invocation is retried with the
// same records, and that the partition does not move on meanwhile.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-process.html): "If your function
// returns an error for any of the messages in a batch, Lambda retries the whole batch of messages
// until processing succeeds or the messages expire."
func TestKafkaFunctionErrorRetriesWholeBatch(t *testing.T) {
	f := newKafkaFixture(t, "orders", 1)
	f.produceN(0, 5)
	fn := newKafkaFunction(t, func(n int, _ *kafkaevent.Event) Response {
		if n < 3 {
			return kafkaFailed("boom")
		}
		return Response{}
	})
	m := newKafkaMapping(t, f, fn, WithBatchSize(5), WithGroupID("g-retry"))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "offset 5 committed", func() bool { return f.committed("g-retry", 1)[0] == 5 })
	calls := fn.snapshot()
	if len(calls) != 4 {
		t.Fatalf("%d invocations, want 4 (3 failures, then success)", len(calls))
	}
	for i, c := range calls {
		if !slices.Equal(c.offsets(), []int64{0, 1, 2, 3, 4}) {
			t.Errorf("invocation %d held %v, want the whole batch", i, c.offsets())
		}
	}
	s := settled(t, m.Counters())
	if s.Errors != 3 || (s.ReportedFailed+s.ErrorFailed) != 15 || s.Succeeded != 5 || s.Invocations != 4 || s.InFlight != 0 {
		t.Errorf("counters %+v", s)
	}
}

// TestKafkaPartialBatchResponse checks that the partition resumes from the lowest offset the
// function reports, with "partition" or the older "topic-partition" key.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html#kafka-partial-batch-response):
// "Allow your function to return information about which records in a batch failed processing,
// so Lambda can retry only the failed records." Response: {"batchItemFailures": [{"itemIdentifier":
// {"partition": "topic-partition_number", "offset": 100}}]}
func TestKafkaPartialBatchResponse(t *testing.T) {
	for _, key := range []string{"partition", "topic-partition"} {
		t.Run(key, func(t *testing.T) {
			f := newKafkaFixture(t, "orders", 1)
			f.produceN(0, 10)
			fn := newKafkaFunction(t, func(n int, ev *kafkaevent.Event) Response {
				if n == 0 {
					return Response{Payload: fmt.Appendf(nil,
						`{"batchItemFailures":[{"itemIdentifier":{%q:"orders-0","offset":7}},{"itemIdentifier":{%q:"orders-0","offset":4}}]}`, key, key)}
				}
				return Response{Payload: []byte(`{"batchItemFailures":[]}`)}
			})
			m := newKafkaMapping(t, f, fn, WithBatchSize(10), WithReportBatchItemFailures(), WithGroupID("g-pbr"))
			runKafka(t, m)
			kafkaWaitFor(t, 10*time.Second, "offset 10 committed", func() bool { return f.committed("g-pbr", 1)[0] == 10 })
			calls := fn.snapshot()
			if len(calls) != 2 || !slices.Equal(calls[1].offsets(), []int64{4, 5, 6, 7, 8, 9}) {
				var got [][]int64
				for _, c := range calls {
					got = append(got, c.offsets())
				}
				t.Errorf("invocations %v, want [0..9] then [4..9]", got)
			}
			if s := settled(t, m.Counters()); s.Succeeded != 10 || (s.ReportedFailed+s.ErrorFailed) != 6 {
				t.Errorf("counters %+v, want Done 10 Failed 6", s)
			}
		})
	}
}

// TestKafkaPartialBatchResponseInvalid checks that an identifier not in the event, or a response
// that is not valid, fails the whole batch, and that without ReportBatchItemFailures the
// response is ignored.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html#kafka-partial-batch-response):
// "Any invalid topic-partition_number or offset returned that was not present in the invoked
// event will be treated as failure and entire batch will be retried." ... "If you return an
// empty valid JSON or null, the event source mapping will consider a batch as successfully
// processed."
func TestKafkaPartialBatchResponseInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, response string
		report         bool
		retried        bool
	}{
		{"offset not in event", `{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":99}}]}`, true, true},
		{"other partition", `{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-1","offset":1}}]}`, true, true},
		{"invalid JSON", `{"batchItemFailures":[`, true, true},
		{"string identifier", `{"batchItemFailures":[{"itemIdentifier":"orders-0-1"}]}`, true, true},
		{"null", `null`, true, false},
		{"empty object", `{}`, true, false},
		{"empty", ``, true, false},
		{"ignored without ReportBatchItemFailures", `{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":1}}]}`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newKafkaFixture(t, "orders", 1)
			f.produceN(0, 3)
			fn := newKafkaFunction(t, func(n int, _ *kafkaevent.Event) Response {
				if n == 0 {
					return Response{Payload: []byte(tc.response)}
				}
				return Response{}
			})
			opts := []KafkaOption{WithBatchSize(3), WithGroupID("g")}
			if tc.report {
				opts = append(opts, WithReportBatchItemFailures())
			}
			runKafka(t, newKafkaMapping(t, f, fn, opts...))
			kafkaWaitFor(t, 10*time.Second, "offset 3 committed", func() bool { return f.committed("g", 1)[0] == 3 })
			calls := fn.snapshot()
			if tc.retried {
				if len(calls) != 2 || !slices.Equal(calls[1].offsets(), []int64{0, 1, 2}) {
					t.Errorf("%d invocations, want the whole batch again", len(calls))
				}
			} else if len(calls) != 1 {
				t.Errorf("%d invocations, want 1 (success)", len(calls))
			}
		})
	}
}

// TestKafkaLag checks PartitionLag and Counters.Lag: the records not yet delivered, per
// partition (the high watermark minus the next offset to deliver). Records in an invocation
// that has not returned are delivered: they are not lag.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html): "OffsetLag ...
// the difference in offset between the last record written to a topic and the last record that
// your function's consumer group processed." (That is KafkaMetrics' MaxOffsetLag, see
// TestKafkaMetrics; Lag counts what the function has not seen yet.)
func TestKafkaLag(t *testing.T) {
	f := newKafkaFixture(t, "orders", 2)
	f.produceN(0, 20)
	f.produceN(1, 5)
	release := make(chan struct{})
	fn := newKafkaFunction(t, func(n int, ev *kafkaevent.Event) Response {
		select {
		case <-release:
		case <-time.After(20 * time.Second):
		}
		return Response{}
	})
	m := newKafkaMapping(t, f, fn, WithBatchSize(10), WithPollers(1))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "the first invocations", func() bool { return len(fn.snapshot()) > 0 })
	// Both partitions are in invocations that have not returned: no more are delivered.
	time.Sleep(700 * time.Millisecond)
	delivered := map[int32]int64{}
	for _, c := range fn.snapshot() {
		if n := len(c.offsets()); n > 10 {
			t.Errorf("an invocation holds %d records, over the batch size 10", n)
		}
		for _, p := range c.event.Partitions {
			delivered[p.Number] += int64(len(p.Records))
		}
	}
	kafkaWaitFor(t, 10*time.Second, fmt.Sprintf("lag %d on partition 0 and %d on 1", 20-delivered[0], 5-delivered[1]), func() bool {
		l := m.PartitionLag()
		return l[0] == 20-delivered[0] && l[1] == 5-delivered[1] && m.Counters().Lag.Load() == 25-delivered[0]-delivered[1]
	})
	close(release)
	kafkaWaitFor(t, 10*time.Second, "no lag", func() bool {
		l := m.PartitionLag()
		return l[0] == 0 && l[1] == 0 && m.Counters().Lag.Load() == 0
	})
}

// TestKafkaThroughput pushes 5,000 records through 5 partitions at batch size 500 with the
// default 500 ms window: full batches must go without waiting.
func TestKafkaThroughput(t *testing.T) {
	f := newKafkaFixture(t, "orders", 5)
	for p := range int32(5) {
		f.produceN(p, 1000)
	}
	fn := newKafkaFunction(t, nil)
	m, err := NewKafka(f.brokers(), f.topic, fn, WithBatchSize(500))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "5000 records", func() bool { return m.Counters().Succeeded.Load() == 5000 })
	d := time.Since(start)
	t.Logf("5000 records in %v, %d invocations", d, len(fn.snapshot()))
	if d > 3*time.Second {
		t.Errorf("5000 records took %v", d)
	}
}

// TestKafkaStartingTimestamp checks AT_TIMESTAMP: a new group starts at the first record of
// each partition stamped at or after the timestamp, and its lag counts only those records.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html):
// "StartingPositionTimestamp: With StartingPosition set to AT_TIMESTAMP, the time from which to
// start reading, in Unix time seconds."
func TestKafkaStartingTimestamp(t *testing.T) {
	f := newKafkaFixture(t, "orders", 2)
	f.produceN(0, 5)
	f.produceN(1, 5)
	time.Sleep(20 * time.Millisecond)
	since := time.Now()
	time.Sleep(20 * time.Millisecond)
	f.produce(&kgo.Record{Value: []byte("new-0"), Partition: 0}, &kgo.Record{Value: []byte("new-1"), Partition: 1})
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithStartingTimestamp(since))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "the two new records, and no lag", func() bool {
		return len(fn.delivered()) == 2 && m.Counters().Lag.Load() == 0
	})
	time.Sleep(200 * time.Millisecond)
	got := fn.delivered()
	slices.Sort(got)
	if !slices.Equal(got, []string{"new-0", "new-1"}) {
		t.Errorf("delivered %q, want only the records since the timestamp", got)
	}
	if _, err := NewKafka(f.brokers(), "orders", fn, WithStartingPosition(AtTimestamp)); err == nil {
		t.Error("AT_TIMESTAMP without a timestamp: no error")
	}
}

// TestNewKafkaConfig checks that NewKafka reports bad settings as SQS's NewSQS does: one
// *toolkit.OptionError per setting, naming the option, all of them at once.
func TestNewKafkaConfig(t *testing.T) {
	fn := InvokerFunc(func(context.Context, []byte) (Response, error) { return Response{}, nil })
	cases := []struct {
		setting string
		opt     KafkaOption
	}{
		{"WithBatchSize", WithBatchSize(0)},
		{"WithBatchSize", WithBatchSize(10001)},
		{"WithBatchingWindow", WithBatchingWindow(-time.Second)},
		{"WithBatchingWindow", WithBatchingWindow(301 * time.Second)},
		{"WithFilter", WithFilter(nil)},
		{"WithMaximumRetryAttempts", WithMaximumRetryAttempts(-2)},
		{"WithMaximumRecordAge", WithMaximumRecordAge(0)},
		{"WithOnFailure", WithOnFailure(nil)},
		{"WithOnFailure", WithOnFailure(OnFailureKafkaTopic("t"))},
		{"WithStartingPosition", WithStartingPosition("NOW")},
		{"WithEventSource", WithEventSource(kafkaevent.SourceMSK, "")},
		{"WithPollers", WithPollers(0)},
		{"WithPollers", WithPollers(2001)},
		{"WithMetricsConfig", WithMetricsConfig("Lag")},
	}
	for _, tc := range cases {
		_, err := NewKafka([]string{"x:9092"}, "t", fn, WithName("m"), tc.opt)
		var ce *toolkit.OptionError
		if !errors.As(err, &ce) || ce.Option != tc.setting || !strings.Contains(ce.Reason, `Kafka mapping "m"`) || !errors.Is(err, toolkit.ErrInvalidOption) {
			t.Errorf("%s: error %v, want a *toolkit.OptionError on it", tc.setting, err)
		}
	}
	_, err := NewKafka(nil, "", nil, WithBatchSize(0))
	for _, want := range []string{"brokers", "topic", "Invoker", "WithBatchSize"} {
		if err == nil || !strings.Contains(err.Error(), "invalid option "+want+": ") {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}
