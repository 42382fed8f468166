package fanout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// wQuiet keeps batch's logs out of the test output.
func wQuiet(opts ...batch.Option) []batch.Option {
	return append([]batch.Option{batch.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
}

// wStore creates an idempotency table on a dynalite server.
func wStore(t testing.TB, srv *standin.DynamoDB, name string) *dynamodb.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := srv.Client()
	if err := standin.CreateTable(ctx, c, dynamodb.TableInput(name)); err != nil {
		t.Fatal(err)
	}
	s, err := dynamodb.NewStore(c, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wApplied records what a handler wApplied, safe for concurrent use.
type wApplied struct {
	mu   sync.Mutex
	recs []string
}

func (a *wApplied) add(r *kafkaevent.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recs = append(a.recs, fmt.Sprintf("%s-%d@%d:%s", r.Topic, r.Partition, r.Offset, r.Value))
}

func (a *wApplied) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.recs...)
}

// count is how many times each record was wApplied.
func (a *wApplied) count() map[string]int {
	n := map[string]int{}
	for _, s := range a.list() {
		n[s]++
	}
	return n
}

func wRec(topic string, p int32, o int64, key, value string) *kafkaevent.Record {
	return &kafkaevent.Record{Topic: topic, Partition: p, Offset: o, Key: []byte(key), Value: []byte(value),
		Timestamp: time.UnixMilli(1700000000000 + o).UTC(), TimestampType: kafkaevent.CreateTime}
}

// TestWorkerAppliesARecordDispatchedTwiceOnce sends a record to the queue twice (two message
// IDs, as when the Kafka event source mapping retries a dispatcher's batch) and delivers the
// batch twice: under WithIdempotency on DynamoDB (dynalite), the worker applies it once,
// where ProcessSQS keyed on message IDs applies it twice. With WithIdempotencyKey, two
// records with one business key are wApplied once.
func TestWorkerAppliesARecordDispatchedTwiceOnce(t *testing.T) {
	t.Parallel()
	sqsSrv, ddb := standintest.StartSQS(t), standintest.StartDynamoDB(t)
	q := newQueue(t, sqsSrv, "twice")
	r1, r2 := wRec("orders", 0, 5, "k1", `{"id":"A"}`), wRec("orders", 1, 9, "k2", `{"id":"B"}`)
	r3 := wRec("orders", 1, 10, "k2", `{"id":"B"}`) // B again, produced twice upstream
	for _, r := range []*kafkaevent.Record{r1, r1, r2, r3} {
		e, _, err := entry(r, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.send(t, e); err != nil {
			t.Fatal(err)
		}
	}
	ev := q.receive(t, 4)[0]
	if ev.Records[0].MessageId == ev.Records[1].MessageId {
		t.Fatal("the two copies share a message ID")
	}
	byValue := func(r *kafkaevent.Record) (string, error) { return "order-" + string(r.Value), nil }
	for _, tc := range []struct {
		name string
		opts []batch.Option
		want map[string]int
	}{
		{"record position", nil, map[string]int{"orders-0@5:" + `{"id":"A"}`: 1, "orders-1@9:" + `{"id":"B"}`: 1, "orders-1@10:" + `{"id":"B"}`: 1}},
		{"business key", []batch.Option{batch.WithIdempotencyKey(byValue)}, map[string]int{"orders-0@5:" + `{"id":"A"}`: 1, "orders-1@9:" + `{"id":"B"}`: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := wStore(t, ddb, "idem-"+strings.ReplaceAll(tc.name, " ", "-"))
			var a wApplied
			h := WorkerHandler(func(_ context.Context, r *kafkaevent.Record) error { a.add(r); return nil },
				wQuiet(append([]batch.Option{batch.WithIdempotency(store), batch.WithConcurrency(1)}, tc.opts...)...)...)
			for round := range 2 { // the batch, then the same batch again
				resp, err := h(context.Background(), ev)
				if err != nil || len(resp.BatchItemFailures) != 0 {
					t.Fatalf("round %d: %+v, %v", round, resp, err)
				}
			}
			if got := a.count(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("applied %v, want %v", got, tc.want)
			}
		})
	}
	// What the worker prevents: keyed on the message ID, the copy is wApplied again.
	store := wStore(t, ddb, "idem-message-id")
	var a wApplied
	_, err := batch.ProcessSQS(context.Background(), ev, func(_ context.Context, m *events.SQSMessage) error {
		r, err := ReadRecord(m)
		if err != nil {
			return err
		}
		a.add(r)
		return nil
	}, wQuiet(batch.WithIdempotency(store))...)
	if err != nil {
		t.Fatal(err)
	}
	if n := a.count()["orders-0@5:"+`{"id":"A"}`]; n != 2 {
		t.Errorf("keyed on message IDs, the record dispatched twice was applied %d times; the test expects 2", n)
	}
}

// wFIFORun drives a FIFO queue as the SQS event source mapping does: batches of up to 10
// messages, the partial-batch response's messages made visible again (as their visibility
// timeout would), the others deleted, until the queue is empty.
func wFIFORun(t *testing.T, q *queue, h batch.SQSFunc, total int) (invocations int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	done := 0
	for done < total {
		msgs, err := standintest.Receive(ctx, q.c, q.url, 10, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			t.Fatalf("the queue is empty after %d of %d messages", done, total)
		}
		ev := lambdaEvent(t, q.arn, msgs)
		resp, err := h(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		invocations++
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		var del []types.DeleteMessageBatchRequestEntry
		var back []types.ChangeMessageVisibilityBatchRequestEntry
		for i, m := range msgs {
			id := aws.String(fmt.Sprint(i))
			if failed[aws.ToString(m.MessageId)] {
				back = append(back, types.ChangeMessageVisibilityBatchRequestEntry{Id: id, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
			} else {
				del = append(del, types.DeleteMessageBatchRequestEntry{Id: id, ReceiptHandle: m.ReceiptHandle})
			}
		}
		if len(del) > 0 {
			out, err := q.c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.url), Entries: del})
			if err != nil || len(out.Failed) > 0 {
				t.Fatalf("delete: %v %+v", err, out)
			}
			done += len(del)
		}
		if len(back) > 0 {
			out, err := q.c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(q.url), Entries: back})
			if err != nil || len(out.Failed) > 0 {
				t.Fatalf("change visibility: %v %+v", err, out)
			}
		}
	}
	return invocations
}

