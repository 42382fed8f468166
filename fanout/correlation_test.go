package fanout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/lambdalog"
	"github.com/kafkalambda/toolkit/limits"
)

// jsonLines collects the lines of a lambdalog logger.
type jsonLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *jsonLines) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *jsonLines) logger() *slog.Logger {
	return slog.New(lambdalog.NewHandler(slog.NewJSONHandler(b, &slog.HandlerOptions{ReplaceAttr: lambdalog.ReplaceAttr}), lambdalog.WithService("corr-test")))
}

// messages returns the lines whose message is msg.
func (b *jsonLines) messages(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// A record's correlation ID goes from its Kafka header through the dispatcher, a real queue
// (local-aws-sqs) and the worker: with batch.WithCorrelationIDFrom on both sides, the
// dispatcher's line for a record it could not send, and every line of the worker's handling of
// a message (its handler's own lines, logged through lambdalog with the handler's context,
// and batch's "record failed"), carry the record's correlation_id. The ID travels in the
// record's headers (kafka.headers): the message has no attribute of its own for it.
func TestCorrelationIDThroughTheQueue(t *testing.T) {
	t.Parallel()
	srv, client := dispServer(t, nil)
	q := dispQueue(t, srv, "correlated")
	const header = "x-correlation-id"
	withID := func(r kafkaevent.Record, id string) kafkaevent.Record {
		r.Headers = append(r.Headers, kafkaevent.Header{Key: "other", Value: []byte("x")}, kafkaevent.Header{Key: header, Value: []byte(id)})
		return r
	}
	ev := event(
		withID(rec(0, 0, "k", "first"), "order-1"),
		withID(rec(0, 1, "k", "second"), "order-2"),
		rec(0, 2, "k", "third"),                                                             // no correlation ID
		withID(rec(1, 0, "k", strings.Repeat("x", limits.MaxSQSMessageBytes)), "order-big"), // too large to send
	)
	var dlogs, wlogs jsonLines
	d := dispatcher(t, client, q, WithBatchOptions(batch.WithCorrelationIDFrom(header), batch.WithLogger(dlogs.logger())))
	dispatch := lambdalog.Wrap(func(ctx context.Context, ev *kafkaevent.Event) (batch.KafkaResponse, error) {
		return d.Dispatch(ctx, ev)
	})
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "dispatch-1"})
	resp, err := dispatch(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier.Partition != "orders-1" {
		t.Fatalf("dispatch: %+v, %v", resp, err)
	}
	// The dispatcher's line for the record it could not send carries the record's ID; its
	// summary line, which speaks for the whole batch, none.
	if l := dlogs.messages(t, "record not dispatched"); len(l) != 1 || l[0]["correlation_id"] != "order-big" || l[0]["function_request_id"] != "dispatch-1" {
		t.Errorf("dispatcher's record line: %v", l)
	}
	if l := dlogs.messages(t, "records dispatched"); len(l) != 1 || l[0]["correlation_id"] != nil {
		t.Errorf("dispatcher's summary line: %v", l)
	}

	_, msgs := drainAll(t, client, q)
	if len(msgs) != 3 {
		t.Fatalf("%d messages on the queue, want 3", len(msgs))
	}
	sqsEv := &events.SQSEvent{}
	for _, m := range msgs {
		if _, ok := m.MessageAttributes[header]; ok {
			t.Errorf("message %s has an attribute %q: the ID travels in kafka.headers", *m.MessageId, header)
		}
		sqsEv.Records = append(sqsEv.Records, dispMessage(m))
	}
	wlog := wlogs.logger()
	w := WorkerHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		wlog.InfoContext(ctx, "applied", slog.Int64("offset", r.Offset))
		if r.Offset == 1 {
			return batch.Permanent(errors.New("refused"))
		}
		return nil
	}, batch.WithCorrelationIDFrom(header), batch.WithLogger(wlog))
	work := lambdalog.Wrap(func(ctx context.Context, ev *events.SQSEvent) (events.SQSEventResponse, error) { return w(ctx, ev) })
	wctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "work-1"})
	if wresp, err := work(wctx, sqsEv); err != nil || len(wresp.BatchItemFailures) != 1 {
		t.Fatalf("worker: %+v, %v", wresp, err)
	}
	want := map[float64]any{0: "order-1", 1: "order-2", 2: nil}
	applied := wlogs.messages(t, "applied")
	if len(applied) != 3 {
		t.Fatalf("%d applied lines, want 3:\n%s", len(applied), wlogs.buf.String())
	}
	for _, l := range applied {
		if id, ok := want[l["offset"].(float64)]; !ok || l["correlation_id"] != id || l["function_request_id"] != "work-1" {
			t.Errorf("worker line %v: want correlation_id %v", l, id)
		}
	}
	if l := wlogs.messages(t, "record failed"); len(l) != 1 || l[0]["correlation_id"] != "order-2" {
		t.Errorf("worker's record failed line: %v", l)
	}
}
