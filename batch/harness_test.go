package batch_test

// The replay harness plays the event source mapping around ProcessKafka and ProcessSQS: it
// delivers batches, applies each partial-batch response the way Lambda does, and delivers
// again until every record is consumed. Handlers inject failures (transient ones that succeed
// on a later delivery, panics, records that always fail, records that do not decode, slow
// records that run into the deadline margin) and rounds inject expired deadlines and lost
// responses (a function that timed out after doing its work: Lambda retries the whole
// batch), all chosen from a seeded rand, so that a failing seed replays the same scenario.
//
// With WithIdempotency on dynalite, and a handler whose side effect (appending to a
// per-partition log) happens only inside the idempotent part, the ledger then checks:
//   - every record is handled exactly once (its side effect appears once), or, if it can never
//     succeed, is reported in every round that delivers it, until the harness gives up on it
//     after maxRetries rounds as Lambda does (MaximumRetryAttempts, an on-failure destination
//     or a dead-letter queue) and records it as dead;
//   - no record is lost: the harness commits past a record only if it was handled, filtered
//     out, or dead;
//   - within a partition (or a FIFO message group) the side effects are in delivered order.
// Negative controls run the same harness against processors that break each rule, and
// against ProcessKafka without idempotency, to show that the ledger catches what it claims to.

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

var harnessSeeds = flag.Int("harness.seeds", 2, "scenarios (seeds 1..n) the replay harness plays per source")

// fault is what a record's handler does.
type fault uint8

const (
	fOK           fault = iota
	fFiltered           // does not match the filter: the handler must never see it
	fFlaky              // fails its first call only: the retry inside the invocation succeeds
	fTransient          // fails every call of its first n deliveries, then succeeds
	fPanicOnce          // panics in its first delivery
	fSlowCtx            // first delivery: waits for its context to end, returns ctx.Err()
	fSlowIgnore         // first delivery: runs past deadline-margin ignoring ctx, then succeeds
	fPoison             // always fails with a Permanent error
	fPoisonPanic        // always panics
	fPoisonDecode       // its value is not base64 (Kafka): the handler must never see it
)

var faultNames = [...]string{"ok", "filtered", "flaky", "transient", "panic-once", "slow-ctx",
	"slow-ignore", "poison", "poison-panic", "poison-decode"}

func (f fault) String() string { return faultNames[f] }

// poison reports whether the record can never succeed.
func (f fault) poison() bool { return f >= fPoison }

// item is one record (or message) of the scenario.
type item struct {
	id     string // "topic-N@offset", or the message ID
	stream string // partition ID, FIFO message group, or "" (standard queue)
	seq    int    // position in its stream
	offset int64  // Kafka
	fault  fault
	n      int // fTransient: deliveries that fail
}

// value is the record's value (Kafka) or body (SQS): unique, and matched by the filter
// unless the record is fFiltered.
func (it *item) value() []byte {
	return fmt.Appendf(nil, `{"id":%q,"keep":%t}`, it.id, it.fault != fFiltered)
}

// faultMix says how many records get each fault; the rest are fOK.
type faultMix map[fault]int

// assignFaults gives faults to random items, following mix.
func assignFaults(rng *rand.Rand, items []*item, mix faultMix) {
	order := rng.Perm(len(items))
	k := 0
	for f := fFiltered; f <= fPoisonDecode; f++ {
		for i := 0; i < mix[f] && k < len(order); i++ {
			it := items[order[k]]
			k++
			it.fault = f
			if f == fTransient {
				it.n = 1 + rng.IntN(2)
			}
		}
	}
}

// roundKind is what happens to one invocation.
type roundKind uint8

const (
	rNormal  roundKind = iota
	rExpired           // the deadline has passed when the function starts
	rNear              // the deadline is closer than the margin
	rLost              // the function runs, but its response is lost (timeout, crash): whole batch again
)

var roundNames = [...]string{"normal", "expired", "near-deadline", "lost"}

func (k roundKind) String() string { return roundNames[k] }

// harnessConfig is a scenario.
type harnessConfig struct {
	seed       uint64
	maxRounds  int
	timeout    time.Duration // the function's timeout
	margin     time.Duration // WithDeadlineMargin
	attempts   int           // WithRetry
	maxBatch   int           // records per partition (Kafka) or messages (SQS) per batch
	maxRetries int           // rounds a record may block its stream before it is dead
	mix        faultMix
	// kind chooses each round's kind; nil: mostly normal, some expired, near and lost.
	kind func(round int, rng *rand.Rand) roundKind
	// noTailCheck turns off the check that reported records form the tail of their stream,
	// for the negative controls, so that the ledger has to catch the consequences.
	noTailCheck bool
}

