package kafkaevent

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

func (p *parser) path() string {
	if p.partKey == "" {
		if p.field == "" {
			return "$"
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
			b.WriteByte('.')
			b.WriteString(string(p.unknown))
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

// got describes the JSON value at off for an error message, shortened.
func (p *parser) got(off int) string {
	end := off
	for end < len(p.data) && end-off < 40 {
		c := p.data[end]
		if c == ',' || c == '}' || c == ']' {
			break
		}
		end++
	}
	s := strings.TrimSpace(string(p.data[off:end]))
	if end-off >= 40 {
		s += "..."
	}
	if s == "" {
		return "nothing"
	}
	return s
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
