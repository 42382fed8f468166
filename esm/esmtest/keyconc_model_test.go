package esmtest_test

// The model-based test of issue 31: a batch.KafkaHandler behind the emulated Kafka mapping
// (with its redeliveries), its handler's behaviour per record drawn from a seeded random plan
// (success after a delay, transient failures, permanent errors with and without a sink,
// panics, a record that overruns the deadline margin, a crash of the invocation), and a
// ledger of every side effect that checks, while the mapping runs and once it is idle:
//
//   - every record applied exactly once, or (a permanent error or a panic, under a sink)
//     sent to the sink exactly once and never applied;
//   - per-key order: a record is never applied (or sunk) before every earlier record of its
//     key is done, and two records of one key never run at once;
//   - the committed offset of a partition is never past a record that is not done.
//
// Each variant (batch options) runs the same seeds. -model.seeds sets how many,
// -model.seed runs one.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/esm/esmtest"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

var (
	modelSeeds = flag.Int("model.seeds", 32, "keyconc model test: seeds per variant")
	modelSeed  = flag.Uint64("model.seed", 0, "keyconc model test: run this seed only (0: seeds 1..model.seeds)")
)

// behaviour is what a record's handler does, by the number of its call (over every delivery).
type behaviour int

const (
	bOK        behaviour = iota // succeeds after its delay
	bTransient                  // fails n times (an ordinary error), then succeeds
	bPermanent                  // Permanent error: n times then succeeds without a sink; sunk with one
	bPanic                      // panics n times, then succeeds (sunk at once with a sink: SinkPermanent takes panics)
	bTimeout                    // first call: waits past the deadline margin (its context), returns its error, applies nothing
	bOverrun                    // first call: waits past the deadline margin, then applies late and returns nil
	bCrash                      // first call: the invocation's process dies; nothing of that invocation applies after it
)

// A crash here is the process dying between records' side effects: a record applied before
// it keeps its completion in the store, one not applied yet never applies (nor is sunk), and
// the invocation never answers. A crash between a side effect and the store's write of its
// completion would apply that record again on the redelivery, with or without key
// concurrency: the window every idempotency store has (a side effect and its completion are
// two writes), which the model does not play.

var behaviourNames = [...]string{"ok", "transient", "permanent", "panic", "timeout", "overrun", "crash"}

func (b behaviour) String() string { return behaviourNames[b] }

// plannedRecord is one record of a plan.
type plannedRecord struct {
	partition int32
	offset    int64
	key       string // "" for a record without a key
	b         behaviour
	n         int // bTransient, bPermanent, bPanic: how many calls fail
	delay     time.Duration
}

// keyOf is the ordering key: a record without a key is ordered among the partition's records
// without one.
func (r *plannedRecord) keyOf() string {
	if r.key == "" {
		return fmt.Sprintf("<none>@%d", r.partition)
	}
	return r.key
}

func (r *plannedRecord) String() string {
	s := fmt.Sprintf("%d/%d key %q %v", r.partition, r.offset, r.key, r.b)
	if r.n > 0 {
		s += fmt.Sprintf(" x%d", r.n)
	}
	return s
}

// plan is one seed's world.
type plan struct {
	seed       uint64
	partitions int
	batchSize  int
	sink       bool
	records    [][]*plannedRecord // by partition, in offset order
}

func newPlan(seed uint64) *plan {
	rng := rand.New(rand.NewPCG(seed, 31))
	p := &plan{seed: seed, partitions: 1 + rng.IntN(3), batchSize: []int{5, 10, 25, 100}[rng.IntN(4)], sink: rng.IntN(2) == 0}
	p.records = make([][]*plannedRecord, p.partitions)
	keys := 2 + rng.IntN(7)
	n := 20 + rng.IntN(41)
	slow := 0 // timeouts, overruns and crashes cost a deadline margin of wall time each: two at most
	for range n {
		k := rng.IntN(keys)
		part := int32(k % p.partitions) // Kafka puts a key in one partition
		r := &plannedRecord{partition: part, offset: int64(len(p.records[part])), key: fmt.Sprintf("k%d", k),
			delay: time.Duration(rng.IntN(4)) * time.Millisecond}
		if rng.IntN(10) == 0 {
			r.key = ""
		}
		switch x := rng.IntN(100); {
		case x < 55:
			r.b = bOK
		case x < 72:
			r.b, r.n = bTransient, 1+rng.IntN(3)
		case x < 82:
			r.b, r.n = bPermanent, 1+rng.IntN(2)
		case x < 91:
			r.b, r.n = bPanic, 1+rng.IntN(2)
		case slow >= 2:
			r.b = bOK
		case x < 94:
			r.b, slow = bTimeout, slow+1
		case x < 97:
			r.b, slow = bOverrun, slow+1
		default:
			r.b, slow = bCrash, slow+1
		}
		p.records[part] = append(p.records[part], r)
	}
	return p
}

