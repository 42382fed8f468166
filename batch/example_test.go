package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/lambdalog"
)

// exampleLogger logs to standard output without the time and duration, which change from run
// to run, so that examples can show their log lines.
func exampleLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "durationMs" {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// quietLogger discards the log lines, for examples about something else.
var quietLogger = slog.New(slog.DiscardHandler)

// Order is what the examples' records hold.
type Order struct {
	ID    string  `json:"id"`
	Total float64 `json:"total"`
}

// KafkaHandler makes the function that lambda.Start runs:
//
//	lambda.Start(batch.KafkaHandler(handle))
//
// Here its Invoke, which lambda.Start calls with each payload, is called directly. The
// second record does not decode: it is reported, with the one after it in its partition.
func ExampleKafkaHandler() {
	handle := func(ctx context.Context, r *kafkaevent.Record) error {
		var o Order
		if err := json.Unmarshal(r.Value, &o); err != nil {
			return batch.Permanent(fmt.Errorf("order: %w", err))
		}
		fmt.Printf("saved order %s (%.2f)\n", o.ID, o.Total)
		return nil
	}
	fn := batch.KafkaHandler(handle, batch.WithLogger(quietLogger))

	payload, err := json.Marshal(kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte(`{"id":"o-1","total":12.5}`)).
		Add("orders", 0, []byte(`not json`)).
		Add("orders", 0, []byte(`{"id":"o-3","total":7}`)).
		Add("orders", 1, []byte(`{"id":"o-4","total":3}`)).
		Event())
	if err != nil {
		log.Fatal(err)
	}
	out, err := fn.Invoke(context.Background(), payload)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))
	// Unordered output:
	// saved order o-1 (12.50)
	// saved order o-4 (3.00)
	// {"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":1}},{"itemIdentifier":{"partition":"orders-0","offset":2}}]}
}

// ProcessKafka processes an event already parsed, and returns the partial-batch response.
func ExampleProcessKafka() {
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte(`{"id":"o-1"}`)).
		Add("orders", 0, []byte(`{"id":"o-2"}`)).
		Event()
	resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		fmt.Printf("%s@%d: %s\n", r.PartitionID(), r.Offset, r.Value)
		return nil
	}, batch.WithLogger(quietLogger))
	if err != nil {
		log.Fatal(err)
	}
	out, _ := json.Marshal(resp)
	fmt.Println(string(out))
	// Output:
	// orders-0@0: {"id":"o-1"}
	// orders-0@1: {"id":"o-2"}
	// {"batchItemFailures":[]}
}

// On a FIFO queue, a message that fails is reported with the rest of its message group;
// the other groups go on.
func ExampleProcessSQS() {
	msg := func(id, group string) events.SQSMessage {
		return events.SQSMessage{MessageId: id, Body: `{"id":"` + id + `"}`,
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:orders.fifo",
			Attributes:     map[string]string{"MessageGroupId": group}}
	}
	ev := &events.SQSEvent{Records: []events.SQSMessage{msg("m-1", "a"), msg("m-2", "b"), msg("m-3", "a"), msg("m-4", "a")}}
	resp, err := batch.ProcessSQS(context.Background(), ev, func(ctx context.Context, m *events.SQSMessage) error {
		if m.MessageId == "m-3" {
			return batch.Permanent(errors.New("rejected"))
		}
		return nil
	}, batch.WithLogger(quietLogger))
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range resp.BatchItemFailures {
		fmt.Println(f.ItemIdentifier)
	}
	// Output:
	// m-3
	// m-4
}

// SQSHandler makes the function that lambda.Start runs for an SQS event source mapping:
//
//	lambda.Start(batch.SQSHandler(handle))
//
// Here its Invoke, which lambda.Start calls with each payload, is called directly.
func ExampleSQSHandler() {
	fn := batch.SQSHandler(func(ctx context.Context, m *events.SQSMessage) error {
		if m.Body == "" {
			return batch.Permanent(errors.New("empty body"))
		}
		return nil
	}, batch.WithLogger(quietLogger))
	payload := []byte(`{"Records":[
		{"messageId":"m-1","body":"{}","eventSourceARN":"arn:aws:sqs:us-east-1:123456789012:jobs"},
		{"messageId":"m-2","body":"","eventSourceARN":"arn:aws:sqs:us-east-1:123456789012:jobs"}]}`)
	out, err := fn.Invoke(context.Background(), payload)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))
	// Output:
	// {"batchItemFailures":[{"itemIdentifier":"m-2"}]}
}

