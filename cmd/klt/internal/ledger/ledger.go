package ledger

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// RecordID names an input record: where klt produced it.
type RecordID struct {
	Topic     string
	Partition int32
	Offset    int64
}

func (id RecordID) String() string { return fmt.Sprintf("%s-%d@%d", id.Topic, id.Partition, id.Offset) }

// Input is one record klt produced.
type Input struct {
	ID    RecordID
	Key   []byte
	Value []byte
	At    time.Time // its timestamp
	Phase string
}

// Kinds of side effect (Effect.Kind).
const (
	EffectTable = "table" // an item written to a table of the template (PutItem, UpdateItem, a transaction...)
	EffectQueue = "queue" // a message sent to a queue of the template
	EffectTopic = "topic" // a record produced to a topic
	EffectHTTP  = "http"  // a request to the local HTTP sink
)

// How an effect's input record was read (Effect.Via).
const (
	ViaRecordAttribute   = "record attribute"  // fanout's kafka.record message attribute
	ViaSourceHeader      = "source header"     // producer.SourceHeader of an output record
	ViaIdempotencyKey    = "idempotency key"   // the idempotency store's entry key (idempotency.KafkaKey, hashed)
	ViaItemKey           = "item key"          // an attribute of the item holding topic-partition-offset
	ViaIdempotencyHeader = "Idempotency-Key"   // the HTTP request's Idempotency-Key header
	ViaEnvelope          = "envelope"          // a batch sink's envelope (a failure queue's message)
	ViaOnFailure         = "on-failure record" // a Kafka mapping's on-failure record (KafkaBatchInfo)
)

// Operations of an idempotency entry (Effect.Op), told apart from the item's other writes:
// the claim (a conditional PutItem of an INPROGRESS entry), the release (the DeleteItem of
// a handler that failed) and the completion of a record package batch sent to its sink
// (data {"outcome":"sunk"}) are bookkeeping; any other completion is the application.
const (
	OpClaim    = "claim"
	OpComplete = "complete"
	OpRelease  = "release"
	OpSunk     = "sunk"
)

// Effect is one side effect klt observed, with the input record it belongs to.
type Effect struct {
	Kind     string   // effectTable, effectQueue, effectTopic or effectHTTP
	Resource string   // the table's or queue's logical ID, the topic, or the sink's parameter name
	Function string   // the function that caused it, when known ("" when not)
	Record   RecordID // the input record, read from where its identity travels
	Via      string   // how the identity was read: one of the via constants
	// Op is the operation: the AWS operation (PutItem, SendMessage...), "Produce", the HTTP
	// method, "listed" for a message the lister read at a failure or dead-letter queue, or
	// opClaim, opComplete, opRelease for an idempotency entry.
	Op string
	// Failure is set for a message a function sent to its failure queue (a batch sink's
	// envelope) and for a record an on-failure destination or dead-letter queue received: the
	// error or condition the message gives.
	Failure string
	// Repeat is set when the resource absorbed the effect as a repeat of one it had applied
	// (the HTTP sink's Idempotency-Key, a conditional write that failed).
	Repeat bool
	At     time.Time
	Body   string // the message or request body, capped at 4 KB, for the report's listing
	// ID names the message (its MessageId at the queue) or the output record
	// (topic-partition@offset) the effect is, when it is one. A failure queue's message is
	// two facts, two effects with one ID: the proxy saw a function send it (Op SendMessage,
	// with the function), and the lister read it there (Op "listed", no function).
	ID string
	// Target is what the effect wrote within its resource: the item's key (tables; the
	// whole item when klt does not know the table's key), a digest of the message body
	// (queues), the output's index in its source header (topics), "" for the HTTP sink
	// (which tells repeats itself). Two effects of one record with the same Target at one
	// resource, neither a Repeat, are the record applied twice; a function may write
	// several targets per record.
	Target string
}

// Unattributed is a side effect whose input record klt could not tell.
type Unattributed struct {
	Kind, Resource, Why string
	At                  time.Time
}

// Step is one esm.Event, for one record.
type Step struct {
	Kind       esm.EventKind
	Mapping    string
	Invocation int64
	Reason     string
	At         time.Time
}

// Ledger is safe for concurrent use.
type Ledger struct {
	mu      sync.Mutex
	inputs  map[RecordID]*Input
	order   []RecordID
	steps   map[RecordID][]Step
	effects map[RecordID][]Effect
	unknown []Unattributed // the first maxUnattributed
	// unknownN counts every unattributed effect, kept or not.
	unknownN int
	// hashes maps the idempotency store's hash of each input's KafkaKey, in both formats
	// (hex for Powertools Python's layout, base64 for TypeScript's), to the input.
	hashes map[string]RecordID
	// invs are the mappings' invocations (invocations.go), invOrder their keys in the
	// order they started; groups the FIFO message groups each mapping delivered per phase.
	invs     map[invocationKey]*Invocation
	invOrder []invocationKey
	groups   map[phaseMapping]map[string]bool
	// strayEnds counts the ends of invocations whose start the observer did not see.
	strayEnds map[phaseMapping]int
}

// maxUnattributed bounds the unattributed effects the ledger keeps the details of; it
// counts them all.
const maxUnattributed = 10000

func New() *Ledger {
	return &Ledger{inputs: map[RecordID]*Input{}, steps: map[RecordID][]Step{}, effects: map[RecordID][]Effect{},
		hashes: map[string]RecordID{}, invs: map[invocationKey]*Invocation{}, groups: map[phaseMapping]map[string]bool{},
		strayEnds: map[phaseMapping]int{}}
}

