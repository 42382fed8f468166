package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Text writes r as a plain-text summary for a terminal: the run's setting, the pipelines side
// by side, the speedup line, the faults and where each went, and the mappings' totals.
func (r *Report) Text(w io.Writer) error {
	if err := r.Validate(); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Tool, r.Version)
	if !r.Started.IsZero() {
		fmt.Fprintf(&b, ", started %s", r.Started.Format(time.RFC3339))
	}
	if r.Template != "" {
		fmt.Fprintf(&b, ", template %s", r.Template)
	}
	fmt.Fprintf(&b, "\nmachine: %s/%s, %d CPUs\n", r.Machine.GOOS, r.Machine.GOARCH, r.Machine.CPUs)
	fmt.Fprintf(&b, "scenario: %s\n", scenarioText(r.Scenario))

	if len(r.Pipelines) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
		row := func(label string, f func(p Pipeline) string) {
			cells := []string{label}
			for _, p := range r.Pipelines {
				cells = append(cells, f(p))
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
		}
		row("pipeline", func(p Pipeline) string { return p.Name })
		row("functions", func(p Pipeline) string { return strings.Join(p.Functions, " -> ") })
		row("records", func(p Pipeline) string { return strconv.FormatInt(p.Records, 10) })
		row("seconds", func(p Pipeline) string { return fmtNum(p.Seconds) })
		row("records/s", func(p Pipeline) string { return fmtNum(p.RecordsPerSecond) })
		row("latency p50 ms", func(p Pipeline) string { return fmtNum(p.LatencyMsP50) })
		row("latency p99 ms", func(p Pipeline) string { return fmtNum(p.LatencyMsP99) })
		row("lost", func(p Pipeline) string { return p.Lost.String() })
		row("applied twice", func(p Pipeline) string { return p.AppliedTwice.String() })
		row("order violations", func(p Pipeline) string { return p.OrderViolations.String() })
		row("dead-lettered", func(p Pipeline) string { return strconv.FormatInt(p.DeadLettered, 10) })
		row("filtered", func(p Pipeline) string { return strconv.FormatInt(p.Filtered, 10) })
		row("retried", func(p Pipeline) string { return strconv.FormatInt(p.Retried, 10) })
		row("duplicate requests", func(p Pipeline) string { return strconv.FormatInt(p.DuplicateRequests, 10) })
		row("failed invocations", func(p Pipeline) string { return strconv.FormatInt(p.FailedInvocations, 10) })
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if s := r.Speedup; s != nil {
		fmt.Fprintf(&b, "\n%s\n", speedupText(r, s))
	}
	if len(r.Faults) > 0 {
		b.WriteString("\nfaults:\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
		fmt.Fprintln(tw, "  pipeline\tfault\trecord\tattempts\tapplied\toutcome\t")
		for _, f := range r.Faults {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t\n", f.Pipeline, f.Fault, f.Record, f.Attempts, f.Applied.String(), f.Outcome)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Mappings) > 0 {
		b.WriteString("\nmappings:\n")
		// Text columns left-aligned (padded here), counts right-aligned (by the tabwriter).
		nw, fw, sw := len("mapping"), len("function"), len("source")
		for _, m := range r.Mappings {
			nw, fw, sw = max(nw, len(m.Name)), max(fw, len(m.Function)), max(sw, len(m.Source))
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%-*s\t%-*s\t%-*s\tin\tdone\tfailed\tfiltered\tdead-lettered\tinvocations\terrors\t\n",
			nw, "mapping", fw, "function", sw, "source")
		for _, m := range r.Mappings {
			fmt.Fprintf(tw, "%-*s\t%-*s\t%-*s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", nw, m.Name, fw, m.Function, sw, m.Source,
				m.In, m.Succeeded, m.ReportedFailed+m.ErrorFailed, m.Filtered, m.DeadLettered, m.Invocations, m.Errors)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n"))
	return err
}

func scenarioText(s Scenario) string {
	rate := "as fast as possible"
	if s.Rate > 0 {
		rate = fmtNum(s.Rate) + " records/s"
	}
	return fmt.Sprintf("%s, %d keys, %d ms of work per record, %d partitions, produced %s",
		s.Source, s.Keys, s.WorkMS, s.Partitions, rate)
}

func speedupText(r *Report, s *Speedup) string {
	a, b := findPipeline(r.Pipelines, s.Of), findPipeline(r.Pipelines, s.Over)
	return fmt.Sprintf("%s is %sx %s: %s records/s against %s", s.Of, fmtRatio(s.Ratio), s.Over,
		fmtNum(a.RecordsPerSecond), fmtNum(b.RecordsPerSecond))
}

// fmtNum prints a measurement with about three significant figures, without exponent.
func fmtNum(v float64) string {
	switch a := abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func fmtRatio(v float64) string {
	if abs(v) >= 10 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
