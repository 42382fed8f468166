package kafkaevent

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
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
	if p.partKey == "" {
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
			b.WriteString(member(string(p.unknown)))
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
	s = quoteText(s)
	if cut {
		s += "..."
	}
	return s
}

// quoteText returns s as it is when it is printable text on one line, and otherwise quoted
// with Go escapes (\n, \x00, \ufeff ...), so that an error message never carries raw binary
// or line breaks from the payload.
func quoteText(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || r == '\ufeff' || !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// member returns the path step for an object member: .name for a name made of letters,
// digits, '_' and '-', and ["name"], quoted and escaped, for any other.
func member(name string) string {
	if name == "" {
		return `[""]`
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return "[" + strconv.Quote(name) + "]"
		}
	}
	return "." + name
}

// topMember is member for a top-level name: "name" or ["name"].
func topMember(name string) string {
	return strings.TrimPrefix(member(name), ".")
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
