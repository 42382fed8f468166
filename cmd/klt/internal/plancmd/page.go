package plancmd

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/capacity"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
)

// The page of --report: one self-contained HTML file (inline CSS and SVG, no script, nothing
// loaded), with the charts the text cannot show and the text's tables. Each chart is the plan
// made again by capacity.Make over a range of one input, the others as given.

const (
	chartWidth  = 1000
	chartHeight = 340
	// gridPoints is about how many points a swept chart has: enough for a smooth curve, few
	// enough that the page stays small.
	gridPoints = 64
)

// grid returns about gridPoints whole numbers from 1 to top: every one when there are few,
// evenly spaced otherwise, top included.
func grid(top int) []int {
	top = max(top, 1)
	step := max(1, int(math.Ceil(float64(top)/gridPoints)))
	var xs []int
	for x := 1; x < top; x += step {
		xs = append(xs, x)
	}
	return append(xs, top)
}

// sweep is one swept chart: the plan made at each x, set into a copy of the input.
type sweep struct {
	id, title, xLabel, yLabel string
	what                      string  // the swept input, for messages: "partitions"
	planned                   float64 // the plan's own value of it: no model bound below it
	xs                        []float64
	set                       func(*capacity.Input, float64)
	y                         func(*capacity.Design) float64
	keep                      func(*capacity.Design) bool // whether a design has a point there
	target                    bool                        // draw the target rate across
	// lmi, when set, gives the LMI part's figure at the plan, and whether it has one there:
	// the cost chart draws LMI beside the designs, where the two cost lines cross.
	lmi func(*capacity.Plan) (float64, bool)
}

// points makes the plan at each x and returns each design's points: x and the figure y picks,
// where keep says the design has one (a cost where the design reaches the rate). A plan that
// fails is an error of the page, never a gap in a curve, with one exception said on the
// chart: past the plan's own value the model may refuse the input (a rate past its bound),
// and the curves end there, the caption saying where and why.
func (sw *sweep) points(in capacity.Input) (series map[string][]report.Point, caption string, err error) {
	series = map[string][]report.Point{}
	for _, x := range sw.xs {
		at := in
		at.Burst, at.BurstFor = 0, 0 // a sweep of the rate would cross the burst
		sw.set(&at, x)
		p, err := capacity.Make(at)
		if errors.Is(err, capacity.ErrInput) && x > sw.planned {
			return series, strings.TrimSpace(caption + fmt.Sprintf(" The curves end before %s %s: %v.", fmtNum(x), sw.what, err)), nil
		}
		if errors.Is(err, capacity.ErrInput) && x < sw.planned {
			// Below the plan's own value the model may refuse the input too (a rate under its
			// floor of 0.001 records a second): the curves start past it.
			caption = fmt.Sprintf("The curves start after %s %s: %v.", fmtNum(x), sw.what, err)
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("the chart of %s, at %s %s: %w", sw.title, fmtNum(x), sw.what, err)
		}
		for _, d := range p.Designs() {
			if !sw.keep(d) {
				continue
			}
			v := sw.y(d)
			if !finite(v) {
				return nil, "", fmt.Errorf("the chart of %s, at %s %s: %s's figure is %v", sw.title, fmtNum(x), sw.what, d.Name, v)
			}
			series[d.Name] = append(series[d.Name], report.Point{x, v})
		}
		if sw.lmi != nil {
			if v, ok := sw.lmi(p); ok {
				if !finite(v) {
					return nil, "", fmt.Errorf("the chart of %s, at %s %s: lmi's figure is %v", sw.title, fmtNum(x), sw.what, v)
				}
				series["direct on LMI"] = append(series["direct on LMI"], report.Point{x, v})
			}
		}
	}
	return series, caption, nil
}

func always(*capacity.Design) bool           { return true }
func maxRecords(d *capacity.Design) float64  { return d.MaxRecordsPerSecond }
func monthlyCost(d *capacity.Design) float64 { return *d.MonthlyCostUSD } // kept where it reaches
func reaches(d *capacity.Design) bool        { return d.ReachesTarget }

// lmiCost is the LMI part's monthly cost where it carries the rate.
func lmiCost(p *capacity.Plan) (float64, bool) {
	if p.LMI.MonthlyCostUSD == nil {
		return 0, false
	}
	return *p.LMI.MonthlyCostUSD, true
}

