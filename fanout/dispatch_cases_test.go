package fanout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// rec is a record of topic "orders" for the tests below.
func rec(p int32, off int64, key, value string) kafkaevent.Record {
	r := kafkaevent.Record{Topic: "orders", Partition: p, Offset: off, Timestamp: time.Now().Add(-time.Second).Truncate(time.Millisecond).UTC(),
		TimestampType: kafkaevent.CreateTime, Value: []byte(value)}
	if key != "" {
		r.Key = []byte(key)
	}
	return r
}

// event makes an event of records, grouped by partition in the order given.
func event(recs ...kafkaevent.Record) *kafkaevent.Event {
	ev := &kafkaevent.Event{Source: kafkaevent.SourceMSK}
	for _, r := range recs {
		i := slices.IndexFunc(ev.Partitions, func(p kafkaevent.Partition) bool { return p.Number == r.Partition })
		if i < 0 {
			ev.Partitions = append(ev.Partitions, kafkaevent.Partition{Topic: r.Topic, Number: r.Partition})
			i = len(ev.Partitions) - 1
		}
		ev.Partitions[i].Records = append(ev.Partitions[i].Records, r)
	}
	return ev
}

// simple makes n records per partition, keys cycling over keys per partition ("p1-k3": a
// key is in one partition, as Kafka's partitioner puts it).
func simple(parts, n, keys int) *kafkaevent.Event {
	var recs []kafkaevent.Record
	for p := range parts {
		for o := range n {
			recs = append(recs, rec(int32(p), int64(o), fmt.Sprintf("p%d-k%d", p, o%keys), fmt.Sprintf(`{"p":%d,"o":%d}`, p, o)))
		}
	}
	return event(recs...)
}

func at(r *kafkaevent.Record, p int32, off int64) bool { return r.Partition == p && r.Offset == off }

// reported lists the response as "p@offset".
func reported(resp batch.KafkaResponse) []string {
	var out []string
	for _, f := range resp.BatchItemFailures {
		out = append(out, fmt.Sprintf("%s@%d", f.ItemIdentifier.Partition, f.ItemIdentifier.Offset))
	}
	return out
}

func tail(partition string, from, to int) []string {
	var out []string
	for o := from; o < to; o++ {
		out = append(out, fmt.Sprintf("%s@%d", partition, o))
	}
	return out
}

// sends counts, per "p@offset", the calls that carried the record.
func sends(f *faults) map[string]int {
	calls, _ := f.recorded()
	out := map[string]int{}
	for _, c := range calls {
		for _, r := range c {
			out[fmt.Sprintf("orders-%d@%d", r.Partition, r.Offset)]++
		}
	}
	return out
}

func quiet() Option { return WithBatchOptions(batch.WithLogger(slog.New(slog.DiscardHandler))) }

func TestDispatchRetriesOnlyFailedEntries(t *testing.T) {
	t.Parallel()
	fail := map[string]bool{"orders-0@5": true, "orders-1@17": true, "orders-2@42": true}
	var mu sync.Mutex
	failedOnce := map[string]bool{}
	f := &faults{entry: func(r *kafkaevent.Record) *types.BatchResultErrorEntry {
		id := fmt.Sprintf("orders-%d@%d", r.Partition, r.Offset)
		mu.Lock()
		defer mu.Unlock()
		if fail[id] && !failedOnce[id] {
			failedOnce[id] = true
			return &types.BatchResultErrorEntry{Code: aws.String("ServiceUnavailable"), Message: aws.String("injected")}
		}
		return nil
	}}
	srv, client := dispServer(t, f)
	q := dispQueue(t, srv, "work")
	logs := &logBuffer{}
	d := dispatcher(t, client, q, WithSendRetry(3, time.Millisecond), WithBatchOptions(batch.WithLogger(logs.logger())))
	resp, err := d.Dispatch(context.Background(), simple(3, 50, 7))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Dispatch = %v, %v; want every record accepted", reported(resp), err)
	}
	for id, n := range sends(f) {
		want := 1
		if fail[id] {
			want = 2
		}
		if n != want {
			t.Errorf("%s sent in %d calls, want %d", id, n, want)
		}
	}
	if got := len(drain(t, srv.Client(), q)); got != 150 {
		t.Errorf("%d messages in the queue, want 150", got)
	}
	s := logs.lines(t, "records dispatched")
	if len(s) != 1 || s[0]["entriesRetried"] != 3.0 || s[0]["dispatched"] != 150.0 || s[0]["failed"] != 0.0 || s[0]["level"] != "INFO" {
		t.Errorf("summary line %v", s)
	}
}

