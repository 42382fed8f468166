package fanout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// faults is an SDK middleware that fails chosen entries of real SendMessageBatch calls, and
// chosen calls as a whole. A failed entry is taken out of the request before it goes to
// local-aws-sqs (so that it really is not enqueued) and put in the response's Failed list;
// a failed call never reaches the server.
type faults struct {
	mu sync.Mutex
	// entry decides the fate of an entry (rec is what it carries); nil passes it.
	entry func(rec *kafkaevent.Record) *types.BatchResultErrorEntry
	// call decides whether a call fails whole; nil passes it.
	call func(recs []*kafkaevent.Record) error
	// seen records every call's entries, as sent by the dispatcher.
	calls [][]*kafkaevent.Record
	sizes [][]int
}

// apply installs the middleware on a client's stack (sqs.Options.APIOptions).
func (f *faults) apply(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("faults", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		input, ok := in.Parameters.(*sqs.SendMessageBatchInput)
		if !ok {
			return next.HandleInitialize(ctx, in)
		}
		recs := make([]*kafkaevent.Record, len(input.Entries))
		sizes := make([]int, len(input.Entries))
		for i, e := range input.Entries {
			r, err := ReadRecord(new(dispMessage(types.Message{MessageId: e.Id, Body: e.MessageBody, MessageAttributes: e.MessageAttributes})))
			if err != nil {
				return middleware.InitializeOutput{}, middleware.Metadata{}, fmt.Errorf("faults: entry %d does not decode: %w", i, err)
			}
			recs[i] = r
			sizes[i] = dispEntrySize(e)
		}
		f.mu.Lock()
		f.calls = append(f.calls, recs)
		f.sizes = append(f.sizes, sizes)
		var callErr error
		if f.call != nil {
			callErr = f.call(recs)
		}
		var pass []types.SendMessageBatchRequestEntry
		var failed []types.BatchResultErrorEntry
		for i, e := range input.Entries {
			var fe *types.BatchResultErrorEntry
			if f.entry != nil && callErr == nil {
				fe = f.entry(recs[i])
			}
			if fe == nil {
				pass = append(pass, e)
				continue
			}
			fe.Id = e.Id
			failed = append(failed, *fe)
		}
		f.mu.Unlock()
		if callErr != nil {
			return middleware.InitializeOutput{}, middleware.Metadata{}, callErr
		}
		if len(pass) == 0 {
			return middleware.InitializeOutput{Result: &sqs.SendMessageBatchOutput{Failed: failed, Successful: []types.SendMessageBatchResultEntry{}}}, middleware.Metadata{}, nil
		}
		cp := *input
		cp.Entries = pass
		in.Parameters = &cp
		out, md, err := next.HandleInitialize(ctx, in)
		if err != nil {
			return out, md, err
		}
		res := out.Result.(*sqs.SendMessageBatchOutput)
		res.Failed = append(res.Failed, failed...)
		return out, md, nil
	}), middleware.Before)
}

func (f *faults) recorded() ([][]*kafkaevent.Record, [][]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]*kafkaevent.Record(nil), f.calls...), append([][]int(nil), f.sizes...)
}

// dispEntrySize is what SQS counts of an entry, computed here apart from entry's own count.
func dispEntrySize(e types.SendMessageBatchRequestEntry) int {
	n := len(aws.ToString(e.MessageBody))
	for name, a := range e.MessageAttributes {
		n += len(name) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue)) + len(a.BinaryValue)
	}
	for name, a := range e.MessageSystemAttributes {
		n += len(name) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue)) + len(a.BinaryValue)
	}
	return n
}

// throttled is the error of a throttled call, as SQS gives it.
func throttled() error {
	return &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded (injected)", Fault: smithy.FaultClient}
}