func floats(xs []int) (fs []float64) {
	for _, x := range xs {
		fs = append(fs, float64(x))
	}
	return fs
}

// pageChart is one chart of the page and what it says under it.
type pageChart struct {
	SVG     template.HTML
	Caption string
}

// sweeps are the page's swept charts for the plan p of the input in: the most records a second
// against the partitions (1 to twice the most needed, at least 64) and against the concurrency,
// the monthly cost against the rate (up to twice the target).
func sweeps(in capacity.Input, p *capacity.Plan) []*sweep {
	partitions := max(2*max(p.Direct.PartitionsNeeded, p.Fanout.PartitionsNeeded, in.Partitions), 64)
	// The concurrency axis shows where the curves flatten: four times the most needed, or the
	// plan's concurrency up to 128 (not the account's 1,000, which would squeeze them left).
	concurrency := max(4*max(p.Direct.ConcurrencyNeeded, p.Fanout.ConcurrencyNeeded), min(p.Input.Concurrency, 128))
	var rates []float64
	for i := 1; i <= gridPoints; i++ {
		rates = append(rates, 2*p.Input.Rate*float64(i)/gridPoints)
	}
	return []*sweep{
		{id: "throughput-partitions", title: "Most records per second, against the topic's partitions", xLabel: "partitions", yLabel: "records per second",
			what: "partitions", planned: float64(max(p.Input.Partitions, p.Direct.PartitionsNeeded, p.Fanout.PartitionsNeeded)), xs: floats(grid(partitions)),
			set: func(at *capacity.Input, x float64) { at.Partitions = int(x) }, y: maxRecords, keep: always, target: true},
		{id: "throughput-concurrency", title: "Most records per second, against each function's concurrency", xLabel: "concurrent invocations", yLabel: "records per second",
			what: "concurrent invocations", planned: float64(p.Input.Concurrency), xs: floats(grid(concurrency)),
			set: func(at *capacity.Input, x float64) { at.Concurrency = int(x) }, y: maxRecords, keep: always, target: true},
		{id: "cost-throughput", title: "Monthly cost against the steady rate, where the design reaches it", xLabel: "records per second", yLabel: "US dollars a month",
			what: "records per second", planned: p.Input.Rate, xs: rates,
			set: func(at *capacity.Input, x float64) { at.Rate = x }, y: monthlyCost, keep: reaches, lmi: lmiCost},
	}
}

// charts returns the page's charts: the sweeps, then the burst's lag when there is one.
func charts(in capacity.Input, p *capacity.Plan) ([]pageChart, error) {
	var out []pageChart
	add := func(id, title, xLabel, yLabel string, series map[string][]report.Point, caption string) {
		svg := report.LineChartSVG(title, xLabel, yLabel, series, chartWidth, chartHeight, false, fmt.Sprintf(`class="chart" id="%s"`, id))
		out = append(out, pageChart{template.HTML(svg), caption})
	}
	for _, sw := range sweeps(in, p) {
		series, caption, err := sw.points(in)
		if err != nil {
			return nil, err
		}
		if sw.target {
			series[fmt.Sprintf("target, %s/s", fmtNum(p.Input.Rate))] = []report.Point{{sw.xs[0], p.Input.Rate}, {sw.xs[len(sw.xs)-1], p.Input.Rate}}
		}
		add(sw.id, sw.title, sw.xLabel, sw.yLabel, series, caption)
	}
	if !slices.ContainsFunc(p.Designs(), func(d *capacity.Design) bool { return d.Burst != nil }) {
		return out, nil
	}
	lag := map[string][]report.Point{}
	for _, d := range p.Designs() {
		if d.Burst == nil {
			continue
		}
		for _, pt := range d.Burst.Curve {
			if !finite(pt.X, pt.Y) {
				return nil, fmt.Errorf("the burst's lag curve of %s has a point that is not a number", d.Name)
			}
			lag[d.Name] = append(lag[d.Name], report.Point{pt.X, pt.Y})
		}
	}
	add("burst-lag", fmt.Sprintf("Lag of a burst of %s records/s for %s", fmtNum(p.Input.Burst), time.Duration(p.Input.BurstFor)),
		"seconds since the burst's start", "records behind", lag, "")
	return out, nil
}

// pageDesign is one design's part of the page.
type pageDesign struct {
	*capacity.Design
	Title, Max, Reaches, Pollers, Concurrency, Partitions, Recommended, Burst, Total string
	EPUs                                                                             string
	Lifts                                                                            []string
	Stages, Figures, Costs                                                           [][]string
}