// TestDispatchFIFOFailedEntryKeepsGroupOrder fails one entry of a group inside a call whose
// other entries succeed: the group's later records must not overtake it.
func TestDispatchFIFOFailedEntryKeepsGroupOrder(t *testing.T) {
	t.Parallel()
	var recs []kafkaevent.Record
	for o := range 40 {
		key := "a"
		if o%4 == 3 {
			key = fmt.Sprintf("b%d", o)
		}
		recs = append(recs, rec(0, int64(o), key, fmt.Sprint(o)))
	}
	var mu sync.Mutex
	failures := map[int64]int{}
	f := &faults{entry: func(r *kafkaevent.Record) *types.BatchResultErrorEntry {
		mu.Lock()
		defer mu.Unlock()
		if string(r.Key) == "a" && r.Offset%5 == 2 && failures[r.Offset] < 1+int(r.Offset%2) { // once or twice each
			failures[r.Offset]++
			return &types.BatchResultErrorEntry{Code: aws.String("InternalError"), Message: aws.String("injected")}
		}
		return nil
	}}
	srv, client := dispServer(t, f)
	q := dispQueue(t, srv, "work.fifo")
	d := dispatcher(t, client, q, WithSendRetry(5, time.Millisecond), quiet())
	resp, err := d.Dispatch(context.Background(), event(recs...))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Dispatch = %v, %v", reported(resp), err)
	}
	got := drain(t, srv.Client(), q)
	var a []int64
	for _, r := range got {
		if string(r.Key) == "a" {
			a = append(a, r.Offset)
		}
	}
	if !slices.IsSorted(a) || len(a) != 30 {
		t.Errorf("group a in the queue: %v, want 30 offsets in Kafka order", a)
	}
	calls, _ := f.recorded()
	for i, c := range calls {
		seen := map[string]bool{}
		for _, r := range c {
			if seen[string(r.Key)] {
				t.Fatalf("call %d carries two records of group %q", i, r.Key)
			}
			seen[string(r.Key)] = true
		}
	}
}

