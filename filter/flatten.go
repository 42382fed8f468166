package filter

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// The document side of matching: one pass over the JSON text that validates all of it and
// keeps only the values that lie on a path some pattern names (the trie), as leaves. Objects
// elsewhere are skipped without building anything, so matching does not allocate.

type leafKind uint8

const (
	lString leafKind = iota
	lNumber
	lTrue
	lFalse
	lNull
)

type leaf struct {
	kind   leafKind
	fstate uint8 // 0: number not parsed yet; 1: parsed into f; 2: not a comparable number
	deep   bool  // under more than maxTrail arrays: its trail is cut short
	path   int32
	next   int32 // the next leaf with the same path, or -1
	trail  int32 // start of this leaf's array positions in state.trails
	ntrail int32
	f      float64
	val    []byte // the string's bytes, unescaped, or the number's text
}

// arrayPos says that a leaf lies in element pos of the array numbered array, counting arrays
// in document order. Two leaves under one array of objects are in the same element when
// their positions for that array agree.
type arrayPos struct{ array, pos int32 }

// state holds one document's leaves. It is pooled: matching allocates nothing once warm.
type state struct {
	leaves   []leaf
	heads    []int32 // by path: the last leaf with that path, or -1
	trails   []arrayPos
	stack    []arrayPos
	arrays   int32
	buf      []byte
	cands    []int32     // per condition of the conjunction being matched, its candidate leaves
	ranges   []candRange // where each condition's candidates are in cands
	pins     []arrayPos  // array positions fixed by the leaves chosen so far
	steps    int         // search steps of the conjunction being matched
	exceeded error       // why some search gave up (wraps ErrTooComplex): the answer is not known
	legacy   bool
}

var statePool = sync.Pool{New: func() any { return new(state) }}

func getState(npaths int, legacy bool) *state {
	s := statePool.Get().(*state)
	s.leaves, s.trails, s.stack, s.buf = s.leaves[:0], s.trails[:0], s.stack[:0], s.buf[:0]
	s.arrays, s.steps, s.exceeded, s.legacy = 0, 0, nil, legacy
	if cap(s.heads) < npaths {
		s.heads = make([]int32, npaths)
	}
	s.heads = s.heads[:npaths]
	for i := range s.heads {
		s.heads[i] = -1
	}
	return s
}

func putState(s *state) {
	if cap(s.leaves) > 1<<16 || cap(s.buf) > 1<<20 || cap(s.trails) > 1<<16 || cap(s.cands) > 1<<16 {
		return // do not keep the memory of one huge document
	}
	statePool.Put(s)
}

func (s *state) reset() {
	s.leaves, s.trails, s.stack, s.buf = s.leaves[:0], s.trails[:0], s.stack[:0], s.buf[:0]
	s.arrays = 0
	for i := range s.heads {
		s.heads[i] = -1
	}
}

// maxTrail is the deepest nesting of arrays whose positions a leaf keeps. Matching fields
// under arrays of objects element by element needs them; deeper nesting than this is not
// seen in real events, and such leaves make a multi-field match report ErrTooComplex.
const maxTrail = 64

func (s *state) addLeaf(path int, kind leafKind, val []byte) {
	trail := s.stack
	deep := len(trail) > maxTrail
	if deep {
		trail = trail[:maxTrail]
	}
	lf := leaf{kind: kind, path: int32(path), next: s.heads[path], val: val,
		trail: int32(len(s.trails)), ntrail: int32(len(trail)), deep: deep}
	s.trails = append(s.trails, trail...)
	s.heads[path] = int32(len(s.leaves))
	s.leaves = append(s.leaves, lf)
}

// number returns a number leaf's value for numeric comparison; legacy is WithLegacyNumbers.
func (lf *leaf) number(legacy bool) (float64, bool) {
	if lf.fstate == 0 {
		lf.fstate = 2
		if f, ok := parseNumber(lf.val); ok {
			if legacy {
				f, ok = legacyValue(f)
			}
			if ok {
				lf.f, lf.fstate = f, 1
			}
		}
	}
	return lf.f, lf.fstate == 1
}

