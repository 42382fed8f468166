package stackrun

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/fanout"
)

// mappingObserver writes the mappings' events into the ledger, one step per input record:
// a Kafka mapping's records are input records themselves; an SQS mapping's messages name
// theirs in fanout's record attribute. A message without one (not sent by a fanout
// Dispatcher) is recorded as unattributed, never dropped. It also records each invocation
// of the mappings of phase (the phase's mappings number theirs from 1).
type mappingObserver struct {
	l     *ledger.Ledger
	phase string
}

func (m mappingObserver) Observe(e esm.Event) {
	m.l.Invoked(m.phase, e)
	for _, r := range e.Records {
		id, err := recordOfRef(r)
		if err != nil {
			m.l.AddUnattributed(ledger.Unattributed{Kind: "mapping", Resource: e.Mapping, At: e.At,
				Why: fmt.Sprintf("%s of message %s: %v", e.Kind, r.MessageID, err)})
			continue
		}
		m.l.AddStep(id, ledger.Step{Kind: e.Kind, Mapping: e.Mapping, Invocation: e.Invocation, Reason: e.Reason, At: e.At})
	}
}

// recordOfRef returns the input record an event's RecordRef names.
func recordOfRef(r esm.RecordRef) (ledger.RecordID, error) {
	if r.MessageID == "" {
		return ledger.RecordID{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}, nil
	}
	a, ok := r.Attributes[fanout.RecordAttribute]
	if !ok {
		return ledger.RecordID{}, fmt.Errorf("no %s attribute", fanout.RecordAttribute)
	}
	return recordOfAttribute(a)
}

// recordOfAttribute reads the record's identity from fanout.RecordAttribute's JSON
// ({"v":1,"topic":...,"partition":...,"offset":...}, see fanout's doc). The rest of the
// record (its value, in the body or another attribute) is not needed for its identity, so
// fanout.ReadRecord, which rebuilds the whole record from the whole message, is not used here.
func recordOfAttribute(s string) (ledger.RecordID, error) {
	var j struct {
		V         *int    `json:"v"`
		Topic     *string `json:"topic"`
		Partition *int32  `json:"partition"`
		Offset    *int64  `json:"offset"`
	}
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return ledger.RecordID{}, fmt.Errorf("%s: %w", fanout.RecordAttribute, err)
	}
	if j.V == nil || *j.V != 1 || j.Topic == nil || *j.Topic == "" || j.Partition == nil || j.Offset == nil {
		return ledger.RecordID{}, fmt.Errorf("%s %.200q: want version 1 with a topic, a partition and an offset", fanout.RecordAttribute, s)
	}
	return ledger.RecordID{Topic: *j.Topic, Partition: *j.Partition, Offset: *j.Offset}, nil
}

// notes keeps what an observer could not read, one line each, the first maxNotes of them,
// and counts them all.
type notes struct {
	mu    sync.Mutex
	lines []string
	n     int
}

const maxNotes = 100

func (n *notes) add(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.n++
	if len(n.lines) < maxNotes {
		n.lines = append(n.lines, fmt.Sprintf(format, args...))
	}
}

func (n *notes) problems() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := append([]string(nil), n.lines...)
	if n.n > len(n.lines) {
		out = append(out, fmt.Sprintf("and %d more", n.n-len(n.lines)))
	}
	return out
}

// capBody caps a body for the ledger's listing (effect.Body).
func capBody(b []byte) string {
	const max = 4 << 10
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