// TestDispatchSenderFault: an entry SQS refuses as the sender's fault is not sent again; it
// is reported with the rest of its partition, or, with a sink, goes to the sink and its
// partition moves on.
func TestDispatchSenderFault(t *testing.T) {
	t.Parallel()
	refuse := func(r *kafkaevent.Record) *types.BatchResultErrorEntry {
		if at(r, 1, 12) {
			return &types.BatchResultErrorEntry{Code: aws.String("InvalidParameterValue"), Message: aws.String("injected"), SenderFault: true}
		}
		return nil
	}
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprint("fifo=", fifo), func(t *testing.T) {
			t.Parallel()
			f := &faults{entry: refuse}
			srv, client := dispServer(t, f)
			name := "work"
			if fifo {
				name = "work.fifo"
			}
			q := dispQueue(t, srv, name)
			logs := &logBuffer{}
			d := dispatcher(t, client, q, WithBatchOptions(batch.WithLogger(logs.logger())))
			resp, err := d.Dispatch(context.Background(), simple(3, 30, 5))
			if err != nil {
				t.Fatal(err)
			}
			if want := tail("orders-1", 12, 30); !slices.Equal(reported(resp), want) {
				t.Errorf("reported %v, want %v", reported(resp), want)
			}
			if n := sends(f)["orders-1@12"]; n != 1 {
				t.Errorf("the refused entry was sent %d times, want 1", n)
			}
			lines := logs.lines(t, "record not dispatched")
			if len(lines) != 1 {
				t.Fatalf("%d failure lines, want 1: %s", len(lines), logs)
			}
			l := lines[0]
			if l["partition"] != "orders-1" || l["offset"] != 12.0 || l["reported"] != 18.0 || l["permanent"] != true || l["sentToSink"] != false ||
				!strings.Contains(l["error"].(string), "InvalidParameterValue") || l["level"] != "ERROR" {
				t.Errorf("failure line %v", l)
			}
			if strings.Contains(logs.String(), `{\"p\":1,\"o\":12}`) {
				t.Errorf("the payload is in the logs")
			}
			if fifo { // the later records of its key (p1-k2) were held back, not sent
				for id := range sends(f) {
					var o int
					if _, err := fmt.Sscanf(id, "orders-1@%d", &o); err == nil && o > 12 && o%5 == 2 {
						t.Errorf("%s, of the refused record's group, was sent", id)
					}
				}
			}
			// With a sink, the record goes there and nothing is reported.
			dlq := dispQueue(t, srv, "dlq")
			logs2 := &logBuffer{}
			f.entry = refuse
			d = dispatcher(t, client, q, WithBatchOptions(batch.WithSink(sqssink.New(srv.Client(), dlq), batch.SinkPermanent)), WithBatchOptions(batch.WithLogger(logs2.logger())))
			resp, err = d.Dispatch(context.Background(), simple(3, 30, 5))
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("with a sink: %v, %v", reported(resp), err)
			}
			msgs, err := standintest.Receive(context.Background(), srv.Client(), dlq, 2, time.Second)
			if err != nil || len(msgs) != 1 {
				t.Fatalf("the sink got %d messages (%v), want 1", len(msgs), err)
			}
			e, err := batch.ReadEnvelope([]byte(aws.ToString(msgs[0].Body)))
			if err != nil || e.Partition != 1 || e.Offset != 12 || !e.Permanent || !strings.Contains(e.Error, "InvalidParameterValue") || string(e.Value) != `{"p":1,"o":12}` {
				t.Errorf("envelope %+v, %v", e, err)
			}
			if l := logs2.lines(t, "record not dispatched"); len(l) != 1 || l[0]["sentToSink"] != true || l[0]["reported"] != 0.0 {
				t.Errorf("failure lines with a sink: %v", l)
			}
		})
	}
}

// TestDispatchRecordsThatCannotTravel: a record over the size limit, or one that did not
// decode, is never sent; it is reported with the rest of its partition, or goes to the sink.
func TestDispatchRecordsThatCannotTravel(t *testing.T) {
	t.Parallel()
	f := &faults{}
	srv, client := dispServer(t, f)
	q := dispQueue(t, srv, "work")
	big := rec(0, 3, "k", strings.Repeat("x", limits.MaxSQSMessageBytes))
	bad := rec(1, 1, "k", "")
	bad.Err = errors.New("bad base64")
	mid := rec(2, 2, "k", strings.Repeat("y", 5000))
	ev := event(rec(0, 0, "k", "a"), rec(0, 1, "k", "b"), rec(0, 2, "k", "c"), big, rec(0, 4, "k", "d"),
		rec(1, 0, "k", "e"), bad, rec(1, 2, "k", "f"),
		rec(2, 0, "k", "g"), rec(2, 1, "k", "h"), mid, rec(2, 3, "k", "i"))
	logs := &logBuffer{}
	d := dispatcher(t, client, q, WithMaxMessageSize(4000), WithBatchOptions(batch.WithLogger(logs.logger())))
	resp, err := d.Dispatch(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"orders-0@3", "orders-0@4", "orders-1@1", "orders-1@2", "orders-2@2", "orders-2@3"}
	if !slices.Equal(reported(resp), want) {
		t.Errorf("reported %v, want %v", reported(resp), want)
	}
	for _, id := range []string{"orders-0@3", "orders-1@1", "orders-2@2", "orders-0@4", "orders-1@2", "orders-2@3"} {
		if sends(f)[id] != 0 {
			t.Errorf("%s was sent", id)
		}
	}
	lines := logs.lines(t, "record not dispatched")
	if len(lines) != 3 {
		t.Fatalf("failure lines: %v", lines)
	}
	for _, l := range lines {
		if !strings.Contains(l["error"].(string), "fanout: record orders-") || l["permanent"] != true {
			t.Errorf("failure line %v", l)
		}
	}
	if l := lines[2]; l["partition"] != "orders-2" || !strings.Contains(l["error"].(string), batch.ErrMessageTooLarge.Error()) || !strings.Contains(l["error"].(string), "WithMaxMessageSize") {
		t.Errorf("the record over WithMaxMessageSize: %v", l)
	}

	// With a sink, each goes there, and everything else is sent.
	sink := &memSink{}
	d = dispatcher(t, client, q, WithMaxMessageSize(4000), WithBatchOptions(batch.WithSink(sink, batch.SinkPermanent)), quiet())
	resp, err = d.Dispatch(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("with a sink: %v, %v", reported(resp), err)
	}
	if got := sink.offsets(); !slices.Equal(got, []string{"orders-0@3", "orders-1@1", "orders-2@2"}) {
		t.Errorf("sink got %v", got)
	}
}

