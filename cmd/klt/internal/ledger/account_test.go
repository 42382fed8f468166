package ledger

import (
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/esm"
)

// handLedger builds a ledger: inputs of topic orders produced at t0 + offset ms.
type handLedger struct {
	l  *Ledger
	t0 time.Time
}

func newHandLedger() *handLedger { return &handLedger{l: New(), t0: time.Now()} }

func (h *handLedger) at(ms int) time.Time { return h.t0.Add(time.Duration(ms) * time.Millisecond) }

func (h *handLedger) Input(off int64, key string) RecordID {
	id := RecordID{"orders", 0, off}
	h.l.Produced(Input{ID: id, Key: []byte(key), At: h.at(int(off)), Phase: "p1"})
	return id
}

func (h *handLedger) steps(id RecordID, mapping string, kinds ...esm.EventKind) {
	for i, k := range kinds {
		h.l.AddStep(id, Step{Kind: k, Mapping: mapping, Invocation: int64(i + 1), At: h.at(100 + i), Reason: "RetryAttemptsExhausted"})
	}
}

func (h *handLedger) applied(id RecordID, ms int, repeat bool) {
	h.l.AddEffect(Effect{Kind: EffectHTTP, Resource: "OrdersApiUrl", Function: "Consumer", Record: id, Via: ViaIdempotencyHeader,
		Op: "POST", Repeat: repeat, At: h.at(ms)})
}

