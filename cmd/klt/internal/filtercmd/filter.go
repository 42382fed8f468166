package filtercmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/clitext"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/criteria"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsondup"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/samtemplate"
	"github.com/kafkalambda/toolkit/filter"
)

// filterTestConfig holds the flags of "klt filter test".
type filterTestConfig struct {
	criteria   string
	event      string
	json       bool
	expect     string
	expectPass recordList
	expectDrop recordList
	engine     criteria.EngineFlags
}

// recordList is the value of --expect-pass and --expect-drop: record numbers and ids,
// comma-separated. The flag may be given more than once.
type recordList []string

func (l *recordList) String() string { return strings.Join(*l, ",") }

func (l *recordList) Set(s string) error {
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			return errors.New("empty entry; want record numbers or ids separated by commas")
		}
		*l = append(*l, r)
	}
	return nil
}

// newFilterTestFlags returns the flag set of "klt filter test", storing into c.
func newFilterTestFlags(c *filterTestConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("filter test", flag.ContinueOnError)
	fs.StringVar(&c.criteria, "criteria", "", "the FilterCriteria: a JSON file, TEMPLATE#FUNC.EVENT ... (see `SRC` above; required)")
	fs.StringVar(&c.event, "event", "", "the Kafka or SQS event `FILE`; \"-\" reads standard input (required)")
	fs.BoolVar(&c.json, "json", false, "print one JSON object per record instead of text, and no summary")
	fs.Var(&c.expectPass, "expect-pass", "exit 1 unless these records pass: a comma-separated `LIST` of record\nnumbers (0 is the first) and ids")
	fs.Var(&c.expectDrop, "expect-drop", "exit 1 unless these records are dropped: a `LIST` as for --expect-pass")
	fs.StringVar(&c.expect, "expect", "", "exit 1 unless every record passes (all-pass) or every one is dropped\n(all-drop); `WHAT` is all-pass or all-drop")
	c.engine.Register(fs)
	return fs
}

// checkExpectFlags checks the expectation flags against each other.
func (c *filterTestConfig) checkExpectFlags() error {
	switch c.expect {
	case "", "all-pass", "all-drop":
	default:
		return fmt.Errorf("--expect: want all-pass or all-drop, got %q", c.expect)
	}
	if c.expect != "" && len(c.expectPass)+len(c.expectDrop) > 0 {
		return errors.New("--expect cannot be combined with --expect-pass or --expect-drop")
	}
	for _, p := range c.expectPass {
		for _, d := range c.expectDrop {
			if p == d {
				return fmt.Errorf("record %s is in both --expect-pass and --expect-drop", p)
			}
		}
	}
	return nil
}

