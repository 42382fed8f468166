package esm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/internal/sqsparse"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/limits"
)

// TestSQSEventShape follows the event format of
// https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html, "Example Amazon SQS message
// event (standard queue)" and "(FIFO queue)": records under "Records", each with messageId,
// receiptHandle, body, attributes, messageAttributes, md5OfBody, eventSource "aws:sqs",
// eventSourceARN and awsRegion. The event decodes to the same events.SQSEvent through
// encoding/json and through the toolkit's own parser (internal/sqsparse, behind
// batch.SQSFunc), binary attribute values included.
func TestSQSEventShape(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	for _, fifo := range []bool{false, true} {
		name := "std"
		if fifo {
			name = "shape.fifo"
		}
		url, arn := env.queue(name, 30, nil)
		in := &sqs.SendMessageInput{
			QueueUrl:    aws.String(url),
			MessageBody: aws.String(`{"a":"<b>&"}`),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"s":   {DataType: aws.String("String"), StringValue: aws.String("text")},
				"n":   {DataType: aws.String("Number"), StringValue: aws.String("42")},
				"bin": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 0xfe, 0xff}},
			},
			MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
				"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")},
			},
		}
		if fifo {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String("g1"), aws.String("d1")
		}
		if _, err := env.c.SendMessage(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		var group func(int) string
		if fifo {
			group = func(int) string { return "g1" }
		}
		env.send(url, []string{"plain"}, group)
		rec := &sqsRecorder{t: t}
		_, stop := env.run(url, rec, WithName(name), WithQueueARN(arn))
		waitFor(t, 10*time.Second, "two messages delivered", func() bool { return len(rec.bodies()) == 2 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		var recs []json.RawMessage
		for _, c := range rec.snapshot() {
			var top map[string]json.RawMessage
			if err := json.Unmarshal(c.payload, &top); err != nil {
				t.Fatal(err)
			}
			if len(top) != 1 || top["Records"] == nil {
				t.Fatalf("top-level members %v, want Records alone", keys(top))
			}
			var rs []json.RawMessage
			if err := json.Unmarshal(top["Records"], &rs); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rs...)

			// Both parsers agree.
			ours, err := sqsparse.Parse(c.payload)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*ours, c.ev) {
				t.Errorf("sqsparse and encoding/json differ:\n%+v\n%+v", *ours, c.ev)
			}
		}
		for _, raw := range recs {
			want := []string{"messageId", "receiptHandle", "body", "attributes", "messageAttributes", "md5OfBody", "md5OfMessageAttributes", "eventSource", "eventSourceARN", "awsRegion"}
			var m events.SQSMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			if len(m.MessageAttributes) == 0 {
				want = append(want[:6], want[7:]...)
			}
			if got := memberOrder(t, raw); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: members %v, want %v", name, got, want)
			}
			if m.EventSource != "aws:sqs" || m.EventSourceARN != arn || m.AWSRegion != standin.Region || m.Md5OfBody == "" {
				t.Errorf("%s: envelope %+v", name, m)
			}
			wantAttrs := []string{"ApproximateFirstReceiveTimestamp", "ApproximateReceiveCount", "SenderId", "SentTimestamp"}
			if m.Body != "plain" {
				wantAttrs = append(wantAttrs, "AWSTraceHeader")
			}
			if fifo {
				wantAttrs = append(wantAttrs, "MessageDeduplicationId", "MessageGroupId", "SequenceNumber")
			}
			if got := keys(m.Attributes); !sameSet(got, wantAttrs) {
				t.Errorf("%s: attributes %v, want %v", name, got, wantAttrs)
			}
			if m.Body == "plain" {
				continue
			}
			if !bytes.Contains(raw, []byte(`"body":"{\"a\":\"<b>&\"}"`)) {
				t.Errorf("%s: body not written as Lambda does: %s", name, raw)
			}
			if a := m.MessageAttributes["bin"]; a.DataType != "Binary" || !bytes.Equal(a.BinaryValue, []byte{0, 1, 0xfe, 0xff}) || a.StringListValues == nil || a.BinaryListValues == nil {
				t.Errorf("%s: binary attribute %+v", name, a)
			}
			if !bytes.Contains(raw, []byte(`"bin":{"binaryValue":"AAH+/w==","stringListValues":[],"binaryListValues":[],"dataType":"Binary"}`)) {
				t.Errorf("%s: binary attribute not in Lambda's form: %s", name, raw)
			}
			if a := m.MessageAttributes["n"]; a.DataType != "Number" || aws.ToString(a.StringValue) != "42" {
				t.Errorf("%s: number attribute %+v", name, a)
			}
			if m.Md5OfMessageAttributes == "" {
				t.Errorf("%s: no md5OfMessageAttributes", name)
			}
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		if !seen[s] {
			return false
		}
	}
	return true
}

