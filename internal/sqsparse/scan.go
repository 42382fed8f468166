package sqsparse

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// maxDepth is the deepest nesting of arrays and objects that encoding/json accepts (its scanner's
// maxNestingDepth): a payload that goes deeper is an error there, and so here, and one that does
// not is read here too, however deep its unknown members go.
const maxDepth = 10000

// skipWS moves past whitespace.
func (p *parser) skipWS() { p.i = jsonscan.SkipWS(p.data, p.i) }

// object reads the object at p.i (its '{'), at nesting depth depth (the object itself counted),
// calling fn for each member with p.i at the member's value, whitespace skipped. fn must consume
// the value.
func (p *parser) object(depth int, fn func(name name) error) error {
	if depth > maxDepth {
		return p.errAt(p.i, "nesting exceeds %d levels", maxDepth)
	}
	p.i++ // '{'
	p.skipWS()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return nil
	}
	for {
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return p.syntaxErr("looking for beginning of object key string")
		}
		start := p.i
		end, flags, err := p.scanString()
		if err != nil {
			return err
		}
		p.i = end
		p.skipWS()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return p.syntaxErr("after object key")
		}
		p.i++
		p.skipWS()
		if p.i >= len(p.data) {
			return p.syntaxErr("looking for beginning of value")
		}
		if err := fn(name{start + 1, end - 1, flags}); err != nil {
			return err
		}
		p.skipWS()
		if p.i >= len(p.data) {
			return p.syntaxErr("after object key:value pair")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
			p.skipWS()
		case '}':
			p.i++
			return nil
		default:
			return p.syntaxErr("after object key:value pair")
		}
	}
}

// array reads the array at p.i (its '['), at nesting depth depth, calling fn for each element
// with p.i at the element, whitespace skipped, and its index. fn must consume the element.
func (p *parser) array(depth int, fn func(idx int) error) error {
	if depth > maxDepth {
		return p.errAt(p.i, "nesting exceeds %d levels", maxDepth)
	}
	p.i++ // '['
	p.skipWS()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return nil
	}
	for idx := 0; ; idx++ {
		if p.i >= len(p.data) {
			return p.syntaxErr("looking for beginning of value")
		}
		if err := fn(idx); err != nil {
			return err
		}
		p.skipWS()
		if p.i >= len(p.data) {
			return p.syntaxErr("after array element")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
			p.skipWS()
		case ']':
			p.i++
			return nil
		default:
			return p.syntaxErr("after array element")
		}
	}
}

// scanString checks the JSON string at p.i (its opening quote) and returns the position after
// its closing quote and what its body holds, without moving p.i. On a malformed string it moves
// p.i to the offending byte and returns the syntax error, worded as encoding/json words it.
func (p *parser) scanString() (int, jsonscan.StringFlags, error) {
	d := p.data
	start := p.i
	// Fast path: most strings are printable ASCII with no escapes. Find the closing quote with
	// IndexByte (vectorised) and check the body a word at a time.
	if q := bytes.IndexByte(d[start+1:], '"'); q >= 0 {
		end := start + 1 + q
		if plainASCII(d[start+1 : end]) {
			return end + 1, 0, nil
		}
	}
	end, flags, serr := jsonscan.String(d, start)
	switch serr {
	case jsonscan.StringOK:
		return end, flags, nil
	case jsonscan.StringBadEscape:
		p.i = min(end+1, len(d)) // the byte after the backslash, as encoding/json reports it
		return 0, 0, p.syntaxErr("in string escape code")
	case jsonscan.StringBadUnicode:
		i := end + 2
		for i < len(d) && i < end+6 && jsonscan.IsHex(d[i]) {
			i++
		}
		p.i = i
		return 0, 0, p.syntaxErr("in \\u hexadecimal character escape")
	default: // a control character, or the end of the input
		p.i = end
		return 0, 0, p.syntaxErr("in string literal")
	}
}

