package metrics

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"strconv"
	"sync"
)

// The few pieces of JSON a document needs, appended to one buffer with no map and no
// reflection: a batch of package batch or a Dispatch of package fanout writes one document,
// and it must cost little next to a batch of no-op handlers (docs/performance.md).

// appendString appends s as a JSON string, as encoding/json writes it (with its HTML
// escaping), so that a document reads as encoding/json would have written it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plain[s[i]] {
			q, _ := json.Marshal(s) // a string cannot fail
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plain holds the bytes encoding/json writes as they are: printable ASCII but for '"', '\\'
// and the three it escapes for HTML. A table lookup a byte costs less than the comparisons.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendFloat appends f as encoding/json writes a float64: the shortest decimal that reads
// back as f, in exponent form below 1e-6 and from 1e21. NaN and the infinities, which JSON
// cannot hold, are written as 0; Add refuses them before they get here.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 && !math.Signbit(f) { // a count, as most values are: -0 goes on, as encoding/json writes it
		return strconv.AppendInt(b, int64(f), 10)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-07 -> e-7, as encoding/json
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

var stdoutMu sync.Mutex // one line at a time on standard output, whichever Metrics writes it

// writeLine writes one document to w. Lines written to os.Stdout, which CloudWatch Logs reads
// line by line, are written one at a time across every Metrics of the process (the
// function's own and those of packages batch and fanout), so that no two interleave.
func writeLine(w io.Writer, line []byte) error {
	if w == os.Stdout {
		stdoutMu.Lock()
		defer stdoutMu.Unlock()
	}
	_, err := w.Write(line)
	return err
}
