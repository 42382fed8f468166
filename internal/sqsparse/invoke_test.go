package sqsparse_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// Where users meet Parse: batch.SQSHandler's and fanout.WorkerHandler's Invoke, which Lambda
// calls with the payload bytes. A payload with a member given twice fails the invocation with
// an error naming where, and no message reaches the handler: with encoding/json, the handler
// would have run on the last of two bodies, or on the messages of the last of two Records.
func TestInvokeRefusesDuplicates(t *testing.T) {
	cases := []struct {
		payload, want string
	}{
		{`{"Records":[{"messageId":"a","body":"x"}],"Records":[{"messageId":"b","body":"y"}]}`, `Records: member "Records" appears twice in the event`},
		{`{"Records":[{"messageId":"a","body":"x","body":"y"}]}`, `Records[0].body: member "body" appears twice in the message`},
		{`{"Records":[{"messageId":"a","body":"x"},{"messageId":"b","MessageId":"c","body":"y"}]}`, `Records[1].MessageId: member "messageId" appears twice in the message`},
		{`{"Records":[{"messageId":"a","messageAttributes":{"k":{"dataType":"String","stringValue":"1"},"k":{"dataType":"String","stringValue":"2"}}}]}`, `Records[0].messageAttributes.k: name appears twice in messageAttributes`},
		{`{"Records":[{"messageId":"a","attributes":{"MessageGroupId":"g1","MessageGroupId":"g2"}}]}`, `Records[0].attributes.MessageGroupId: name appears twice in attributes`},
	}
	var calls atomic.Int64
	sqsHandler := batch.SQSHandler(func(context.Context, *events.SQSMessage) error {
		calls.Add(1)
		return nil
	})
	worker := fanout.WorkerHandler(func(context.Context, *kafkaevent.Record) error {
		calls.Add(1)
		return nil
	})
	for _, c := range cases {
		for name, invoke := range map[string]func(context.Context, []byte) ([]byte, error){
			"batch.SQSHandler":     sqsHandler.Invoke,
			"fanout.WorkerHandler": worker.Invoke,
		} {
			out, err := invoke(context.Background(), []byte(c.payload))
			if err == nil || !strings.Contains(err.Error(), "SQS event: "+c.want) {
				t.Errorf("%s.Invoke(%s) = %s, %v; want an error containing %q", name, c.payload, out, err, c.want)
			}
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the handlers ran %d times on payloads that were refused", n)
	}
	// The same payloads without the duplicates reach the handlers.
	if _, err := sqsHandler.Invoke(context.Background(), []byte(`{"Records":[{"messageId":"a","body":"x"}]}`)); err != nil || calls.Load() != 1 {
		t.Errorf("Invoke: %v, %d calls; want the handler to run once", err, calls.Load())
	}
}
