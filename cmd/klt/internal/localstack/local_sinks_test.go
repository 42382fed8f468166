package localstack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/internal/localservertest"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// The drains find the Kafka record in each kind of message a stack gives up on: a message the
// dispatcher sent (as redrive moves it to a dead-letter queue), an on-failure destination
// record naming a range of offsets, and a message they cannot read, which is kept as such.
func TestDrainsRead(t *testing.T) {
	s := localservertest.StartSQS(t)
	client := s.Client()
	ctx := context.Background()
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("dlq")})
	if err != nil {
		t.Fatal(err)
	}
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 3, []byte(`{"orderId":1}`), kafkaeventtest.WithKey([]byte("c-1")), kafkaeventtest.WithOffset(41)).
		Event()
	dispatcher, err := fanout.NewDispatcher(client, *q.QueueUrl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dispatcher.Dispatch(ctx, ev); err != nil {
		t.Fatal(err)
	}
	msgs, err := localservertest.Receive(ctx, client, *q.QueueUrl, 1, 2*time.Second)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("received %d messages, %v", len(msgs), err)
	}
	d := &drains{client: client}
	d.read("WorkDeadLetterQueue", msgs[0])
	d.read("KafkaOnFailureQueue", types.Message{Body: aws.String(`{"requestContext":{"condition":"RetryAttemptsExhausted",` +
		`"functionArn":"arn:aws:lambda:us-east-1:123456789012:function:ConsumerFunction"},` +
		`"KafkaBatchInfo":{"recordsInfo":{"orders-2":{"firstRecordOffset":"5","lastRecordOffset":"9"}}}}`)})
	d.read("SomeQueue", types.Message{MessageId: aws.String("m-1"), Body: aws.String("hello")})

	found, ranges, unreadable := d.snapshot()
	if len(found) != 1 || found[0].key != "orders-3-41" || found[0].queue != "WorkDeadLetterQueue" {
		t.Errorf("dead letters: %+v", found)
	}
	if len(ranges) != 1 || ranges[0].function != "ConsumerFunction" || ranges[0].topicPartition != "orders-2" ||
		ranges[0].first != 5 || ranges[0].last != 9 || ranges[0].condition != "RetryAttemptsExhausted" {
		t.Errorf("on-failure ranges: %+v", ranges)
	}
	if len(unreadable) != 1 || !strings.Contains(unreadable[0], "m-1") {
		t.Errorf("unreadable: %q", unreadable)
	}
}