// dispMessage is the events.SQSMessage a function would get for m.
func dispMessage(m types.Message) events.SQSMessage {
	out := events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), Attributes: m.Attributes,
		MessageAttributes: map[string]events.SQSMessageAttribute{}}
	for name, a := range m.MessageAttributes {
		out.MessageAttributes[name] = events.SQSMessageAttribute{StringValue: a.StringValue, BinaryValue: a.BinaryValue, DataType: aws.ToString(a.DataType)}
	}
	return out
}

// dispServer starts local-aws-sqs, with a client through f (nil: no faults).
func dispServer(t *testing.T, f *faults) (*standin.SQS, *sqs.Client) {
	t.Helper()
	srv := standintest.StartSQS(t)
	var opts []func(*sqs.Options)
	if f != nil {
		opts = append(opts, func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, f.apply) })
	}
	return srv, srv.Client(opts...)
}

func dispQueue(t *testing.T, srv *standin.SQS, name string) string {
	t.Helper()
	u, err := standin.CreateQueue(context.Background(), srv.Client(), name, map[string]string{"VisibilityTimeout": "600"})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// drain receives and deletes every message of the queue, in the order SQS delivers them,
// and returns the records they carry.
func drain(t *testing.T, c *sqs.Client, queueURL string) []*kafkaevent.Record {
	t.Helper()
	recs, _ := drainAll(t, c, queueURL)
	return recs
}

// drainAll is drain, with the messages.
func drainAll(t *testing.T, c *sqs.Client, queueURL string) ([]*kafkaevent.Record, []types.Message) {
	t.Helper()
	ctx := context.Background()
	var out []*kafkaevent.Record
	var msgs []types.Message
	empty := 0
	for empty < 2 {
		in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}}
		//lint:ignore SA1019 local-aws-sqs 2.0.2 reads system attribute names only from this field
		in.AttributeNames = []types.QueueAttributeName{types.QueueAttributeNameAll}
		res, err := c.ReceiveMessage(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		del := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL)}
		for i, m := range res.Messages {
			r, err := ReadRecord(new(dispMessage(m)))
			if err != nil {
				t.Fatalf("message %s: %v", aws.ToString(m.MessageId), err)
			}
			out = append(out, r)
			msgs = append(msgs, m)
			del.Entries = append(del.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if dres, err := c.DeleteMessageBatch(ctx, del); err != nil || len(dres.Failed) > 0 {
			t.Fatalf("delete: %v %+v", err, dres)
		}
	}
	return out, msgs
}

// logBuffer collects JSON log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) }

// topicLog is a Kafka topic in memory: records per partition, offsets from 0.
type topicLog struct {
	topic string
	parts [][]kafkaevent.Record
}

// newTopicLog makes n records over parts partitions and keys keys; a key always goes to the
// same partition, as Kafka's partitioner puts it. Values are JSON text, a few are binary.
func newTopicLog(topic string, n, parts, keys int, seed uint64) *topicLog {
	rng := rand.New(rand.NewPCG(seed, 1))
	l := &topicLog{topic: topic, parts: make([][]kafkaevent.Record, parts)}
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond).UTC()
	for i := 0; i < n; i++ {
		k := rng.IntN(keys)
		p := k % parts
		key := fmt.Sprintf("key-%03d", k)
		r := kafkaevent.Record{Topic: topic, Partition: int32(p), Offset: int64(len(l.parts[p])), Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			TimestampType: kafkaevent.CreateTime, Key: []byte(key),
			Value:   []byte(fmt.Sprintf(`{"key":%q,"seq":%d,"pad":%q}`, key, i, strings.Repeat("x", rng.IntN(200)))),
			Headers: []kafkaevent.Header{{Key: "n", Value: []byte(fmt.Sprint(i))}}}
		if i%97 == 0 {
			r.Value = []byte{0, 1, 2, 0xff, byte(i)}
		}
		l.parts[p] = append(l.parts[p], r)
	}
	return l
}