func (c *harnessConfig) defaults() {
	if c.maxRounds == 0 {
		c.maxRounds = 300
	}
	// Generous times: the in-flight records still finish after deadline-margin (their
	// idempotency record is saved in dynalite, another process), and CI machines are loaded,
	// so the margin leaves room for that on a busy machine.
	if c.timeout == 0 {
		c.timeout = 1500 * time.Millisecond
	}
	if c.margin == 0 {
		c.margin = 700 * time.Millisecond
	}
	if c.attempts == 0 {
		c.attempts = 3
	}
	if c.maxBatch == 0 {
		c.maxBatch = 6
	}
	if c.maxRetries == 0 {
		c.maxRetries = 8
	}
	if c.kind == nil {
		c.kind = func(round int, rng *rand.Rand) roundKind {
			switch round { // every scenario has each kind early on, when most records are left
			case 2:
				return rLost
			case 3:
				return rExpired
			case 5:
				return rNear
			}
			switch x := rng.IntN(100); {
			case x < 8:
				return rExpired
			case x < 14:
				return rNear
			case x < 24:
				return rLost
			}
			return rNormal
		}
	}
}

// options are the processor options the harness needs: the deadline margin, fast retries,
// the filter, and silence.
func (c *harnessConfig) options(t testing.TB, filterField string) []batch.Option {
	crit, err := filter.ParseCriteria(fmt.Appendf(nil, `{"Filters":[{"Pattern":"{\"%s\":{\"keep\":[true]}}"}]}`, filterField))
	if err != nil {
		t.Fatal(err)
	}
	return silent(batch.WithDeadlineMargin(c.margin), batch.WithRetry(c.attempts, time.Millisecond), batch.WithFilter(crit))
}

// ledger is what the handlers did, and what the harness saw.
type ledger struct {
	cfg   *harnessConfig
	items map[string]*item

	mu         sync.Mutex
	round      int
	kind       roundKind
	fnDeadline time.Time
	stop       time.Time
	deliveries map[string]int // rounds in which the handler was called for the record
	lastRound  map[string]int
	roundCalls map[string]int // calls in the current round
	calls      map[string]int
	effects    map[string][]*item // stream → side effects, in the order they happened
	effectN    map[string]int     // record → side effects
	reports    map[string]int     // record → rounds in which it blocked its stream (was its first reported record)
	dead       map[string]int     // record → round it was given up
	committed  map[string]bool    // record → consumed (committed past, or deleted)
	// A handler that ignores its context is left running when the processor answers at
	// deadline-margin; its idempotency key stays in progress until it ends, or at most until
	// the deadline of its round. Reports while it may hold the key are the event source
	// mapping's retries of a record in progress elsewhere, not rounds the record blocked
	// its stream for: they are not counted towards maxRetries, and the next round waits a
	// little, as the mapping's backoff would.
	running  map[string]int       // record → handler calls not returned
	leaseEnd map[string]time.Time // record → when a call that outlived its round has surely let its key go
	answered int                  // the last round whose processor returned
	held     bool                 // a report was not counted: back off before the next round
	problems []string

	stats struct{ rounds, lost, expired, redelivered, replayed int }
}

func newLedger(cfg *harnessConfig, items []*item) *ledger {
	l := &ledger{cfg: cfg, items: map[string]*item{},
		deliveries: map[string]int{}, lastRound: map[string]int{}, roundCalls: map[string]int{},
		calls: map[string]int{}, effects: map[string][]*item{}, effectN: map[string]int{},
		reports: map[string]int{}, dead: map[string]int{}, committed: map[string]bool{},
		running: map[string]int{}, leaseEnd: map[string]time.Time{}}
	for _, it := range items {
		l.items[it.id] = it
	}
	return l
}

// problemf records a violation; its first word is its kind.
func (l *ledger) problemf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problemLocked(format, args...)
}

func (l *ledger) problemLocked(format string, args ...any) {
	l.problems = append(l.problems, fmt.Sprintf("round %d (%s): ", l.round, l.kind)+fmt.Sprintf(format, args...))
}

func (l *ledger) has(kind string) bool {
	for _, p := range l.problems {
		if _, rest, _ := strings.Cut(p, "): "); strings.HasPrefix(rest, kind) {
			return true
		}
	}
	return false
}

func (l *ledger) begin(round int, kind roundKind, fnDeadline time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.round, l.kind, l.fnDeadline, l.stop = round, kind, fnDeadline, fnDeadline.Add(-l.cfg.margin)
	clear(l.roundCalls)
}

var (
	errHarnessTransient = errors.New("harness: transient failure")
	errHarnessPoison    = errors.New("harness: poison record")
)

