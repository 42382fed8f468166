package sqssink_test

// The SQS sink against a real server: local-aws-sqs (started per test by internal/standin),
// with package batch's processing in front of it. The Kafka sink's tests are in package kafkasink.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/internal/sinktest"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

func sinkReceive(t *testing.T, ctx context.Context, c *sqs.Client, queueURL string, max int, wait time.Duration) []types.Message {
	t.Helper()
	msgs, err := standintest.Receive(ctx, c, queueURL, max, wait)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// sinkNoMore checks that the queue has no (more) visible messages.
func sinkNoMore(t *testing.T, ctx context.Context, c *sqs.Client, queueURL string) {
	t.Helper()
	if msgs := sinkReceive(t, ctx, c, queueURL, 1, 300*time.Millisecond); len(msgs) != 0 {
		t.Errorf("unexpected message in %s: %s", queueURL, aws.ToString(msgs[0].Body))
	}
}

func sinkAttr(m types.Message, name string) string {
	a, ok := m.MessageAttributes[name]
	if !ok {
		return "<none>"
	}
	return aws.ToString(a.DataType) + ":" + aws.ToString(a.StringValue)
}

func TestSinkStandardQueue(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := standintest.StartSQS(t)
	c := srv.Client()
	q, err := standin.CreateQueue(ctx, c, "orders-dlq", nil)
	if err != nil {
		t.Fatal(err)
	}

	ev := sinktest.Event("orders")
	h, seen := sinktest.FailOn(batch.Permanent(errors.New("bad payload: \u2028\ufffe\x01")), "0@1", "1@1")
	var emf bytes.Buffer
	resp, err := batch.ProcessKafka(ctx, ev, h, append(sinktest.Quiet(&emf), batch.WithSink(sqssink.New(c, q), batch.SinkPermanent))...)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v, want none: the failed records went to the sink", resp.BatchItemFailures)
	}
	// The partitions moved on past the failed records.
	if got := strings.Join(seen(), " "); !strings.Contains(got, "0@2") || !strings.Contains(got, "0@3") || !strings.Contains(got, "1@10") {
		t.Errorf("handler saw %s, want the records after the failed ones too", got)
	}
	if n := sinktest.Metric(t, &emf, "SentToSink"); n != 2 {
		t.Errorf("SentToSink = %v, want 2", n)
	}
	// Failed counts the records that failed, wherever they went; Reported, those the
	// response reports.
	if n := sinktest.Metric(t, &emf, "Failed"); n != 2 {
		t.Errorf("Failed = %v, want 2", n)
	}
	if n := sinktest.Metric(t, &emf, "Reported"); n != 0 {
		t.Errorf("Reported = %v, want 0", n)
	}

	msgs := sinkReceive(t, ctx, c, q, 2, 5*time.Second)
	if len(msgs) != 2 {
		t.Fatalf("the queue has %d messages, want 2", len(msgs))
	}
	sinkNoMore(t, ctx, c, q)
	got := map[string]bool{}
	for _, m := range msgs {
		// SQS refuses U+FFFE in a body; JSON may carry it escaped.
		if body := aws.ToString(m.Body); strings.Contains(body, "\ufffe") {
			t.Errorf("body %s has U+FFFE unescaped", body)
		} else if !strings.Contains(body, `\ufffe`) {
			t.Errorf("body %s: the error's U+FFFE is not escaped as \\ufffe", body)
		}
		env, err := batch.ReadEnvelope([]byte(aws.ToString(m.Body)))
		if err != nil {
			t.Fatalf("ReadEnvelope(%s): %v", aws.ToString(m.Body), err)
		}
		id := fmt.Sprintf("%d@%d", env.Partition, env.Offset)
		got[id] = true
		want := sinktest.Record(t, ev, env.Partition, env.Offset)
		sinktest.SameRecord(t, env.Record(), want)
		if env.Source != "kafka" || env.Error != "bad payload: \u2028\ufffe\x01" || !env.Permanent || env.Attempts != 1 {
			t.Errorf("%s: source %q error %q permanent %v attempts %d, want kafka, the handler's error, true, 1",
				id, env.Source, env.Error, env.Permanent, env.Attempts)
		}
		if env.FirstAttempt.IsZero() || env.FailedAt.Before(env.FirstAttempt) {
			t.Errorf("%s: first attempt %v, failed at %v", id, env.FirstAttempt, env.FailedAt)
		}
		if env.Tombstone != (want.Value == nil) {
			t.Errorf("%s: tombstone %v", id, env.Tombstone)
		}
		for name, v := range map[string]string{"source": "String:kafka", "topic": "String:orders",
			"partition": "Number:" + strconv.Itoa(int(env.Partition)), "offset": "Number:" + strconv.FormatInt(env.Offset, 10)} {
			if a := sinkAttr(m, name); a != v {
				t.Errorf("%s: message attribute %s = %s, want %s", id, name, a, v)
			}
		}
		if m.Attributes["MessageGroupId"] != "" {
			t.Errorf("%s: a standard queue's message has MessageGroupId %q", id, m.Attributes["MessageGroupId"])
		}
	}
	if !got["0@1"] || !got["1@1"] {
		t.Errorf("the queue has %v, want 0@1 and 1@1 (the tombstone)", got)
	}
}

