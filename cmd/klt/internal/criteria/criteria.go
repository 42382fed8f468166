package criteria

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/clitext"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/internal/template"
	"github.com/kafkalambda/toolkit/limits"
)

// EngineFlags are the flags that choose the rules of the filter engine, shared by
// "klt filter test" and "klt filter lint".
type EngineFlags struct {
	eventBridge   bool
	legacyNumbers bool
	maxFilters    int
}

// Register adds the flags to fs.
func (e *EngineFlags) Register(fs *flag.FlagSet) {
	fs.BoolVar(&e.eventBridge, "eventbridge", false, "accept the operators of EventBridge rules that Lambda does not document:\n"+
		"wildcard, cidr, and anything-but with prefix, suffix, equals-ignore-case or wildcard")
	fs.BoolVar(&e.legacyNumbers, "legacy-numbers", false, "compare numbers as Lambda's engine did from 2022 to mid-2024: only within\n"+
		"-5e9..5e9, and to six decimal places")
	fs.IntVar(&e.maxFilters, "max-filters", limits.FilterQuota, "allow `N` filters per FilterCriteria: 5, Lambda's default quota, or 10 after a\nquota increase")
}

// Options checks the flags and turns them into filter options.
func (e *EngineFlags) Options() ([]filter.Option, error) {
	var opts []filter.Option
	if e.eventBridge {
		opts = append(opts, filter.WithEventBridge())
	}
	if e.legacyNumbers {
		opts = append(opts, filter.WithLegacyNumbers())
	}
	switch e.maxFilters {
	case limits.FilterQuota:
	case limits.RaisedFilterQuota:
		opts = append(opts, filter.WithRaisedFilterQuota())
	default:
		return nil, fmt.Errorf("--max-filters: want %d (the default quota) or %d (after a quota increase), got %d",
			limits.FilterQuota, limits.RaisedFilterQuota, e.maxFilters)
	}
	return opts, nil
}

// Spec is one FilterCriteria as a SRC argument gives it, before it is compiled.
type Spec struct {
	File      string         // the file, for messages
	Where     string         // "Function.Event" or "Mapping" in a template; "" otherwise
	At        template.Pos   // where the FilterCriteria are in file; Line 0 when not known
	Lone      bool           // file is a single pattern, not FilterCriteria
	Patterns  []string       // the Pattern of each filter, when raw is nil
	Ats       []template.Pos // where each pattern is in file, when known
	Raw       []byte         // FilterCriteria JSON, for filter.ParseCriteria
	ReadErrs  []error        // what cannot be read from a template: *filter.Error for a filter
	EventType string         // the SAM event Type (MSK, SQS ...), when known
}

// Name returns how messages name the FilterCriteria: the file, or TEMPLATE#FUNCTION.EVENT.
func (s *Spec) Name() string {
	if s.Where == "" {
		return s.File
	}
	return s.File + "#" + s.Where
}

// Compile compiles the FilterCriteria. When they are invalid it returns every problem it can
// find: the engine's, which stops at the first, and then those of each filter it did not
// report on, checked alone.
func (s *Spec) Compile(opts []filter.Option) (*filter.Criteria, []error) {
	var c *filter.Criteria
	var err error
	switch {
	case len(s.ReadErrs) > 0:
		err = errors.Join(s.ReadErrs...)
	case s.Raw != nil:
		c, err = filter.ParseCriteria(s.Raw, opts...)
	default:
		c, err = filter.NewCriteria(s.Patterns, opts...)
	}
	if err == nil {
		return c, nil
	}
	problems := clitext.LeafErrors(err)
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
		for _, p := range clitext.LeafErrors(s.checkAlone(i, opts)) {
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
func (s *Spec) filterCount() int {
	if s.Raw == nil {
		return len(s.Patterns)
	}
	return len(s.rawFilters())
}

// checkAlone checks filter i as if it were the only one, for the problems the engine did not
// reach. It returns nil when the filter is valid.
func (s *Spec) checkAlone(i int, opts []filter.Option) error {
	if s.Raw == nil {
		_, err := filter.Compile(s.Patterns[i], opts...)
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
func (s *Spec) rawFilters() []json.RawMessage {
	var fc struct{ Filters []json.RawMessage }
	if err := json.Unmarshal(s.Raw, &fc); err != nil {
		return nil
	}
	return fc.Filters
}

// Problem formats one problem of the FilterCriteria for a "klt: " line:
// "FILE:LINE:COL: WHERE: Filters[I]: PATH: REASON", leaving out what is not known.
func (s *Spec) Problem(err error) string {
	fe, isFilterErr := errors.AsType[*filter.Error](err)
	at := s.At
	if isFilterErr && fe.Filter >= 0 && fe.Filter < len(s.Ats) {
		at = s.Ats[fe.Filter]
	}
	var b strings.Builder
	if at.Line > 0 {
		b.WriteString(at.String())
	} else {
		b.WriteString(s.File)
	}
	b.WriteString(": ")
	if s.Where != "" {
		b.WriteString(s.Where + ": ")
	}
	if !isFilterErr {
		b.WriteString(err.Error())
		return b.String()
	}
	if fe.Filter >= 0 && !s.Lone {
		b.WriteString("Filters[" + strconv.Itoa(fe.Filter) + "]: ")
	}
	if fe.Path != "" {
		b.WriteString(fe.Path + ": ")
	}
	b.WriteString(OptionFlags.Replace(fe.Reason))
	return b.String()
}

// OptionFlags turns the names of filter options in the engine's advice into klt's flags.
var OptionFlags = strings.NewReplacer(
	"WithEventBridge", "--eventbridge",
	"WithLegacyNumbers", "--legacy-numbers",
	"WithRaisedFilterQuota", "--max-filters 10",
)
