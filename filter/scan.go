package filter

import (
	"encoding/binary"
	"math/bits"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// The fast path's scan (see pass.go): one pass over the document that validates it as
// flatten does and evaluates the conditions on each value at a pattern's path as it meets
// it. The loops for members and elements read names, colons, commas and scalar values in
// line, in the shapes compact JSON has, and leave anything else (whitespace, escapes, names
// of eight bytes or more) to jsonscan's lexer; nested containers recurse. Every "false" means
// only that the general path must read the document, which then says what is wrong with it.

// SWAR constants for special.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	lows  = 0x7F7F7F7F7F7F7F7F
)

// special returns the high bit of each byte of x that a string's fast path must look at, as
// jsonscan.NextSpecial finds them: '"', '\\', a control character, or a byte from 0x80 up.
func special(x uint64) uint64 {
	t := x & lows // the high bit of each byte cleared, so that sums carry into no neighbour
	ctl := ^(t + 0x60*ones)
	q := t ^ 0x22*ones
	bs := t ^ 0x5C*ones
	return (x | ctl | ^((q + lows) | q) | ^((bs + lows) | bs)) & highs
}

// scalar scans the string, number or literal at d[i] (i < len(d)) and returns the position
// after it and its kind; for a string, flags say what its body holds. ok is false when no
// valid scalar is there.
func scalar(d []byte, i int) (end int, kind leafKind, flags jsonscan.StringFlags, ok bool) {
	switch c := d[i]; c {
	case '"':
		j := i + 1
		for ; len(d)-j >= 8; j += 8 {
			if m := special(binary.LittleEndian.Uint64(d[j:])); m != 0 {
				if j += bits.TrailingZeros64(m) >> 3; d[j] == '"' {
					return j + 1, lString, 0, true
				}
				return stringSlow(d, i)
			}
		}
		if j = jsonscan.NextSpecial(d, j); j < len(d) && d[j] == '"' {
			return j + 1, lString, 0, true
		}
		return stringSlow(d, i)
	case 't':
		return i + 4, lTrue, 0, len(d)-i >= 4 && string(d[i:i+4]) == "true"
	case 'f':
		return i + 5, lFalse, 0, len(d)-i >= 5 && string(d[i:i+5]) == "false"
	case 'n':
		return i + 4, lNull, 0, len(d)-i >= 4 && string(d[i:i+4]) == "null"
	}
	// A number, as jsonscan.Number reads it; exponents are left to it.
	j := i
	if d[j] == '-' {
		j++
	}
	if j < len(d) && d[j] == '0' {
		j++
	} else {
		k := j
		for j < len(d) && d[j]-'0' < 10 {
			j++
		}
		if j == k {
			return j, lNumber, 0, false
		}
	}
	if j < len(d) && d[j] == '.' {
		j++
		k := j
		for j < len(d) && d[j]-'0' < 10 {
			j++
		}
		if j == k {
			return j, lNumber, 0, false
		}
	}
	if j < len(d) && d[j]|0x20 == 'e' {
		next, nerr := jsonscan.Number(d, i)
		return next, lNumber, 0, nerr == jsonscan.NumberOK
	}
	return j, lNumber, 0, true
}

// stringSlow scans the string at d[i] with jsonscan.String, for strings with escapes, bytes
// from 0x80 up, or faults.
func stringSlow(d []byte, i int) (int, leafKind, jsonscan.StringFlags, bool) {
	end, flags, serr := jsonscan.String(d, i)
	return end, lString, flags, serr == jsonscan.StringOK
}

// scalarLeaf evaluates the conditions at trie node n on the scalar d[start:end], inside
// arrays arrays, as leaf does: the value is a string's text, a number's digits.
func (p *pass) scalarLeaf(n *trieNode, arrays int, d []byte, start, end int, kind leafKind, flags jsonscan.StringFlags) {
	lf := leaf{kind: kind}
	switch kind {
	case lString:
		lf.val = d[start+1 : end-1]
		if flags&jsonscan.Escaped != 0 {
			lf.val = jsonscan.AppendUnescaped(p.scratch[:0], lf.val)
		}
	case lNumber:
		lf.val = d[start:end]
	}
	// leaf's loop, here in line.
	p.present |= n.pathBit
	met := &p.free
	if arrays > maxTrail {
		met = &p.deep
	} else if arrays > 0 {
		met = &p.arr
	}
	for k := range n.conds {
		r := &n.conds[k]
		if *met&r.bit != 0 {
			continue
		}
		if r.exact != nil {
			// Only exact strings: matchAny's answer without its switch.
			if kind == lString {
				for _, s := range r.exact {
					if string(lf.val) == s {
						*met |= r.bit
						break
					}
				}
			}
		} else if r.cd.existsTrue || matchAny(r.cd.ms, &lf, p.legacy) {
			*met |= r.bit
		}
	}
}