// handle is the record handler: it fails as the record's fault says, and otherwise performs
// the side effect, appending the record to its stream's log.
func (l *ledger) handle(ctx context.Context, id string) error {
	now := time.Now()
	l.mu.Lock()
	it := l.items[id]
	if it == nil {
		l.problemLocked("unknown: handler called for %s, not in the scenario", id)
		l.mu.Unlock()
		return batch.Permanent(errHarnessPoison)
	}
	if l.lastRound[id] != l.round {
		l.lastRound[id] = l.round
		l.deliveries[id]++
	}
	l.roundCalls[id]++
	l.calls[id]++
	l.running[id]++
	callRound := l.round
	defer func() {
		l.mu.Lock()
		l.running[id]--
		if l.answered >= callRound { // left running: Do completes or releases the key just after
			l.leaseEnd[id] = time.Now().Add(200 * time.Millisecond)
		}
		l.mu.Unlock()
	}()
	d, c := l.deliveries[id], l.roundCalls[id]
	stop, fnDeadline := l.stop, l.fnDeadline
	if l.kind == rExpired || l.kind == rNear {
		l.problemLocked("deadline: handler called for %s although the deadline is within the margin", id)
	} else if now.After(stop.Add(50 * time.Millisecond)) {
		l.problemLocked("deadline: %s started %v after deadline-margin", id, now.Sub(stop))
	}
	if c > l.cfg.attempts {
		l.problemLocked("retries: %s called %d times in one delivery, attempts %d", id, c, l.cfg.attempts)
	}
	if c > 1 && (it.fault == fPoison || it.fault == fPoisonPanic || it.fault == fPanicOnce && d == 1) {
		l.problemLocked("retries: %s (%s) called %d times in one delivery", id, it.fault, c)
	}
	l.mu.Unlock()

	switch it.fault {
	case fFiltered, fPoisonDecode:
		l.problemf("filter: handler called for %s (%s)", id, it.fault)
		return batch.Permanent(errHarnessPoison)
	case fFlaky:
		if d == 1 && c == 1 {
			return errHarnessTransient
		}
	case fTransient:
		if d <= it.n {
			return errHarnessTransient
		}
	case fPanicOnce:
		if d == 1 {
			panic("harness: panic on first delivery of " + id)
		}
	case fSlowCtx:
		if d == 1 {
			select {
			case <-ctx.Done():
				if now := time.Now(); !now.Before(fnDeadline) {
					l.problemf("deadline: %s saw ctx.Done %v after the function's deadline", id, now.Sub(fnDeadline))
				}
				return ctx.Err()
			case <-time.After(10 * time.Second):
				l.problemf("deadline: the context of %s never ended", id)
				return errHarnessTransient
			}
		}
	case fSlowIgnore:
		if d == 1 {
			if hd, ok := ctx.Deadline(); !ok || hd.After(stop) {
				l.problemf("deadline: handler context of %s ends %v (set %v), after deadline-margin %v", id, hd, ok, stop)
			}
			time.Sleep(time.Until(stop.Add(l.cfg.margin / 3)))
		}
	case fPoison:
		return batch.Permanent(errHarnessPoison)
	case fPoisonPanic:
		panic("harness: poison " + id)
	}
	// The side effect.
	l.mu.Lock()
	l.effects[it.stream] = append(l.effects[it.stream], it)
	l.effectN[id]++
	if n := l.effectN[id]; n > 1 {
		l.problemLocked("duplicate: %s handled %d times", id, n)
	}
	l.mu.Unlock()
	return nil
}

// commit records that the source moved past it without redelivering it.
func (l *ledger) commit(it *item) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.committed[it.id] {
		return
	}
	l.committed[it.id] = true
	switch {
	case it.fault == fFiltered:
	case l.effectN[it.id] == 0:
		l.problemLocked("lost: %s (%s) committed, never handled", it.id, it.fault)
	}
}

// block records that it was the first reported record of its stream; it returns true when
// the record has now blocked its stream for maxRetries rounds, and is dead.
func (l *ledger) block(it *item) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[it.id] > 0 || time.Now().Before(l.leaseEnd[it.id]) {
		l.held = true
		return false
	}
	l.reports[it.id]++
	if l.reports[it.id] < l.cfg.maxRetries {
		return false
	}
	l.dead[it.id] = l.round
	l.committed[it.id] = true
	return true
}

// roundChecks checks what every invocation must do, whatever the source: calls, timing, and
// that records that can never succeed are reported.
func (l *ledger) roundChecks(kind roundKind, delivered []*item, reported map[string]bool, returned time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if (kind == rNormal || kind == rLost) && !returned.Before(l.fnDeadline) {
		l.problemLocked("deadline: returned %v after the function's deadline", returned.Sub(l.fnDeadline))
	}
	if err != nil {
		return // the whole batch is retried
	}
	for _, it := range delivered {
		if (kind == rExpired || kind == rNear) && !reported[it.id] {
			l.problemLocked("deadline: %s not reported although nothing could start", it.id)
		}
		if it.fault.poison() && !reported[it.id] {
			l.problemLocked("lost: %s (%s) delivered and not reported", it.id, it.fault)
		}
	}
}

