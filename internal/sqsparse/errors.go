package sqsparse

import (
	"fmt"
	"strings"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// The errors of Parse are *jsonscan.Error values (the type of kafkaevent.Error, the toolkit's
// one error for "the JSON at this path is wrong"), with the prefix "SQS event": the message is
// "SQS event: PATH: MSG". PATH locates the bad value, Records[3].messageAttributes.trace.binaryValue
// say, "$" for the whole payload; MSG quotes the offending text on one line.
const prefix = "SQS event"

// where is the parser's position in the event's tree, kept for error paths only. Each level is
// set on the way in and cleared on the way out.
type where struct {
	top   string        // the top-level member being read ("Records", or an unknown one)
	rec   int           // index in Records, or -1
	field string        // member of the message
	key   jsonscan.Name // member of attributes or messageAttributes
	inKey bool          // whether key is set
	sub   string        // member of a message attribute
	idx   int           // index in a list or byte array, or -1
	idx2  int           // index in a byte array inside a list, or -1
}

// path returns the JSON path of where the parser is.
func (p *parser) path() string {
	w := &p.w
	if w.top == "" {
		return "$"
	}
	var b strings.Builder
	b.WriteString(strings.TrimPrefix(jsonscan.Member(w.top), "."))
	if w.rec >= 0 {
		fmt.Fprintf(&b, "[%d]", w.rec)
		if w.field != "" {
			b.WriteString(jsonscan.Member(w.field))
			if w.inKey {
				b.WriteString(jsonscan.Member(string(p.NameBytes(w.key))))
				if w.sub != "" {
					b.WriteString(jsonscan.Member(w.sub))
				}
			}
		}
	}
	if w.idx >= 0 {
		fmt.Fprintf(&b, "[%d]", w.idx)
	}
	if w.idx2 >= 0 {
		fmt.Fprintf(&b, "[%d]", w.idx2)
	}
	return b.String()
}

func (p *parser) errAt(off int, format string, args ...any) *jsonscan.Error {
	return &jsonscan.Error{Prefix: prefix, Path: p.path(), Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// Fail is the Reader's Failer: a syntax error, with the path of where the parser is.
func (p *parser) Fail(off int, msg string) error {
	return &jsonscan.Error{Prefix: prefix, Path: p.path(), Offset: off, Msg: msg}
}

// typeErr reports a valid JSON value at p.Pos of the wrong type for where it is, or the syntax
// error when the text there is not valid JSON.
func (p *parser) typeErr(depth int, want string) error {
	if err := p.CheckValue(depth); err != nil {
		return err
	}
	return p.errAt(p.Pos, "want %s, got %s", want, p.Got(p.Pos))
}