// value reads the value at d[i] below trie node n (not nil); depth containers and arrays
// arrays are around it. It returns the position after the value, and false when the general
// path must read the document.
func (p *pass) value(d []byte, i int, n *trieNode, depth, arrays int) (int, bool) {
	if i >= len(d) {
		return i, false
	}
	if c := d[i]; c == '{' || c == '[' {
		if depth >= maxDocDepth {
			return i, false
		}
		if c == '{' {
			return p.object(d, i, n, depth+1, arrays)
		}
		return p.array(d, i, n, depth+1, arrays)
	}
	end, kind, flags, ok := scalar(d, i)
	if ok {
		p.badUTF8 = p.badUTF8 || flags&jsonscan.BadUTF8 != 0
		if n.pathBit != 0 {
			p.scalarLeaf(n, arrays, d, i, end, kind, flags)
		}
	}
	return end, ok
}

// object reads the object at d[i] below trie node n, the depth-th container.
func (p *pass) object(d []byte, i int, n *trieNode, depth, arrays int) (int, bool) {
	if i = jsonscan.SkipWS(d, i+1); i < len(d) && d[i] == '}' {
		return i + 1, true
	}
	for {
		// The name: for a plain one of up to seven bytes, one word, and one probe of the
		// node's table.
		var child *trieNode
		var ok bool
		j := i + 1
		if len(d)-j >= 8 && d[i] == '"' {
			w := binary.LittleEndian.Uint64(d[j:])
			m := special(w)
			if l := bits.TrailingZeros64(m) >> 3; m != 0 && d[j+l] == '"' {
				w &= 1<<(8*uint(l)) - 1
				if t := n.table; t != nil {
					if k := &t[(w^uint64(l))*n.mult>>n.shift]; k.word == w && k.n == l {
						child = k.child
					}
				} else {
					child = n.find(w, d[j:j+l])
				}
				j += l + 1
			} else if m == 0 && len(d)-j >= 16 {
				// Eight to fifteen bytes: the second word ends it, the first is the key.
				m2 := special(binary.LittleEndian.Uint64(d[j+8:]))
				if l := 8 + bits.TrailingZeros64(m2)>>3; m2 != 0 && d[j+l] == '"' {
					child = n.find(w, d[j:j+l])
					j += l + 1
				} else if child, j, ok = p.name(d, i, n); !ok {
					return j, false
				}
			} else if child, j, ok = p.name(d, i, n); !ok {
				return j, false
			}
		} else if child, j, ok = p.name(d, i, n); !ok {
			return j, false
		}
		if j+1 < len(d) && d[j] == ':' && d[j+1] > ' ' {
			j++
		} else if j, ok = colon(d, j); !ok {
			return j, false
		}
		if j >= len(d) {
			return j, false
		}
		if c := d[j]; c != '{' && c != '[' {
			// A plain string of up to fifteen bytes takes a word or two here; scalar reads
			// anything else.
			end, kind, flags := 0, lString, jsonscan.StringFlags(0)
			ok = false
			if c == '"' && len(d)-j > 16 {
				at, m := j+1, special(binary.LittleEndian.Uint64(d[j+1:]))
				if m == 0 {
					at, m = j+9, special(binary.LittleEndian.Uint64(d[j+9:]))
				}
				if e := at + bits.TrailingZeros64(m)>>3; m != 0 && d[e] == '"' {
					end, ok = e+1, true
				}
			}
			if !ok {
				if end, kind, flags, ok = scalar(d, j); !ok {
					return end, false
				}
				p.badUTF8 = p.badUTF8 || flags&jsonscan.BadUTF8 != 0
			}
			if child != nil && child.pathBit != 0 {
				p.scalarLeaf(child, arrays, d, j, end, kind, flags)
			}
			i = end
		} else {
			// A container, read straight away: value's and skip's first step.
			switch {
			case depth >= maxDocDepth:
				return j, false
			case child == nil && c == '{':
				i, ok = p.skipObject(d, j, depth+1)
			case child == nil:
				i, ok = p.skipArray(d, j, depth+1)
			case c == '{':
				i, ok = p.object(d, j, child, depth+1, arrays)
			default:
				i, ok = p.array(d, j, child, depth+1, arrays)
			}
			if !ok {
				return i, false
			}
		}
		if i < len(d) && d[i] == ',' {
			if i++; i < len(d) && d[i] <= ' ' {
				i = jsonscan.SkipWS(d, i)
			}
			continue
		}
		if i < len(d) && d[i] == '}' {
			return i + 1, true
		}
		var more bool
		if i, more, ok = after(d, i, '}'); !ok || !more {
			return i, ok
		}
	}
}

