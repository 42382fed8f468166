package kafkaevent

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// Error reports malformed input and where it is.
//
// Parse returns an *Error when the envelope is malformed, and stores one in Record.Err when a
// record's own field is. Path is a JSON path such as records["orders-0"][3].offset.
type Error struct {
	// Path locates the bad value in the payload.
	Path string
	// Offset is the byte offset of the bad value in the payload.
	Offset int
	// Msg says what is wrong, for example `want integer, got "x"`.
	Msg string
	// Err is the underlying error, if any (a base64.CorruptInputError, say).
	Err error
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "kafkaevent: " + e.Msg
	}
	return "kafkaevent: " + e.Path + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// path returns the JSON path of where the parser is, such as records["orders-0"][3].offset.
func (p *parser) path() string {
	if !p.inPart {
		if p.field == "" {
			return "$"
		}
		if p.field[0] == '[' {
			return "$" + p.field
		}
		return p.field
	}
	var b strings.Builder
	b.WriteString("records[")
	b.WriteString(strconv.Quote(p.partKey))
	b.WriteByte(']')
	if p.recIndex >= 0 {
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(p.recIndex))
		b.WriteByte(']')
		switch {
		case p.field != "":
			b.WriteByte('.')
			b.WriteString(p.field)
			if p.sub != "" {
				b.WriteByte('.')
				b.WriteString(p.sub)
			}
		case p.unknown != nil:
			b.WriteString(jsonscan.Member(string(p.unknown)))
		}
	}
	return b.String()
}

func (p *parser) errAt(off int, format string, args ...any) *Error {
	return &Error{Path: p.path(), Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// syntaxErr reports invalid JSON at the current position.
func (p *parser) syntaxErr(what string) *Error {
	if p.i >= len(p.data) {
		return p.errAt(p.i, "unexpected end of input %s", what)
	}
	return p.errAt(p.i, "invalid character %s %s", quoteChar(p.data[p.i]), what)
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.QuoteRune(rune(c))
	if c >= utf8.RuneSelf {
		s = fmt.Sprintf("byte 0x%02x", c)
	}
	return s
}

// got describes the JSON text at off for an error message: up to 40 bytes of it, on one line,
// quoted and escaped when it holds anything but printable text.
func (p *parser) got(off int) string {
	end := off
	for end < len(p.data) && end-off < 40 {
		c := p.data[end]
		if c == ',' || c == '}' || c == ']' {
			break
		}
		end++
	}
	cut := end-off >= 40 && end < len(p.data)
	for cut && end > off && !utf8.RuneStart(p.data[end]) {
		end-- // do not split a character
	}
	s := strings.TrimSpace(string(p.data[off:end]))
	if s == "" {
		return "nothing"
	}
	s = jsonscan.QuoteText(s)
	if cut {
		s += "..."
	}
	return s
}

// topMember is member for a top-level name: "name" or ["name"].
func topMember(name string) string {
	return strings.TrimPrefix(jsonscan.Member(name), ".")
}

// fieldErr records a malformed record field: the record keeps its place in the batch and
// carries the error. The value at off is skipped (it must still be valid JSON).
func (p *parser) fieldErr(off int, cause error, format string, args ...any) error {
	if p.recErr == nil {
		e := p.errAt(off, format, args...)
		e.Err = cause
		p.recErr = e
	}
	p.i = off
	return p.skipValue(0)
}