func TestSinkFIFOQueue(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := standintest.StartSQS(t)
	c := srv.Client()
	q, err := standin.CreateQueue(ctx, c, "orders-dlq.fifo", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Kafka topic names go up to 249 characters; SQS group and deduplication ids to 128.
	long := strings.Repeat("t", 200)
	sink := sqssink.New(c, q)
	for _, topic := range []string{"orders", long} {
		ev := sinktest.Event(topic)
		h, _ := sinktest.FailOn(batch.Permanent(errors.New("bad")), "0@1", "0@2", "1@0")
		// Twice, as when Lambda delivers a batch again: deduplication keeps one copy.
		for range 2 {
			resp, err := batch.ProcessKafka(ctx, ev, h, append(sinktest.Quiet(nil), batch.WithSink(sink, batch.SinkPermanent))...)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.BatchItemFailures) != 0 {
				t.Fatalf("topic %.10s…: failures %+v, want none", topic, resp.BatchItemFailures)
			}
		}
	}
	msgs := sinkReceive(t, ctx, c, q, 6, 5*time.Second)
	sinkNoMore(t, ctx, c, q)
	type row struct{ group, dedup, record string }
	var got []row
	for _, m := range msgs {
		env, err := batch.ReadEnvelope([]byte(aws.ToString(m.Body)))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, row{m.Attributes["MessageGroupId"], m.Attributes["MessageDeduplicationId"],
			fmt.Sprintf("%.6s-%d@%d", env.Topic, env.Partition, env.Offset)})
	}
	if len(got) != 6 {
		t.Fatalf("received %d messages, want 6 (3 records × 2 topics, the second deliveries deduplicated): %v", len(got), got)
	}
	groups := map[string]string{}
	for _, r := range got {
		if len(r.group) > 128 || len(r.dedup) > 128 {
			t.Errorf("%s: ids longer than 128 characters: %q %q", r.record, r.group, r.dedup)
		}
		if strings.HasPrefix(r.record, "orders") {
			p, o, _ := strings.Cut(strings.TrimPrefix(r.record, "orders-"), "@")
			if r.group != "orders-"+p || r.dedup != "orders-"+p+"-"+o {
				t.Errorf("%s: group %q dedup %q, want orders-%s and orders-%s-%s", r.record, r.group, r.dedup, p, p, o)
			}
		} else if !strings.HasPrefix(r.group, long[:63]+"-") || len(r.group) != 128 {
			t.Errorf("%s: group %q, want the topic's first 63 characters, -, and a hash", r.record, r.group)
		}
		groups[r.record[:len(r.record)-2]] = r.group // strip "@N"
	}
	// A partition's records share a group, in order; different partitions do not.
	if groups["tttttt-0"] == groups["tttttt-1"] || groups["orders-0"] == groups["orders-1"] {
		t.Errorf("partitions share a message group: %v", groups)
	}
	var order []string
	for _, r := range got {
		if strings.HasPrefix(r.record, "orders-0") {
			order = append(order, r.record)
		}
	}
	if strings.Join(order, " ") != "orders-0@1 orders-0@2" {
		t.Errorf("partition 0's failures arrived as %v, want in offset order", order)
	}
}

