package batch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// keyedEvent is a Kafka event of topic "t" whose partition p holds one record per key of
// keys[p], at offsets 0, 1, ...; the key "" is a record without a key.
func keyedEvent(keys ...[]string) *kafkaevent.Event {
	ev := &kafkaevent.Event{}
	for p, ks := range keys {
		part := kafkaevent.Partition{Topic: "t", Number: int32(p)}
		for off, k := range ks {
			r := kafkaevent.Record{Topic: "t", Partition: int32(p), Offset: int64(off), Value: []byte(fmt.Sprintf("p%d-o%d", p, off))}
			if k != "" {
				r.Key = []byte(k)
			}
			part.Records = append(part.Records, r)
		}
		ev.Partitions = append(ev.Partitions, part)
	}
	return ev
}

// keyHook keeps the BatchResult of the last batch, and the group hooks' calls.
type keyHook struct {
	mu     sync.Mutex
	r      batch.BatchResult
	groups []string // "ID:offsets:reported" of each OnGroupEnd
}

func (h *keyHook) OnBatchStart(ctx context.Context, _ *batch.BatchInfo) context.Context { return ctx }
func (h *keyHook) OnBatchEnd(_ context.Context, _ *batch.BatchInfo, r *batch.BatchResult) {
	h.mu.Lock()
	h.r = *r
	h.mu.Unlock()
}
func (h *keyHook) OnGroupStart(ctx context.Context, _ *batch.GroupInfo) context.Context { return ctx }
func (h *keyHook) OnGroupEnd(_ context.Context, g *batch.GroupInfo, reported int) {
	var offs []int64
	for _, r := range g.Partition.Records {
		offs = append(offs, r.Offset)
	}
	h.mu.Lock()
	h.groups = append(h.groups, fmt.Sprintf("%s:%v:%d", g.ID, offs, reported))
	h.mu.Unlock()
}

// offsetsOf are the offsets the response reports for partition id.
func offsetsOf(resp batch.KafkaResponse, id string) []int64 {
	var out []int64
	for _, f := range resp.BatchItemFailures {
		if f.ItemIdentifier.Partition == id {
			out = append(out, f.ItemIdentifier.Offset)
		}
	}
	return out
}

func kquiet() batch.Option { return batch.WithLogger(slog.New(slog.DiscardHandler)) }

// Records of one key run in offset order, each once, under random handler delays, while
// records of different keys run at once: 4 partitions of 200 records over 30 keys and
// keyless records, WithKeyConcurrency(8).
func TestKeyConcurrencyOrderUnderRandomDelays(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 1))
	var keys [][]string
	for p := 0; p < 4; p++ {
		var ks []string
		for i := 0; i < 200; i++ {
			if rng.IntN(10) == 0 {
				ks = append(ks, "") // keyless
			} else {
				ks = append(ks, "k"+strconv.Itoa(rng.IntN(30)))
			}
		}
		keys = append(keys, ks)
	}
	ev := keyedEvent(keys...)
	var (
		mu            sync.Mutex
		seen          = map[string][]int64{} // partition/key: offsets in the order handled
		inFlight, top atomic.Int64
	)
	delays := make([]time.Duration, 4*200)
	for i := range delays {
		delays[i] = time.Duration(rng.IntN(500)) * time.Microsecond
	}
	h := func(ctx context.Context, r *kafkaevent.Record) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for old := top.Load(); n > old && !top.CompareAndSwap(old, n); old = top.Load() {
		}
		time.Sleep(delays[int(r.Partition)*200+int(r.Offset)]) // the work: a random length
		mu.Lock()
		k := fmt.Sprintf("%d/%s", r.Partition, r.Key)
		seen[k] = append(seen[k], r.Offset)
		mu.Unlock()
		return nil
	}
	resp, err := batch.ProcessKafka(context.Background(), ev, h, batch.WithKeyConcurrency(8), batch.WithIdempotency(idempotencytest.NewStore()), kquiet())
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%v, %+v", err, resp)
	}
	handled := 0
	for k, offs := range seen {
		handled += len(offs)
		if !slices.IsSorted(offs) || len(slices.Compact(slices.Clone(offs))) != len(offs) {
			t.Errorf("key %s out of order or twice: %v", k, offs)
		}
	}
	if handled != 800 {
		t.Errorf("handled %d records, want 800", handled)
	}
	if top.Load() > 8 || top.Load() < 2 {
		t.Errorf("at most %d records in flight, want 2 to 8", top.Load())
	}
	t.Logf("800 records, 4 partitions, at most %d in flight", top.Load())
}