// memSink keeps what it is given; it is a test double for a destination that is not under
// test here.
type memSink struct {
	mu     sync.Mutex
	got    []*batch.Envelope
	refuse bool
}

func (s *memSink) Send(_ context.Context, e *batch.Envelope) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse {
		return errors.New("sink down")
	}
	s.got = append(s.got, e)
	return nil
}

func (s *memSink) offsets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.got {
		out = append(out, fmt.Sprintf("%s-%d@%d", e.Topic, e.Partition, e.Offset))
	}
	slices.Sort(out)
	return out
}

// TestDispatchPacksCalls: at most 10 entries and 1 MiB per call, counted as SQS counts
// (attributes included), and a call that SQS refuses whole because of what is in it is
// split, so that only the entry at fault fails.
func TestDispatchPacksCalls(t *testing.T) {
	t.Parallel()
	var recs []kafkaevent.Record
	for o := range 45 {
		size := 20
		if o%3 == 0 {
			size = 300 << 10 // three of these and a bit pass 1 MiB
		}
		recs = append(recs, rec(0, int64(o), "k", strings.Repeat("v", size)))
	}
	for o := range 33 {
		recs = append(recs, rec(1, int64(o), "", "small"))
	}
	f := &faults{}
	srv, client := dispServer(t, f)
	q := dispQueue(t, srv, "work")
	d := dispatcher(t, client, q, WithSendConcurrency(1), quiet())
	resp, err := d.Dispatch(context.Background(), event(recs...))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Dispatch = %v, %v", reported(resp), err)
	}
	calls, sizes := f.recorded()
	total, full := 0, 0
	for i, c := range calls {
		sum := 0
		for _, n := range sizes[i] {
			sum += n
		}
		if len(c) > limits.MaxSQSBatchEntries || sum > limits.MaxSQSBatchBytes {
			t.Errorf("call %d: %d entries, %d bytes", i, len(c), sum)
		}
		if len(c) == limits.MaxSQSBatchEntries {
			full++
		}
		total += len(c)
	}
	if total != 78 {
		t.Errorf("%d entries sent, want 78", total)
	}
	// 15 records of 300 KiB need at least 5 calls; the 63 small ones fill calls of 10.
	if len(calls) > 14 || full < 4 {
		t.Errorf("%d calls, %d of them full: the packing wastes calls", len(calls), full)
	}
	if got := len(drain(t, srv.Client(), q)); got != 78 {
		t.Errorf("%d messages in the queue, want 78", got)
	}
}

