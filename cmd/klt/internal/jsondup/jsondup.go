package jsondup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// CheckDuplicateMembers fails when an object anywhere in data, a JSON document named name in
// messages, gives a member twice: encoding/json keeps the last one and other readers the
// first, so a file that depends on which must not be taken. The error is
// "NAME:LINE:COL: member "X" given twice in one object (first at LINE:COL)" at the second one.
// Input that is not valid JSON is left to the caller's decoder, which words its own errors:
// this returns nil for it.
func CheckDuplicateMembers(name string, data []byte) error {
	c := dupChecker{name: name, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	err := c.value(0)
	if errors.Is(err, errNotJSON) {
		return nil
	}
	return err
}

// maxJSONDepth is how deep checkDuplicateMembers follows nested objects and arrays: as deep as
// encoding/json decodes.
const maxJSONDepth = 10000

// errNotJSON ends a dupChecker's walk at input that is not valid JSON.
var errNotJSON = errors.New("not JSON")

// dupChecker walks a JSON document token by token for checkDuplicateMembers.
type dupChecker struct {
	name string
	data []byte
	dec  *json.Decoder
}

// value reads one value, at the nesting depth depth, and checks the objects in it.
func (c *dupChecker) value(depth int) error {
	before := c.dec.InputOffset()
	tok, err := c.dec.Token()
	if err != nil {
		return errNotJSON
	}
	if tok != json.Delim('{') && tok != json.Delim('[') {
		return nil
	}
	if depth == maxJSONDepth {
		line, col := LineCol(c.data, before)
		return fmt.Errorf("%s:%d:%d: nested more than %d deep", c.name, line, col, maxJSONDepth)
	}
	var members map[string]int64 // offset of each member's name, in an object
	if tok == json.Delim('{') {
		members = make(map[string]int64)
	}
	for c.dec.More() {
		if members != nil {
			before := c.dec.InputOffset()
			tok, err := c.dec.Token()
			key, ok := tok.(string)
			if err != nil || !ok {
				return errNotJSON
			}
			at := keyStart(c.data, before)
			if first, ok := members[key]; ok {
				line, col := LineCol(c.data, at)
				fl, fc := LineCol(c.data, first)
				return fmt.Errorf("%s:%d:%d: member %q given twice in one object (first at %d:%d)", c.name, line, col, key, fl, fc)
			}
			members[key] = at
		}
		if err := c.value(depth + 1); err != nil {
			return err
		}
	}
	if _, err := c.dec.Token(); err != nil { // the closing '}' or ']'
		return errNotJSON
	}
	return nil
}

// keyStart returns the offset of the '"' that opens the key after offset at: past the
// whitespace and the comma between it and the previous token.
func keyStart(data []byte, at int64) int64 {
	for at < int64(len(data)) && data[at] != '"' {
		at++
	}
	return at
}

// LineCol returns the 1-based line and column (in bytes) of offset off in data.
func LineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
