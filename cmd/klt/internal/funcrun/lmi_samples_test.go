package funcrun

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// The samples' concurrent-process tests (issue 30): each sample, built with -race, runs
// under the Runtime API stand-in as a Lambda Managed Instances function, 8 invocations at
// once per execution environment; seven streams are delivered at once, each batch after the
// last one's answer, and stream 3's batch from record 10 twice at once. Each test asserts
// what the sample's README promises, and that the race detector reports nothing.

// kafkaSource is the Kafka event source mapping: stream p is partition p of lmiTopic, its
// records keyed "key-p" (one key per partition, so one message group per partition behind a
// dispatcher).
type kafkaSource struct {
	value func(p int32, o int64) []byte
}

func (s kafkaSource) event(p int32, from, end int64) ([]byte, error) {
	b := kafkaeventtest.NewBuilder()
	for o := from; o < end; o++ {
		b.Add(lmiTopic, p, s.value(p, o), kafkaeventtest.WithOffset(o), kafkaeventtest.WithKey(fmt.Appendf(nil, "key-%d", p)))
	}
	return b.Event().MarshalJSON()
}

func (kafkaSource) failedAt(item json.RawMessage) (int64, error) {
	var id struct{ Offset *int64 }
	if err := json.Unmarshal(item, &id); err != nil || id.Offset == nil {
		return 0, fmt.Errorf("itemIdentifier %s: not a Kafka record's partition and offset", item)
	}
	return *id.Offset, nil
}

// sqsSource is the SQS mapping of the work queue behind samples/dispatcher: stream p is
// message group "key-p", each message a Kafka record of partition p as a fanout Dispatcher
// sends it (fixture testdata/events/worker/orders.json), its ID "m-p-o".
type sqsSource struct{}

func (sqsSource) event(p int32, from, end int64) ([]byte, error) {
	var ev events.SQSEvent
	for o := from; o < end; o++ {
		rec, err := json.Marshal(map[string]any{"v": 1, "topic": lmiTopic, "partition": p, "offset": o,
			"timestamp": 1768471200000 + o, "timestampType": "CREATE_TIME",
			"key": base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "key-%d", p)), "value": "text"})
		if err != nil {
			return nil, err
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:     fmt.Sprintf("m-%d-%d", p, o),
			ReceiptHandle: fmt.Sprintf("rh-%d-%d", p, o),
			Body:          string(consumerOrder(p, o)),
			Attributes: map[string]string{"MessageGroupId": fmt.Sprintf("key-%d", p), "ApproximateReceiveCount": "1",
				"MessageDeduplicationId": fmt.Sprintf("d-%d-%d", p, o), "SequenceNumber": strconv.FormatInt(int64(p)*1e8+o, 10)},
			MessageAttributes: map[string]events.SQSMessageAttribute{
				fanout.RecordAttribute: {StringValue: aws.String(string(rec)), DataType: "String"},
			},
			EventSource:    "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:work.fifo",
			AWSRegion:      "us-east-1",
		})
	}
	return json.Marshal(ev)
}

func (sqsSource) failedAt(item json.RawMessage) (int64, error) {
	var id string
	var p, o int64
	if err := json.Unmarshal(item, &id); err != nil {
		return 0, fmt.Errorf("itemIdentifier %s: not a message ID", item)
	}
	if _, err := fmt.Sscanf(id, "m-%d-%d", &p, &o); err != nil {
		return 0, fmt.Errorf("itemIdentifier %s: not a message ID of this test", item)
	}
	return o, nil
}

// streamSource is the DynamoDB Streams mapping of the outbox table: stream p is a shard of
// entity "entity-p"'s outbox items, item o's id "orders-p-o" (the outbox-id header the relay
// sets), its SequenceNumber (p+1)*1e8+o.
type streamSource struct{}

