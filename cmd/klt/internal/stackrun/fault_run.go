package stackrun

import (
	"bytes"
	"encoding/json"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// processFaults freeze (SIGSTOP: timeout) or kill (SIGKILL: crash) the process that receives
// an event carrying an armed record, the first time each armed function receives one: the
// function cannot answer, so the invocation times out and its instance is replaced, as when a
// runtime hangs on Lambda, or fails as Runtime.ExitError, as when it dies. The record is found
// by its identity in the event: a Kafka event's topic, partition and offset, or the input
// record an SQS message carries (fanout's record attribute).
//
// The signal comes as the process answers that invocation, its work done and its answer not
// taken: the batch is delivered again, and what the function did with it must not happen
// twice (its idempotency). An event, not a delay: a signal at some time into the batch could
// fall between a side effect and the write that records it, which no function can guard
// against (see producer.ProduceOnce), and whether it did would depend on the machine's load.
type processFaults struct {
	mu    sync.Mutex
	armed []armedFault
	fired map[firedKey]time.Time
	due   map[string]firedKey // by request ID: the fault due when that invocation is answered
}

// armedFault is one record fault waiting for its record's delivery.
type armedFault struct {
	id        ledger.RecordID
	kind      string          // faultTimeout or faultCrash
	functions map[string]bool // the functions it fires in
	spec      string          // the --fault as given
}

type firedKey struct {
	function string
	id       ledger.RecordID
	kind     string
}

// arm arms a fault of kind for record id in functions.
func (t *processFaults) arm(id ledger.RecordID, kind, spec string, functions []string) {
	fs := map[string]bool{}
	for _, f := range functions {
		fs[f] = true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.armed = append(t.armed, armedFault{id: id, kind: kind, functions: fs, spec: spec})
}

// armedFor reports whether some fault is armed in fn and has not fired there.
func (t *processFaults) armedFor(fn string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range t.armed {
		if _, done := t.fired[firedKey{fn, a.id, a.kind}]; a.functions[fn] && !done {
			return true
		}
	}
	return false
}

// onEvent returns function fn's hook, which runtimeapi calls as it hands an event to an
// instance. It reads the event only when a fault waits in fn, and makes the fault due when
// the process answers (onAnswer).
func (t *processFaults) onEvent(fn string) func(instance, pid int, requestID string, payload []byte) {
	return func(instance, pid int, requestID string, payload []byte) {
		if !t.armedFor(fn) {
			return
		}
		ids := recordsOfEvent(payload)
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, a := range t.armed {
			k := firedKey{fn, a.id, a.kind}
			if _, done := t.fired[k]; !a.functions[fn] || done || !ids[a.id] {
				continue
			}
			if t.due == nil {
				t.due = map[string]firedKey{}
			}
			t.due[requestID] = k
			return // one signal per event
		}
	}
}

// onAnswer is runtimeapi's hook as a process answers its invocation: it stops or kills the
// process when a fault is due for that invocation's event (by its request ID, unique), and
// then reports that the answer must not be taken.
func (t *processFaults) onAnswer(_, pid int, requestID string) bool {
	return t.answer(pid, requestID, false)
}

// onAnswerLMI is onAnswer for a Lambda Managed Instances function. A timeout fault does not
// stop the process, which runs other invocations, and which LMI would not reset: its
// answer is held past the invocation's deadline (runtimeapi), so the invocation times out
// for the mapping, which delivers the batch again while the first delivery still runs. A
// crash kills the process as onAnswer does, with every invocation in it.
func (t *processFaults) onAnswerLMI(_, pid int, requestID string) bool {
	return t.answer(pid, requestID, true)
}

func (t *processFaults) answer(pid int, requestID string, lmi bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.due[requestID]
	delete(t.due, requestID)
	if _, done := t.fired[k]; !ok || done {
		return true
	}
	sig := syscall.SIGSTOP
	if k.kind == faultCrash {
		sig = syscall.SIGKILL
	}
	if lmi && sig == syscall.SIGSTOP {
		sig = 0 // no signal: a check that the process lives, and the answer is held
	}
	if err := syscall.Kill(pid, sig); err != nil {
		// The process is gone already: no fault was injected, and the report must not say
		// there was.
		return true
	}
	if t.fired == nil {
		t.fired = map[firedKey]time.Time{}
	}
	t.fired[k] = time.Now()
	return false
}

// firedIn returns the functions where the fault of kind on record id fired.
func (t *processFaults) firedIn(id ledger.RecordID, kind string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for k := range t.fired {
		if k.id == id && k.kind == kind {
			out = append(out, k.function)
		}
	}
	return sortedStrings(out)
}

// recordsOfEvent returns the input records an event carries: a Kafka event's records, or
// the records the messages of an SQS event carry (fanout's record attribute). An event klt
// cannot read carries none it can tell.
func recordsOfEvent(payload []byte) map[ledger.RecordID]bool {
	out := map[ledger.RecordID]bool{}
	if bytes.Contains(payload, []byte(`"eventSource":"aws:sqs"`)) || bytes.Contains(payload, []byte(`"Records"`)) {
		var ev events.SQSEvent
		if json.Unmarshal(payload, &ev) == nil {
			for _, m := range ev.Records {
				if r, err := fanout.ReadRecord(&m); err == nil {
					out[ledger.RecordID{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}] = true
				}
			}
			return out
		}
	}
	ev, err := kafkaevent.Parse(payload)
	if err != nil {
		return out
	}
	for _, p := range ev.Partitions {
		for _, r := range p.Records {
			out[ledger.RecordID{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}] = true
		}
	}
	return out
}

// sortedStrings returns ss sorted.
func sortedStrings(ss []string) []string {
	sort.Strings(ss)
	return ss
}
