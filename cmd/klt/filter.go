package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// engineFlags are the flags that choose the rules of the filter engine, shared by
// "klt filter test" and "klt filter lint".
type engineFlags struct {
	eventBridge   bool
	legacyNumbers bool
	maxFilters    int
}

// register adds the flags to fs.
func (e *engineFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&e.eventBridge, "eventbridge", false, "accept the operators of EventBridge rules that Lambda does not document:\n"+
		"wildcard, cidr, and anything-but with prefix, suffix, equals-ignore-case or wildcard")
	fs.BoolVar(&e.legacyNumbers, "legacy-numbers", false, "compare numbers as Lambda's engine did from 2022 to mid-2024: only within\n"+
		"-5e9..5e9, and to six decimal places")
	fs.IntVar(&e.maxFilters, "max-filters", filter.DefaultMaxFilters, "allow `N` filters per FilterCriteria: 5, Lambda's default quota, or 10 after a\nquota increase")
}

// options checks the flags and turns them into filter options.
func (e *engineFlags) options() ([]filter.Option, error) {
	var opts []filter.Option
	if e.eventBridge {
		opts = append(opts, filter.WithEventBridge())
	}
	if e.legacyNumbers {
		opts = append(opts, filter.WithLegacyNumbers())
	}
	switch e.maxFilters {
	case filter.DefaultMaxFilters:
	case filter.RaisedMaxFilters:
		opts = append(opts, filter.WithRaisedFilterQuota())
	default:
		return nil, fmt.Errorf("--max-filters: want %d (the default quota) or %d (after a quota increase), got %d",
			filter.DefaultMaxFilters, filter.RaisedMaxFilters, e.maxFilters)
	}
	return opts, nil
}

// filterTestConfig holds the flags of "klt filter test".
type filterTestConfig struct {
	criteria   string
	event      string
	json       bool
	expect     string
	expectPass recordList
	expectDrop recordList
	engine     engineFlags
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
	c.engine.register(fs)
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

// runFilterTest runs "klt filter test --criteria SRC --event FILE [flags]".
func runFilterTest(ctx context.Context, cmd *base.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var c filterTestConfig
	fs := newFilterTestFlags(&c)
	args, code, ok := base.ParseFlags(fs, args, cmd.Help(), stdout, stderr)
	if !ok {
		return code
	}
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
	opts, oerr := c.engine.options()
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
	crit, problems := spec.compile(opts)
	if len(problems) > 0 {
		for _, p := range problems {
			base.Errorf(stderr, "%s", spec.problem(p))
		}
		return base.ExitFail
	}

	name := base.InputName([]string{c.event})
	data, err := base.ReadInputFile(c.event, stdin, base.EventLimit)
	if err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	kind, recs, err := readTestEvent(name, data)
	if err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	if t := spec.eventType; t != "" && sourceKind(t) != kind {
		base.Errorf(stderr, "warning: %s is an event of Type %s, but %s is %s event", spec.name(), t, name, base.WithArticle(kind))
	}

	// A malformed record's verdict is not known whatever the engine said: Lambda may see
	// bytes klt cannot.
	verdicts := make([]filter.Verdict, len(recs))
	for i := range recs {
		if err := ctx.Err(); err != nil {
			base.Errorf(stderr, "%v", err)
			return base.ExitFail
		}
		verdicts[i] = recs[i].explain(crit)
		if err := recs[i].err(); err != nil && verdicts[i].Err == nil {
			verdicts[i] = filter.Verdict{Err: fmt.Errorf("malformed record: %w", err), Filter: -1}
		}
	}
	for _, w := range fieldWarnings(crit, kind) {
		base.Errorf(stderr, "warning: %s: %s", spec.name(), w)
	}
	if err := printVerdicts(stdout, recs, verdicts, c.json); err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}

	code = base.ExitOK
	for i := range recs {
		switch {
		case recs[i].err() != nil:
			base.Errorf(stderr, "%s: %s is malformed, so Lambda's verdict is not known: %v", name, recs[i].label(i), recs[i].err())
			code = base.ExitFail
		case verdicts[i].Err != nil:
			base.Errorf(stderr, "%s: %s: Lambda's verdict is not known: %v", name, recs[i].label(i), verdicts[i].Err)
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
func (c *filterTestConfig) check(recs []testRecord, verdicts []filter.Verdict) ([]string, error) {
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
					recs[i].label(i), w.flag, map[bool]string{true: "pass", false: "be dropped"}[w.pass]))
			case w.pass && !v.Match:
				failures = append(failures, fmt.Sprintf("%s is dropped (%s); %s wants it to pass",
					recs[i].label(i), missText(v.Misses), w.flag))
			case !w.pass && v.Match:
				failures = append(failures, fmt.Sprintf("%s passes (filter %d); %s wants it dropped",
					recs[i].label(i), v.Filter, w.flag))
			}
		}
	}
	return failures, nil
}

