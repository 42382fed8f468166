package plancmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/capacity"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsondup"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
)

// config is klt plan's command line.
type config struct {
	flags capacity.Input // the options given as flags (the others zero)
	given []givenFlag    // those options, in the order given, with their text
	// prices are the --price flags given, by name, with their text.
	prices map[string]string
	// The flags that are not inputs of the model.
	config, fromReport, stat, format, reportDir string
	// report is the --from-report run, read by input: the plan predicts each of its load
	// pipelines beside what it measured (Plan.Runs).
	report *report.Report
	// flagErr is the first flag whose value was refused, in klt's words ("--rate abc: not a
	// number"): the usage error says it instead of the flag package's message, which repeats the
	// value.
	flagErr error
	// configPos are the positions of the --config file's keys; fromReportKeys the inputs the
	// report set: where a figure the model refuses came from.
	configPos      map[string]string
	fromReportKeys map[string]bool
}

// givenFlag is an option given on the command line and the text it was given.
type givenFlag struct {
	opt  *option
	text string
}

// checked is the flag.Value of every flag of klt plan: it records the first refusal in
// config.flagErr, naming the flag and the text once.
type checked struct {
	flag.Value
	name string
	c    *config
}

func (v *checked) Set(s string) error {
	err := v.Value.Set(s)
	if err != nil && v.c.flagErr == nil {
		v.c.flagErr = fmt.Errorf("--%s %s: %w", v.name, s, err)
	}
	return err
}

// String is the value's; "" for the zero checked the flag package makes to find a default.
func (v *checked) String() string {
	if v == nil || v.Value == nil {
		return ""
	}
	return v.Value.String()
}

// IsBoolFlag lets --poller-group stand alone, as the option's own Value does.
func (v *checked) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// recorder is the flag.Value of an option on the command line: it reads the option into
// config.flags and remembers the text, which is applied again, last, over --config and
// --from-report.
type recorder struct {
	flag.Value
	opt *option
	c   *config
}

func (r *recorder) Set(s string) error {
	if err := r.Value.Set(s); err != nil {
		return err
	}
	r.c.given = append(r.c.given, givenFlag{r.opt, s})
	return nil
}

func (r *recorder) String() string {
	if r == nil || r.Value == nil {
		return ""
	}
	return r.Value.String()
}

// IsBoolFlag lets --poller-group stand alone, as the option's own Value does.
func (r *recorder) IsBoolFlag() bool {
	b, ok := r.Value.(interface{ IsBoolFlag() bool })
	if r.Value == nil {
		return false
	}
	return ok && b.IsBoolFlag()
}

// pricesGiven is --price NAME=USD, recording the text of each name given.
type pricesGiven struct {
	priceValue
	c *config
}

func (v *pricesGiven) Set(s string) error {
	if err := v.priceValue.Set(s); err != nil {
		return err
	}
	name, usd, _ := strings.Cut(s, "=")
	if v.c.prices == nil {
		v.c.prices = map[string]string{}
	}
	v.c.prices[strings.TrimSpace(name)] = strings.TrimSpace(usd)
	return nil
}

func newPlanFlags(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	v := func(value flag.Value, name, usage string) { fs.Var(&checked{value, name, c}, name, usage) }
	for i := range options {
		o := &options[i]
		v(&recorder{o.value(&c.flags), o, c}, o.flagName(), o.usage)
	}
	v(&pricesGiven{priceValue{&c.flags.Prices}, c}, "price", "a unit price in US dollars, `NAME=USD` (repeatable), instead of us-east-1's: NAME is one of\n"+
		wrap(priceNames(), 90))
	fs.StringVar(&c.config, "config", "", "read the inputs from `FILE`, YAML or JSON, keyed by the JSON names of the plan's \"input\"\n(rate, duration, fanout: {queue: ...}, prices: {...}); flags given win")
	fs.StringVar(&c.fromReport, "from-report", "", "plan from the klt local report `FILE` (report.json): its partitions, batch sizes, measured\ndurations, partitions per invocation, concurrency and records per second; --config and\nflags win; the plan then sets each pipeline of the run beside what it predicts for it")
	c.stat = "mean"
	v(&enumValue{&c.stat, []string{"mean", "p50", "p99"}}, "from-report-stat", "the `STAT` of the report's durations the plan takes: mean (a throughput is a mean, so the\nmean time predicts it), p50 or p99 (a pessimistic plan)")
	c.format = "text"
	v(&enumValue{&c.format, []string{"text", "json"}}, "format", "print the plan as `FORMAT`: text or json")
	fs.StringVar(&c.reportDir, "report", "", "also write plan.html (charts, tables) and plan.json to `DIR`")
	return fs
}

// Cmd is the command "klt plan".
var Cmd = base.WithFlags(&base.Command{
	UsageLine: "klt plan [flags]",
	Short:     "size and price a Kafka -> Lambda stack, direct and fanned out, before building it",
	Long:      usagePlan,
	Examples:  usagePlanExamples,
}, newPlanFlags, run)

