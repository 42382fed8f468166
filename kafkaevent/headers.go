package kafkaevent

import (
	"strconv"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

func (p *parser) headerList(off int) ([]Header, error) {
	if p.Null() {
		return nil, nil
	}
	if p.Pos >= len(p.Data) || p.Data[p.Pos] != '[' {
		if err := p.checkValue(off, 4); err != nil {
			return nil, err
		}
		return nil, p.fieldErr(off, 4, nil, "want array of header objects, got %s", p.Got(off))
	}
	start := len(p.headers)
	p.Pos++
	p.SkipWS()
	if p.Pos < len(p.Data) && p.Data[p.Pos] == ']' {
		p.Pos++
		return nil, nil
	}
	for idx := 0; ; idx++ {
		hoff := p.Pos
		if p.Pos >= len(p.Data) || p.Data[p.Pos] != '{' {
			if err := p.checkValue(hoff, 5); err != nil {
				return nil, err
			}
			p.field = nameHeaders + "[" + strconv.Itoa(idx) + "]"
			if err := p.fieldErr(hoff, 5, nil, "want header object, got %s", p.Got(hoff)); err != nil {
				return nil, err
			}
		} else {
			// Headers repeat from record to record (a content type, a schema version):
			// remember the text of the element seen at this position and the header it gave,
			// and when the next record has the same text, copy the header instead of decoding.
			slot := &p.hcache[idx%len(p.hcache)]
			if n := len(slot.raw); n > 0 && hoff+n <= len(p.Data) && string(p.Data[hoff:hoff+n]) == string(slot.raw) {
				h := Header{Key: slot.name}
				if slot.value != nil {
					h.Value = p.copyBytes(slot.value)
				}
				p.headers = append(p.headers, h)
				p.Pos = hoff + n
			} else {
				before, hadErr := len(p.headers), p.recErr != nil
				err := p.Object(6, func(n jsonscan.Name) error {
					voff := p.Pos
					h := Header{Key: p.intern(p.NameBytes(n))}
					if !p.Null() {
						v, ok := p.byteList()
						if !ok {
							p.field = nameHeaders + "[" + strconv.Itoa(idx) + "]" + jsonscan.Member(h.Key)
							if err := p.checkValue(voff, 6); err != nil {
								return err
							}
							if err := p.fieldErr(voff, 6, nil, "want array of byte numbers -128..255, got %s", p.Got(voff)); err != nil {
								return err
							}
							p.field = nameHeaders
							return nil
						}
						h.Value = v
					}
					p.headers = append(p.headers, h)
					return nil
				})
				if err != nil {
					return nil, err
				}
				slot.raw = nil
				if len(p.headers) == before+1 && !hadErr && p.recErr == nil {
					slot.raw, slot.name, slot.value = p.Data[hoff:p.Pos], p.headers[before].Key, p.headers[before].Value
				}
			}
		}
		more, err := p.NextElement()
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
	}
	end := len(p.headers)
	if end == start {
		return nil, nil
	}
	return p.headers[start:end:end], nil
}

// byteList reads [n, n, ...] with each n in -128..255 into the arena. On anything else it
// returns false and leaves the position to the caller.
//
// Header values are lists of small numbers on every record, so the common form, numbers of one
// to three digits separated by commas without spaces, is read with few branches; anything else
// goes through byteListSlow.
func (p *parser) byteList() ([]byte, bool) {
	d := p.Data
	if p.Pos >= len(d) || d[p.Pos] != '[' {
		return nil, false
	}
	i := p.Pos + 1
	if i+1 < len(d) && d[i] == ']' {
		p.Pos = i + 1
		return p.takeArena(0), true
	}
	l := len(p.arena)
	for {
		if i+4 > len(d) || cap(p.arena)-len(p.arena) < 1 {
			p.arena = p.arena[:l]
			return p.byteListSlow()
		}
		neg := d[i] == '-'
		if neg {
			i++
			if i+4 > len(d) {
				p.arena = p.arena[:l]
				return p.byteListSlow()
			}
		}
		s := d[i : i+4 : i+4]
		v0, v1, v2 := uint(s[0])-'0', uint(s[1])-'0', uint(s[2])-'0'
		if v0 > 9 || v0 == 0 && v1 <= 9 {
			p.arena = p.arena[:l]
			return p.byteListSlow()
		}
		n, w := v0, 1
		if v1 <= 9 {
			n, w = n*10+v1, 2
			if v2 <= 9 {
				n, w = n*10+v2, 3
			}
		}
		next := s[w]
		if next <= '9' && next >= '0' || next == '.' || next == 'e' || next == 'E' || n > 255 || neg && n > 128 {
			p.arena = p.arena[:l]
			return p.byteListSlow()
		}
		b := byte(n)
		if neg {
			b = -b
		}
		p.arena = append(p.arena, b)
		i += w + 1
		if next == ',' {
			continue
		}
		if next == ']' {
			break
		}
		p.arena = p.arena[:l]
		return p.byteListSlow()
	}
	p.Pos = i
	n := len(p.arena) - l
	return p.arena[l : l+n : l+n], true
}

// byteListSlow is byteList for any valid form: spaces, numbers near the end of the input, and
// the checks that make a value out of range an error.
func (p *parser) byteListSlow() ([]byte, bool) {
	d := p.Data
	i := p.Pos
	if i >= len(d) || d[i] != '[' {
		return nil, false
	}
	i++
	buf := p.hbuf[:0]
	for {
		for i < len(d) && jsonscan.IsSpace(d[i]) {
			i++
		}
		if i < len(d) && d[i] == ']' && len(buf) == 0 {
			i++
			break
		}
		neg := false
		if i < len(d) && d[i] == '-' {
			neg = true
			i++
		}
		j := i
		n := 0
		for j < len(d) && d[j] >= '0' && d[j] <= '9' && j-i < 4 {
			n = n*10 + int(d[j]-'0')
			j++
		}
		if j == i || j-i > 3 || (d[i] == '0' && j-i > 1) || j < len(d) && (d[j] == '.' || d[j] == 'e' || d[j] == 'E') {
			return nil, false
		}
		if neg {
			n = -n
		}
		if n < -128 || n > 255 {
			return nil, false
		}
		buf = append(buf, byte(n))
		i = j
		for i < len(d) && jsonscan.IsSpace(d[i]) {
			i++
		}
		if i < len(d) && d[i] == ',' {
			i++
			continue
		}
		if i < len(d) && d[i] == ']' {
			i++
			break
		}
		return nil, false
	}
	p.hbuf = buf
	p.Pos = i
	return p.copyBytes(buf), true
}
