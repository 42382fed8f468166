package stackrun

import (
	"fmt"
	"slices"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/esm/samspec"
)

// What klt local measures of each mapping for `klt plan`: the configuration it ran with
// (report.MappingConfig) and, over the load phases, its invocations (report.MappingLoad),
// from the ledger's invocation facts (ledger_invocations.go).

// The Kafka mapping's defaults where the template leaves BatchSize or
// MaximumBatchingWindowInSeconds out: package esm's (esm.WithBatchSize, esm.WithBatchingWindow),
// which are Lambda's for Kafka. An SQS mapping's are esm.SQSDefaultBatchSize and no window.
const (
	kafkaDefaultBatchSize = 100
	kafkaDefaultWindow    = 500 * time.Millisecond
	// kafkaPollers is the pollers klt local gives a Kafka mapping without
	// ProvisionedPollerConfig: esm's default. With one, it runs MinimumPollers
	// (samspec.MappingSpec.KafkaOptions).
	kafkaPollers = 1
)

// mappingConfig is the configuration mapping r ran with.
func (s *stack) mappingConfig(r *running) *report.MappingConfig {
	m := r.spec
	c := &report.MappingConfig{BatchSize: m.BatchSize}
	switch m.Kind {
	case samspec.KafkaMapping:
		c.Kind, c.Pollers, c.OnePartitionPerInvocation = report.KindKafka, max(m.MinimumPollers, kafkaPollers), s.c.OnePartitionPerInvocation
		c.Partitions = s.c.Partitions.get(m.Topics[0], 1)
		if c.BatchSize == 0 {
			c.BatchSize = kafkaDefaultBatchSize
		}
		w := m.Window
		if w < 0 {
			w = kafkaDefaultWindow
		}
		c.WindowMS = float64(w) / float64(time.Millisecond)
	case samspec.SqsMapping:
		c.Kind, c.MaximumConcurrency, c.Queue = report.KindSQS, m.MaxConcurrency, report.QueueStandard
		if r.sqs != nil && r.sqs.FIFO() {
			c.Queue = report.QueueFIFO
		}
		if c.BatchSize == 0 {
			c.BatchSize = esm.SQSDefaultBatchSize
		}
		if m.Window > 0 {
			c.WindowMS = float64(m.Window) / float64(time.Millisecond)
		}
	}
	return c
}

// phaseSpan is the time of one load phase a mapping ran in: from the phase's start (before
// its first record was produced) to its last record's fate.
type phaseSpan struct {
	phase      string
	start, end time.Time
}

// loadSpans returns, per mapping id, the load phases it ran in.
func loadSpans(phases []*phaseResult) map[string][]phaseSpan {
	out := map[string][]phaseSpan{}
	for _, ph := range phases {
		if ph.faulted {
			continue
		}
		for _, r := range ph.runs {
			var secs float64
			for i, p := range ph.pipes {
				if p.has(r.spec.Function) && i < len(ph.seconds) {
					secs = max(secs, ph.seconds[i])
				}
			}
			out[r.spec.Id] = append(out[r.spec.Id], phaseSpan{ph.name, ph.since, ph.since.Add(time.Duration(secs * float64(time.Second)))})
		}
	}
	return out
}

// mappingLoad measures mapping m over spans, its load phases; nil when it ran in none.
// Seconds counts each phase from its start to its last fate, or to the mapping's last
// invocation's end when later, so that every invocation lies within the time it is divided
// by.
func (s *stack) mappingLoad(m report.Mapping, topic string, spans []phaseSpan) (*report.MappingLoad, []string) {
	if len(spans) == 0 {
		return nil, nil
	}
	l := &report.MappingLoad{}
	var invMS, recMS []float64
	var records, partitions, busy, bytes, produced float64
	var notes []string
	groups := map[string]bool{}
	for _, sp := range spans {
		invs := s.obs.ledger.InvocationsOf(sp.phase, m.Name)
		end := sp.end
		for _, v := range invs {
			secs, ok := v.Seconds()
			if !ok {
				l.Unfinished++
				continue
			}
			l.Invocations++
			invMS = append(invMS, secs*1000)
			recMS = append(recMS, secs*1000/float64(v.Records))
			records += float64(v.Records)
			partitions += float64(v.Partitions)
			busy += secs
			if v.End.After(end) {
				end = v.End
			}
		}
		l.Seconds += end.Sub(sp.start).Seconds()
		l.ConcurrencyMax = max(l.ConcurrencyMax, maxConcurrency(invs))
		for g := range s.obs.ledger.GroupsOf(sp.phase, m.Name) {
			groups[sp.phase+"/"+g] = true
		}
		if n := s.obs.ledger.StrayEndsOf(sp.phase, m.Name); n > 0 {
			notes = append(notes, pluralf(n, "%d end of an invocation", "%d ends of invocations")+" of "+m.Name+" in phase "+sp.phase+" came without its start: not measured")
		}
		if topic != "" {
			for _, in := range s.obs.ledger.InputsOf(sp.phase) {
				if in.ID.Topic == topic {
					bytes += float64(len(in.Key) + len(in.Value))
					produced++
				}
			}
		}
	}
	l.MessageGroups = len(groups)
	if produced > 0 {
		l.RecordBytesMean = bytes / produced
	}
	if l.Invocations == 0 {
		return l, notes
	}
	n := float64(l.Invocations)
	l.InvocationMsMean, l.RecordsPerInvocation, l.RecordMsMean = mean(invMS), records/n, mean(recMS)
	if topic != "" {
		l.PartitionsPerInvocation = partitions / n
	}
	var err error
	if l.InvocationMsP50, l.InvocationMsP99, err = report.P50P99(invMS); err != nil {
		notes = append(notes, m.Name+"'s invocation times: "+err.Error()+": no percentiles")
	}
	if l.RecordMsP50, l.RecordMsP99, err = report.P50P99(recMS); err != nil {
		notes = append(notes, m.Name+"'s times per record: "+err.Error()+": no percentiles")
	}
	if l.Seconds > 0 {
		l.ConcurrencyMean = busy / l.Seconds
	}
	return l, notes
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

// addLoads sets each mapping's load figures from the load phases; what could not be measured
// is said on the output.
func (s *stack) addLoads(rep *report.Report, phases []*phaseResult) {
	spans := loadSpans(phases)
	topics := map[string]string{}
	for _, p := range s.pipelines {
		for _, m := range p.specs {
			if m.Kind == samspec.KafkaMapping {
				topics[m.Id] = m.Topics[0]
			}
		}
	}
	for i := range rep.Mappings {
		m := &rep.Mappings[i]
		var notes []string
		m.Load, notes = s.mappingLoad(*m, topics[m.Name], spans[m.Name])
		for _, n := range notes {
			fmt.Fprintf(s.out, "klt local: %s\n", n)
		}
	}
}
