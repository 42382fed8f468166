package sqsparse

import (
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
		i = jsonscan.NextSpecial(d, i)
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
