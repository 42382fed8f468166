package producer_test

// Consume, transform, produce, end to end, against kfake (the output topic) and dynalite (the
// idempotency stores), with the event source mapping played by esm below: a transform (a
// batch.ProcessKafka handler from topic in to topic out) whose responses are lost after it
// produced, or that dies between the acknowledgements and the completion write, is delivered
// its batch again as Lambda would; then a downstream consumer (batch.ProcessKafka over what is
// in out, WithIdempotency keyed on the source header) must apply each output of each input
// exactly once, though out holds duplicates. A negative control runs the downstream keyed on
// its records' own offsets and must see outputs applied twice.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/producer"
)

const (
	tpPartitions = 3
	tpPerPart    = 6
	// tpTimeout is the functions' timeout: a lease ends with it. No test waits it out (the
	// mapping moves the clock past a lease instead: see tpClock); it is the time a loaded
	// machine has to run a batch.
	tpTimeout = 10 * time.Second
)

// tpClock is the time of a test's invocations and of its idempotency calls
// (idempotency.WithClock): the machine's time, except that the mapping moves it past the
// leases of the invocations before (as the event source mapping's retries come after them),
// so that no scheduling of the machine decides whether a lease has ended. It reads the
// same all through a round.
type tpClock struct{ ns atomic.Int64 }

func newClock() *tpClock {
	c := &tpClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *tpClock) now() time.Time { return time.Unix(0, c.ns.Load()) }

// round starts a round: the clock is at least the machine's time, so that the round's
// deadline is its timeout away, or more.
func (c *tpClock) round() time.Time {
	if n := time.Now().UnixNano(); n > c.ns.Load() {
		c.ns.Store(n)
	}
	return c.now()
}

// pastLeases moves the clock past every lease taken so far.
func (c *tpClock) pastLeases() { c.ns.Add(int64(tpTimeout + time.Millisecond)) }

func (c *tpClock) option() idempotency.Option { return idempotency.WithClock(c.now) }

// tpOutputs is how many records the transform produces for an input: 1 or 2.
func tpOutputs(r *kafkaevent.Record) int { return 1 + int(r.Offset%2) }

// tpInputs is the event of topic in: tpPerPart records in each of tpPartitions partitions.
func tpInputs() *kafkaevent.Event {
	b := kafkaeventtest.NewBuilder()
	for p := int32(0); p < tpPartitions; p++ {
		for o := 0; o < tpPerPart; o++ {
			b.Add("in", p, fmt.Appendf(nil, "in-%d@%d", p, o))
		}
	}
	return b.Event()
}

// tpExpected is every output's source: the ledger's keys.
func tpExpected(ev *kafkaevent.Event) map[producer.Source]bool {
	want := map[producer.Source]bool{}
	for r := range ev.All() {
		for i := range tpOutputs(r) {
			want[producer.Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Index: i}] = true
		}
	}
	return want
}

// tpTransform makes the outputs of r: keyed by the input, so that every copy of them lands
// in one partition.
func tpTransform(r *kafkaevent.Record) []*kgo.Record {
	out := make([]*kgo.Record, tpOutputs(r))
	for i := range out {
		out[i] = &kgo.Record{Topic: "out", Key: r.Value, Value: fmt.Appendf(nil, "output %d of %s", i, r.Value)}
	}
	return out
}

// esm plays the event source mapping over ev: each round delivers, from every partition's
// committed position, the records not yet consumed; a response that arrives commits each
// partition up to its first reported record; a lost response commits nothing.
type esm struct {
	ev        *kafkaevent.Event
	clock     *tpClock
	committed []int
}

func newESM(ev *kafkaevent.Event, clock *tpClock) *esm {
	return &esm{ev: ev, clock: clock, committed: make([]int, len(ev.Partitions))}
}

// pending is the next batch, or nil when every record is consumed.
func (m *esm) pending() *kafkaevent.Event {
	out := &kafkaevent.Event{Source: m.ev.Source, SourceARN: m.ev.SourceARN, BootstrapServers: m.ev.BootstrapServers}
	for i, p := range m.ev.Partitions {
		if m.committed[i] < len(p.Records) {
			out.Partitions = append(out.Partitions, kafkaevent.Partition{Topic: p.Topic, Number: p.Number, Records: p.Records[m.committed[i]:]})
		}
	}
	if len(out.Partitions) == 0 {
		return nil
	}
	return out
}