// TestWorkerFIFOKeepsKeyOrder dispatches 120 records of 12 keys over 4 partitions to a FIFO
// queue (local-aws-sqs) and runs the worker on it as the event source mapping would, with
// failures: a record failing once makes it and the rest of its group come back, in order.
// Each key's records are wApplied once each, in their Kafka order.
func TestWorkerFIFOKeepsKeyOrder(t *testing.T) {
	t.Parallel()
	srv := standintest.StartSQS(t)
	q := newQueue(t, srv, "order.fifo")
	var recs []*kafkaevent.Record
	next := map[int32]int64{}
	for i := range 120 {
		key := fmt.Sprintf("key-%d", (i*7)%12)
		p := int32(len(key)+int((i*7)%12)) % 4 // a key always lands in one partition
		recs = append(recs, wRec("orders", p, next[p], key, fmt.Sprint(i)))
		next[p]++
	}
	q.sendBatch(t, recs)
	var mu sync.Mutex
	seen := map[string][]int64{} // key: offsets wApplied, in order
	failOnce := map[int64]bool{}
	for i, r := range recs {
		if i%17 == 3 {
			failOnce[r.Offset*10+int64(r.Partition)] = true
		}
	}
	h := WorkerHandler(func(_ context.Context, r *kafkaevent.Record) error {
		mu.Lock()
		defer mu.Unlock()
		if id := r.Offset*10 + int64(r.Partition); failOnce[id] {
			delete(failOnce, id)
			return errors.New("not now")
		}
		seen[string(r.Key)] = append(seen[string(r.Key)], r.Offset)
		return nil
	}, wQuiet(batch.WithRetry(1, 0))...)
	n := wFIFORun(t, q, h, len(recs))
	t.Logf("%d invocations", n)
	if len(failOnce) != 0 {
		t.Errorf("%d records never failed: the test did not test failures", len(failOnce))
	}
	want := map[string][]int64{}
	for _, r := range recs {
		want[string(r.Key)] = append(want[string(r.Key)], r.Offset)
	}
	for key, offs := range want {
		if fmt.Sprint(seen[key]) != fmt.Sprint(offs) {
			t.Errorf("%s: applied %v, want %v", key, seen[key], offs)
		}
	}
}

// wSink is a batch.Sink.
type wSink func(ctx context.Context, e *batch.Envelope) error

func (f wSink) Send(ctx context.Context, e *batch.Envelope) error { return f(ctx, e) }

