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
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsondup"
	"github.com/kafkalambda/toolkit/internal/capacity"
	"github.com/kafkalambda/toolkit/internal/report"
)

// config is klt plan's command line.
type config struct {
	flags capacity.Input // the options given as flags (the others zero)
	given []givenFlag    // those options, in the order given, with their text
	// The flags that are not inputs of the model.
	config, fromReport, stat, format, reportDir string
	// report is the --from-report run, read by input: the plan predicts each of its load
	// pipelines beside what it measured (Plan.Runs).
	report *report.Report
}

// givenFlag is an option given on the command line and the text it was given.
type givenFlag struct {
	opt  *option
	text string
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

func newPlanFlags(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	for i := range options {
		o := &options[i]
		fs.Var(&recorder{o.value(&c.flags), o, c}, o.flagName(), o.usage)
	}
	fs.Var(&priceValue{&c.flags.Prices}, "price", "a unit price in US dollars, `NAME=USD` (repeatable), instead of us-east-1's: NAME is one of\n"+
		wrap(priceNames(), 90))
	fs.StringVar(&c.config, "config", "", "read the inputs from `FILE`, YAML or JSON, keyed by the JSON names of the plan's \"input\"\n(rate, duration, fanout: {queue: ...}, prices: {...}); flags given win")
	fs.StringVar(&c.fromReport, "from-report", "", "plan from the klt local report `FILE` (report.json): its partitions, batch sizes, measured\ndurations, partitions per invocation, concurrency and records per second; --config and\nflags win; the plan then sets each pipeline of the run beside what it predicts for it")
	c.stat = "mean"
	fs.Var(&enumValue{&c.stat, []string{"mean", "p50", "p99"}}, "from-report-stat", "the `STAT` of the report's durations the plan takes: mean (a throughput is a mean, so the\nmean time predicts it), p50 or p99 (a pessimistic plan)")
	c.format = "text"
	fs.Var(&enumValue{&c.format, []string{"text", "json"}}, "format", "print the plan as `FORMAT`: text or json")
	fs.StringVar(&c.reportDir, "report", "", "also write plan.html (charts, tables) and plan.json to `DIR`")
	return fs
}

// PlanFlags returns the flags of "klt plan", for its help.
func PlanFlags() *flag.FlagSet { return newPlanFlags(new(config)) }

// RunPlan runs "klt plan".
func RunPlan(_ context.Context, cmd *base.Command, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var c config
	fs := newPlanFlags(&c)
	args, code, ok := base.ParseFlags(fs, args, cmd.Help(), stdout, stderr)
	if !ok {
		return code
	}
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
		return base.UsageError(stderr, "plan", inFlagWords(err))
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
	if err := write(stdout, &c, in, p); err != nil {
		base.Errorf(stderr, "plan: %v", err)
		return base.ExitFail
	}
	if !p.Direct.ReachesTarget && !p.Fanout.ReachesTarget {
		base.Errorf(stderr, "plan: neither design reaches %s records/s: direct reaches %s (%s), fanout %s (%s)",
			fmtNum(p.Input.Rate), fmtNum(p.Direct.MaxRecordsPerSecond), p.Direct.Bound, fmtNum(p.Fanout.MaxRecordsPerSecond), p.Fanout.Bound)
		return base.ExitFail
	}
	return base.ExitOK
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
			return in, nil, fmt.Errorf("%s: %w", c.fromReport, err)
		}
		c.report = &r
		for i, n := range notes {
			notes[i] = "from " + c.fromReport + ": " + n
		}
	}
	if c.config != "" {
		data, err := readCapped(c.config, configLimit, "a plan's --config file")
		if err != nil {
			return in, nil, err
		}
		if err := ReadConfig(c.config, data, &in); err != nil {
			return in, nil, err
		}
	}
	for _, g := range c.given {
		if err := g.opt.value(&in).Set(g.text); err != nil {
			return in, nil, fmt.Errorf("--%s: %w", g.opt.flagName(), err) // read once already: cannot fail
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

// inFlagWords says the model's error about an input field (capacity: invalid input: FIELD
// VALUE: why) in the words of the command line, its flag for its JSON name (the --config key
// the flag's name says): "--batch-size 20000: want 1 to 10000". An error of another form is
// returned as it is.
func inFlagWords(err error) error {
	rest, ok := strings.CutPrefix(err.Error(), capacity.ErrInput.Error()+": ")
	key, _, _ := strings.Cut(rest, " ")
	if !ok || key == "" {
		return err
	}
	if o := optionByKey(key); o != nil {
		return fmt.Errorf("--%s%s", o.flagName(), strings.TrimPrefix(rest, key))
	}
	if name, ok := strings.CutPrefix(key, "prices."); ok {
		return fmt.Errorf("--price %s=%s", name, strings.TrimPrefix(strings.TrimPrefix(rest, key), " "))
	}
	return err
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