func (m *esm) apply(t *testing.T, resp batch.KafkaResponse) {
	t.Helper()
	first := map[string]int64{}
	for _, f := range resp.BatchItemFailures {
		id := f.ItemIdentifier
		if o, ok := first[id.Partition]; !ok || id.Offset < o {
			first[id.Partition] = id.Offset
		}
	}
	for i, p := range m.ev.Partitions {
		stop, failed := first[p.ID()]
		for m.committed[i] < len(p.Records) && (!failed || p.Records[m.committed[i]].Offset < stop) {
			m.committed[i]++
		}
	}
}

// run delivers until every record is consumed; lost says whether a round's response is lost,
// after fn ran. It fails t after 40 rounds. After a round that reported failures, the next
// comes once the leases have ended (the clock moves past them): a record held by a dead
// invocation is then taken over.
func (m *esm) run(t *testing.T, name string, fn batch.KafkaFunc, lost func(round int) bool) (rounds int) {
	t.Helper()
	for round := 0; ; round++ {
		ev := m.pending()
		if ev == nil {
			return round
		}
		if round == 40 {
			t.Fatalf("%s: records still pending after %d rounds: %v", name, round, m.committed)
		}
		ctx, cancel := context.WithDeadline(context.Background(), m.clock.round().Add(tpTimeout))
		resp, err := fn(ctx, ev)
		cancel()
		if err != nil {
			t.Fatalf("%s, round %d: %v", name, round, err)
		}
		if lost(round) {
			continue
		}
		m.apply(t, resp)
		if len(resp.BatchItemFailures) > 0 {
			m.clock.pastLeases() // a record in progress elsewhere waits for its lease
		}
	}
}

// invocation is one run of the transform function; dead once it has died.
type invocation struct{ dead atomic.Bool }

var errDied = errors.New("the function died (timeout, out of memory)")

// dyingStore is the transform's store: when kill says so, or once the invocation is dead,
// Complete does not reach DynamoDB and the invocation is dead, as when the function dies
// between the acknowledgements of its records and the completion write.
type dyingStore struct {
	idempotency.Store
	inv  *atomic.Pointer[invocation]
	kill func() bool
}

func (s *dyingStore) Complete(ctx context.Context, r *idempotency.Entry) error {
	inv := s.inv.Load()
	if inv.dead.Load() || s.kill() {
		inv.dead.Store(true)
		return errDied
	}
	return s.Store.Complete(ctx, r)
}

// ackCounter counts the records the cluster acknowledged.
type ackCounter struct{ n atomic.Int64 }

func (c *ackCounter) OnProduceRecordUnbuffered(_ *kgo.Record, err error) {
	if err == nil {
		c.n.Add(1)
	}
}

// tpEnv is dynalite, for the tests' stores.
type tpEnv struct {
	ddb    *standin.DynamoDB
	tables atomic.Int64
	clock  *tpClock
}

func startTP(t *testing.T) *tpEnv {
	t.Helper()
	return &tpEnv{ddb: standintest.StartDynamoDB(t), clock: newClock()}
}