// esm replays the log through h the way the Kafka event source mapping does with
// ReportBatchItemFailures: each invocation gets up to perPart records of every partition from
// its committed offset; a reported partition resumes from its lowest reported offset, the
// others are committed past what was delivered. It stops when everything is committed, and
// returns the number of invocations.
func (l *topicLog) esm(t *testing.T, perPart, maxRounds int, h func(context.Context, *kafkaevent.Event) (batch.KafkaResponse, error)) int {
	t.Helper()
	committed := make([]int64, len(l.parts))
	for round := 1; ; round++ {
		if round > maxRounds {
			t.Fatalf("not committed after %d invocations: %v", maxRounds, committed)
		}
		ev := &kafkaevent.Event{Source: kafkaevent.SourceMSK, SourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/c/1"}
		for p := range l.parts {
			from := committed[p]
			to := min(from+int64(perPart), int64(len(l.parts[p])))
			if from == to {
				continue
			}
			ev.Partitions = append(ev.Partitions, kafkaevent.Partition{Topic: l.topic, Number: int32(p), Records: append([]kafkaevent.Record(nil), l.parts[p][from:to]...)})
		}
		if len(ev.Partitions) == 0 {
			return round - 1
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := h(ctx, ev)
		cancel()
		if err != nil {
			// The whole batch comes back.
			t.Logf("invocation %d failed whole: %v", round, err)
			continue
		}
		lowest := map[string]int64{}
		for _, f := range resp.BatchItemFailures {
			id := f.ItemIdentifier
			if o, ok := lowest[id.Partition]; !ok || id.Offset < o {
				lowest[id.Partition] = id.Offset
			}
		}
		for _, p := range ev.Partitions {
			if o, ok := lowest[p.ID()]; ok {
				if o < p.Records[0].Offset || o > p.Records[len(p.Records)-1].Offset {
					t.Fatalf("invocation %d reported offset %d of %s, not in the batch", round, o, p.ID())
				}
				committed[p.Number] = o
				continue
			}
			committed[p.Number] = p.Records[len(p.Records)-1].Offset + 1
		}
	}
}

// keyOrder returns, per key, the offsets in the order given.
func keyOrder(recs []*kafkaevent.Record) map[string][]int64 {
	out := map[string][]int64{}
	for _, r := range recs {
		out[string(r.Key)] = append(out[string(r.Key)], r.Offset)
	}
	return out
}

func (l *topicLog) keyOrder() map[string][]int64 {
	var all []*kafkaevent.Record
	for p := range l.parts {
		for i := range l.parts[p] {
			all = append(all, &l.parts[p][i])
		}
	}
	return keyOrder(all)
}

// sameRecords checks that got holds every record of the log exactly as it was, once at
// least (or exactly once when once is set), and nothing else.
func (l *topicLog) sameRecords(t *testing.T, got []*kafkaevent.Record, once bool) (dups int) {
	t.Helper()
	seen := map[[2]int64]int{}
	for _, r := range got {
		if r.Topic != l.topic || int(r.Partition) >= len(l.parts) || r.Offset >= int64(len(l.parts[r.Partition])) {
			t.Fatalf("a message for a record not in the log: %s-%d@%d", r.Topic, r.Partition, r.Offset)
		}
		want := &l.parts[r.Partition][r.Offset]
		if !bytes.Equal(r.Value, want.Value) || !bytes.Equal(r.Key, want.Key) || !r.Timestamp.Equal(want.Timestamp) || len(r.Headers) != 1 {
			t.Fatalf("record %s-%d@%d changed on the way", r.Topic, r.Partition, r.Offset)
		}
		seen[[2]int64{int64(r.Partition), r.Offset}]++
	}
	missing := 0
	for p := range l.parts {
		for o := range l.parts[p] {
			n := seen[[2]int64{int64(p), int64(o)}]
			if n == 0 {
				missing++
				if missing <= 5 {
					t.Errorf("record %s-%d@%d is not in the queue", l.topic, p, o)
				}
			}
			dups += max(n-1, 0)
		}
	}
	if missing > 0 {
		t.Fatalf("%d records are not in the queue", missing)
	}
	if once && dups > 0 {
		t.Errorf("%d duplicate messages, want none", dups)
	}
	return dups
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
