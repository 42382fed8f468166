package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/lambdalog"
)

// lineBuffer collects the JSON lines of a lambdalog logger shared by concurrent records.
type lineBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines decodes every line written.
func (b *lineBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// correlationLogger is a lambdalog logger (Powertools' keys) writing JSON into a buffer.
func correlationLogger() (*slog.Logger, *lineBuffer) {
	b := &lineBuffer{}
	next := slog.NewJSONHandler(b, &slog.HandlerOptions{Level: lambdalog.LevelTrace, ReplaceAttr: lambdalog.ReplaceAttr})
	return slog.New(lambdalog.NewHandler(next, lambdalog.WithService("corr"))), b
}

// correlationHooks logs, through the same logger, at each record's start and end and at each
// failure, with the context batch gives the hook.
type correlationHooks struct{ log *slog.Logger }

func (h correlationHooks) OnRecordStart(ctx context.Context, it *batch.Item) context.Context {
	h.log.InfoContext(ctx, "hook start", "who", who(it))
	return ctx
}

func (h correlationHooks) OnRecordEnd(ctx context.Context, it *batch.Item, err error) {
	h.log.InfoContext(ctx, "hook end", "who", who(it))
}

func (h correlationHooks) OnFailure(ctx context.Context, f *batch.Failure) {
	h.log.InfoContext(ctx, "hook failure", "who", who(&f.Item))
}

// who names a record in the test's lines: "topic-partition/offset" or the message ID.
func who(it *batch.Item) string {
	if r := it.Kafka; r != nil {
		return fmt.Sprintf("%s/%d", r.PartitionID(), r.Offset)
	}
	return it.SQS.MessageId
}

// checkCorrelation asserts that every line naming a record ("who") carries that record's own
// correlation ID (want; "" for none, then no key at all), and that each of the messages in
// each is seen for every record in it.
func checkCorrelation(t *testing.T, lines []map[string]any, want map[string]string, each map[string][]string) {
	t.Helper()
	seen := map[string]int{}
	for _, l := range lines {
		w, ok := l["who"].(string)
		if !ok {
			continue
		}
		msg, _ := l["message"].(string)
		seen[w+" "+msg]++
		exp, known := want[w]
		if !known {
			t.Errorf("a line for a record the test did not make: %v", l)
			continue
		}
		got, has := l["correlation_id"]
		switch {
		case exp == "" && has:
			t.Errorf("%s %q: correlation_id %v, want none", w, msg, got)
		case exp != "" && got != exp:
			t.Errorf("%s %q: correlation_id %v, want %q", w, msg, got, exp)
		}
	}
	for msg, whos := range each {
		for _, w := range whos {
			if seen[w+" "+msg] == 0 {
				t.Errorf("no %q line for %s", msg, w)
			}
		}
	}
}

// Every line of a Kafka record's handling, logged through lambdalog by its handler and its
// hooks, and batch's own "record failed" line, carries that record's correlation ID from the
// header WithCorrelationIDFrom names, with partitions handled at once; a record without the
// header has no correlation_id; a long header is cut as lambdalog cuts it.
func TestCorrelationIDKafka(t *testing.T) {
	log, buf := correlationLogger()
	const header = "x-correlation-id"
	long := strings.Repeat("L", lambdalog.MaxCorrelationIDBytes+50)
	ev := &kafkaevent.Event{}
	want := map[string]string{}
	var all, failing []string
	for p := range 4 {
		part := kafkaevent.Partition{Topic: "orders", Number: int32(p)}
		for o := range 5 {
			r := kafkaevent.Record{Topic: "orders", Partition: int32(p), Offset: int64(o), Value: []byte("v")}
			w := fmt.Sprintf("orders-%d/%d", p, o)
			switch {
			case p == 1 && o == 2: // no header
				r.Headers = []kafkaevent.Header{{Key: "other", Value: []byte("x")}}
				want[w] = ""
			case p == 2 && o == 0: // too long: cut
				r.Headers = []kafkaevent.Header{{Key: header, Value: []byte(long)}}
				want[w] = long[:lambdalog.MaxCorrelationIDBytes]
			case p == 3 && o == 1: // empty: none
				r.Headers = []kafkaevent.Header{{Key: header, Value: []byte{}}}
				want[w] = ""
			default:
				id := fmt.Sprintf("corr-%d-%d", p, o)
				r.Headers = []kafkaevent.Header{{Key: "before", Value: []byte("b")}, {Key: header, Value: []byte(id)}}
				want[w] = id
			}
			if o < 4 || p != 0 { // partition 0's last record fails, so every record starts
				all = append(all, w)
			}
			part.Records = append(part.Records, r)
		}
		ev.Partitions = append(ev.Partitions, part)
	}
	failing = append(failing, "orders-0/4")
	hooks := correlationHooks{log}
	resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		w := fmt.Sprintf("%s/%d", r.PartitionID(), r.Offset)
		log.InfoContext(ctx, "handling", "who", w)
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond) // let partitions interleave
		log.WarnContext(ctx, "handled", "who", w)
		if w == "orders-0/4" {
			return batch.Permanent(errors.New("boom"))
		}
		return nil
	}, batch.WithCorrelationIDFrom(header), batch.WithConcurrency(4), batch.WithLogger(log), batch.WithHooks(hooks))
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("response %+v, %v; want one failure", resp, err)
	}
	all = append(all, failing...)
	lines := buf.lines(t)
	checkCorrelation(t, lines, want, map[string][]string{
		"handling": all, "handled": all, "hook start": all, "hook end": all,
		"hook failure": failing,
	})
	// batch's own line for the failed record: it names the record by partition and offset.
	var failed int
	for _, l := range lines {
		switch l["message"] {
		case "record failed":
			failed++
			if l["partition"] != "orders-0" || l["offset"] != 4.0 || l["correlation_id"] != "corr-0-4" {
				t.Errorf("record failed line: %v; want orders-0, offset 4, correlation_id corr-0-4", l)
			}
		case "batch processed":
			if _, has := l["correlation_id"]; has {
				t.Errorf("the batch's summary line carries a record's correlation_id: %v", l)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d record failed lines, want 1", failed)
	}
}

// The same for SQS messages of a standard queue, handled at once: the correlation ID is the
// message attribute's string value; a message without it, or with a binary one, has none;
// with WithSQSKafkaRecord, a message without the attribute has the header of the Kafka record
// it carries.
func TestCorrelationIDSQS(t *testing.T) {
	const attr = "correlation_id"
	str := func(s string) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "String", StringValue: &s}
	}
	ev := &events.SQSEvent{}
	want := map[string]string{}
	var all []string
	for i := range 12 {
		m := events.SQSMessage{MessageId: fmt.Sprintf("m%02d", i), Body: "b",
			EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:orders"}
		switch i {
		case 3: // none
			want[m.MessageId] = ""
		case 5: // binary: no string value
			m.MessageAttributes = map[string]events.SQSMessageAttribute{attr: {DataType: "Binary", BinaryValue: []byte("bin")}}
			want[m.MessageId] = ""
		case 7: // the record it carries has the header (read only with WithSQSKafkaRecord)
			m.Body = "carried-7"
			want[m.MessageId] = ""
		default:
			id := fmt.Sprintf("sqs-corr-%d", i)
			m.MessageAttributes = map[string]events.SQSMessageAttribute{attr: str(id), "other": str("o")}
			want[m.MessageId] = id
		}
		all = append(all, m.MessageId)
		ev.Records = append(ev.Records, m)
	}
	handler := func(log *slog.Logger) batch.MessageFunc {
		return func(ctx context.Context, m *events.SQSMessage) error {
			log.InfoContext(ctx, "handling", "who", m.MessageId)
			time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
			if m.MessageId == "m09" {
				return batch.Permanent(errors.New("boom"))
			}
			return nil
		}
	}

	log, buf := correlationLogger()
	resp, err := batch.ProcessSQS(context.Background(), ev, handler(log),
		batch.WithCorrelationIDFrom(attr), batch.WithLogger(log), batch.WithHooks(correlationHooks{log}))
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m09" {
		t.Fatalf("response %+v, %v; want m09 failed", resp, err)
	}
	lines := buf.lines(t)
	checkCorrelation(t, lines, want, map[string][]string{
		"handling": all, "hook start": all, "hook end": all, "hook failure": {"m09"},
	})
	var failed int
	for _, l := range lines {
		if l["message"] == "record failed" {
			failed++
			if l["messageId"] != "m09" || l["correlation_id"] != "sqs-corr-9" {
				t.Errorf("record failed line: %v; want m09 with correlation_id sqs-corr-9", l)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d record failed lines, want 1", failed)
	}

	// With WithSQSKafkaRecord: the attribute first, else the carried record's header.
	decode := func(m *events.SQSMessage) (*kafkaevent.Record, error) {
		r := &kafkaevent.Record{Topic: "orders"}
		if strings.HasPrefix(m.Body, "carried-") {
			r.Headers = []kafkaevent.Header{{Key: attr, Value: []byte("kafka-" + m.Body)}}
		}
		return r, nil
	}
	want["m07"] = "kafka-carried-7"
	log, buf = correlationLogger()
	if _, err := batch.ProcessSQS(context.Background(), ev, handler(log), batch.WithCorrelationIDFrom(attr),
		batch.WithSQSKafkaRecord(decode), batch.WithLogger(log)); err != nil {
		t.Fatal(err)
	}
	checkCorrelation(t, buf.lines(t), want, map[string][]string{"handling": all})
}

// Without the option, no line carries a correlation_id, whatever the headers say.
func TestCorrelationIDOff(t *testing.T) {
	log, buf := correlationLogger()
	ev := &kafkaevent.Event{Partitions: []kafkaevent.Partition{{Topic: "t", Number: 0, Records: []kafkaevent.Record{
		{Topic: "t", Offset: 0, Headers: []kafkaevent.Header{{Key: "correlation_id", Value: []byte("c")}}},
	}}}}
	if _, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		log.InfoContext(ctx, "handling", "who", "t-0/0")
		return batch.Permanent(errors.New("boom"))
	}, batch.WithLogger(log)); err != nil {
		t.Fatal(err)
	}
	checkCorrelation(t, buf.lines(t), map[string]string{"t-0/0": ""}, map[string][]string{"handling": {"t-0/0"}})
	for _, l := range buf.lines(t) {
		if _, has := l["correlation_id"]; has {
			t.Errorf("line with correlation_id without the option: %v", l)
		}
	}
}

// An empty name is an invalid option, at the handler and at each call.
func TestCorrelationIDInvalid(t *testing.T) {
	_, err := batch.ProcessKafka(context.Background(), &kafkaevent.Event{}, func(context.Context, *kafkaevent.Record) error { return nil },
		batch.WithCorrelationIDFrom(""))
	var oe *toolkit.OptionError
	if !errors.As(err, &oe) || oe.Package != "batch" || oe.Option != `WithCorrelationIDFrom("")` || !errors.Is(err, toolkit.ErrInvalidOption) {
		t.Fatalf("WithCorrelationIDFrom(\"\"): %v, want a *toolkit.OptionError naming it", err)
	}
	h := batch.SQSHandler(func(context.Context, *events.SQSMessage) error { return nil }, batch.WithCorrelationIDFrom(""))
	if _, err := h(context.Background(), &events.SQSEvent{}); !errors.As(err, &oe) {
		t.Fatalf("SQSHandler with WithCorrelationIDFrom(\"\"): %v", err)
	}
}
