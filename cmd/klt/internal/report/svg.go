package report

import (
	"fmt"
	"html"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The charts are SVG written here, not by a library: a few lines and rectangles, each text
// escaped, so that report.html and report.svg need nothing from outside.

// palette is Tableau 10: distinct, readable on white, and kind to common colour blindness.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

const (
	fontStack = `system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', Helvetica, Arial, sans-serif`
	inkColor  = "#1f2937"
	mutedInk  = "#6b7280"
	gridColor = "#e5e7eb"
	goodColor = "#15803d"
	badColor  = "#b91c1c"
	// unobservedColor marks a count klt could not observe: neither good nor bad.
	unobservedColor = "#92400e"
)

// chart is an SVG drawing of size w x h; body is its content in those coordinates.
type chart struct {
	w, h float64
	body string
}

// element returns the chart as an <svg> element with the given extra attributes (already
// escaped), e.g. x and y when nested in another SVG, or class in a page.
func (c chart) element(attrs string) string {
	return fmt.Sprintf(`<svg %s width="%s" height="%s" viewBox="0 0 %s %s" font-family="%s" role="img">%s</svg>`,
		attrs, num(c.w), num(c.h), num(c.w), num(c.h), esc(fontStack), c.body)
}

func esc(s string) string { return html.EscapeString(s) }

// num formats an SVG coordinate.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// niceScale returns a tick step and an axis top for values in [0, max], aiming at about n
// ticks, with steps of 1, 2 or 5 times a power of ten.
func niceScale(max float64, n int) (step, top float64) {
	if !(max > 0) || math.IsInf(max, 0) {
		max = 1
	}
	raw := max / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch norm := raw / mag; {
	case norm <= 1:
		step = mag
	case norm <= 2:
		step = 2 * mag
	case norm <= 5:
		step = 5 * mag
	default:
		step = 10 * mag
	}
	top = math.Ceil(max/step-1e-9) * step
	if top == 0 {
		top = step
	}
	return step, top
}

// tickLabel formats a tick value with as many decimals as the step needs, and thousands as k.
func tickLabel(v, step float64) string {
	if step >= 1000 && math.Mod(v, 1000) == 0 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	}
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// lineChart draws one polyline per series over time, with axes, grid, labels and a legend on
// the right. Series are drawn in name order, each with the next palette colour. With logY the
// y axis is logarithmic, with a tick at each power of ten from 1 (values below 1 sit on the
// axis), so that series a hundred times apart are both readable.
//
// Phases are marked on the time axis, each by a dashed line where it starts, its name, and a
// light band across its span; the axis covers every phase, so a chart whose series ended
// before the last phase shows that they did.
func lineChart(title, xLabel, yLabel string, series map[string][]Point, phases []PhaseSpan, w, h float64, logY bool) chart {
	const left, top, right, bottom = 64.0, 44.0, 200.0, 50.0
	pw, ph := w-left-right, h-top-bottom
	var b strings.Builder
	fmt.Fprintf(&b, `<rect width="%s" height="%s" fill="#ffffff"/>`, num(w), num(h))
	fmt.Fprintf(&b, `<text x="%s" y="24" font-size="16" font-weight="600" fill="%s">%s</text>`, num(left), inkColor, esc(title))

	names := slices.Sorted(maps.Keys(series))
	maxT, maxV := 0.0, 0.0
	for _, n := range names {
		for _, p := range series[n] {
			maxT = math.Max(maxT, p[0])
			maxV = math.Max(maxV, p[1])
		}
	}
	for _, ph := range phases {
		maxT = math.Max(maxT, ph.End)
	}
	xStep, xTop := niceScale(maxT, 8)
	yStep, yTop := niceScale(maxV, 5)
	x := func(t float64) float64 { return left + t/xTop*pw }
	y := func(v float64) float64 { return top + ph - v/yTop*ph }
	yTicks := []float64{}
	for v := 0.0; v <= yTop+yStep/2; v += yStep {
		yTicks = append(yTicks, v)
	}
	if logY {
		yTop = math.Max(10, math.Pow(10, math.Ceil(math.Log10(math.Max(maxV, 1)))))
		y = func(v float64) float64 { return top + ph - math.Log10(math.Max(v, 1))/math.Log10(yTop)*ph }
		yTicks = yTicks[:0]
		for v := 1.0; v <= yTop*1.01; v *= 10 {
			yTicks = append(yTicks, v)
		}
	}

	// Grid and tick labels.
	for _, v := range yTicks {
		step := yStep
		if logY {
			step = v
		}
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(left), num(y(v)), num(left+pw), num(y(v)), gridColor)
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" fill="%s" text-anchor="end">%s</text>`, num(left-8), num(y(v)+4), mutedInk, tickLabel(v, step))
	}
	for t := 0.0; t <= xTop+xStep/2; t += xStep {
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(x(t)), num(top), num(x(t)), num(top+ph), gridColor)
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" fill="%s" text-anchor="middle">%s</text>`, num(x(t)), num(top+ph+16), mutedInk, tickLabel(t, xStep))
	}
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(left), num(top+ph), num(left+pw), num(top+ph), mutedInk)
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(left), num(top), num(left), num(top+ph), mutedInk)
	fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12" fill="%s" text-anchor="middle">%s</text>`, num(left+pw/2), num(h-12), inkColor, esc(xLabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %s) rotate(-90)" font-size="12" fill="%s" text-anchor="middle">%s</text>`, num(top+ph/2), inkColor, esc(yLabel))

	drawPhases(&b, phases, x, top, ph)
	if len(names) == 0 {
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="13" fill="%s" text-anchor="middle">no samples</text>`, num(left+pw/2), num(top+ph/2), mutedInk)
	}
	// Lines, then the legend.
	const legendRows = 16
	for i, n := range names {
		color := palette[i%len(palette)]
		var pts strings.Builder
		for j, p := range series[n] {
			if j > 0 {
				pts.WriteByte(' ')
			}
			pts.WriteString(num(x(p[0])) + "," + num(y(p[1])))
		}
		fmt.Fprintf(&b, `<polyline class="series" data-series="%s" points="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round" stroke-linecap="round"><title>%s</title></polyline>`,
			esc(n), pts.String(), color, esc(n))
		if i < legendRows {
			ly := top + 8 + float64(i)*20
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="14" height="4" rx="2" fill="%s"/>`, num(left+pw+20), num(ly-2), color)
			fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12" fill="%s">%s</text>`, num(left+pw+40), num(ly+4), inkColor, esc(ellipsis(n, 22)))
		}
	}
	if extra := len(names) - legendRows; extra > 0 {
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12" fill="%s">and %d more</text>`, num(left+pw+40), num(top+8+legendRows*20+4), mutedInk, extra)
	}
	return chart{w, h, b.String()}
}

