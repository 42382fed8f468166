package fanout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// queueStub stands in for *sqs.Client: it prints each SendMessageBatch call as
// group=value pairs, and refuses, as the sender's fault, the entries whose body is "poison".
// The Dispatcher calls SendMessageBatch only; the embedded (nil) sqssink.API gives the type
// the rest of the interface.
type queueStub struct {
	sqssink.API
	calls int
}

func (q *queueStub) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	q.calls++
	out := &sqs.SendMessageBatchOutput{}
	var line []string
	for _, e := range in.Entries {
		body := aws.ToString(e.MessageBody)
		line = append(line, aws.ToString(e.MessageGroupId)+"="+body)
		if body == "poison" {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidParameterValue"), SenderFault: true})
			continue
		}
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	fmt.Printf("call %d: %s\n", q.calls, strings.Join(line, " "))
	return out, nil
}

// A dispatcher on a FIFO queue: each call carries at most one record of a message group
// (the key), so that a failed entry never lets a later record of its key overtake it. The
// record SQS refuses is reported with the rest of its partition; the records of its key that
// follow it are not sent.
func ExampleNewDispatcher() {
	d, err := fanout.NewDispatcher(&queueStub{}, "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo",
		fanout.WithSendConcurrency(1), fanout.WithBatchOptions(batch.WithLogger(slog.New(slog.DiscardHandler))))
	if err != nil {
		fmt.Println(err)
		return
	}

	key := func(k string) kafkaeventtest.RecordOption { return kafkaeventtest.WithKey([]byte(k)) }
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte("a0"), key("a")).
		Add("orders", 0, []byte("b1"), key("b")).
		Add("orders", 0, []byte("poison"), key("a")).
		Add("orders", 0, []byte("b3"), key("b")).
		Add("orders", 0, []byte("a4"), key("a")).
		Add("orders", 1, []byte("c0"), key("c")).
		Add("orders", 1, []byte("c1"), key("c")).
		Event()

	resp, err := d.Dispatch(context.Background(), ev)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(resp)
	fmt.Println(string(out))
	// In a function, made once in main: lambda.Start(d)

	// Output:
	// call 1: a=a0 c=c0 b=b1
	// call 2: a=poison c=c1 b=b3
	// {"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":2}},{"itemIdentifier":{"partition":"orders-0","offset":3}},{"itemIdentifier":{"partition":"orders-0","offset":4}}]}
}