// plainASCII reports whether b holds only printable ASCII other than '\' (the caller knows
// there is no '"'): bytes 0x20..0x7F, eight at a time.
func plainASCII(b []byte) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// A byte is below 0x20 when subtracting 0x20 borrows into its high bit (for bytes
		// below 0x80); it is '\' when x^0x5C...5C has a zero byte there.
		bs := x ^ (0x5C * ones)
		bad := (x - 0x20*ones) | (bs-ones)&^bs | x
		if bad&highs != 0 {
			return false
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// str reads the JSON string at p.i and returns its text in a new string.
func (p *parser) str() (string, error) {
	start := p.i
	end, flags, err := p.scanString()
	if err != nil {
		return "", err
	}
	p.i = end
	return string(p.nameBytes(name{start + 1, end - 1, flags})), nil
}

// unescape decodes a string body checked by scanString into the scratch buffer, which the next
// call reuses.
func (p *parser) unescape(raw []byte, flags jsonscan.StringFlags) []byte {
	p.scratch = appendUnescaped(p.scratch[:0], raw, flags)
	return p.scratch
}

// appendUnescaped appends the text of a string body checked by scanString to b: escapes
// decoded, invalid UTF-8 and lone surrogates turned into U+FFFD, as encoding/json does.
func appendUnescaped(b, raw []byte, flags jsonscan.StringFlags) []byte {
	if flags&jsonscan.BadUTF8 != 0 {
		return jsonscan.AppendUnescaped(b, raw)
	}
	// Valid UTF-8: copy the runs between escapes whole.
	for {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 {
			return append(b, raw...)
		}
		b = append(b, raw[:k]...)
		raw = raw[k:]
		n := escapeLen(raw)
		b = jsonscan.AppendUnescaped(b, raw[:n])
		raw = raw[n:]
	}
}

// escapeLen returns the length of the escape at the start of raw, a string body checked by
// scanString, taking every \uXXXX escape of a run at once: a surrogate pair is two escapes that
// make one character, and which escape pairs with which depends on those before it.
func escapeLen(raw []byte) int {
	if raw[1] != 'u' {
		return 2
	}
	n := 6
	for len(raw) >= n+6 && raw[n] == '\\' && raw[n+1] == 'u' {
		n += 6
	}
	return n
}

// appendString reads the JSON string at p.i and appends its text to p.text, returning where
// the text is in p.text. Strings of printable ASCII, with or without escapes, are checked and
// decoded in one pass, eight bytes at a time between escapes; any other goes through
// scanString, which also words the errors.
func (p *parser) appendString() (int, int, error) {
	d := p.data
	start := p.i
	off := len(p.text)
	i := start + 1
	run := i
	for {
		i = nextSpecial(d, i)
		if i >= len(d) {
			break
		}
		c := d[i]
		if c == '"' {
			p.text = append(p.text, d[run:i]...)
			p.i = i + 1
			return off, len(p.text), nil
		}
		if c != '\\' || i+1 >= len(d) {
			break // a control character or non-ASCII: the general path
		}
		p.text = append(p.text, d[run:i]...)
		switch e := d[i+1]; e {
		case '"', '\\', '/':
			p.text = append(p.text, e)
		case 'b':
			p.text = append(p.text, '\b')
		case 'f':
			p.text = append(p.text, '\f')
		case 'n':
			p.text = append(p.text, '\n')
		case 'r':
			p.text = append(p.text, '\r')
		case 't':
			p.text = append(p.text, '\t')
		case 'u':
			j := i
			for j+6 <= len(d) && d[j] == '\\' && d[j+1] == 'u' &&
				jsonscan.IsHex(d[j+2]) && jsonscan.IsHex(d[j+3]) && jsonscan.IsHex(d[j+4]) && jsonscan.IsHex(d[j+5]) {
				j += 6
			}
			if j == i {
				p.text = p.text[:off]
				return p.appendStringSlow(start, off)
			}
			p.text = jsonscan.AppendUnescaped(p.text, d[i:j])
			i, run = j, j
			continue
		default:
			p.text = p.text[:off]
			return p.appendStringSlow(start, off)
		}
		i += 2
		run = i
	}
	p.text = p.text[:off]
	return p.appendStringSlow(start, off)
}

// appendStringSlow is appendString for any string, valid or not.
func (p *parser) appendStringSlow(start, off int) (int, int, error) {
	p.i = start
	end, flags, err := p.scanString()
	if err != nil {
		return 0, 0, err
	}
	p.i = end
	raw := p.data[start+1 : end-1]
	if flags.NeedsDecoding() {
		p.text = appendUnescaped(p.text, raw, flags)
	} else {
		p.text = append(p.text, raw...)
	}
	return off, len(p.text), nil
}

// nextSpecial returns the position of the first byte at or after i that a string's fast path
// must look at: '"', '\\', a control character or a byte from 0x80 up; len(d) when there is none.
func nextSpecial(d []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
		lows  = 0x7F7F7F7F7F7F7F7F
	)
	for ; i+8 <= len(d); i += 8 {
		x := binary.LittleEndian.Uint64(d[i:])
		t := x & lows               // the high bit of each byte cleared, so that sums carry into no neighbour
		ctl := ^(t + 0x60*ones)     // high bit set where t < 0x20
		q := t ^ 0x22*ones          // zero where t == '"'
		bs := t ^ 0x5C*ones         // zero where t == '\\'
		quote := ^((q + lows) | q)  // high bit set where q == 0
		back := ^((bs + lows) | bs) // high bit set where bs == 0
		if m := (x | ctl | quote | back) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(d); i++ {
		if c := d[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return i
		}
	}
	return i
}

// name is an object member's name: the body of its string, d[start:end], and what it holds.
type name struct {
	start, end int
	flags      jsonscan.StringFlags
}

// nameBytes returns the text of a member name: its body when it needs no decoding, else its
// decoding in the scratch buffer.
func (p *parser) nameBytes(n name) []byte {
	if !n.flags.NeedsDecoding() {
		return p.data[n.start:n.end]
	}
	return p.unescape(p.data[n.start:n.end], n.flags)
}

// nullLit consumes the null at p.i, or reports the syntax error there.
func (p *parser) nullLit() error {
	if p.null() {
		return nil
	}
	return p.literal("null")
}

// null consumes a JSON null at p.i.
func (p *parser) null() bool {
	if p.i+4 <= len(p.data) && string(p.data[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

// checkValue validates the JSON value at p.i, at nesting depth depth, without consuming it,
// so that a type error on text that is not even JSON is reported as the syntax error it is.
func (p *parser) checkValue(depth int) error {
	save := p.i
	err := p.skipValue(depth)
	if err == nil {
		p.i = save
	}
	return err
}

// skipValue consumes one JSON value at nesting depth depth (the containers around it),
// validating it.
func (p *parser) skipValue(depth int) error {
	p.skipWS()
	if p.i >= len(p.data) {
		return p.syntaxErr("looking for beginning of value")
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object(depth+1, func(name) error { return p.skipValue(depth + 1) })
	case c == '[':
		return p.array(depth+1, func(int) error { return p.skipValue(depth + 1) })
	case c == '"':
		end, _, err := p.scanString()
		if err != nil {
			return err
		}
		p.i = end
		return nil
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		return p.syntaxErr("looking for beginning of value")
	}
}

func (p *parser) literal(lit string) error {
	i, ok := jsonscan.Literal(p.data, p.i, lit)
	p.i = i
	if !ok {
		return p.syntaxErr("in literal " + lit)
	}
	return nil
}

// number consumes a JSON number per RFC 8259.
func (p *parser) number() error {
	i, err := jsonscan.Number(p.data, p.i)
	p.i = i
	if err != jsonscan.NumberOK {
		return p.syntaxErr(err.Context())
	}
	return nil
}
