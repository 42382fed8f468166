package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Text writes r as a plain-text summary for a terminal: the run's setting (each pipeline's
// own record count), the pipelines side by side, what klt could and could not observe, the
// side effects per resource, the speedup line, the faults and every record that was not
// simply succeeded once, the messages that reached failure and dead-letter queues, the
// mappings' totals and MetricsConfig figures, and a legend defining every counter.
func (r *Report) Text(w io.Writer) error {
	if err := r.Validate(); err != nil {
		return err
	}
	var b strings.Builder
	r.textHeader(&b)
	r.textPipelines(&b)
	r.textPredictions(&b)
	if s := r.Speedup; s != nil {
		fmt.Fprintf(&b, "\n%s\n", speedupText(r, s))
	}
	r.textRecords(&b)
	r.textFailedMessages(&b)
	r.textMappings(&b)
	r.textFunctions(&b)
	r.textLogs(&b)
	b.WriteString("\n")
	if len(r.Pipelines) > 0 {
		WriteLegend(&b, "legend of the pipelines' counts", PipelineDefinitions)
	}
	if len(r.Mappings) > 0 {
		WriteLegend(&b, "legend of the mappings' counters", MappingDefinitions)
	}
	if len(r.Logs) > 0 {
		WriteLegend(&b, "legend of the function logs", LogDefinitions)
	}
	return writeTrimmed(w, b.String())
}

// writeTrimmed writes s with the spaces at the ends of its lines removed.
func writeTrimmed(w io.Writer, s string) error {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n"))
	return err
}

func (r *Report) textHeader(b *strings.Builder) {
	fmt.Fprintf(b, "%s %s", r.Tool, r.Version)
	if !r.Started.IsZero() {
		fmt.Fprintf(b, ", started %s", r.Started.Format(time.RFC3339))
	}
	if r.Template != "" {
		fmt.Fprintf(b, ", template %s", r.Template)
	}
	fmt.Fprintf(b, "\nmachine: %s/%s, %d CPUs\n", r.Machine.GOOS, r.Machine.GOARCH, r.Machine.CPUs)
	fmt.Fprintf(b, "scenario: %s\n", scenarioText(r.Scenario))
	if len(r.Pipelines) > 0 {
		fmt.Fprintf(b, "records: %s\n", recordsText(r.Pipelines))
	}
	if r.Interrupted {
		b.WriteString("INTERRUPTED: the run was stopped before it ended; the figures are those of that moment\n")
	}
}

