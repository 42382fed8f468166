package batch_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// silent turns off the summary log and the failed records' lines, so that test output shows
// only the tests' failures.
func silent(opts ...batch.Option) []batch.Option {
	return append([]batch.Option{batch.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
}

// errTransient is an ordinary error: retried.
var errTransient = errors.New("transient failure")

// kafkaParts builds an event of n records in each of the partitions of topic, offsets
// first, first+1, ...; values "<topic>-<partition>@<offset>".
func kafkaParts(topic string, parts []int32, n int, first int64) *kafkaevent.Event {
	b := kafkaeventtest.NewBuilder()
	for _, p := range parts {
		for i := 0; i < n; i++ {
			off := first + int64(i)
			b.Add(topic, p, fmt.Appendf(nil, "%s-%d@%d", topic, p, off), kafkaeventtest.WithOffset(off))
		}
	}
	return b.Event()
}

// rid is a record's identity in test logs: "topic-N@offset".
func rid(r *kafkaevent.Record) string { return fmt.Sprintf("%s-%d@%d", r.Topic, r.Partition, r.Offset) }

// kafkaJSON is the wire form of a response.
func kafkaJSON(t testing.TB, resp batch.KafkaResponse) string {
	t.Helper()
	out, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// wantKafka is the wire form of a response reporting the given "topic-N@offset" items.
func wantKafka(items ...string) string {
	var b strings.Builder
	b.WriteString(`{"batchItemFailures":[`)
	for i, it := range items {
		part, off, _ := strings.Cut(it, "@")
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"itemIdentifier":{"partition":%q,"offset":%s}}`, part, off)
	}
	b.WriteString(`]}`)
	return b.String()
}

// callLog records handler calls, safe for concurrent use.
type callLog struct {
	mu    sync.Mutex
	calls map[string]int
	order map[string][]int64 // partition ID → offsets in call order
}

func (l *callLog) add(r *kafkaevent.Record) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls == nil {
		l.calls, l.order = map[string]int{}, map[string][]int64{}
	}
	l.calls[rid(r)]++
	id := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
	l.order[id] = append(l.order[id], r.Offset)
	return l.calls[rid(r)]
}

func (l *callLog) n(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[id]
}

func (l *callLog) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		n += c
	}
	return n
}

// gate lets handlers wait until a number of them are inside at once.
type gate struct {
	mu      sync.Mutex
	inside  int
	max     int
	changed chan struct{}
}

func newGate() *gate { return &gate{changed: make(chan struct{})} }

func (g *gate) enter() {
	g.mu.Lock()
	g.inside++
	g.max = max(g.max, g.inside)
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
}

func (g *gate) leave() {
	g.mu.Lock()
	g.inside--
	g.mu.Unlock()
}

// waitMax waits until at least n were inside at once, or timeout; it reports whether they were.
func (g *gate) waitMax(n int, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		g.mu.Lock()
		ok, ch := g.max >= n, g.changed
		g.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline:
			return false
		}
	}
}

func (g *gate) peak() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max
}

// Partitions are processed at once: the first record of each partition waits until the
// other partition's is inside too.
func TestKafkaPartitionsInParallel(t *testing.T) {
	ev := kafkaParts("orders", []int32{0, 1}, 3, 0)
	g := newGate()
	var calls atomic.Int64
	resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		calls.Add(1)
		g.enter()
		defer g.leave()
		if r.Offset == 0 && !g.waitMax(2, 5*time.Second) {
			return batch.Permanent(errors.New("the other partition never came in"))
		}
		return nil
	}, silent()...)
	if err != nil {
		t.Fatal(err)
	}
	if got := kafkaJSON(t, resp); got != wantKafka() {
		t.Errorf("response %s, want full success", got)
	}
	if g.peak() != 2 || calls.Load() != 6 {
		t.Errorf("peak %d partitions at once (want 2), %d calls (want 6)", g.peak(), calls.Load())
	}
}

// concurrency is WithConcurrency(n), or no option for n = 0 (the default).
func concurrency(n int) []batch.Option {
	if n == 0 {
		return nil
	}
	return []batch.Option{batch.WithConcurrency(n)}
}

// WithConcurrency bounds the partitions in flight; the default (limit=0 here) is all of them.
func TestKafkaConcurrencyBound(t *testing.T) {
	parts := []int32{0, 1, 2, 3, 4, 5}
	for _, tc := range []struct {
		limit, want int
	}{{1, 1}, {2, 2}, {4, 4}, {0, 6}, {100, 6}} {
		t.Run(fmt.Sprint("limit=", tc.limit), func(t *testing.T) {
			ev := kafkaParts("orders", parts, 4, 0)
			g := newGate()
			var calls atomic.Int64
			resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
				calls.Add(1)
				g.enter()
				defer g.leave()
				if r.Offset == 0 {
					// Wait (briefly) for as many partitions as the bound allows, so that a
					// bound that is not enforced shows up as a higher peak.
					g.waitMax(tc.want+1, 30*time.Millisecond)
				}
				return nil
			}, silent(concurrency(tc.limit)...)...)
			if err != nil || kafkaJSON(t, resp) != wantKafka() {
				t.Fatalf("response %s, %v", kafkaJSON(t, resp), err)
			}
			if g.peak() != tc.want {
				t.Errorf("peak %d partitions at once, want %d", g.peak(), tc.want)
			}
			if calls.Load() != int64(len(parts)*4) {
				t.Errorf("%d calls, want %d", calls.Load(), len(parts)*4)
			}
		})
	}
}

// The records of one partition are handled one at a time, in delivered order, offsets with
// gaps and topic names with dashes included.
func TestKafkaOrderWithinPartition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := kafkaeventtest.NewBuilder()
	want := map[string][]int64{}
	type tp struct {
		topic string
		n     int32
	}
	for _, p := range []tp{{"order-events", 0}, {"order-events", 10}, {"audit", 3}, {"a-1", 1}} {
		off := rng.Int64N(1000)
		for i := 0; i < 40; i++ {
			b.Add(p.topic, p.n, []byte("v"), kafkaeventtest.WithOffset(off))
			id := fmt.Sprintf("%s-%d", p.topic, p.n)
			want[id] = append(want[id], off)
			off += 1 + rng.Int64N(3)
		}
	}
	ev := b.Event()
	var log callLog
	var mu sync.Mutex
	inFlight := map[string]int{}
	var overlap atomic.Bool
	resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		id := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
		mu.Lock()
		inFlight[id]++
		if inFlight[id] > 1 {
			overlap.Store(true)
		}
		mu.Unlock()
		log.add(r)
		time.Sleep(time.Duration(r.Offset%7) * 50 * time.Microsecond)
		mu.Lock()
		inFlight[id]--
		mu.Unlock()
		return nil
	}, silent()...)
	if err != nil || kafkaJSON(t, resp) != wantKafka() {
		t.Fatalf("response %s, %v", kafkaJSON(t, resp), err)
	}
	if overlap.Load() {
		t.Error("two records of one partition were handled at once")
	}
	for id, offs := range want {
		if !slices.Equal(log.order[id], offs) {
			t.Errorf("%s handled in order %v, want %v", id, log.order[id], offs)
		}
	}
}

// badValue returns ev with the value of one record replaced by text that is not base64, as
// Lambda could deliver it, parsed with kafkaevent.Parse.
func badValue(t testing.TB, ev *kafkaevent.Event, topic string, partition int32, offset int64) *kafkaevent.Event {
	t.Helper()
	data, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var target *kafkaevent.Record
	for r := range ev.All() {
		if r.Topic == topic && r.Partition == partition && r.Offset == offset {
			target = r
		}
	}
	if target == nil {
		t.Fatalf("no record %s-%d@%d", topic, partition, offset)
	}
	old := fmt.Sprintf(`"value":%q`, base64.StdEncoding.EncodeToString(target.Value))
	if bytes.Count(data, []byte(old)) != 1 {
		t.Fatalf("value of %s-%d@%d is not unique in the event", topic, partition, offset)
	}
	data = bytes.Replace(data, []byte(old), []byte(`"value":"not*base64!"`), 1)
	out, err := kafkaevent.Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	for r := range out.All() {
		bad := r.Topic == topic && r.Partition == partition && r.Offset == offset
		if bad != (r.Err != nil) {
			t.Fatalf("after Parse, %s has Err %v", rid(r), r.Err)
		}
	}
	return out
}

// A record that fails stops its partition: it and every later record of the partition are
// reported, and not handled; the other partitions go on to the end.
func TestKafkaFailureStopsPartition(t *testing.T) {
	cases := []struct {
		name      string
		fail      func() error // what the failing record's handler does
		bad       bool         // the record does not decode instead
		wantCalls int          // calls for the failing record
	}{
		{"error after retries", func() error { return errTransient }, false, 3},
		{"permanent", func() error { return batch.Permanent(errTransient) }, false, 1},
		{"panic", func() error { panic("boom") }, false, 1},
		{"bad base64", nil, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := kafkaParts("orders", []int32{0, 1, 2}, 5, 10)
			if tc.bad {
				ev = badValue(t, ev, "orders", 1, 12)
			}
			var log callLog
			resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
				log.add(r)
				if r.Err != nil {
					t.Errorf("handler called for %s, which did not decode", rid(r))
				}
				if r.Partition == 1 && r.Offset == 12 {
					return tc.fail()
				}
				return nil
			}, silent(batch.WithRetry(3, time.Millisecond))...)
			if err != nil {
				t.Fatal(err)
			}
			want := wantKafka("orders-1@12", "orders-1@13", "orders-1@14")
			if got := kafkaJSON(t, resp); got != want {
				t.Errorf("response\n%s\nwant\n%s", got, want)
			}
			if n := log.n("orders-1@12"); n != tc.wantCalls {
				t.Errorf("failing record: %d calls, want %d", n, tc.wantCalls)
			}
			for _, id := range []string{"orders-1@13", "orders-1@14"} {
				if n := log.n(id); n != 0 {
					t.Errorf("%s, after the failure in its partition, handled %d times", id, n)
				}
			}
			for _, p := range []string{"orders-0", "orders-2"} {
				if got := log.order[p]; !slices.Equal(got, []int64{10, 11, 12, 13, 14}) {
					t.Errorf("%s handled %v, want every record in order", p, got)
				}
			}
			if got := log.order["orders-1"]; !slices.Equal(got[:2], []int64{10, 11}) {
				t.Errorf("orders-1 handled %v, want 10, 11 first", got)
			}
		})
	}
}

// Full success is an empty list, never null, and no error, with or without
// WithErrorWhenAllFail, for empty events too.
func TestKafkaFullSuccess(t *testing.T) {
	ok := func(context.Context, *kafkaevent.Record) error { return nil }
	for _, ev := range []*kafkaevent.Event{kafkaParts("orders", []int32{0, 1}, 3, 0), kafkaeventtest.NewBuilder().Event()} {
		for _, opts := range [][]batch.Option{silent(), silent(batch.WithErrorWhenAllFail())} {
			resp, err := batch.ProcessKafka(context.Background(), ev, ok, opts...)
			if err != nil {
				t.Errorf("%d records: error %v", ev.Len(), err)
			}
			if got := kafkaJSON(t, resp); got != `{"batchItemFailures":[]}` {
				t.Errorf("%d records: response %s", ev.Len(), got)
			}
			if resp.BatchItemFailures == nil {
				t.Errorf("%d records: BatchItemFailures is nil", ev.Len())
			}
		}
	}
	// The zero response marshals as an empty list too.
	if got := kafkaJSON(t, batch.KafkaResponse{}); got != `{"batchItemFailures":[]}` {
		t.Errorf("zero response = %s", got)
	}
	// KafkaHandler, for lambda.Start, is ProcessKafka.
	resp, err := batch.KafkaHandler(ok, silent()...)(context.Background(), kafkaParts("orders", []int32{0}, 2, 0))
	if err != nil || kafkaJSON(t, resp) != `{"batchItemFailures":[]}` {
		t.Errorf("KafkaHandler: %s, %v", kafkaJSON(t, resp), err)
	}
}

// When every record fails the response reports them all; WithErrorWhenAllFail returns
// ErrAllFailed instead, and only then.
func TestKafkaAllFailed(t *testing.T) {
	ev := kafkaParts("orders", []int32{0, 1}, 2, 5)
	fail := func(context.Context, *kafkaevent.Record) error { return batch.Permanent(errTransient) }
	all := wantKafka("orders-0@5", "orders-0@6", "orders-1@5", "orders-1@6")

	resp, err := batch.ProcessKafka(context.Background(), ev, fail, silent()...)
	if err != nil {
		t.Errorf("default: error %v, want a partial response", err)
	}
	if got := kafkaJSON(t, resp); got != all {
		t.Errorf("default: response %s, want %s", got, all)
	}

	resp, err = batch.ProcessKafka(context.Background(), ev, fail, silent(batch.WithErrorWhenAllFail())...)
	if !errors.Is(err, batch.ErrAllFailed) {
		t.Errorf("WithErrorWhenAllFail: error %v, want ErrAllFailed", err)
	}
	if got := kafkaJSON(t, resp); got != all {
		t.Errorf("WithErrorWhenAllFail: response %s, want %s", got, all)
	}

	// All but one failed: a partial response, no error.
	resp, err = batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		if r.Partition == 1 && r.Offset == 5 {
			return nil
		}
		return batch.Permanent(errTransient)
	}, silent(batch.WithErrorWhenAllFail())...)
	if err != nil {
		t.Errorf("one success: error %v", err)
	}
	if got, want := kafkaJSON(t, resp), wantKafka("orders-0@5", "orders-0@6", "orders-1@6"); got != want {
		t.Errorf("one success: response %s, want %s", got, want)
	}
}

// Near the deadline no record is started: the records not started by deadline-margin are
// reported, and the handler's context ends at deadline-margin, before the function's deadline.
func TestKafkaDeadline(t *testing.T) {
	const (
		timeout = 600 * time.Millisecond
		margin  = 300 * time.Millisecond
	)
	ev := kafkaParts("orders", []int32{0, 1, 2}, 30, 0)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	fnDeadline, _ := ctx.Deadline()
	stop := fnDeadline.Add(-margin)

	var mu sync.Mutex
	var running atomic.Int64 // handler calls not returned, some of which outlive ProcessKafka
	started := map[string]time.Time{}
	done := map[string]bool{}
	var slowSawDone time.Time
	resp, err := batch.ProcessKafka(ctx, ev, func(ctx context.Context, r *kafkaevent.Record) error {
		running.Add(1)
		defer running.Add(-1)
		now := time.Now()
		mu.Lock()
		started[rid(r)] = now
		mu.Unlock()
		switch r.Partition {
		case 0: // the slow record: waits for its context to end
			if r.Offset == 2 {
				if d, ok := ctx.Deadline(); !ok || d.After(stop) {
					t.Errorf("handler context deadline %v (set %v), want at most %v", d, ok, stop)
				}
				select {
				case <-ctx.Done():
					mu.Lock()
					slowSawDone = time.Now()
					mu.Unlock()
					return ctx.Err()
				case <-time.After(5 * time.Second):
					return errors.New("the handler's context never ended")
				}
			}
		case 1: // steady records that run past the stop time, ignoring ctx
			time.Sleep(40 * time.Millisecond)
		case 2: // fast records: done long before the stop time
		}
		mu.Lock()
		done[rid(r)] = true
		mu.Unlock()
		return nil
	}, silent(batch.WithDeadlineMargin(margin), batch.WithRetry(3, time.Millisecond))...)
	returned := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if !returned.Before(fnDeadline) {
		t.Errorf("returned %v after the function's deadline", returned.Sub(fnDeadline))
	}
	waitZero(t, &running) // the record of partition 1 in flight at deadline-margin was left running
	mu.Lock()
	defer mu.Unlock()
	if slowSawDone.IsZero() || !slowSawDone.Before(fnDeadline) {
		t.Errorf("slow handler saw ctx.Done at %v, deadline %v", slowSawDone, fnDeadline)
	}
	if slowSawDone.Before(stop) {
		t.Errorf("slow handler's context ended %v before deadline-margin", stop.Sub(slowSawDone))
	}

	reported := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		reported[fmt.Sprintf("%s@%d", f.ItemIdentifier.Partition, f.ItemIdentifier.Offset)] = true
	}
	both := 0
	for r := range ev.All() {
		id := rid(r)
		st, wasStarted := started[id]
		if wasStarted && !st.Before(stop) {
			t.Errorf("%s started %v after deadline-margin", id, st.Sub(stop))
		}
		switch {
		case !done[id] && !reported[id]:
			t.Errorf("%s neither handled nor reported", id)
		case done[id] && reported[id]:
			both++ // in flight at deadline-margin: reported, and its handler finished later
		}
	}
	if both > 1 {
		t.Errorf("%d records handled and reported, want at most the one in flight in partition 1", both)
	}
	// Partition 0 stops at the slow record; partition 1 is cut by the deadline; partition 2 is
	// done.
	for _, id := range []string{"orders-0@2", "orders-0@3", "orders-0@29", "orders-1@29"} {
		if !reported[id] {
			t.Errorf("%s not reported", id)
		}
	}
	for r := range ev.All() {
		if r.Partition == 2 && reported[rid(r)] {
			t.Errorf("%s reported", rid(r))
		}
	}
	// Reported records form the tail of each partition.
	checkKafkaSuffix(t, ev, resp)
}

// checkKafkaSuffix fails t unless, in each partition, the reported records are exactly the
// records from the first reported one to the end.
func checkKafkaSuffix(t testing.TB, ev *kafkaevent.Event, resp batch.KafkaResponse) {
	t.Helper()
	reported := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		reported[fmt.Sprintf("%s@%d", f.ItemIdentifier.Partition, f.ItemIdentifier.Offset)] = true
	}
	for i := range ev.Partitions {
		p := &ev.Partitions[i]
		tail := false
		for j := range p.Records {
			id := fmt.Sprintf("%s@%d", p.ID(), p.Records[j].Offset)
			if reported[id] {
				tail = true
			} else if tail {
				t.Errorf("%s not reported, after an earlier reported record of its partition", id)
			}
		}
	}
}

// With the deadline already past, or closer than the margin, nothing starts and everything
// is reported.
func TestKafkaExpiredDeadline(t *testing.T) {
	ev := kafkaParts("orders", []int32{0, 1}, 3, 7)
	all := wantKafka("orders-0@7", "orders-0@8", "orders-0@9", "orders-1@7", "orders-1@8", "orders-1@9")
	for _, left := range []time.Duration{-time.Second, 0, 100 * time.Millisecond} {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(left))
		var calls atomic.Int64
		resp, err := batch.ProcessKafka(ctx, ev, func(context.Context, *kafkaevent.Record) error {
			calls.Add(1)
			return nil
		}, silent(batch.WithDeadlineMargin(200*time.Millisecond))...)
		cancel()
		if err != nil {
			t.Errorf("%v left: error %v", left, err)
		}
		if got := kafkaJSON(t, resp); got != all || calls.Load() != 0 {
			t.Errorf("%v left: %d calls, response %s", left, calls.Load(), got)
		}
	}
}

// Ordinary errors are retried up to the attempts; Permanent errors and panics are not;
// decode errors never reach the handler.
func TestKafkaRetries(t *testing.T) {
	cases := []struct {
		name      string
		opts      []batch.Option
		failFirst int   // the handler fails this many calls with err, then succeeds
		err       error // nil: panic
		wantCalls int
		wantOK    bool
	}{
		{"transient then ok", []batch.Option{batch.WithRetry(3, time.Millisecond)}, 2, errTransient, 3, true},
		{"transient exhausted", []batch.Option{batch.WithRetry(3, time.Millisecond)}, 3, errTransient, 3, false},
		{"five attempts", []batch.Option{batch.WithRetry(5, time.Millisecond)}, 100, errTransient, 5, false},
		{"one attempt", []batch.Option{batch.WithRetry(1, time.Millisecond)}, 1, errTransient, 1, false},
		{"permanent", []batch.Option{batch.WithRetry(3, time.Millisecond)}, 1, batch.Permanent(errTransient), 1, false},
		{"wrapped permanent", []batch.Option{batch.WithRetry(3, time.Millisecond)}, 1, fmt.Errorf("save: %w", batch.Permanent(errTransient)), 1, false},
		{"panic", []batch.Option{batch.WithRetry(3, time.Millisecond)}, 1, nil, 1, false},
		{"context error", []batch.Option{batch.WithRetry(3, time.Millisecond)}, 1, context.DeadlineExceeded, 2, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := kafkaParts("orders", []int32{0}, 2, 0)
			var log callLog
			resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
				n := log.add(r)
				if r.Offset == 0 && n <= tc.failFirst {
					if tc.err == nil {
						panic(fmt.Sprintf("panic %d", n))
					}
					return tc.err
				}
				return nil
			}, silent(tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			if n := log.n("orders-0@0"); n != tc.wantCalls {
				t.Errorf("%d calls, want %d", n, tc.wantCalls)
			}
			want := wantKafka("orders-0@0", "orders-0@1")
			if tc.wantOK {
				want = wantKafka()
			}
			if got := kafkaJSON(t, resp); got != want {
				t.Errorf("response %s, want %s", got, want)
			}
		})
	}

	// The default: three attempts.
	ev := kafkaParts("orders", []int32{0}, 1, 0)
	var calls atomic.Int64
	_, _ = batch.ProcessKafka(context.Background(), ev, func(context.Context, *kafkaevent.Record) error {
		calls.Add(1)
		return errTransient
	}, silent(batch.WithClock(time.Now, func(context.Context, time.Duration) error { return nil }))...)
	if calls.Load() != 3 {
		t.Errorf("default: %d calls, want 3", calls.Load())
	}
}

// Retries wait with backoff: the first wait is in [backoff/2, backoff], and each later one
// doubles, up to 2 seconds.
func TestKafkaRetryBackoff(t *testing.T) {
	t.Run("real clock", func(t *testing.T) {
		ev := kafkaParts("orders", []int32{0}, 1, 0)
		var calls []time.Time
		_, err := batch.ProcessKafka(context.Background(), ev, func(context.Context, *kafkaevent.Record) error {
			calls = append(calls, time.Now())
			return errTransient
		}, silent(batch.WithRetry(3, 40*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) != 3 {
			t.Fatalf("%d calls, want 3", len(calls))
		}
		if d := calls[1].Sub(calls[0]); d < 20*time.Millisecond {
			t.Errorf("first wait %v, want at least 20ms", d)
		}
		if d := calls[2].Sub(calls[1]); d < 40*time.Millisecond {
			t.Errorf("second wait %v, want at least 40ms", d)
		}
	})
	t.Run("fake clock", func(t *testing.T) {
		for seed := 0; seed < 20; seed++ {
			clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			ev := kafkaParts("orders", []int32{0}, 1, 0)
			var calls int
			_, _ = batch.ProcessKafka(context.Background(), ev, func(context.Context, *kafkaevent.Record) error {
				calls++
				return errTransient
			}, silent(batch.WithRetry(7, 300*time.Millisecond), batch.WithClock(clock.Now, clock.Sleep))...)
			if calls != 7 {
				t.Fatalf("%d calls, want 7", calls)
			}
			base := []time.Duration{300, 600, 1200, 2000, 2000, 2000}
			if len(clock.sleeps) != len(base) {
				t.Fatalf("%d sleeps, want %d", len(clock.sleeps), len(base))
			}
			for i, d := range clock.sleeps {
				hi := base[i] * time.Millisecond
				if d < hi/2 || d > hi {
					t.Errorf("sleep %d: %v, want in [%v, %v]", i, d, hi/2, hi)
				}
			}
		}
	})
}

// fakeClock is a clock for WithClock whose Sleep moves it on at once.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	ends   []time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.sleeps = append(c.sleeps, d)
	c.ends = append(c.ends, c.now)
	return ctx.Err()
}

// Retries never sleep past deadline-margin: when the next wait would end after it, the
// record is given up and reported.
func TestKafkaRetryNeverSleepsPastDeadline(t *testing.T) {
	t.Run("fake clock", func(t *testing.T) {
		for seed := 0; seed < 20; seed++ {
			start := time.Now()
			clock := &fakeClock{now: start}
			// A real deadline far away, so that only the fake clock decides.
			ctx, cancel := context.WithDeadline(context.Background(), start.Add(10*time.Second+time.Minute))
			stop := start.Add(10 * time.Second)
			ev := kafkaParts("orders", []int32{0}, 2, 0)
			var calls int
			resp, _ := batch.ProcessKafka(ctx, ev, func(context.Context, *kafkaevent.Record) error {
				calls++
				return errTransient
			}, silent(batch.WithRetry(1000, time.Second), batch.WithDeadlineMargin(time.Minute),
				batch.WithClock(clock.Now, clock.Sleep))...)
			cancel()
			for i, end := range clock.ends {
				if end.After(stop) {
					t.Errorf("sleep %d ends %v after deadline-margin", i, end.Sub(stop))
				}
			}
			// Waits are at most 1 s, then 2 s each: 10 s holds at least 5 sleeps, and the time
			// left when giving up is less than the longest wait.
			if calls < 6 || calls != len(clock.sleeps)+1 {
				t.Errorf("%d calls, %d sleeps", calls, len(clock.sleeps))
			}
			if left := stop.Sub(clock.Now()); left > 2*time.Second {
				t.Errorf("gave up with %v left", left)
			}
			if got := kafkaJSON(t, resp); got != wantKafka("orders-0@0", "orders-0@1") {
				t.Errorf("response %s", got)
			}
		}
	})
	t.Run("real clock", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		fnDeadline, _ := ctx.Deadline()
		stop := fnDeadline.Add(-500 * time.Millisecond)
		ev := kafkaParts("orders", []int32{0}, 2, 0)
		var calls []time.Time
		resp, err := batch.ProcessKafka(ctx, ev, func(context.Context, *kafkaevent.Record) error {
			calls = append(calls, time.Now())
			return errTransient
		}, silent(batch.WithRetry(100, 300*time.Millisecond), batch.WithDeadlineMargin(500*time.Millisecond))...)
		returned := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		// The waits are at least 150, 300, 600 ms: at most three calls fit in 500 ms.
		if len(calls) < 1 || len(calls) > 3 {
			t.Errorf("%d calls", len(calls))
		}
		for i, c := range calls {
			if !c.Before(stop) {
				t.Errorf("call %d at %v after deadline-margin", i, c.Sub(stop))
			}
		}
		if returned.After(stop.Add(100 * time.Millisecond)) {
			t.Errorf("returned %v after deadline-margin: slept past it", returned.Sub(stop))
		}
		if got := kafkaJSON(t, resp); got != wantKafka("orders-0@0", "orders-0@1") {
			t.Errorf("response %s", got)
		}
	})
}

// A panic becomes a *PanicError with the value and the stack, and is not retried.
func TestPanicError(t *testing.T) {
	err := batch.CallHandler(context.Background(), func(context.Context) error { panic("boom") })
	var pe *batch.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("error %T %v, want *PanicError", err, err)
	}
	if pe.Value != "boom" || len(pe.Stack) == 0 || !strings.Contains(pe.Error(), "boom") {
		t.Errorf("PanicError{Value: %v, %d bytes of stack}: %q", pe.Value, len(pe.Stack), pe.Error())
	}
	if !bytes.Contains(pe.Stack, []byte("kafka_test.go")) {
		t.Errorf("stack does not show the panicking function:\n%s", pe.Stack)
	}
	if err := batch.CallHandler(context.Background(), func(context.Context) error { return errTransient }); err != errTransient {
		t.Errorf("error passed through as %v", err)
	}
	if err := batch.CallHandler(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Errorf("success: %v", err)
	}

	var calls int
	err = batch.Attempt(context.Background(), time.Time{}, func(context.Context) error {
		calls++
		panic(errTransient)
	}, batch.WithRetry(5, time.Millisecond))
	if !errors.As(err, &pe) || calls != 1 {
		t.Errorf("Attempt: %d calls, error %v; want one call and *PanicError", calls, err)
	}
	if pe.Value != errTransient {
		t.Errorf("PanicError.Value = %v", pe.Value)
	}

	calls = 0
	err = batch.Attempt(context.Background(), time.Time{}, func(context.Context) error {
		calls++
		return batch.Permanent(errTransient)
	}, batch.WithRetry(5, time.Millisecond))
	if calls != 1 || !batch.IsPermanent(err) || !errors.Is(err, errTransient) || err.Error() != errTransient.Error() {
		t.Errorf("Permanent: %d calls, error %v", calls, err)
	}
	if batch.Permanent(nil) != nil {
		t.Error("Permanent(nil) is not nil")
	}
	if batch.IsPermanent(errTransient) {
		t.Error("IsPermanent of an ordinary error")
	}
}

// WithFilter skips, as successes, the records the criteria do not match; the handler never
// sees them.
func TestKafkaFilter(t *testing.T) {
	crit, err := filter.ParseCriteria([]byte(`{"Filters":[{"Pattern":"{\"value\":{\"keep\":[true]}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b := kafkaeventtest.NewBuilder()
	keep := map[string]bool{}
	for p := int32(0); p < 2; p++ {
		for i := int64(0); i < 6; i++ {
			var v []byte
			switch i % 3 {
			case 0:
				v = fmt.Appendf(nil, `{"keep":true,"n":%d}`, i)
				keep[fmt.Sprintf("orders-%d@%d", p, i)] = true
			case 1:
				v = fmt.Appendf(nil, `{"keep":false,"n":%d}`, i)
			case 2:
				if i == 2 {
					v = nil // a tombstone
				} else {
					v = []byte("plain text")
				}
			}
			b.Add("orders", p, v, kafkaeventtest.WithOffset(i))
		}
	}
	ev := b.Event()
	var log callLog
	resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		log.add(r)
		if !keep[rid(r)] {
			t.Errorf("handler called for %s, which the filter does not match: %s", rid(r), r.Value)
		}
		if r.Partition == 1 && r.Offset == 3 {
			return batch.Permanent(errTransient)
		}
		return nil
	}, silent(batch.WithFilter(crit))...)
	if err != nil {
		t.Fatal(err)
	}
	// Partition 1 stops at offset 3: the filtered records after it are reported too, as
	// not processed yet.
	if got, want := kafkaJSON(t, resp), wantKafka("orders-1@3", "orders-1@4", "orders-1@5"); got != want {
		t.Errorf("response %s, want %s", got, want)
	}
	if !slices.Equal(log.order["orders-0"], []int64{0, 3}) || !slices.Equal(log.order["orders-1"], []int64{0, 3}) {
		t.Errorf("handled %v", log.order)
	}
	// Everything filtered out: full success without a call.
	none, _ := filter.ParseCriteria([]byte(`{"Filters":[{"Pattern":"{\"value\":{\"never\":[true]}}"}]}`))
	var calls atomic.Int64
	resp, err = batch.ProcessKafka(context.Background(), ev, func(context.Context, *kafkaevent.Record) error {
		calls.Add(1)
		return errTransient
	}, silent(batch.WithFilter(none), batch.WithErrorWhenAllFail())...)
	if err != nil || kafkaJSON(t, resp) != wantKafka() || calls.Load() != 0 {
		t.Errorf("all filtered: %d calls, %s, %v", calls.Load(), kafkaJSON(t, resp), err)
	}
}

// ddb is a dynalite server for a test, with a fresh table per store.
type ddb struct {
	srv    *standin.DynamoDB
	tables atomic.Int64
}

func startDDB(t testing.TB) *ddb {
	t.Helper()
	return &ddb{srv: standintest.StartDynamoDB(t)}
}

// store creates a new table and returns a store on it.
func (d *ddb) store(t testing.TB) *dynamodb.Store {
	t.Helper()
	name := fmt.Sprintf("idem-%d", d.tables.Add(1))
	client := d.srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := standin.CreateTable(ctx, client, dynamodb.TableInput(name)); err != nil {
		t.Fatal(err)
	}
	s, err := dynamodb.NewStore(client, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// idemPrefix is the key prefix of the tests' idempotency records.
const idemPrefix = "batch-test"

// holdKey acquires key in store with a Do that runs until release is closed; it returns when
// the key is held, and a function that releases it and waits for Do to finish.
func holdKey(t testing.TB, store idempotency.Store, key string) (release func()) {
	t.Helper()
	held, stop, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		// The result type is the processors' own, struct{}, as another invocation's would be.
		_, err := idempotency.Do(context.Background(), store, key, nil, func(context.Context) (struct{}, error) {
			close(held)
			<-stop
			return struct{}{}, nil
		}, idempotency.WithKeyPrefix(idemPrefix))
		done <- err
	}()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("holding %s: %v", key, err)
	}
	return func() {
		close(stop)
		if err := <-done; err != nil {
			t.Errorf("holding %s: %v", key, err)
		}
	}
}

// WithIdempotency against a real DynamoDB API (dynalite).
func TestKafkaIdempotency(t *testing.T) {
	db := startDDB(t)

	t.Run("completed records are skipped", func(t *testing.T) {
		store := db.store(t)
		ev := kafkaParts("orders", []int32{0, 1}, 4, 20)
		var log callLog
		h := func(ctx context.Context, r *kafkaevent.Record) error { log.add(r); return nil }
		opts := silent(batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)))
		for round, want := range []int{8, 0, 0} {
			before := log.total()
			resp, err := batch.ProcessKafka(context.Background(), ev, h, opts...)
			if err != nil || kafkaJSON(t, resp) != wantKafka() {
				t.Fatalf("round %d: %s, %v", round, kafkaJSON(t, resp), err)
			}
			if got := log.total() - before; got != want {
				t.Errorf("round %d: %d handler calls, want %d", round, got, want)
			}
		}
		// A batch that overlaps: only the new records are handled.
		before := log.total()
		resp, err := batch.ProcessKafka(context.Background(), kafkaParts("orders", []int32{0, 1}, 6, 20), h, opts...)
		if err != nil || kafkaJSON(t, resp) != wantKafka() {
			t.Fatalf("overlap: %s, %v", kafkaJSON(t, resp), err)
		}
		if got := log.total() - before; got != 4 || log.n("orders-0@24") != 1 || log.n("orders-1@25") != 1 {
			t.Errorf("overlap: %d handler calls, want 4 (offsets 24 and 25)", got)
		}
	})

	t.Run("records in progress elsewhere are reported", func(t *testing.T) {
		store := db.store(t)
		ev := kafkaParts("orders", []int32{0, 1}, 4, 0)
		release := holdKey(t, store, "orders-0-1")
		var log callLog
		h := func(ctx context.Context, r *kafkaevent.Record) error { log.add(r); return nil }
		opts := silent(batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)), batch.WithRetry(3, time.Millisecond))
		resp, err := batch.ProcessKafka(context.Background(), ev, h, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := kafkaJSON(t, resp), wantKafka("orders-0@1", "orders-0@2", "orders-0@3"); got != want {
			t.Errorf("response %s, want %s", got, want)
		}
		if log.n("orders-0@1") != 0 || log.n("orders-0@2") != 0 || !slices.Equal(log.order["orders-1"], []int64{0, 1, 2, 3}) {
			t.Errorf("handled %v", log.order)
		}
		// Once the other holder is done, the record counts as done (its result is stored) and
		// the rest of the partition goes through.
		release()
		resp, err = batch.ProcessKafka(context.Background(), ev, h, opts...)
		if err != nil || kafkaJSON(t, resp) != wantKafka() {
			t.Fatalf("after release: %s, %v", kafkaJSON(t, resp), err)
		}
		if !slices.Equal(log.order["orders-0"], []int64{0, 2, 3}) || log.n("orders-0@1") != 0 {
			t.Errorf("after release: handled %v", log.order)
		}
	})

	t.Run("failures free the key", func(t *testing.T) {
		store := db.store(t)
		ev := kafkaParts("orders", []int32{0}, 3, 0)
		var log callLog
		var fail atomic.Int64 // 1: transient, 2: panic, 3: permanent
		h := func(ctx context.Context, r *kafkaevent.Record) error {
			log.add(r)
			if r.Offset == 1 {
				switch fail.Load() {
				case 1:
					return errTransient
				case 2:
					panic("boom")
				case 3:
					return batch.Permanent(errTransient)
				}
			}
			return nil
		}
		opts := silent(batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)), batch.WithRetry(3, time.Millisecond))
		for kind, wantCalls := range map[int64]int{1: 3, 2: 1, 3: 1} {
			fail.Store(kind)
			before := log.n("orders-0@1")
			resp, err := batch.ProcessKafka(context.Background(), ev, h, opts...)
			if err != nil || kafkaJSON(t, resp) != wantKafka("orders-0@1", "orders-0@2") {
				t.Fatalf("failure %d: %s, %v", kind, kafkaJSON(t, resp), err)
			}
			if got := log.n("orders-0@1") - before; got != wantCalls {
				t.Errorf("failure %d: %d calls, want %d (the key must be free again after each)", kind, got, wantCalls)
			}
		}
		fail.Store(0)
		resp, err := batch.ProcessKafka(context.Background(), ev, h, opts...)
		if err != nil || kafkaJSON(t, resp) != wantKafka() {
			t.Fatalf("success: %s, %v", kafkaJSON(t, resp), err)
		}
		if got := log.n("orders-0@0"); got != 1 {
			t.Errorf("offset 0 handled %d times", got)
		}
		if got := log.n("orders-0@2"); got != 1 {
			t.Errorf("offset 2 handled %d times", got)
		}
		total := log.total()
		if _, err := batch.ProcessKafka(context.Background(), ev, h, opts...); err != nil || log.total() != total {
			t.Errorf("replay: %d more calls, %v", log.total()-total, err)
		}
	})
}