// planPage returns the page of the plan p; given is the input as given.
func planPage(given capacity.Input, p *capacity.Plan) ([]byte, error) {
	svgs, err := charts(given, p)
	if err != nil {
		return nil, err
	}
	src := &sources{}
	data := struct {
		Plan    *capacity.Plan
		Title   string
		Inputs  [][2]string
		Designs []pageDesign
		Cheaper string
		Charts  []pageChart
		Sources []source
	}{Plan: p, Inputs: inputRows(given, p.Input), Charts: svgs}
	data.Title = fmt.Sprintf("klt plan: %s records/s", fmtNum(p.Input.Rate))
	for _, d := range p.Designs() {
		data.Designs = append(data.Designs, newPageDesign(d, src))
	}
	data.Cheaper = cheaperText(p)
	for i, s := range src.list {
		data.Sources = append(data.Sources, newSource(i+1, s))
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("plan.html: %w", err)
	}
	return buf.Bytes(), nil
}

// newPageDesign makes the page's figures of d, its sources numbered in src.
func newPageDesign(d *capacity.Design, src *sources) pageDesign {
	pd := pageDesign{Design: d, Title: designTitles[d.Name], Reaches: reachesText(d), Total: "none: " + d.Name + " does not reach the target"}
	if d.MonthlyCostUSD != nil {
		pd.Total = "$" + fmtUSD(*d.MonthlyCostUSD)
	}
	bound := boundingStage(d)
	pd.Max = fmtNum(d.MaxRecordsPerSecond) + src.cite(bound.Formula, bound.Source)
	for _, l := range d.Lifts {
		pd.Lifts = append(pd.Lifts, liftText(l)+src.cite("", l.Source))
	}
	pd.Pollers, pd.Concurrency, pd.Partitions = neededText(d.PollersNeeded, d), neededText(d.ConcurrencyNeeded, d), neededText(d.PartitionsNeeded, d)
	pd.EPUs = neededText(d.EventPollerUnits, d)
	pd.Recommended = recommendedText(d)
	if d.Burst != nil {
		pd.Burst = burstText(d.Burst)
	}
	for _, s := range d.Stages {
		pd.Stages = append(pd.Stages, []string{s.Name, fmtNum(s.MaxRecordsPerSecond), s.Bound, s.Formula, src.ref(s.Source)})
	}
	for _, f := range d.Figures {
		pd.Figures = append(pd.Figures, []string{f.Name, strings.TrimSpace(fmtNum(f.Value) + " " + f.Unit), f.Formula, src.ref(f.Source)})
	}
	for _, c := range d.CostLines {
		pd.Costs = append(pd.Costs, []string{c.Item, fmtNum(c.Quantity) + " " + c.Unit, "$" + fmtPrice(c.UnitPrice), "$" + fmtUSD(c.MonthlyUSD), c.Formula, src.ref(c.Source)})
	}
	return pd
}

// source is one numbered source of the page; URL is set when it starts with one.
type source struct {
	N         int
	URL, Text string
}

// newSource splits a source into its URL, when it starts with one, and the rest.
func newSource(n int, s string) source {
	if !strings.HasPrefix(s, "https://") && !strings.HasPrefix(s, "http://") {
		return source{N: n, Text: s}
	}
	url, _, _ := strings.Cut(s, " ")
	url = strings.TrimRight(url, ",;:.")
	return source{N: n, URL: url, Text: strings.TrimLeft(strings.TrimPrefix(s, url), ",;: ")}
}