// findRecords returns the indexes of the records ref names: a number is the index of a record
// in the event, anything else a record id.
func findRecords(ref string, recs []testRecord) ([]int, error) {
	if isDigits(ref) {
		n, err := strconv.Atoi(ref)
		if err != nil || n >= len(recs) {
			return nil, fmt.Errorf("no record %s: the event has %d, numbered from 0", ref, len(recs))
		}
		return []int{n}, nil
	}
	var idx []int
	for i := range recs {
		if recs[i].id == ref {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		ids := make([]string, 0, 4)
		for i := range min(len(recs), 3) {
			ids = append(ids, recs[i].id)
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
func printVerdicts(stdout io.Writer, recs []testRecord, verdicts []filter.Verdict, asJSON bool) error {
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
		idWidth = max(idWidth, utf8.RuneCountInString(recs[i].id))
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
		fmt.Fprintf(w, "%-*s #%-*d %-*s  %s\n", statusWidth, status, numWidth, i, idWidth, recs[i].id, base.OneLine(detail))
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

func verdictJSONOf(i int, r *testRecord, v filter.Verdict) verdictJSON {
	j := verdictJSON{Index: i, ID: r.id, Pass: &v.Match}
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
	if err := r.err(); err != nil {
		j.Error = err.Error()
	}
	return j
}

// testRecord is one record of the event under test: a Kafka record or an SQS message.
type testRecord struct {
	id    string // topic-N@offset, or the messageId
	kafka *kafkaevent.Record
	sqs   *events.SQSMessage
}

// explain evaluates the record against c, shaped as Lambda shapes its source's records.
func (r *testRecord) explain(c *filter.Criteria) filter.Verdict {
	if r.kafka != nil {
		return c.ExplainKafka(r.kafka)
	}
	return c.ExplainSQS(r.sqs)
}

// err returns the error of a malformed Kafka record.
func (r *testRecord) err() error {
	if r.kafka != nil {
		return r.kafka.Err
	}
	return nil
}

// label names the record i in messages: "#1 orders-0@16".
func (r *testRecord) label(i int) string { return "#" + strconv.Itoa(i) + " " + r.id }

// sourceKind returns the kind of event a SAM event Type delivers, or the Type itself for
// sources klt does not read.
func sourceKind(samType string) string {
	switch samType {
	case "MSK", "SelfManagedKafka":
		return base.KindKafka
	}
	return samType
}

// readTestEvent reads a Kafka or an SQS event and returns its records in the order a function
// sees them. It tells the two apart by their members: a Kafka event has "eventSource" and
// "records", an SQS event "Records". A member given twice anywhere in it is an error: which
// one counts would depend on the reader.
func readTestEvent(name string, data []byte) (kind string, recs []testRecord, err error) {
	if err := checkDuplicateMembers(name, data); err != nil {
		return "", nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		if jerr := jsonSyntaxError(name, data, err); jerr != nil {
			return "", nil, jerr
		}
		return "", nil, fmt.Errorf("%s: want a Kafka or an SQS event, a JSON object", name)
	}
	_, hasSource := top["eventSource"]
	_, hasKafkaRecords := top["records"]
	_, hasSQSRecords := top["Records"]
	switch {
	case hasSource || hasKafkaRecords:
		ev, err := kafkaevent.Parse(data)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", name, err)
		}
		for r := range ev.All() {
			recs = append(recs, testRecord{id: base.OneLine(r.PartitionID()) + "@" + strconv.FormatInt(r.Offset, 10), kafka: r})
		}
		kind = base.KindKafka
	case hasSQSRecords:
		var ev events.SQSEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return "", nil, fmt.Errorf("%s: not an SQS event: %v", name, err)
		}
		for i := range ev.Records {
			m := &ev.Records[i]
			if m.EventSource != "aws:sqs" && m.EventSource != "" {
				return "", nil, fmt.Errorf("%s: Records[%d].eventSource is %q; an SQS event has aws:sqs", name, i, m.EventSource)
			}
			id := base.OneLine(m.MessageId)
			if id == "" {
				id = "Records[" + strconv.Itoa(i) + "]"
			}
			recs = append(recs, testRecord{id: id, sqs: m})
		}
		kind = base.KindSQS
	default:
		return "", nil, fmt.Errorf("%s: neither a Kafka event (with eventSource aws:kafka or SelfManagedKafka and records) nor an SQS event (with Records)", name)
	}
	if len(recs) == 0 {
		return "", nil, fmt.Errorf("%s: no records; Lambda never sends an event without one", name)
	}
	return kind, recs, nil
}

// jsonSyntaxError returns err as "NAME:LINE:COLUMN: invalid JSON: ..." when it is a syntax
// error, and nil otherwise.
func jsonSyntaxError(name string, data []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		if errors.Is(err, io.ErrUnexpectedEOF) || len(bytes.TrimSpace(data)) == 0 {
			return fmt.Errorf("%s: invalid JSON: unexpected end of input", name)
		}
		return nil
	}
	line, col := lineCol(data, se.Offset-1)
	return fmt.Errorf("%s:%d:%d: invalid JSON: %v", name, line, col, se)
}

// criteriaSpec is one FilterCriteria as a SRC argument gives it, before it is compiled.
type criteriaSpec struct {
	file      string   // the file, for messages
	where     string   // "Function.Event" or "Mapping" in a template; "" otherwise
	line      int      // the line of the FilterCriteria in file; 0 when not known
	lone      bool     // file is a single pattern, not FilterCriteria
	patterns  []string // the Pattern of each filter, when raw is nil
	lines     []int    // the line of each pattern in file, when known
	raw       []byte   // FilterCriteria JSON, for filter.ParseCriteria
	readErrs  []error  // what cannot be read from a template: *filter.Error for a filter
	eventType string   // the SAM event Type (MSK, SQS ...), when known
}

// name returns how messages name the FilterCriteria: the file, or TEMPLATE#FUNCTION.EVENT.
func (s *criteriaSpec) name() string {
	if s.where == "" {
		return s.file
	}
	return s.file + "#" + s.where
}

// compile compiles the FilterCriteria. When they are invalid it returns every problem it can
// find: the engine's, which stops at the first, and then those of each filter it did not
// report on, checked alone.
func (s *criteriaSpec) compile(opts []filter.Option) (*filter.Criteria, []error) {
	var c *filter.Criteria
	var err error
	switch {
	case len(s.readErrs) > 0:
		err = errors.Join(s.readErrs...)
	case s.raw != nil:
		c, err = filter.ParseCriteria(s.raw, opts...)
	default:
		c, err = filter.NewCriteria(s.patterns, opts...)
	}
	if err == nil {
		return c, nil
	}
	problems := base.LeafErrors(err)
	reported := make(map[int]bool)
	for _, p := range problems {
		if fe, ok := errors.AsType[*filter.Error](p); ok && fe.Filter >= 0 {
			reported[fe.Filter] = true
		}
	}
	n := s.filterCount()
	if !slices.ContainsFunc(problems, func(p error) bool { return filterOf(p) < 0 }) {
		// The engine checks the number of filters before it compiles any, so placeholder
		// patterns ask it for that check alone; the error of the first placeholder is not
		// about the number.
		_, err := filter.NewCriteria(make([]string, n), opts...)
		if fe, ok := errors.AsType[*filter.Error](err); ok && fe.Filter < 0 {
			problems = append(problems, fe)
		}
	}
	for i := range n {
		if reported[i] {
			continue
		}
		for _, p := range base.LeafErrors(s.checkAlone(i, opts)) {
			if fe, ok := errors.AsType[*filter.Error](p); ok {
				at := *fe
				at.Filter = i
				p = &at
			}
			problems = append(problems, p)
		}
	}
	slices.SortStableFunc(problems, func(a, b error) int { return cmp.Compare(filterOf(a), filterOf(b)) })
	return nil, problems
}

// filterOf returns the index of the filter err is about, or -1.
func filterOf(err error) int {
	if fe, ok := errors.AsType[*filter.Error](err); ok {
		return fe.Filter
	}
	return -1
}

// filterCount returns the number of filters, or 0 when it is not known.
func (s *criteriaSpec) filterCount() int {
	if s.raw == nil {
		return len(s.patterns)
	}
	return len(s.rawFilters())
}

// checkAlone checks filter i as if it were the only one, for the problems the engine did not
// reach. It returns nil when the filter is valid.
func (s *criteriaSpec) checkAlone(i int, opts []filter.Option) error {
	if s.raw == nil {
		_, err := filter.Compile(s.patterns[i], opts...)
		return err
	}
	one := append(append([]byte(`{"Filters":[`), s.rawFilters()[i]...), ']', '}')
	_, err := filter.ParseCriteria(one, opts...)
	return err
}

// rawFilters returns the elements of the Filters array of raw FilterCriteria, or nil when
// there is no such array. It is only asked after filter.ParseCriteria failed, for more
// problems than the engine's first: when raw is not even an object with a Filters array, the
// engine's error already says so, and there is no filter to check alone.
func (s *criteriaSpec) rawFilters() []json.RawMessage {
	var fc struct{ Filters []json.RawMessage }
	if err := json.Unmarshal(s.raw, &fc); err != nil {
		return nil
	}
	return fc.Filters
}

// problem formats one problem of the FilterCriteria for a "klt: " line:
// "FILE:LINE: WHERE: Filters[I]: PATH: REASON", leaving out what is not known.
func (s *criteriaSpec) problem(err error) string {
	fe, isFilterErr := errors.AsType[*filter.Error](err)
	line := s.line
	if isFilterErr && fe.Filter >= 0 && fe.Filter < len(s.lines) {
		line = s.lines[fe.Filter]
	}
	var b strings.Builder
	b.WriteString(s.file)
	if line > 0 {
		b.WriteString(":" + strconv.Itoa(line))
	}
	b.WriteString(": ")
	if s.where != "" {
		b.WriteString(s.where + ": ")
	}
	if !isFilterErr {
		b.WriteString(err.Error())
		return b.String()
	}
	if fe.Filter >= 0 && !s.lone {
		b.WriteString("Filters[" + strconv.Itoa(fe.Filter) + "]: ")
	}
	if fe.Path != "" {
		b.WriteString(fe.Path + ": ")
	}
	b.WriteString(optionFlags.Replace(fe.Reason))
	return b.String()
}

// optionFlags turns the names of filter options in the engine's advice into klt's flags.
var optionFlags = strings.NewReplacer(
	"WithEventBridge", "--eventbridge",
	"WithLegacyNumbers", "--legacy-numbers",
	"WithRaisedFilterQuota", "--max-filters 10",
)

// loadCriteria reads the FilterCriteria that src names (see usageFilterSRC); "-" is standard
// input. A template without #NAME gives all of its FilterCriteria when all is set, and
// otherwise its only one.
func loadCriteria(src string, stdin io.Reader, all bool) ([]*criteriaSpec, error) {
	file, ref := src, ""
	if _, err := os.Stat(src); err != nil && src != "-" {
		if i := strings.LastIndexByte(src, '#'); i >= 0 {
			file, ref = src[:i], src[i+1:]
		}
	}
	name := base.InputName([]string{file})
	data, err := base.ReadInputFile(file, stdin, base.TemplateLimit)
	if err != nil {
		return nil, err
	}
	if ref != "" {
		t, err := parseTemplate(name, data)
		if err != nil {
			return nil, err
		}
		s, err := t.criteria(ref)
		if err != nil {
			return nil, err
		}
		return []*criteriaSpec{s}, nil
	}

	var t *samTemplate
	if text := bytes.TrimSpace(data); len(text) > 0 && text[0] == '{' {
		if err := checkDuplicateMembers(name, data); err != nil {
			return nil, err
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(data, &top); err != nil {
			if jerr := jsonSyntaxError(name, data, err); jerr != nil {
				return nil, jerr
			}
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		fc, hasFC := top["FilterCriteria"]
		switch _, hasFilters := top["Filters"]; {
		case hasFilters:
			return []*criteriaSpec{{file: name, raw: data}}, nil
		case hasFC:
			// the FilterCriteria of an AWS::Lambda::EventSourceMapping's Properties, or of
			// "aws lambda get-event-source-mapping"
			if string(fc) == "null" {
				return nil, fmt.Errorf("%s: FilterCriteria is null: the mapping has no filters", name)
			}
			return []*criteriaSpec{{file: name, raw: fc}}, nil
		}
		if _, ok := top["Resources"]; !ok {
			return []*criteriaSpec{{file: name, lone: true, patterns: []string{string(text)}}}, nil
		}
		// a CloudFormation template in JSON
	}
	t, err = parseTemplate(name, data)
	if err != nil {
		return nil, err
	}
	if all {
		return t.all()
	}
	refs, hidden := t.criteriaRefs()
	if len(hidden) > 0 && len(refs) <= 1 {
		// The only FilterCriteria klt sees may not be the template's only one.
		return nil, errors.Join(append(hidden, fmt.Errorf("%s: name the FilterCriteria to test, as %s#FUNC.EVENT", name, file))...)
	}
	switch len(refs) {
	case 0:
		return nil, fmt.Errorf("%s: no FilterCriteria in the template; %s", name, t.functionList())
	case 1:
		s, err := t.criteria(refs[0])
		if err != nil {
			return nil, err
		}
		return []*criteriaSpec{s}, nil
	}
	for i := range refs {
		refs[i] = file + "#" + refs[i]
	}
	return nil, fmt.Errorf("%s has %d FilterCriteria; name one: %s", name, len(refs), strings.Join(refs, ", "))
}

// newFilterLintFlags returns the flag set of "klt filter lint", storing into e.
func newFilterLintFlags(e *engineFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("filter lint", flag.ContinueOnError)
	e.register(fs)
	return fs
}

// runFilterLint runs "klt filter lint [flags] SRC...".
func runFilterLint(ctx context.Context, cmd *base.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var e engineFlags
	fs := newFilterLintFlags(&e)
	args, code, ok := base.ParseFlags(fs, args, cmd.Help(), stdout, stderr)
	if !ok {
		return code
	}
	opts, err := e.options()
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
			c, problems := s.compile(opts)
			for _, p := range problems {
				base.Errorf(stderr, "%s", s.problem(p))
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
	msg := "ok: " + base.Plural(filters, "filter")
	if criteria > 1 {
		msg += " in " + strconv.Itoa(criteria) + " FilterCriteria"
	}
	fmt.Fprintln(stdout, msg)
	return base.ExitOK
}

// usageFilter is the help of "klt filter".
const usageFilter = `Usage: klt filter <command> [arguments]

Commands for the FilterCriteria of Lambda event source mappings, evaluated here with the rules
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
  klt filter test --criteria template.yaml#OrdersConsumer.Orders --event event.json
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
const usageFilterTest = `Usage: klt filter test --criteria SRC --event FILE [flags]

Test runs each record of an event through FilterCriteria as Lambda's event source mapping
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

  klt filter test --criteria template.yaml#OrdersConsumer.Orders \
      --event testdata/events/msk.json --expect-pass 0,2 --expect-drop orders-0@16
  klt filter test --criteria template.yaml#OrdersWorker.PlacedOrders \
      --event testdata/sqs/orders-sqs.json --expect-drop 1,2

  klt event decode event.json | jq -c 'select(.partition == 0)' | klt event build |
      klt filter test --criteria criteria.json --event - --json | jq -r 'select(.pass) | .id'
`

// usageFilterLint is the help of "klt filter lint", before its flags.
const usageFilterLint = `Usage: klt filter lint [flags] SRC...

Lint checks FilterCriteria as Lambda does when it creates or updates an event source mapping:
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
  klt filter lint --max-filters 10 template.yaml#OrdersConsumer.Orders criteria.json
  aws lambda get-event-source-mapping --uuid "$UUID" | klt filter lint -
`

// fieldWarnings warns about the fields that patterns of c name and that Lambda never shows them
// for records of kind: it filters a Kafka record on its "value" only and an SQS message on its
// "body", so a Kafka pattern on "body" (or "key") or an SQS pattern on "value", the other
// source's field, tests a field that is always missing.
func fieldWarnings(c *filter.Criteria, kind string) []string {
	var warnings []string
	for i, p := range c.Filters() {
		names, err := topFields(p.String())
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("filter %d: cannot list the fields it names: %v", i, err))
			continue
		}
		for _, name := range names {
			switch {
			case kind == base.KindKafka && name == "body":
				warnings = append(warnings, fmt.Sprintf(`filter %d names "body", an SQS message's field: Lambda filters Kafka records on "value" only, so to it "body" is always missing`, i))
			case kind == base.KindKafka && name != "value":
				warnings = append(warnings, fmt.Sprintf(`filter %d names %q: Lambda filters Kafka records on "value" only, so to it %q is always missing`, i, name, name))
			case kind == base.KindSQS && name == "value":
				warnings = append(warnings, fmt.Sprintf(`filter %d names "value", a Kafka record's field: Lambda filters SQS messages on "body", so to it "value" is always missing`, i))
			}
		}
	}
	return warnings
}

// topFields returns the top-level field names of pattern, a JSON object, in order and once
// each, looking inside "$or", whose elements are patterns at the same level.
func topFields(pattern string) ([]string, error) {
	var names []string
	var walk func(raw []byte) error
	walk = func(raw []byte) error {
		fields, err := splitObject(raw, "pattern")
		if err != nil {
			return err
		}
		for _, f := range fields {
			if f.name != "$or" {
				if !slices.Contains(names, f.name) {
					names = append(names, f.name)
				}
				continue
			}
			var alts []json.RawMessage
			if err := json.Unmarshal(f.value, &alts); err != nil {
				return fmt.Errorf("$or: %w", jsonError(err))
			}
			for _, alt := range alts {
				if err := walk(alt); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return names, walk([]byte(pattern))
}

// filterTestFlags returns the flags of "klt filter test", for its help.
func filterTestFlags() *flag.FlagSet { return newFilterTestFlags(new(filterTestConfig)) }

// filterLintFlags returns the flags of "klt filter lint", for its help.
func filterLintFlags() *flag.FlagSet { return newFilterLintFlags(new(engineFlags)) }