func TestDispatchSplitsACallRefusedWhole(t *testing.T) {
	t.Parallel()
	f := &faults{call: func(recs []*kafkaevent.Record) error {
		if slices.ContainsFunc(recs, func(r *kafkaevent.Record) bool { return at(r, 0, 7) }) {
			if len(recs) > 1 {
				return &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.BatchRequestTooLong", Message: "injected", Fault: smithy.FaultClient}
			}
			return &smithy.GenericAPIError{Code: "InvalidMessageContents", Message: "injected", Fault: smithy.FaultClient}
		}
		return nil
	}}
	srv, client := dispServer(t, f)
	q := dispQueue(t, srv, "work")
	sink := &memSink{}
	// One attempt: the split costs none.
	d := dispatcher(t, client, q, WithBatchOptions(batch.WithSink(sink, batch.SinkPermanent)), WithSendRetry(1, 0), quiet())
	resp, err := d.Dispatch(context.Background(), simple(2, 20, 3))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Dispatch = %v, %v", reported(resp), err)
	}
	if got := sink.offsets(); !slices.Equal(got, []string{"orders-0@7"}) {
		t.Errorf("sink got %v, want orders-0@7 alone", got)
	}
	if got := len(drain(t, srv.Client(), q)); got != 39 {
		t.Errorf("%d messages in the queue, want 39", got)
	}
}

// TestDispatchQueueErrors: a call refused because of the queue (here, one that does not
// exist) is not retried, and its records are reported, never given to the sink.
func TestDispatchQueueErrors(t *testing.T) {
	t.Parallel()
	f := &faults{}
	srv, client := dispServer(t, f)
	sink := &memSink{}
	logs := &logBuffer{}
	d := dispatcher(t, client, srv.QueueURL("missing"), WithBatchOptions(batch.WithSink(sink, batch.SinkExhausted)), WithBatchOptions(batch.WithLogger(logs.logger())))
	resp, err := d.Dispatch(context.Background(), simple(2, 25, 3))
	if err != nil {
		t.Fatal(err)
	}
	if want := append(tail("orders-0", 0, 25), tail("orders-1", 0, 25)...); !slices.Equal(reported(resp), want) {
		t.Errorf("reported %v", reported(resp))
	}
	if calls, _ := f.recorded(); len(calls) != 5 {
		t.Errorf("%d calls, want 5 (no retries)", len(calls))
	}
	if len(sink.got) != 0 {
		t.Errorf("the sink got %d records", len(sink.got))
	}
	lines := logs.lines(t, "record not dispatched")
	if len(lines) != 50 || !strings.Contains(lines[0]["error"].(string), "NonExistentQueue") || lines[0]["reported"] != 25.0 {
		t.Errorf("failure lines: %d, first %v", len(lines), lines[0])
	}
}

// TestDispatchThrottling: calls throttled whole are sent again, entries and all, and count
// in the summary.
func TestDispatchThrottling(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	n := 0
	f := &faults{call: func([]*kafkaevent.Record) error {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n <= 3 {
			return throttled()
		}
		return nil
	}}
	srv, client := dispServer(t, f)
	q := dispQueue(t, srv, "work.fifo")
	logs := &logBuffer{}
	d := dispatcher(t, client, q, WithSendConcurrency(1), WithSendRetry(5, time.Millisecond), WithBatchOptions(batch.WithLogger(logs.logger())))
	resp, err := d.Dispatch(context.Background(), simple(1, 30, 30))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Dispatch = %v, %v", reported(resp), err)
	}
	s := logs.lines(t, "records dispatched")[0]
	// Three calls refused, then the 30 entries again: at least 3 more calls. How the retried
	// entries are packed depends on when each one's backoff ends, so a retry may go out in
	// more than 3 calls.
	calls, _ := s["batchCalls"].(float64)
	if s["failedCalls"] != 3.0 || calls < 6 || calls > 3+30 || s["entriesRetried"] != 30.0 || s["dispatched"] != 30.0 {
		t.Errorf("summary %v", s)
	}
	if got := len(drain(t, srv.Client(), q)); got != 30 {
		t.Errorf("%d messages in the queue, want 30", got)
	}
}