var pageTemplate = template.Must(template.New("plan").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
` + report.PageStyle + `  th, td { padding: 5px; border-bottom: 1px solid #e5e7eb; text-align: left; vertical-align: top; }
  th { font-weight: 600; color: #6b7280; font-size: 12px; }
  td.num { text-align: right; white-space: nowrap; }
  .yes { color: #15803d; font-weight: 700; }
  .no { color: #b91c1c; font-weight: 700; }
  .caption { color: #92400e; margin: 4px 20px 8px; }
</style>
</head>
<body>
<main>
<header>
  <h1>{{.Title}}</h1>
  <p class="meta">Cheaper: <strong id="cheaper">{{.Cheaper}}</strong>. Every figure gives its formula and the number of its source, listed at the end.</p>
</header>

{{range .Charts}}<section class="charts">
{{.SVG}}
{{with .Caption}}<p class="caption">{{.}}</p>{{end}}
</section>
{{end}}
{{range .Designs}}<section id="design-{{.Name}}">
<h2>{{.Name}}: {{.Title}}</h2>
<div class="scroll"><table>
<tbody>
<tr><th>max records/s</th><td>{{.Max}}</td></tr>
<tr><th>bound</th><td>{{.Bound}}</td></tr>
<tr><th>reaches the target</th><td class="{{if .ReachesTarget}}yes{{else}}no{{end}}">{{.Reaches}}</td></tr>
{{range $i, $l := .Lifts}}<tr><th>{{if not $i}}lifted by{{end}}</th><td>{{$l}}</td></tr>
{{end}}
<tr><th>pollers needed</th><td>{{.Pollers}}</td></tr>
<tr><th>concurrency needed</th><td>{{.Concurrency}}</td></tr>
<tr><th>partitions needed</th><td>{{.Partitions}}</td></tr>
<tr><th>event poller units</th><td>{{.EPUs}}</td></tr>
<tr><th>recommended</th><td>{{.Recommended}}</td></tr>
{{with .Burst}}<tr><th>burst</th><td>{{.}}</td></tr>{{end}}
</tbody>
</table></div>
<h3>Stages</h3>
<div class="scroll"><table>
<thead><tr><th>stage</th><th>max records/s</th><th>bound</th><th>formula</th><th>source</th></tr></thead>
<tbody>
{{range .Stages}}<tr><td>{{index . 0}}</td><td class="num">{{index . 1}}</td><td>{{index . 2}}</td><td>{{index . 3}}</td><td>{{index . 4}}</td></tr>
{{end}}</tbody>
</table></div>
<h3>Figures</h3>
<div class="scroll"><table>
<thead><tr><th>figure</th><th>value</th><th>formula</th><th>source</th></tr></thead>
<tbody>
{{range .Figures}}<tr><td>{{index . 0}}</td><td class="num">{{index . 1}}</td><td>{{index . 2}}</td><td>{{index . 3}}</td></tr>
{{end}}</tbody>
</table></div>
<h3>Monthly cost: {{.Total}}</h3>
<div class="scroll"><table class="cost">
<thead><tr><th>item</th><th>quantity</th><th>unit price</th><th>a month</th><th>formula</th><th>source</th></tr></thead>
<tbody>
{{range .Costs}}<tr><td>{{index . 0}}</td><td class="num">{{index . 1}}</td><td class="num">{{index . 2}}</td><td class="num">{{index . 3}}</td><td>{{index . 4}}</td><td>{{index . 5}}</td></tr>
{{end}}<tr><th>total</th><td></td><td></td><td class="num"><strong>{{.Total}}</strong></td><td></td><td></td></tr>
</tbody>
</table></div>
</section>
{{end}}
<section id="inputs">
<h2>Inputs</h2>
<p class="meta">* the model's default, not given.</p>
<div class="scroll"><table>
<tbody>
{{range .Inputs}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</tbody>
</table></div>
</section>

{{with .Plan.Runs}}<section id="runs">
<h2>The run the plan was made from, measured beside predicted</h2>
<div class="scroll"><table>
<thead><tr><th>pipeline</th><th>measured records/s</th><th>predicted for the run</th><th>measured / predicted</th><th>steady records/s</th><th>formula</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Pipeline}}</td><td class="num">{{printf "%.2f" .Measured}}</td><td class="num">{{printf "%.2f" .RecordsPerSecond}}</td><td class="num">{{printf "%.2f" .Ratio}}</td><td class="num">{{printf "%.2f" .Steady}}</td><td>{{.Formula}}</td></tr>
{{end}}</tbody>
</table></div>
</section>
{{end}}
{{with .Plan.Notes}}<section id="notes">
<h2>Notes</h2>
<ul>
{{range .}}<li>{{.}}</li>
{{end}}</ul>
</section>
{{end}}
<section id="sources">
<h2>Sources</h2>
<ol>
{{range .Sources}}<li value="{{.N}}">{{if .URL}}<a href="{{.URL}}">{{.URL}}</a> {{end}}{{.Text}}</li>
{{end}}</ol>
</section>
<footer>klt plan: AWS's published limits and prices put together; no cold starts, no downstream throttling, no free tier.</footer>
</main>
</body>
</html>
`))