// At most n records are in flight for the whole invocation, and n are reached: each handler
// waits until n are in flight (or the batch has no more to start).
func TestKeyConcurrencyBound(t *testing.T) {
	for _, n := range []int{1, 3, 16} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			var keys [][]string
			for p := 0; p < 3; p++ {
				var ks []string
				for i := 0; i < 40; i++ {
					ks = append(ks, fmt.Sprintf("k%d", i%20))
				}
				keys = append(keys, ks)
			}
			ev := keyedEvent(keys...)
			var inFlight, top, started atomic.Int64
			full := make(chan struct{})
			var once sync.Once
			h := func(ctx context.Context, r *kafkaevent.Record) error {
				c := inFlight.Add(1)
				defer inFlight.Add(-1)
				for old := top.Load(); c > old && !top.CompareAndSwap(old, c); old = top.Load() {
				}
				if c == int64(n) {
					once.Do(func() { close(full) })
				}
				if started.Add(1) <= int64(n) { // the first n wait for one another
					select {
					case <-full:
					case <-time.After(10 * time.Second):
						return errors.New("never n in flight")
					}
				}
				return nil
			}
			resp, err := batch.ProcessKafka(context.Background(), ev, h, batch.WithKeyConcurrency(n), batch.WithIdempotency(idempotencytest.NewStore()), kquiet())
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("%v, %+v", err, resp.BatchItemFailures)
			}
			if top.Load() != int64(n) || started.Load() != 120 {
				t.Errorf("at most %d in flight, %d handled; want %d, 120", top.Load(), started.Load(), n)
			}
		})
	}
}