// event is one line of a record's history.
type event struct {
	seq  int
	inv  string // the invocation's request ID
	what string
}

// recordState is the ledger's view of one record.
type recordState struct {
	plan    *plannedRecord
	calls   int
	applied int
	sunk    int
	history []event
}

func (s *recordState) done() bool { return s.applied+s.sunk > 0 }

// ledger records every side effect and checks the invariants as they happen.
type ledger struct {
	p  *plan
	mu sync.Mutex

	seq        int
	recs       map[int32][]*recordState
	byKey      map[string][]*recordState // in offset order
	running    map[string]int            // handler calls running, by key
	inPart     map[int32]int             // handler calls running, by partition
	maxInPart  int                       // the most handler calls of one partition running at once
	inInv      map[string]int            // handler calls running, by invocation
	maxInInv   int                       // the most handler calls of one invocation running at once
	dead       map[string]bool           // invocations whose process died (bCrash)
	violations []string
	culprits   []*recordState
}

func newLedger(p *plan) *ledger {
	l := &ledger{p: p, recs: map[int32][]*recordState{}, byKey: map[string][]*recordState{}, running: map[string]int{}, inPart: map[int32]int{}, inInv: map[string]int{}, dead: map[string]bool{}}
	for part, rs := range p.records {
		for _, r := range rs {
			s := &recordState{plan: r}
			l.recs[int32(part)] = append(l.recs[int32(part)], s)
			l.byKey[r.keyOf()] = append(l.byKey[r.keyOf()], s)
		}
	}
	return l
}

func (l *ledger) state(part int32, off int64) *recordState {
	rs := l.recs[part]
	if off < 0 || off >= int64(len(rs)) {
		return nil
	}
	return rs[off]
}

// note adds to s's history. l.mu must be held.
func (l *ledger) note(s *recordState, inv, format string, args ...any) {
	l.seq++
	s.history = append(s.history, event{l.seq, inv, fmt.Sprintf(format, args...)})
}

// violate records a broken invariant. l.mu must be held.
func (l *ledger) violate(s *recordState, format string, args ...any) {
	l.violations = append(l.violations, fmt.Sprintf(format, args...))
	if s != nil {
		l.culprits = append(l.culprits, s)
	}
}

// earlierNotDone returns the first record of s's key before s that is not done. l.mu must be held.
func (l *ledger) earlierNotDone(s *recordState) *recordState {
	for _, e := range l.byKey[s.plan.keyOf()] {
		if e == s {
			return nil
		}
		if !e.done() {
			return e
		}
	}
	return nil
}

// finish marks s done (applied or sunk) and checks the order of its key. l.mu must be held.
func (l *ledger) finish(s *recordState, inv string, sunk bool) {
	if e := l.earlierNotDone(s); e != nil {
		l.violate(s, "%v done before %v, an earlier record of its key", s.plan, e.plan)
	}
	if sunk {
		s.sunk++
		l.note(s, inv, "sunk")
	} else {
		s.applied++
		l.note(s, inv, "applied")
	}
	if s.applied+s.sunk > 1 {
		l.violate(s, "%v done %d times (applied %d, sunk %d)", s.plan, s.applied+s.sunk, s.applied, s.sunk)
	}
	if sunk && !(l.p.sink && (s.plan.b == bPermanent || s.plan.b == bPanic)) {
		l.violate(s, "%v sunk: only a permanent error or a panic goes to the sink", s.plan)
	}
}