// memberOrder returns the member names of a JSON object in order.
func memberOrder(t *testing.T, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// TestSQSSuccessDeletes follows "If your function successfully processes the batch, Lambda
// deletes the messages from the queue." (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html):
// after a successful invocation the queue is empty, and nothing is delivered twice.
func TestSQSSuccessDeletes(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	url, arn := env.queue("ok", 30, nil) // long: under load a success must not be redelivered
	var bodies []string
	for i := range 25 {
		bodies = append(bodies, fmt.Sprint("m", i))
	}
	env.send(url, bodies, nil)
	rec := &sqsRecorder{t: t}
	m, stop := env.run(url, rec, WithName("ok"), WithQueueARN(arn))
	waitFor(t, 10*time.Second, "25 messages done", func() bool { return m.Counters().Succeeded.Load() == 25 })
	time.Sleep(1500 * time.Millisecond) // past the visibility timeout: anything not deleted would be back
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if v, h := env.depth(url); v+h != 0 {
		t.Errorf("queue holds %d visible and %d in-flight messages, want none", v, h)
	}
	if got := rec.bodies(); len(got) != 25 {
		t.Errorf("%d deliveries of 25 messages", len(got))
	}
	for _, c := range rec.snapshot() {
		if len(c.ev.Records) > 10 {
			t.Errorf("a batch of %d, over the default batch size 10", len(c.ev.Records))
		}
	}
	s := m.Counters().Snapshot()
	if s.In != 25 || s.Succeeded != 25 || (s.ReportedFailed+s.ErrorFailed) != 0 || s.InFlight != 0 || s.Invocations != int64(len(rec.snapshot())) {
		t.Errorf("counters %+v", s)
	}
}

// TestSQSErrorReturnsBatch follows "When your Lambda function encounters an error while
// processing a batch, all messages in that batch become visible in the queue again by
// default" and "After your queue's visibility timeout runs out, the message will again
// reappear in the queue." (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html):
// a failed invocation deletes nothing, and its messages come back once the visibility
// timeout has passed, not before, with ApproximateReceiveCount 2.
func TestSQSErrorReturnsBatch(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	url, arn := env.queue("err", 2, nil)
	env.send(url, []string{"a", "b", "c"}, nil)
	var calls atomic.Int32
	rec := &sqsRecorder{t: t, answer: func(ev *events.SQSEvent) Response {
		if calls.Add(1) == 1 {
			return failAll(ev)
		}
		return Response{}
	}}
	// BatchSize 3 with a window, so that the three come in one batch.
	m, _ := env.run(url, rec, WithName("err"), WithQueueARN(arn), WithBatchSize(3), WithBatchingWindow(time.Second))
	waitFor(t, 15*time.Second, "3 messages done", func() bool { return m.Counters().Succeeded.Load() == 3 })
	cs := rec.snapshot()
	if len(cs) != 2 || len(cs[0].ev.Records) != 3 || len(cs[1].ev.Records) != 3 {
		t.Fatalf("%d invocations, want 2 of 3 messages", len(cs))
	}
	if gap := cs[1].at.Sub(cs[0].at); gap < 1900*time.Millisecond {
		t.Errorf("redelivered %v after the failure, before the 2 s visibility timeout", gap)
	}
	for _, r := range cs[1].ev.Records {
		if r.Attributes["ApproximateReceiveCount"] != "2" {
			t.Errorf("redelivery with ApproximateReceiveCount %s", r.Attributes["ApproximateReceiveCount"])
		}
	}
	s := m.Counters().Snapshot()
	// Each message counts In once, however often it is received (Counters' invariant).
	if s.Errors != 1 || s.ErrorFailed != 3 || s.ReportedFailed != 0 || s.In != 3 || s.Delivered != 6 || s.Retried != 3 || s.Invocations != 2 {
		t.Errorf("counters %+v", s)
	}
	checkSettled(t, m.Counters())
}

// TestSQSPartialBatchResponse follows "To avoid reprocessing successfully processed
// messages in a failed batch, you can configure your event source mapping to make only the
// failed messages visible again." (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html#services-sqs-batchfailurereporting):
// with ReportBatchItemFailures, the listed messages come back and the others are deleted;
// without it, the same response is ignored and the whole batch is deleted.
func TestSQSPartialBatchResponse(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	for _, report := range []bool{true, false} {
		name := fmt.Sprint("pbr-", report)
		// 3 s: long enough that only the reported message comes back, even on a busy machine
		url, arn := env.queue(name, 3, nil)
		env.send(url, []string{"ok1", "bad", "ok2"}, nil)
		var seen sync.Map
		rec := &sqsRecorder{t: t, answer: func(ev *events.SQSEvent) Response {
			var ids []string
			for _, r := range ev.Records {
				if _, again := seen.LoadOrStore(r.MessageId, true); r.Body == "bad" && !again {
					ids = append(ids, r.MessageId)
				}
			}
			return pbr(ids...)
		}}
		m, stop := env.run(url, rec, WithName(name), WithQueueARN(arn), WithBatchSize(3), WithBatchingWindow(time.Second), reportBatchItemFailures(report))
		waitFor(t, 20*time.Second, "all done", func() bool { return m.Counters().Succeeded.Load() == 3 })
		time.Sleep(1500 * time.Millisecond)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		want := []string{"ok1", "bad", "ok2"}
		if report {
			want = append(want, "bad")
		}
		if got := rec.bodies(); !sameMultiset(got, want) {
			t.Errorf("report=%v: delivered %v, want %v", report, got, want)
		}
	}
}

func sameMultiset(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	n := map[string]int{}
	for _, s := range a {
		n[s]++
	}
	for _, s := range b {
		n[s]--
	}
	for _, v := range n {
		if v != 0 {
			return false
		}
	}
	return true
}

// TestSQSPartialBatchResponseInvalid follows "Lambda treats a batch as a complete failure
// if your function returns any of the following: The JSON response is invalid; An empty
// string itemIdentifier; A null itemIdentifier; An itemIdentifier with a bad key name; An
// itemIdentifier value with a message ID that doesn't exist" and "Lambda treats a batch as
// a complete success if your function returns any of the following: An empty
// batchItemFailures list; A null batchItemFailures list; An empty EventResponse; A null
// EventResponse" (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html#services-sqs-batchfailurereporting),
// each against local-aws-sqs: a complete failure brings both messages back, a complete
// success deletes both.
func TestSQSPartialBatchResponseInvalid(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	cases := []struct {
		name    string
		resp    func(ids []string) string
		success bool
	}{
		{"invalid JSON", func([]string) string { return `{"batchItemFailures":[` }, false},
		{"empty itemIdentifier", func([]string) string { return `{"batchItemFailures":[{"itemIdentifier":""}]}` }, false},
		{"null itemIdentifier", func([]string) string { return `{"batchItemFailures":[{"itemIdentifier":null}]}` }, false},
		{"bad key name", func(ids []string) string { return `{"batchItemFailures":[{"ItemIdentifier":"` + ids[0] + `"}]}` }, false},
		{"unknown message ID", func([]string) string { return `{"batchItemFailures":[{"itemIdentifier":"nope"}]}` }, false},
		{"one valid, one unknown", func(ids []string) string {
			return `{"batchItemFailures":[{"itemIdentifier":"` + ids[0] + `"},{"itemIdentifier":"nope"}]}`
		}, false},
		{"empty list", func([]string) string { return `{"batchItemFailures":[]}` }, true},
		{"null list", func([]string) string { return `{"batchItemFailures":null}` }, true},
		{"empty response", func([]string) string { return `` }, true},
		{"null response", func([]string) string { return `null` }, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, arn := env.queue(fmt.Sprint("inv", i), 3, nil) // see TestSQSPartialBatchResponse
			env.send(url, []string{"x", "y"}, nil)
			var calls atomic.Int32
			rec := &sqsRecorder{t: t, answer: func(ev *events.SQSEvent) Response {
				if calls.Add(1) > 1 {
					return Response{}
				}
				var ids []string
				for _, r := range ev.Records {
					ids = append(ids, r.MessageId)
				}
				return Response{Payload: []byte(tc.resp(ids))}
			}}
			m, stop := env.run(url, rec, WithName(tc.name), WithQueueARN(arn), WithBatchSize(2), WithBatchingWindow(time.Second), WithReportBatchItemFailures())
			waitFor(t, 20*time.Second, "both done", func() bool { return m.Counters().Succeeded.Load() == 2 })
			time.Sleep(1200 * time.Millisecond)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			n := len(rec.bodies())
			if tc.success && n != 2 {
				t.Errorf("a complete success delivered %d messages, want 2", n)
			}
			if !tc.success && n != 4 {
				t.Errorf("a complete failure delivered %d messages, want 4 (both twice)", n)
			}
		})
	}
}

