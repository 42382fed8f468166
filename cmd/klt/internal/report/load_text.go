package report

import (
	"fmt"
	"strconv"
	"strings"
)

// textPredictions writes, per load pipeline, the throughput klt plan predicts beside the
// measured one, with the formula, the bound, the command and the notes.
func (r *Report) textPredictions(b *strings.Builder) {
	if !r.predicted() {
		return
	}
	b.WriteString("\npredicted by klt plan from this run's measurements, beside the measured throughput:\n")
	for _, p := range r.Pipelines {
		pr := p.Predicted
		if pr == nil {
			continue
		}
		if pr.Error != "" {
			fmt.Fprintf(b, "  %s: no prediction: %s\n", p.Name, pr.Error)
			continue
		}
		fmt.Fprintf(b, "  %s: measured %s records/s, predicted %s for this run (measured/predicted %s); steady %s records/s, bound: %s\n",
			p.Name, fmtNum(p.RecordsPerSecond), fmtNum(pr.RecordsPerSecond), fmtRatio(pr.Ratio), fmtNum(pr.SteadyRecordsPerSecond), oneLine(pr.Bound))
		fmt.Fprintf(b, "    formula: %s\n", oneLine(pr.Formula))
		for _, n := range pr.Notes {
			fmt.Fprintf(b, "    note: %s\n", oneLine(n))
		}
		fmt.Fprintf(b, "    the same plan: %s\n", pr.Command)
	}
}

// predicted reports whether a pipeline of r has a prediction (or says why it has none).
func (r *Report) predicted() bool {
	for _, p := range r.Pipelines {
		if p.Predicted != nil {
			return true
		}
	}
	return false
}

// textLoads writes the mappings' configuration and load figures.
func (r *Report) textLoads(b *strings.Builder) {
	rows := [][]string{{"mapping", "kind", "batch", "window ms", "partitions", "pollers", "max concurrency", "queue",
		"invocations", "invocation ms p50", "p99", "mean", "records/invocation", "partitions/invocation",
		"record ms p50", "p99", "mean", "concurrency mean", "max", "message groups"}}
	for _, m := range r.Mappings {
		if m.Config == nil && m.Load == nil {
			continue
		}
		row := []string{m.Name}
		if c := m.Config; c != nil {
			row = append(row, c.Kind, strconv.Itoa(c.BatchSize), fmtNum(c.WindowMS), zeroDash(c.Partitions), zeroDash(c.Pollers),
				zeroDash(c.MaximumConcurrency), dash(c.Queue))
		} else {
			row = append(row, "-", "-", "-", "-", "-", "-", "-")
		}
		if l := m.Load; l != nil && l.Invocations > 0 {
			row = append(row, strconv.FormatInt(l.Invocations, 10), fmtNum(l.InvocationMsP50), fmtNum(l.InvocationMsP99), fmtNum(l.InvocationMsMean),
				fmtNum(l.RecordsPerInvocation), fmtNum(l.PartitionsPerInvocation), fmtNum(l.RecordMsP50), fmtNum(l.RecordMsP99), fmtNum(l.RecordMsMean),
				fmtNum(l.ConcurrencyMean), strconv.Itoa(l.ConcurrencyMax), zeroDash(l.MessageGroups))
		} else {
			row = append(row, "0", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-")
		}
		rows = append(rows, row)
	}
	if len(rows) == 1 {
		return
	}
	b.WriteString("\nmappings' configuration and, over the load phases, their invocations (what klt plan reads):\n")
	writeTable(b, "  ", rows, 2, 7)
}

// zeroDash prints n, or "-" for 0 (not set, or not of this kind of mapping).
func zeroDash(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}
