package report

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Summary writes the short account of a run that the caller prints when the run is stopped
// (Ctrl-C) or when it has no load to report on: what ran (each pipeline's records and fates,
// when there were pipelines), every mapping's counters, and each message that reached a
// failure queue, an on-failure destination or a dead-letter queue, with the legend of the
// counters.
//
// The counters of a stopped run may be read while records were moving, so Summary does not
// refuse a report whose counters do not add up, as [Report.Validate] does: it prints what it
// has and says, on a line of its own, what did not add up.
func (r *Report) Summary(w io.Writer) error {
	if r.Tool == "" {
		return errors.New("report: report has no tool name")
	}
	var b strings.Builder
	state := "ended"
	if r.Interrupted {
		state = "was interrupted"
	}
	fmt.Fprintf(&b, "%s: the run %s; summary:\n", r.Tool, state)
	if len(r.Pipelines) == 0 {
		b.WriteString("ran: no load; the mappings served what was produced to them\n")
	}
	for _, p := range r.Pipelines {
		fmt.Fprintf(&b, "ran: %s (%s), %d records", p.Name, strings.Join(p.Functions, " -> "), p.Records)
		if f := fatesText(p.Fates); f != "-" {
			fmt.Fprintf(&b, ": %s", f)
		}
		fmt.Fprintf(&b, "; lost %s, applied twice %s, order violations %s\n", p.Lost, p.AppliedTwice, p.OrderViolations)
	}
	r.textMappings(&b)
	if len(r.Mappings) == 0 {
		b.WriteString("\nno mapping ran\n")
	}
	if len(r.FailedMessages) == 0 {
		b.WriteString("\nno message was read on a failure queue, an on-failure destination or a dead-letter queue\n")
	}
	r.textFailedMessages(&b)
	for i := range r.Mappings {
		if err := r.Mappings[i].validate(true); err != nil {
			fmt.Fprintf(&b, "\nnote: %v (read while records were moving)\n", err)
		}
	}
	r.textLogs(&b)
	if len(r.Mappings) > 0 {
		b.WriteString("\n")
		WriteLegend(&b, "legend of the mappings' counters", MappingDefinitions)
	}
	if len(r.Logs) > 0 {
		WriteLegend(&b, "legend of the function logs", LogDefinitions)
	}
	return writeTrimmed(w, b.String())
}