// TestSQSRedriveToDeadLetterQueue follows "If a message fails processing multiple times,
// Amazon SQS can send it to a dead-letter queue." and the RedrivePolicy's maxReceiveCount,
// "The number of times a message is delivered to the source queue before being moved to
// the dead-letter queue." (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html):
// a message failing maxReceiveCount (3) times lands in the dead-letter queue, moved there
// by local-aws-sqs, and the function saw it exactly three times.
func TestSQSRedriveToDeadLetterQueue(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	for _, name := range []string{"rd", "rd.fifo"} {
		dlqName := strings.Replace(name, "rd", "rd-dlq", 1)
		dlq, dlqARN := env.queue(dlqName, 30, nil)
		url, arn := env.queue(name, 2, map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":3}`})
		var group func(int) string
		if strings.HasSuffix(name, ".fifo") {
			group = func(int) string { return "g" }
		}
		env.send(url, []string{"poison", "after"}, group)
		rec := &sqsRecorder{t: t, answer: func(ev *events.SQSEvent) Response {
			var ids []string
			for _, r := range ev.Records {
				if r.Body == "poison" {
					ids = append(ids, r.MessageId)
				}
			}
			return pbr(ids...)
		}}
		obs := &observed{}
		m, stop := env.run(url, rec, WithName(name), WithQueueARN(arn), WithBatchSize(1), WithReportBatchItemFailures(), WithObserver(obs))
		var moved []types.Message
		waitFor(t, 30*time.Second, name+": the poison message in the dead-letter queue", func() bool {
			got, err := standintest.Receive(context.Background(), env.c, dlq, 1, 100*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			moved = append(moved, got...)
			return len(moved) > 0
		})
		waitFor(t, 10*time.Second, name+": the message after it delivered", func() bool { return contains(rec.bodies(), "after") })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if aws.ToString(moved[0].Body) != "poison" {
			t.Errorf("%s: dead-letter queue holds %q", name, aws.ToString(moved[0].Body))
		}
		n := 0
		for _, b := range rec.bodies() {
			if b == "poison" {
				n++
			}
		}
		if n != 3 {
			t.Errorf("%s: the poison message was delivered %d times, want maxReceiveCount 3", name, n)
		}
		if group != nil && rec.bodies()[len(rec.bodies())-1] != "after" {
			t.Errorf("%s: FIFO order: %v", name, rec.bodies())
		}
		// The mapping tells the move from the third failure: DeadLettered, one GaveUp event.
		if s := m.Counters().Snapshot(); s.DeadLettered != 1 || s.Succeeded != 1 || s.In != 2 || s.ReportedFailed != 3 || s.Retried != 2 {
			t.Errorf("%s: counters %+v", name, s)
		}
		checkSettled(t, m.Counters())
		if g := obs.of(GaveUp); len(g) != 1 || len(g[0].Records) != 1 || g[0].Records[0].MessageID != aws.ToString(moved[0].MessageId) ||
			!strings.Contains(g[0].Reason, "maxReceiveCount 3") {
			t.Errorf("%s: GaveUp events %+v", name, g)
		}
		// Each event names a FIFO message's group (klt local counts the groups a run had).
		wantGroup := map[bool]string{true: "g", false: ""}[group != nil]
		for _, e := range obs.of(Delivered) {
			for _, r := range e.Records {
				if r.MessageGroupID != wantGroup {
					t.Errorf("%s: a Delivered event's message %s has MessageGroupID %q, want %q", name, r.MessageID, r.MessageGroupID, wantGroup)
				}
			}
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestSQSFilterDeletes follows "If none of your filters are satisfied, Lambda discards the
// record." (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html)
// and "Amazon SQS event source mappings only support filtering on the body key."
// (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs-filtering.html): messages that
// match no filter are deleted from the queue and never delivered.
func TestSQSFilterDeletes(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	url, arn := env.queue("filter", 30, nil)
	crit, err := filter.ParseCriteria([]byte(`{"Filters":[{"Pattern":"{\"body\":{\"RequestCode\":[\"BBBB\"]}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	env.send(url, []string{`{"RequestCode":"AAAA"}`, `{"RequestCode":"BBBB"}`, `plain`, `{"RequestCode":"BBBB","n":2}`}, nil)
	rec := &sqsRecorder{t: t}
	m, stop := env.run(url, rec, WithName("filter"), WithQueueARN(arn), WithFilter(crit))
	waitFor(t, 10*time.Second, "2 done, 2 filtered", func() bool {
		s := m.Counters().Snapshot()
		return s.Succeeded == 2 && s.Filtered == 2
	})
	time.Sleep(1200 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := rec.bodies(); !sameMultiset(got, []string{`{"RequestCode":"BBBB"}`, `{"RequestCode":"BBBB","n":2}`}) {
		t.Errorf("delivered %v", got)
	}
	if v, h := env.depth(url); v+h != 0 {
		t.Errorf("queue holds %d+%d messages: the filtered ones were not deleted", v, h)
	}
}

// TestSQSBatchingWindow follows "MaximumBatchingWindowInSeconds: The maximum amount of
// time, in seconds, that Lambda spends gathering records before invoking the function." and
// "When you set BatchSize to a value greater than 10, you must set
// MaximumBatchingWindowInSeconds to at least 1."
// (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html): 25
// messages with BatchSize 25 and a 2 s window come in one invocation; 4 messages come
// after the window, together.
func TestSQSBatchingWindow(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	url, arn := env.queue("window", 10, nil)
	var bodies []string
	for i := range 25 {
		bodies = append(bodies, fmt.Sprint(i))
	}
	env.send(url, bodies, nil)
	rec := &sqsRecorder{t: t}
	m, _ := env.run(url, rec, WithName("window"), WithQueueARN(arn), WithBatchSize(25), WithBatchingWindow(2*time.Second))
	waitFor(t, 10*time.Second, "25 done", func() bool { return m.Counters().Succeeded.Load() == 25 })
	if cs := rec.snapshot(); len(cs) != 1 {
		t.Fatalf("%d invocations, want one of 25", len(cs))
	}
	sent := time.Now()
	env.send(url, bodies[:4], nil)
	waitFor(t, 10*time.Second, "29 done", func() bool { return m.Counters().Succeeded.Load() == 29 })
	cs := rec.snapshot()
	last := cs[len(cs)-1]
	if len(cs) != 2 || len(last.ev.Records) != 4 {
		t.Fatalf("%d invocations, the last of %d, want 2, the last of 4", len(cs), len(last.ev.Records))
	}
	if d := last.at.Sub(sent); d < 1800*time.Millisecond {
		t.Errorf("4 messages invoked %v after they were sent, before the 2 s window", d)
	}
}

// TestSQSPayloadLimit follows "Lambda passes all of the records in the batch to the function
// in a single call, up to the payload limit for synchronous invocation (6 MB)."
// (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html): ten
// messages of almost 1 MiB with BatchSize 10 come in events of at most 6 MB.
func TestSQSPayloadLimit(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	url, arn := env.queue("big", 10, nil)
	for i := range 10 {
		body := strings.Repeat(string(rune('a'+i)), 1<<20-100)
		if _, err := env.c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &sqsRecorder{t: t}
	m, _ := env.run(url, rec, WithName("big"), WithQueueARN(arn), WithBatchSize(10), WithBatchingWindow(2*time.Second))
	waitFor(t, 20*time.Second, "10 done", func() bool { return m.Counters().Succeeded.Load() == 10 })
	cs := rec.snapshot()
	for _, c := range cs {
		if len(c.payload) > limits.MaxLambdaPayloadBytes {
			t.Errorf("an event of %d bytes, over 6 MB", len(c.payload))
		}
	}
	if len(cs) < 2 {
		t.Errorf("%d invocation(s) for 10 MB", len(cs))
	}
	t.Logf("%d invocations", len(cs))
}

// concurrencyProbe is a function that sleeps d per invocation and records the most
// invocations running at once.
type concurrencyProbe struct {
	d        time.Duration
	running  atomic.Int32
	peak     atomic.Int32
	mu       sync.Mutex
	groupsOn map[string]int
	overlap  atomic.Int32 // invocations that found a group of theirs already running
}

func (p *concurrencyProbe) Invoke(ctx context.Context, payload []byte) (Response, error) {
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return Response{}, err
	}
	groups := map[string]bool{}
	for _, r := range ev.Records {
		groups[r.Attributes["MessageGroupId"]] = true
	}
	p.mu.Lock()
	if p.groupsOn == nil {
		p.groupsOn = map[string]int{}
	}
	for g := range groups {
		if g != "" && p.groupsOn[g] > 0 {
			p.overlap.Add(1)
		}
		p.groupsOn[g]++
	}
	p.mu.Unlock()
	n := p.running.Add(1)
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			break
		}
	}
	select {
	case <-time.After(p.d):
	case <-ctx.Done():
	}
	p.running.Add(-1)
	p.mu.Lock()
	for g := range groups {
		p.groupsOn[g]--
	}
	p.mu.Unlock()
	return Response{}, nil
}

// TestSQSStandardScaling follows "When messages are available, Lambda starts processing
// five batches at a time with five concurrent invocations of your function. If messages are
// still available, Lambda increases the number of processes that are reading batches by up
// to 300 more instances per minute." and "The maximum concurrency setting limits the number
// of concurrent instances of the function that an Amazon SQS event source can invoke."
// (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html).
func TestSQSStandardScaling(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	var bodies []string
	for i := range 400 {
		bodies = append(bodies, fmt.Sprint(i))
	}
	for _, maxConc := range []int{0, 7} {
		name := fmt.Sprint("scale", maxConc)
		url, arn := env.queue(name, 30, nil)
		env.send(url, bodies, nil)
		p := &concurrencyProbe{d: 500 * time.Millisecond}
		_, stop := env.run(url, p, WithName(name), WithQueueARN(arn), WithBatchSize(1), maximumConcurrency(maxConc))
		time.Sleep(800 * time.Millisecond)
		if got := p.peak.Load(); got != int32(min(5, max(maxConc, 5))) {
			t.Errorf("max %d: %d concurrent invocations in the first 0.8 s, want 5", maxConc, got)
		}
		time.Sleep(2500 * time.Millisecond)
		peak := p.peak.Load()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		switch {
		case maxConc == 0 && (peak < 12 || peak > 25):
			t.Errorf("no maximum: %d concurrent invocations after 3.3 s, want about 5 + 5 a second", peak)
		case maxConc > 0 && peak != int32(maxConc):
			t.Errorf("MaximumConcurrency %d: peak %d", maxConc, peak)
		}
		t.Logf("max %d: peak %d after 3.3 s", maxConc, peak)
	}
}

// TestSQSFIFOConcurrency follows "For FIFO queues, concurrent invocations are limited to
// the number of message group IDs (messageGroupId) or the maximum concurrency setting,
// whichever is lower. For example, if you have six message group IDs and maximum
// concurrency is set to 10, your function can have a maximum of six concurrent
// invocations." (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html).
// A FIFO mapping does not ramp up: the page states the ramp for standard queues.
func TestSQSFIFOConcurrency(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	var bodies []string
	for i := range 60 {
		bodies = append(bodies, fmt.Sprint(i))
	}
	for _, tc := range []struct{ maxConc, want int }{{10, 6}, {3, 3}} {
		name := fmt.Sprint("conc", tc.maxConc, ".fifo")
		url, arn := env.queue(name, 30, nil)
		env.send(url, bodies, func(i int) string { return fmt.Sprint("g", i%6) })
		p := &concurrencyProbe{d: 300 * time.Millisecond}
		m, stop := env.run(url, p, WithName(name), WithQueueARN(arn), WithBatchSize(1), maximumConcurrency(tc.maxConc))
		waitFor(t, 20*time.Second, "60 done", func() bool { return m.Counters().Succeeded.Load() == 60 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if got := p.peak.Load(); got != int32(tc.want) {
			t.Errorf("6 groups, MaximumConcurrency %d: peak %d, want %d", tc.maxConc, got, tc.want)
		}
		if n := p.overlap.Load(); n != 0 {
			t.Errorf("%d invocations ran while another had a message of their group", n)
		}
	}
}

// TestSQSFIFOOrderAfterFailure follows "Amazon SQS ensures that messages in the same group
// are delivered to Lambda in order. [...] If your function returns an error, the function
// attempts all retries on the affected messages before Lambda receives additional messages
// from the same group." (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html).
// Group A's messages 1..5, message 2 failing twice: the function sees 1, 2, 2, 2, 3, 4, 5,
// never 3 before 2 succeeded, while group B goes on; local-aws-sqs, which does not lock
// groups, returns 3, 4 and 5 while 2 is in flight, and the mapping holds them. With batch
// size 1 a failure is an invocation error; with 10, a partial-batch response listing the
// failed message and the rest of its group.
func TestSQSFIFOOrderAfterFailure(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	for _, size := range []int{1, 10} {
		name := fmt.Sprint("order", size, ".fifo")
		url, arn := env.queue(name, 3, nil) // see TestSQSPartialBatchResponse
		var bodies []string
		for i := 1; i <= 5; i++ {
			bodies = append(bodies, fmt.Sprint("A", i), fmt.Sprint("B", i))
		}
		env.send(url, bodies, func(i int) string { return bodies[i][:1] })
		var mu sync.Mutex
		var seen []string
		fails := 0
		fn := InvokerFunc(func(_ context.Context, payload []byte) (Response, error) {
			var ev events.SQSEvent
			if err := json.Unmarshal(payload, &ev); err != nil {
				return Response{}, err
			}
			mu.Lock()
			defer mu.Unlock()
			var failed []string
			failedGroup := map[string]bool{}
			for _, r := range ev.Records {
				g := r.Attributes["MessageGroupId"]
				if failedGroup[g] {
					failed = append(failed, r.MessageId)
					continue
				}
				seen = append(seen, r.Body)
				if r.Body == "A2" && fails < 2 {
					fails++
					if size == 1 {
						return failAll(&ev), nil
					}
					failedGroup[g] = true
					failed = append(failed, r.MessageId)
				}
			}
			return pbr(failed...), nil
		})
		m, stop := env.run(url, fn, WithName(name), WithQueueARN(arn), WithBatchSize(size), WithReportBatchItemFailures())
		waitFor(t, 20*time.Second, "10 done", func() bool { return m.Counters().Succeeded.Load() == 10 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		var a, b []string
		for _, s := range seen {
			if s[0] == 'A' {
				a = append(a, s)
			} else {
				b = append(b, s)
			}
		}
		if got := strings.Join(a, ","); got != "A1,A2,A2,A2,A3,A4,A5" {
			t.Errorf("batch size %d: group A seen as %s, want A1,A2,A2,A2,A3,A4,A5", size, got)
		}
		if got := strings.Join(b, ","); got != "B1,B2,B3,B4,B5" {
			t.Errorf("batch size %d: group B seen as %s", size, got)
		}
		t.Logf("batch size %d: %v", size, seen)
	}
}

// TestSQSLocalDedupQuirk checks what the FIFO tests rely on about local-aws-sqs's
// deduplication: real SQS drops a message whose MessageDeduplicationId it saw in the last
// five minutes ("If a message with a particular message deduplication ID is sent
// successfully, any messages sent with the same message deduplication ID are accepted
// successfully but aren't delivered during the 5-minute deduplication interval.",
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html);
// local-aws-sqs drops it only while the first copy is in the queue. After the mapping has
// deleted the first copy, a resend is delivered again. The test pins that difference, so
// that a change in local-aws-sqs shows.
func TestSQSLocalDedupQuirk(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	url, arn := env.queue("dedup.fifo", 30, nil)
	send := func() {
		if _, err := env.c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x"),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("same")}); err != nil {
			t.Fatal(err)
		}
	}
	send()
	send() // dropped: the first copy is in the queue
	rec := &sqsRecorder{t: t}
	m, _ := env.run(url, rec, WithName("dedup"), WithQueueARN(arn))
	waitFor(t, 10*time.Second, "1 done", func() bool { return m.Counters().Succeeded.Load() == 1 })
	time.Sleep(300 * time.Millisecond)
	if n := len(rec.bodies()); n != 1 {
		t.Fatalf("%d deliveries of a message sent twice while in the queue, want 1", n)
	}
	send() // real SQS: dropped (within 5 minutes); local-aws-sqs: delivered
	waitFor(t, 10*time.Second, "the resend delivered (local-aws-sqs)", func() bool { return m.Counters().Succeeded.Load() == 2 })
}

// TestNewSQSConfig checks the settings AWS rejects, from
// https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html: "For standard
// queues, the maximum is 10,000. For FIFO queues, the maximum is 10.", "Batching window is
// not supported for FIFO queues", and ScalingConfig's MaximumConcurrency "Valid Range:
// Minimum value of 2. Maximum value of 1000."
// (https://docs.aws.amazon.com/lambda/latest/api/API_ScalingConfig.html).
func TestNewSQSConfig(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	std, _ := env.queue("cfg", 30, nil)
	fifo, _ := env.queue("cfg.fifo", 30, nil)
	fn := InvokerFunc(func(context.Context, []byte) (Response, error) { return Response{}, nil })
	cases := []struct {
		setting string
		url     string
		opts    []SQSOption
	}{
		{"queueURL", "", nil},
		{"WithBatchSize", std, []SQSOption{WithBatchSize(-1)}},
		{"WithBatchSize", std, []SQSOption{WithBatchSize(0)}},
		{"WithBatchSize", std, []SQSOption{WithBatchSize(10001), WithBatchingWindow(time.Second)}},
		{"WithBatchingWindow", std, []SQSOption{WithBatchSize(11)}},
		{"WithBatchingWindow", std, []SQSOption{WithBatchingWindow(301 * time.Second)}},
		{"WithBatchSize", fifo, []SQSOption{WithBatchSize(11), WithBatchingWindow(time.Second)}},
		{"WithBatchingWindow", fifo, []SQSOption{WithBatchingWindow(time.Second)}},
		{"WithMaximumConcurrency", std, []SQSOption{WithMaximumConcurrency(1)}},
		{"WithMaximumConcurrency", std, []SQSOption{WithMaximumConcurrency(1001)}},
		{"WithQueueARN", std, []SQSOption{WithQueueARN("arn:aws:sns:us-east-1:1:x")}},
		{"WithFilter", std, []SQSOption{WithFilter(nil)}},
	}
	for _, tc := range cases {
		_, err := NewSQS(context.Background(), env.c, tc.url, fn, append(tc.opts, WithName("m"))...)
		var ce *toolkit.OptionError
		if !errors.As(err, &ce) || ce.Option != tc.setting || !strings.Contains(ce.Reason, `SQS mapping "m"`) {
			t.Errorf("%s %q: error %v, want a *toolkit.OptionError on %s", tc.setting, tc.url, err, tc.setting)
		}
	}
	if _, err := NewSQS(context.Background(), env.c, std, nil); err == nil {
		t.Error("a nil Invoker was accepted")
	}
	if _, err := NewSQS(context.Background(), nil, std, fn); err == nil {
		t.Error("a nil client was accepted")
	}
	if _, err := NewSQS(context.Background(), env.c, env.srv.QueueURL("missing"), fn); err == nil {
		t.Error("a missing queue was accepted")
	}
	m, err := NewSQS(context.Background(), env.c, std, fn, WithBatchSize(10000), WithBatchingWindow(300*time.Second), WithMaximumConcurrency(1000))
	if err != nil {
		t.Fatal(err)
	}
	if m.FIFO() || !strings.HasSuffix(m.cfg.queueARN, ":cfg") {
		t.Errorf("fifo %v, ARN %q read from the queue", m.FIFO(), m.cfg.queueARN)
	}
}

// TestSQSStopsOnServerFailure: Run returns an error, not nil, when the server goes away.
func TestSQSStopsOnServerFailure(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	url, arn := env.queue("gone", 30, nil)
	m, err := NewSQS(context.Background(), env.c, url, &sqsRecorder{t: t}, WithName("gone"), WithQueueARN(arn))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background()) }()
	time.Sleep(300 * time.Millisecond)
	env.srv.Stop()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Run returned nil after the server stopped")
		}
		t.Log(err)
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after the server stopped")
	}
}