// KafkaKey is idempotency.KafkaKey of the record: "topic-partition-offset".
func (id RecordID) KafkaKey() string {
	return idempotency.KafkaKey(&kafkaevent.Record{Topic: id.Topic, Partition: id.Partition, Offset: id.Offset})
}

// idempotencyHashes returns the digests the idempotency store writes after "<prefix>#" for
// the key idempotency.KafkaKey of id, in Python's and TypeScript's formats.
func (id RecordID) idempotencyHashes() ([]string, error) {
	var out []string
	for _, f := range []idempotency.Format{idempotency.FormatPython, idempotency.FormatTypeScript} {
		d, err := f.Digest(id.KafkaKey())
		if err != nil {
			return nil, fmt.Errorf("the %v idempotency digest of %s: %w", f, id, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// ByHash returns the input whose KafkaKey the idempotency store hashed to h.
func (l *Ledger) ByHash(h string) (RecordID, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id, ok := l.hashes[h]
	return id, ok
}

// Produced records an input record.
func (l *Ledger) Produced(in Input) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.inputs[in.ID]; !ok {
		l.order = append(l.order, in.ID)
		ds, err := in.ID.idempotencyHashes()
		if err != nil { // its table entries cannot be told: say so rather than miss them
			l.unknown = append(l.unknown, Unattributed{Kind: EffectTable, Why: err.Error(), At: in.At})
		}
		for _, d := range ds {
			l.hashes[d] = in.ID
		}
	}
	l.inputs[in.ID] = &in
}

// observe records a mapping's event for each Kafka record it names (SQS messages name the
// input record by the fan-out attribute: the caller resolves them, see observer).
func (l *Ledger) AddStep(id RecordID, s Step) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.steps[id] = append(l.steps[id], s)
}

// effect records a side effect of input record e.Record.
func (l *Ledger) AddEffect(e Effect) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.effects[e.Record] = append(l.effects[e.Record], e)
}

// unattributed records a side effect whose input record klt could not tell.
func (l *Ledger) AddUnattributed(u Unattributed) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unknownN++
	if len(l.unknown) < maxUnattributed {
		l.unknown = append(l.unknown, u)
	}
}

// UnattributedCount returns how many side effects klt could not attribute.
func (l *Ledger) UnattributedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unknownN
}

// History returns what the ledger holds of record id: its input (nil when klt did not
// produce it), its steps and its effects, in the order they were recorded.
func (l *Ledger) History(id RecordID) (*Input, []Step, []Effect) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inputs[id], append([]Step(nil), l.steps[id]...), append([]Effect(nil), l.effects[id]...)
}

// InputsOf returns the input records of phase ("" for all), in produce order.
func (l *Ledger) InputsOf(phase string) []Input {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Input
	for _, id := range l.order {
		if in := l.inputs[id]; phase == "" || in.Phase == phase {
			out = append(out, *in)
		}
	}
	return out
}

// EffectsAt returns every effect on resource (of kind), sorted by time.
func (l *Ledger) EffectsAt(kind, Resource string) []Effect {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Effect
	for _, es := range l.effects {
		for _, e := range es {
			if e.Kind == kind && e.Resource == Resource {
				out = append(out, e)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// UnattributedEffects returns the side effects klt could not attribute (the first
// maxUnattributed of them: unattributedCount counts them all).
func (l *Ledger) UnattributedEffects() []Unattributed {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Unattributed(nil), l.unknown...)
}

// ResourcesOf returns the resources at which the ledger holds an effect of function fn that
// is not a failure, sorted by kind and name.
func (l *Ledger) ResourcesOf(fn string) []Resource {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[Resource]bool{}
	var out []Resource
	for _, es := range l.effects {
		for _, e := range es {
			r := Resource{e.Kind, e.Resource}
			if e.Function == fn && fn != "" && e.Failure == "" && !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Input returns the input record id, and whether klt produced it.
func (l *Ledger) Input(id RecordID) (Input, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	in, ok := l.inputs[id]
	if !ok {
		return Input{}, false
	}
	return *in, true
}

// CountsByFunction counts, per function, in one pass over the ledger: the records it sent to
// a failure queue (a batch sink's envelope; a record sent twice, as when its batch is
// delivered again after a timeout, counts once), and the records it applied: a record with
// at least one side effect that applies it (repeats and idempotency bookkeeping aside) counts
// once, however many resources it was applied at (the sample consumer's order goes to the
// orders API and completes its idempotency entry: one record, not two).
func (l *Ledger) CountsByFunction() (failed, applied map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	failed, applied = map[string]int{}, map[string]int{}
	for _, es := range l.effects {
		sent, done := map[string]bool{}, map[string]bool{}
		for _, e := range es {
			switch {
			case e.Function == "":
			case e.Failure != "" && e.Via == ViaEnvelope && e.Op != OpListed:
				if !sent[e.Function] {
					sent[e.Function] = true
					failed[e.Function]++
				}
			case e.Failure == "" && !e.Repeat && Applies(e):
				if !done[e.Function] {
					done[e.Function] = true
					applied[e.Function]++
				}
			}
		}
	}
	return failed, applied
}

// opListed is the effect.Op of a message the lister read on a failure or dead-letter queue
// (sink_queues.go): each such message is listed once in the report, as read there.
const OpListed = "listed"

// FailureEffects returns every effect that is a failure (a failure queue's, a dead-letter
// queue's, an on-failure destination's message), in the order recorded per record.
func (l *Ledger) FailureEffects() []Effect {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Effect
	for _, es := range l.effects {
		for _, e := range es {
			if e.Failure != "" {
				out = append(out, e)
			}
		}
	}
	return out
}