// The accounting of a pipeline whose last function's effects are observed (the HTTP sink)
// tells each record's fate from the ledger: applied (with its latency and deliveries),
// filtered, lost (succeeded with no effect; given up with no destination), sent to a
// failure queue, dead-lettered (seen at the on-failure destination), in flight; and counts
// per resource what was applied twice (two effects that are not Repeats) and out of order
// (a record applied before an earlier-produced record of its key).
func TestAccountObserved(t *testing.T) {
	h := newHandLedger()
	ok, twice, filtered, lost, failed, dead, flying, first, second, gaveUp :=
		h.Input(0, "a"), h.Input(1, "b"), h.Input(2, "c"), h.Input(3, "d"), h.Input(4, "e"),
		h.Input(5, "f"), h.Input(6, "g"), h.Input(7, "k"), h.Input(8, "k"), h.Input(9, "h")
	h.l.Produced(Input{ID: RecordID{"other", 0, 1}, At: h.t0}) // another pipeline's
	h.steps(ok, "KafkaMap", esm.Delivered, esm.Succeeded)
	h.applied(ok, 50, false)
	h.applied(ok, 60, true) // a repeat the sink absorbed: not applied twice
	h.steps(twice, "KafkaMap", esm.Delivered, esm.Failed, esm.Delivered, esm.Succeeded)
	h.applied(twice, 40, false)
	h.applied(twice, 70, false)
	h.steps(filtered, "KafkaMap", esm.Filtered)
	h.steps(lost, "KafkaMap", esm.Delivered, esm.Succeeded)
	h.steps(failed, "KafkaMap", esm.Delivered, esm.Succeeded)
	h.l.AddEffect(Effect{Kind: EffectQueue, Resource: "FailureQueue", Function: "Consumer", Record: failed, Via: ViaEnvelope, Failure: "poison", At: h.at(30)})
	h.steps(dead, "KafkaMap", esm.Delivered, esm.Failed, esm.GaveUp)
	h.l.AddEffect(Effect{Kind: EffectQueue, Resource: "OnFailureQueue", Function: "Consumer", Record: dead, Via: ViaOnFailure, Failure: "RetryAttemptsExhausted", At: h.at(80)})
	h.steps(flying, "KafkaMap", esm.Delivered)
	h.steps(first, "KafkaMap", esm.Delivered, esm.Succeeded)
	h.applied(first, 90, false)
	h.steps(second, "KafkaMap", esm.Delivered, esm.Succeeded)
	h.applied(second, 85, false)            // before first: its key's order broken
	h.steps(gaveUp, "OtherMap", esm.GaveUp) // not this pipeline's mapping: in flight here
	h.l.AddUnattributed(Unattributed{Kind: EffectHTTP, Resource: "OrdersApiUrl", Why: "no key"})

	spec := Spec{Name: "direct", Topic: "orders", Mappings: []string{"KafkaMap"}, Functions: []string{"Consumer"},
		Destinations: map[string]Resource{"KafkaMap": {EffectQueue, "OnFailureQueue"}},
		Resources:    []Resource{{EffectHTTP, "OrdersApiUrl"}}}
	a := Account(h.l, spec, "p1")
	if len(a.Records) != 10 {
		t.Fatalf("%d records, want the 10 of topic orders", len(a.Records))
	}
	want := map[RecordID]string{ok: FateSucceeded, twice: FateSucceeded, filtered: FateFiltered, lost: FateLost,
		failed: FateFailureQueue, dead: FateDeadLettered, flying: FateInFlight, first: FateSucceeded, second: FateSucceeded, gaveUp: FateInFlight}
	for _, r := range a.Records {
		if r.Fate != want[r.ID] {
			t.Errorf("%v: %s (%s), want %s", r.ID, r.Fate, r.Why, want[r.ID])
		}
	}
	if r := a.Records[1]; r.Deliveries["KafkaMap"] != 2 {
		t.Errorf("deliveries of the twice-applied record: %v", r.Deliveries)
	}
	if r := a.Records[0]; r.Latency != 50*time.Millisecond {
		t.Errorf("latency: %v", r.Latency)
	}
	if a.Lost != Observed(1) || a.AppliedTwice != Observed(1) || a.OrderViolations != Observed(1) {
		t.Errorf("lost %v, applied twice %v, order violations %v; want 1 each", a.Lost, a.AppliedTwice, a.OrderViolations)
	}
	if len(a.Resources) != 1 || a.Resources[0].Applied != 4 || a.Resources[0].Repeats != 1 {
		t.Errorf("resources: %+v", a.Resources)
	}
	if a.Fates[FateSucceeded] != 4 || a.Fates[FateInFlight] != 2 || a.Attempts != 9 || a.Unattributed != 1 {
		t.Errorf("fates %v, attempts %d, unattributed %d", a.Fates, a.Attempts, a.Unattributed)
	}
	if len(a.Latencies) != 4 || a.Latencies[0] > a.Latencies[3] {
		t.Errorf("latencies: %v", a.Latencies)
	}
	if o := strings.Join(a.Observed, "; "); !strings.Contains(o, "http OrdersApiUrl (Idempotency-Key)") ||
		!strings.Contains(o, "dead-lettered: observed at queue OnFailureQueue") {
		t.Errorf("observed: %q", a.Observed)
	}
}

// Where no side effect of the last function is observable, lost, applied twice and order
// violations are unobservable, not 0, and the account says so; a record the last mapping
// succeeded is succeeded, and one given up with no destination is lost.
func TestAccountUnobservable(t *testing.T) {
	h := newHandLedger()
	done, gave := h.Input(0, "a"), h.Input(1, "b")
	h.steps(done, "KafkaMap", esm.Delivered, esm.Succeeded)
	h.steps(done, "WorkMap", esm.Delivered, esm.Succeeded)
	h.steps(gave, "KafkaMap", esm.Delivered, esm.Failed, esm.GaveUp)
	spec := Spec{Name: "fan-out", Topic: "orders", Mappings: []string{"KafkaMap", "WorkMap"}, Functions: []string{"Dispatcher", "Worker"}}
	a := Account(h.l, spec, "")
	if a.Lost.Observed || a.AppliedTwice.Observed || a.OrderViolations.Observed || a.Lost.String() != "unobservable" {
		t.Errorf("lost %v, applied twice %v, order %v: want unobservable", a.Lost, a.AppliedTwice, a.OrderViolations)
	}
	if len(a.Unobserved) == 0 || !strings.Contains(a.Unobserved[0], "no side effect") {
		t.Errorf("unobserved: %q", a.Unobserved)
	}
	if a.Records[0].Fate != FateSucceeded || a.Records[1].Fate != FateLost || !strings.Contains(a.Records[1].Why, "no destination") {
		t.Errorf("records: %+v", a.Records)
	}
	if a.Records[0].Deliveries["KafkaMap"] != 1 || a.Records[0].Deliveries["WorkMap"] != 1 {
		t.Errorf("deliveries: %v", a.Records[0].Deliveries)
	}
}