// checkCommitted checks that no partition's committed offset is past a record not done.
func (l *ledger) checkCommitted(committed map[int32]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for part, c := range committed {
		for _, s := range l.recs[part] {
			if s.plan.offset >= c {
				break
			}
			if !s.done() {
				l.note(s, "", "committed past it (partition %d at %d)", part, c)
				l.violate(s, "partition %d committed at %d, past %v, not done", part, c, s.plan)
				return
			}
		}
	}
}

func requestID(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return lc.AwsRequestID
	}
	return "?"
}

var errCrashed = errors.New("model: the invocation's process died")

// handle is the record handler the plan drives.
func (l *ledger) handle(ctx context.Context, r *kafkaevent.Record) error {
	inv := requestID(ctx)
	l.mu.Lock()
	s := l.state(r.Partition, r.Offset)
	if s == nil {
		l.mu.Unlock()
		return batch.Permanent(fmt.Errorf("model: no record %d/%d in the plan", r.Partition, r.Offset))
	}
	s.calls++
	call := s.calls
	key := s.plan.keyOf()
	l.running[key]++
	l.inPart[r.Partition]++
	l.maxInPart = max(l.maxInPart, l.inPart[r.Partition])
	l.inInv[inv]++
	l.maxInInv = max(l.maxInInv, l.inInv[inv])
	if l.running[key] > 1 {
		l.violate(s, "%v started while another record of key %q runs", s.plan, key)
	}
	if e := l.earlierNotDone(s); e != nil {
		l.note(s, inv, "call %d started before %v was done", call, e.plan)
	}
	l.note(s, inv, "call %d", call)
	dead := l.dead[inv]
	if !dead && s.plan.b == bCrash && call == 1 {
		l.dead[inv] = true
		dead = true
		l.note(s, inv, "crash: the process dies")
	}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.running[key]--
		l.inPart[r.Partition]--
		l.inInv[inv]--
		l.mu.Unlock()
	}()
	if dead {
		return errCrashed
	}
	p := s.plan
	switch {
	case p.b == bTransient && call <= p.n:
		return fmt.Errorf("model: transient failure %d of %d", call, p.n)
	case p.b == bPermanent && (l.p.sink || call <= p.n):
		return batch.Permanent(fmt.Errorf("model: permanent failure (call %d)", call))
	case p.b == bPanic && call <= p.n:
		panic(fmt.Sprintf("model: panic (call %d)", call))
	case p.b == bTimeout && call == 1:
		<-ctx.Done()
		return ctx.Err()
	case p.b == bOverrun && call == 1:
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // the work goes on past the margin, then applies
	case p.delay > 0:
		time.Sleep(p.delay) // the record's work
	}
	return l.apply(s, inv)
}

// apply is the record's side effect.
func (l *ledger) apply(s *recordState, inv string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead[inv] {
		l.note(s, inv, "not applied: the process died")
		return errCrashed
	}
	l.finish(s, inv, false)
	return nil
}

// modelSink is the sink: taking a record is its side effect.
type modelSink struct{ l *ledger }