func TestSinkSQSMessages(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := standintest.StartSQS(t)
	c := srv.Client()
	dlq, err := standin.CreateQueue(ctx, c, "work-dlq.fifo", nil)
	if err != nil {
		t.Fatal(err)
	}
	msg := func(id, group string) events.SQSMessage {
		return events.SQSMessage{
			MessageId: id, ReceiptHandle: "rh-" + id, Body: `{"job":"` + id + `"}`, Md5OfBody: "x",
			Attributes: map[string]string{"ApproximateReceiveCount": "2", "SentTimestamp": "1767261600000",
				"MessageGroupId": group, "MessageDeduplicationId": "d-" + id, "SequenceNumber": "1"},
			MessageAttributes: map[string]events.SQSMessageAttribute{
				"tenant": {StringValue: aws.String("acme"), DataType: "String"},
				"blob":   {BinaryValue: []byte{0, 1, 0xff}, DataType: "Binary"},
			},
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:work.fifo", EventSource: "aws:sqs", AWSRegion: "us-east-1",
		}
	}
	ev := &events.SQSEvent{Records: []events.SQSMessage{msg("m1", "g1"), msg("m2", "g1"), msg("m3", "g2")}}
	resp, err := batch.ProcessSQS(ctx, ev, func(_ context.Context, m *events.SQSMessage) error {
		if m.MessageId == "m1" || m.MessageId == "m3" {
			return batch.Permanent(errors.New("invalid job"))
		}
		return nil
	}, append(sinktest.Quiet(nil), batch.WithSink(sqssink.New(c, dlq), batch.SinkPermanent))...)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v, want none", resp.BatchItemFailures)
	}
	msgs := sinkReceive(t, ctx, c, dlq, 2, 5*time.Second)
	if len(msgs) != 2 {
		t.Fatalf("the queue has %d messages, want 2", len(msgs))
	}
	sinkNoMore(t, ctx, c, dlq)
	for _, m := range msgs {
		env, err := batch.ReadEnvelope([]byte(aws.ToString(m.Body)))
		if err != nil {
			t.Fatal(err)
		}
		if env.Source != "sqs" || env.Message == nil || env.Error != "invalid job" || !env.Permanent {
			t.Fatalf("envelope %+v", env)
		}
		id := env.Message.MessageId
		want := msg(id, map[string]string{"m1": "g1", "m3": "g2"}[id])
		if !reflect.DeepEqual(*env.Message, want) {
			t.Errorf("message read back\n%+v\nwant\n%+v", *env.Message, want)
		}
		if a := sinkAttr(m, "source"); a != "String:sqs" {
			t.Errorf("%s: source attribute %s", id, a)
		}
		if a := sinkAttr(m, "messageId"); a != "String:"+id {
			t.Errorf("%s: messageId attribute %s", id, a)
		}
		if a := sinkAttr(m, "topic"); a != "<none>" {
			t.Errorf("%s: topic attribute %s on an SQS message's envelope", id, a)
		}
		if m.Attributes["MessageGroupId"] != want.Attributes["MessageGroupId"] || m.Attributes["MessageDeduplicationId"] != id {
			t.Errorf("%s: group %q dedup %q, want the original group and the message id", id, m.Attributes["MessageGroupId"], m.Attributes["MessageDeduplicationId"])
		}
	}
}

// A sink that fails does not lose the record: it is reported, and so is the rest of its
// partition.
func TestSinkFailureReportsRecord(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := standintest.StartSQS(t)
	c := srv.Client()
	deleted, err := standin.CreateQueue(ctx, c, "deleted", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(deleted)}); err != nil {
		t.Fatal(err)
	}
	small, err := standin.CreateQueue(ctx, c, "small", nil)
	if err != nil {
		t.Fatal(err)
	}
	stopped := standintest.StartSQS(t)
	stoppedQ, err := standin.CreateQueue(ctx, stopped.Client(), "q", nil)
	if err != nil {
		t.Fatal(err)
	}
	stoppedClient := stopped.Client()
	stopped.Stop()

	cases := []struct {
		name string
		sink *sqssink.Sink
		want string
	}{
		{"deleted queue", sqssink.New(c, deleted), "NonExistentQueue"},
		{"queue never created", sqssink.New(c, srv.QueueURL("nope")), "NonExistentQueue"},
		{"server down", sqssink.New(stoppedClient, stoppedQ), "connect"},
		{"too large", sqssink.New(c, small, sqssink.WithMaxMessageSize(200)), "too large"},
	}
	for _, tc := range cases {
		ev := sinktest.Event("orders")
		h, _ := sinktest.FailOn(batch.Permanent(errors.New("bad")), "0@1")
		var emf bytes.Buffer
		resp, err := batch.ProcessKafka(ctx, ev, h, append(sinktest.Quiet(&emf), batch.WithSink(tc.sink, batch.SinkPermanent))...)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(resp)
		want := `{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":1}},{"itemIdentifier":{"partition":"orders-0","offset":2}},{"itemIdentifier":{"partition":"orders-0","offset":3}}]}`
		if string(out) != want {
			t.Errorf("%s: response %s\nwant %s", tc.name, out, want)
		}
		if n := sinktest.Metric(t, &emf, "SentToSink"); n != 0 {
			t.Errorf("%s: SentToSink = %v", tc.name, n)
		}
		// The sink's own error says why.
		env := &batch.Envelope{Version: batch.EnvelopeVersion, Source: "kafka", Topic: "orders", Partition: 0, Offset: 1, Error: "bad"}
		err = tc.sink.Send(ctx, env)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "orders-0@1") {
			t.Errorf("%s: Send: %v, want an error naming the record and containing %q", tc.name, err, tc.want)
		}
	}
	sinkNoMore(t, ctx, c, small) // the message too large was not sent anyway
}

