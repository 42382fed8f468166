package jsondup

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// CheckDuplicateMembers fails when an object anywhere in data, a JSON document named name in
// messages, gives a member twice: encoding/json keeps the last one and other readers the
// first, so a file that depends on which must not be taken. The error is
// "NAME:LINE:COL: member "X" given twice in one object (first at LINE:COL)" at the second one.
// Input that is not valid JSON is left to the caller's decoder, which words its own errors:
// this returns nil for it. The walk is the toolkit's one duplicate finder,
// jsonscan.FindDuplicates, so klt refuses what the decoders' tests do, to the same depth.
func CheckDuplicateMembers(name string, data []byte) error {
	var first *jsonscan.Duplicate
	err := jsonscan.FindDuplicates(data, nil, func(d jsonscan.Duplicate) bool {
		first = &d
		return false
	})
	if first != nil {
		line, col := LineCol(data, first.Offset)
		fl, fc := LineCol(data, first.First)
		return fmt.Errorf("%s:%d:%d: member %q given twice in one object (first at %d:%d)", name, line, col, first.Name, fl, fc)
	}
	if e := (*jsonscan.Error)(nil); errors.As(err, &e) {
		line, col := LineCol(data, int64(e.Offset))
		return fmt.Errorf("%s:%d:%d: nested more than %d deep", name, line, col, jsonscan.MaxDepth)
	}
	return nil // nil, or not JSON: left to the caller's decoder
}

// LineCol returns the 1-based line and column (in bytes) of offset off in data.
func LineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