// When the context ends during the backoff, the record's error says so beside the handler's
// own error, which stays matchable. Before, the reason the retries stopped was dropped.
func TestRetryStoppedByContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	handlerErr := errors.New("database unavailable")
	calls := 0
	err := batch.Attempt(ctx, time.Time{}, func(context.Context) error {
		calls++
		cancel()
		return handlerErr
	}, batch.WithRetry(3, time.Hour))
	if calls != 1 {
		t.Errorf("%d calls, want 1", calls)
	}
	if !errors.Is(err, handlerErr) || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the handler's error and context.Canceled", err)
	}
}

// The response names a partition the way Lambda keyed it in the event, even when the key does
// not read back as the records' own topic and partition ("mytopic-01", "topic1", as some
// published fixtures have): Lambda matches itemIdentifier.partition against its own key.
func TestKafkaResponseKeepsLambdasKeys(t *testing.T) {
	rec := func(topic string, partition, offset int) string {
		return fmt.Sprintf(`{"topic":%q,"partition":%d,"offset":%d,"timestamp":1,"timestampType":"CREATE_TIME","value":"eA==","headers":[]}`, topic, partition, offset)
	}
	payload := `{"eventSource":"aws:kafka","records":{` +
		`"mytopic-01":[` + rec("mytopic", 1, 5) + `,` + rec("mytopic", 1, 6) + `],` +
		`"topic1":[` + rec("topic", 1, 9) + `]}}`
	ev, err := kafkaevent.Parse([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		if r.Offset == 6 || r.Offset == 9 {
			return batch.Permanent(errors.New("no"))
		}
		return nil
	}, silent()...)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(resp)
	want := `{"batchItemFailures":[{"itemIdentifier":{"partition":"mytopic-01","offset":6}},{"itemIdentifier":{"partition":"topic1","offset":9}}]}`
	if string(got) != want {
		t.Errorf("response\n got %s\nwant %s", got, want)
	}
}