// finish checks the final state: every record handled once, filtered, or dead as poison; side
// effects in delivered order per stream (ordered says whether order is required).
func (l *ledger) finish(all []*item, ordered bool) {
	// Handlers left running by an answer at deadline-margin finish first.
	for wait := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		l.mu.Lock()
		n := 0
		for _, r := range l.running {
			n += r
		}
		if n == 0 || time.Now().After(wait) {
			break // holding l.mu
		}
		l.mu.Unlock()
	}
	defer l.mu.Unlock()
	streams := map[string][]*item{}
	for _, it := range all {
		n, dead := l.effectN[it.id], l.dead[it.id] > 0
		switch {
		case !l.committed[it.id]:
			l.problemLocked("lost: %s (%s) never consumed", it.id, it.fault)
		case it.fault == fFiltered:
			if n != 0 || l.calls[it.id] != 0 || dead {
				l.problemLocked("filter: %s filtered out, but %d calls, %d side effects, dead %v", it.id, l.calls[it.id], n, dead)
			}
		case it.fault.poison():
			if !dead || n != 0 {
				l.problemLocked("dead: %s (%s) dead %v after %d reports, %d side effects", it.id, it.fault, dead, l.reports[it.id], n)
			}
		default:
			if dead {
				l.problemLocked("dead: %s (%s) given up after %d reports, %d calls in %d deliveries", it.id, it.fault, l.reports[it.id], l.calls[it.id], l.deliveries[it.id])
			}
			if n != 1 {
				l.problemLocked("exactly-once: %s (%s) handled %d times", it.id, it.fault, n)
			}
			streams[it.stream] = append(streams[it.stream], it)
		}
		if l.deliveries[it.id] > 1 {
			l.stats.redelivered++
		}
	}
	if !ordered {
		return
	}
	for stream, want := range streams {
		got := l.effects[stream]
		for i := 1; i < len(got); i++ {
			if got[i].seq <= got[i-1].seq {
				l.problemLocked("order: in %s, %s handled after %s", stream, got[i].id, got[i-1].id)
				break
			}
		}
		if !slices.Equal(got, want) && !l.hasLocked("order") {
			l.problemLocked("order: %s handled %s, delivered %s", stream, ids(got), ids(want))
		}
	}
}

func (l *ledger) hasLocked(kind string) bool {
	for _, p := range l.problems {
		if _, rest, _ := strings.Cut(p, "): "); strings.HasPrefix(rest, kind) {
			return true
		}
	}
	return false
}

func ids(items []*item) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = it.id
	}
	return strings.Join(s, " ")
}

// report fails t with the ledger's problems, and logs what the scenario went through.
func (l *ledger) report(t testing.TB) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	calls := 0
	for _, n := range l.calls {
		calls += n
	}
	faults := map[fault]int{}
	for _, it := range l.items {
		faults[it.fault]++
	}
	t.Logf("seed %d: %d records %v; %d rounds (%d lost, %d expired or near); %d handler calls; %d records delivered more than once; %d deliveries after the side effect; %d dead",
		l.cfg.seed, len(l.items), faults, l.stats.rounds, l.stats.lost, l.stats.expired, calls, l.stats.redelivered, l.stats.replayed, len(l.dead))
	for i, p := range l.problems {
		if i == 30 {
			t.Errorf("… and %d more problems", len(l.problems)-i)
			break
		}
		t.Error(p)
	}
}

// invoke runs one invocation with a deadline of the round's kind; it returns the function's
// deadline and when the processor returned.
func (l *ledger) invoke(round int, kind roundKind, delivered []*item, run func(ctx context.Context)) (returned time.Time) {
	l.mu.Lock()
	held := l.held
	l.held = false
	l.mu.Unlock()
	if held {
		time.Sleep(50 * time.Millisecond)
	}
	now := time.Now()
	fnDeadline := now.Add(l.cfg.timeout)
	switch kind {
	case rExpired:
		fnDeadline = now.Add(-time.Millisecond)
	case rNear:
		fnDeadline = now.Add(l.cfg.margin / 2)
	}
	l.begin(round, kind, fnDeadline)
	l.mu.Lock()
	for _, it := range delivered {
		if l.effectN[it.id] > 0 && kind != rExpired && kind != rNear {
			l.stats.replayed++ // delivered again after its side effect: idempotency must skip it
		}
	}
	l.mu.Unlock()
	ctx, cancel := context.WithDeadline(context.Background(), fnDeadline)
	defer cancel()
	run(ctx)
	returned = time.Now()
	l.mu.Lock()
	l.answered = round
	l.mu.Unlock()
	l.stats.rounds++
	switch kind {
	case rLost:
		l.stats.lost++
	case rExpired, rNear:
		l.stats.expired++
	}
	return returned
}

// ---- Kafka ----

// kafkaStream is one partition of the scenario and the position the source has committed.
type kafkaStream struct {
	topic string
	n     int32
	items []*item
	pos   int
}

func (s *kafkaStream) id() string { return fmt.Sprintf("%s-%d", s.topic, s.n) }

// kafkaProcessor is ProcessKafka or a stand-in for the negative controls.
type kafkaProcessor func(ctx context.Context, ev *kafkaevent.Event, h batch.RecordFunc) (batch.KafkaResponse, error)

// kafkaScenario makes the partitions of a scenario: offsets from a random base, with gaps,
// one partition near the top of the int64 range; topic names with dashes.
func kafkaScenario(rng *rand.Rand, perPartition int, mix faultMix) ([]*kafkaStream, []*item) {
	streams := []*kafkaStream{{topic: "order-events", n: 0}, {topic: "order-events", n: 1}, {topic: "audit", n: 7}}
	var all []*item
	for i, s := range streams {
		off := rng.Int64N(1_000_000)
		if i == 2 {
			off = 1<<62 + rng.Int64N(1<<40)
		}
		for j := 0; j < perPartition; j++ {
			it := &item{id: fmt.Sprintf("%s@%d", s.id(), off), stream: s.id(), seq: j, offset: off}
			s.items = append(s.items, it)
			all = append(all, it)
			off += 1 + rng.Int64N(3)
		}
	}
	assignFaults(rng, all, mix)
	return streams, all
}