// store is a DynamoDB store on a new table.
func (e *tpEnv) store(t *testing.T) *dynamodb.Store {
	t.Helper()
	name := fmt.Sprintf("tp-%d", e.tables.Add(1))
	client := e.ddb.Client()
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

// tpKafka is a kfake cluster with an empty topic out, and a producer client for it that
// counts the records the cluster acknowledged.
type tpKafka struct {
	cluster *kfake.Cluster
	cl      *kgo.Client
	acks    *ackCounter
}

func startKafka(t *testing.T) *tpKafka {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(tpPartitions, "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	acks := &ackCounter{}
	cl, err := producer.NewClient(producer.WithBootstrapServers(cluster.ListenAddrs()...), producer.WithPlaintext(),
		producer.WithClientOptions(kgo.WithHooks(acks)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &tpKafka{cluster: cluster, cl: cl, acks: acks}
}

// readOut is topic out from the start until n records were read, as an event.
func (k *tpKafka) readOut(t *testing.T, n int64) *kafkaevent.Event {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.cluster.ListenAddrs()...), kgo.ConsumeTopics("out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := kafkaeventtest.NewBuilder()
	var got int64
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d records of out, want %d", got, n)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("fetch: %v", errs)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			opts := []kafkaeventtest.RecordOption{kafkaeventtest.WithKey(r.Key), kafkaeventtest.WithOffset(r.Offset)}
			for _, h := range r.Headers {
				opts = append(opts, kafkaeventtest.WithHeader(h.Key, h.Value))
			}
			b.Add(r.Topic, r.Partition, r.Value, opts...)
		})
	}
	return b.Event()
}

var quiet = batch.WithLogger(slog.New(slog.DiscardHandler))

// ledger counts, per output, the downstream's side effects.
type ledger struct {
	mu sync.Mutex
	n  map[producer.Source]int
}

func (l *ledger) apply(_ context.Context, r *kafkaevent.Record) error {
	s, err := producer.ReadSource(r)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n[s]++
	return nil
}

// downstream runs the consumer of out over ev, keyed on the source header (or, for the
// negative control, on the records' own offsets), losing the responses lost says; it returns
// the side effects per output.
func (e *tpEnv) downstream(t *testing.T, ev *kafkaevent.Event, bySource bool, lost func(int) bool) map[producer.Source]int {
	t.Helper()
	l := &ledger{n: map[producer.Source]int{}}
	opts := []batch.Option{quiet, batch.WithIdempotency(e.store(t), idempotency.WithKeyPrefix("apply"), e.clock.option())}
	if bySource {
		opts = append(opts, batch.WithIdempotencyKey(producer.SourceKey))
	}
	newESM(ev, e.clock).run(t, "downstream", batch.KafkaHandler(l.apply, opts...), lost)
	return l.n
}

// exactlyOnce checks that every expected output was applied once, and nothing else.
func exactlyOnce(t *testing.T, got map[producer.Source]int, want map[producer.Source]bool) {
	t.Helper()
	for s := range want {
		if got[s] != 1 {
			t.Errorf("output %s applied %d times, want 1", s, got[s])
		}
	}
	for s, n := range got {
		if !want[s] {
			t.Errorf("output %s applied %d times, but no input gives it", s, n)
		}
	}
}

// lostRounds loses the responses of the given rounds.
func lostRounds(rounds ...int) func(int) bool {
	return func(r int) bool {
		for _, x := range rounds {
			if r == x {
				return true
			}
		}
		return false
	}
}

// A transform whose responses are lost after it produced: with ProduceOnce, the batch
// delivered again produces nothing more; with Produce and SetSource, out holds each output
// three times; either way the downstream applies each output once, and keyed on its own
// offsets it would not.
func TestTransformResponseLost(t *testing.T) {
	env := startTP(t)
	in := tpInputs()
	want := tpExpected(in)
	for _, tc := range []struct {
		name   string
		once   bool
		copies int64 // of each output in out
	}{
		{"ProduceOnce", true, 1},
		{"Produce with SetSource", false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := startKafka(t)
			store := env.store(t)
			var calls atomic.Int64
			transform := func(ctx context.Context, r *kafkaevent.Record) error {
				calls.Add(1)
				out := tpTransform(r)
				if tc.once {
					return producer.ProduceOnce(ctx, k.cl, store, r, out, idempotency.WithKeyPrefix("transform"), env.clock.option())
				}
				for i, rec := range out {
					if err := producer.SetSource(rec, r, i); err != nil {
						return batch.Permanent(err)
					}
				}
				return producer.Produce(ctx, k.cl, out...).Err()
			}
			rounds := newESM(in, env.clock).run(t, "transform", batch.KafkaHandler(transform, quiet), lostRounds(0, 1))
			if rounds != 3 || calls.Load() != 3*int64(in.Len()) {
				t.Errorf("%d rounds, %d handler calls; want 3 rounds calling the handler for every input", rounds, calls.Load())
			}
			n := k.acks.n.Load()
			if n != tc.copies*int64(len(want)) {
				t.Fatalf("out holds %d records, want %d copies of %d outputs", n, tc.copies, len(want))
			}
			out := k.readOut(t, n)
			exactlyOnce(t, env.downstream(t, out, true, lostRounds(0)), want)

			if tc.copies > 1 {
				// The negative control: keyed on its own offsets, the downstream applies
				// every copy.
				for s, c := range env.downstream(t, out, false, lostRounds(0)) {
					if int64(c) != tc.copies {
						t.Errorf("negative control: keyed on its own offsets, the downstream applied output %s %d times, want %d", s, c, tc.copies)
					}
				}
			}
		})
	}
}

