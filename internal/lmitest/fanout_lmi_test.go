package lmitest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/internal/lmitest"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/lambdalog"
)

// meetFirst holds each invocation of h until all of the round's are in flight, for handlers
// that take no batch hooks (the Dispatcher).
type meetFirst struct {
	h    lmitest.Handler
	meet *meeting
}

func (m meetFirst) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	m.meet.OnBatchStart(ctx, nil)
	return m.h.Invoke(ctx, payload)
}

// Fan-out: a Dispatcher whose Kafka batches are each delivered twice at once (8 invocations in
// flight) sends to a FIFO queue on local-aws-sqs; workers with idempotency on dynalite run on
// what an emulated SQS mapping receives, each received batch delivered twice at once (8
// invocations in flight): every record applied once, in Kafka order per key.
func TestLMIFanout(t *testing.T) {
	const partitions, records, batchSize = 4, 24, 8
	t.Run(fmt.Sprintf("partitions=%d_records=%d_batch=%d_dispatch_and_work_each_batch_twice_at_once_concurrency=%d",
		partitions, partitions*records, batchSize, 2*partitions), func(t *testing.T) {
		fanoutOnce(t, partitions, records, batchSize)
	})
}

func fanoutOnce(t *testing.T, partitions, records, batchSize int) {
	db, q := standintest.StartDynamoDB(t), standintest.StartSQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := standin.CreateTable(ctx, db.Client(), dynamodb.TableInput("lmi-work")); err != nil {
		t.Fatal(err)
	}
	store, err := dynamodb.NewStore(db.Client(), "lmi-work")
	if err != nil {
		t.Fatal(err)
	}
	sqsClient := q.Client()
	queue, err := standin.CreateQueue(ctx, sqsClient, "lmi-work.fifo", map[string]string{"FifoQueue": "true", "VisibilityTimeout": "600"})
	if err != nil {
		t.Fatal(err)
	}
	var logs lmitest.Output
	logger := slog.New(lambdalog.NewHandler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{ReplaceAttr: lambdalog.ReplaceAttr})))
	d, err := fanout.NewDispatcher(sqsClient, queue, fanout.WithBatchOptions(batch.WithLogger(logger)))
	if err != nil {
		t.Fatal(err)
	}
	meet := &meeting{t: t}
	mapping := &kafkaMapping{partitions: partitions, records: records, batchSize: batchSize, dup: 2,
		key:   func(p, off int) string { return fmt.Sprintf("p%d-k%d", p, off%3) },
		value: func(p, off int) string { return fmt.Sprintf("%d/%d", p, off) }}
	dst := mapping.run(t, lambdalog.WrapHandler(meetFirst{d, meet}), meet)
	t.Logf("dispatcher: %d invocations in %d rounds, up to %d at once", dst.invocations, dst.rounds, 2*partitions)

	l := newLedger()
	worker := lambdalog.WrapHandler(fanout.WorkerHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		lc, _ := lambdacontext.FromContext(ctx)
		l.apply(lc.AwsRequestID, r)
		logger.InfoContext(ctx, "applied", "ctx_request", lc.AwsRequestID)
		return nil
	}, batch.WithIdempotency(store), batch.WithLogger(logger), batch.WithHooks(meet)))
	wst := sqsMapping(t, sqsClient, queue, worker, meet, dst.invocations, partitions*records, l)
	t.Logf("workers: %d invocations in %d rounds, up to %d at once", wst.invocations, wst.rounds, 8)

	want := map[string]bool{}
	for p := range partitions {
		for off := range records {
			want[fmt.Sprintf("%d/%d", p, off)] = true
		}
	}
	l.checkKeys(t, want)
	checkLogLines(t, &logs, dst.invocations+wst.invocations)
}