// replayKafka plays the event source mapping over the partitions until every record is
// consumed, and returns the ledger.
func replayKafka(t testing.TB, cfg harnessConfig, streams []*kafkaStream, all []*item, process kafkaProcessor) *ledger {
	t.Helper()
	cfg.defaults()
	rng := rand.New(rand.NewPCG(cfg.seed, 0x6b61666b61))
	l := newLedger(&cfg, all)
	handler := func(ctx context.Context, r *kafkaevent.Record) error {
		return l.handle(ctx, fmt.Sprintf("%s-%d@%d", r.Topic, r.Partition, r.Offset))
	}
	for round := 1; ; round++ {
		var open []*kafkaStream
		for _, s := range streams {
			if s.pos < len(s.items) {
				open = append(open, s)
			}
		}
		if len(open) == 0 {
			break
		}
		if round > cfg.maxRounds {
			l.problemf("lost: records still not consumed after %d rounds", cfg.maxRounds)
			break
		}
		kind := cfg.kind(round, rng)

		// The batch: some of the partitions with records left, up to maxBatch records each
		// from the committed position, with their real offsets.
		b := kafkaeventtest.NewBuilder()
		batchOf := map[string][]*item{}
		var delivered []*item
		for i, s := range open {
			if len(open) > 1 && rng.IntN(5) == 0 && !(i == len(open)-1 && len(batchOf) == 0) {
				continue // this partition has nothing in this batch
			}
			end := min(len(s.items), s.pos+1+rng.IntN(cfg.maxBatch))
			for _, it := range s.items[s.pos:end] {
				b.Add(s.topic, s.n, it.value(), kafkaeventtest.WithOffset(it.offset), kafkaeventtest.WithKey([]byte(it.id)))
				batchOf[s.id()] = append(batchOf[s.id()], it)
				delivered = append(delivered, it)
			}
		}
		ev := kafkaWire(t, l, b.Event(), delivered)

		var resp batch.KafkaResponse
		var err error
		returned := l.invoke(round, kind, delivered, func(ctx context.Context) { resp, err = process(ctx, ev, handler) })
		if kind == rLost {
			continue // Lambda never saw a response: the whole batch comes again
		}

		// Validate the response as Lambda does: an item not in the batch fails the batch.
		reported := map[string]bool{}
		first := map[string]int{} // partition → index in its batch of the lowest reported offset
		for _, f := range resp.BatchItemFailures {
			id := fmt.Sprintf("%s@%d", f.ItemIdentifier.Partition, f.ItemIdentifier.Offset)
			idx := slices.IndexFunc(batchOf[f.ItemIdentifier.Partition], func(it *item) bool { return it.id == id })
			if idx < 0 || reported[id] {
				l.problemf("response: item %s not in the batch, or twice: the whole batch is retried", id)
				err = errors.New("invalid response")
				break
			}
			reported[id] = true
			if j, ok := first[f.ItemIdentifier.Partition]; !ok || idx < j {
				first[f.ItemIdentifier.Partition] = idx
			}
		}
		if err != nil { // the whole batch again
			reported = map[string]bool{}
			for _, it := range delivered {
				reported[it.id] = true
			}
			for p := range batchOf {
				first[p] = 0
			}
		}
		l.roundChecks(kind, delivered, reported, returned, err)
		if !cfg.noTailCheck && err == nil {
			for p, items := range batchOf {
				if j, ok := first[p]; ok {
					for _, it := range items[j:] {
						if !reported[it.id] {
							l.problemf("tail: %s not reported, after the reported %s", it.id, items[j].id)
						}
					}
				}
			}
		}

		// Apply it: a reported partition resumes from its lowest reported offset, the others
		// move past the batch; a record that has blocked its partition maxRetries times is
		// given up (failure destination) and skipped.
		for _, s := range streams {
			items := batchOf[s.id()]
			if len(items) == 0 {
				continue
			}
			j, failed := first[s.id()]
			if !failed {
				j = len(items)
			}
			for _, it := range items[:j] {
				l.commit(it)
			}
			s.pos += j
			if failed && kind == rNormal && l.block(s.items[s.pos]) {
				s.pos++
			}
		}
	}
	l.finish(all, true)
	return l
}

// kafkaWire sends the event through its wire form, as Lambda delivers it, with the values of
// fPoisonDecode records replaced by text that is not base64, and parses it back.
func kafkaWire(t testing.TB, l *ledger, ev *kafkaevent.Event, delivered []*item) *kafkaevent.Event {
	t.Helper()
	data, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range delivered {
		if it.fault == fPoisonDecode {
			old := fmt.Appendf(nil, `"value":%q`, base64.StdEncoding.EncodeToString(it.value()))
			if bytes.Count(data, old) != 1 {
				t.Fatalf("value of %s not found once in the event", it.id)
			}
			data = bytes.Replace(data, old, []byte(`"value":"%%not base64%%"`), 1)
		}
	}
	out, err := kafkaevent.Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	for r := range out.All() {
		id := fmt.Sprintf("%s-%d@%d", r.Topic, r.Partition, r.Offset)
		it := l.items[id]
		if it == nil || (it.fault == fPoisonDecode) != (r.Err != nil) {
			t.Fatalf("after Parse, %s: Err %v", id, r.Err)
		}
	}
	return out
}

