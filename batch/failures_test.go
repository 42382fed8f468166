package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// failureLog captures the JSON lines of a batch's logger.
type failureLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *failureLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *failureLog) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// lines returns the logged entries with message msg.
func (l *failureLog) lines(t testing.TB, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, line)
		}
		if e["msg"] == msg {
			out = append(out, e)
		}
	}
	return out
}

func (l *failureLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// failureHook records the failures it is given, and counts the other hook calls it gets: it
// implements FailureHook only.
type failureHook struct {
	mu  sync.Mutex
	got []batch.Failure
}

func (h *failureHook) OnFailure(ctx context.Context, f *batch.Failure) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, *f)
}

// byWhere returns the failures keyed by "partition@offset" or the message ID.
func (h *failureHook) byWhere() map[string]batch.Failure {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := map[string]batch.Failure{}
	for _, f := range h.got {
		if f.Kafka != nil {
			m[fmt.Sprintf("%s@%d", f.Group, f.Kafka.Offset)] = f
		} else {
			m[f.SQS.MessageId] = f
		}
	}
	return m
}

// lineWhere keys log entries as byWhere keys failures.
func lineWhere(e map[string]any) string {
	if e["source"] == "kafka" {
		return fmt.Sprintf("%v@%v", e["partition"], e["offset"])
	}
	return fmt.Sprint(e["messageId"])
}

// tooComplexValue is a 181-byte JSON object with arrays nested 65 deep around an object whose
// two fields a pattern names: deeper than the filter keeps array positions, so it cannot tell
// whether the two fields sit in the same element.
func tooComplexValue(t testing.TB) []byte {
	t.Helper()
	inner := strings.Repeat("[", 65) + `{"x":1,"y":2}` + strings.Repeat("]", 65)
	v := fmt.Sprintf(`{"pad":"","a":%s}`, inner)
	v = strings.Replace(v, `"pad":""`, `"pad":"`+strings.Repeat("p", 181-len(v))+`"`, 1)
	if len(v) != 181 {
		t.Fatalf("value is %d bytes", len(v))
	}
	return []byte(v)
}

