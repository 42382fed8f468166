package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/idempotency"
)

const (
	standardARN = "arn:aws:sqs:us-east-1:123456789012:orders"
	fifoARN     = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
)

// sqsMessage is a message of the queue arn; group is its MessageGroupId (FIFO only).
func sqsMessage(arn, id, group, body string) events.SQSMessage {
	m := events.SQSMessage{
		MessageId:      id,
		ReceiptHandle:  "rh-" + id,
		Body:           body,
		EventSource:    "aws:sqs",
		EventSourceARN: arn,
		AWSRegion:      "us-east-1",
		Attributes: map[string]string{
			"ApproximateReceiveCount": "1",
			"SentTimestamp":           fmt.Sprint(time.Now().UnixMilli()),
		},
	}
	if group != "" {
		m.Attributes["MessageGroupId"] = group
		m.Attributes["MessageDeduplicationId"] = id
	}
	return m
}

// standardEvent is n messages "m-0" … of a standard queue.
func standardEvent(n int) *events.SQSEvent {
	ev := &events.SQSEvent{}
	for i := 0; i < n; i++ {
		ev.Records = append(ev.Records, sqsMessage(standardARN, fmt.Sprintf("m-%d", i), "", fmt.Sprintf(`{"n":%d}`, i)))
	}
	return ev
}

// fifoEvent is n messages of each group, interleaved: g0-0, g1-0, g2-0, g0-1, …
func fifoEvent(groups, n int) *events.SQSEvent {
	ev := &events.SQSEvent{}
	for i := 0; i < n; i++ {
		for g := 0; g < groups; g++ {
			id := fmt.Sprintf("g%d-%d", g, i)
			ev.Records = append(ev.Records, sqsMessage(fifoARN, id, fmt.Sprintf("g%d", g), fmt.Sprintf(`{"id":%q}`, id)))
		}
	}
	return ev
}