// allFaults is a scenario with every fault.
var allFaults = faultMix{
	fFiltered: 5, fFlaky: 3, fTransient: 4, fPanicOnce: 3, fSlowCtx: 2, fSlowIgnore: 2,
	fPoison: 1, fPoisonPanic: 1, fPoisonDecode: 1,
}

// The replay harness against ProcessKafka with idempotency on dynalite: exactly once, in
// order, nothing lost, poison records reported until given up.
func TestReplayKafka(t *testing.T) {
	db := startDDB(t)
	replayed := 0 // deliveries of records already handled, which idempotency must skip
	defer func() {
		if replayed == 0 && !t.Failed() {
			t.Error("no record was delivered again after its side effect: idempotency went untested")
		}
	}()
	for seed := uint64(1); seed <= uint64(*harnessSeeds); seed++ {
		for _, variant := range []struct {
			name string
			opts []batch.Option
		}{
			{"partial", nil},
			{"error-when-all-fail", []batch.Option{batch.WithErrorWhenAllFail(), batch.WithConcurrency(2)}},
		} {
			if variant.name != "partial" && seed > 1 {
				continue
			}
			t.Run(fmt.Sprintf("seed=%d/%s", seed, variant.name), func(t *testing.T) {
				cfg := harnessConfig{seed: seed, mix: allFaults}
				cfg.defaults()
				streams, all := kafkaScenario(rand.New(rand.NewPCG(seed, 1)), 16, cfg.mix)
				store := db.store(t)
				opts := append(cfg.options(t, "value"), batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)))
				opts = append(opts, variant.opts...)
				l := replayKafka(t, cfg, streams, all, func(ctx context.Context, ev *kafkaevent.Event, h batch.RecordFunc) (batch.KafkaResponse, error) {
					return batch.ProcessKafka(ctx, ev, h, opts...)
				})
				l.report(t)
				if l.stats.lost == 0 || l.stats.redelivered == 0 {
					t.Errorf("the scenario had %d lost rounds and %d redelivered records: too easy", l.stats.lost, l.stats.redelivered)
				}
				replayed += l.stats.replayed
			})
		}
	}
}

// ---- SQS ----

// sqsStream is a FIFO message group, or the whole standard queue; pending is what the queue
// still holds, in order.
type sqsStream struct {
	group   string
	pending []*item
}

type sqsProcessor func(ctx context.Context, ev *events.SQSEvent, h batch.MessageFunc) (events.SQSEventResponse, error)

// sqsScenario makes the groups (FIFO) or the one stream (standard) of a scenario.
func sqsScenario(rng *rand.Rand, fifo bool, groups, perGroup int, mix faultMix) ([]*sqsStream, []*item) {
	var streams []*sqsStream
	var all []*item
	if !fifo {
		groups, perGroup = 1, groups*perGroup
	}
	for g := 0; g < groups; g++ {
		s := &sqsStream{}
		if fifo {
			s.group = fmt.Sprintf("customer-%d", g)
		}
		for j := 0; j < perGroup; j++ {
			it := &item{id: fmt.Sprintf("%08x-%d-%d", rng.Uint32(), g, j), stream: s.group, seq: j}
			s.pending = append(s.pending, it)
			all = append(all, it)
		}
		streams = append(streams, s)
	}
	delete(mix, fPoisonDecode)
	assignFaults(rng, all, mix)
	return streams, all
}