// parseNumber converts a JSON number. Most numbers in events are short decimals, which are
// converted exactly without strconv (and so without allocating): up to 15 significant digits
// and a power of ten that is itself exact, Clinger's fast path.
func parseNumber(b []byte) (float64, bool) {
	i, neg := 0, false
	if i < len(b) && b[i] == '-' {
		neg, i = true, i+1
	}
	var mant uint64
	digits, exp := 0, 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if digits < 16 {
			mant = mant*10 + uint64(b[i]-'0')
			if mant != 0 {
				digits++
			}
		} else {
			exp++
		}
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if digits < 16 {
				mant = mant*10 + uint64(b[i]-'0')
				if mant != 0 {
					digits++
				}
				exp--
			}
		}
	}
	if i == len(b) && digits <= 15 && exp >= -22 && exp <= 22 {
		f := float64(mant)
		if exp < 0 {
			f /= pow10f[-exp]
		} else {
			f *= pow10f[exp]
		}
		if neg {
			f = -f
		}
		if f == 0 {
			f = 0
		}
		return f, true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	if f == 0 {
		f = 0
	}
	return f, true
}

var pow10f = [23]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
	1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// maxDocDepth is the deepest nesting of objects and arrays a document may have. It is the
// default limit of Jackson (StreamReadConstraints, since 2.15), which the engine behind Lambda
// parses events with: up to it, every parser reads the document alike; beyond it, whether
// Lambda reads the value as JSON, as plain text or not at all is not documented, so the
// answer is not known and matching returns an error wrapping ErrTooComplex. It is a rule of
// matching, below the readers' limit of nesting (jsonscan.MaxDepth), which it keeps filter from
// reaching.
const maxDocDepth = 1000

// syntaxError reports a document that is not valid JSON, in the words of the toolkit's JSON
// reader core (encoding/json's).
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("filter: document is not valid JSON: %s at offset %d", e.msg, e.off)
}

// ErrDocument is wrapped by the error Match returns for a document that is not valid JSON.
var ErrDocument = errors.New("filter: document is not valid JSON")

func (e *syntaxError) Unwrap() error { return ErrDocument }

// fault is the syntax error at d[i], what in encoding/json's words (see jsonscan.SyntaxMessage).
func fault(d []byte, i int, what string) error {
	return &syntaxError{i, jsonscan.SyntaxMessage(d, i, what)}
}

// depthError reports a document that nests deeper than maxDocDepth. The document may be
// valid JSON: it is not known to be invalid, so the error is ErrTooComplex, not ErrDocument.
type depthError struct{ off int }

func (e *depthError) Error() string {
	return fmt.Sprintf("filter: document too complex to match: objects and arrays nest more than %d deep at offset %d", maxDocDepth, e.off)
}

func (e *depthError) Unwrap() error { return ErrTooComplex }

// flatten reads the JSON document d, keeping the leaves on the trie below n. It reads with
// jsonscan's lexer and its steps of the grammar (MemberAt, AfterMember, AfterElement), by
// position, so that the cursor stays in a register.
func (s *state) flatten(d []byte, n *trieNode) error {
	i, err := s.value(d, jsonscan.SkipWS(d, 0), n, 0)
	if err != nil {
		return err
	}
	if i = jsonscan.SkipWS(d, i); i != len(d) {
		return fault(d, i, "after top-level value")
	}
	return nil
}