// A record the filter cannot decide on is never acknowledged as filtered out: it fails, as a
// permanent failure, is reported (or goes to the sink), logged and given to the failure hooks.
func TestFilterCannotDecideKafka(t *testing.T) {
	crit, err := filter.ParseCriteria([]byte(`{"Filters":[{"Pattern":"{\"value\":{\"a\":{\"x\":[1],\"y\":[2]}}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	value := tooComplexValue(t)
	probe := &kafkaevent.Record{Value: value}
	if pass, err := crit.MatchKafka(probe); !errors.Is(err, filter.ErrTooComplex) {
		t.Fatalf("MatchKafka = %v, %v; want filter.ErrTooComplex", pass, err)
	}
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte(`{"a":{"x":1,"y":2}}`)).
		Add("orders", 0, value).
		Add("orders", 0, []byte(`{"a":{"x":1,"y":2}}`)).
		Add("orders", 1, []byte(`{"a":{"x":0}}`)).
		Event()
	h := func(ctx context.Context, r *kafkaevent.Record) error {
		if r.Partition == 0 && r.Offset == 1 {
			t.Errorf("handler called for the record the filter cannot decide on")
		}
		return nil
	}

	t.Run("reported", func(t *testing.T) {
		var logs failureLog
		hook := &failureHook{}
		resp, err := batch.ProcessKafka(context.Background(), ev, h,
			batch.WithFilter(crit), batch.WithLogger(logs.logger()), batch.WithHooks(hook))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := kafkaJSON(t, resp), wantKafka("orders-0@1", "orders-0@2"); got != want {
			t.Errorf("response %s, want %s", got, want)
		}
		sum := logs.lines(t, "batch processed")
		if len(sum) != 1 || sum[0]["filtered"] != float64(1) || sum[0]["failed"] != float64(1) || sum[0]["reported"] != float64(2) {
			t.Errorf("summary %v, want filtered=1 (orders-1@0), failed=1 (orders-0@1) and reported=2", sum)
		}
		lines := logs.lines(t, "record failed")
		if len(lines) != 1 || lineWhere(lines[0]) != "orders-0@1" || lines[0]["reported"] != float64(2) ||
			lines[0]["permanent"] != true || !strings.Contains(fmt.Sprint(lines[0]["error"]), "too complex") {
			t.Errorf("failure lines %v", lines)
		}
		f, ok := hook.byWhere()["orders-0@1"]
		if len(hook.got) != 1 || !ok || !errors.Is(f.Err, filter.ErrTooComplex) || f.Attempts != 0 || !f.Permanent {
			t.Errorf("hook got %+v", hook.got)
		}
	})

	t.Run("sent to the sink", func(t *testing.T) {
		var logs failureLog
		sink := &memSink{}
		resp, err := batch.ProcessKafka(context.Background(), ev, h, batch.WithFilter(crit),
			batch.WithLogger(logs.logger()), batch.WithSink(sink, batch.SinkPermanent))
		if err != nil {
			t.Fatal(err)
		}
		if got := kafkaJSON(t, resp); got != wantKafka() {
			t.Errorf("response %s, want full success", got)
		}
		if len(sink.got) != 1 || sink.got[0].Offset != 1 || !strings.Contains(sink.got[0].Error, "too complex") {
			t.Errorf("sink got %+v", sink.got)
		}
		lines := logs.lines(t, "record failed")
		if len(lines) != 1 || lines[0]["sentToSink"] != true || lines[0]["reported"] != float64(0) {
			t.Errorf("failure lines %v", lines)
		}
	})
}

func TestFilterCannotDecideSQS(t *testing.T) {
	crit, err := filter.ParseCriteria([]byte(`{"Filters":[{"Pattern":"{\"body\":{\"a\":{\"x\":[1],\"y\":[2]}}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	value := tooComplexValue(t)
	for _, arn := range []string{standardARN, fifoARN} {
		t.Run(arn[strings.LastIndexByte(arn, ':')+1:], func(t *testing.T) {
			group := ""
			if arn == fifoARN {
				group = "g"
			}
			ev := &events.SQSEvent{Records: []events.SQSMessage{
				sqsMessage(arn, "m-0", group, `{"a":{"x":1,"y":2}}`),
				sqsMessage(arn, "m-1", group, string(value)),
				sqsMessage(arn, "m-2", group, `{"a":{"x":1,"y":2}}`),
				sqsMessage(arn, "m-3", group, `{"a":{"x":0}}`),
			}}
			if pass, err := crit.MatchSQS(&ev.Records[1]); !errors.Is(err, filter.ErrTooComplex) {
				t.Fatalf("MatchSQS = %v, %v; want filter.ErrTooComplex", pass, err)
			}
			var logs failureLog
			hook := &failureHook{}
			var called []string
			var mu sync.Mutex
			resp, err := batch.ProcessSQS(context.Background(), ev, func(ctx context.Context, m *events.SQSMessage) error {
				mu.Lock()
				called = append(called, m.MessageId)
				mu.Unlock()
				return nil
			}, batch.WithFilter(crit), batch.WithLogger(logs.logger()), batch.WithHooks(hook))
			if err != nil {
				t.Fatal(err)
			}
			want, reported := wantSQS("m-1"), 1.0
			if group != "" { // the rest of the group comes back with it, in order
				want, reported = wantSQS("m-1", "m-2", "m-3"), 3
			}
			if got := sqsJSON(t, resp); got != want {
				t.Errorf("response %s, want %s", got, want)
			}
			if slices.Contains(called, "m-1") {
				t.Errorf("handler called for the message the filter cannot decide on")
			}
			lines := logs.lines(t, "record failed")
			if len(lines) != 1 || lines[0]["messageId"] != "m-1" || lines[0]["reported"] != reported ||
				!strings.Contains(fmt.Sprint(lines[0]["error"]), "too complex") {
				t.Errorf("failure lines %v", lines)
			}
			if f, ok := hook.byWhere()["m-1"]; len(hook.got) != 1 || !ok || !errors.Is(f.Err, filter.ErrTooComplex) {
				t.Errorf("hook got %+v", hook.got)
			}
		})
	}
}

// memSink keeps the envelopes it is sent, or refuses them all with err.
type memSink struct {
	mu  sync.Mutex
	err error
	got []*batch.Envelope
}

func (s *memSink) Send(ctx context.Context, e *batch.Envelope) error {
	if s.err != nil {
		return s.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, e)
	return nil
}

// Every failed record is logged once, with where it is, what happened and the error, never its
// key or value; records reported only because an earlier one of their partition failed are
// counted in that line; each failure hook is called once per failed record.
// failureWant is what the failure line and hook call of a record should say.
type failureWant struct {
	attempts   int
	permanent  bool
	sentToSink bool
	reported   int
	err        string
}

// checkFailureLines checks each "record failed" line of TestFailureLogKafka against wants.
func checkFailureLines(t *testing.T, lines []map[string]any, wants map[string]failureWant) {
	t.Helper()
	for _, e := range lines {
		where := lineWhere(e)
		w, ok := wants[where]
		if !ok {
			t.Errorf("failure line for %s: %v", where, e)
			continue
		}
		if e["level"] != "ERROR" || e["source"] != "kafka" || e["attempts"] != float64(w.attempts) || e["permanent"] != w.permanent ||
			e["sentToSink"] != w.sentToSink || e["reported"] != float64(w.reported) || !strings.Contains(fmt.Sprint(e["error"]), w.err) {
			t.Errorf("%s: line %v, want %+v", where, e, w)
		}
		_, hasStack := e["stack"]
		if hasStack != (where == "orders-1@2") || (hasStack && !strings.Contains(fmt.Sprint(e["stack"]), "failures_test.go")) {
			t.Errorf("%s: stack %q", where, e["stack"])
		}
		_, hasSinkErr := e["sinkError"]
		if hasSinkErr != (where == "orders-4@3") {
			t.Errorf("%s: sinkError %q", where, e["sinkError"])
		}
	}
}

func TestFailureLogKafka(t *testing.T) {
	const secret = "SECRET-PAYLOAD"
	b := kafkaeventtest.NewBuilder()
	for p := int32(0); p < 6; p++ {
		for i := int64(0); i < 4; i++ {
			b.Add("orders", p, fmt.Appendf(nil, `{"v":"%s-%d-%d"}`, secret, p, i), kafkaeventtest.WithKey([]byte(secret+"-key")))
		}
	}
	ev := badValue(t, b.Event(), "orders", 2, 1) // a decode error
	errSink := errors.New("sink unavailable")
	h := func(ctx context.Context, r *kafkaevent.Record) error {
		switch {
		case r.Partition == 0 && r.Offset == 1:
			return fmt.Errorf("save %s: %w", rid(r), errTransient) // after its retries
		case r.Partition == 1 && r.Offset == 2:
			panic("boom")
		case r.Partition == 3 && r.Offset == 0:
			return batch.Permanent(errors.New("refused")) // to the sink, which takes it
		case r.Partition == 4 && r.Offset == 3:
			return batch.Permanent(errSink) // to the sink, which refuses it
		}
		return nil
	}
	var logs failureLog
	hook := &failureHook{}
	sink := &memSink{}
	refusing := &memSink{err: errSink}
	route := sinkFunc(func(ctx context.Context, e *batch.Envelope) error {
		if e.Partition == 4 {
			return refusing.Send(ctx, e)
		}
		return sink.Send(ctx, e)
	})
	opts := []batch.Option{batch.WithRetry(3, time.Millisecond), batch.WithLogger(logs.logger()), batch.WithHooks(hook)}
	// Partitions 0 to 2 without a sink, 3 and 4 with one.
	noSink := &kafkaevent.Event{Source: ev.Source, Partitions: ev.Partitions[:3]}
	withSink := &kafkaevent.Event{Source: ev.Source, Partitions: ev.Partitions[3:]}
	resp, err := batch.ProcessKafka(context.Background(), noSink, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	want := wantKafka("orders-0@1", "orders-0@2", "orders-0@3", "orders-1@2", "orders-1@3", "orders-2@1", "orders-2@2", "orders-2@3")
	if got := kafkaJSON(t, resp); got != want {
		t.Errorf("response %s\nwant %s", got, want)
	}
	resp, err = batch.ProcessKafka(context.Background(), withSink, h, append(opts, batch.WithSink(route, batch.SinkPermanent))...)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kafkaJSON(t, resp), wantKafka("orders-4@3"); got != want {
		t.Errorf("response %s\nwant %s", got, want)
	}
	wants := map[string]failureWant{
		"orders-0@1": {3, false, false, 3, "transient failure"},
		"orders-1@2": {1, true, false, 2, "panicked: boom"},
		"orders-2@1": {0, true, false, 3, "invalid base64"},
		"orders-3@0": {1, true, true, 0, "refused"},
		"orders-4@3": {1, true, false, 1, "sink unavailable"},
	}
	lines := logs.lines(t, "record failed")
	if len(lines) != len(wants) {
		t.Errorf("%d failure lines, want %d:\n%s", len(lines), len(wants), logs.String())
	}
	checkFailureLines(t, lines, wants)
	if strings.Contains(logs.String(), secret) {
		t.Errorf("a log line shows a key or value:\n%s", logs.String())
	}
	got := hook.byWhere()
	if len(hook.got) != len(wants) {
		t.Errorf("failure hook called %d times, want %d: %+v", len(hook.got), len(wants), hook.got)
	}
	for where, w := range wants {
		f, ok := got[where]
		if !ok {
			t.Errorf("no failure hook call for %s", where)
			continue
		}
		if f.Attempts != w.attempts || f.Permanent != w.permanent || f.SentToSink != w.sentToSink || f.Reported != w.reported ||
			f.Err == nil || !strings.Contains(f.Err.Error(), w.err) || f.Kafka == nil || f.SQS != nil {
			t.Errorf("%s: hook got %+v, want %+v", where, f, w)
		}
	}
	var pe *batch.PanicError
	if f := got["orders-1@2"]; !errors.As(f.Err, &pe) || pe.Value != "boom" {
		t.Errorf("panic's Failure.Err = %v", f.Err)
	}
	if f := got["orders-0@1"]; !errors.Is(f.Err, errTransient) {
		t.Errorf("Failure.Err = %v does not wrap the handler's error", f.Err)
	}
	if f := got["orders-4@3"]; !errors.Is(f.SinkErr, errSink) {
		t.Errorf("Failure.SinkErr = %v", f.SinkErr)
	}
	if len(sink.got) != 1 || sink.got[0].Partition != 3 {
		t.Errorf("sink got %+v", sink.got)
	}
}

// sinkFunc is a Sink of a function.
type sinkFunc func(ctx context.Context, e *batch.Envelope) error

func (f sinkFunc) Send(ctx context.Context, e *batch.Envelope) error { return f(ctx, e) }

// A batch that starts with its deadline less the margin passed (on Lambda Managed Instances
// the time left can be zero or below) is answered at once: every record reported, one WARN
// line, no handler, no hook, no "record failed" line.
func TestFailureLogDeadline(t *testing.T) {
	ev := kafkaParts("orders", []int32{0, 1}, 3, 0)
	var logs failureLog
	hook := &failureHook{}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	resp, err := batch.ProcessKafka(ctx, ev, func(context.Context, *kafkaevent.Record) error {
		t.Error("handler called past the deadline margin")
		return nil
	}, batch.WithDeadlineMargin(time.Second), batch.WithLogger(logs.logger()), batch.WithHooks(hook))
	if err != nil {
		t.Fatal(err)
	}
	if got := kafkaJSON(t, resp); got != wantKafka("orders-0@0", "orders-0@1", "orders-0@2", "orders-1@0", "orders-1@1", "orders-1@2") {
		t.Errorf("response %s", got)
	}
	if lines := logs.lines(t, "record failed"); len(lines) != 0 {
		t.Errorf("%d failure lines, want none:\n%s", len(lines), logs.String())
	}
	lines := logs.lines(t, "batch not processed: no time left")
	if len(lines) != 1 || lines[0]["level"] != "WARN" || lines[0]["reported"] != float64(6) || lines[0]["records"] != float64(6) {
		t.Fatalf("want one WARN line reporting 6 records:\n%s", logs.String())
	}
	if len(hook.got) != 0 {
		t.Errorf("hook got %+v", hook.got)
	}
}

// SQS: FIFO failures count the rest of their group; a standard queue's are one each.
func TestFailureLogSQS(t *testing.T) {
	for _, arn := range []string{standardARN, fifoARN} {
		t.Run(arn[strings.LastIndexByte(arn, ':')+1:], func(t *testing.T) {
			ev := fifoEvent(2, 3)
			for i := range ev.Records {
				ev.Records[i].EventSourceARN = arn
				ev.Records[i].Body = `{"secret":"SECRET-BODY"}`
				if arn == standardARN {
					delete(ev.Records[i].Attributes, "MessageGroupId")
				}
			}
			var logs failureLog
			hook := &failureHook{}
			resp, err := batch.ProcessSQS(context.Background(), ev, func(ctx context.Context, m *events.SQSMessage) error {
				if m.MessageId == "g0-1" {
					return errTransient
				}
				return nil
			}, batch.WithRetry(2, time.Millisecond), batch.WithLogger(logs.logger()), batch.WithHooks(hook))
			if err != nil {
				t.Fatal(err)
			}
			want, reported := wantSQS("g0-1"), 1.0
			if arn == fifoARN {
				want, reported = wantSQS("g0-1", "g0-2"), 2
			}
			if got := sqsJSON(t, resp); got != want {
				t.Errorf("response %s, want %s", got, want)
			}
			lines := logs.lines(t, "record failed")
			if len(lines) != 1 {
				t.Fatalf("%d failure lines, want 1:\n%s", len(lines), logs.String())
			}
			e := lines[0]
			if e["source"] != "sqs" || e["messageId"] != "g0-1" || e["attempts"] != float64(2) || e["reported"] != reported ||
				e["error"] != errTransient.Error() {
				t.Errorf("line %v", e)
			}
			if g, ok := e["messageGroup"]; (arn == fifoARN) != ok || (ok && g != "g0") {
				t.Errorf("messageGroup %v", g)
			}
			if strings.Contains(logs.String(), "SECRET-BODY") {
				t.Errorf("a log line shows a body:\n%s", logs.String())
			}
			wantGroup := "g0-1"
			if arn == fifoARN {
				wantGroup = "g0"
			}
			if len(hook.got) != 1 || hook.got[0].SQS == nil || hook.got[0].SQS.MessageId != "g0-1" || hook.got[0].Group != wantGroup ||
				hook.got[0].Attempts != 2 || hook.got[0].Reported != int(reported) {
				t.Errorf("hook got %+v", hook.got)
			}
		})
	}
}

// Options given invalid values fail every batch, loudly, instead of running with a setting
// nobody asked for.
func TestInvalidOptions(t *testing.T) {
	ev := kafkaParts("orders", []int32{0}, 1, 0)
	for _, tc := range []struct {
		opt  batch.Option
		want string
	}{
		{batch.WithConcurrency(0), "WithConcurrency(0)"},
		{batch.WithDeadlineMargin(-time.Second), "WithDeadlineMargin"},
		{batch.WithRetry(0, time.Millisecond), "WithRetry(0"},
		{batch.WithRetry(2, -time.Millisecond), "WithRetry(2"},
		{batch.WithFilter(nil), "WithFilter(nil)"},
		{batch.WithIdempotency(nil), "WithIdempotency(nil)"},
		{batch.WithSink(nil, batch.SinkPermanent), "WithSink(nil"},
		{batch.WithSink(&memSink{}, batch.SinkPolicy(7)), "invalid option WithSink(*batch_test.memSink, 7): unknown policy"},
		{batch.WithMetrics(nil), "WithMetrics(nil)"},
		{batch.WithMetricsNamespace(""), "WithMetricsNamespace"},
		{batch.WithLogger(nil), "WithLogger(nil)"},
		{batch.WithHooks(struct{}{}), "implements none"},
		{nil, "Option(nil)"},
	} {
		calls := 0
		h := func(context.Context, *kafkaevent.Record) error { calls++; return nil }
		_, err := batch.ProcessKafka(context.Background(), ev, h, tc.opt)
		if !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) || calls != 0 {
			t.Errorf("%s: error %v, %d calls", tc.want, err, calls)
		}
		_, err = batch.ProcessSQS(context.Background(), standardEvent(1), func(context.Context, *events.SQSMessage) error { return nil }, tc.opt)
		if !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ProcessSQS error %v", tc.want, err)
		}
		// The handlers check their options once, when they are made, and fail every
		// invocation with the error.
		kh := batch.KafkaHandler(h, tc.opt)
		for range 2 {
			if _, err := kh(context.Background(), ev); !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) || calls != 0 {
				t.Errorf("%s: KafkaHandler error %v, %d calls", tc.want, err, calls)
			}
		}
		sh := batch.SQSHandler(func(context.Context, *events.SQSMessage) error { calls++; return nil }, tc.opt)
		if _, err := sh(context.Background(), standardEvent(1)); !errors.Is(err, toolkit.ErrInvalidOption) || calls != 0 {
			t.Errorf("%s: SQSHandler error %v, %d calls", tc.want, err, calls)
		}
	}
}

// Metrics are opt-in: by default nothing but the summary log line is written.
func TestMetricsOptIn(t *testing.T) {
	var logs failureLog
	// Capture standard output, where metrics went by default before they were opt-in.
	out := captureStdout(t, func() {
		if _, err := batch.ProcessKafka(context.Background(), kafkaParts("orders", []int32{0}, 2, 0),
			func(context.Context, *kafkaevent.Record) error { return nil }, batch.WithLogger(logs.logger())); err != nil {
			t.Fatal(err)
		}
	})
	if out != "" {
		t.Errorf("standard output without WithMetrics: %q", out)
	}
	if sum := logs.lines(t, "batch processed"); len(sum) != 1 || sum[0]["processed"] != float64(2) {
		t.Errorf("summary %v", sum)
	}
	var emf bytes.Buffer
	if _, err := batch.ProcessKafka(context.Background(), kafkaParts("orders", []int32{0}, 2, 0),
		func(context.Context, *kafkaevent.Record) error { return nil }, silent(batch.WithMetrics(&emf))...); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(emf.String(), `"Namespace":"`+batch.DefaultNamespace+`"`) {
		t.Errorf("EMF line %s", emf.String())
	}
	// A writer that fails is logged, not ignored.
	var logs2 failureLog
	if _, err := batch.ProcessKafka(context.Background(), kafkaParts("orders", []int32{0}, 1, 0),
		func(context.Context, *kafkaevent.Record) error { return nil },
		batch.WithMetrics(failingWriter{}), batch.WithLogger(logs2.logger())); err != nil {
		t.Fatal(err)
	}
	if lines := logs2.lines(t, "batch metrics not written"); len(lines) != 1 || !strings.HasSuffix(fmt.Sprint(lines[0]["error"]), ": disk full") {
		t.Errorf("metrics error lines %v", lines)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// captureStdout returns what fn writes to os.Stdout.
func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() {
		os.Stdout = old
	}()
	fn()
	os.Stdout = old
	w.Close()
	return <-done
}

// all returns every logged entry.
func (l *failureLog) all(t testing.TB) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, line)
		}
		out = append(out, e)
	}
	return out
}
