package plancmd

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/capacity"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/clitext"
)

// The text of a plan, for people: the inputs, each design's figures with their formula and a
// numbered source, the cheaper design, the notes, and the sources the numbers point to.

// sources numbers the sources of a text, each once, in the order they are first cited.
type sources struct {
	list  []string
	index map[string]int
}

// ref returns "[n]" for source, numbering it on first use; "" for no source.
func (s *sources) ref(source string) string {
	if source == "" {
		return ""
	}
	if s.index == nil {
		s.index = map[string]int{}
	}
	n, ok := s.index[source]
	if !ok {
		s.list = append(s.list, source)
		n = len(s.list)
		s.index[source] = n
	}
	return "[" + strconv.Itoa(n) + "]"
}

// cite returns " (formula; [n])", or as much of it as there is.
func (s *sources) cite(formula, source string) string {
	parts := []string{}
	if formula != "" {
		parts = append(parts, formula)
	}
	if r := s.ref(source); r != "" {
		parts = append(parts, r)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// writeText writes the plan p for people; given is the input as given, to mark the figures
// the model filled in.
func writeText(w io.Writer, given capacity.Input, p *capacity.Plan) error {
	var b strings.Builder
	src := &sources{}
	fmt.Fprintf(&b, "klt plan: %s records/s", fmtNum(p.Input.Rate))
	if p.Input.Burst > 0 {
		fmt.Fprintf(&b, ", bursts of %s records/s for %s", fmtNum(p.Input.Burst), time.Duration(p.Input.BurstFor))
	}
	b.WriteString("\n\nInputs (* the model's default):\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, row := range inputRows(given, p.Input) {
		fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
	}
	tw.Flush()
	for _, d := range p.Designs() {
		b.WriteString("\n")
		writeDesign(&b, p.Input, d, src)
	}
	b.WriteString("\n")
	writeLMI(&b, p, src)
	if len(p.Runs) > 0 {
		b.WriteString("\nThe run the plan was made from, measured beside predicted:\n")
		for _, r := range p.Runs {
			fmt.Fprintf(&b, "  %s: measured %s records/s, predicted %s for the run (measured/predicted %.2f); steady %s records/s\n",
				r.Pipeline, fmtNum(r.Measured), fmtNum(r.RecordsPerSecond), r.Ratio, fmtNum(r.Steady))
			fmt.Fprintf(&b, "    formula: %s\n", clitext.OneLine(r.Formula))
		}
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "cheaper: %s\n", cheaperText(p))
	if len(p.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range p.Notes {
			fmt.Fprintf(&b, "  - %s\n", clitext.OneLine(n))
		}
	}
	if len(src.list) > 0 {
		b.WriteString("\nSources:\n")
		for i, s := range src.list {
			fmt.Fprintf(&b, "  [%d] %s\n", i+1, clitext.OneLine(s))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// designTitles say what each design is.
var designTitles = map[string]string{
	"direct":         "Kafka -> event source mapping -> the function",
	"fanout":         "Kafka -> event source mapping -> dispatcher -> SQS queue -> event source mapping -> workers",
	"key_concurrent": "Kafka -> event source mapping -> the function with batch.WithKeyConcurrency (records of different keys at once, each key in order; no queue)",
}

// writeDesign writes one design's figures.
func writeDesign(b *strings.Builder, in capacity.Input, d *capacity.Design, src *sources) {
	fmt.Fprintf(b, "%s: %s\n", d.Name, designTitles[d.Name])
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	row := func(name, value string) { fmt.Fprintf(tw, "  %s\t%s\n", name, clitext.OneLine(value)) }
	bound := boundingStage(d)
	row("max records/s", fmtNum(d.MaxRecordsPerSecond)+src.cite(bound.Formula, bound.Source))
	row("bound", d.Bound)
	row("reaches "+fmtNum(in.Rate)+"/s", reachesText(d))
	for i, l := range d.Lifts {
		name := ""
		if i == 0 {
			name = "lifted by"
		}
		row(name, liftText(l)+src.cite("", l.Source))
	}
	row("pollers needed", neededText(d.PollersNeeded, d))
	row("concurrency needed", neededText(d.ConcurrencyNeeded, d))
	row("partitions needed", neededText(d.PartitionsNeeded, d))
	row("event poller units", neededText(d.EventPollerUnits, d))
	row("recommended", recommendedText(d))
	if d.Burst != nil {
		row("burst", burstText(d.Burst))
	}
	tw.Flush()
	if len(d.Stages) > 0 {
		b.WriteString("  stages:\n")
		tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for _, s := range d.Stages {
			fmt.Fprintf(tw, "    %s\t%s records/s\t%s\n", s.Name, fmtNum(s.MaxRecordsPerSecond), clitext.OneLine(s.Bound+src.cite(s.Formula, s.Source)))
		}
		tw.Flush()
	}
	if len(d.Figures) > 0 {
		b.WriteString("  figures:\n")
		tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for _, f := range d.Figures {
			fmt.Fprintf(tw, "    %s\t%s\n", f.Name, clitext.OneLine(strings.TrimSpace(fmtNum(f.Value)+" "+f.Unit)+src.cite(f.Formula, f.Source)))
		}
		tw.Flush()
	}
	if d.MonthlyCostUSD == nil {
		fmt.Fprintf(b, "  monthly cost: none: %s does not reach the target\n", d.Name)
		return
	}
	fmt.Fprintf(b, "  monthly cost: $%s\n", fmtUSD(*d.MonthlyCostUSD))
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, c := range d.CostLines {
		fmt.Fprintf(tw, "    $%s\t  %s\n", fmtUSD(c.MonthlyUSD), clitext.OneLine(fmt.Sprintf("%s: %s %s x $%s%s",
			c.Item, fmtNum(c.Quantity), c.Unit, fmtPrice(c.UnitPrice), src.cite(c.Formula, c.Source))))
	}
	tw.Flush()
}

// writeLMI writes the direct design's function on Lambda Managed Instances beside it on
// demand: what it takes, what it costs, where the two break even, and what is unconfirmed.
func writeLMI(b *strings.Builder, p *capacity.Plan, src *sources) {
	l, in := &p.LMI, p.Input
	fmt.Fprintf(b, "lmi: the direct design's function on Lambda Managed Instances (%s instances Lambda manages)\n", l.InstanceType)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	row := func(name, value string) { fmt.Fprintf(tw, "  %s\t%s\n", name, clitext.OneLine(value)) }
	fig := func(name string) capacity.Figure {
		for _, f := range l.Figures {
			if f.Name == name {
				return f
			}
		}
		return capacity.Figure{}
	}
	reach := "yes"
	if l.ReachesTarget && l.MappingsNeeded > 1 {
		reach = fmt.Sprintf("not on one standard Kafka mapping (1 MB/s each on LMI): only with %d, the records split over %d topics", l.MappingsNeeded, l.MappingsNeeded)
	}
	if !l.ReachesTarget {
		reach = "no: " + l.Bound
	}
	row("lmi reaches "+fmtNum(in.Rate)+"/s", reach)
	f := fig("lmi.mappings_needed")
	row("lmi kafka mappings", fmt.Sprintf("%s: %s MB/s, at most 1 MB/s each on LMI", fmtInt(l.MappingsNeeded), fmtNum(l.MappingBytesPerSecond/1e6))+src.cite(f.Formula, f.Source))
	if l.ReachesTarget && l.MappingsNeeded > 1 {
		row("", l.Bound)
	}
	f = fig("lmi.max_records_per_second")
	row("lmi max records/s", fmtNum(l.MaxRecordsPerSecond)+src.cite(f.Formula, f.Source))
	f = fig("lmi.environments")
	row("lmi environments", fmtInt(l.Environments)+src.cite(f.Formula, f.Source))
	f = fig("lmi.instances")
	row("lmi instances", fmt.Sprintf("%s × %s (%d vCPU, %s GiB)", fmtInt(l.Instances), l.InstanceType, l.InstanceVCPUs, fmtNum(l.InstanceMemoryGiB))+src.cite(f.Formula, f.Source))
	tw.Flush()
	if l.MonthlyCostUSD == nil {
		b.WriteString("  lmi monthly cost: none: LMI does not reach the target\n")
	} else {
		fmt.Fprintf(b, "  lmi monthly cost: $%s\n", fmtUSD(*l.MonthlyCostUSD))
		tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		for _, c := range l.CostLines {
			fmt.Fprintf(tw, "    $%s\t  %s\n", fmtUSD(c.MonthlyUSD), clitext.OneLine(fmt.Sprintf("%s: %s %s x $%s%s",
				c.Item, fmtNum(c.Quantity), c.Unit, fmtPrice(c.UnitPrice), src.cite(c.Formula, c.Source))))
		}
		tw.Flush()
	}
	od := "none: the direct design does not reach the target"
	if l.OnDemandMonthlyUSD != nil {
		od = "$" + fmtUSD(*l.OnDemandMonthlyUSD) + " (the direct design above)"
	}
	fmt.Fprintf(b, "  lmi beside on demand: %s\n", od)
	switch {
	case l.Cheaper == "lmi":
		fmt.Fprintf(b, "  lmi cheaper for %s records/s: LMI, by $%s a month\n", fmtNum(in.Rate), fmtUSD(*l.OnDemandMonthlyUSD-*l.MonthlyCostUSD))
	case l.Cheaper == "on-demand":
		fmt.Fprintf(b, "  lmi cheaper for %s records/s: on demand, by $%s a month\n", fmtNum(in.Rate), fmtUSD(*l.MonthlyCostUSD-*l.OnDemandMonthlyUSD))
	}
	be := "none"
	if l.BreakEvenRecordsPerSecond != nil {
		be = fmtNum(*l.BreakEvenRecordsPerSecond) + " records/s"
	}
	fmt.Fprintf(b, "  lmi break-even: %s: %s\n", be, clitext.OneLine(l.BreakEven))
	b.WriteString("  lmi unconfirmed:\n")
	for _, u := range l.Unconfirmed {
		fmt.Fprintf(b, "    - %s\n", clitext.OneLine(u))
	}
}

// cheaperText says which design to build: of those that reach the target, the cheapest; a
// design that does not reach it is never compared, having no cost.
func cheaperText(p *capacity.Plan) string {
	rate := fmtNum(p.Input.Rate)
	if p.Cheaper == "" {
		return "no design reaches " + rate + " records/s"
	}
	d := p.Design(p.Cheaper)
	s := fmt.Sprintf("%s, $%s a month for %s records/s", d.Name, fmtUSD(*d.MonthlyCostUSD), rate)
	var others []string
	for _, o := range p.Designs() {
		if o != d && o.ReachesTarget {
			others = append(others, fmt.Sprintf("%s: $%s", o.Name, fmtUSD(*o.MonthlyCostUSD)))
		}
	}
	if len(others) == 0 {
		return s + ", the only design that reaches it"
	}
	return s + " (" + strings.Join(others, "; ") + ")"
}

// reachesText is "yes", or "no" and why.
func reachesText(d *capacity.Design) string {
	if d.ReachesTarget {
		return "yes"
	}
	return "no: does not reach the target: " + d.Bound
}

// liftText is a lift as the flag that makes it: "--queue standard: a standard queue ...".
func liftText(l capacity.Lift) string {
	flagText := l.Field
	if o := optionByKey(l.Field); o != nil {
		flagText = "--" + o.flagName()
		if _, isBool := o.value(new(capacity.Input)).(*boolValue); !isBool || l.Value != "true" {
			flagText += " " + l.Value
		}
	}
	return flagText + ": " + l.Why
}

// recommendedText is the recommended configuration, or why there is none.
func recommendedText(d *capacity.Design) string {
	r := d.Recommended
	if r == nil {
		return "none: " + d.Name + " does not reach the target"
	}
	return fmt.Sprintf("pollers %s to %s, partitions %s, concurrency %s",
		fmtInt(r.MinimumPollers), fmtInt(r.MaximumPollers), fmtInt(r.Partitions), fmtInt(r.Concurrency))
}

// boundingStage returns the stage with the smallest maximum, the one that bounds the design;
// a zero Stage when there is none.
func boundingStage(d *capacity.Design) capacity.Stage {
	var best capacity.Stage
	for i, s := range d.Stages {
		if i == 0 || s.MaxRecordsPerSecond < best.MaxRecordsPerSecond {
			best = s
		}
	}
	return best
}

// neededText is a count needed, or "none reaches the target" for 0 when the design does not.
func neededText(n int, d *capacity.Design) string {
	if n == 0 && !d.ReachesTarget {
		return "none reaches the target"
	}
	return fmtInt(n)
}

// burstText says the lag a burst leaves and how long it takes to drain.
func burstText(b *capacity.Burst) string {
	if b.LagRecords == 0 {
		return "no lag: the design keeps up with the burst"
	}
	s := fmt.Sprintf("lag of %s records at the burst's end", fmtNum(b.LagRecords))
	if b.DrainSeconds == nil {
		return s + "; it never drains: the design does not reach the steady rate"
	}
	return s + ", drained " + fmtSeconds(*b.DrainSeconds) + " later"
}

// inputRows are the rows of the inputs: flag and value, the value marked with * when the
// model filled it in. Inputs not given and not filled (0) are left out.
func inputRows(given, filled capacity.Input) [][2]string {
	var rows [][2]string
	for i := range options {
		o := &options[i]
		v := o.value(&filled).String()
		if v == "" {
			continue
		}
		v = inputText(o, &filled)
		if o.value(&given).String() == "" {
			v += " *"
		}
		rows = append(rows, [2]string{"--" + o.flagName(), v})
	}
	for _, f := range priceFields {
		if v := priceOf(filled.Prices, f); v != 0 {
			text := "$" + fmtPrice(v)
			if f.name == "lmi_management_fee" {
				text = fmtNum(v*100) + "% of the instance price" // a share, not dollars
			}
			if priceOf(given.Prices, f) == 0 {
				text += " *"
			}
			rows = append(rows, [2]string{"--price " + f.name, text})
		}
	}
	return rows
}

// inputText is the value of option o in in, for people: 1,024 bytes, 100 records/s.
func inputText(o *option, in *capacity.Input) string {
	switch v := o.value(in).(type) {
	case *sizeValue:
		return fmtInt(*v.p) + " bytes"
	case *intValue:
		return fmtInt(*v.p)
	case *durationValue:
		// A measured time (--from-report) has nanoseconds no one reads: four digits do.
		d := time.Duration(*v.p)
		for unit := time.Duration(1e17); unit >= 1; unit /= 10 {
			if d >= unit {
				return d.Round(max(unit/1000, 1)).String()
			}
		}
		return d.String()
	case *floatValue:
		if o.key == "rate" || o.key == "burst" {
			return fmtNum(*v.p) + " records/s"
		}
		return fmtNum(*v.p)
	}
	return o.value(in).String()
}

// fmtNum writes a figure for people: 16.7, 2,000, 0.185: a tenth for figures of 1 or more
// (thousands separated), three significant digits below 1; a figure below 0.0001 or from
// 1e15 in scientific notation (1.5e-07, 2e+20), never with dozens of digits.
func fmtNum(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "unlimited" // a stage with no documented limit (a standard queue's API calls)
	case !finite(v):
		return strconv.FormatFloat(v, 'f', -1, 64)
	case v == 0:
		return "0"
	case math.Abs(v) < 1e-4 || math.Abs(v) >= 1e15:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case math.Abs(v) < 1:
		dec := int(-math.Floor(math.Log10(math.Abs(v)))) + 2
		s := strconv.FormatFloat(v, 'f', dec, 64)
		return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	s := strconv.FormatFloat(math.Round(v*10)/10, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	whole, frac, _ := strings.Cut(s, ".")
	if frac != "" {
		frac = "." + frac
	}
	return thousands(whole) + frac
}

// fmtInt writes a count with thousands separated.
func fmtInt(n int) string { return thousands(strconv.Itoa(n)) }

// fmtUSD writes dollars and cents: 1,332.00 (past 1e15 dollars, in scientific notation).
func fmtUSD(v float64) string {
	if math.Abs(v) >= 1e15 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	whole, cents, _ := strings.Cut(s, ".")
	return thousands(whole) + "." + cents
}

// fmtPrice writes a unit price as it is published: 0.0000133334, 0.185, 0.40.
func fmtPrice(v float64) string {
	if v >= 0.01 && v == math.Round(v*100)/100 {
		return fmtUSD(v)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// fmtSeconds writes a time in seconds for people: 12.3 s, 4 min 10 s, 2 h 5 min.
func fmtSeconds(s float64) string {
	switch {
	case s < 60:
		return fmtNum(s) + " s"
	case s < 3600:
		return fmt.Sprintf("%d min %d s", int(s)/60, int(s)%60)
	}
	return fmt.Sprintf("%s h %d min", fmtInt(int(s)/3600), int(s)%3600/60)
}

// thousands separates the thousands of the digits s (with an optional sign) by commas.
func thousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return sign + b.String()
}
