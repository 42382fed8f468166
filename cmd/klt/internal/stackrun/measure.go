package stackrun

import (
	"fmt"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/esm/samspec"
)

// What klt local measures of each mapping for `klt plan`: the configuration it ran with
// (report.MappingConfig) and, over the load phases, its invocations (report.MappingLoad, which
// report.LoadOf reads from the ledger's invocation facts).

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

// loadSpans returns, per mapping id, the load phases it ran in.
func loadSpans(phases []*phaseResult) map[string][]report.LoadSpan {
	out := map[string][]report.LoadSpan{}
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
			out[r.spec.Id] = append(out[r.spec.Id], report.LoadSpan{Phase: ph.name, Start: ph.since, End: ph.since.Add(time.Duration(secs * float64(time.Second)))})
		}
	}
	return out
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
		m.Load, notes = report.LoadOf(s.obs.ledger, m.Name, topics[m.Name], spans[m.Name])
		for _, n := range notes {
			fmt.Fprintf(s.out, "klt local: %s\n", n)
		}
	}
}