// name reads the member name at d[i] that object's fast path does not, and returns the child
// of n of that name (nil when there is none) and the position after the closing quote.
func (p *pass) name(d []byte, i int, n *trieNode) (*trieNode, int, bool) {
	if i >= len(d) || d[i] != '"' {
		return nil, i, false
	}
	end, _, flags, ok := scalar(d, i)
	if !ok {
		return nil, end, false
	}
	p.badUTF8 = p.badUTF8 || flags&jsonscan.BadUTF8 != 0
	key := d[i+1 : end-1]
	if flags&jsonscan.Escaped != 0 {
		key = jsonscan.AppendUnescaped(p.scratch[:0], key)
	}
	var b [8]byte
	copy(b[:], key)
	return n.find(binary.LittleEndian.Uint64(b[:]), key), end, true
}

// colon reads the ':' after a member name ending before d[j], and returns the position of
// the value, whitespace skipped.
func colon(d []byte, j int) (int, bool) {
	if j = jsonscan.SkipWS(d, j); j >= len(d) || d[j] != ':' {
		return j, false
	}
	return jsonscan.SkipWS(d, j+1), true
}

// after reads what follows a member or element at d[i]: ',' (more, and the position of what
// comes next, whitespace skipped) or closing (done, and the position after it).
func after(d []byte, i int, closing byte) (next int, more, ok bool) {
	if i = jsonscan.SkipWS(d, i); i < len(d) {
		switch d[i] {
		case ',':
			return jsonscan.SkipWS(d, i+1), true, true
		case closing:
			return i + 1, false, true
		}
	}
	return i, false, false
}

// array reads the array at d[i] below trie node n, the depth-th container; its elements stand
// at its own path, one array deeper.
func (p *pass) array(d []byte, i int, n *trieNode, depth, arrays int) (int, bool) {
	arrays++
	if i = jsonscan.SkipWS(d, i+1); i < len(d) && d[i] == ']' {
		return i + 1, true
	}
	for {
		var ok, more bool
		if i < len(d) && d[i] != '{' && d[i] != '[' {
			end, kind, flags, ok := scalar(d, i)
			if !ok {
				return end, false
			}
			p.badUTF8 = p.badUTF8 || flags&jsonscan.BadUTF8 != 0
			if n.pathBit != 0 {
				p.scalarLeaf(n, arrays, d, i, end, kind, flags)
			}
			i = end
		} else if i, ok = p.value(d, i, n, depth, arrays); !ok {
			return i, false
		}
		if i < len(d) && d[i] == ',' {
			if i++; i < len(d) && d[i] <= ' ' {
				i = jsonscan.SkipWS(d, i)
			}
			continue
		}
		if i, more, ok = after(d, i, ']'); !ok || !more {
			return i, ok
		}
	}
}

// skip reads the value at d[i], which no pattern looks into, checking that it is valid JSON;
// depth containers are around it.
func (p *pass) skip(d []byte, i, depth int) (int, bool) {
	if i >= len(d) {
		return i, false
	}
	if c := d[i]; c == '{' || c == '[' {
		if depth >= maxDocDepth {
			return i, false
		}
		if c == '{' {
			return p.skipObject(d, i, depth+1)
		}
		return p.skipArray(d, i, depth+1)
	}
	end, _, flags, ok := scalar(d, i)
	p.badUTF8 = p.badUTF8 || flags&jsonscan.BadUTF8 != 0
	return end, ok
}

