package stackrun

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/fanout"
)

// mappingObserver writes the mappings' events into the ledger, one step per input record:
// a Kafka mapping's records are input records themselves; an SQS mapping's messages name
// theirs in fanout's record attribute. A message without one (not sent by a fanout
// Dispatcher) is recorded as unattributed, never dropped. It also records each invocation
// of the mappings of phase (the phase's mappings number theirs from 1).
type mappingObserver struct {
	l     *ledger
	phase string
}

func (m mappingObserver) Observe(e esm.Event) {
	m.l.invoked(m.phase, e)
	for _, r := range e.Records {
		id, err := recordOfRef(r)
		if err != nil {
			m.l.unattributed(unattributed{Kind: "mapping", Resource: e.Mapping, At: e.At,
				Why: fmt.Sprintf("%s of message %s: %v", e.Kind, r.MessageID, err)})
			continue
		}
		m.l.step(id, step{Kind: e.Kind, Mapping: e.Mapping, Invocation: e.Invocation, Reason: e.Reason, At: e.At})
	}
}

// recordOfRef returns the input record an event's RecordRef names.
func recordOfRef(r esm.RecordRef) (recordID, error) {
	if r.MessageID == "" {
		return recordID{r.Topic, r.Partition, r.Offset}, nil
	}
	a, ok := r.Attributes[fanout.RecordAttribute]
	if !ok {
		return recordID{}, fmt.Errorf("no %s attribute", fanout.RecordAttribute)
	}
	return recordOfAttribute(a)
}

// recordOfAttribute reads the record's identity from fanout.RecordAttribute's JSON
// ({"v":1,"topic":...,"partition":...,"offset":...}, see fanout's doc). The rest of the
// record (its value, in the body or another attribute) is not needed for its identity, so
// fanout.Record, which rebuilds the whole record from the whole message, is not used here.
func recordOfAttribute(s string) (recordID, error) {
	var j struct {
		V         *int    `json:"v"`
		Topic     *string `json:"topic"`
		Partition *int32  `json:"partition"`
		Offset    *int64  `json:"offset"`
	}
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return recordID{}, fmt.Errorf("%s: %w", fanout.RecordAttribute, err)
	}
	if j.V == nil || *j.V != 1 || j.Topic == nil || *j.Topic == "" || j.Partition == nil || j.Offset == nil {
		return recordID{}, fmt.Errorf("%s %.200q: want version 1 with a topic, a partition and an offset", fanout.RecordAttribute, s)
	}
	return recordID{*j.Topic, *j.Partition, *j.Offset}, nil
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
