package esmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/esm/esmtest"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
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
	q := esmtest.NewSQS(t, h, esmtest.SQSMapping{FunctionResponseTypes: []string{esmtest.ReportBatchItemFailures}},
		esmtest.WithQueue(esmtest.Queue{Attributes: map[string]string{"VisibilityTimeout": "1"}, MaxReceiveCount: 2}))
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

// A Kafka mapping's SQS on-failure destination gets one on-failure record per batch given up
// on, naming its first and last offsets; OnFailure reads it with WithSQS's client.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html): the SQS record has
// KafkaBatchInfo with recordsInfo: {"Topic-0": {"firstRecordOffset", "lastRecordOffset", ...}}.
func TestOnFailureQueueOfAKafkaMapping(t *testing.T) {
	srv := standintest.StartSQS(t)
	client := srv.Client()
	url, err := standin.CreateQueue(t.Context(), client, "failed", nil)
	if err != nil {
		t.Fatal(err)
	}
	h := handler(func(context.Context, []byte) ([]byte, error) { return nil, errors.New("down") })
	k := esmtest.NewKafka(t, h, esmtest.KafkaMapping{MaximumBatchingWindow: new(200 * time.Millisecond), MaximumRetryAttempts: new(0),
		DestinationConfig: &esmtest.DestinationConfig{OnFailure: esmtest.OnFailure{Destination: url}}},
		esmtest.WithSQS(client))
	k.Produce(values("a", "b", "c")...)
	waitIdle(t, k)
	f := k.OnFailure()
	if len(f) != 1 {
		t.Fatalf("%d on-failure records, want 1 (one per batch): %+v", len(f), f)
	}
	if r := f[0]; r.Partition != "topic-0" || r.FirstOffset != 0 || r.LastOffset != 2 || r.InvokeCount != 1 ||
		r.FunctionError != "Unhandled" || r.Condition != esmtest.ConditionRetryAttemptsExhausted || r.Payload != nil {
		t.Errorf("on-failure record %+v", r)
	}
	if again := k.OnFailure(); len(again) != 1 {
		t.Errorf("a second OnFailure: %d records, want the same 1", len(again))
	}
	if got := k.Committed()[0]; got != 3 {
		t.Errorf("committed %d, want 3", got)
	}
}