// runTest runs "klt filter test --criteria SRC --event FILE [flags]".
func runTest(ctx context.Context, c *filterTestConfig, fs *flag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var err error
	switch {
	case len(args) > 0:
		err = fmt.Errorf("unexpected argument %q; give the event with --event FILE", args[0])
	case c.criteria == "":
		err = errors.New("--criteria is required")
	case c.event == "":
		err = errors.New("--event is required")
	case c.criteria == "-" && c.event == "-":
		err = errors.New("--criteria and --event cannot both read standard input")
	default:
		err = c.checkExpectFlags()
	}
	opts, oerr := c.engine.Options()
	if err == nil {
		err = oerr
	}
	if err != nil {
		return base.UsageError(stderr, fs.Name(), err)
	}

	specs, err := loadCriteria(c.criteria, stdin, false)
	if err != nil {
		base.PrintErrors(stderr, err)
		return base.ExitFail
	}
	spec := specs[0]
	crit, problems := spec.Compile(opts)
	if len(problems) > 0 {
		for _, p := range problems {
			base.Errorf(stderr, "%s", spec.Problem(p))
		}
		return base.ExitFail
	}

	name := input.Name([]string{c.event})
	data, err := input.ReadFileOrStdin(c.event, stdin, input.EventLimit)
	if err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	kind, recs, err := criteria.ReadTestEvent(name, data)
	if err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	if t := spec.EventType; t != "" && criteria.SourceKind(t) != kind {
		base.Errorf(stderr, "warning: %s is an event of Type %s, but %s is %s event", spec.Name(), t, name, input.WithArticle(kind))
	}

	// A malformed record's verdict is not known whatever the engine said: Lambda may see
	// bytes klt cannot.
	verdicts := make([]filter.Verdict, len(recs))
	for i := range recs {
		if err := ctx.Err(); err != nil {
			base.Errorf(stderr, "%v", err)
			return base.ExitFail
		}
		verdicts[i] = recs[i].Explain(crit)
		if err := recs[i].Err(); err != nil && verdicts[i].Err == nil {
			verdicts[i] = filter.Verdict{Err: fmt.Errorf("malformed record: %w", err), Filter: -1}
		}
	}
	for _, w := range criteria.FieldWarnings(crit, kind) {
		base.Errorf(stderr, "warning: %s: %s", spec.Name(), w)
	}
	if err := printVerdicts(stdout, recs, verdicts, c.json); err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}

	code := base.ExitOK
	for i := range recs {
		switch {
		case recs[i].Err() != nil:
			base.Errorf(stderr, "%s: %s is malformed, so Lambda's verdict is not known: %v", name, recs[i].Label(i), recs[i].Err())
			code = base.ExitFail
		case verdicts[i].Err != nil:
			base.Errorf(stderr, "%s: %s: Lambda's verdict is not known: %v", name, recs[i].Label(i), verdicts[i].Err)
			code = base.ExitFail
		}
	}
	failures, err := c.check(recs, verdicts)
	if err != nil {
		base.Errorf(stderr, "%s: %v", name, err)
		return base.ExitFail
	}
	for _, f := range failures {
		base.Errorf(stderr, "%s: %s", name, f)
	}
	if len(failures) > 0 {
		code = base.ExitFail
	}
	return code
}

// check returns a message for each record whose verdict breaks an expectation. It fails when
// an expectation names a record the event does not have.
func (c *filterTestConfig) check(recs []criteria.TestRecord, verdicts []filter.Verdict) ([]string, error) {
	type want struct {
		flag string
		pass bool
	}
	wants := make([][]want, len(recs))
	switch c.expect {
	case "all-pass", "all-drop":
		for i := range recs {
			wants[i] = []want{{"--expect " + c.expect, c.expect == "all-pass"}}
		}
	}
	for _, l := range []struct {
		flag string
		list recordList
		pass bool
	}{{"--expect-pass", c.expectPass, true}, {"--expect-drop", c.expectDrop, false}} {
		for _, ref := range l.list {
			idx, err := findRecords(ref, recs)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", l.flag, err)
			}
			for _, i := range idx {
				wants[i] = append(wants[i], want{l.flag, l.pass})
			}
		}
	}
	var failures []string
	for i, ws := range wants {
		v := verdicts[i]
		for _, w := range ws {
			switch {
			case v.Err != nil:
				failures = append(failures, fmt.Sprintf("%s: verdict unknown; %s wants it to %s",
					recs[i].Label(i), w.flag, map[bool]string{true: "pass", false: "be dropped"}[w.pass]))
			case w.pass && !v.Match:
				failures = append(failures, fmt.Sprintf("%s is dropped (%s); %s wants it to pass",
					recs[i].Label(i), missText(v.Misses), w.flag))
			case !w.pass && v.Match:
				failures = append(failures, fmt.Sprintf("%s passes (filter %d); %s wants it dropped",
					recs[i].Label(i), v.Filter, w.flag))
			}
		}
	}
	return failures, nil
}