func TestSinkMessageSizeLimit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := standintest.StartSQS(t)
	c := srv.Client()
	q, err := standin.CreateQueue(ctx, c, "big", nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := sqssink.New(c, q)
	envelope := func(value []byte) *batch.Envelope {
		return &batch.Envelope{Version: batch.EnvelopeVersion, Source: "kafka", Topic: "orders", Partition: 3, Offset: 7, Value: value, Error: "e"}
	}
	// The base64 of 3n bytes is 4n characters: 780,000 bytes of value is about 1,040,000
	// characters of body, under 1 MiB with the rest of the envelope; 790,000 is over.
	if err := sink.Send(ctx, envelope(bytes.Repeat([]byte{0xab}, 780_000))); err != nil {
		t.Fatalf("a message just under 1 MiB: %v", err)
	}
	err = sink.Send(ctx, envelope(bytes.Repeat([]byte{0xab}, 790_000)))
	if !errors.Is(err, batch.ErrMessageTooLarge) {
		t.Fatalf("a message over 1 MiB: %v, want ErrMessageTooLarge", err)
	}
	t.Log(err)
	msgs := sinkReceive(t, ctx, c, q, 1, 5*time.Second)
	if len(msgs) != 1 {
		t.Fatalf("the queue has %d messages, want 1", len(msgs))
	}
	sinkNoMore(t, ctx, c, q)
	env, err := batch.ReadEnvelope([]byte(aws.ToString(msgs[0].Body)))
	if err != nil || len(env.Value) != 780_000 {
		t.Fatalf("read back: %v, %d bytes of value", err, len(env.Value))
	}
}

// SinkExhausted sends records whose retries ran out; SinkPermanent reports them.
func TestSinkPolicies(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := standintest.StartSQS(t)
	c := srv.Client()
	for _, tc := range []struct {
		name   string
		policy batch.SinkPolicy
		sent   bool
	}{{"exhausted", batch.SinkExhausted, true}, {"permanent", batch.SinkPermanent, false}} {
		q, err := standin.CreateQueue(ctx, c, "dlq-"+tc.name, nil)
		if err != nil {
			t.Fatal(err)
		}
		ev := sinktest.Event("orders")
		h, seen := sinktest.FailOn(errors.New("timeout talking to the database"), "1@0")
		var emf bytes.Buffer
		resp, err := batch.ProcessKafka(ctx, ev, h, append(sinktest.Quiet(&emf), batch.WithSink(sqssink.New(c, q), tc.policy))...)
		if err != nil {
			t.Fatal(err)
		}
		calls := strings.Count(strings.Join(seen(), " ")+" ", "1@0 ")
		if calls != 3 {
			t.Errorf("%s: the failing record was tried %d times, want 3", tc.name, calls)
		}
		if !tc.sent {
			if len(resp.BatchItemFailures) != 3 {
				t.Errorf("%s: %d failures reported, want 3 (1@0 and the rest of its partition)", tc.name, len(resp.BatchItemFailures))
			}
			sinkNoMore(t, ctx, c, q)
			continue
		}
		msgs := sinkReceive(t, ctx, c, q, 1, 5*time.Second)
		if len(resp.BatchItemFailures) != 0 || len(msgs) != 1 {
			t.Fatalf("%s: %d failures reported, %d messages sent; want 0 and 1", tc.name, len(resp.BatchItemFailures), len(msgs))
		}
		env, err := batch.ReadEnvelope([]byte(aws.ToString(msgs[0].Body)))
		if err != nil {
			t.Fatal(err)
		}
		if env.Permanent || env.Attempts != 3 || env.Error != "timeout talking to the database" || env.Offset != 0 || env.Partition != 1 {
			t.Errorf("%s: envelope permanent %v attempts %d error %q at %d@%d", tc.name, env.Permanent, env.Attempts, env.Error, env.Partition, env.Offset)
		}
		if n := sinktest.Metric(t, &emf, "SentToSink"); n != 1 {
			t.Errorf("%s: SentToSink = %v", tc.name, n)
		}
	}
}