// FlagError returns the first flag value refused, in klt's words (see base.FlagErrorer).
func (c *config) FlagError() error { return c.flagErr }

// run runs "klt plan".
func run(_ context.Context, c *config, _ *flag.FlagSet, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		return base.UsageError(stderr, "plan", fmt.Errorf("unexpected argument %q", args[0]))
	}
	if c.stat != "mean" && c.fromReport == "" {
		return base.UsageError(stderr, "plan", errors.New("--from-report-stat goes with --from-report FILE"))
	}
	in, notes, err := c.input()
	if err != nil {
		base.Errorf(stderr, "plan: %v", err)
		return base.ExitFail
	}
	if err := c.check(in); err != nil {
		return base.UsageError(stderr, "plan", err)
	}
	p, err := capacity.Make(in)
	if errors.Is(err, capacity.ErrInput) {
		where, fromFile := c.origin(err)
		if fromFile {
			base.Errorf(stderr, "plan: %v", where)
			return base.ExitFail
		}
		return base.UsageError(stderr, "plan", where)
	}
	if err != nil {
		base.Errorf(stderr, "plan: %v", err)
		return base.ExitFail
	}
	p.Notes = append(notes, p.Notes...)
	if c.report != nil {
		// The run's prediction is the point of --from-report: one that cannot be made (flags
		// that leave the run's design unreachable) is said in the notes, never left out.
		runs, err := capacity.PredictRuns(p, c.report, c.stat)
		if err != nil {
			p.Notes = append(p.Notes, fmt.Sprintf("no prediction of the run of %s: %v", c.fromReport, err))
		}
		p.Runs = runs
	}
	if err := write(stdout, c, in, p); err != nil {
		base.Errorf(stderr, "plan: %v", err)
		return base.ExitFail
	}
	if p.Cheaper == "" {
		var each []string
		for _, d := range p.Designs() {
			each = append(each, fmt.Sprintf("%s reaches %s (%s)", d.Name, fmtNum(d.MaxRecordsPerSecond), d.Bound))
		}
		base.Errorf(stderr, "plan: no design reaches %s records/s: %s", fmtNum(p.Input.Rate), strings.Join(each, ", "))
		return base.ExitFail
	}
	return base.ExitOK
}

// origin says the model's refusal of an input in the words of where the figure came from:
// the flag given ("--batch-size 20000: want 1 to 10000"), else the --config file's place and
// key ("--config plan.yaml:3:13: batch_size: 20000: want ..."), else the report; fromFile is
// true for a file's figure (exit 1), false for the command line's (exit 2). A figure none of
// them gave is the model's default, named by its flag.
func (c *config) origin(err error) (where error, fromFile bool) {
	var fe *capacity.FieldError
	if !errors.As(err, &fe) {
		return err, false
	}
	key := fe.Field
	if name, ok := strings.CutPrefix(key, "prices."); ok {
		if text, ok := c.prices[name]; ok {
			return fmt.Errorf("--price %s=%s: %s", name, text, fe.Want), false
		}
	} else if o := optionByKey(key); o != nil {
		for i := len(c.given) - 1; i >= 0; i-- {
			if c.given[i].opt == o {
				return fmt.Errorf("--%s %s: %s", o.flagName(), c.given[i].text, fe.Want), false
			}
		}
	}
	if pos, ok := c.configPos[key]; ok {
		return fmt.Errorf("--config %s: %s: %s: %s", pos, key, fe.Value, fe.Want), true
	}
	if c.fromReportKeys[key] {
		return fmt.Errorf("--from-report %s: the plan's %s, read from the report: %s: %s", c.fromReport, key, fe.Value, fe.Want), true
	}
	if o := optionByKey(key); o != nil {
		return fmt.Errorf("--%s %s (not given: the model's default): %s", o.flagName(), fe.Value, fe.Want), false
	}
	return fmt.Errorf("%s %s: %s", key, fe.Value, fe.Want), false
}

// write prints the plan in c.format, and the page and plan.json with --report.
func write(stdout io.Writer, c *config, given capacity.Input, p *capacity.Plan) error {
	js, err := planJSON(p)
	if err != nil {
		return err
	}
	if c.format == "json" {
		if _, err := stdout.Write(js); err != nil {
			return err
		}
	} else if err := writeText(stdout, given, p); err != nil {
		return err
	}
	if c.reportDir == "" {
		return nil
	}
	page, err := planPage(given, p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.reportDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.reportDir, "plan.json"), js, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.reportDir, "plan.html"), page, 0o644)
}

// planJSON is the plan as --format json prints it: capacity.Plan, indented. A figure that is
// not a number (NaN, an infinity) is an error of the model, never printed as null or 0.
func planJSON(p *capacity.Plan) ([]byte, error) {
	js, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("the plan as JSON: %w", err)
	}
	return append(js, '\n'), nil
}