// findRecords returns the indexes of the records ref names: a number is the index of a record
// in the event, anything else a record id.
func findRecords(ref string, recs []criteria.TestRecord) ([]int, error) {
	if isDigits(ref) {
		n, err := strconv.Atoi(ref)
		if err != nil || n >= len(recs) {
			return nil, fmt.Errorf("no record %s: the event has %d, numbered from 0", ref, len(recs))
		}
		return []int{n}, nil
	}
	var idx []int
	for i := range recs {
		if recs[i].Id == ref {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		ids := make([]string, 0, 4)
		for i := range min(len(recs), 3) {
			ids = append(ids, recs[i].Id)
		}
		if len(recs) > 3 {
			ids = append(ids, "...")
		}
		return nil, fmt.Errorf("no record %q in the event; its records are %s", ref, strings.Join(ids, ", "))
	}
	return idx, nil
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// printVerdicts writes the verdict of each record, as text with a summary line or as JSON
// Lines.
func printVerdicts(stdout io.Writer, recs []criteria.TestRecord, verdicts []filter.Verdict, asJSON bool) error {
	w := bufio.NewWriter(stdout)
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for i := range recs {
			if err := enc.Encode(verdictJSONOf(i, &recs[i], verdicts[i])); err != nil {
				return err
			}
		}
		return w.Flush()
	}
	numWidth, idWidth, pass := len(strconv.Itoa(len(recs)-1)), 0, 0
	for i := range recs {
		idWidth = max(idWidth, utf8.RuneCountInString(recs[i].Id))
	}
	unknown, statusWidth := 0, len("PASS")
	for _, v := range verdicts {
		if v.Err != nil {
			statusWidth = len("ERROR")
		}
	}
	for i, v := range verdicts {
		status, detail := "DROP", missText(v.Misses)
		switch {
		case v.Err != nil:
			// Match means nothing then: the record is neither passed nor dropped.
			status, detail = "ERROR", "verdict unknown: "+v.Err.Error()
			unknown++
		case v.Match:
			status, detail = "PASS", "filter "+strconv.Itoa(v.Filter)
			pass++
		}
		fmt.Fprintf(w, "%-*s #%-*d %-*s  %s\n", statusWidth, status, numWidth, i, idWidth, recs[i].Id, clitext.OneLine(detail))
	}
	if len(recs) == 1 {
		fmt.Fprintf(w, "%d of 1 record passes", pass)
	} else {
		fmt.Fprintf(w, "%d of %d records pass", pass, len(recs))
	}
	if unknown > 0 {
		fmt.Fprintf(w, "; %d unknown", unknown)
	}
	fmt.Fprintln(w)
	return w.Flush()
}

// missText says why a record was dropped: each filter's first failing path and the reason.
func missText(misses []filter.Miss) string {
	if len(misses) == 0 {
		return "no filter matches"
	}
	parts := make([]string, len(misses))
	for i, m := range misses {
		parts[i] = "filter " + strconv.Itoa(m.Filter) + ": "
		if m.Path != "" {
			parts[i] += m.Path + ": "
		}
		parts[i] += m.Reason
	}
	return strings.Join(parts, "; ")
}

// verdictJSON is one output line of "klt filter test --json".
type verdictJSON struct {
	Index int    `json:"index"`
	ID    string `json:"id"`
	// Pass is null when the verdict is not known; Unknown then says why.
	Pass *bool `json:"pass"`
	// Filter is the first filter the record matches; left out when it is dropped.
	Filter *int `json:"filter,omitempty"`
	// Misses says, for a dropped record, why each filter did not match.
	Misses []missJSON `json:"misses,omitempty"`
	// Unknown says why the verdict is not known (filter.ErrTooComplex); Pass is then null.
	Unknown string `json:"unknown,omitempty"`
	// Error is set for a malformed record.
	Error string `json:"error,omitempty"`
}

type missJSON struct {
	Filter int    `json:"filter"`
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func verdictJSONOf(i int, r *criteria.TestRecord, v filter.Verdict) verdictJSON {
	j := verdictJSON{Index: i, ID: r.Id, Pass: &v.Match}
	switch {
	case v.Err != nil:
		j.Pass, j.Unknown = nil, v.Err.Error()
	case v.Match:
		j.Filter = &v.Filter
	default:
		j.Misses = make([]missJSON, len(v.Misses))
		for k, m := range v.Misses {
			j.Misses[k] = missJSON{Filter: m.Filter, Path: m.Path, Reason: m.Reason}
		}
	}
	if err := r.Err(); err != nil {
		j.Error = err.Error()
	}
	return j
}

// loadCriteria reads the FilterCriteria that src names (see usageFilterSRC); "-" is standard
// input. A template without #NAME gives all of its FilterCriteria when all is set, and
// otherwise its only one.
func loadCriteria(src string, stdin io.Reader, all bool) ([]*criteria.Spec, error) {
	file, ref := src, ""
	if _, err := os.Stat(src); err != nil && src != "-" {
		if i := strings.LastIndexByte(src, '#'); i >= 0 {
			file, ref = src[:i], src[i+1:]
		}
	}
	name := input.Name([]string{file})
	data, err := input.ReadFileOrStdin(file, stdin, input.TemplateLimit)
	if err != nil {
		return nil, err
	}
	if ref != "" {
		t, err := samtemplate.ParseTemplate(name, data)
		if err != nil {
			return nil, err
		}
		s, err := t.Criteria(ref)
		if err != nil {
			return nil, err
		}
		return []*criteria.Spec{s}, nil
	}

	var t *samtemplate.SamTemplate
	if text := bytes.TrimSpace(data); len(text) > 0 && text[0] == '{' {
		if err := jsondup.CheckDuplicateMembers(name, data); err != nil {
			return nil, err
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(data, &top); err != nil {
			if jerr := criteria.JSONSyntaxError(name, data, err); jerr != nil {
				return nil, jerr
			}
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		fc, hasFC := top["FilterCriteria"]
		switch _, hasFilters := top["Filters"]; {
		case hasFilters:
			return []*criteria.Spec{{File: name, Raw: data}}, nil
		case hasFC:
			// the FilterCriteria of an AWS::Lambda::EventSourceMapping's Properties, or of
			// "aws lambda get-event-source-mapping"
			if string(fc) == "null" {
				return nil, fmt.Errorf("%s: FilterCriteria is null: the mapping has no filters", name)
			}
			return []*criteria.Spec{{File: name, Raw: fc}}, nil
		}
		if _, ok := top["Resources"]; !ok {
			return []*criteria.Spec{{File: name, Lone: true, Patterns: []string{string(text)}}}, nil
		}
		// a CloudFormation template in JSON
	}
	t, err = samtemplate.ParseTemplate(name, data)
	if err != nil {
		return nil, err
	}
	if all {
		return t.All()
	}
	refs, hidden := t.CriteriaRefs()
	if len(hidden) > 0 && len(refs) <= 1 {
		// The only FilterCriteria klt sees may not be the template's only one.
		return nil, errors.Join(append(hidden, fmt.Errorf("%s: name the FilterCriteria to test, as %s#FUNC.EVENT", name, file))...)
	}
	switch len(refs) {
	case 0:
		return nil, fmt.Errorf("%s: no FilterCriteria in the template; %s", name, t.FunctionList())
	case 1:
		s, err := t.Criteria(refs[0])
		if err != nil {
			return nil, err
		}
		return []*criteria.Spec{s}, nil
	}
	for i := range refs {
		refs[i] = file + "#" + refs[i]
	}
	return nil, fmt.Errorf("%s has %d FilterCriteria; name one: %s", name, len(refs), strings.Join(refs, ", "))
}

// newFilterLintFlags returns the flag set of "klt filter lint", storing into e.
func newFilterLintFlags(e *criteria.EngineFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("filter lint", flag.ContinueOnError)
	e.Register(fs)
	return fs
}

// runLint runs "klt filter lint [flags] SRC...".
func runLint(ctx context.Context, e *criteria.EngineFlags, fs *flag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts, err := e.Options()
	if err == nil && len(args) == 0 {
		err = errors.New("want at least one SRC: a FilterCriteria or pattern JSON file, or a template")
	}
	stdins := 0
	for _, a := range args {
		if a == "-" || strings.HasPrefix(a, "-#") {
			stdins++
		}
	}
	if err == nil && stdins > 1 {
		err = errors.New(`standard input ("-") can be read only once`)
	}
	if err != nil {
		return base.UsageError(stderr, fs.Name(), err)
	}

	bad := false
	filters, criteria := 0, 0
	for _, src := range args {
		if err := ctx.Err(); err != nil {
			base.Errorf(stderr, "%v", err)
			return base.ExitFail
		}
		specs, err := loadCriteria(src, stdin, true)
		if err != nil {
			base.PrintErrors(stderr, err)
			bad = true
		}
		for _, s := range specs {
			c, problems := s.Compile(opts)
			for _, p := range problems {
				base.Errorf(stderr, "%s", s.Problem(p))
			}
			if len(problems) > 0 {
				bad = true
				continue
			}
			filters += len(c.Filters())
			criteria++
		}
	}
	if bad {
		return base.ExitFail
	}
	msg := "ok: " + clitext.Plural(filters, "filter")
	if criteria > 1 {
		msg += " in " + strconv.Itoa(criteria) + " FilterCriteria"
	}
	fmt.Fprintln(stdout, msg)
	return base.ExitOK
}

// Cmd is the command group "klt filter": test and lint.
var Cmd = &base.Command{
	UsageLine: "klt filter <command> [arguments]",
	Long:      usageFilter,
	Commands:  []*base.Command{cmdTest, cmdLint},
}

// usageFilter is the help of "klt filter".
const usageFilter = `Commands for the FilterCriteria of Lambda event source mappings, evaluated here with the rules
Lambda applies to Kafka records (Amazon MSK or self-managed: the "value") and SQS messages (the
"body"):

  test --criteria SRC --event FILE [flags]   show which records of an event Lambda would pass
                                             to the function, and why it drops the others
  lint [flags] SRC...                        check FilterCriteria as Lambda checks them when
                                             it creates the event source mapping

` + usageFilterSRC + `
Run "klt help filter test" or "klt help filter lint" for details.

Examples:

  klt filter lint template.yaml
  klt filter test --criteria template.yaml#ConsumerMSKMapping --event event.json
`

// usageFilterSRC describes the SRC arguments of the filter commands.
const usageFilterSRC = `SRC, the FilterCriteria, is one of:

  FILE.json              FilterCriteria as CloudFormation and the Lambda API write them,
                         {"Filters":[{"Pattern":"{\"value\":{\"currency\":[\"EUR\"]}}"}]};
                         the output of "aws lambda get-event-source-mapping" also works
  FILE.json              one pattern, {"value":{"currency":["EUR"]}}: FilterCriteria with a
                         single filter
  TEMPLATE#FUNC.EVENT    the FilterCriteria of event EVENT of the AWS::Serverless::Function
                         FUNC in a SAM template (YAML or JSON), at
                         Resources.FUNC.Properties.Events.EVENT.Properties.FilterCriteria.
                         A Pattern is a JSON string or a YAML mapping. Intrinsic functions
                         (!Ref, !Sub, !GetAtt ...) elsewhere in the template are fine; klt
                         cannot evaluate one that makes the FilterCriteria or a pattern.
  TEMPLATE#MAPPING       the FilterCriteria of an AWS::Lambda::EventSourceMapping
  TEMPLATE               every FilterCriteria of the template for lint; for test, its only one
  -                      standard input, JSON or a template
`

// usageFilterEngine describes the flags of the engine, shared by both commands.
const usageFilterEngine = `By default the rules are those of Lambda today: the operators Lambda documents, numbers
compared as float64, 5 filters per FilterCriteria and 4096 characters per pattern.
--eventbridge, --legacy-numbers and --max-filters change them.
`

// usageFilterTest is the help of "klt filter test", before its flags.
const usageFilterTest = `Test runs each record of an event through FilterCriteria as Lambda's event source mapping
does, and prints one line per record: PASS and the first filter it matches, or DROP and, for
each filter, the first path that failed and why. A summary ends the output:

  PASS #0 orders-0@15  filter 0
  DROP #1 orders-0@16  filter 0: value.total: ...; filter 1: value.total: ...
  PASS #2 orders-0@17  filter 1
  2 of 3 records pass

FILE is the event a function receives, read from standard input when it is "-":

  a Kafka event    eventSource aws:kafka (MSK) or SelfManagedKafka, as "klt event build"
                   makes; filters see each record's value. Its records are named
                   TOPIC-PARTITION@OFFSET, in the order "klt event decode" prints them.
  an SQS event     {"Records":[{"messageId":...,"eventSource":"aws:sqs","body":...}]};
                   filters see each message's body. Its records are named by messageId.

Records are also numbered, #0 being the first. With --json, each line is a JSON object:

  {"index":1,"id":"orders-0@16","pass":false,"misses":[{"filter":0,"path":"value.total",
   "reason":"..."}]}

and a passing record has "filter" instead of "misses" (shown on two lines here).

A record whose verdict cannot be known is ERROR, never PASS or DROP: a malformed Kafka record,
or a value the engine cannot evaluate (filter.ErrTooComplex: containers nested too deep, or
too many array combinations). Its JSON line has "pass":null and says why under "unknown".
Filters that name the other source's field (Kafka "body", SQS "value"; for Kafka, anything
but "value") get a warning: Lambda never shows them that field.

` + usageFilterSRC + `
Expectations make the run a check for CI. --expect-pass and --expect-drop take record numbers
and ids, comma-separated, and may be repeated; a number is always a record number, so name a
message whose messageId is a number by its record number. Records they do not name may do
either. --expect all-pass or all-drop covers every record.

` + usageFilterEngine + `
Exit status: 0 when every record was evaluated and every expectation holds (records may be
dropped when there is none); 1 when an expectation fails, when the FilterCriteria are invalid
(each problem is printed as by "klt filter lint"), when an input cannot be read or is not an
event, or when a record's verdict is not known (ERROR); 2 when the command line is wrong.
`

// usageFilterTestExamples ends the help of "klt filter test".
const usageFilterTestExamples = `
Examples:

  klt filter test --criteria testdata/filters/orders-criteria.json --event testdata/events/msk.json

In CI, check that the filters of a SAM template keep what the function needs and nothing else;
the step fails with status 1, and says which record went the wrong way, when they do not:

  klt filter test --criteria testdata/template-example.yaml#OrdersConsumer.Orders \
      --event testdata/events/msk.json --expect-pass 0,2 --expect-drop orders-0@16
  klt filter test --criteria testdata/template-example.yaml#OrdersWorker.PlacedOrders \
      --event testdata/sqs/orders-sqs.json --expect-drop 1,2

  klt event decode event.json | jq -c 'select(.partition == 0)' | klt event build |
      klt filter test --criteria testdata/filters/orders-criteria.json --event - --json |
      jq -r 'select(.pass) | .id'
`

// usageFilterLint is the help of "klt filter lint", before its flags.
const usageFilterLint = `Lint checks FilterCriteria as Lambda does when it creates or updates an event source mapping:
each pattern must be valid JSON and a valid pattern (leaves are non-empty arrays, operators
are known and well formed), no longer than 4096 characters, and there must be no more filters
than the quota. It prints every problem it finds on standard error, as

  klt: FILE[:LINE]: [FUNC.EVENT: ]Filters[I]: PATH: what is wrong

(LINE is known for templates), and exits with status 1. When all is well it prints
"ok: N filters" and exits with status 0. Status 2 means the command line is wrong.

` + usageFilterSRC + `
` + usageFilterEngine

// usageFilterLintExamples ends the help of "klt filter lint".
const usageFilterLintExamples = `
Examples:

  klt filter lint template.yaml                  # every FilterCriteria of the template
  klt filter lint --max-filters 10 template.yaml#ConsumerMSKMapping \
      testdata/filters/orders-criteria.json
  aws lambda get-event-source-mapping --uuid "$UUID" | klt filter lint -
`

// cmdTest is the command "klt filter test".
var cmdTest = base.WithFlags(&base.Command{
	UsageLine: "klt filter test --criteria SRC --event FILE [flags]",
	Short:     "show which records of an event pass FilterCriteria, and why the others do not",
	Long:      usageFilterTest,
	Examples:  usageFilterTestExamples,
}, newFilterTestFlags, runTest)

// cmdLint is the command "klt filter lint".
var cmdLint = base.WithFlags(&base.Command{
	UsageLine: "klt filter lint [flags] SRC...",
	Short:     "check FilterCriteria (JSON, or in a SAM template) as Lambda checks them",
	Long:      usageFilterLint,
	Examples:  usageFilterLintExamples,
}, newFilterLintFlags, runLint)
