package kafkaevent

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// Error reports malformed input and where it is. It is the toolkit's one error for "the JSON
// at this path is wrong", the SQS event decoding of package batch's too, so that one
// errors.As finds either.
//
// Parse returns an *Error when the envelope is malformed, and stores one in Record.Err when a
// record's own field is; FromAWS returns one too. Its fields:
//
//   - Prefix is "kafkaevent" in the errors of this package, and begins the message;
//   - Path locates the bad value, a JSON path such as records["orders-0"][3].offset ("$" is
//     the whole payload);
//   - Offset is the byte offset of the bad value in the payload, -1 for FromAWS;
//   - Msg says what is wrong, for example `want integer, got "x"`;
//   - Err is the underlying error, if any (a base64.CorruptInputError, say).
//
// The message is "kafkaevent: PATH: MSG".
type Error = jsonscan.Error

// prefix begins the message of every error of this package.
const prefix = "kafkaevent"

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
	return &Error{Prefix: prefix, Path: p.path(), Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// Fail is the Reader's Failer: a syntax error, with the path of where the parser is.
func (p *parser) Fail(off int, msg string) error {
	return &Error{Prefix: prefix, Path: p.path(), Offset: off, Msg: msg}
}

// topMember is member for a top-level name: "name" or ["name"].
func topMember(name string) string {
	return strings.TrimPrefix(jsonscan.Member(name), ".")
}

// fieldErr records a malformed record field: the record keeps its place in the batch and
// carries the error. The value at off is skipped (it must still be valid JSON).
// The value is at nesting depth depth.
func (p *parser) fieldErr(off, depth int, cause error, format string, args ...any) error {
	if p.recErr == nil {
		e := p.errAt(off, format, args...)
		e.Err = cause
		p.recErr = e
	}
	p.Pos = off
	return p.SkipValue(depth)
}
