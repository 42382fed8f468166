package ledger

import (
	"sort"
	"time"

	"github.com/kafkalambda/toolkit/esm"
)

// The ledger also keeps each invocation the mappings made, as their events told it: when it
// started (Delivered), when its last record was settled (its last Succeeded or Failed event;
// for Kafka the commit after the invocation), how many records it carried and from how many
// partitions. The report's per-mapping load figures (invocation times, records and
// partitions per invocation, concurrency) and the plan klt local predicts from them are
// made of these facts only.

// invocationKey names one invocation: the mappings of each phase are new mappings, whose
// invocations are numbered from 1 again.
type invocationKey struct {
	Phase, Mapping string
	N              int64
}

// Invocation is what the events said of one invocation.
type Invocation struct {
	Start time.Time // its Delivered event
	// End is its last Succeeded or Failed event; zero while none came (the invocation had
	// not ended, or the mapping stopped first).
	End        time.Time
	Records    int
	Partitions int // distinct Kafka partitions among its records; 0 for SQS
	Failed     bool
}

// Seconds is the invocation's duration; ok is false for one that did not end.
func (v Invocation) Seconds() (float64, bool) {
	if v.End.IsZero() || v.End.Before(v.Start) {
		return 0, false
	}
	return v.End.Sub(v.Start).Seconds(), true
}

// phaseMapping names a mapping in one phase.
type phaseMapping struct{ Phase, Mapping string }

// Invoked records the invocation facts of a mapping's event of phase: a Delivered event
// starts invocation e.Invocation, its Succeeded and Failed events move its end. Events
// without an invocation (Filtered, GaveUp) say nothing of one.
func (l *Ledger) Invoked(phase string, e esm.Event) {
	if e.Invocation == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := invocationKey{phase, e.Mapping, e.Invocation}
	switch e.Kind {
	case esm.Delivered:
		parts := map[int32]bool{}
		pm := phaseMapping{phase, e.Mapping}
		for _, r := range e.Records {
			if r.MessageID == "" {
				parts[r.Partition] = true
			}
			if r.MessageGroupID != "" {
				if l.groups[pm] == nil {
					l.groups[pm] = map[string]bool{}
				}
				l.groups[pm][r.MessageGroupID] = true
			}
		}
		if _, ok := l.invs[k]; !ok {
			l.invOrder = append(l.invOrder, k)
		}
		l.invs[k] = &Invocation{Start: e.At, Records: len(e.Records), Partitions: len(parts)}
	case esm.Succeeded, esm.Failed:
		v := l.invs[k]
		if v == nil { // an end without a start: counted, and the report says so
			l.strayEnds[phaseMapping{phase, e.Mapping}]++
			return
		}
		if e.At.After(v.End) {
			v.End = e.At
		}
		v.Failed = v.Failed || e.Kind == esm.Failed
	}
}

// InvocationsOf returns the invocations of mapping in phase, by start.
func (l *Ledger) InvocationsOf(phase, mapping string) []Invocation {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Invocation
	for _, k := range l.invOrder {
		if k.Phase == phase && k.Mapping == mapping {
			out = append(out, *l.invs[k])
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// StrayEndsOf is how many ends of invocations mapping reported in phase whose start klt did
// not see (none, as the mappings report each invocation's events in order).
func (l *Ledger) StrayEndsOf(phase, mapping string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.strayEnds[phaseMapping{phase, mapping}]
}

// GroupsOf returns the distinct message groups mapping delivered in phase (FIFO queues).
func (l *Ledger) GroupsOf(phase, mapping string) map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for g := range l.groups[phaseMapping{phase, mapping}] {
		out[g] = true
	}
	return out
}