// dyingTransform is the transform function with ProduceOnce on a store through which it dies
// when kill says so, as one invocation: after a death, it does nothing more, and its response
// is lost. It counts in dup the outputs produced by a call whose completion never happened:
// each will be in out twice.
func (e *tpEnv) dyingTransform(t *testing.T, k *tpKafka, kill func(round int) bool) (fn batch.KafkaFunc, lost func(int) bool, dup *atomic.Int64) {
	var (
		inv   atomic.Pointer[invocation]
		round = -1
		died  = map[int]bool{}
	)
	dup = new(atomic.Int64)
	store := &dyingStore{Store: e.store(t), inv: &inv, kill: func() bool { return kill(round) }}
	transform := func(ctx context.Context, r *kafkaevent.Record) error {
		if inv.Load().dead.Load() {
			return errDied
		}
		err := producer.ProduceOnce(ctx, k.cl, store, r, tpTransform(r), idempotency.WithKeyPrefix("transform"), e.clock.option())
		if errors.Is(err, errDied) {
			dup.Add(int64(tpOutputs(r)))
		}
		return err
	}
	h := batch.KafkaHandler(transform, quiet)
	fn = func(ctx context.Context, ev *kafkaevent.Event) (batch.KafkaResponse, error) {
		round++
		inv.Store(new(invocation))
		resp, err := h(ctx, ev)
		died[round] = inv.Load().dead.Load()
		return resp, err
	}
	return fn, func(r int) bool { return died[r] }, dup
}

// The transform dies between the acknowledgements of an input's records and the completion
// write: the input's key stays in progress until its lease ends, the batch comes again, the
// input is produced again after the lease, and out holds its outputs twice; the downstream
// applies each once.
func TestTransformDiesBeforeCompletion(t *testing.T) {
	env := startTP(t)
	in := tpInputs()
	want := tpExpected(in)
	k := startKafka(t)
	var completes atomic.Int64
	fn, lost, dup := env.dyingTransform(t, k, func(round int) bool { return round == 0 && completes.Add(1) == 4 })
	newESM(in, env.clock).run(t, "transform", fn, lost)
	if dup.Load() == 0 {
		t.Fatal("no completion was dropped: the test did not test the window")
	}
	n := k.acks.n.Load()
	if n != int64(len(want))+dup.Load() {
		t.Fatalf("out holds %d records, want %d outputs and %d copies of those whose completion was lost", n, len(want), dup.Load())
	}
	out := k.readOut(t, n)
	exactlyOnce(t, env.downstream(t, out, true, lostRounds(0)), want)
}

// Random scenarios: each round's response lost or not, the function dying at random
// completions, both sides; the downstream applies each output once. A seed fixes the odds
// and the draws, not which record each draw falls on: partitions run in parallel.
func TestTransformRandomReplays(t *testing.T) {
	env := startTP(t)
	in := tpInputs()
	want := tpExpected(in)
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			var mu sync.Mutex
			chance := func(p float64) bool { mu.Lock(); defer mu.Unlock(); return rng.Float64() < p }
			k := startKafka(t)
			fn, died, dup := env.dyingTransform(t, k, func(round int) bool { return round < 15 && chance(0.08) })
			lostAt := map[int]bool{}
			lost := func(r int) bool {
				if died(r) || lostAt[r] {
					return true
				}
				lostAt[r] = r < 15 && chance(0.35)
				return lostAt[r]
			}
			rounds := newESM(in, env.clock).run(t, "transform", fn, lost)
			n := k.acks.n.Load()
			t.Logf("transform: %d rounds, %d records in out for %d outputs", rounds, n, len(want))
			if rounds < 3 || dup.Load() == 0 {
				t.Errorf("the scenario lost no response or no completion: choose another seed")
			}
			if n != int64(len(want))+dup.Load() {
				t.Fatalf("out holds %d records, want %d outputs and %d copies of those whose completion was lost", n, len(want), dup.Load())
			}
			out := k.readOut(t, n)
			exactlyOnce(t, env.downstream(t, out, true, func(r int) bool { return r < 15 && chance(0.35) }), want)
		})
	}
}
