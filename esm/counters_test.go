package esm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// Tests of the counters (esm.go's Counters: their docs are the definitions), the Observer
// (observe.go) and the metrics (metrics.go) that the conformance tests do not already check.

// TestKafkaCountersFiltered checks a filtered record: counted Filtered and committed, never
// delivered, reported as one Filtered event, and FilteredOutEventCount.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-filtering.html): "Lambda commits
// offsets for matched and unmatched messages after successfully invoking the function".
func TestKafkaCountersFiltered(t *testing.T) {
	f := newKafkaFixture(t, "orders", 2)
	f.produce(&kgo.Record{Partition: 0, Value: []byte(`{"keep":false}`)}, &kgo.Record{Partition: 1, Value: []byte(`{"keep":true}`)},
		&kgo.Record{Partition: 1, Value: []byte(`{"keep":false}`)})
	crit, err := filter.ParseCriteria([]byte(`{"Filters":[{"Pattern":"{\"value\":{\"keep\":[true]}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	obs := &observed{}
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithFilter(crit), WithObserver(obs), WithGroupID("g"), WithMetricsConfig(MetricsEventCount, MetricsKafka))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "both partitions committed", func() bool {
		c := f.committed("g", 2)
		return c[0] == 1 && c[1] == 2
	})
	kafkaWaitFor(t, 5*time.Second, "3 records settled", func() bool {
		s := m.Counters().Snapshot()
		return s.Filtered+s.Succeeded == 3
	})
	s := m.Counters().Snapshot()
	if s.In != 3 || s.Filtered != 2 || s.Succeeded != 1 || s.Delivered != 1 || s.Retried != 0 || s.Lag != 0 {
		t.Errorf("counters %+v", s)
	}
	checkSettled(t, m.Counters())
	if n := obs.records(Filtered); n != 2 {
		t.Errorf("Filtered events name %d records, want 2", n)
	}
	for _, e := range obs.events {
		if e.Mapping != t.Name() || e.At.IsZero() {
			t.Errorf("event %+v: no mapping or time", e)
		}
	}
	got := m.Metrics()
	want := map[string]int64{metricPolledEventCount: 3, metricFilteredOutEventCount: 2, metricInvokedEventCount: 1,
		metricFailedInvokeEventCount: 0, metricDroppedEventCount: 0, metricOnFailureDestinationDeliveredEventCount: 0,
		metricCommittedEventCount: 3, MetricMaxOffsetLag: 0, MetricSumOffsetLag: 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Metrics() = %v, want %v", got, want)
	}
}

// TestKafkaCountersGiveUp checks records given up without a destination (MaximumRetryAttempts
// 0): DeadLettered, committed, a GaveUp event with the condition, DroppedEventCount; and the
// Observer's Delivered and Failed events, with the invocation's error as the reason.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html): "Maximum
// retry attempts – The maximum number of times Lambda retries when your function returns an
// error. This doesn't count the initial invocation attempt."
func TestKafkaCountersGiveUp(t *testing.T) {
	f := newKafkaFixture(t, "orders", 2)
	f.produceTo(2, 0, 1)
	obs := &observed{}
	fn := newKafkaFunction(t, func(int, *kafkaevent.Event) Response { return kafkaFailed("boom") })
	m := newKafkaMapping(t, f, fn, WithBatchingWindow(time.Second), WithMaximumRetryAttempts(0), WithObserver(obs), WithGroupID("g"),
		WithMetricsConfig(MetricsEventCount, MetricsErrorCount))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "both partitions committed", func() bool {
		c := f.committed("g", 2)
		return c[0] == 2 && c[1] == 2
	})
	s := settled(t, m.Counters())
	if s.In != 4 || s.DeadLettered != 4 || s.Succeeded != 0 || s.ErrorFailed != 4 || s.Errors != 1 || s.Invocations != 1 || s.Retried != 0 {
		t.Errorf("counters %+v", s)
	}
	checkSettled(t, m.Counters())
	d := obs.of(Delivered)
	if len(d) != 1 || d[0].Invocation != 1 || len(d[0].Records) != 4 {
		t.Errorf("Delivered events %+v", d)
	}
	if fl := obs.of(Failed); len(fl) != 1 || fl[0].Reason != "errorString: boom" || fl[0].Invocation != 1 {
		t.Errorf("Failed events %+v", fl)
	}
	g := obs.of(GaveUp)
	if len(g) != 1 || g[0].Reason != ConditionRetryAttemptsExhausted || len(g[0].Records) != 4 {
		t.Errorf("GaveUp events %+v", g)
	}
	if n := obs.records(Succeeded); n != 0 {
		t.Errorf("%d records reported Succeeded", n)
	}
	got := m.Metrics()
	if got[metricDroppedEventCount] != 4 || got[metricFailedInvokeEventCount] != 4 || got[metricInvokedEventCount] != 4 ||
		got[metricInvokeErrorCount] != 1 || got[metricCommitErrorCount] != 0 || got[metricPollingErrorCount] != 0 || len(got) != 11 {
		t.Errorf("Metrics() = %v", got)
	}
}

// TestKafkaOnFailureRecordNamesEachPartition checks that records of two partitions given up
// together make one on-failure record whose recordsInfo has each partition's range.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html): KafkaBatchInfo's
// "recordsInfo" is keyed by "topic-partition", with firstRecordOffset, lastRecordOffset,
// firstRecordTimestamp and lastRecordTimestamp.
func TestKafkaOnFailureRecordNamesEachPartition(t *testing.T) {
	f := newKafkaFixture(t, "orders", 2)
	q := newKafkaDLQ(t)
	f.produceTo(2, 0, 1)
	fn := newKafkaFunction(t, func(int, *kafkaevent.Event) Response { return kafkaFailed("boom") })
	m := newKafkaMapping(t, f, fn, WithBatchingWindow(time.Second), WithMaximumRetryAttempts(0),
		WithOnFailure(OnFailureSQS(q.client, q.url)), WithMetricsConfig(MetricsEventCount))
	runKafka(t, m)
	rec := q.receive(1)[0]
	for _, p := range []string{"orders-0", "orders-1"} {
		if a, b := path(rec, "KafkaBatchInfo", "recordsInfo", p, "firstRecordOffset"), path(rec, "KafkaBatchInfo", "recordsInfo", p, "lastRecordOffset"); a != "0" || b != "1" {
			t.Errorf("recordsInfo %s: %v..%v, want 0..1", p, a, b)
		}
	}
	if n := path(rec, "KafkaBatchInfo", "batchSize"); n != 4.0 {
		t.Errorf("batchSize %v, want 4", n)
	}
	if got := path(rec, "KafkaBatchInfo", "payloadSize"); got != float64(len(fn.snapshot()[0].payload)) {
		t.Errorf("payloadSize %v, want %d", got, len(fn.snapshot()[0].payload))
	}
	kafkaWaitFor(t, 5*time.Second, "4 dead-lettered", func() bool { return m.Counters().DeadLettered.Load() == 4 })
	if got := m.Metrics()[metricOnFailureDestinationDeliveredEventCount]; got != 4 {
		t.Errorf("OnFailureDestinationDeliveredEventCount = %d, want 4", got)
	}
}

// TestKafkaMetricsOffsetLag checks KafkaMetrics' MaxOffsetLag and SumOffsetLag, AWS's OffsetLag
// (records written but not committed), while the function holds the batches.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html): "OffsetLag ...
// the difference in offset between the last record written to a topic and the last record that
// your function's consumer group processed."
func TestKafkaMetricsOffsetLag(t *testing.T) {
	f := newKafkaFixture(t, "orders", 2)
	f.produceN(0, 6)
	f.produceN(1, 2)
	release := make(chan struct{})
	fn := newKafkaFunction(t, func(int, *kafkaevent.Event) Response {
		select {
		case <-release:
		case <-time.After(20 * time.Second):
		}
		return Response{}
	})
	m := newKafkaMapping(t, f, fn, WithMetricsConfig(MetricsKafka))
	runKafka(t, m)
	kafkaWaitFor(t, 10*time.Second, "every record delivered, MaxOffsetLag 6, SumOffsetLag 8", func() bool {
		got := m.Metrics()
		return len(fn.delivered()) == 8 && got[MetricMaxOffsetLag] == 6 && got[MetricSumOffsetLag] == 8
	})
	if l := m.Counters().Lag.Load(); l != 0 {
		t.Errorf("Lag %d while every record is in an invocation, want 0", l)
	}
	close(release)
	kafkaWaitFor(t, 10*time.Second, "no offset lag, 8 committed", func() bool {
		got := m.Metrics()
		return got[MetricMaxOffsetLag] == 0 && got[MetricSumOffsetLag] == 0 && got[metricCommittedEventCount] == 8
	})
}

// TestWithMetricsConfig checks WithMetricsConfig against CloudFormation's MetricsConfig.Metrics:
// "Allowed values: EventCount | ErrorCount | KafkaMetrics", "Maximum: 3"; ErrorCount and
// KafkaMetrics are "(Amazon MSK and self-managed Apache Kafka)" only.
func TestWithMetricsConfig(t *testing.T) {
	fn := InvokerFunc(func(context.Context, []byte) (Response, error) { return Response{}, nil })
	for _, tc := range []struct {
		groups []string
		bad    bool
	}{
		{groups: nil},
		{groups: []string{MetricsEventCount, MetricsErrorCount, MetricsKafka}},
		{groups: []string{MetricsEventCount, MetricsEventCount}, bad: true},
		{groups: []string{"Throughput"}, bad: true},
		{groups: []string{MetricsEventCount, MetricsErrorCount, MetricsKafka, MetricsEventCount}, bad: true},
	} {
		_, err := NewKafka([]string{"localhost:9092"}, "t", fn, WithMetricsConfig(tc.groups...))
		var ce *toolkit.OptionError
		if tc.bad != errors.As(err, &ce) || tc.bad && ce.Option != "WithMetricsConfig" {
			t.Errorf("WithMetricsConfig(%v): err = %v", tc.groups, err)
		}
	}
	for _, g := range []string{MetricsErrorCount, MetricsKafka} {
		_, err := NewSQS(context.Background(), &sqs.Client{}, "http://q", fn, WithMetricsConfig(g))
		var ce *toolkit.OptionError
		if !errors.As(err, &ce) || ce.Option != "WithMetricsConfig" || !strings.Contains(ce.Reason, "Kafka") {
			t.Errorf("SQS WithMetricsConfig(%s): err = %v", g, err)
		}
	}
}

// TestSQSCountersAndObserver checks an SQS mapping's counters, Observer events and EventCount
// metrics through a partial batch response and a retry: each message counts In once, its
// RecordRef carries its ID and string attributes, and Delivered/Failed/Succeeded follow it.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html): "Lambda
// treats a batch as a complete success if your function returns ... an empty batchItemFailures
// list"; the messages it lists are retried.
func TestSQSCountersAndObserver(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	url, arn := env.queue("counted", 2, nil)
	_, err := env.c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("retry-me"),
		MessageAttributes: map[string]types.MessageAttributeValue{"origin": {DataType: aws.String("String"), StringValue: aws.String("orders-3@17")}}})
	if err != nil {
		t.Fatal(err)
	}
	env.send(url, []string{"ok"}, nil)
	first := true
	rec := &sqsRecorder{t: t, answer: func(ev *events.SQSEvent) Response {
		for _, r := range ev.Records {
			if r.Body == "retry-me" && first {
				first = false
				return pbr(r.MessageId)
			}
		}
		return Response{}
	}}
	obs := &observed{}
	m, stop := env.run(url, rec, WithName("counted"), WithQueueARN(arn), WithBatchSize(2), WithBatchingWindow(time.Second),
		WithReportBatchItemFailures(), WithObserver(obs), WithMetricsConfig(MetricsEventCount))
	waitFor(t, 15*time.Second, "2 messages done", func() bool { return m.Counters().Succeeded.Load() == 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	s := m.Counters().Snapshot()
	if s.In != 2 || s.Succeeded != 2 || s.ReportedFailed != 1 || s.ErrorFailed != 0 || s.Retried != 1 || s.Delivered != 3 || s.Errors != 0 {
		t.Errorf("counters %+v", s)
	}
	checkSettled(t, m.Counters())
	fl := obs.of(Failed)
	if len(fl) != 1 || fl[0].Reason != "ReportBatchItemFailures" || len(fl[0].Records) != 1 || fl[0].Records[0].Attributes["origin"] != "orders-3@17" {
		t.Errorf("Failed events %+v", fl)
	}
	if fl[0].Records[0].MessageID == "" {
		t.Error("RecordRef without MessageID")
	}
	var invs []int64
	for _, e := range obs.of(Delivered) {
		invs = append(invs, e.Invocation)
	}
	if !slices.Equal(invs, []int64{1, 2}) || obs.records(Succeeded) != 2 {
		t.Errorf("Delivered invocations %v, Succeeded records %d", invs, obs.records(Succeeded))
	}
	got := m.Metrics()
	// PolledEventCount counts every receipt: at least the three deliveries' (a message held
	// past its visibility timeout is received once more).
	if got[metricPolledEventCount] >= 3 {
		got[metricPolledEventCount] = 3
	}
	want := map[string]int64{metricPolledEventCount: 3, metricFilteredOutEventCount: 0, metricInvokedEventCount: 3,
		metricFailedInvokeEventCount: 1, metricDeletedEventCount: 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Metrics() = %v, want %v", got, want)
	}
}