// drawPhases marks each phase on a chart whose time axis is x, plotted from top over height
// ph: a band over its span (every other phase), a dashed line where it starts, its name.
func drawPhases(b *strings.Builder, phases []PhaseSpan, x func(float64) float64, top, ph float64) {
	for i, p := range phases {
		x0, x1 := x(p.Start), x(p.End)
		fmt.Fprintf(b, `<g class="phase" data-phase="%s" data-start="%s" data-end="%s">`, esc(p.Name), num(p.Start), num(p.End))
		if i%2 == 1 {
			fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="#f3f4f6" opacity="0.7"/>`, num(x0), num(top), num(math.Max(x1-x0, 0)), num(ph))
		}
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-dasharray="4 3"/>`, num(x0), num(top), num(x0), num(top+ph), mutedInk)
		fmt.Fprintf(b, `<text x="%s" y="%s" font-size="11" fill="%s">%s</text><title>phase %s: %s s to %s s</title></g>`,
			num(x0+4), num(top+12), mutedInk, esc(ellipsis(p.Name, phaseLabelChars(x1-x0))), esc(p.Name), fmtNum(p.Start), fmtNum(p.End))
	}
}

// phaseLabelChars is how many characters of a phase's name fit over its band of width w (11 px
// text, about 6.2 px a character), so that a short phase's long name ("direct,
// KeyConcurrency=100") does not run into the next phase's: at least 4, at most 28; the band's
// tooltip has the whole name.
func phaseLabelChars(w float64) int {
	return min(max(int((w-8)/6.2), 4), 28)
}