func (m modelSink) Send(ctx context.Context, e *batch.Envelope) error {
	l := m.l
	inv := requestID(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.state(e.Partition, e.Offset)
	if s == nil {
		return fmt.Errorf("model: no record %d/%d in the plan", e.Partition, e.Offset)
	}
	if l.dead[inv] {
		l.note(s, inv, "not sunk: the process died")
		return errCrashed
	}
	l.finish(s, inv, true)
	return nil
}

// modelVariant is a configuration under test.
type modelVariant struct {
	name string
	// concurrent says records of one partition run at once: some seed must show it, or the
	// variant did not test what it is named for.
	concurrent bool
	bound      int // WithKeyConcurrency's n: the most records of one invocation at once; 0: none
	// handler makes the function's handler for a plan's ledger.
	handler func(l *ledger) batch.KafkaFunc
}

const (
	modelTimeout = 600 * time.Millisecond // the function's timeout
	modelMargin  = 300 * time.Millisecond // WithDeadlineMargin
)

// batchVariant is batch.KafkaHandler with the model's options and extra.
func batchVariant(name string, extra ...batch.Option) modelVariant {
	return modelVariant{name: name, handler: func(l *ledger) batch.KafkaFunc {
		opts := []batch.Option{
			batch.WithIdempotency(idempotencytest.NewStore()),
			batch.WithRetry(2, 0),
			batch.WithDeadlineMargin(modelMargin),
			batch.WithLogger(slog.New(slog.DiscardHandler)),
		}
		if l.p.sink {
			opts = append(opts, batch.WithSink(modelSink{l}, batch.SinkPermanent))
		}
		return batch.KafkaHandler(l.handle, append(opts, extra...)...)
	}}
}

// outcome is what one seed's run found.
type modelOutcome struct {
	violations  []string
	report      string // the seed, the invariant broken, the history of the records that broke it
	invocations int
	records     int
	deliveries  int64
	maxInPart   int // the most handler calls of one partition running at once
	maxInInv    int // the most handler calls of one invocation running at once
}

// runModel runs one seed of a variant on the emulator and returns what the ledger found.
func runModel(t *testing.T, v modelVariant, seed uint64) modelOutcome {
	p := newPlan(seed)
	l := newLedger(p)
	f := v.handler(l)
	var k *esmtest.Kafka
	h := handler(func(ctx context.Context, payload []byte) ([]byte, error) {
		out, err := f.Invoke(ctx, payload)
		inv := requestID(ctx)
		l.mu.Lock()
		dead := l.dead[inv]
		l.mu.Unlock()
		if dead {
			// The process died: the invocation is never answered. esmtest reports a handler
			// goroutine that exits without returning as Runtime.ExitError.
			runtime.Goexit()
		}
		return out, err
	})
	k = esmtest.NewKafka(t, h, esmtest.KafkaMapping{
		ConsumerGroupId:       "model",
		BatchSize:             p.batchSize,
		MaximumBatchingWindow: new(20 * time.Millisecond),
		FunctionResponseTypes: []string{esmtest.ReportBatchItemFailures},
	}, esmtest.WithPartitions(p.partitions), esmtest.WithFunctionTimeout(modelTimeout))

	// Check the committed offsets while the mapping runs, and once more when it is idle.
	stop := make(chan struct{})
	var watching sync.WaitGroup
	watching.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if g := k.Cluster().GroupInfo("model"); g != nil {
				c := map[int32]int64{}
				for part, gc := range g.Commits[k.Topic()] {
					c[part] = gc.Offset
				}
				l.checkCommitted(c)
			}
		}
	})
	total := 0
	for part, rs := range p.records {
		var recs []*kgo.Record
		for _, r := range rs {
			rec := &kgo.Record{Value: fmt.Appendf(nil, "%d/%d", r.partition, r.offset)}
			if r.key != "" {
				rec.Key = []byte(r.key)
			}
			recs = append(recs, rec)
		}
		if len(recs) > 0 {
			k.ProduceTo(int32(part), recs...)
		}
		total += len(recs)
	}
	idleErr := k.WaitIdle(30 * time.Second)
	close(stop)
	watching.Wait()
	l.checkCommitted(k.Committed())

	l.mu.Lock()
	defer l.mu.Unlock()
	if idleErr != nil {
		l.violate(nil, "%v", idleErr)
	}
	for part := range p.partitions {
		for _, s := range l.recs[int32(part)] {
			if !s.done() {
				l.violate(s, "%v never done (lost)", s.plan)
			}
		}
	}
	// The mapping's own count agrees: every record succeeded once, none given up on. The
	// mapping counts a record after its commit, which WaitIdle sees: wait for the count.
	for end := time.Now().Add(5 * time.Second); k.Counters().Succeeded < int64(total) && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if c := k.Counters(); c.Succeeded != int64(total) || c.DeadLettered != 0 || c.InFlight != 0 {
		l.violate(nil, "the mapping counts %d records succeeded of %d, %d given up on, %d in flight", c.Succeeded, total, c.DeadLettered, c.InFlight)
	}
	out := modelOutcome{violations: slices.Clone(l.violations), records: total, deliveries: k.Counters().Delivered, maxInPart: l.maxInPart, maxInInv: l.maxInInv}
	invs := k.Invocations()
	out.invocations = len(invs)
	if testing.Verbose() {
		var line []string
		for _, inv := range invs {
			what := "ok"
			if inv.Err != nil {
				what = inv.Err.Type
			}
			line = append(line, fmt.Sprintf("%d@%v:%d:%s", inv.N, inv.Start.Sub(invs[0].Start).Round(time.Millisecond), len(inv.Records), what))
		}
		t.Logf("invocations (N@start:records:outcome): %s", strings.Join(line, " "))
	}
	if len(l.violations) > 0 {
		out.report = l.explain(invs)
	}
	return out
}