func sqsJSON(t testing.TB, resp events.SQSEventResponse) string {
	t.Helper()
	out, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func wantSQS(ids ...string) string {
	var b strings.Builder
	b.WriteString(`{"batchItemFailures":[`)
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"itemIdentifier":%q}`, id)
	}
	b.WriteString(`]}`)
	return b.String()
}

// msgLog records handler calls, safe for concurrent use.
type msgLog struct {
	mu    sync.Mutex
	calls map[string]int
	order map[string][]string // group → message IDs in call order
}

func (l *msgLog) add(m *events.SQSMessage) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls == nil {
		l.calls, l.order = map[string]int{}, map[string][]string{}
	}
	l.calls[m.MessageId]++
	g := m.Attributes["MessageGroupId"]
	l.order[g] = append(l.order[g], m.MessageId)
	return l.calls[m.MessageId]
}

func (l *msgLog) n(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[id]
}

func (l *msgLog) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		n += c
	}
	return n
}

// Standard queues: messages in parallel, bounded by WithConcurrency (default 10).
func TestSQSStandardParallelBounded(t *testing.T) {
	for _, tc := range []struct{ limit, want int }{{1, 1}, {3, 3}, {0, 10}, {10, 10}, {100, 16}} {
		t.Run(fmt.Sprint("limit=", tc.limit), func(t *testing.T) {
			ev := standardEvent(16)
			g := newGate()
			var calls atomic.Int64
			resp, err := batch.ProcessSQS(context.Background(), ev, func(ctx context.Context, m *events.SQSMessage) error {
				calls.Add(1)
				g.enter()
				defer g.leave()
				g.waitMax(tc.want+1, 30*time.Millisecond)
				return nil
			}, silent(concurrency(tc.limit)...)...)
			if err != nil || sqsJSON(t, resp) != wantSQS() {
				t.Fatalf("%s, %v", sqsJSON(t, resp), err)
			}
			if g.peak() != tc.want || calls.Load() != 16 {
				t.Errorf("peak %d messages at once (want %d), %d calls", g.peak(), tc.want, calls.Load())
			}
		})
	}
}

// Standard queues: a failure reports that message only; the others go on.
func TestSQSStandardFailure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fail      func() error
		wantCalls int
	}{
		{"error after retries", func() error { return errTransient }, 3},
		{"permanent", func() error { return batch.Permanent(errTransient) }, 1},
		{"panic", func() error { panic("boom") }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := standardEvent(8)
			var log msgLog
			resp, err := batch.ProcessSQS(context.Background(), ev, func(ctx context.Context, m *events.SQSMessage) error {
				log.add(m)
				if m.MessageId == "m-2" || m.MessageId == "m-5" {
					return tc.fail()
				}
				return nil
			}, silent(batch.WithRetry(3, time.Millisecond))...)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sqsJSON(t, resp), wantSQS("m-2", "m-5"); got != want {
				t.Errorf("response %s, want %s", got, want)
			}
			for i := 0; i < 8; i++ {
				id := fmt.Sprintf("m-%d", i)
				want := 1
				if id == "m-2" || id == "m-5" {
					want = tc.wantCalls
				}
				if log.n(id) != want {
					t.Errorf("%s: %d calls, want %d", id, log.n(id), want)
				}
			}
		})
	}
}

// FIFO queues: the messages of a group one at a time, in delivered order.
func TestSQSFIFOOrderPerGroup(t *testing.T) {
	ev := fifoEvent(4, 25)
	var log msgLog
	var mu sync.Mutex
	inFlight := map[string]int{}
	var overlap atomic.Bool
	resp, err := batch.ProcessSQS(context.Background(), ev, func(ctx context.Context, m *events.SQSMessage) error {
		g := m.Attributes["MessageGroupId"]
		mu.Lock()
		inFlight[g]++
		if inFlight[g] > 1 {
			overlap.Store(true)
		}
		mu.Unlock()
		log.add(m)
		time.Sleep(time.Duration(len(m.MessageId)%3) * 100 * time.Microsecond)
		mu.Lock()
		inFlight[g]--
		mu.Unlock()
		return nil
	}, silent()...)
	if err != nil || sqsJSON(t, resp) != wantSQS() {
		t.Fatalf("%s, %v", sqsJSON(t, resp), err)
	}
	if overlap.Load() {
		t.Error("two messages of one group were handled at once")
	}
	for g := 0; g < 4; g++ {
		var want []string
		for i := 0; i < 25; i++ {
			want = append(want, fmt.Sprintf("g%d-%d", g, i))
		}
		if got := log.order[fmt.Sprintf("g%d", g)]; !slices.Equal(got, want) {
			t.Errorf("group g%d handled in order %v", g, got)
		}
	}
}

// FIFO queues: groups in parallel, bounded by WithConcurrency.
func TestSQSFIFOGroupsInParallel(t *testing.T) {
	for _, tc := range []struct{ limit, want int }{{0, 2}, {1, 1}} {
		ev := fifoEvent(2, 3)
		g := newGate()
		resp, err := batch.ProcessSQS(context.Background(), ev, func(ctx context.Context, m *events.SQSMessage) error {
			g.enter()
			defer g.leave()
			if strings.HasSuffix(m.MessageId, "-0") && tc.want == 2 && !g.waitMax(2, 5*time.Second) {
				return batch.Permanent(errors.New("the other group never came in"))
			}
			g.waitMax(tc.want+1, 20*time.Millisecond)
			return nil
		}, silent(concurrency(tc.limit)...)...)
		if err != nil || sqsJSON(t, resp) != wantSQS() {
			t.Fatalf("limit %d: %s, %v", tc.limit, sqsJSON(t, resp), err)
		}
		if g.peak() != tc.want {
			t.Errorf("limit %d: peak %d groups at once, want %d", tc.limit, g.peak(), tc.want)
		}
	}
}

// FIFO queues: a failure reports the message and every later message of its group; other
// groups go on.
func TestSQSFIFOFailureStopsGroup(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fail      func() error
		wantCalls int
	}{
		{"error after retries", func() error { return errTransient }, 3},
		{"permanent", func() error { return batch.Permanent(errTransient) }, 1},
		{"panic", func() error { panic("boom") }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := fifoEvent(3, 4) // g0-0 g1-0 g2-0 g0-1 g1-1 g2-1 …
			var log msgLog
			resp, err := batch.ProcessSQS(context.Background(), ev, func(ctx context.Context, m *events.SQSMessage) error {
				log.add(m)
				if m.MessageId == "g1-1" {
					return tc.fail()
				}
				return nil
			}, silent(batch.WithRetry(3, time.Millisecond))...)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sqsJSON(t, resp), wantSQS("g1-1", "g1-2", "g1-3"); got != want {
				t.Errorf("response %s, want %s", got, want)
			}
			if log.n("g1-1") != tc.wantCalls || log.n("g1-2") != 0 || log.n("g1-3") != 0 {
				t.Errorf("g1 calls: %v", log.calls)
			}
			for _, g := range []string{"g0", "g2"} {
				if len(log.order[g]) != 4 {
					t.Errorf("group %s handled %v, want all four", g, log.order[g])
				}
			}
		})
	}
	// Without MessageGroupId attributes every message is in group "": one sequence.
	ev := fifoEvent(1, 4)
	for i := range ev.Records {
		delete(ev.Records[i].Attributes, "MessageGroupId")
	}
	resp, _ := batch.ProcessSQS(context.Background(), ev, func(ctx context.Context, m *events.SQSMessage) error {
		if m.MessageId == "g0-1" {
			return batch.Permanent(errTransient)
		}
		return nil
	}, silent()...)
	if got, want := sqsJSON(t, resp), wantSQS("g0-1", "g0-2", "g0-3"); got != want {
		t.Errorf("no group IDs: response %s, want %s", got, want)
	}
}

// The response is events.SQSEventResponse, with message IDs; an empty list on success.
func TestSQSResponse(t *testing.T) {
	ok := func(context.Context, *events.SQSMessage) error { return nil }
	for _, ev := range []*events.SQSEvent{standardEvent(3), fifoEvent(2, 2), {}} {
		for _, opts := range [][]batch.Option{silent(), silent(batch.WithErrorWhenAllFail())} {
			resp, err := batch.ProcessSQS(context.Background(), ev, ok, opts...)
			if err != nil || sqsJSON(t, resp) != `{"batchItemFailures":[]}` {
				t.Errorf("%d messages: %s, %v", len(ev.Records), sqsJSON(t, resp), err)
			}
		}
	}
	fail := func(context.Context, *events.SQSMessage) error { return batch.Permanent(errTransient) }
	for _, ev := range []*events.SQSEvent{standardEvent(3), fifoEvent(1, 3)} {
		ids := []string{}
		for _, m := range ev.Records {
			ids = append(ids, m.MessageId)
		}
		resp, err := batch.ProcessSQS(context.Background(), ev, fail, silent()...)
		if err != nil || sqsJSON(t, resp) != wantSQS(ids...) {
			t.Errorf("all failed: %s, %v", sqsJSON(t, resp), err)
		}
		resp, err = batch.ProcessSQS(context.Background(), ev, fail, silent(batch.WithErrorWhenAllFail())...)
		if !errors.Is(err, batch.ErrAllFailed) || sqsJSON(t, resp) != wantSQS(ids...) {
			t.Errorf("all failed, WithErrorWhenAllFail: %s, %v", sqsJSON(t, resp), err)
		}
	}
	// SQSHandler, for lambda.Start, is ProcessSQS.
	resp, err := batch.SQSHandler(func(ctx context.Context, m *events.SQSMessage) error {
		if m.MessageId == "m-1" {
			return batch.Permanent(errTransient)
		}
		return nil
	}, silent()...)(context.Background(), standardEvent(3))
	if err != nil || sqsJSON(t, resp) != wantSQS("m-1") {
		t.Errorf("SQSHandler: %s, %v", sqsJSON(t, resp), err)
	}
}

// Near the deadline no message is started; FIFO groups report the rest of the group.
func TestSQSDeadline(t *testing.T) {
	const margin = 300 * time.Millisecond
	for _, arn := range []string{standardARN, fifoARN} {
		t.Run(arn[strings.LastIndexByte(arn, ':')+1:], func(t *testing.T) {
			ev := fifoEvent(2, 20)
			for i := range ev.Records {
				ev.Records[i].EventSourceARN = arn
			}
			ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
			defer cancel()
			fnDeadline, _ := ctx.Deadline()
			stop := fnDeadline.Add(-margin)
			var mu sync.Mutex
			var running atomic.Int64 // handler calls not returned, some of which outlive ProcessSQS
			done := map[string]bool{}
			var late []string
			var sawDone atomic.Bool
			resp, err := batch.ProcessSQS(ctx, ev, func(ctx context.Context, m *events.SQSMessage) error {
				running.Add(1)
				defer running.Add(-1)
				if !time.Now().Before(stop) {
					mu.Lock()
					late = append(late, m.MessageId)
					mu.Unlock()
				}
				if m.MessageId == "g0-3" {
					select {
					case <-ctx.Done():
						if time.Now().Before(fnDeadline) {
							sawDone.Store(true)
						}
						return ctx.Err()
					case <-time.After(5 * time.Second):
						return errors.New("context never ended")
					}
				}
				time.Sleep(30 * time.Millisecond)
				mu.Lock()
				done[m.MessageId] = true
				mu.Unlock()
				return nil
			}, silent(batch.WithDeadlineMargin(margin), batch.WithConcurrency(2))...)
			if err != nil {
				t.Fatal(err)
			}
			if !time.Now().Before(fnDeadline) {
				t.Error("returned after the function's deadline")
			}
			waitZero(t, &running) // the messages in flight at deadline-margin were left running
			mu.Lock()
			defer mu.Unlock()
			if !sawDone.Load() {
				t.Error("the slow handler's context did not end before the function's deadline")
			}
			if len(late) > 0 {
				t.Errorf("started after deadline-margin: %v", late)
			}
			reported := map[string]bool{}
			for _, f := range resp.BatchItemFailures {
				reported[f.ItemIdentifier] = true
			}
			both := 0
			for _, m := range ev.Records {
				switch id := m.MessageId; {
				case !done[id] && !reported[id]:
					t.Errorf("%s neither handled nor reported", id)
				case done[id] && reported[id]:
					both++ // in flight at deadline-margin: reported, and its handler finished later
				}
			}
			if both > 2 {
				t.Errorf("%d messages handled and reported, want at most the 2 in flight (WithConcurrency(2))", both)
			}
			if !reported["g0-3"] || !reported["g0-19"] || !reported["g1-19"] {
				t.Errorf("response %s", sqsJSON(t, resp))
			}
			if arn == fifoARN {
				checkSQSFIFOSuffix(t, ev, resp)
			}
		})
	}
	// Deadline already past: nothing starts.
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel()
	var calls atomic.Int64
	resp, err := batch.ProcessSQS(ctx, standardEvent(3), func(context.Context, *events.SQSMessage) error {
		calls.Add(1)
		return nil
	}, silent()...)
	if err != nil || calls.Load() != 0 || sqsJSON(t, resp) != wantSQS("m-0", "m-1", "m-2") {
		t.Errorf("expired: %d calls, %s, %v", calls.Load(), sqsJSON(t, resp), err)
	}
}

// checkSQSFIFOSuffix fails t unless, in each group, the reported messages are exactly those
// from the first reported one to the end.
func checkSQSFIFOSuffix(t testing.TB, ev *events.SQSEvent, resp events.SQSEventResponse) {
	t.Helper()
	reported := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		reported[f.ItemIdentifier] = true
	}
	tail := map[string]bool{}
	for _, m := range ev.Records {
		g := m.Attributes["MessageGroupId"]
		if reported[m.MessageId] {
			tail[g] = true
		} else if tail[g] {
			t.Errorf("%s not reported, after an earlier reported message of group %s", m.MessageId, g)
		}
	}
}

// Retries, Permanent and panics work as for Kafka.
func TestSQSRetries(t *testing.T) {
	ev := standardEvent(1)
	var calls atomic.Int64
	resp, err := batch.ProcessSQS(context.Background(), ev, func(context.Context, *events.SQSMessage) error {
		if calls.Add(1) < 3 {
			return errTransient
		}
		return nil
	}, silent(batch.WithRetry(3, time.Millisecond))...)
	if err != nil || calls.Load() != 3 || sqsJSON(t, resp) != wantSQS() {
		t.Errorf("transient then ok: %d calls, %s, %v", calls.Load(), sqsJSON(t, resp), err)
	}
}

// WithFilter on the body.
func TestSQSFilter(t *testing.T) {
	crit, err := filter.ParseCriteria([]byte(`{"Filters":[{"Pattern":"{\"body\":{\"n\":[{\"numeric\":[\">=\",4]}]}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []*events.SQSEvent{standardEvent(8), fifoEvent(1, 8)} {
		for i := range ev.Records {
			ev.Records[i].Body = fmt.Sprintf(`{"n":%d}`, i)
		}
		var log msgLog
		resp, err := batch.ProcessSQS(context.Background(), ev, func(ctx context.Context, m *events.SQSMessage) error {
			log.add(m)
			return nil
		}, silent(batch.WithFilter(crit))...)
		if err != nil || sqsJSON(t, resp) != wantSQS() {
			t.Fatalf("%s, %v", sqsJSON(t, resp), err)
		}
		for i, m := range ev.Records {
			if want := min(1, i/4); log.n(m.MessageId) != want {
				t.Errorf("%s (n=%d): %d calls, want %d", m.MessageId, i, log.n(m.MessageId), want)
			}
		}
	}
}

// WithIdempotency against dynalite, keyed by message ID.
func TestSQSIdempotency(t *testing.T) {
	db := startDDB(t)
	t.Run("completed messages are skipped", func(t *testing.T) {
		store := db.store(t)
		for _, ev := range []*events.SQSEvent{standardEvent(6), fifoEvent(2, 3)} {
			var log msgLog
			h := func(ctx context.Context, m *events.SQSMessage) error { log.add(m); return nil }
			for round, want := range []int{6, 0} {
				before := log.total()
				resp, err := batch.ProcessSQS(context.Background(), ev, h,
					silent(batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)))...)
				if err != nil || sqsJSON(t, resp) != wantSQS() {
					t.Fatalf("round %d: %s, %v", round, sqsJSON(t, resp), err)
				}
				if got := log.total() - before; got != want {
					t.Errorf("round %d: %d calls, want %d", round, got, want)
				}
			}
		}
	})
	t.Run("messages in progress elsewhere are reported", func(t *testing.T) {
		store := db.store(t)
		opts := silent(batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)))
		release := holdKey(t, store, "g0-1")
		var log msgLog
		h := func(ctx context.Context, m *events.SQSMessage) error { log.add(m); return nil }
		resp, err := batch.ProcessSQS(context.Background(), fifoEvent(2, 3), h, opts...)
		if err != nil || sqsJSON(t, resp) != wantSQS("g0-1", "g0-2") {
			t.Errorf("FIFO: %s, %v", sqsJSON(t, resp), err)
		}
		if log.n("g0-1") != 0 || log.n("g0-2") != 0 || len(log.order["g1"]) != 3 {
			t.Errorf("FIFO: handled %v", log.order)
		}
		release()

		release = holdKey(t, store, "m-1")
		resp, err = batch.ProcessSQS(context.Background(), standardEvent(3), h, opts...)
		if err != nil || sqsJSON(t, resp) != wantSQS("m-1") {
			t.Errorf("standard: %s, %v", sqsJSON(t, resp), err)
		}
		if log.n("m-0") != 1 || log.n("m-1") != 0 || log.n("m-2") != 1 {
			t.Errorf("standard: calls %v", log.calls)
		}
		release()
	})
}

