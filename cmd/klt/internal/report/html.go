package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"
)

const chartWidth = 1000

// HTML writes r as one self-contained page, the content of report.html: inline CSS and SVG,
// no script, nothing loaded from anywhere.
func (r *Report) HTML(w io.Writer) error {
	if err := r.Validate(); err != nil {
		return err
	}
	data := struct {
		*Report
		StartedText, ScenarioText, RecordsText, SpeedupText string
		Figures, Bars, Throughput, Applied, Lag             template.HTML
		PipelineLegend, MappingLegend, LogLegend            []Definition
		Predictions, Loads                                  bool
	}{
		Report:         r,
		ScenarioText:   scenarioText(r.Scenario),
		RecordsText:    recordsText(r.Pipelines),
		PipelineLegend: PipelineDefinitions,
		MappingLegend:  MappingDefinitions,
		LogLegend:      LogDefinitions,
		Figures:        template.HTML(figures(loadPipelines(r.Pipelines), chartWidth).element(`class="chart" id="figures"`)),
		Bars:           template.HTML(barChart(loadPipelines(r.Pipelines), r.Speedup, chartWidth).element(`class="chart" id="bars"`)),
		Throughput:     template.HTML(throughputChart(r).element(`class="chart" id="throughput"`)),
		Lag:            template.HTML(lagChart(r).element(`class="chart" id="lag"`)),
	}
	for _, p := range r.Pipelines {
		data.Predictions = data.Predictions || p.Predicted != nil
	}
	for _, m := range r.Mappings {
		data.Loads = data.Loads || m.Config != nil && m.Load != nil
	}
	if len(r.Series.Applied) > 0 {
		data.Applied = template.HTML(appliedChart(r).element(`class="chart" id="applied"`))
	}
	if !r.Started.IsZero() {
		data.StartedText = r.Started.Format(time.RFC3339)
	}
	if r.Speedup != nil {
		data.SpeedupText = speedupText(r, r.Speedup)
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, data); err != nil {
		return fmt.Errorf("report: report.html: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func throughputChart(r *Report) chart {
	return lineChart("Records succeeded per second, per function", "seconds since start", "records per second (log scale)",
		r.Series.Throughput, r.Series.Phases, chartWidth, 340, true)
}

func appliedChart(r *Report) chart {
	return lineChart("Records applied per second, per function (each record once, whatever its side effects)", "seconds since start", "records applied per second (log scale)",
		r.Series.Applied, r.Series.Phases, chartWidth, 340, true)
}

func lagChart(r *Report) chart {
	return lineChart("Lag per partition and queue", "seconds since start", "records not yet delivered",
		r.Series.Lag, r.Series.Phases, chartWidth, 340, false)
}

// SVG writes the report's key figures and charts as one standalone SVG picture, the content
// of report.svg (for a README, where a page cannot be embedded).
func (r *Report) SVG(w io.Writer) error {
	if err := r.Validate(); err != nil {
		return err
	}
	const pad = 24.0
	var b strings.Builder
	y := 0.0
	place := func(c chart) {
		b.WriteString(c.element(fmt.Sprintf(`x="0" y="%s"`, num(y))))
		y += c.h + 8
	}
	var head strings.Builder
	fmt.Fprintf(&head, `<text x="%s" y="34" font-size="22" font-weight="700" fill="%s">%s: throughput report</text>`, num(pad), inkColor, esc(r.Tool))
	fmt.Fprintf(&head, `<text x="%s" y="58" font-size="13" fill="%s">%s</text>`, num(pad), mutedInk, esc(subtitle(r)))
	fmt.Fprintf(&head, `<text x="%s" y="78" font-size="13" fill="%s">%s</text>`, num(pad), mutedInk, esc(scenarioText(r.Scenario)))
	hh := 88.0
	if len(r.Pipelines) > 0 {
		fmt.Fprintf(&head, `<text x="%s" y="98" font-size="13" fill="%s">records: %s</text>`, num(pad), mutedInk, esc(ellipsis(recordsText(r.Pipelines), 140)))
		hh = 108
	}
	if r.Interrupted {
		fmt.Fprintf(&head, `<text x="%s" y="%s" font-size="13" font-weight="600" fill="%s">interrupted: the figures are those of the moment the run stopped</text>`, num(pad), num(hh+10), unobservedColor)
		hh += 20
	}
	place(chart{chartWidth, hh, head.String()})
	place(figures(loadPipelines(r.Pipelines), chartWidth))
	place(barChart(loadPipelines(r.Pipelines), r.Speedup, chartWidth))
	place(throughputChart(r))
	if len(r.Series.Applied) > 0 {
		place(appliedChart(r))
	}
	place(lagChart(r))
	if len(r.Faults) > 0 {
		place(faultsChart(r.Faults, chartWidth))
	}
	if len(r.FailedMessages) > 0 {
		place(failedMessagesChart(r.FailedMessages, chartWidth))
	}
	_, err := fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="%s"><rect width="100%%" height="100%%" fill="#ffffff"/>%s</svg>
`, num(chartWidth), num(y), num(chartWidth), num(y), esc(fontStack), b.String())
	return err
}

func subtitle(r *Report) string {
	parts := []string{}
	if r.Template != "" {
		parts = append(parts, r.Template)
	}
	if !r.Started.IsZero() {
		parts = append(parts, r.Started.Format(time.RFC3339))
	}
	parts = append(parts, fmt.Sprintf("%s/%s, %d CPUs", r.Machine.GOOS, r.Machine.GOARCH, r.Machine.CPUs))
	if r.Version != "" {
		parts = append(parts, r.Version)
	}
	return strings.Join(parts, " · ")
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":          fmtNum,
	"ratio":        fmtRatio,
	"join":         strings.Join,
	"status":       countClass,
	"dash":         countOrDash,
	"failureQueue": failureQueueText,
	"deadLettered": deadLetteredText,
	"lat":          fmtLatency,
	"fates":        fatesText,
	"short":        func(s string) string { return oneLine(shorten(s, textBodyMax)) },
	"at": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("15:04:05.000")
	},
	"metric": fmtMetric,
	"sub":    subtitle,
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Tool}} report</title>
<style>
` + PageStyle + `  .speedup { font-size: 15px; margin: 4px 20px 12px; }
  th, td { padding: 5px 5px; border-bottom: 1px solid #e5e7eb; text-align: right; white-space: nowrap; }
  th { font-weight: 600; color: #6b7280; font-size: 12px; white-space: normal; vertical-align: bottom; }
  th:first-child, td:first-child, td.text, th.text { text-align: left; }
  td.text { white-space: normal; }
  td.ok { color: #15803d; font-weight: 700; background: #f0fdf4; }
  td.bad { color: #b91c1c; font-weight: 700; background: #fef2f2; }
  .empty { color: #6b7280; }
  td.unobservable { color: #92400e; font-weight: 700; background: #fffbeb; }
  .interrupted { color: #92400e; }
  .observed ul { margin: 0; padding-left: 20px; }
  li.unseen { color: #92400e; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; font-size: 13px; }
  dt { font-weight: 600; }
  dd { margin: 0; color: #374151; }
</style>
</head>
<body>
<main>
<header>
  <h1>{{.Tool}}: throughput report</h1>
  <p class="meta">{{sub .Report}}</p>
  <p class="meta">{{.ScenarioText}}</p>
  {{with .RecordsText}}<p class="meta" id="records-per-pipeline">records: {{.}}</p>{{end}}
  {{if .Interrupted}}<p class="interrupted"><strong>Interrupted:</strong> the run was stopped before it ended; the figures are those of that moment.</p>{{end}}
</header>

<section class="charts">
{{.Figures}}
{{.Bars}}
{{with .SpeedupText}}<p class="speedup" id="speedup"><strong>{{.}}</strong></p>{{end}}
</section>
{{if .Predictions}}
<section id="predicted">
<h2>Predicted by klt plan, beside the measured throughput</h2>
{{range .Pipelines}}{{if .Predicted}}<div class="observed"><h3>{{.Name}}</h3><ul>{{with .Predicted}}
{{if .Error}}<li class="unseen"><strong>no prediction:</strong> {{.Error}}</li>
{{else}}<li>predicted for this run: <strong>{{num .RecordsPerSecond}} records/s</strong> (measured/predicted {{ratio .Ratio}}); steady: {{num .SteadyRecordsPerSecond}} records/s, bound: {{.Bound}}</li>
<li>formula: <code>{{.Formula}}</code></li>
{{range .Notes}}<li>note: {{.}}</li>
{{end}}<li>the same plan: <code>{{.Command}}</code></li>
{{end}}{{end}}</ul></div>
{{end}}{{end}}</section>
{{end}}
<section id="pipelines">
<h2>Pipelines</h2>
<div class="scroll"><table id="pipeline-table">
<thead><tr><th>pipeline</th><th>phase</th><th>records</th><th>seconds</th><th>records/s</th><th>p50 ms</th><th>p99 ms</th><th>lost</th><th>applied twice</th><th>order violations</th></tr></thead>
<tbody>
{{range .Pipelines}}<tr><td title="{{join .Functions " → "}}"><strong>{{.Name}}</strong></td><td>{{.Phase}}</td><td>{{.Records}}</td><td>{{num .Seconds}}</td><td><strong>{{num .RecordsPerSecond}}</strong></td><td>{{num .LatencyMsP50}}</td><td>{{num .LatencyMsP99}}</td><td class="{{status .Lost}}">{{.Lost}}</td><td class="{{status .AppliedTwice}}">{{.AppliedTwice}}</td><td class="{{status .OrderViolations}}">{{.OrderViolations}}</td></tr>
{{end}}</tbody>
</table></div>
<h3>Where the records went</h3>
<div class="scroll"><table id="pipeline-fates">
<thead><tr><th>pipeline</th><th>phase</th><th>failure queue</th><th>dead-lettered</th><th>filtered</th><th>records retried</th><th>duplicate requests</th><th>failed invocations</th><th class="text">fates</th></tr></thead>
<tbody>
{{range .Pipelines}}<tr><td title="{{join .Functions " → "}}"><strong>{{.Name}}</strong></td><td>{{.Phase}}</td><td>{{failureQueue .}}</td><td>{{deadLettered .}}</td><td>{{.Filtered}}</td><td>{{.Retried}}</td><td>{{.DuplicateRequests}}</td><td>{{.FailedInvocations}}</td><td class="text">{{fates .Fates}}</td></tr>
{{end}}</tbody>
</table></div>
{{range .Pipelines}}{{if or .Observed .Unobservable}}<div class="observed"><h3>{{.Name}}: what klt could and could not observe</h3><ul>
{{range .Observed}}<li class="seen">observed: {{.}}</li>
{{end}}{{range .Unobservable}}<li class="unseen"><strong>not observable:</strong> {{.}}</li>
{{end}}</ul></div>
{{end}}{{end}}
<h3>Side effects per resource</h3>
<div class="scroll"><table id="resources">
<thead><tr><th>pipeline</th><th class="text">resource</th><th class="text">kind</th><th class="text">via</th><th>applied</th><th>applied twice</th><th>order violations</th><th>p50 ms</th><th>p99 ms</th></tr></thead>
<tbody>
{{range $p := .Pipelines}}{{range .Resources}}<tr><td>{{$p.Name}}</td><td class="text">{{.Resource}}</td><td class="text">{{.Kind}}</td><td class="text">{{.Via}}</td><td class="{{if .Applied.IsObserved}}{{else}}unobservable{{end}}">{{.Applied}}</td><td class="{{status .AppliedTwice}}">{{.AppliedTwice}}</td><td class="{{status .OrderViolations}}">{{.OrderViolations}}</td><td>{{lat .LatencyMsP50}}</td><td>{{lat .LatencyMsP99}}</td></tr>
{{end}}{{end}}</tbody>
</table></div>
</section>

<section class="charts">
{{.Throughput}}
</section>
{{with .Applied}}<section class="charts">
{{.}}
</section>
{{end}}<section class="charts">
{{.Lag}}
</section>

<section id="faults">
<h2>Injected faults</h2>
{{if .Faults}}<div class="scroll"><table>
<thead><tr><th>pipeline</th><th class="text">fault</th><th class="text">record</th><th class="text">fate</th><th>attempts</th><th>applied</th><th class="text">outcome</th></tr></thead>
<tbody>
{{range .Faults}}<tr><td>{{.Pipeline}}</td><td class="text">{{.Fault}}</td><td class="text"><code>{{.Record}}</code></td><td class="text">{{.Fate}}</td><td>{{.Attempts}}</td><td>{{.Applied}}</td><td class="text">{{.Outcome}}</td></tr>
{{end}}</tbody>
</table></div>{{else}}<p class="empty">No faults were injected in this run.</p>{{end}}
</section>

<section id="records">
<h2>Records followed one by one</h2>
<p class="meta">The fault phase's records, and every other record that was not simply succeeded once.</p>
{{if .Records}}<div class="scroll"><table>
<thead><tr><th>pipeline</th><th class="text">record</th><th class="text">key</th><th class="text">fate</th><th>attempts</th><th>applied</th><th class="text">where</th><th class="text">why</th></tr></thead>
<tbody>
{{range .Records}}<tr><td>{{.Pipeline}}</td><td class="text"><code>{{.Record}}</code></td><td class="text">{{.Key}}</td><td class="text">{{.Fate}}</td><td>{{.Attempts}}</td><td>{{.Applied}}</td><td class="text">{{.Where}}</td><td class="text">{{.Why}}</td></tr>
{{end}}</tbody>
</table></div>{{else}}<p class="empty">No record is listed: the run followed none that was not simply succeeded once.</p>{{end}}
</section>

<section id="failed-messages">
<h2>Failure queues, on-failure destinations and dead-letter queues</h2>
{{if .FailedMessages}}<div class="scroll"><table>
<thead><tr><th>queue</th><th class="text">kind</th><th class="text">pipeline</th><th class="text">record</th><th class="text">at</th><th class="text">why</th><th class="text">body</th></tr></thead>
<tbody>
{{range .FailedMessages}}<tr><td>{{.Queue}}</td><td class="text">{{.Kind}}</td><td class="text">{{.Pipeline}}</td><td class="text"><code>{{.Record}}</code></td><td class="text">{{at .At}}</td><td class="text">{{.Why}}</td><td class="text"><code>{{short .Body}}</code></td></tr>
{{end}}</tbody>
</table></div>{{else}}<p class="empty">No message was read on a failure queue, an on-failure destination or a dead-letter queue.</p>{{end}}
</section>

<section id="mappings">
<h2>Event source mappings</h2>
{{if .Mappings}}<div class="scroll"><table>
<thead><tr><th>mapping</th><th class="text">function</th><th class="text">source</th><th class="text">gives up to</th><th>in</th><th>delivered</th><th>succeeded</th><th>failure queue</th><th>reported failed</th><th>error failed</th><th>retried</th><th>dead-lettered</th><th>filtered</th><th>in flight</th><th>lag</th><th>invocations</th><th>failed invocations</th></tr></thead>
<tbody>
{{range .Mappings}}<tr><td>{{.Name}}</td><td class="text">{{.Function}}</td><td class="text">{{.Source}}</td><td class="text">{{or .OnFailure "-"}}</td><td>{{.In}}</td><td>{{.Delivered}}</td><td>{{.Succeeded}}</td><td>{{dash .FailureQueue}}</td><td>{{.ReportedFailed}}</td><td>{{.ErrorFailed}}</td><td>{{.Retried}}</td><td>{{.DeadLettered}}</td><td>{{.Filtered}}</td><td>{{.InFlight}}</td><td>{{.Lag}}</td><td>{{.Invocations}}</td><td>{{.Errors}}</td></tr>
{{end}}</tbody>
</table></div>
{{if .Loads}}<h3>Configuration and, over the load phases, invocations (what klt plan reads)</h3>
<div class="scroll"><table id="loads">
<thead><tr><th>mapping</th><th class="text">kind</th><th>batch</th><th>window ms</th><th>partitions</th><th>pollers</th><th>max concurrency</th><th class="text">queue</th><th>invocations</th><th>invocation ms p50</th><th>p99</th><th>mean</th><th>records / invocation</th><th>partitions / invocation</th><th>record ms p50</th><th>p99</th><th>mean</th><th>concurrency mean</th><th>max</th><th>message groups</th></tr></thead>
<tbody>
{{range .Mappings}}{{if and .Config .Load}}<tr><td>{{.Name}}</td><td class="text">{{.Config.Kind}}</td><td>{{.Config.BatchSize}}</td><td>{{num .Config.WindowMS}}</td><td>{{.Config.Partitions}}</td><td>{{.Config.Pollers}}</td><td>{{.Config.MaximumConcurrency}}</td><td class="text">{{or .Config.Queue "-"}}</td><td>{{.Load.Invocations}}</td><td>{{num .Load.InvocationMsP50}}</td><td>{{num .Load.InvocationMsP99}}</td><td>{{num .Load.InvocationMsMean}}</td><td>{{num .Load.RecordsPerInvocation}}</td><td>{{num .Load.PartitionsPerInvocation}}</td><td>{{num .Load.RecordMsP50}}</td><td>{{num .Load.RecordMsP99}}</td><td>{{num .Load.RecordMsMean}}</td><td>{{num .Load.ConcurrencyMean}}</td><td>{{.Load.ConcurrencyMax}}</td><td>{{.Load.MessageGroups}}</td></tr>
{{end}}{{end}}</tbody>
</table></div>{{end}}
<h3>MetricsConfig figures, as CloudWatch would show them for the run</h3>
<div class="scroll"><table id="metrics">
<thead><tr><th>mapping</th><th class="text">groups</th><th class="text">metric</th><th class="text">statistic</th><th>value</th></tr></thead>
<tbody>
{{range $m := .Mappings}}{{range .Metrics}}<tr><td>{{$m.Name}}</td><td class="text">{{join $m.MetricGroups ", "}}</td><td class="text">{{.Name}}</td><td class="text">{{.Statistic}}</td><td>{{metric .Value}}</td></tr>
{{end}}{{end}}</tbody>
</table></div>{{else}}<p class="empty">No mappings were reported.</p>{{end}}
</section>

{{if .Logs}}<section id="function-logs">
<h2>Function logs: request IDs and correlation IDs</h2>
<div class="scroll"><table>
<thead><tr><th>function</th><th>invocations</th><th>logged</th><th>JSON lines</th><th>request ID</th><th>correlation ID</th><th>no request ID</th><th>other ID</th><th>EMF</th><th>text</th></tr></thead>
<tbody>
{{range .Logs}}<tr><td>{{.Function}}</td><td>{{.Invocations}}</td><td>{{.InvocationsLogged}}</td><td>{{.JSONLines}}</td><td>{{.WithRequestID}}</td><td>{{.WithCorrelationID}}</td><td>{{.WithoutRequestID}}</td><td>{{.OtherRequestID}}</td><td>{{.EMFDocuments}}</td><td>{{.TextLines}}</td></tr>
{{end}}</tbody>
</table></div>
<p>Each invocation's request ID and its lines are in report.json (<code>function_logs</code>).</p>
</section>

{{end}}<section id="legend">
<h2>Legend</h2>
<h3>Pipelines, records, resources and faults</h3>
<dl>
{{range .PipelineLegend}}<dt>{{.Term}}</dt><dd>{{.Meaning}}</dd>
{{end}}</dl>
<h3>Mappings (and the live display)</h3>
<dl>
{{range .MappingLegend}}<dt>{{.Term}}</dt><dd>{{.Meaning}}</dd>
{{end}}</dl>
{{if .Logs}}<h3>Function logs</h3>
<dl>
{{range .LogLegend}}<dt>{{.Term}}</dt><dd>{{.Meaning}}</dd>
{{end}}</dl>{{end}}
</section>

<footer>{{.Tool}} {{.Version}}: a local emulation of the event source mappings; figures depend on this machine.</footer>
</main>
</body>
</html>
`))

// countClass is the class of a cell holding a count that should be 0: ok when it is, bad when
// it is not, unobservable when klt could not observe it.
func countClass(c Count) string {
	switch {
	case !c.IsObserved():
		return "unobservable"
	case c.Is(0):
		return "ok"
	}
	return "bad"
}
