package fanout_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// A message as the SQS event source mapping delivers it to a worker: the body is the Kafka
// record's value, and two attributes carry the rest of the record.
const orderMessage = `{
  "messageId": "5b6a1e02-5c3f-4a4e-9d55-0c5b4a3f9e11",
  "body": "{\"order\":7,\"total\":12.5}",
  "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1700000000999"},
  "messageAttributes": {
    "kafka.record": {
      "stringValue": "{\"v\":1,\"topic\":\"orders\",\"partition\":3,\"offset\":42,\"timestamp\":1700000000123,\"timestampType\":\"CreateTime\",\"key\":\"b3JkZXItNw==\",\"value\":\"text\"}",
      "stringListValues": [], "binaryListValues": [], "dataType": "String"
    },
    "kafka.headers": {
      "binaryValue": "BnNvdXJjZQR3ZWIIY2hlY2tzdW0Dyv4=",
      "stringListValues": [], "binaryListValues": [], "dataType": "Binary"
    }
  },
  "eventSource": "aws:sqs",
  "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:orders-work",
  "awsRegion": "us-east-1"
}`

func ExampleReadRecord() {
	var m events.SQSMessage
	if err := json.Unmarshal([]byte(orderMessage), &m); err != nil {
		panic(err)
	}
	r, err := fanout.ReadRecord(&m)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s-%d@%d at %s (%s)\n", r.Topic, r.Partition, r.Offset, r.Timestamp.Format("2006-01-02T15:04:05.000Z"), r.TimestampType)
	fmt.Printf("key %q value %s\n", r.Key, r.Value)
	for _, h := range r.Headers {
		fmt.Printf("header %s = %q\n", h.Key, h.Value)
	}

	// A message that was not sent by a dispatcher fails with an error naming the attribute.
	_, err = fanout.ReadRecord(&events.SQSMessage{MessageId: "m-2", Body: "hello"})
	var de *fanout.DecodeError
	fmt.Println(errors.As(err, &de), de.Attribute)
	// Output:
	// orders-3@42 at 2023-11-14T22:13:20.123Z (CreateTime)
	// key "order-7" value {"order":7,"total":12.5}
	// header source = "web"
	// header checksum = "\xca\xfe"
	// true kafka.record
}

func ExampleWorkerHandler() {
	// The handler a function would run on the Kafka event source mapping.
	handle := func(ctx context.Context, r *kafkaevent.Record) error {
		if r.IsTombstone() {
			fmt.Printf("delete %s\n", r.Key)
			return nil
		}
		fmt.Printf("apply %s: %s\n", r.Key, r.Value)
		return nil
	}
	// In main: lambda.Start(fanout.WorkerHandler(handle, batch.WithIdempotency(store))).
	h := fanout.WorkerHandler(handle, batch.WithConcurrency(1), batch.WithLogger(slog.New(slog.DiscardHandler)))

	// The event Lambda sends the worker: a record, a tombstone, and a message that does not
	// carry a record, which fails and is reported.
	payload := `{"Records": [` + orderMessage + `,
	  {"messageId": "tombstone-44", "body": "(kafka record: null value)", "eventSource": "aws:sqs",
	   "messageAttributes": {"kafka.record": {"dataType": "String",
	     "stringValue": "{\"v\":1,\"topic\":\"orders\",\"partition\":3,\"offset\":44,\"timestamp\":1700000000125,\"timestampType\":\"CreateTime\",\"key\":\"b3JkZXItNw==\",\"value\":\"null\"}"}}},
	  {"messageId": "stray-1", "body": "not from a dispatcher", "eventSource": "aws:sqs"}
	]}`
	resp, err := h.Invoke(context.Background(), []byte(payload))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(resp))
	// Output:
	// apply order-7: {"order":7,"total":12.5}
	// delete order-7
	// {"batchItemFailures":[{"itemIdentifier":"stray-1"}]}
}
