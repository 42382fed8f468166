package esm

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
)

// reportBatchItemFailures is WithReportBatchItemFailures when on, and no option otherwise.
func reportBatchItemFailures(on bool) SQSOption {
	if on {
		return WithReportBatchItemFailures()
	}
	return sqsOption(func(*sqsConfig) {})
}

// maximumConcurrency is WithMaximumConcurrency(n), or no option for n == 0.
func maximumConcurrency(n int) SQSOption {
	if n == 0 {
		return sqsOption(func(*sqsConfig) {})
	}
	return WithMaximumConcurrency(n)
}

// sqsEnv is a local-aws-sqs server for one test.
type sqsEnv struct {
	t   testing.TB
	srv *standin.SQS
	c   *sqs.Client
}

func newSQSEnv(t testing.TB) *sqsEnv {
	t.Helper()
	srv := standintest.StartSQS(t)
	return &sqsEnv{t: t, srv: srv, c: srv.Client()}
}

// queue creates a queue (FIFO when name ends in .fifo) with the visibility timeout vt
// seconds and attrs, and returns its URL and ARN.
func (e *sqsEnv) queue(name string, vt int, attrs map[string]string) (url, arn string) {
	e.t.Helper()
	a := map[string]string{"VisibilityTimeout": strconv.Itoa(vt)}
	for k, v := range attrs {
		a[k] = v
	}
	url, err := standin.CreateQueue(context.Background(), e.c, name, a)
	if err != nil {
		e.t.Fatal(err)
	}
	return url, e.arn(url)
}

func (e *sqsEnv) arn(url string) string {
	e.t.Helper()
	out, err := e.c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		e.t.Fatal(err)
	}
	return out.Attributes["QueueArn"]
}

// send sends bodies to url; for a FIFO queue each body's group is group(i).
func (e *sqsEnv) send(url string, bodies []string, group func(i int) string) {
	e.t.Helper()
	for i := 0; i < len(bodies); i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, len(bodies)); j++ {
			en := types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(bodies[j])}
			if group != nil {
				en.MessageGroupId = aws.String(group(j))
				en.MessageDeduplicationId = aws.String(fmt.Sprintf("d%d-%d", j, time.Now().UnixNano()))
			}
			entries = append(entries, en)
		}
		out, err := e.c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(out.Failed) > 0 {
			e.t.Fatalf("send: %+v", out.Failed)
		}
	}
}

// depth returns the queue's visible and not visible message counts.
func (e *sqsEnv) depth(url string) (visible, hidden int) {
	e.t.Helper()
	out, err := e.c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		e.t.Fatal(err)
	}
	visible, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	hidden, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return visible, hidden
}

// run starts the mapping; stop cancels it and returns Run's error.
func (e *sqsEnv) run(queueURL string, fn Invoker, opts ...SQSOption) (m *SQS, stop func() error) {
	e.t.Helper()
	m, err := NewSQS(context.Background(), e.c, queueURL, fn, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(10 * time.Second):
				runErr = fmt.Errorf("Run did not return within 10 s of its context's end")
			}
		})
		return runErr
	}
	e.t.Cleanup(func() {
		if err := stop(); err != nil {
			e.t.Errorf("Run: %v", err)
		}
	})
	return m, stop
}

// waitFor polls cond every 20 ms until it holds or d passes, and fails the test then.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sqsCall is one invocation a recorder saw.
type sqsCall struct {
	at      time.Time
	payload []byte
	ev      events.SQSEvent
}

// sqsRecorder is a function that records its invocations and answers with answer (nil:
// success with an empty payload).
type sqsRecorder struct {
	t      testing.TB
	mu     sync.Mutex
	calls  []sqsCall
	answer func(ev *events.SQSEvent) Response
}

func (r *sqsRecorder) Invoke(ctx context.Context, payload []byte) (Response, error) {
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		r.t.Errorf("the event is not an events.SQSEvent: %v", err)
	}
	r.mu.Lock()
	r.calls = append(r.calls, sqsCall{at: time.Now(), payload: append([]byte(nil), payload...), ev: ev})
	answer := r.answer
	r.mu.Unlock()
	if answer == nil {
		return Response{}, nil
	}
	return answer(&ev), nil
}

func (r *sqsRecorder) snapshot() []sqsCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sqsCall(nil), r.calls...)
}

// bodies returns the bodies delivered, in invocation order.
func (r *sqsRecorder) bodies() []string {
	var out []string
	for _, c := range r.snapshot() {
		for _, m := range c.ev.Records {
			out = append(out, m.Body)
		}
	}
	return out
}

func failAll(*events.SQSEvent) Response {
	return Response{Err: &InvokeError{Type: "errorString", Message: "boom"}}
}

func pbr(ids ...string) Response {
	var r events.SQSEventResponse
	for _, id := range ids {
		r.BatchItemFailures = append(r.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	b, _ := json.Marshal(r)
	return Response{Payload: b}
}