// A record of key A that fails (after its retries, no sink) stops A's later records; other
// keys go on; the partition is reported from the lowest offset not done; the redelivery of
// the reported records skips, through the store, those that had succeeded, and handles the
// rest in key order.
func TestKeyConcurrencyFailureAndRedelivery(t *testing.T) {
	//              0    1    2    3    4    5    6    7    8    9
	keys := []string{"A", "B", "A", "C", "B", "A", "", "C", "", "A"}
	store := idempotencytest.NewStore()
	var (
		mu      sync.Mutex
		applied []string // "key@offset", each effect
		failing = true
	)
	h := func(ctx context.Context, r *kafkaevent.Record) error {
		mu.Lock()
		defer mu.Unlock()
		if failing && r.Offset == 2 {
			return errors.New("A@2 fails")
		}
		applied = append(applied, fmt.Sprintf("%s@%d", r.Key, r.Offset))
		return nil
	}
	hook := &keyHook{}
	opts := []batch.Option{batch.WithKeyConcurrency(4), batch.WithIdempotency(store), batch.WithRetry(2, 0), batch.WithHooks(hook), kquiet()}
	ev := keyedEvent(keys, []string{"A", "A"}) // partition 1: its own A, which goes on
	resp, err := batch.ProcessKafka(context.Background(), ev, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if got := offsetsOf(resp, "t-0"); !slices.Equal(got, []int64{2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("t-0 reported %v, want from 2 on", got)
	}
	if got := offsetsOf(resp, "t-1"); len(got) != 0 {
		t.Errorf("t-1 reported %v, want nothing", got)
	}
	slices.Sort(applied)
	want := []string{"@6", "@8", "A@0", "A@0", "A@1", "B@1", "B@4", "C@3", "C@7"}
	// partition 1's A@0, A@1 are the "A@0", "A@1" beside partition 0's A@0.
	if !slices.Equal(applied, want) {
		t.Errorf("applied %v, want %v: A@5 and A@9 must not start after A@2 failed", applied, want)
	}
	if r := hook.r; r.Processed != 9 || r.Failed != 1 || r.Reported != 8 {
		t.Errorf("result %+v, want 9 processed, 1 failed, 8 reported", r)
	}
	// The redelivery: Lambda resumes t-0 from offset 2.
	mu.Lock()
	failing, applied = false, nil
	mu.Unlock()
	again := keyedEvent(keys)
	again.Partitions[0].Records = again.Partitions[0].Records[2:]
	resp, err = batch.ProcessKafka(context.Background(), again, h, opts...)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%v, %+v", err, resp.BatchItemFailures)
	}
	if want := []string{"A@2", "A@5", "A@9"}; !slices.Equal(applied, want) {
		t.Errorf("redelivery applied %v, want %v (in order; the others skipped as done)", applied, want)
	}
	if r := hook.r; r.Processed != 8 || r.Replayed != 5 {
		t.Errorf("redelivery result %+v, want 8 processed, 5 replayed", r)
	}
}

// A sunk failure does not stop its key: the sink took it, and the key goes on.
func TestKeyConcurrencySunk(t *testing.T) {
	sink := &memSink{}
	ev := keyedEvent([]string{"A", "B", "A"})
	var ran atomic.Int64
	h := func(ctx context.Context, r *kafkaevent.Record) error {
		ran.Add(1)
		if r.Offset == 0 {
			return batch.Permanent(errors.New("bad"))
		}
		return nil
	}
	resp, err := batch.ProcessKafka(context.Background(), ev, h, batch.WithKeyConcurrency(2), batch.WithIdempotency(idempotencytest.NewStore()),
		batch.WithSink(sink, batch.SinkPermanent), kquiet())
	if err != nil || len(resp.BatchItemFailures) != 0 || ran.Load() != 3 {
		t.Errorf("%v, %+v, %d handled; want none reported, 3 handled", err, resp.BatchItemFailures, ran.Load())
	}
}

// At the deadline margin, the partition is reported from its lowest record not done: a
// record whose handler returns at its context's end, and one whose handler ignores it
// (abandoned); the other keys' records are done and not started again.
func TestKeyConcurrencyDeadline(t *testing.T) {
	for _, watches := range []bool{true, false} {
		t.Run(fmt.Sprintf("watches=%v", watches), func(t *testing.T) {
			//               0    1    2    3    4    5
			ev := keyedEvent([]string{"a", "X", "b", "X", "c", ""})
			release := make(chan struct{})
			defer close(release)
			var mu sync.Mutex
			var done []int64
			h := func(ctx context.Context, r *kafkaevent.Record) error {
				if string(r.Key) == "X" {
					if watches {
						<-ctx.Done()
						return ctx.Err()
					}
					<-release // ignores its context
					return nil
				}
				mu.Lock()
				done = append(done, r.Offset)
				mu.Unlock()
				return nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			hook := &keyHook{}
			resp, err := batch.ProcessKafka(ctx, ev, h, batch.WithKeyConcurrency(3), batch.WithIdempotency(idempotencytest.NewStore()),
				batch.WithDeadlineMargin(100*time.Millisecond), batch.WithRetry(1, 0), batch.WithHooks(hook), kquiet())
			if err != nil {
				t.Fatal(err)
			}
			if got := offsetsOf(resp, "t-0"); !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
				t.Errorf("reported %v, want from 1 on", got)
			}
			mu.Lock()
			slices.Sort(done)
			if !slices.Equal(done, []int64{0, 2, 4, 5}) {
				t.Errorf("done %v, want 0 2 4 5", done)
			}
			mu.Unlock()
			if r := hook.r; r.Processed != 4 || r.Failed != 1 || r.Reported != 5 {
				t.Errorf("result %+v, want 4 processed, 1 failed, 5 reported", r)
			}
		})
	}
}

// Keyless records are one sequence per partition, in partition order among themselves, and
// run beside keyed ones: the keyless record at offset 0 waits for the keyed record at offset
// 1 to run, which a partition handled in order would never do.
func TestKeyConcurrencyKeyless(t *testing.T) {
	ev := keyedEvent([]string{"", "k", "", "", "k", ""})
	keyedRan := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var keyless []int64
	h := func(ctx context.Context, r *kafkaevent.Record) error {
		if len(r.Key) > 0 {
			once.Do(func() { close(keyedRan) })
			return nil
		}
		if r.Offset == 0 {
			select {
			case <-keyedRan:
			case <-time.After(10 * time.Second):
				return errors.New("the keyed record did not run beside the keyless one")
			}
		}
		mu.Lock()
		keyless = append(keyless, r.Offset)
		mu.Unlock()
		return nil
	}
	resp, err := batch.ProcessKafka(context.Background(), ev, h, batch.WithKeyConcurrency(2), batch.WithIdempotency(idempotencytest.NewStore()), batch.WithRetry(1, 0), kquiet())
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%v, %+v", err, resp.BatchItemFailures)
	}
	if !slices.Equal(keyless, []int64{0, 2, 3, 5}) {
		t.Errorf("keyless records in %v, want 0 2 3 5", keyless)
	}
}

