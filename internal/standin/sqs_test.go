package standin_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
)

func TestStandardQueueSendReceiveAndStop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	start := time.Now()
	srv := standintest.StartSQS(t)
	t.Logf("local-aws-sqs answered at %s after %v", srv.Endpoint(), time.Since(start).Round(time.Millisecond))
	if u, err := url.Parse(srv.Endpoint()); err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Port() == "" || u.Port() == "0" {
		t.Fatalf("Endpoint() = %q, want http://127.0.0.1:PORT", srv.Endpoint())
	}
	c := srv.Client()

	q, err := standin.CreateQueue(ctx, c, "work", nil)
	if err != nil {
		t.Fatal(err)
	}
	if q != srv.QueueURL("work") {
		t.Errorf("queue URL %q, want %q (the server's bound port)", q, srv.QueueURL("work"))
	}
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:    aws.String(q),
		MessageBody: aws.String(`{"n":1}`),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"topic":  {DataType: aws.String("String"), StringValue: aws.String("orders")},
			"offset": {DataType: aws.String("Number"), StringValue: aws.String("42")},
		},
	})
	if err != nil { // the SDK checks MD5OfMessageBody and MD5OfMessageAttributes
		t.Fatal(err)
	}
	msgs, err := standintest.Receive(ctx, c, q, 1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 {
		t.Fatalf("received %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if aws.ToString(m.Body) != `{"n":1}` {
		t.Errorf("body %q", aws.ToString(m.Body))
	}
	if a := m.MessageAttributes["offset"]; aws.ToString(a.DataType) != "Number" || aws.ToString(a.StringValue) != "42" {
		t.Errorf("offset attribute %+v", a)
	}
	if m.Attributes["SentTimestamp"] == "" || m.Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("system attributes %v, want SentTimestamp and ApproximateReceiveCount 1", m.Attributes)
	}
	// Not deleted, but invisible for 30 s: a second receive finds nothing.
	if again, err := standintest.Receive(ctx, c, q, 1, 300*time.Millisecond); err != nil || len(again) != 0 {
		t.Errorf("second receive: %d messages, %v; want none", len(again), err)
	}

	srv.Stop()
	if !srv.Exited() {
		t.Fatal("Exited() = false after Stop")
	}
	stopped := time.Now()
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q), MessageBody: aws.String("x")})
	if err == nil {
		t.Fatal("SendMessage to a stopped server succeeded")
	}
	if d := time.Since(stopped); d > 3*time.Second {
		t.Errorf("a call to a stopped server took %v to fail", d)
	}
	srv.Stop() // idempotent
}

func TestFIFOQueueGroupsAndDeduplication(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := standintest.StartSQS(t)
	c := srv.Client()

	q, err := standin.CreateQueue(ctx, c, "work.fifo", nil)
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Attributes["FifoQueue"] != "true" {
		t.Fatalf("FifoQueue = %q, want true", attrs.Attributes["FifoQueue"])
	}
	send := func(body, group, dedup string) {
		t.Helper()
		out, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q), MessageBody: aws.String(body),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(dedup)})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(out.SequenceNumber) == "" {
			t.Errorf("no SequenceNumber for %s", body)
		}
	}
	send("a", "g1", "d1")
	send("a again", "g1", "d1") // a duplicate: dropped
	send("b", "g2", "d2")
	msgs, err := standintest.Receive(ctx, c, q, 3, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, aws.ToString(m.Body)+"/"+m.Attributes["MessageGroupId"]+"/"+m.Attributes["MessageDeduplicationId"])
	}
	if strings.Join(got, " ") != "a/g1/d1 b/g2/d2" {
		t.Errorf("received %v, want [a/g1/d1 b/g2/d2]", got)
	}

	// Queues are per server: another server does not have this one.
	other := standintest.StartSQS(t)
	if _, err := other.Client().GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("work.fifo")}); err == nil {
		t.Error("a second server has the first one's queue")
	}
	// A deleted queue's name can be used again at once.
	if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(q)}); err != nil {
		t.Fatal(err)
	}
	if _, err := standin.CreateQueue(ctx, c, "work.fifo", nil); err != nil {
		t.Fatalf("re-create after delete: %v", err)
	}
}

func TestCreateQueueReportsErrors(t *testing.T) {
	t.Parallel()
	srv := standintest.StartSQS(t)
	// SQS queue names are letters, digits, "-" and "_".
	_, err := standin.CreateQueue(context.Background(), srv.Client(), "bad name!", nil)
	if err == nil || !strings.Contains(err.Error(), "create queue bad name!") {
		t.Fatalf("CreateQueue with a bad name: %v, want an error naming the queue", err)
	}
}