// TestWorkerUndecodableMessage: a message that does not carry a record fails (reported, logged,
// given to the sink), with or without idempotency, and its handler is not called; the rest of
// the batch goes on.
func TestWorkerUndecodableMessage(t *testing.T) {
	t.Parallel()
	srv, ddb := standintest.StartSQS(t), standintest.StartDynamoDB(t)
	q := newQueue(t, srv, "mixed")
	good := wRec("orders", 0, 1, "k", "fine")
	e, _, err := entry(good, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.send(t, e); err != nil {
		t.Fatal(err)
	}
	if err := q.send(t, types.SendMessageBatchRequestEntry{MessageBody: aws.String("not from a dispatcher")}); err != nil {
		t.Fatal(err)
	}
	ev := q.receive(t, 2)[0]
	badID := ""
	for _, m := range ev.Records {
		if m.Body == "not from a dispatcher" {
			badID = m.MessageId
		}
	}
	for _, idem := range []bool{false, true} {
		var logs bytes.Buffer
		var sunk []*batch.Envelope
		var mu sync.Mutex
		opts := []batch.Option{
			batch.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
			batch.WithSink(wSink(func(_ context.Context, e *batch.Envelope) error {
				mu.Lock()
				defer mu.Unlock()
				sunk = append(sunk, e)
				return nil
			}), batch.SinkPermanent),
		}
		if idem {
			opts = append(opts, batch.WithIdempotency(wStore(t, ddb, fmt.Sprint("idem-", idem))))
		}
		var a wApplied
		resp, err := WorkerHandler(func(_ context.Context, r *kafkaevent.Record) error { a.add(r); return nil }, opts...)(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		// The sink took it, so it is not reported: the queue moves on, nothing is lost.
		if len(resp.BatchItemFailures) != 0 {
			t.Errorf("idempotency=%v: reported %+v; the sink took the message", idem, resp.BatchItemFailures)
		}
		if got := a.list(); len(got) != 1 || got[0] != "orders-0@1:fine" {
			t.Errorf("idempotency=%v: applied %v", idem, got)
		}
		if len(sunk) != 1 || sunk[0].Message == nil || sunk[0].Message.MessageId != badID || !sunk[0].Permanent ||
			!strings.Contains(sunk[0].Error, RecordAttribute) {
			t.Errorf("idempotency=%v: sink got %+v", idem, sunk)
		}
		if !strings.Contains(logs.String(), badID) || !strings.Contains(logs.String(), "record failed") {
			t.Errorf("idempotency=%v: no failure logged for %s: %s", idem, badID, logs.String())
		}
		// Without a sink it is reported.
		resp, err = WorkerHandler(func(context.Context, *kafkaevent.Record) error { return nil }, wQuiet()...)(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != badID {
			t.Errorf("idempotency=%v, no sink: %+v, %v; want %s reported", idem, resp, err, badID)
		}
	}
}

// TestWorkerInvoke: the worker is a lambda.Handler that reads the event's JSON and writes the
// partial-batch response.
func TestWorkerInvoke(t *testing.T) {
	e, _, err := entry(wRec("orders", 2, 7, "k", "boom"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := entryMessage(t, "msg-7", e)
	payload, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{m}})
	if err != nil {
		t.Fatal(err)
	}
	h := WorkerHandler(func(_ context.Context, r *kafkaevent.Record) error {
		return batch.Permanent(fmt.Errorf("cannot apply %s-%d@%d", r.Topic, r.Partition, r.Offset))
	}, wQuiet()...)
	out, err := h.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"batchItemFailures":[{"itemIdentifier":"msg-7"}]}` {
		t.Errorf("response %s", out)
	}
	if _, err := h.Invoke(context.Background(), []byte(`{"Records":[`)); err == nil {
		t.Error("a truncated event did not fail")
	}
	// An option given an invalid value fails the batch, as in batch.
	if _, err := WorkerHandler(func(context.Context, *kafkaevent.Record) error { return nil }, batch.WithConcurrency(0))(context.Background(), &events.SQSEvent{}); !errors.Is(err, toolkit.ErrInvalidOption) {
		t.Errorf("WithConcurrency(0): %v", err)
	}
}

// BenchmarkWorkerInvoke is a worker's whole invocation on an event of 1,000 messages, each a
// record with a 200-byte JSON value, a key and a header, per message: WorkerHandler's
// Invoke, beside the obvious alternative, the record as JSON in the body and the event
// decoded by encoding/json (what lambda.Start does for a typed handler), with the same
// handler behind batch.ProcessSQS.
//
//	go test -run '^$' -bench BenchmarkWorkerInvoke -count 8 ./fanout/ | tee /tmp/worker.txt
//	GOWORK=off go tool -modfile=tools/go.mod benchstat -col /path /tmp/worker.txt
func BenchmarkWorkerInvoke(b *testing.B) {
	const n = 1000
	value := bytes.Repeat([]byte("x"), 180)
	value = append(append([]byte(`{"v":"`), value...), `","n":1}`...)
	var msgs, naive []events.SQSMessage
	for i := range n {
		r := wRec("orders", int32(i%8), int64(i), fmt.Sprint("key-", i%50), string(value))
		r.Headers = []kafkaevent.Header{{Key: "source", Value: []byte("web")}}
		e, _, err := entry(r, false, nil)
		if err != nil {
			b.Fatal(err)
		}
		msgs = append(msgs, entryMessage(b, fmt.Sprint("m-", i), e))
		nr := naiveRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
			TimestampType: r.TimestampType, Key: r.Key, Value: r.Value}
		nr.Headers = append(nr.Headers, struct {
			Key   string `json:"key"`
			Value []byte `json:"value"`
		}{"source", []byte("web")})
		body, err := json.Marshal(nr)
		if err != nil {
			b.Fatal(err)
		}
		m := msgs[i]
		m.Body, m.MessageAttributes = string(body), nil
		naive = append(naive, m)
	}
	payload, err := json.Marshal(events.SQSEvent{Records: msgs})
	if err != nil {
		b.Fatal(err)
	}
	naivePayload, err := json.Marshal(events.SQSEvent{Records: naive})
	if err != nil {
		b.Fatal(err)
	}
	h := func(_ context.Context, r *kafkaevent.Record) error {
		if len(r.Value) != len(value) {
			return errors.New("wrong value")
		}
		return nil
	}
	opts := wQuiet(batch.WithConcurrency(1))
	want := `{"batchItemFailures":[]}`
	b.Run("path=toolkit", func(b *testing.B) {
		w := WorkerHandler(h, opts...)
		b.ReportAllocs()
		for b.Loop() {
			out, err := w.Invoke(context.Background(), payload)
			if err != nil || string(out) != want {
				b.Fatalf("%s, %v", out, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
	})
	b.Run("path=json-body", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var ev events.SQSEvent
			if err := json.Unmarshal(naivePayload, &ev); err != nil {
				b.Fatal(err)
			}
			resp, err := batch.ProcessSQS(context.Background(), &ev, func(ctx context.Context, m *events.SQSMessage) error {
				var nr naiveRecord
				if err := json.Unmarshal([]byte(m.Body), &nr); err != nil {
					return batch.Permanent(err)
				}
				r := &kafkaevent.Record{Topic: nr.Topic, Partition: nr.Partition, Offset: nr.Offset, Timestamp: time.UnixMilli(nr.Timestamp).UTC(),
					TimestampType: nr.TimestampType, Key: nr.Key, Value: nr.Value}
				for _, h := range nr.Headers {
					r.Headers = append(r.Headers, kafkaevent.Header{Key: h.Key, Value: h.Value})
				}
				return h(ctx, r)
			}, opts...)
			if err != nil {
				b.Fatal(err)
			}
			out, err := json.Marshal(resp)
			if err != nil || string(out) != want {
				b.Fatalf("%s, %v", out, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
	})
}

// A worker's record-age metrics count from the Kafka record's timestamp, across the hop, not
// from when SQS received the message: the latency the fan-out adds shows. Before, they counted
// from SentTimestamp.
func TestWorkerRecordAge(t *testing.T) {
	r := wRec("orders", 0, 7, "k", `{"id":7}`)
	r.Timestamp = time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	e, _, err := entry(r, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := entryMessage(t, "m-1", e)
	m.Attributes = map[string]string{"SentTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10)}
	var emf bytes.Buffer
	w := WorkerHandler(func(context.Context, *kafkaevent.Record) error { return nil }, wQuiet(batch.WithMetrics(&emf))...)
	if _, err := w(context.Background(), &events.SQSEvent{Records: []events.SQSMessage{m}}); err != nil {
		t.Fatal(err)
	}
	var doc struct{ OldestRecordAge, NewestRecordAge [1]float64 } // one value each, in an array
	if err := json.Unmarshal(emf.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %s", err, emf.Bytes())
	}
	if age := doc.OldestRecordAge[0]; age < 3_600_000 || age > 3_660_000 {
		t.Errorf("OldestRecordAge = %v ms, want about an hour", age)
	}
}
