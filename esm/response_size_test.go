package esm

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// tooLarge is the response size a user saw esm accept: 7,340,065 bytes, over the 6 MB (6 MiB
// plus 100 bytes) Lambda allows a synchronous invocation's response.
const tooLarge = 7340065

// bigResponse is a JSON response of n bytes: a string.
func bigResponse(n int) []byte {
	b := bytes.Repeat([]byte("x"), n)
	b[0], b[n-1] = '"', '"'
	return b
}

// TestInvokeResponseLimit: a response of limits.MaxLambdaResponseBytes passes; one byte more is the failed
// invocation Lambda reports ("Function.ResponseSizeTooLarge"), whatever the Invoker said.
func TestInvokeResponseLimit(t *testing.T) {
	for _, n := range []int{limits.MaxLambdaResponseBytes, limits.MaxLambdaResponseBytes + 1, tooLarge} {
		fn := InvokerFunc(func(context.Context, []byte) (Response, error) { return Response{Payload: bigResponse(n)}, nil })
		resp, err := invoke(context.Background(), fn, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if n <= limits.MaxLambdaResponseBytes {
			if resp.Err != nil || len(resp.Payload) != n {
				t.Errorf("%d bytes: %d bytes, err %v; want the response", n, len(resp.Payload), resp.Err)
			}
			continue
		}
		want := ResponseTooLarge(int64(n))
		if resp.Err == nil || *resp.Err != *want || resp.Payload != nil {
			t.Errorf("%d bytes: payload %d bytes, err %v; want %v", n, len(resp.Payload), resp.Err, want)
		}
	}
	if got := ResponseTooLarge(tooLarge).Error(); got != "Function.ResponseSizeTooLarge: Response payload size (7340065 bytes) exceeded maximum allowed payload size (6291556 bytes)." {
		t.Errorf("ResponseTooLarge: %q", got)
	}
}

// TestKafkaResponseTooLarge: a Kafka mapping fails an invocation whose response is over 6 MB,
// as AWS does, and retries its records; it does not commit them as a success. On the code
// before limits.MaxLambdaResponseBytes the first invocation succeeded and the record was committed.
func TestKafkaResponseTooLarge(t *testing.T) {
	t.Parallel()
	f := newKafkaFixture(t, "big-response", 1)
	f.produceN(0, 1)
	fn := newKafkaFunction(t, func(n int, _ *kafkaevent.Event) Response {
		if n == 0 {
			return Response{Payload: bigResponse(tooLarge)}
		}
		return Response{}
	})
	obs := &observed{}
	m, err := NewKafka(f.brokers(), f.topic, fn, WithGroupID("g"), WithBatchingWindow(0), WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	runKafka(t, m)
	kafkaWaitFor(t, 30*time.Second, "the record committed", func() bool { return f.committed("g", 1)[0] == 1 })
	s := settled(t, m.Counters())
	if s.Invocations != 2 || s.Errors != 1 || s.ErrorFailed != 1 || s.Retried != 1 || s.Succeeded != 1 {
		t.Errorf("counters %+v; want 2 invocations, the first failed", s)
	}
	failed := obs.of(Failed)
	if len(failed) != 1 || !strings.HasPrefix(failed[0].Reason, "Function.ResponseSizeTooLarge: Response payload size (7340065 bytes)") {
		t.Errorf("Failed events %+v; want one, Function.ResponseSizeTooLarge", failed)
	}
}

// TestSQSResponseTooLarge: an SQS mapping fails an invocation whose response is over 6 MB, as
// AWS does: the message is not deleted and comes back after the visibility timeout. On the
// code before limits.MaxLambdaResponseBytes it was deleted after the first invocation.
func TestSQSResponseTooLarge(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	url, arn := env.queue("big-response", 1, nil)
	env.send(url, []string{"a"}, nil)
	var calls atomic.Int32
	rec := &sqsRecorder{t: t, answer: func(*events.SQSEvent) Response {
		if calls.Add(1) == 1 {
			return Response{Payload: bigResponse(tooLarge)}
		}
		return Response{}
	}}
	m, _ := env.run(url, rec, WithName("big-response"), WithQueueARN(arn))
	waitFor(t, 30*time.Second, "the message deleted", func() bool { return m.Counters().Succeeded.Load() == 1 })
	s := m.Counters().Snapshot()
	if s.Invocations != 2 || s.Errors != 1 || s.ErrorFailed != 1 || s.Retried != 1 {
		t.Errorf("counters %+v; want 2 invocations, the first failed", s)
	}
}