// TestDispatchDeadline: with every call throttled, Dispatch gives up at the deadline less
// the margin, and reports every record, in time for Lambda to get the response.
func TestDispatchDeadline(t *testing.T) {
	t.Parallel()
	f := &faults{call: func([]*kafkaevent.Record) error { return throttled() }}
	srv, client := dispServer(t, f)
	q := dispQueue(t, srv, "work")
	logs := &logBuffer{}
	sink := &memSink{}
	d := dispatcher(t, client, q, WithSendRetry(1000, 20*time.Millisecond), WithBatchOptions(batch.WithDeadlineMargin(300*time.Millisecond)),
		WithBatchOptions(batch.WithSink(sink, batch.SinkExhausted)), WithBatchOptions(batch.WithLogger(logs.logger())))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	resp, err := d.Dispatch(ctx, simple(2, 30, 3))
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took > 800*time.Millisecond {
		t.Errorf("Dispatch took %v, the deadline less the margin is 700ms", took)
	}
	if len(resp.BatchItemFailures) != 60 {
		t.Errorf("%d reported, want 60", len(resp.BatchItemFailures))
	}
	if len(sink.got) != 0 {
		t.Errorf("the sink got %d records: throttled calls are not the records' fault", len(sink.got))
	}
	for _, l := range logs.lines(t, "record not dispatched") {
		if e := l["error"].(string); !strings.Contains(e, batch.ErrDeadline.Error()) && !strings.Contains(e, "Throttling") {
			t.Errorf("failure line %v", l)
		}
	}
}

// TestDispatchSinkRefuses: a record the sink refuses is reported, with the sink's error.
func TestDispatchSinkRefuses(t *testing.T) {
	t.Parallel()
	srv, client := dispServer(t, nil)
	q := dispQueue(t, srv, "work")
	logs := &logBuffer{}
	big := rec(0, 1, "k", strings.Repeat("x", limits.MaxSQSMessageBytes))
	d := dispatcher(t, client, q, WithBatchOptions(batch.WithSink(&memSink{refuse: true}, batch.SinkPermanent)), WithBatchOptions(batch.WithLogger(logs.logger())))
	resp, err := d.Dispatch(context.Background(), event(rec(0, 0, "k", "a"), big, rec(0, 2, "k", "c")))
	if err != nil {
		t.Fatal(err)
	}
	if want := tail("orders-0", 1, 3); !slices.Equal(reported(resp), want) {
		t.Errorf("reported %v, want %v", reported(resp), want)
	}
	l := logs.lines(t, "record not dispatched")
	if len(l) != 1 || l[0]["sinkError"] != "sink down" || l[0]["sentToSink"] != false {
		t.Errorf("failure lines %v", l)
	}
}

// TestDispatchFIFOGroups: the MessageGroupId of each option, and the order of each group in
// the queue.
func TestDispatchFIFOGroups(t *testing.T) {
	t.Parallel()
	srv, client := dispServer(t, nil)
	ev := event(rec(0, 0, "a", "1"), rec(0, 1, "b", "2"), rec(0, 2, "", "3"), rec(0, 3, "a", "4"),
		rec(1, 0, "a", "5"), rec(1, 1, "", "6"), rec(1, 2, "c", "7"))
	for _, tc := range []struct {
		name   string
		opts   []Option
		groups []string // per record, in event order
	}{
		{"key", nil, []string{"a", "b", "orders-0", "a", "a", "orders-1", "c"}},
		{"partition", []Option{WithPartitionGroups()}, []string{"orders-0", "orders-0", "orders-0", "orders-0", "orders-1", "orders-1", "orders-1"}},
		{"function", []Option{WithMessageGroup(func(r *kafkaevent.Record) string { return "all" })}, []string{"all", "all", "all", "all", "all", "all", "all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := dispQueue(t, srv, tc.name+".fifo")
			d := dispatcher(t, client, q, append(tc.opts, quiet())...)
			resp, err := d.Dispatch(context.Background(), ev)
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("Dispatch = %v, %v", reported(resp), err)
			}
			recs, msgs := drainAll(t, client, q)
			if len(recs) != 7 {
				t.Fatalf("%d messages", len(recs))
			}
			byGroup := map[string][]string{}
			for i, r := range recs {
				want := tc.groups[int(r.Partition)*4+int(r.Offset)]
				if g := msgs[i].Attributes["MessageGroupId"]; g != want {
					t.Errorf("%s: MessageGroupId %q, want %q", r.Value, g, want)
				}
				byGroup[msgs[i].Attributes["MessageGroupId"]] = append(byGroup[msgs[i].Attributes["MessageGroupId"]], fmt.Sprintf("%d@%d", r.Partition, r.Offset))
			}
			for g, offs := range byGroup {
				// Within a partition, a group's records are in Kafka order.
				for p := range 2 {
					var o []string
					for _, s := range offs {
						if strings.HasPrefix(s, fmt.Sprint(p, "@")) {
							o = append(o, s)
						}
					}
					if !slices.IsSorted(o) {
						t.Errorf("group %s: %v", g, offs)
					}
				}
			}
		})
	}
}

