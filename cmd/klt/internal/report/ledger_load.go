package report

import (
	"fmt"
	"slices"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
)

// What klt local measured of each mapping's load, for `klt plan`: read from the ledger's
// invocation facts (package ledger's Invocation), never from the mappings' counters.

// LoadSpan is the time of one load phase a mapping ran in: from the phase's start (before its
// first record was produced) to its last record's fate.
type LoadSpan struct {
	Phase      string
	Start, End time.Time
}

// LoadOf measures mapping over spans, its load phases, from the invocations the ledger l
// holds of it (and, for a Kafka mapping, the records produced to its topic); nil when it
// ran in none. The notes say what could not be measured.
// Seconds counts each phase from its start to its last fate, or to the mapping's last
// invocation's end when later, so that every invocation lies within the time it is divided
// by.
func LoadOf(l *ledger.Ledger, mapping, topic string, spans []LoadSpan) (*MappingLoad, []string) {
	if len(spans) == 0 {
		return nil, nil
	}
	load := &MappingLoad{}
	var invMS, recMS []float64
	var records, partitions, busy, bytes, produced float64
	var notes []string
	groups := map[string]bool{}
	for _, sp := range spans {
		invs := l.InvocationsOf(sp.Phase, mapping)
		end := sp.End
		for _, v := range invs {
			secs, ok := v.Seconds()
			if !ok {
				load.Unfinished++
				continue
			}
			load.Invocations++
			invMS = append(invMS, secs*1000)
			recMS = append(recMS, secs*1000/float64(v.Records))
			records += float64(v.Records)
			partitions += float64(v.Partitions)
			busy += secs
			if v.End.After(end) {
				end = v.End
			}
		}
		load.Seconds += end.Sub(sp.Start).Seconds()
		load.ConcurrencyMax = max(load.ConcurrencyMax, maxConcurrency(invs))
		for g := range l.GroupsOf(sp.Phase, mapping) {
			groups[sp.Phase+"/"+g] = true
		}
		if n := l.StrayEndsOf(sp.Phase, mapping); n > 0 {
			notes = append(notes, pluralf(n, "%d end of an invocation", "%d ends of invocations")+" of "+mapping+" in phase "+sp.Phase+" came without its start: not measured")
		}
		if topic != "" {
			for _, in := range l.InputsOf(sp.Phase) {
				if in.ID.Topic == topic {
					bytes += float64(len(in.Key) + len(in.Value))
					produced++
				}
			}
		}
	}
	load.MessageGroups = len(groups)
	if produced > 0 {
		load.RecordBytesMean = bytes / produced
	}
	if load.Invocations == 0 {
		return load, notes
	}
	n := float64(load.Invocations)
	load.InvocationMsMean, load.RecordsPerInvocation, load.RecordMsMean = mean(invMS), records/n, mean(recMS)
	if topic != "" {
		load.PartitionsPerInvocation = partitions / n
	}
	var err error
	if load.InvocationMsP50, load.InvocationMsP99, err = P50P99(invMS); err != nil {
		notes = append(notes, mapping+"'s invocation times: "+err.Error()+": no percentiles")
	}
	if load.RecordMsP50, load.RecordMsP99, err = P50P99(recMS); err != nil {
		notes = append(notes, mapping+"'s times per record: "+err.Error()+": no percentiles")
	}
	if load.Seconds > 0 {
		load.ConcurrencyMean = busy / load.Seconds
	}
	return load, notes
}

// maxConcurrency is the most invocations of invs that ran at one moment (an invocation that
// did not end runs to the end).
func maxConcurrency(invs []ledger.Invocation) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var es []edge
	for _, v := range invs {
		es = append(es, edge{v.Start, 1})
		if !v.End.IsZero() {
			es = append(es, edge{v.End, -1})
		}
	}
	// At one instant, an end before a start: an invocation that ended as another began did
	// not run beside it.
	slices.SortFunc(es, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, most := 0, 0
	for _, e := range es {
		n += e.delta
		most = max(most, n)
	}
	return most
}

func mean(vs []float64) float64 {
	var sum float64
	for _, v := range vs {
		sum += v
	}
	return sum / float64(len(vs))
}

// pluralf formats n with one (n == 1) or many.
func pluralf(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf(one, n)
	}
	return fmt.Sprintf(many, n)
}