// A record applied twice wrote the same target twice: a function that writes two items per
// record wrote two targets once each.
func TestAccountTargets(t *testing.T) {
	h := newHandLedger()
	two, dup := h.Input(0, "a"), h.Input(1, "b")
	for _, w := range []struct {
		id     RecordID
		target string
	}{{two, `{"id":"x"}`}, {two, `{"id":"y"}`}, {dup, `{"id":"z"}`}, {dup, `{"id":"z"}`}} {
		h.steps(w.id, "KafkaMap", esm.Delivered, esm.Succeeded)
		h.l.AddEffect(Effect{Kind: EffectTable, Resource: "Items", Function: "Consumer", Record: w.id, Via: ViaItemKey, Op: "PutItem", Target: w.target, At: h.at(20)})
	}
	a := Account(h.l, Spec{Name: "direct", Topic: "orders", Mappings: []string{"KafkaMap"}, Functions: []string{"Consumer"}}, "")
	if len(a.Resources) != 1 || a.Resources[0].Resource != (Resource{EffectTable, "Items"}) || a.Resources[0].Applied != 2 || a.AppliedTwice != Observed(1) {
		t.Errorf("resources %+v, applied twice %v; want Items (found in the ledger) with 2 applied, 1 twice", a.Resources, a.AppliedTwice)
	}
}

// A record applied twice at two resources is one record applied twice in the pipeline's
// total (each resource counts it).
func TestAccountTwiceAtTwoResources(t *testing.T) {
	h := newHandLedger()
	id := h.Input(0, "a")
	h.steps(id, "KafkaMap", esm.Delivered, esm.Succeeded)
	for range 2 {
		h.applied(id, 10, false)
		h.l.AddEffect(Effect{Kind: EffectTopic, Resource: "out", Function: "Consumer", Record: id, Via: ViaSourceHeader, Target: "0", At: h.at(10)})
	}
	a := Account(h.l, Spec{Name: "direct", Topic: "orders", Mappings: []string{"KafkaMap"}, Functions: []string{"Consumer"}}, "")
	if len(a.Resources) != 2 || a.Resources[0].AppliedTwice != 1 || a.Resources[1].AppliedTwice != 1 || a.AppliedTwice != Observed(1) {
		t.Errorf("resources %+v, applied twice %v: want 1 at each, 1 in all", a.Resources, a.AppliedTwice)
	}
}

// CountsByFunction counts records applied, not side effects: the sample consumer's order is
// sent to the orders API and completes its idempotency entry, two effects of one record, and
// the live display's applied/s would read twice the records otherwise.
func TestCountsByFunctionCountsRecords(t *testing.T) {
	h := newHandLedger()
	for off := range int64(3) {
		id := h.Input(off, "k")
		h.applied(id, 10, false)
		h.l.AddEffect(Effect{Kind: EffectTable, Resource: "IdempotencyTable", Function: "Consumer", Record: id, Via: ViaIdempotencyHeader, Op: "UpdateItem", At: h.at(11)})
	}
	failed, applied := h.l.CountsByFunction()
	if applied["Consumer"] != 3 || failed["Consumer"] != 0 {
		t.Errorf("applied %v, failed %v: want 3 records applied by Consumer (6 side effects), none failed", applied, failed)
	}
}
