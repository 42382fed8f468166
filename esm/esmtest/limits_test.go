package esmtest_test

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/esm/esmtest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// tooLarge is the size of the response a user saw esmtest accept and commit: 7,340,065 bytes.
const tooLarge = 7340065

func bigJSON(n int) []byte {
	b := bytes.Repeat([]byte("x"), n)
	b[0], b[n-1] = '"', '"'
	return b
}

// checkTooLarge asserts that the first invocation failed on its response's size, as Lambda
// fails it, and that the second (the retry) succeeded.
func checkTooLarge(t *testing.T, invs []esmtest.Invocation) {
	t.Helper()
	if len(invs) != 2 {
		t.Fatalf("%d invocations, want 2: the one whose response is over 6 MB fails and is retried", len(invs))
	}
	want := "Function.ResponseSizeTooLarge: Response payload size (7340065 bytes) exceeded maximum allowed payload size (6291556 bytes)."
	if e := invs[0].Err; e == nil || e.Error() != want || invs[0].Response != nil {
		t.Errorf("first invocation: error %v, a %d-byte response; want %s", e, len(invs[0].Response), want)
	}
	if invs[1].Err != nil {
		t.Errorf("second invocation: %v", invs[1].Err)
	}
}

// A response over 6 MB (limits.MaxLambdaResponseBytes) fails the invocation as AWS fails it
// ("Function.ResponseSizeTooLarge"), and the mapping retries the record rather than commit it.
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html): "For synchronous
// invocations, the maximum payload size is 6 MB."
func TestKafkaResponseOver6MBFails(t *testing.T) {
	h := counted(t, func(_ context.Context, n int, _ *kafkaevent.Event) ([]byte, error) {
		if n == 1 {
			return bigJSON(tooLarge), nil
		}
		return []byte(`{}`), nil
	})
	k := esmtest.NewKafka(t, h, esmtest.KafkaMapping{MaximumBatchingWindow: new(time.Duration(0))})
	k.Produce(values("a")...)
	waitIdle(t, k)
	checkTooLarge(t, k.Invocations())
	if got := k.Committed()[0]; got != 1 {
		t.Errorf("committed %d, want 1", got)
	}
}

// The same for an SQS mapping: the message is not deleted on the response over 6 MB, and
// comes back after its visibility timeout.
func TestSQSResponseOver6MBFails(t *testing.T) {
	var n atomic.Int32
	h := handler(func(context.Context, []byte) ([]byte, error) {
		if n.Add(1) == 1 {
			return bigJSON(tooLarge), nil
		}
		return []byte(`{}`), nil
	})
	q := esmtest.NewSQS(t, h, esmtest.SQSMapping{},
		esmtest.WithQueue(esmtest.Queue{Attributes: map[string]string{"VisibilityTimeout": "1"}}))
	q.Send("a")
	if err := q.WaitIdle(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	checkTooLarge(t, q.Invocations())
}

// A handler whose goroutine exits without returning (runtime.Goexit, as t.FailNow does) fails
// its invocation at once, not when its 15-minute function timeout ends; the record is retried.
// Before, WaitIdle timed out: the invocation waited for the whole timeout.
func TestGoexitInHandlerReportedAtOnce(t *testing.T) {
	h := counted(t, func(_ context.Context, n int, _ *kafkaevent.Event) ([]byte, error) {
		if n == 1 {
			runtime.Goexit()
		}
		return nil, nil
	})
	k := esmtest.NewKafka(t, h, esmtest.KafkaMapping{MaximumBatchingWindow: new(time.Duration(0))},
		esmtest.WithFunctionTimeout(15*time.Minute))
	k.Produce(values("a")...)
	if err := k.WaitIdle(time.Minute); err != nil {
		t.Fatal(err)
	}
	invs := k.Invocations()
	if len(invs) != 2 {
		t.Fatalf("%d invocations, want 2", len(invs))
	}
	if e := invs[0].Err; e == nil || e.Type != "Runtime.ExitError" || !strings.Contains(e.Message, "runtime.Goexit") {
		t.Errorf("first invocation: %v, want Runtime.ExitError naming runtime.Goexit", e)
	}
	if invs[1].Err != nil || k.Committed()[0] != 1 {
		t.Errorf("second invocation %v, committed %d; want a success, 1", invs[1].Err, k.Committed()[0])
	}
}