// A FIFO queue's ids hold only what SQS takes (up to 128 characters, letters, digits and
// punctuation): a group from WithMessageGroupID with a space and characters beyond ASCII
// is made into one, the same each time, and the deduplication id is the record's identity,
// so a batch delivered twice leaves one message per record.
func TestSinkFIFOIDCharacters(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := standintest.StartSQS(t)
	c := srv.Client()
	q, err := standin.CreateQueue(ctx, c, "tenants-dlq.fifo", nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := sqssink.New(c, q, sqssink.WithMessageGroupID(func(e *batch.Envelope) string {
		return fmt.Sprintf("tenant Zoë ☃ %d", e.Partition)
	}))
	ev := sinktest.Event("orders")
	h, _ := sinktest.FailOn(batch.Permanent(errors.New("bad")), "0@1", "1@0")
	for range 2 {
		resp, err := batch.ProcessKafka(ctx, ev, h, append(sinktest.Quiet(nil), batch.WithSink(sink, batch.SinkPermanent))...)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("failures %+v, %v; want none (the sink took both records)", resp.BatchItemFailures, err)
		}
	}
	msgs := sinkReceive(t, ctx, c, q, 2, 5*time.Second)
	sinkNoMore(t, ctx, c, q)
	if len(msgs) != 2 {
		t.Fatalf("received %d messages, want 2 (2 records, the second delivery deduplicated)", len(msgs))
	}
	allowed := func(id string) bool {
		for _, r := range id {
			if r < 0x21 || r > 0x7e {
				return false
			}
		}
		return id != "" && len(id) <= 128
	}
	groups := map[string]bool{}
	for _, m := range msgs {
		env, err := batch.ReadEnvelope([]byte(aws.ToString(m.Body)))
		if err != nil {
			t.Fatal(err)
		}
		group, dedup := m.Attributes["MessageGroupId"], m.Attributes["MessageDeduplicationId"]
		if !allowed(group) || !allowed(dedup) {
			t.Errorf("%d@%d: group %q dedup %q, want only letters, digits and punctuation, at most 128", env.Partition, env.Offset, group, dedup)
		}
		if want := fmt.Sprintf("orders-%d-%d", env.Partition, env.Offset); dedup != want {
			t.Errorf("%d@%d: dedup %q, want %q", env.Partition, env.Offset, dedup, want)
		}
		if want := "tenant_Zo"; !strings.HasPrefix(group, want) {
			t.Errorf("%d@%d: group %q, want it to begin %q (the function's text, what SQS refuses replaced)", env.Partition, env.Offset, group, want)
		}
		groups[group] = true
	}
	if len(groups) != 2 {
		t.Errorf("groups %v, want two: the function gave each partition its own", groups)
	}
}

// An SQS sink given an invalid option is refused where it is given to WithSink: the batch
// fails without a record handled, and the sink refuses every record sent to it directly.
func TestInvalidOption(t *testing.T) {
	for _, tc := range []struct {
		opt  sqssink.Option
		want string
	}{
		{sqssink.WithMaxMessageSize(0), "sqssink: invalid option WithMaxMessageSize(0): want 1 to 1048576"},
		{sqssink.WithMaxMessageSize(limits.MaxSQSMessageBytes + 1), "WithMaxMessageSize(1048577)"},
		{sqssink.WithMessageGroupID(nil), "WithMessageGroupID(nil)"},
	} {
		calls := 0
		sink := sqssink.New(nil, "https://sqs.us-east-1.amazonaws.com/123456789012/dlq", tc.opt)
		_, err := batch.ProcessKafka(context.Background(), sinktest.Event("orders"),
			func(context.Context, *kafkaevent.Record) error { calls++; return batch.Permanent(errors.New("bad")) },
			batch.WithSink(sink, batch.SinkPermanent), batch.WithLogger(slog.New(slog.DiscardHandler)))
		if !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) || calls != 0 {
			t.Errorf("%s: error %v, %d calls", tc.want, err, calls)
		}
		if err := sink.Send(context.Background(), &batch.Envelope{}); !errors.Is(err, toolkit.ErrInvalidOption) {
			t.Errorf("%s: Send: %v", tc.want, err)
		}
	}
}