// replaySQS plays an SQS event source mapping: each round receives up to 10 messages (FIFO:
// from the head of some groups, in order; standard: any pending ones), and deletes the ones
// not reported; reported ones come back. A FIFO group's first reported message (or a
// standard queue's reported message) that has come back maxRetries times goes to the
// dead-letter queue.
func replaySQS(t testing.TB, cfg harnessConfig, fifo bool, streams []*sqsStream, all []*item, process sqsProcessor) *ledger {
	t.Helper()
	cfg.defaults()
	rng := rand.New(rand.NewPCG(cfg.seed, 0x737173))
	l := newLedger(&cfg, all)
	arn := standardARN
	if fifo {
		arn = fifoARN
	}
	handler := func(ctx context.Context, m *events.SQSMessage) error { return l.handle(ctx, m.MessageId) }
	receives := map[string]int{}
	for round := 1; ; round++ {
		var open []*sqsStream
		for _, s := range streams {
			if len(s.pending) > 0 {
				open = append(open, s)
			}
		}
		if len(open) == 0 {
			break
		}
		if round > cfg.maxRounds {
			l.problemf("lost: messages still not consumed after %d rounds", cfg.maxRounds)
			break
		}
		kind := cfg.kind(round, rng)

		delivered := receiveSQS(rng, &cfg, fifo, open)
		ev := &events.SQSEvent{}
		for _, it := range delivered {
			receives[it.id]++
			m := sqsMessage(arn, it.id, it.stream, string(it.value()))
			m.Attributes["ApproximateReceiveCount"] = fmt.Sprint(receives[it.id])
			ev.Records = append(ev.Records, m)
		}

		var resp events.SQSEventResponse
		var err error
		returned := l.invoke(round, kind, delivered, func(ctx context.Context) { resp, err = process(ctx, ev, handler) })
		if kind == rLost {
			continue // no response: every message comes back after its visibility timeout
		}
		reported := map[string]bool{}
		inBatch := map[string]bool{}
		for _, it := range delivered {
			inBatch[it.id] = true
		}
		for _, f := range resp.BatchItemFailures {
			if !inBatch[f.ItemIdentifier] || reported[f.ItemIdentifier] {
				l.problemf("response: item %q not in the batch, or twice: the whole batch comes back", f.ItemIdentifier)
				err = errors.New("invalid response")
				break
			}
			reported[f.ItemIdentifier] = true
		}
		if err != nil {
			reported = inBatch
		}
		l.roundChecks(kind, delivered, reported, returned, err)
		if fifo && !cfg.noTailCheck && err == nil {
			tail := map[string]string{}
			for _, it := range delivered {
				if reported[it.id] {
					if _, ok := tail[it.stream]; !ok {
						tail[it.stream] = it.id
					}
				} else if first, ok := tail[it.stream]; ok {
					l.problemf("tail: %s not reported, after the reported %s of its group", it.id, first)
				}
			}
		}

		// Delete the messages not reported; the reported ones stay, in their order.
		for _, it := range delivered {
			if !reported[it.id] {
				l.commit(it)
			}
		}
		for _, s := range open {
			s.pending = slices.DeleteFunc(s.pending, func(it *item) bool { return inBatch[it.id] && !reported[it.id] })
			if kind != rNormal {
				continue
			}
			if fifo {
				// The group's first reported message blocks it.
				if i := slices.IndexFunc(s.pending, func(it *item) bool { return reported[it.id] }); i >= 0 && l.block(s.pending[i]) {
					s.pending = slices.Delete(s.pending, i, i+1)
				}
				continue
			}
			s.pending = slices.DeleteFunc(s.pending, func(it *item) bool { return reported[it.id] && l.block(it) })
		}
	}
	l.finish(all, fifo)
	return l
}

// receiveSQS is one receive of replaySQS from the open streams: FIFO takes a run from the
// head of each chosen group and interleaves the groups keeping each group's order; standard
// takes any pending messages.
func receiveSQS(rng *rand.Rand, cfg *harnessConfig, fifo bool, open []*sqsStream) []*item {
	var delivered []*item
	if fifo {
		var queues [][]*item
		for _, s := range open {
			if rng.IntN(5) == 0 && len(open) > 1 {
				continue
			}
			n := min(len(s.pending), 1+rng.IntN(cfg.maxBatch))
			queues = append(queues, s.pending[:n])
		}
		if len(queues) == 0 {
			queues = append(queues, open[0].pending[:1])
		}
		for len(queues) > 0 && len(delivered) < 10 {
			q := rng.IntN(len(queues))
			delivered = append(delivered, queues[q][0])
			if queues[q] = queues[q][1:]; len(queues[q]) == 0 {
				queues = slices.Delete(queues, q, q+1)
			}
		}
	} else {
		s := open[0]
		n := min(len(s.pending), 1+rng.IntN(10))
		for _, i := range rng.Perm(len(s.pending))[:n] {
			delivered = append(delivered, s.pending[i])
		}
	}
	return delivered
}

func sqsAllFaults() faultMix {
	return faultMix{fFiltered: 4, fFlaky: 3, fTransient: 4, fPanicOnce: 2, fSlowCtx: 2, fSlowIgnore: 2,
		fPoison: 1, fPoisonPanic: 1}
}

// The replay harness against ProcessSQS with idempotency on dynalite: FIFO queues (exactly
// once, in order per group) and standard queues (exactly once).
func TestReplaySQS(t *testing.T) {
	db := startDDB(t)
	replayed := 0 // deliveries of messages already handled, which idempotency must skip
	defer func() {
		if replayed == 0 && !t.Failed() {
			t.Error("no message was delivered again after its side effect: idempotency went untested")
		}
	}()
	for seed := uint64(1); seed <= uint64(*harnessSeeds); seed++ {
		for _, fifo := range []bool{true, false} {
			name := "standard"
			if fifo {
				name = "fifo"
			}
			t.Run(fmt.Sprintf("seed=%d/%s", seed, name), func(t *testing.T) {
				cfg := harnessConfig{seed: seed, mix: sqsAllFaults()}
				cfg.defaults()
				streams, all := sqsScenario(rand.New(rand.NewPCG(seed, 2)), fifo, 3, 12, cfg.mix)
				store := db.store(t)
				opts := append(cfg.options(t, "body"), batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)),
					batch.WithConcurrency(4))
				l := replaySQS(t, cfg, fifo, streams, all, func(ctx context.Context, ev *events.SQSEvent, h batch.MessageFunc) (events.SQSEventResponse, error) {
					return batch.ProcessSQS(ctx, ev, h, opts...)
				})
				l.report(t)
				if l.stats.lost == 0 || l.stats.redelivered == 0 {
					t.Errorf("the scenario had %d lost rounds and %d redelivered messages: too easy", l.stats.lost, l.stats.redelivered)
				}
				replayed += l.stats.replayed
			})
		}
	}
}