// barChart draws one horizontal bar per pipeline for its records per second, on a linear
// scale, with the speedup ratio beside them.
func barChart(ps []Pipeline, s *Speedup, w float64) chart {
	// left holds a pipeline's whole name ("direct, KeyConcurrency=100", a --variant's).
	const left, top, right, barH, gap, label = 190.0, 44.0, 200.0, 30.0, 14.0, 140.0
	// A pipeline with a prediction gets a second, thinner bar under its measured one: the
	// throughput klt plan predicts for the run.
	const predH = 14.0
	rowH := barH + gap
	predicted := func(p Pipeline) bool { return p.Predicted != nil && p.Predicted.Error == "" }
	for _, p := range ps {
		if predicted(p) {
			rowH = barH + 4 + predH + gap
		}
	}
	h := top + float64(len(ps))*rowH + 6
	pw := w - left - right - label // the longest bar leaves room for its value
	var b strings.Builder
	fmt.Fprintf(&b, `<rect width="%s" height="%s" fill="#ffffff"/>`, num(w), num(h))
	title := "Records per second"
	if rowH > barH+gap {
		title = "Records per second: measured, and predicted by klt plan (thin bar)"
	}
	fmt.Fprintf(&b, `<text x="24" y="24" font-size="16" font-weight="600" fill="%s">%s</text>`, inkColor, title)
	maxV := 0.0
	for _, p := range ps {
		maxV = math.Max(maxV, p.RecordsPerSecond)
		if predicted(p) {
			maxV = math.Max(maxV, p.Predicted.RecordsPerSecond)
		}
	}
	if !(maxV > 0) || math.IsInf(maxV, 0) {
		maxV = 1
	}
	width := func(v float64) float64 {
		if !(v > 0) {
			return 0
		}
		return math.Max(v/maxV*pw, 2)
	}
	for i, p := range ps {
		y := top + float64(i)*rowH
		bw := width(p.RecordsPerSecond)
		color := palette[i%len(palette)]
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="13" fill="%s" text-anchor="end">%s</text>`, num(left-10), num(y+barH/2+5), inkColor, esc(ellipsis(p.Name, 26)))
		fmt.Fprintf(&b, `<rect class="bar" data-pipeline="%s" x="%s" y="%s" width="%s" height="%s" rx="3" fill="%s"/>`,
			esc(p.Name), num(left), num(y), num(bw), num(barH), color)
		// Each pipeline's ratio to the one the speedup is over, so that a third pipeline (a
		// --variant's) reads against direct as the fan-out does.
		ratio := ""
		if over := findPipeline(ps, overOf(s)); over != nil && over.Name != p.Name && over.RecordsPerSecond > 0 {
			ratio = fmt.Sprintf(" (%s&#215; %s)", fmtRatio(p.RecordsPerSecond/over.RecordsPerSecond), esc(over.Name))
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="13" font-weight="600" fill="%s">%s records/s%s</text>`, num(left+bw+8), num(y+barH/2+5), inkColor, fmtNum(p.RecordsPerSecond), ratio)
		if predicted(p) {
			pr := p.Predicted
			py, pbw := y+barH+4, width(pr.RecordsPerSecond)
			fmt.Fprintf(&b, `<rect class="predicted" data-pipeline="%s" x="%s" y="%s" width="%s" height="%s" rx="2" fill="#ffffff" stroke="%s" stroke-width="1.5" stroke-dasharray="4 2"/>`,
				esc(p.Name), num(left), num(py), num(pbw), num(predH), color)
			fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" fill="%s">predicted %s records/s (measured/predicted %s)</text>`,
				num(left+pbw+8), num(py+predH-3), mutedInk, fmtNum(pr.RecordsPerSecond), fmtRatio(pr.Ratio))
		}
	}
	if s != nil {
		cy := top + float64(len(ps))*rowH/2
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="34" font-weight="700" fill="%s" text-anchor="middle">%s&#215;</text>`, num(w-right/2), num(cy+4), goodColor, fmtRatio(s.Ratio))
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12" fill="%s" text-anchor="middle">%s over %s</text>`, num(w-right/2), num(cy+24), mutedInk, esc(ellipsis(s.Of, 12)), esc(ellipsis(s.Over, 12)))
	}
	return chart{w, h, b.String()}
}

// overOf is the name of the pipeline s compares with, "" without s.
func overOf(s *Speedup) string {
	if s == nil {
		return ""
	}
	return s.Over
}