func (streamSource) event(p int32, from, end int64) ([]byte, error) {
	var ev events.DynamoDBEvent
	for o := from; o < end; o++ {
		id := fmt.Sprintf("%s-%d-%d", lmiTopic, p, o)
		ev.Records = append(ev.Records, events.DynamoDBEventRecord{
			EventID: fmt.Sprintf("e-%d-%d", p, o), EventName: "INSERT", EventVersion: "1.1",
			EventSource: "aws:dynamodb", AWSRegion: "us-east-1",
			EventSourceArn: "arn:aws:dynamodb:us-east-1:123456789012:table/OutboxTable/stream/2026-01-15T10:00:00.000",
			Change: events.DynamoDBStreamRecord{
				Keys: map[string]events.DynamoDBAttributeValue{"id": events.NewStringAttribute(id)},
				NewImage: map[string]events.DynamoDBAttributeValue{
					"id":       events.NewStringAttribute(id),
					"entityId": events.NewStringAttribute(fmt.Sprintf("entity-%d", p)),
					"type":     events.NewStringAttribute("OrderPlaced"),
					"payload":  events.NewStringAttribute(string(consumerOrder(p, o))),
				},
				SequenceNumber: strconv.FormatInt(int64(p+1)*1e8+o, 10),
				SizeBytes:      180, StreamViewType: "NEW_IMAGE",
			},
		})
	}
	return json.Marshal(ev)
}

func (streamSource) failedAt(item json.RawMessage) (int64, error) {
	var seq string
	if err := json.Unmarshal(item, &seq); err != nil {
		return 0, fmt.Errorf("itemIdentifier %s: not a SequenceNumber", item)
	}
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("itemIdentifier %s: not a SequenceNumber of this test", item)
	}
	return n % 1e8, nil
}

// lmiContext is a test's bound: every test here ends well within it.
func lmiContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestReadmeAsLMIFunction: the README's handler (samples/readme: batch.KafkaHandler with
// DynamoDB idempotency and an SQS sink) applies every order exactly once, in offset order per
// partition, when invocations run at once and a batch is delivered twice at once. Its
// effect is its "order applied" log line, one per order applied.
func TestReadmeAsLMIFunction(t *testing.T) {
	d := &lmiDriver{t: t, ctx: lmiContext(t), src: kafkaSource{value: func(p int32, o int64) []byte {
		return fmt.Appendf(nil, `{"id":"%s-%d-%d","total":%d.5}`, lmiTopic, p, o, o)
	}}}
	// samples/readme is not in template.yaml; ConsumerFunction has the environment it reads
	// (IDEMPOTENCY_TABLE, FAILURE_QUEUE_URL).
	logs := d.start(lmiFunction{pkg: "./samples/readme", name: "ConsumerFunction"})
	d.run(true)
	applied := newLedger()
	for _, line := range strings.Split(logs.String(), "\n") {
		_, js, ok := strings.Cut(line, "] ")
		if !ok || !strings.Contains(js, `"order applied"`) {
			continue
		}
		var l struct{ Message, ID string }
		if err := json.Unmarshal([]byte(js), &l); err != nil || l.Message != "order applied" {
			continue
		}
		if err := applied.add(l.ID); err != nil {
			t.Error(err)
		}
	}
	d.finish(logs, applied, "applied", false)
}

// TestDispatcherAsLMIFunction: samples/dispatcher (fanout.Dispatcher) sends every record to the
// FIFO work queue, in its key's message group, in offset order per key, when invocations run
// at once and a batch is delivered twice at once. A redelivered batch is sent again, under
// the same MessageDeduplicationId (topic, partition, offset), which a FIFO queue drops within
// five minutes (fanout's doc): the queue holds each record once.
func TestDispatcherAsLMIFunction(t *testing.T) {
	ctx := lmiContext(t)
	d := &lmiDriver{t: t, ctx: ctx, src: kafkaSource{value: consumerOrder}}
	logs := d.start(lmiFunction{pkg: "./samples/dispatcher", name: "DispatcherFunction"})
	d.run(true)

	queue := d.getenv("WORK_QUEUE_URL")
	client := sqs.NewFromConfig(standin.ClientConfig(standin.Region), func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(d.getenv("AWS_ENDPOINT_URL_SQS"))
	})
	queued := newLedger()
	for empty := 0; empty < 2; {
		in := &sqs.ReceiveMessageInput{QueueUrl: &queue, MaxNumberOfMessages: 10,
			MessageAttributeNames:       []string{fanout.RecordAttribute},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}}
		//lint:ignore SA1019 local-aws-sqs 2.0.2 reads system attribute names only from this field
		in.AttributeNames = []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}
		out, err := client.ReceiveMessage(ctx, in)
		if err != nil {
			t.Fatalf("receiving from the work queue: %v", err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		for _, m := range out.Messages {
			var r struct {
				Topic     string
				Partition int32
				Offset    int64
			}
			if a, ok := m.MessageAttributes[fanout.RecordAttribute]; !ok || a.StringValue == nil || json.Unmarshal([]byte(*a.StringValue), &r) != nil {
				t.Fatalf("message %s: no %s attribute a Dispatcher sets", aws.ToString(m.MessageId), fanout.RecordAttribute)
			}
			if g, want := m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)], fmt.Sprintf("key-%d", r.Partition); g != want {
				t.Errorf("record %s-%d-%d in message group %q, want %q (its key)", r.Topic, r.Partition, r.Offset, g, want)
			}
			if err := queued.add(fmt.Sprintf("%s-%d-%d", r.Topic, r.Partition, r.Offset)); err != nil {
				t.Error(err)
			}
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &queue, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	d.finish(logs, queued, "queued", false)
}

