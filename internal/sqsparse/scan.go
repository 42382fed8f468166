package sqsparse

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// The reading of values, objects, arrays and the errors about them is jsonscan.Reader's,
// which parser embeds; what is here is the SQS parser's own: it gathers the text of a batch's
// strings in one buffer (see flush).

// appendString reads the JSON string at p.Pos and appends its text to p.text, returning where
// the text is in p.text. Strings of printable ASCII, with or without escapes, are checked and
// decoded in one pass, eight bytes at a time between escapes; any other goes through
// scanString, which also words the errors.
func (p *parser) appendString() (int, int, error) {
	d := p.Data
	start := p.Pos
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
			p.Pos = i + 1
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
	p.Pos = start
	end, flags, err := p.ScanString()
	if err != nil {
		return 0, 0, err
	}
	p.Pos = end
	raw := p.Data[start+1 : end-1]
	if flags.NeedsDecoding() {
		p.text = jsonscan.AppendText(p.text, raw, flags)
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
