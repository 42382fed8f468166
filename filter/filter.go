package filter

import "github.com/kafkalambda/toolkit/limits"

// Option configures Compile, NewCriteria and ParseCriteria. The options are WithEventBridge,
// WithLegacyNumbers and WithRaisedFilterQuota; with none, patterns are checked and matched as
// a Lambda event source mapping does today.
type Option func(*config)

type config struct {
	eventBridge   bool // accept the EventBridge-only operators
	legacyNumbers bool // the older engine's numeric range and precision
	maxFilters    int
}

func newConfig(opts []Option) config {
	c := config{maxFilters: limits.FilterQuota}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithEventBridge accepts the operators EventBridge rules have and Lambda's event source
// mappings do not document: wildcard, cidr, and anything-but with prefix, suffix,
// equals-ignore-case or wildcard. By default Compile rejects them with an *Error that names
// this option, as Lambda's strict operator set does.
func WithEventBridge() Option { return func(c *config) { c.eventBridge = true } }

// WithLegacyNumbers compares numbers as the older engine did (event-ruler before 1.8, used
// from 2022 to mid-2024): numeric operands and event values must lie within -5e9..5e9, and
// only six decimal places count. By default numbers compare over the full float64 range and
// precision, as the current engine does.
func WithLegacyNumbers() Option { return func(c *config) { c.legacyNumbers = true } }

// WithRaisedFilterQuota allows limits.RaisedFilterQuota (10) filters per FilterCriteria, as
// after a quota increase. By default NewCriteria and ParseCriteria take at most
// limits.FilterQuota (5). Compile, which compiles one pattern, has no number of filters to check.
func WithRaisedFilterQuota() Option {
	return func(c *config) { c.maxFilters = limits.RaisedFilterQuota }
}

// Error reports an invalid pattern or FilterCriteria: where (a path in the pattern, such as
// body.price, with the filter's index when it comes from FilterCriteria) and why.
type Error struct {
	// Filter is the index of the filter in FilterCriteria, or -1 for a lone pattern.
	Filter int
	// Path is the pattern path of the bad part, "" for the pattern as a whole.
	Path string
	// Reason says what is wrong.
	Reason string
}

// Error returns "filter: Filters[FILTER]: PATH: REASON", leaving out the parts not known.
func (e *Error) Error() string {
	s := "filter: "
	if e.Filter >= 0 {
		s += "Filters[" + itoa(e.Filter) + "]: "
	}
	if e.Path != "" {
		s += e.Path + ": "
	}
	return s + e.Reason
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