// explain says what broke: the seed, the plan's shape, each violation, and the history of the
// first record that broke an invariant and of the records of its key before it.
func (l *ledger) explain(invs []esmtest.Invocation) string {
	n := map[string]string{}
	for _, inv := range invs {
		what := "ok"
		if inv.Err != nil {
			what = inv.Err.Type
		}
		n[inv.RequestID] = fmt.Sprintf("inv %d (%s)", inv.N, what)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d (-model.seed=%d): %d partitions, batch size %d, sink %v\n", l.p.seed, l.p.seed, l.p.partitions, l.p.batchSize, l.p.sink)
	for i, v := range l.violations {
		if i == 5 {
			fmt.Fprintf(&b, "  ... and %d more\n", len(l.violations)-5)
			break
		}
		fmt.Fprintf(&b, "  %s\n", v)
	}
	if len(l.culprits) == 0 {
		return b.String()
	}
	c := l.culprits[0]
	var show []*recordState
	for _, s := range l.byKey[c.plan.keyOf()] {
		if s.plan.offset <= c.plan.offset && s.history != nil {
			show = append(show, s)
		}
	}
	if len(show) > 4 {
		show = show[len(show)-4:] // the record and the three before it of its key
	}
	for _, s := range show {
		fmt.Fprintf(&b, "  history of %v:\n", s.plan)
		for _, e := range s.history {
			where := n[e.inv]
			if where == "" && e.inv != "" {
				where = "inv " + e.inv
			}
			fmt.Fprintf(&b, "    #%d %s: %s\n", e.seq, where, e.what)
		}
	}
	return b.String()
}

func modelSeedList() []uint64 {
	if *modelSeed != 0 {
		return []uint64{*modelSeed}
	}
	var out []uint64
	for i := range *modelSeeds {
		out = append(out, uint64(i+1))
	}
	return out
}

// modelWorkers is how many seeds run at once: their time is mostly waiting (batching
// windows, deadline margins), not CPU.
const modelWorkers = 8

// modelTally adds up what a variant's seeds did.
type modelTally struct {
	mu                          sync.Mutex
	seeds, invocations, records int
	deliveries                  int64
	maxInPart, maxInInv         int
	behaviours                  map[behaviour]int
	failed                      int
}

func (m *modelTally) add(seed uint64, out modelOutcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seeds++
	m.invocations += out.invocations
	m.records += out.records
	m.deliveries += out.deliveries
	m.maxInPart = max(m.maxInPart, out.maxInPart)
	m.maxInInv = max(m.maxInInv, out.maxInInv)
	if len(out.violations) > 0 {
		m.failed++
	}
	if m.behaviours == nil {
		m.behaviours = map[behaviour]int{}
	}
	for _, rs := range newPlan(seed).records {
		for _, r := range rs {
			m.behaviours[r.b]++
		}
	}
}

func (m *modelTally) String() string {
	return fmt.Sprintf("%d seeds (%d broke an invariant), %d records %v, %d deliveries, %d invocations, at most %d records of one partition at once (%d of one invocation)",
		m.seeds, m.failed, m.records, m.behaviours, m.deliveries, m.invocations, m.maxInPart, m.maxInInv)
}

// runVariant runs every seed of v, modelWorkers at once, each in a subtest that fails with
// the report of a seed that broke an invariant.
func runVariant(t *testing.T, v modelVariant) *modelTally {
	start := time.Now()
	tally := &modelTally{}
	t.Run(v.name, func(t *testing.T) {
		forSeeds(func(seed uint64) {
			// t.Run may be called from several goroutines at once.
			t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
				out := runModel(t, v, seed)
				tally.add(seed, out)
				if len(out.violations) > 0 {
					t.Errorf("%s", out.report)
				}
			})
		})
	})
	if v.concurrent && tally.seeds > 1 && tally.maxInPart < 2 {
		t.Errorf("%s: no two records of one partition ran at once in %d seeds", v.name, tally.seeds)
	}
	if !v.concurrent && tally.maxInPart > 1 {
		t.Errorf("%s: %d records of one partition ran at once", v.name, tally.maxInPart)
	}
	if v.bound > 0 && tally.maxInInv > v.bound {
		t.Errorf("%s: %d records of one invocation ran at once, past WithKeyConcurrency(%d)", v.name, tally.maxInInv, v.bound)
	}
	if tally.seeds > 0 {
		t.Logf("%s: %v, in %v", v.name, tally, time.Since(start).Round(time.Millisecond))
	}
	return tally
}

