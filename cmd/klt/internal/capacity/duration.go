package capacity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// String writes d as Go's duration text: "300ms", "1.5s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a number of milliseconds (fractions kept: 0.5 for 500µs), the unit
// of every duration in a plan's JSON.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(d)/float64(time.Millisecond), 'f', -1, 64), nil
}

// UnmarshalJSON reads Go's duration text ("300ms", "1.5s") or a number of milliseconds. A
// number too large for a time.Duration (about 292 years) is an error, not a wrapped value.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("%w: duration %s: %v", ErrInput, b, err)
		}
		return d.UnmarshalText([]byte(s))
	}
	ms, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("%w: duration %s: want text such as \"300ms\" or a number of milliseconds", ErrInput, b)
	}
	ns := ms * float64(time.Millisecond)
	if math.IsNaN(ns) || math.Abs(ns) >= math.MaxInt64 {
		return fmt.Errorf("%w: duration %s ms: out of range", ErrInput, b)
	}
	*d = Duration(math.Round(ns))
	return nil
}

// UnmarshalText reads Go's duration text, for YAML and flags.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%w: duration %q: %v", ErrInput, b, err)
	}
	*d = Duration(v)
	return nil
}