func ellipsis(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// figures draws the key figures of each pipeline as a row of cards: records per second,
// latency, and the three correctness counts coloured green when 0 and red otherwise.
func figures(ps []Pipeline, w float64) chart {
	const cardH, pad = 112.0, 16.0
	n := max(len(ps), 1)
	cw := (w - pad*float64(n+1)) / float64(n)
	var b strings.Builder
	h := cardH + 2*pad
	fmt.Fprintf(&b, `<rect width="%s" height="%s" fill="#ffffff"/>`, num(w), num(h))
	for i, p := range ps {
		x := pad + float64(i)*(cw+pad)
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" rx="8" fill="#f9fafb" stroke="%s"/>`, num(x), num(pad), num(cw), num(cardH), gridColor)
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="5" height="%s" rx="2" fill="%s"/>`, num(x), num(pad), num(cardH), palette[i%len(palette)])
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="13" font-weight="600" fill="%s">%s</text>`, num(x+18), num(pad+22), mutedInk, esc(p.Name+": "+strings.Join(p.Functions, " → ")))
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="30" font-weight="700" fill="%s">%s <tspan font-size="14" font-weight="400" fill="%s">records/s</tspan></text>`,
			num(x+18), num(pad+58), inkColor, fmtNum(p.RecordsPerSecond), mutedInk)
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12" fill="%s">%d records in %s s · latency p50 %s ms, p99 %s ms</text>`,
			num(x+18), num(pad+78), mutedInk, p.Records, fmtNum(p.Seconds), fmtNum(p.LatencyMsP50), fmtNum(p.LatencyMsP99))
		cx := x + 18
		for _, c := range []struct {
			label string
			v     Count
		}{{"lost", p.Lost}, {"applied twice", p.AppliedTwice}, {"order violations", p.OrderViolations}} {
			color := goodColor
			switch {
			case !c.v.IsObserved():
				color = unobservedColor
			case !c.v.Is(0):
				color = badColor
			}
			label := fmt.Sprintf("%s %s", c.label, c.v)
			fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12" font-weight="600" fill="%s">● %s</text>`, num(cx), num(pad+100), color, esc(label))
			cx += float64(len(label))*7 + 26
		}
	}
	return chart{w, h, b.String()}
}

// faultsChart lists the injected faults and where each went, for report.svg (report.html has
// them as a table).
func faultsChart(fs []Fault, w float64) chart {
	const top, row = 44.0, 22.0
	h := top + float64(len(fs))*row + 12
	var b strings.Builder
	fmt.Fprintf(&b, `<rect width="%s" height="%s" fill="#ffffff"/>`, num(w), num(h))
	fmt.Fprintf(&b, `<text x="24" y="24" font-size="16" font-weight="600" fill="%s">Injected faults</text>`, inkColor)
	cols := []float64{24, 150, 240, 360, 470, 540}
	for i, hd := range []string{"pipeline", "fault", "record", "fate", "attempts", "outcome"} {
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" font-weight="600" fill="%s">%s</text>`, num(cols[i]), num(top), mutedInk, hd)
	}
	for i, f := range fs {
		y := top + float64(i+1)*row
		for j, v := range []string{ellipsis(f.Pipeline, 18), ellipsis(f.Fault, 12), ellipsis(f.Record, 18), ellipsis(f.Fate, 14), strconv.Itoa(f.Attempts), ellipsis(f.Outcome, 64)} {
			fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="13" fill="%s">%s</text>`, num(cols[j]), num(y), inkColor, esc(v))
		}
	}
	return chart{w, h, b.String()}
}

// failedMessagesChart lists the messages read on failure queues, on-failure destinations and
// dead-letter queues, for report.svg (the first 12; report.html has them all).
func failedMessagesChart(ms []FailedMessage, w float64) chart {
	const top, row, most = 44.0, 22.0, 12
	n := min(len(ms), most)
	h := top + float64(n)*row + 12
	if len(ms) > most {
		h += row
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<rect width="%s" height="%s" fill="#ffffff"/>`, num(w), num(h))
	fmt.Fprintf(&b, `<text x="24" y="24" font-size="16" font-weight="600" fill="%s">Failure queues and dead-letter queues: %d messages</text>`, inkColor, len(ms))
	cols := []float64{24, 230, 390, 500}
	for i, hd := range []string{"queue", "kind", "record", "why"} {
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" font-weight="600" fill="%s">%s</text>`, num(cols[i]), num(top), mutedInk, hd)
	}
	for i, m := range ms[:n] {
		y := top + float64(i+1)*row
		for j, v := range []string{ellipsis(m.Queue, 28), ellipsis(m.Kind, 22), ellipsis(m.Record, 16), ellipsis(m.Why, 70)} {
			fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="13" fill="%s">%s</text>`, num(cols[j]), num(y), inkColor, esc(v))
		}
	}
	if len(ms) > most {
		fmt.Fprintf(&b, `<text x="24" y="%s" font-size="12" fill="%s">and %d more in report.html</text>`, num(top+float64(n+1)*row), mutedInk, len(ms)-most)
	}
	return chart{w, h, b.String()}
}
