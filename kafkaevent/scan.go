package kafkaevent

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// skipWS moves past whitespace.
func (p *parser) skipWS() { p.i = jsonscan.SkipWS(p.data, p.i) }

// plainJSON reports whether s is written in JSON as itself between quotes, with no escapes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// quoted consumes the JSON string "s" at p.i when it is exactly s with nothing escaped. s must
// be plainJSON.
func (p *parser) quoted(s string) bool {
	if next, ok := quotedAt(p.data, p.i, s); ok {
		p.i = next
		return true
	}
	return false
}

// quotedAt is quoted for d[i:]: it returns the position after "s".
func quotedAt(d []byte, i int, s string) (int, bool) {
	if i+len(s)+2 <= len(d) && d[i] == '"' && string(d[i+1:i+1+len(s)]) == s && d[i+1+len(s)] == '"' {
		return i + len(s) + 2, true
	}
	return 0, false
}

// object reads an object at p.i, calling fn for each member with the position at the member's
// value (whitespace skipped). fn must consume the value. Member names are unescaped.
func (p *parser) object(fn func(name []byte) error) error {
	if p.i >= len(p.data) || p.data[p.i] != '{' {
		return p.syntaxErr("looking for beginning of object")
	}
	p.i++
	p.skipWS()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return nil
	}
	for {
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return p.syntaxErr("looking for beginning of object key string")
		}
		raw, esc, err := p.rawString()
		if err != nil {
			return err
		}
		name := raw
		if esc {
			name = p.unescape(raw)
		}
		p.skipWS()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return p.syntaxErr("after object key")
		}
		p.i++
		p.skipWS()
		if p.i >= len(p.data) {
			return p.syntaxErr("looking for beginning of value")
		}
		if err := fn(name); err != nil {
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

// rawString reads the string at p.i and returns its bytes between the quotes, and esc when they
// must go through unescape to become text: they hold escapes or invalid UTF-8, which unescape
// replaces as encoding/json does.
func (p *parser) rawString() (raw []byte, esc bool, err error) {
	d := p.data
	if p.i >= len(d) || d[p.i] != '"' {
		return nil, false, p.syntaxErr("looking for beginning of string")
	}
	start := p.i
	end, flags, serr := jsonscan.String(d, start)
	switch serr {
	case jsonscan.StringOK:
		p.i = end
		return d[start+1 : end-1], flags.NeedsDecoding(), nil
	case jsonscan.StringBadEscape:
		p.i = min(end+1, len(d)) // the byte after the backslash, as encoding/json reports it
		return nil, false, p.syntaxErr("in string escape code")
	case jsonscan.StringBadUnicode:
		i := end + 2
		for i < len(d) && i < end+6 && jsonscan.IsHex(d[i]) {
			i++
		}
		p.i = i
		return nil, false, p.syntaxErr("in \\u hexadecimal character escape")
	default: // a control character, or the end of the input
		p.i = end
		return nil, false, p.syntaxErr("in string literal")
	}
}

// unescape decodes a string body validated by rawString the way encoding/json does: invalid
// UTF-8 and lone surrogates become U+FFFD. The result lives in a scratch buffer that the next
// call reuses.
func (p *parser) unescape(raw []byte) []byte {
	p.scratch = jsonscan.AppendUnescaped(p.scratch[:0], raw)
	return p.scratch
}

// text returns a string body as a Go string.
func (p *parser) text(raw []byte, esc bool) string {
	if esc {
		return string(p.unescape(raw))
	}
	return string(raw)
}

// intern returns b as a string, allocating once per distinct value in the event: header names,
// timestamp types and schema ids repeat on every record.
func (p *parser) intern(b []byte) string {
	if s, ok := p.strs[string(b)]; ok {
		return s
	}
	if p.strs == nil {
		p.strs = make(map[string]string)
	}
	s := string(b)
	if len(p.strs) < 4096 {
		p.strs[s] = s
	}
	return s
}

// null consumes a JSON null at p.i.
func (p *parser) null() bool {
	if p.i+4 <= len(p.data) && string(p.data[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

// stringOrNull reads a string (ok) or null (not ok); anything else is left unread.
func (p *parser) stringOrNull() (string, bool, error) {
	if p.null() {
		return "", false, nil
	}
	if p.i < len(p.data) && p.data[p.i] == '"' {
		raw, esc, err := p.rawString()
		if err != nil {
			return "", false, err
		}
		return p.text(raw, esc), true, nil
	}
	if err := p.checkValue(p.i); err != nil {
		return "", false, err
	}
	return "", false, nil
}

// integer reads a JSON number that is an integer within int64. On anything else it returns
// false with the position unchanged.
func (p *parser) integer() (int64, bool) {
	i := p.i
	neg := i < len(p.data) && p.data[i] == '-'
	if neg {
		i++
	}
	n, next, ok := uintAt(p.data, i)
	switch {
	case !ok:
		return 0, false
	case neg && n <= 1<<63:
		p.i = next
		return -int64(n), true
	case !neg && n <= math.MaxInt64:
		p.i = next
		return int64(n), true
	}
	return 0, false
}

// uintAt reads the JSON number at d[i:] when it is a non-negative integer below 2^64, and
// returns it with the position after it.
func uintAt(d []byte, i int) (n uint64, next int, ok bool) {
	start := i
	// Offsets and epoch-millisecond timestamps run to 13 digits and more on every record:
	// take up to eight digits per step (see digits8). Sixteen digits cannot overflow.
	for i+8 <= len(d) && i-start < 16 {
		k, v := digits8(binary.LittleEndian.Uint64(d[i:]))
		n = n*pow10[k] + v
		i += k
		if k < 8 {
			break
		}
	}
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		if n > (math.MaxUint64-9)/10 {
			return 0, 0, false
		}
		n = n*10 + uint64(d[i]-'0')
		i++
	}
	if i == start || i-start > 1 && d[start] == '0' {
		return 0, 0, false
	}
	if i < len(d) && (d[i] == '.' || d[i] == 'e' || d[i] == 'E') {
		return 0, 0, false
	}
	return n, i, true
}

var pow10 = [9]uint64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000}

// digits8 reads the ASCII digits at the start of x, eight bytes loaded little-endian: it
// returns how many there are (0 to 8) and their value. Branch-free: the digits are found with
// byte-wise arithmetic and combined with three multiplications (pairs, then quads, then the
// two quads), as in Lemire's "parse eight digits".
func digits8(x uint64) (int, uint64) {
	const (
		ones   = 0x0101010101010101
		zeros  = 0x30 * ones
		highs  = 0xF0 * ones
		lows   = 0x0F * ones
		plus6s = 0x06 * ones
	)
	// A byte is a digit when its high nibble is 3 and its low nibble plus 6 stays below 16.
	notDigit := (x&highs ^ zeros) | ((x&lows + plus6s) & highs)
	k := bits.TrailingZeros64(notDigit) / 8 // 8 when every byte is a digit
	if k == 0 {
		return 0, 0
	}
	// Shift the k digits to the top, so that the bytes below are zeros: leading zero digits.
	v := (x - zeros) << (64 - 8*uint(k))
	v = v*10 + v>>8
	v = ((v&0x000000FF000000FF)*(100+1000000<<32) + (v>>16&0x000000FF000000FF)*(1+10000<<32)) >> 32
	return k, v
}

// checkValue validates the JSON value at off without consuming it, so that a type error on a
// value that is not even JSON is reported as the syntax error it is.
func (p *parser) checkValue(off int) error {
	save := p.i
	p.i = off
	err := p.skipValue(0)
	p.i = save
	return err
}

// skipValue consumes one JSON value, validating it.
func (p *parser) skipValue(depth int) error {
	if depth > maxDepth {
		return p.errAt(p.i, "exceeded max depth %d", maxDepth)
	}
	p.skipWS()
	if p.i >= len(p.data) {
		return p.syntaxErr("looking for beginning of value")
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object(func([]byte) error { return p.skipValue(depth + 1) })
	case c == '[':
		p.i++
		p.skipWS()
		if p.i < len(p.data) && p.data[p.i] == ']' {
			p.i++
			return nil
		}
		for {
			if err := p.skipValue(depth + 1); err != nil {
				return err
			}
			p.skipWS()
			if p.i >= len(p.data) {
				return p.syntaxErr("after array element")
			}
			switch p.data[p.i] {
			case ',':
				p.i++
			case ']':
				p.i++
				return nil
			default:
				return p.syntaxErr("after array element")
			}
		}
	case c == '"':
		_, _, err := p.rawString()
		return err
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