// value reads the value at d[i], keeping leaves when n (which may be nil) has a path there;
// depth containers are around it.
func (s *state) value(d []byte, i int, n *trieNode, depth int) (int, error) {
	if i >= len(d) {
		return i, fault(d, i, "looking for beginning of value")
	}
	switch c := d[i]; {
	case c == '{', c == '[':
		if depth >= maxDocDepth {
			return i, &depthError{i}
		}
		if c == '{' {
			return s.object(d, i, n, depth+1)
		}
		return s.array(d, i, n, depth+1)
	case c == '"':
		next, flags, serr := jsonscan.StringAt(d, i)
		if serr != jsonscan.StringOK {
			off, what := jsonscan.StringFault(d, next, serr)
			return off, fault(d, off, what)
		}
		if n != nil && n.pathID >= 0 {
			// Bytes that are not valid UTF-8 are kept as they are; only escapes are decoded.
			raw := d[i+1 : next-1]
			if flags&jsonscan.Escaped != 0 {
				raw = s.unescapedCopy(raw)
			}
			s.addLeaf(n.pathID, lString, raw)
		}
		return next, nil
	case c == 't', c == 'f', c == 'n':
		lit, kind := "true", lTrue
		if c == 'f' {
			lit, kind = "false", lFalse
		} else if c == 'n' {
			lit, kind = "null", lNull
		}
		next, ok := jsonscan.Literal(d, i, lit)
		if !ok {
			return next, fault(d, next, jsonscan.LiteralFault(d, i, next, lit))
		}
		if n != nil && n.pathID >= 0 {
			s.addLeaf(n.pathID, kind, nil)
		}
		return next, nil
	case c == '-' || c >= '0' && c <= '9':
		next, nerr := jsonscan.Number(d, i)
		if nerr != jsonscan.NumberOK {
			return next, fault(d, next, nerr.Context())
		}
		if n != nil && n.pathID >= 0 {
			s.addLeaf(n.pathID, lNumber, d[i:next])
		}
		return next, nil
	}
	return i, fault(d, i, "looking for beginning of value")
}

// object reads the object at d[i], the depth-th container.
func (s *state) object(d []byte, i int, n *trieNode, depth int) (int, error) {
	if i = jsonscan.SkipWS(d, i+1); i < len(d) && d[i] == '}' {
		return i + 1, nil
	}
	for {
		name, next, what := jsonscan.MemberAt(d, i)
		if what != "" {
			return next, fault(d, next, what)
		}
		var child *trieNode
		if n != nil {
			key := d[name.Start:name.End]
			if name.Flags&jsonscan.Escaped != 0 {
				key = s.unescaped(key)
			}
			child = n.childBytes(key)
		}
		var err error
		if i, err = s.value(d, next, child, depth); err != nil {
			return i, err
		}
		var more bool
		if i, more, what = jsonscan.AfterMember(d, i); what != "" {
			return i, fault(d, i, what)
		}
		if !more {
			return i, nil
		}
	}
}

// array reads the array at d[i], the depth-th container. Arrays are transparent in paths: their
// elements stand at the array's own path.
func (s *state) array(d []byte, i int, n *trieNode, depth int) (int, error) {
	id := s.arrays
	s.arrays++
	if i = jsonscan.SkipWS(d, i+1); i < len(d) && d[i] == ']' {
		return i + 1, nil
	}
	for pos := int32(0); ; pos++ {
		if n != nil { // positions matter only where leaves are kept
			s.stack = append(s.stack, arrayPos{id, pos})
		}
		var err error
		i, err = s.value(d, i, n, depth)
		if n != nil {
			s.stack = s.stack[:len(s.stack)-1]
		}
		if err != nil {
			return i, err
		}
		var more bool
		var what string
		if i, more, what = jsonscan.AfterElement(d, i); what != "" {
			return i, fault(d, i, what)
		}
		if !more {
			return i, nil
		}
	}
}

// unescaped decodes a string body into a scratch area for a comparison.
func (s *state) unescaped(raw []byte) []byte {
	start := len(s.buf)
	s.buf = jsonscan.AppendUnescaped(s.buf, raw)
	return s.buf[start:]
}

// unescapedCopy decodes a string body for a leaf; the bytes stay valid while the state lives.
func (s *state) unescapedCopy(raw []byte) []byte {
	b := jsonscan.AppendUnescaped(nil, raw)
	return b
}