// A Permanent error is not retried: the record fails at once. Ordinary errors are retried
// (WithRetry) before the record fails.
func ExamplePermanent() {
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte(`{"id":"o-1"}`)).
		Add("orders", 1, []byte(`{"id":`)).
		Event()
	calls := map[string]int{}
	resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		calls[r.PartitionID()]++
		var o Order
		if err := json.Unmarshal(r.Value, &o); err != nil {
			return batch.Permanent(err) // the same bytes will never decode
		}
		return errors.New("database unavailable") // may work on the next attempt
	}, batch.WithRetry(3, time.Millisecond), batch.WithConcurrency(1), batch.WithLogger(quietLogger))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("orders-0 calls:", calls["orders-0"])
	fmt.Println("orders-1 calls:", calls["orders-1"])
	fmt.Println("reported:", len(resp.BatchItemFailures))
	// Output:
	// orders-0 calls: 3
	// orders-1 calls: 1
	// reported: 2
}

// Each failed record is logged once; the summary line ends each batch. failed counts the
// records that failed (one "record failed" line each), reported the records the response
// reports: the failed one and the later record of its partition, held behind it. Keys and
// values are never logged.
func ExampleWithLogger() {
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte(`{"id":"o-1"}`)).
		Add("orders", 0, []byte(`{"id":"o-2"}`)).
		Add("orders", 0, []byte(`{"id":"o-3"}`)).
		Event()
	_, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		if r.Offset == 1 {
			return errors.New("database unavailable")
		}
		return nil
	}, batch.WithLogger(exampleLogger()), batch.WithRetry(2, time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// level=ERROR msg="record failed" source=kafka partition=orders-0 offset=1 attempts=2 permanent=false sentToSink=false reported=2 error="database unavailable"
	// level=WARN msg="batch processed" source=kafka records=3 processed=1 failed=1 reported=2 filtered=0 sentToSink=0 replayed=0 notRecorded=0
}

// failurePrinter is a FailureHook: it sees each failed record.
type failurePrinter struct{}

func (failurePrinter) OnFailure(ctx context.Context, f *batch.Failure) {
	fmt.Printf("%s@%d failed after %d attempts (%d reported): %v\n", f.Group, f.Kafka.Offset, f.Attempts, f.Reported, f.Err)
}

// A FailureHook is called once for each failed record, for alerts or counters of one's own.
func ExampleWithHooks() {
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte(`{"id":"o-1"}`)).
		Add("orders", 0, []byte(`{"id":"o-2"}`)).
		Add("orders", 3, []byte(`{"id":"o-3"}`)).
		Event()
	_, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		if r.Partition == 0 {
			return batch.Permanent(errors.New("unknown customer"))
		}
		return nil
	}, batch.WithHooks(failurePrinter{}), batch.WithLogger(quietLogger))
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// orders-0@0 failed after 1 attempts (2 reported): unknown customer
}

// WithFilter skips the records the FilterCriteria do not match, as the event source mapping
// would have: they count as processed, and the handler does not see them.
func ExampleWithFilter() {
	criteria, err := filter.ParseCriteria([]byte(`{"Filters":[{"Pattern":"{\"value\":{\"total\":[{\"numeric\":[\">=\",20]}]}}"}]}`))
	if err != nil {
		log.Fatal(err)
	}
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte(`{"id":"o-1","total":25}`)).
		Add("orders", 0, []byte(`{"id":"o-2","total":12.5}`)).
		Add("orders", 0, []byte(`{"id":"o-3","total":20}`)).
		Event()
	resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		fmt.Printf("handled %s\n", r.Value)
		return nil
	}, batch.WithFilter(criteria), batch.WithLogger(quietLogger))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("reported:", len(resp.BatchItemFailures))
	// Output:
	// handled {"id":"o-1","total":25}
	// handled {"id":"o-3","total":20}
	// reported: 0
}