// sqsMapping emulates an SQS event source mapping on a FIFO queue: each round receives up to 4
// batches of up to 10 messages, invokes h with each twice at once, deletes the messages no
// invocation reported and makes the reported ones visible again, until every one of want
// records is applied and the queue is empty. Request IDs go on from first.
func sqsMapping(t *testing.T, c *sqs.Client, queue string, h lmitest.Handler, meet *meeting, first, want int, l *ledger) roundStats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	st := roundStats{invocations: 0}
	for st.rounds = 1; ; st.rounds++ {
		received := receiveFIFO(t, ctx, c, queue, 4)
		if len(received) == 0 {
			if l.count() >= want {
				return st
			}
			if st.rounds > 200 {
				t.Fatalf("round %d: the queue is empty and %d records of %d applied", st.rounds, l.count(), want)
			}
			continue
		}
		invs, batches := sqsInvocations(t, queue, received, first+st.invocations)
		meet.barrier.Store(lmitest.NewBarrier(len(invs)))
		failed := map[string]bool{}
		for _, r := range lmitest.Run(h, len(invs), invs) {
			var resp events.SQSEventResponse
			if r.Err != nil || json.Unmarshal(r.Response, &resp) != nil {
				t.Fatalf("%s: response %s, error %v", r.RequestID, r.Response, r.Err)
			}
			for _, f := range resp.BatchItemFailures {
				failed[f.ItemIdentifier] = true
			}
		}
		settle(t, ctx, c, queue, batches, failed)
		st.invocations += len(invs)
	}
}

// sqsInvocations makes two invocations of each batch received, as the mapping writes its event.
func sqsInvocations(t *testing.T, queue string, received [][]types.Message, first int) ([]lmitest.Invocation, [][]types.Message) {
	t.Helper()
	var invs []lmitest.Invocation
	arn := "arn:aws:sqs:eu-west-1:000000000000:" + queue[len(queue)-len("lmi-work.fifo"):]
	for _, msgs := range received {
		ev := events.SQSEvent{}
		for _, m := range msgs {
			e := events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
				Body: aws.ToString(m.Body), Attributes: m.Attributes, EventSourceARN: arn, EventSource: "aws:sqs",
				MessageAttributes: map[string]events.SQSMessageAttribute{}}
			for name, a := range m.MessageAttributes {
				e.MessageAttributes[name] = events.SQSMessageAttribute{StringValue: a.StringValue, BinaryValue: a.BinaryValue, DataType: aws.ToString(a.DataType)}
			}
			ev.Records = append(ev.Records, e)
		}
		payload, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			n := first + len(invs)
			invs = append(invs, lmitest.Invocation{RequestID: fmt.Sprintf("req-%d", n), TraceID: lmitest.TraceHeader(n),
				Payload: payload, Timeout: 20 * time.Second})
		}
	}
	return invs, received
}

// settle deletes the messages no invocation reported, and makes the others visible again.
func settle(t *testing.T, ctx context.Context, c *sqs.Client, queue string, batches [][]types.Message, failed map[string]bool) {
	t.Helper()
	for _, msgs := range batches {
		for _, m := range msgs {
			var err error
			if failed[aws.ToString(m.MessageId)] {
				_, err = c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(queue),
					ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
			} else {
				_, err = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queue), ReceiptHandle: m.ReceiptHandle})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// receiveFIFO receives up to n batches of up to 10 messages, as SQS hands out a FIFO queue's
// messages: none of a message group while an earlier one of the group is in flight. A
// message of a group that an earlier batch of the round holds is made visible again at once
// (local-aws-sqs does not hold groups back itself).
func receiveFIFO(t *testing.T, ctx context.Context, c *sqs.Client, queue string, n int) [][]types.Message {
	t.Helper()
	var received [][]types.Message
	held := map[string]int{} // message group -> the batch that holds it
	for b := range n {
		in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}}
		//lint:ignore SA1019 local-aws-sqs 2.0.2 reads system attribute names only from this field
		in.AttributeNames = []types.QueueAttributeName{types.QueueAttributeNameAll}
		out, err := c.ReceiveMessage(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var keep []types.Message
		for _, m := range out.Messages {
			g := m.Attributes["MessageGroupId"]
			if at, ok := held[g]; ok && at != b {
				if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(queue),
					ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}); err != nil {
					t.Fatal(err)
				}
				continue
			}
			held[g] = b
			keep = append(keep, m)
		}
		if len(keep) > 0 {
			received = append(received, keep)
		}
	}
	return received
}