// TestDispatchFIFOSinkLetsGroupGoOn: a record of a group that goes to the sink lets the
// group's later records go, after it, and a group function that gives an ID SQS refuses
// fails the record as one that cannot travel.
func TestDispatchFIFOSinkLetsGroupGoOn(t *testing.T) {
	t.Parallel()
	f := &faults{entry: func(r *kafkaevent.Record) *types.BatchResultErrorEntry {
		if at(r, 0, 1) {
			return &types.BatchResultErrorEntry{Code: aws.String("InvalidParameterValue"), Message: aws.String("injected"), SenderFault: true}
		}
		return nil
	}}
	srv, client := dispServer(t, f)
	q := dispQueue(t, srv, "work.fifo")
	sink := &memSink{}
	group := func(r *kafkaevent.Record) string {
		if string(r.Key) == "bad" {
			return "a key with spaces"
		}
		return string(r.Key)
	}
	d := dispatcher(t, client, q, WithBatchOptions(batch.WithSink(sink, batch.SinkPermanent)), WithMessageGroup(group), quiet())
	resp, err := d.Dispatch(context.Background(), event(rec(0, 0, "a", "0"), rec(0, 1, "a", "1"), rec(0, 2, "a", "2"), rec(0, 3, "bad", "3"), rec(0, 4, "a", "4")))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Dispatch = %v, %v", reported(resp), err)
	}
	if got := sink.offsets(); !slices.Equal(got, []string{"orders-0@1", "orders-0@3"}) {
		t.Errorf("sink got %v", got)
	}
	if !strings.Contains(sink.got[0].Error+sink.got[1].Error, "MessageGroupId") {
		t.Errorf("sink errors %q, %q", sink.got[0].Error, sink.got[1].Error)
	}
	var got []int64
	for _, r := range drain(t, srv.Client(), q) {
		got = append(got, r.Offset)
	}
	if !slices.Equal(got, []int64{0, 2, 4}) {
		t.Errorf("queue holds %v, want [0 2 4]", got)
	}
}

// TestDispatchCancelled: a caller's context that ends stops the dispatch; what was not
// accepted is reported.
func TestDispatchCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	f := &faults{call: func([]*kafkaevent.Record) error { cancel(); return throttled() }}
	srv, client := dispServer(t, f)
	q := dispQueue(t, srv, "work")
	logs := &logBuffer{}
	d := dispatcher(t, client, q, WithSendConcurrency(1), WithBatchOptions(batch.WithLogger(logs.logger())))
	resp, err := d.Dispatch(ctx, simple(1, 15, 3))
	if err != nil || len(resp.BatchItemFailures) != 15 {
		t.Fatalf("Dispatch = %v, %v", reported(resp), err)
	}
	if calls, _ := f.recorded(); len(calls) != 1 {
		t.Errorf("%d calls after the context ended", len(calls))
	}
	l := logs.lines(t, "record not dispatched")
	if len(l) == 0 || !strings.Contains(l[0]["error"].(string), "context canceled") {
		t.Errorf("failure lines %v", l)
	}
}

// dispatcher is NewDispatcher for a test: an error fails it.
func dispatcher(tb testing.TB, client sqssink.API, queueURL string, opts ...Option) *Dispatcher {
	tb.Helper()
	d, err := NewDispatcher(client, queueURL, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}