// WithIdempotency skips the records an earlier delivery handled. Functions use
// dynamodb.NewStore; this example uses the in-memory store of idempotencytest,
// as a unit test would.
func ExampleWithIdempotency() {
	store := idempotencytest.NewStore()
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte(`{"id":"o-1"}`)).
		Add("orders", 0, []byte(`{"id":"o-2"}`)).
		Event()
	handle := func(ctx context.Context, r *kafkaevent.Record) error {
		fmt.Printf("charged %s\n", r.Value)
		return nil
	}
	for delivery := 1; delivery <= 2; delivery++ {
		fmt.Println("delivery", delivery)
		if _, err := batch.ProcessKafka(context.Background(), ev, handle,
			batch.WithIdempotency(store, idempotency.WithKeyPrefix("orders-fn")), batch.WithLogger(quietLogger)); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// delivery 1
	// charged {"id":"o-1"}
	// charged {"id":"o-2"}
	// delivery 2
}

// envelopePrinter is a Sink of one's own: it prints each envelope as JSON.
type envelopePrinter struct{ sent [][]byte }

func (p *envelopePrinter) Send(ctx context.Context, e *batch.Envelope) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	p.sent = append(p.sent, data)
	return nil
}

// WithSink sends the records that cannot succeed to a failure destination, so that their
// partition moves on; ReadEnvelope reads back what the sink wrote.
func ExampleWithSink() {
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte(`{"id":`), kafkaeventtest.WithKey([]byte("o-1"))).
		Add("orders", 0, []byte(`{"id":"o-2"}`), kafkaeventtest.WithKey([]byte("o-2"))).
		Event()
	sink := &envelopePrinter{}
	resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		var o Order
		if err := json.Unmarshal(r.Value, &o); err != nil {
			return batch.Permanent(err)
		}
		return nil
	}, batch.WithSink(sink, batch.SinkPermanent), batch.WithLogger(quietLogger))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("reported:", len(resp.BatchItemFailures))
	for _, data := range sink.sent {
		e, err := batch.ReadEnvelope(data)
		if err != nil {
			log.Fatal(err)
		}
		r := e.Record()
		fmt.Printf("dead letter: %s-%d@%d key %s value %s: %s\n", r.Topic, r.Partition, r.Offset, r.Key, r.Value, e.Error)
	}
	// Output:
	// reported: 0
	// dead letter: orders-0@0 key o-1 value {"id":: unexpected end of JSON input
}

// ReadEnvelope reads an envelope a sink wrote, from a dead-letter queue or topic, and
// Record gives back the original Kafka record, to inspect it or process it again.
func ExampleReadEnvelope() {
	data := []byte(`{"version":1,"source":"kafka","topic":"orders","partition":0,"offset":41,
		"key":"by0x","value":"eyJpZCI6","error":"unexpected end of JSON input","permanent":true,"attempts":1,
		"firstAttempt":"2026-01-02T03:04:05Z","failedAt":"2026-01-02T03:04:05Z"}`)
	e, err := batch.ReadEnvelope(data)
	if err != nil {
		log.Fatal(err)
	}
	r := e.Record()
	fmt.Printf("%s@%d key=%s value=%s\n", r.PartitionID(), r.Offset, r.Key, r.Value)
	fmt.Printf("failed %d time(s), permanent=%v: %s\n", e.Attempts, e.Permanent, e.Error)
	// Output:
	// orders-0@41 key=o-1 value={"id":
	// failed 1 time(s), permanent=true: unexpected end of JSON input
}