// skipObject reads the object at d[i], the depth-th container, which no pattern looks into.
func (p *pass) skipObject(d []byte, i, depth int) (int, bool) {
	if i = jsonscan.SkipWS(d, i+1); i < len(d) && d[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return i, false
		}
		j, _, flags, ok := scalar(d, i)
		if !ok {
			return j, false
		}
		p.badUTF8 = p.badUTF8 || flags&jsonscan.BadUTF8 != 0
		if j+1 < len(d) && d[j] == ':' && d[j+1] > ' ' {
			j++
		} else if j, ok = colon(d, j); !ok {
			return j, false
		}
		if i, ok = p.skip(d, j, depth); !ok {
			return i, false
		}
		if i < len(d) && d[i] == ',' {
			if i++; i < len(d) && d[i] <= ' ' {
				i = jsonscan.SkipWS(d, i)
			}
			continue
		}
		var more bool
		if i, more, ok = after(d, i, '}'); !ok || !more {
			return i, ok
		}
	}
}

// skipArray reads the array at d[i], the depth-th container, which no pattern looks into.
func (p *pass) skipArray(d []byte, i, depth int) (int, bool) {
	if i = jsonscan.SkipWS(d, i+1); i < len(d) && d[i] == ']' {
		return i + 1, true
	}
	for {
		var ok, more bool
		if i, ok = p.skip(d, i, depth); !ok {
			return i, false
		}
		if i < len(d) && d[i] == ',' {
			if i++; i < len(d) && d[i] <= ' ' {
				i = jsonscan.SkipWS(d, i)
			}
			continue
		}
		if i, more, ok = after(d, i, ']'); !ok || !more {
			return i, ok
		}
	}
}

// trieKey is a child of a trie node, by its name's length and first eight bytes, so that
// finding a member's name among the children takes a probe and an integer comparison.
type trieKey struct {
	word  uint64 // the name's first eight bytes, little-endian, zero above its length
	n     int
	name  string
	child *trieNode
}

// find returns the child whose name is name, whose first eight bytes, zero-padded, are w.
func (n *trieNode) find(w uint64, name []byte) *trieNode {
	if n.table != nil {
		k := &n.table[(w^uint64(len(name)))*n.mult>>n.shift]
		if k.word == w && k.n == len(name) && (k.n <= 8 || string(name[8:]) == k.name[8:]) {
			return k.child
		}
		return nil
	}
	for k := range n.keys {
		key := &n.keys[k]
		if key.word == w && key.n == len(name) && (key.n <= 8 || string(name[8:]) == key.name[8:]) {
			return key.child
		}
	}
	return nil
}

// index prepares the node and those below it for object and find: the children by name's
// length and first eight bytes, in a table without collisions (a perfect hash) when there is
// one; names that share their length and first eight bytes keep the list.
func (n *trieNode) index() {
	n.keys = n.keys[:0]
	for i, name := range n.names {
		var b [8]byte
		copy(b[:], name)
		n.keys = append(n.keys, trieKey{binary.LittleEndian.Uint64(b[:]), len(name), name, n.children[i]})
		n.children[i].index()
	}
	n.table = nil
	// Multipliers from a fixed xorshift sequence, tables from the number of names up to
	// sixteen slots per name; one table of each size, refilled for each multiplier.
	x := uint64(0x9E3779B97F4A7C15)
	size := 1
	for size < len(n.keys) {
		size *= 2
	}
	for ; size <= 16*max(1, len(n.keys)); size *= 2 {
		shift := uint8(64 - bits.TrailingZeros(uint(size)))
		table := make([]trieKey, size)
		for range 64 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			mult := x | 1
			if fillTable(table, n.keys, mult, shift) {
				n.table, n.mult, n.shift = table, mult, shift
				return
			}
		}
	}
}

// fillTable puts keys into table by the hash of mult and shift, and reports whether no two
// fell into one slot.
func fillTable(table []trieKey, keys []trieKey, mult uint64, shift uint8) bool {
	for h := range table {
		table[h] = trieKey{n: -1} // an empty slot matches no name
	}
	for k := range keys {
		h := (keys[k].word ^ uint64(keys[k].n)) * mult >> shift
		if table[h].n >= 0 {
			return false
		}
		table[h] = keys[k]
	}
	return true
}