// ---- Negative controls: the harness catches what it claims to ----

// firstLost makes round 1 lose its response, and the others normal.
func firstLost(round int, _ *rand.Rand) roundKind {
	if round == 1 {
		return rLost
	}
	return rNormal
}

// naiveKafka handles every record, failed ones included, and reports only the records that
// failed: Lambda then resumes from the failed offset and delivers the later records again.
func naiveKafka(ctx context.Context, ev *kafkaevent.Event, h batch.RecordFunc) (batch.KafkaResponse, error) {
	var resp batch.KafkaResponse
	for i := range ev.Partitions {
		p := &ev.Partitions[i]
		for j := range p.Records {
			if err := batch.CallHandler(ctx, func(ctx context.Context) error { return h(ctx, &p.Records[j]) }); err != nil {
				resp.BatchItemFailures = append(resp.BatchItemFailures,
					batch.KafkaItemFailure{ItemIdentifier: batch.KafkaItemIdentifier{Partition: p.ID(), Offset: p.Records[j].Offset}})
			}
		}
	}
	return resp, nil
}

func TestReplayHarnessCatchesViolations(t *testing.T) {
	plain := func(opts []batch.Option) kafkaProcessor {
		return func(ctx context.Context, ev *kafkaevent.Event, h batch.RecordFunc) (batch.KafkaResponse, error) {
			return batch.ProcessKafka(ctx, ev, h, opts...)
		}
	}
	cases := []struct {
		name    string
		cfg     harnessConfig
		process func(cfg *harnessConfig) kafkaProcessor
		want    string
	}{
		{
			// A lost response without idempotency: the batch comes again and is handled again.
			name:    "no idempotency",
			cfg:     harnessConfig{seed: 1, kind: firstLost, mix: faultMix{fTransient: 2}},
			process: func(cfg *harnessConfig) kafkaProcessor { return plain(cfg.options(t, "value")) },
			want:    "duplicate",
		},
		{
			// Going on after a failure handles later records before the failed one.
			name:    "keeps going after a failure",
			cfg:     harnessConfig{seed: 1, kind: func(int, *rand.Rand) roundKind { return rNormal }, mix: faultMix{fTransient: 3, fPoison: 1}, noTailCheck: true},
			process: func(*harnessConfig) kafkaProcessor { return naiveKafka },
			want:    "order",
		},
		{
			// Reporting nothing commits failed records.
			name: "swallows failures",
			cfg:  harnessConfig{seed: 1, kind: func(int, *rand.Rand) roundKind { return rNormal }, mix: faultMix{fTransient: 3, fPoison: 1}},
			process: func(*harnessConfig) kafkaProcessor {
				return func(ctx context.Context, ev *kafkaevent.Event, h batch.RecordFunc) (batch.KafkaResponse, error) {
					_, err := naiveKafka(ctx, ev, h)
					return batch.KafkaResponse{}, err
				}
			},
			want: "lost",
		},
		{
			// Ignoring the deadline: a slow record is not cut, and the function runs past its
			// deadline.
			name: "no deadline margin",
			cfg:  harnessConfig{seed: 1, kind: func(int, *rand.Rand) roundKind { return rNormal }, mix: faultMix{fSlowIgnore: 2}},
			process: func(cfg *harnessConfig) kafkaProcessor {
				return func(ctx context.Context, ev *kafkaevent.Event, h batch.RecordFunc) (batch.KafkaResponse, error) {
					return naiveKafka(context.WithoutCancel(ctx), ev, h)
				}
			},
			want: "deadline",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			streams, all := kafkaScenario(rand.New(rand.NewPCG(tc.cfg.seed, 1)), 8, tc.cfg.mix)
			cfg := tc.cfg
			cfg.defaults()
			l := replayKafka(t, tc.cfg, streams, all, tc.process(&cfg))
			if !l.has(tc.want) {
				t.Errorf("the harness did not report %q; it reported %d problems:\n%s", tc.want, len(l.problems), strings.Join(l.problems, "\n"))
			}
		})
	}

	// SQS FIFO: processing groups' messages in parallel breaks the order within a group.
	t.Run("fifo as standard", func(t *testing.T) {
		cfg := harnessConfig{seed: 1, kind: func(int, *rand.Rand) roundKind { return rNormal }, mix: faultMix{fTransient: 4}, noTailCheck: true}
		streams, all := sqsScenario(rand.New(rand.NewPCG(1, 2)), true, 2, 10, cfg.mix)
		l := replaySQS(t, cfg, true, streams, all, func(ctx context.Context, ev *events.SQSEvent, h batch.MessageFunc) (events.SQSEventResponse, error) {
			std := *ev
			std.Records = slices.Clone(ev.Records)
			for i := range std.Records {
				std.Records[i].EventSourceARN = standardARN
			}
			c := harnessConfig{margin: 300 * time.Millisecond, attempts: 1}
			return batch.ProcessSQS(ctx, &std, h, c.options(t, "body")...)
		})
		if !l.has("order") {
			t.Errorf("the harness did not report the order violation; problems:\n%s", strings.Join(l.problems, "\n"))
		}
	})
}
