package esmtest_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/esm/esmtest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// A batch.KafkaFunc behind a Kafka mapping with partial batch responses, one retry and an
// on-failure topic: the record that cannot be read fails with the rest of its partition
// (batch reports them so that they come back in order), the mapping resumes from it, retries
// once, then gives both records up to the destination and commits past them.
//
// In a test, pass the test's t to NewKafka; an example has no t, so this one passes a
// stand-in (exampleT, below) that panics on a failure and runs the cleanups at the end.
func ExampleNewKafka() {
	t := &exampleT{}
	defer t.done()

	h := batch.KafkaHandler(func(_ context.Context, r *kafkaevent.Record) error {
		if _, err := strconv.Atoi(string(r.Value)); err != nil {
			return batch.Permanent(err)
		}
		return nil
	})
	k := esmtest.NewKafka(t, h, esmtest.KafkaMapping{
		Topics:                []string{"orders"},
		MaximumBatchingWindow: new(200 * time.Millisecond),
		FunctionResponseTypes: []string{esmtest.ReportBatchItemFailures},
		MaximumRetryAttempts:  new(1),
		DestinationConfig:     &esmtest.DestinationConfig{OnFailure: esmtest.OnFailure{Destination: "kafka://orders-failed"}},
	})
	k.Produce(kgo.StringRecord("1"), kgo.StringRecord("2"), kgo.StringRecord("x"), kgo.StringRecord("4"))
	if err := k.WaitIdle(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	for _, inv := range k.Invocations() {
		fmt.Printf("invocation %d: offsets %v: %s\n", inv.N, inv.Offsets(0), inv.Response)
	}
	for _, f := range k.OnFailure() {
		fmt.Printf("on-failure: %s offset %d: %s after %d invocations\n", f.Partition, f.FirstOffset, f.Condition, f.InvokeCount)
	}
	fmt.Println("committed:", k.Committed())
	// Output:
	// invocation 1: offsets [0 1 2 3]: {"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":2}},{"itemIdentifier":{"partition":"orders-0","offset":3}}]}
	// invocation 2: offsets [2 3]: {"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":2}},{"itemIdentifier":{"partition":"orders-0","offset":3}}]}
	// on-failure: orders-0 offset 2: RetryAttemptsExhausted after 2 invocations
	// on-failure: orders-0 offset 3: RetryAttemptsExhausted after 2 invocations
	// committed: map[0:4]
}

// exampleT stands in for a test's t in an example: esmtest calls only the methods below.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (*exampleT) Helper()                           {}
func (*exampleT) Logf(string, ...any)               {}
func (t *exampleT) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }
func (*exampleT) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (*exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (*exampleT) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (t *exampleT) done() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// An SQS mapping with partial batch responses on a queue NewSQS creates, whose dead-letter
// queue takes a message after two receives. Without WithSQS, NewSQS starts local-aws-sqs (it
// needs Node); this example is compiled, not run.
func ExampleNewSQS() {
	t := &exampleT{}
	defer t.done()

	h := batch.SQSHandler(func(_ context.Context, m *events.SQSMessage) error {
		if m.Body == "poison" {
			return errors.New("cannot read it")
		}
		return nil
	})
	q := esmtest.NewSQS(t, h,
		esmtest.SQSMapping{BatchSize: 10, FunctionResponseTypes: []string{esmtest.ReportBatchItemFailures}},
		esmtest.WithQueue(esmtest.Queue{Attributes: map[string]string{"VisibilityTimeout": "1"}, MaxReceiveCount: 2}))
	q.Send("a", "poison", "b")
	if err := q.WaitIdle(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, m := range q.DeadLetters() {
		fmt.Println("dead letter:", *m.Body)
	}
}

// The handler behind the mapping of a SAM template, with the properties the template gives
// it; this example is compiled, not run (the template's mapping needs its on-failure queue,
// TemplateEnv's QueueURLs).
func ExampleReadMapping() {
	t := &exampleT{}
	defer t.done()

	m, err := esmtest.ReadMapping("template.yaml", "OrdersMapping", esmtest.TemplateEnv{
		Parameters: map[string]string{"Environment": "test"},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := batch.KafkaHandler(func(context.Context, *kafkaevent.Record) error { return nil })
	k := esmtest.NewKafka(t, h, *m.Kafka, append(m.Options(), esmtest.WithPartitions(3))...)
	k.Produce(kgo.StringRecord(`{"id":1}`))
	if err := k.WaitIdle(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	fmt.Println(len(k.Invocations()), "invocation(s), batch size", m.Kafka.BatchSize)
}
