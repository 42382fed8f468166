package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Count is a number of records that klt either observed or could not observe. Its zero value
// is [Unobservable]: a count nobody set says "not observed", never 0. In report.json it is a
// number when observed and null when not; the pipeline's "unobservable" statements say why.
//
// Lost, applied twice and order violations are Counts because they are only as good as what
// klt saw: a side effect that leaves the stack (a call to a real API, a write to a table klt
// does not serve) cannot be counted, and a 0 there would claim what nobody checked.
type Count struct {
	n        int64
	observed bool
}

// Unobservable is the Count of something klt could not observe (the zero Count).
var Unobservable = Count{}

// Observed returns the Count of n records, observed.
func Observed(n int64) Count { return Count{n: n, observed: true} }

// Value returns the count and whether it was observed; n is 0 when it was not.
func (c Count) Value() (n int64, observed bool) { return c.n, c.observed }

// IsObserved reports whether the count was observed.
func (c Count) IsObserved() bool { return c.observed }

// Is reports whether the count was observed and is n.
func (c Count) Is(n int64) bool { return c.observed && c.n == n }

// String is the count in decimal, or "UNOBSERVABLE".
func (c Count) String() string {
	if !c.observed {
		return "UNOBSERVABLE"
	}
	return strconv.FormatInt(c.n, 10)
}

// MarshalJSON writes the count as a number, or null when it was not observed.
func (c Count) MarshalJSON() ([]byte, error) {
	if !c.observed {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, c.n, 10), nil
}

// UnmarshalJSON reads a number (observed) or null (unobservable).
func (c *Count) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*c = Unobservable
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("report: a count is a whole number or null: %w", err)
	}
	*c = Observed(n)
	return nil
}