// TestWorkerAsLMIFunction: samples/worker (fanout.WorkerHandler with DynamoDB idempotency)
// applies every record of the work queue exactly once, in order per message group, when
// invocations run at once and a batch is delivered again while its first delivery is in the
// middle of an order's API call.
func TestWorkerAsLMIFunction(t *testing.T) {
	runOrdersLMI(t, sqsSource{}, lmiFunction{pkg: "./samples/worker", name: "WorkerFunction"}, time.Second, true)
}

// TestProducerAsLMIFunction: samples/producer (the outbox relay, DynamoDB Streams -> Kafka)
// produces every outbox item, its entity's items in order, when invocations run at once and
// a batch is delivered twice at once. Its README allows duplicates (same outbox-id, which
// consumers dedup on) and promises no reordering: a redelivered batch's items may be in the
// topic twice; the order of their first copies is the stream's.
func TestProducerAsLMIFunction(t *testing.T) {
	ctx := lmiContext(t)
	d := &lmiDriver{t: t, ctx: ctx, src: streamSource{}}
	const topic = "outbox"
	logs := d.start(lmiFunction{pkg: "./samples/producer", name: "ProducerFunction", params: map[string]string{"OutputTopic": topic}})
	d.run(true)

	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(d.getenv("KAFKA_BOOTSTRAP_SERVERS"), ",")...),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produced, n := newLedger(), 0
	said := 0 // the items the relay says it produced
	for _, line := range strings.Split(logs.String(), "\n") {
		_, js, _ := strings.Cut(line, "] ")
		var l struct {
			Message  string
			Produced int
		}
		if json.Unmarshal([]byte(js), &l) == nil && l.Message == "outbox batch relayed" {
			said += l.Produced
		}
	}
	// The run has ended: the topic holds what it will. Read until there are as many records as
	// the relay says it produced, then half a second more for any beyond them.
	for {
		wait := 20 * time.Second
		if n >= said {
			wait = 500 * time.Millisecond
		}
		pctx, cancel := context.WithTimeout(ctx, wait)
		fs := cl.PollFetches(pctx)
		cancel()
		if pctx.Err() != nil && fs.NumRecords() == 0 {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			var id string
			for _, h := range r.Headers {
				if h.Key == "outbox-id" {
					id = string(h.Value)
				}
			}
			if !strings.HasPrefix(id, lmiTopic+"-") {
				t.Errorf("record at offset %d: outbox-id %q, not an item of this test", r.Offset, id)
				return
			}
			if want := "entity-" + id[len(lmiTopic)+1:strings.LastIndexByte(id, '-')]; !bytes.Equal(r.Key, []byte(want)) {
				t.Errorf("item %s keyed %q, want %q", id, r.Key, want)
			}
			if err := produced.add(id); err != nil {
				t.Error(err)
			}
		})
	}
	t.Logf("the topic holds %d records; the relay says it produced %d", n, said)
	if n != said {
		t.Errorf("the topic holds %d records, the relay says it produced %d", n, said)
	}
	d.finish(logs, produced, "produced", true)
}