// Under WithIdempotency, a message's in-progress record must hold its key for as long as its
// handler may run. The handler's context ends at deadline-margin, but a handler that does not
// watch its context runs on after that, until the function's deadline at the latest. SQS
// standard queues deliver duplicates, possibly at the same time to another instance: that
// duplicate must find the key held (and report the message) rather than take the key over
// and perform the side effect a second time. The lease is taken from the function's deadline,
// not from the handler context's.
func TestSQSIdempotencyLeaseCoversHandler(t *testing.T) {
	db := startDDB(t)
	store := db.store(t)
	const margin = 400 * time.Millisecond
	opts := silent(batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)),
		batch.WithDeadlineMargin(margin), batch.WithRetry(1, time.Millisecond))

	var effects atomic.Int64
	firstStarted := make(chan time.Time, 1)
	slow := func(ctx context.Context, m *events.SQSMessage) error {
		// Blocks past its context's end (deadline-margin) without watching it, but ends well
		// before the function's deadline.
		hd, _ := ctx.Deadline()
		firstStarted <- hd
		time.Sleep(time.Until(hd.Add(margin / 2)))
		effects.Add(1)
		return nil
	}
	fast := func(ctx context.Context, m *events.SQSMessage) error {
		effects.Add(1)
		return nil
	}

	// Instance A gets the message with a 1 s timeout.
	ctxA, cancelA := context.WithTimeout(context.Background(), time.Second)
	defer cancelA()
	type result struct {
		resp events.SQSEventResponse
		err  error
	}
	doneA := make(chan result, 1)
	go func() {
		resp, err := batch.ProcessSQS(ctxA, standardEvent(1), slow, opts...)
		doneA <- result{resp, err}
	}()
	stopA := <-firstStarted

	// Instance B gets a duplicate of it while A's handler is still running, after A's
	// deadline-margin but before A's deadline.
	time.Sleep(time.Until(stopA.Add(margin / 4)))
	ctxB, cancelB := context.WithTimeout(context.Background(), time.Second)
	defer cancelB()
	respB, err := batch.ProcessSQS(ctxB, standardEvent(1), fast, opts...)
	if err != nil {
		t.Fatal(err)
	}
	a := <-doneA
	// A answered at its deadline-margin, with its handler still running: the message is
	// reported, and its key stays held until the handler ends.
	if a.err != nil || sqsJSON(t, a.resp) != wantSQS("m-0") {
		t.Fatalf("instance A: %s, %v", sqsJSON(t, a.resp), a.err)
	}
	for end := time.Now().Add(5 * time.Second); effects.Load() == 0 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := effects.Load(); n != 1 {
		t.Errorf("the side effect ran %d times: instance B took over the key while A's handler was still running", n)
	}
	if got := sqsJSON(t, respB); got != wantSQS("m-0") {
		t.Errorf("instance B: response %s, want the message reported (in progress elsewhere)", got)
	}
}