// forSeeds calls f for each seed, modelWorkers at once, and returns when every call has.
func forSeeds(f func(seed uint64)) {
	seeds := make(chan uint64)
	var workers sync.WaitGroup
	for range modelWorkers {
		workers.Go(func() {
			for seed := range seeds {
				f(seed)
			}
		})
	}
	for _, seed := range modelSeedList() {
		seeds <- seed
	}
	close(seeds)
	workers.Wait()
}

// TestKeyConcurrencyModel runs the model on batch.KafkaHandler with WithIdempotency: first
// without key concurrency (the comparison: partitions in parallel, each partition's records
// one after another), then WithKeyConcurrency(n) for several n.
func TestKeyConcurrencyModel(t *testing.T) {
	for _, v := range modelVariants() {
		runVariant(t, v)
	}
}

func modelVariants() []modelVariant {
	return []modelVariant{
		batchVariant("sequential"),
		keyConcurrent(1),
		keyConcurrent(4),
		keyConcurrent(16),
	}
}

// keyConcurrent is the model's batch.KafkaHandler with WithKeyConcurrency(n).
func keyConcurrent(n int) modelVariant {
	v := batchVariant(fmt.Sprint("keyconc", n), batch.WithKeyConcurrency(n))
	v.concurrent, v.bound = n > 1, n
	return v
}

// TestKeyConcurrencyModelCanFail shows the model catches what it is there to catch: a
// handler without idempotency applies records twice after a crash or an overrun, and a
// handler that runs a batch's records all at once, ignoring keys, breaks their order (and
// loses the records that fail: it answers that all succeeded).
func TestKeyConcurrencyModelCanFail(t *testing.T) {
	noIdempotency := modelVariant{name: "no-idempotency", handler: func(l *ledger) batch.KafkaFunc {
		opts := []batch.Option{batch.WithRetry(2, 0), batch.WithDeadlineMargin(modelMargin), batch.WithLogger(slog.New(slog.DiscardHandler))}
		if l.p.sink {
			opts = append(opts, batch.WithSink(modelSink{l}, batch.SinkPermanent))
		}
		return batch.KafkaHandler(l.handle, opts...)
	}}
	allAtOnce := modelVariant{name: "all-at-once", handler: func(l *ledger) batch.KafkaFunc {
		return func(ctx context.Context, ev *kafkaevent.Event) (batch.KafkaResponse, error) {
			var wg sync.WaitGroup
			for r := range ev.All() {
				wg.Go(func() {
					defer func() { _ = recover() }()
					_ = l.handle(ctx, r)
				})
			}
			wg.Wait()
			return batch.KafkaResponse{}, nil
		}
	}}
	for _, c := range []struct {
		v    modelVariant
		want []string // each in a violation of some seed
	}{
		{noIdempotency, []string{"times (applied"}},
		{allAtOnce, []string{"an earlier record of its key", "started while another record", "not done", "never done (lost)"}},
	} {
		var mu sync.Mutex
		found := map[string]string{} // a wanted violation: the first report that has it
		forSeeds(func(seed uint64) {
			t.Run(fmt.Sprintf("%s/seed%d", c.v.name, seed), func(t *testing.T) {
				out := runModel(t, c.v, seed)
				mu.Lock()
				defer mu.Unlock()
				for _, v := range out.violations {
					for _, w := range c.want {
						if strings.Contains(v, w) && found[w] == "" {
							found[w] = out.report
						}
					}
				}
			})
		})
		for _, w := range c.want {
			if found[w] == "" {
				t.Errorf("%s: no seed broke an invariant with %q", c.v.name, w)
			}
		}
		if r := found[c.want[0]]; r != "" {
			t.Logf("%s: caught, as it should be; the first report:\n%s", c.v.name, r)
		}
	}
}