// textPipelines writes the pipelines side by side, then what klt observed of each and their
// side effects per resource.
func (r *Report) textPipelines(b *strings.Builder) {
	if len(r.Pipelines) == 0 {
		return
	}
	b.WriteString("\n")
	rows := [][]string{}
	row := func(label string, f func(p Pipeline) string) {
		cells := []string{label}
		for _, p := range r.Pipelines {
			cells = append(cells, f(p))
		}
		rows = append(rows, cells)
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	row("pipeline", func(p Pipeline) string { return p.Name })
	row("functions", func(p Pipeline) string { return strings.Join(p.Functions, " -> ") })
	row("phase", func(p Pipeline) string { return p.Phase })
	row("records", func(p Pipeline) string { return i64(p.Records) })
	row("seconds", func(p Pipeline) string { return fmtNum(p.Seconds) })
	row("records/s", func(p Pipeline) string { return fmtNum(p.RecordsPerSecond) })
	if r.predicted() {
		row("predicted records/s", func(p Pipeline) string {
			if p.Predicted == nil || p.Predicted.Error != "" {
				return "-"
			}
			return fmtNum(p.Predicted.RecordsPerSecond)
		})
	}
	row("latency p50 ms", func(p Pipeline) string { return fmtNum(p.LatencyMsP50) })
	row("latency p99 ms", func(p Pipeline) string { return fmtNum(p.LatencyMsP99) })
	row("lost", func(p Pipeline) string { return p.Lost.String() })
	row("applied twice", func(p Pipeline) string { return p.AppliedTwice.String() })
	row("order violations", func(p Pipeline) string { return p.OrderViolations.String() })
	row("failure queue", failureQueueText)
	row("dead-lettered", deadLetteredText)
	row("filtered", func(p Pipeline) string { return i64(p.Filtered) })
	row("records retried", func(p Pipeline) string { return i64(p.Retried) })
	row("duplicate requests", func(p Pipeline) string { return i64(p.DuplicateRequests) })
	row("failed invocations", func(p Pipeline) string { return i64(p.FailedInvocations) })
	row("fates", func(p Pipeline) string { return fatesText(p.Fates) })
	writeTable(b, "", rows, -1)

	var obs strings.Builder
	for _, p := range r.Pipelines {
		for _, s := range p.Observed {
			fmt.Fprintf(&obs, "  %s: observed: %s\n", p.Name, s)
		}
		for _, s := range p.Unobservable {
			fmt.Fprintf(&obs, "  %s: NOT observable: %s\n", p.Name, s)
		}
	}
	if obs.Len() > 0 {
		b.WriteString("\nwhat klt could and could not observe:\n")
		b.WriteString(obs.String())
	}
	rows = [][]string{{"pipeline", "resource", "kind", "via", "applied", "applied twice", "order violations", "latency p50 ms", "latency p99 ms"}}
	for _, p := range r.Pipelines {
		for _, res := range p.Resources {
			rows = append(rows, []string{p.Name, res.Resource, res.Kind, res.Via, res.Applied.String(), res.AppliedTwice.String(),
				res.OrderViolations.String(), fmtLatency(res.LatencyMsP50), fmtLatency(res.LatencyMsP99)})
		}
	}
	if len(rows) > 1 {
		b.WriteString("\nside effects per resource:\n")
		writeTable(b, "  ", rows, 4)
	}
}

// textRecords writes the faults and the per-record fates.
func (r *Report) textRecords(b *strings.Builder) {
	if len(r.Faults) > 0 {
		b.WriteString("\nfaults:\n")
		rows := [][]string{{"pipeline", "fault", "record", "fate", "attempts", "applied", "outcome"}}
		for _, f := range r.Faults {
			rows = append(rows, []string{f.Pipeline, shorten(f.Fault, 48), f.Record, f.Fate, strconv.Itoa(f.Attempts), f.Applied.String(), f.Outcome})
		}
		writeTable(b, "  ", rows, 4, 6)
	}
	if len(r.Records) > 0 {
		b.WriteString("\nrecords (the fault phase's, and every other not simply succeeded once):\n")
		rows := [][]string{{"pipeline", "record", "key", "fate", "attempts", "applied", "where", "why"}}
		for _, x := range r.Records[:min(len(r.Records), textRowsMax)] {
			rows = append(rows, []string{x.Pipeline, x.Record, shorten(x.Key, 24), x.Fate, strconv.Itoa(x.Attempts), x.Applied.String(), x.Where, x.Why})
		}
		writeTable(b, "  ", rows, 4, 6, 7)
		moreRows(b, len(r.Records))
	}
}

func (r *Report) textFailedMessages(b *strings.Builder) {
	if len(r.FailedMessages) == 0 {
		return
	}
	fmt.Fprintf(b, "\nmessages in failure queues, on-failure destinations and dead-letter queues (%d):\n", len(r.FailedMessages))
	rows := [][]string{{"queue", "kind", "pipeline", "record", "at", "why", "body"}}
	for _, m := range r.FailedMessages[:min(len(r.FailedMessages), textRowsMax)] {
		at := ""
		if !m.At.IsZero() {
			at = m.At.UTC().Format("15:04:05.000")
		}
		rows = append(rows, []string{m.Queue, m.Kind, m.Pipeline, m.Record, at, m.Why, oneLine(shorten(m.Body, textBodyMax))})
	}
	writeTable(b, "  ", rows, 7)
	moreRows(b, len(r.FailedMessages))
}

func (r *Report) textMappings(b *strings.Builder) {
	if len(r.Mappings) == 0 {
		return
	}
	b.WriteString("\nmappings:\n")
	rows := [][]string{{"mapping", "function", "source", "gives up to", "in", "delivered", "succeeded", "failure queue", "reported failed",
		"error failed", "retried", "dead-lettered", "filtered", "in flight", "lag", "invocations", "failed invocations"}}
	for _, m := range r.Mappings {
		rows = append(rows, append([]string{m.Name, m.Function, m.Source, dash(m.OnFailure)}, mappingCells(m)...))
	}
	writeTable(b, "  ", rows, 4)
	r.textLoads(b)
	var metrics [][]string
	for _, m := range r.Mappings {
		for i, x := range m.Metrics {
			name, groups := m.Name, strings.Join(m.MetricGroups, ", ")
			if i > 0 { // the mapping and its groups once, on its first metric
				name, groups = "", ""
			}
			metrics = append(metrics, []string{name, groups, x.Name, x.Statistic, fmtMetric(x.Value)})
		}
	}
	if len(metrics) > 0 {
		b.WriteString("\nMetricsConfig figures, as CloudWatch would show them for the run:\n")
		writeTable(b, "  ", append([][]string{{"mapping", "groups", "metric", "statistic", "value"}}, metrics...), 4)
	}
}

// textRowsMax is how many records and messages the text lists; report.html and report.json
// list them all.
const textRowsMax = 50

// moreRows says how many rows of n the text left out, if any.
func moreRows(b *strings.Builder, n int) {
	if n > textRowsMax {
		fmt.Fprintf(b, "  ... and %d more (report.html and report.json list them all)\n", n-textRowsMax)
	}
}

// mappingCells are a mapping's counters, in the order of the mappings table.
func mappingCells(m Mapping) []string {
	var out []string
	for _, v := range []int64{m.In, m.Delivered, m.Succeeded} {
		out = append(out, strconv.FormatInt(v, 10))
	}
	out = append(out, countOrDash(m.FailureQueue))
	for _, v := range []int64{m.ReportedFailed, m.ErrorFailed, m.Retried, m.DeadLettered, m.Filtered, m.InFlight, m.Lag, m.Invocations, m.Errors} {
		out = append(out, strconv.FormatInt(v, 10))
	}
	return out
}

// writeTable writes rows as columns. The columns before the first index of left (all when it
// is -1) and those listed after it are text, aligned left; the others are numbers, aligned
// right.
func writeTable(b *strings.Builder, indent string, rows [][]string, left ...int) {
	isText := func(c int) bool {
		if left[0] < 0 || c < left[0] {
			return true
		}
		for _, l := range left[1:] {
			if c == l {
				return true
			}
		}
		return false
	}
	width := map[int]int{}
	for _, r := range rows {
		for c, v := range r {
			width[c] = max(width[c], len([]rune(v)))
		}
	}
	for _, r := range rows {
		cells := make([]string, len(r))
		for c, v := range r {
			pad := strings.Repeat(" ", width[c]-len([]rune(v)))
			if isText(c) {
				cells[c] = v + pad
			} else {
				cells[c] = pad + v
			}
		}
		fmt.Fprintf(b, "%s%s\n", indent, strings.Join(cells, "   "))
	}
}

func countOrDash(c Count) string {
	if !c.IsObserved() {
		return "-"
	}
	return c.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func fmtLatency(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmtNum(*v)
}

// fmtMetric prints a metric's value: whole numbers as they are, others like fmtNum.
func fmtMetric(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return fmtNum(v)
}

// fatesText lists the fates of a pipeline's records in the report's order, "-" when the
// records were not followed one by one.
func fatesText(f map[string]int64) string {
	var parts []string
	for _, name := range Fates {
		if n := f[name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", name, n))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func scenarioText(s Scenario) string {
	rate := "as fast as possible"
	if s.Rate > 0 {
		rate = fmtNum(s.Rate) + " records/s"
	}
	var parts []string
	if s.Source != "" {
		parts = append(parts, s.Source)
	}
	if s.Keys > 0 {
		parts = append(parts, countOf(s.Keys, "key"))
	}
	if s.WorkMS > 0 {
		parts = append(parts, fmt.Sprintf("%d ms of work per record", s.WorkMS))
	}
	if s.Partitions > 0 {
		parts = append(parts, countOf(s.Partitions, "partition"))
	}
	parts = append(parts, "produced "+rate)
	return strings.Join(parts, "; ")
}

// countOf writes n things: "1 key", "5 keys".
func countOf(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// recordsText states each pipeline's own record count: "direct 500; fan-out 500".
func recordsText(ps []Pipeline) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%s %d", p.Name, p.Records))
	}
	return strings.Join(parts, "; ")
}

func speedupText(r *Report, s *Speedup) string {
	a, b := findPipeline(r.Pipelines, s.Of), findPipeline(r.Pipelines, s.Over)
	text := fmt.Sprintf("%s is %sx %s: %s records/s against %s", s.Of, fmtRatio(s.Ratio), s.Over,
		fmtNum(a.RecordsPerSecond), fmtNum(b.RecordsPerSecond))
	// A third load pipeline (a --variant's: make demo's consumer with key concurrency) against
	// the same one.
	for _, p := range loadPipelines(r.Pipelines) {
		if p.Name != s.Of && p.Name != s.Over && b.RecordsPerSecond > 0 {
			text += fmt.Sprintf("; %s is %sx %s: %s records/s", p.Name, fmtRatio(p.RecordsPerSecond/b.RecordsPerSecond), s.Over, fmtNum(p.RecordsPerSecond))
		}
	}
	return text
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