// input makes the model's input: the --from-report figures, then --config's over them, then
// the flags given over both. The notes say what was read from the report.
func (c *config) input() (capacity.Input, []string, error) {
	var in capacity.Input
	var notes []string
	if c.fromReport != "" {
		data, err := readCapped(c.fromReport, reportLimit, "a klt local report")
		if err != nil {
			return in, nil, err
		}
		if err := jsondup.CheckDuplicateMembers(c.fromReport, data); err != nil {
			return in, nil, err
		}
		var r report.Report
		if err := json.Unmarshal(data, &r); err != nil {
			return in, nil, fmt.Errorf("%s: not a klt local report.json: %w", c.fromReport, err)
		}
		if in, notes, err = capacity.FromReport(&r, c.stat); err != nil {
			return in, nil, reportError(c.fromReport, err)
		}
		c.report = &r
		for i, n := range notes {
			notes[i] = "from " + c.fromReport + ": " + n
		}
		c.fromReportKeys = map[string]bool{}
		for i := range options {
			if options[i].value(&in).String() != "" {
				c.fromReportKeys[options[i].key] = true
			}
		}
	}
	if c.config != "" {
		data, err := readCapped(c.config, configLimit, "a plan's --config file")
		if err != nil {
			return in, nil, err
		}
		c.configPos = map[string]string{}
		if err := readConfig(c.config, data, &in, c.configPos); err != nil {
			return in, nil, fmt.Errorf("--config %w", err)
		}
	}
	for _, g := range c.given {
		if err := g.opt.value(&in).Set(g.text); err != nil {
			return in, nil, fmt.Errorf("--%s %s: %w", g.opt.flagName(), g.text, err) // read once already: cannot fail
		}
		// A flag given wins over its alternative read from the report or the file.
		if alt := alternative(g.opt.key); alt != "" && !c.isGiven(alt) {
			if err := optionByKey(alt).value(&in).Set("0s"); err != nil {
				return in, nil, err
			}
		}
	}
	mergePrices(&in.Prices, c.flags.Prices)
	return in, notes, nil
}

// reportError says FromReport's refusal of the report file: a figure out of its range by
// its JSON path and value ("--from-report report.json: mappings[0].config.batch_size: -100:
// want a BatchSize from 1 to 10000"), anything else as it is, after the file.
func reportError(file string, err error) error {
	var fe *capacity.FieldError
	if errors.As(err, &fe) {
		return fmt.Errorf("--from-report %s: %s: %s: %s", file, fe.Field, fe.Value, fe.Want)
	}
	return fmt.Errorf("--from-report %s: %s", file, strings.TrimPrefix(err.Error(), capacity.ErrInput.Error()+": "))
}

// alternatives are the pairs of options of which a plan takes one: a time per record or per
// batch.
var alternatives = [][2]string{
	{"duration", "batch_duration"},
	{"fanout.dispatch_duration", "fanout.dispatch_batch_duration"},
	{"fanout.worker_duration", "fanout.worker_batch_duration"},
}

// alternative returns the key of key's alternative, or "".
func alternative(key string) string {
	for _, a := range alternatives {
		switch key {
		case a[0]:
			return a[1]
		case a[1]:
			return a[0]
		}
	}
	return ""
}

// isGiven reports whether the option key was given as a flag.
func (c *config) isGiven(key string) bool {
	for _, g := range c.given {
		if g.opt.key == key {
			return true
		}
	}
	return false
}

// mergePrices sets in each price given (not zero) in flags.
func mergePrices(in *capacity.Prices, flags capacity.Prices) {
	for _, f := range priceFields {
		if v := priceOf(flags, f); v != 0 {
			setPriceField(in, f, v)
		}
	}
}

// check refuses a plan the model cannot make, in the words of the flags: no target, no time,
// or both times of an alternative.
func (c *config) check(in capacity.Input) error {
	if in.Rate == 0 {
		return errors.New("--rate R is required: the target records per second (or --from-report FILE, the rate it measured)")
	}
	if in.Duration == 0 && in.BatchDuration == 0 {
		return errors.New("--duration D (one record's handler time) or --batch-duration D (one invocation's) is required")
	}
	for _, a := range alternatives {
		x, y := optionByKey(a[0]), optionByKey(a[1])
		if x.value(&in).String() != "" && y.value(&in).String() != "" {
			return fmt.Errorf("--%s and --%s: give one of them (%s and %s in --config)", x.flagName(), y.flagName(), x.key, y.key)
		}
	}
	if in.Burst != 0 && (in.BurstFor == 0 || in.Burst < in.Rate) {
		return fmt.Errorf("--burst %s: give --burst-for D too, and a burst of at least --rate %s", fmtNum(in.Burst), fmtNum(in.Rate))
	}
	if in.Burst == 0 && in.BurstFor != 0 {
		return errors.New("--burst-for goes with --burst R")
	}
	return nil
}

// wrap joins words with ", ", in lines of at most width bytes.
func wrap(words []string, width int) string {
	var b strings.Builder
	line := 0
	for i, w := range words {
		if i > 0 {
			b.WriteString(",")
			line++
			if line+1+len(w) > width {
				b.WriteString("\n")
				line = 0
			} else {
				b.WriteString(" ")
				line++
			}
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

// finite reports whether every v is a number (not NaN, not infinite).
func finite(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
