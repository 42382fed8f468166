package esmtest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/esm/esmtest"
)

// An SQS mapping on local-aws-sqs (started by NewSQS): a message the partial batch response
// names stays in the queue and comes back after its visibility timeout; after
// maxReceiveCount receives the queue moves it to its dead-letter queue; the others are
// deleted once.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html): "Lambda
// deletes the messages that it processed successfully and retries the failed messages"... with
// ReportBatchItemFailures; "If a message fails processing multiple times, Amazon SQS can send it
// to a dead-letter queue" (maxReceiveCount of the queue's redrive policy).
func TestSQSPartialBatchAndDeadLetters(t *testing.T) {
	h := handler(func(_ context.Context, payload []byte) ([]byte, error) {
		var ev events.SQSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, err
		}
		resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
		for _, m := range ev.Records {
			if m.Body == "poison" {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
		}
		return json.Marshal(resp)
	})
	q := esmtest.NewSQS(t, h, esmtest.SQSConfig{Attributes: map[string]string{"VisibilityTimeout": "1"}, MaxReceiveCount: 2},
		esm.WithReportBatchItemFailures())
	q.Send("a", "poison", "b")
	if err := q.WaitIdle(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	dead := q.DeadLetters()
	if len(dead) != 1 || aws.ToString(dead[0].Body) != "poison" {
		t.Fatalf("dead letters %v, want the poison message", bodies(dead))
	}
	byID := map[string]int{}
	for _, inv := range q.Invocations() {
		if inv.Err != nil {
			t.Errorf("invocation %d: %v", inv.N, inv.Err)
		}
		for _, r := range inv.Records {
			byID[r.MessageID]++
		}
	}
	poison := aws.ToString(dead[0].MessageId)
	if byID[poison] != 2 {
		t.Errorf("the poison message delivered %d times, want 2 (maxReceiveCount)", byID[poison])
	}
	if len(byID) != 3 {
		t.Errorf("%d messages delivered, want 3: %v", len(byID), byID)
	}
	for id, n := range byID {
		if id != poison && n != 1 {
			t.Errorf("message %s delivered %d times, want once", id, n)
		}
	}
}

func bodies(ms []types.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, aws.ToString(m.Body))
	}
	return out
}