// WithMetrics writes one CloudWatch Embedded Metric Format line per batch: in Lambda, to
// os.Stdout, where CloudWatch Logs turns it into metrics. Here the line is read back.
func ExampleWithMetrics() {
	var emf bytes.Buffer
	ev := kafkaeventtest.NewBuilder().Add("orders", 0, []byte(`{}`)).Add("orders", 1, []byte(`{}`)).Event()
	_, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		return nil
	}, batch.WithMetrics(&emf), batch.WithMetricsNamespace("Orders"), batch.WithLogger(quietLogger))
	if err != nil {
		log.Fatal(err)
	}
	var line struct {
		AWS struct {
			CloudWatchMetrics []struct{ Namespace string }
		} `json:"_aws"`
		Records, Processed, Failed [1]int // one value each, in an array, as package metrics writes them
	}
	if err := json.Unmarshal(emf.Bytes(), &line); err != nil {
		log.Fatal(err)
	}
	fmt.Println(line.AWS.CloudWatchMetrics[0].Namespace, line.Records[0], line.Processed[0], line.Failed[0])
	// Output:
	// Orders 2 2 0
}

// Each record's handler context carries the correlation ID its producer wrote in the header
// "correlation_id", so that every line logged through lambdalog with it has "correlation_id";
// a record without the header has none.
func ExampleWithCorrelationIDFrom() {
	ev := &kafkaevent.Event{Partitions: []kafkaevent.Partition{{Topic: "orders", Records: []kafkaevent.Record{
		{Topic: "orders", Offset: 0, Headers: []kafkaevent.Header{{Key: "correlation_id", Value: []byte("req-7f3a")}}},
		{Topic: "orders", Offset: 1},
	}}}}
	_, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		// A lambdalog logger's lines with ctx carry it: log.InfoContext(ctx, "order stored").
		id, ok := lambdalog.CorrelationID(ctx)
		fmt.Printf("offset %d: %q %v\n", r.Offset, id, ok)
		return nil
	}, batch.WithCorrelationIDFrom("correlation_id"), batch.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// offset 0: "req-7f3a" true
	// offset 1: "" false
}

// WithKeyConcurrency handles the records of different keys at once, each key in offset
// order. Here the record at offset 2 (key "A") fails: A's later record (offset 4) is not
// started, "B" goes on, and the partition is reported from offset 2, so that Lambda delivers
// 2, 3 and 4 again; on that delivery the store skips offset 3, which had succeeded.
func ExampleWithKeyConcurrency() {
	b := kafkaeventtest.NewBuilder()
	for i, key := range []string{"A", "B", "A", "B", "A"} {
		b.Add("orders", 0, fmt.Appendf(nil, `{"n":%d}`, i), kafkaeventtest.WithKey([]byte(key)))
	}
	ev := b.Event()
	store := idempotencytest.NewStore() // the DynamoDB store (idempotency/dynamodb) in a function
	broken := true
	handle := func(ctx context.Context, r *kafkaevent.Record) error {
		if broken && r.Offset == 2 {
			return batch.Permanent(errors.New("A's payment service is down"))
		}
		return nil
	}
	opts := []batch.Option{batch.WithIdempotency(store), batch.WithKeyConcurrency(16), batch.WithLogger(quietLogger),
		batch.WithHooks(printResult{})}
	resp, _ := batch.ProcessKafka(context.Background(), ev, handle, opts...)
	for _, f := range resp.BatchItemFailures {
		fmt.Println("reported", f.ItemIdentifier.Partition, f.ItemIdentifier.Offset)
	}
	broken = false
	ev.Partitions[0].Records = ev.Partitions[0].Records[2:] // the redelivery, from offset 2
	batch.ProcessKafka(context.Background(), ev, handle, opts...)
	// Output:
	// processed 3, failed 1, reported 3, replayed 0
	// reported orders-0 2
	// reported orders-0 3
	// reported orders-0 4
	// processed 3, failed 0, reported 0, replayed 1
}

// printResult prints each batch's counts.
type printResult struct{}

func (printResult) OnBatchStart(ctx context.Context, _ *batch.BatchInfo) context.Context { return ctx }
func (printResult) OnBatchEnd(_ context.Context, _ *batch.BatchInfo, r *batch.BatchResult) {
	fmt.Printf("processed %d, failed %d, reported %d, replayed %d\n", r.Processed, r.Failed, r.Reported, r.Replayed)
}