// The group hooks see one group per key sequence: its partition's ID, its records, and how
// many of them are reported.
func TestKeyConcurrencyGroupHooks(t *testing.T) {
	ev := keyedEvent([]string{"A", "B", "A", "B"})
	hook := &keyHook{}
	h := func(ctx context.Context, r *kafkaevent.Record) error {
		if r.Offset == 1 {
			return batch.Permanent(errors.New("B@1"))
		}
		return nil
	}
	if _, err := batch.ProcessKafka(context.Background(), ev, h, batch.WithKeyConcurrency(2), batch.WithIdempotency(idempotencytest.NewStore()), batch.WithHooks(hook), kquiet()); err != nil {
		t.Fatal(err)
	}
	slices.Sort(hook.groups)
	if want := []string{"t-0:[0 2]:0", "t-0:[1 3]:2"}; !slices.Equal(hook.groups, want) {
		t.Errorf("groups %v, want %v", hook.groups, want)
	}
}

// SQS FIFO: the message group is the key: groups at once, at most n messages in flight,
// each group in order, a failure stopping its group only.
func TestKeyConcurrencySQSFIFO(t *testing.T) {
	ev := &events.SQSEvent{}
	for i := 0; i < 60; i++ {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%02d", i), EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:q.fifo",
			Attributes: map[string]string{"MessageGroupId": fmt.Sprintf("g%d", i%6)}})
	}
	var (
		mu            sync.Mutex
		order         = map[string][]string{}
		inFlight, top atomic.Int64
	)
	h := func(ctx context.Context, m *events.SQSMessage) error {
		c := inFlight.Add(1)
		defer inFlight.Add(-1)
		for old := top.Load(); c > old && !top.CompareAndSwap(old, c); old = top.Load() {
		}
		time.Sleep(200 * time.Microsecond) // the work
		if m.MessageId == "m13" {          // group g1's third message
			return batch.Permanent(errors.New("m13"))
		}
		mu.Lock()
		g := m.Attributes["MessageGroupId"]
		order[g] = append(order[g], m.MessageId)
		mu.Unlock()
		return nil
	}
	resp, err := batch.ProcessSQS(context.Background(), ev, h, batch.WithKeyConcurrency(3), batch.WithIdempotency(idempotencytest.NewStore()), kquiet())
	if err != nil {
		t.Fatal(err)
	}
	var reported []string
	for _, f := range resp.BatchItemFailures {
		reported = append(reported, f.ItemIdentifier)
	}
	if want := []string{"m13", "m19", "m25", "m31", "m37", "m43", "m49", "m55"}; !slices.Equal(reported, want) {
		t.Errorf("reported %v, want %v", reported, want)
	}
	for g, ids := range order {
		if !slices.IsSorted(ids) {
			t.Errorf("group %s out of order: %v", g, ids)
		}
	}
	if top.Load() > 3 {
		t.Errorf("%d in flight, want at most 3", top.Load())
	}
}

// A handler's panic fails its record, stops its key, and the partition is reported from it;
// a batch with no time left is reported whole, no handler called.
func TestKeyConcurrencyPanicAndNoTime(t *testing.T) {
	ev := keyedEvent([]string{"A", "B", "A", "B", "C"})
	var mu sync.Mutex
	var ran []int64
	h := func(ctx context.Context, r *kafkaevent.Record) error {
		if r.Offset == 1 {
			panic("B@1")
		}
		mu.Lock()
		ran = append(ran, r.Offset)
		mu.Unlock()
		return nil
	}
	opts := []batch.Option{batch.WithKeyConcurrency(2), batch.WithIdempotency(idempotencytest.NewStore()), kquiet()}
	resp, err := batch.ProcessKafka(context.Background(), ev, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ran)
	if got := offsetsOf(resp, "t-0"); !slices.Equal(got, []int64{1, 2, 3, 4}) || !slices.Equal(ran, []int64{0, 2, 4}) {
		t.Errorf("reported %v, ran %v; want 1-4 reported, 0 2 4 ran (B@3 not started)", got, ran)
	}
	ran = nil
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	resp, err = batch.ProcessKafka(ctx, ev, h, opts...)
	if got := offsetsOf(resp, "t-0"); err != nil || !slices.Equal(got, []int64{0, 1, 2, 3, 4}) || len(ran) != 0 {
		t.Errorf("no time: %v, reported %v, ran %v; want all reported, none ran", err, got, ran)
	}
}
