package filter

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxSteps bounds the search for array-consistent leaves in one document. Real documents need
// a handful of steps; the bound keeps a hostile document from taking exponential time.
const maxSteps = 1 << 20

// ErrTooComplex is wrapped by the error matching returns when the answer is not known: the
// document nests objects and arrays more than 1000 deep (the limit of the parser behind
// Lambda, beyond which what Lambda does is not documented), a field the pattern names lies
// under more than 64 nested arrays, or so many array elements lie under the pattern's paths
// that checking them element by element would not end in reasonable time. The bool returned
// with it is false and means nothing: the document neither matches nor fails to.
var ErrTooComplex = errors.New("filter: document too complex to match")

// The reasons for ErrTooComplex that matching finds (the depth of the document is
// depthError's).
var (
	errDeepArrays = fmt.Errorf("%w: a field the pattern names lies under more than %d nested arrays",
		ErrTooComplex, maxTrail)
	errTooManySteps = fmt.Errorf("%w: more than %d combinations of array elements under the pattern's paths",
		ErrTooComplex, maxSteps)
)

// Match reports whether the JSON document doc matches the pattern, as EventBridge and
// Lambda's event source mappings match events. It returns an error when doc is not valid
// JSON (errors.Is(err, ErrDocument)) or when the answer is not known
// (errors.Is(err, ErrTooComplex)); the bool is then false.
func (p *Pattern) Match(doc []byte) (bool, error) {
	if p.plan != nil {
		if match, ok, err := p.plan.matchFast(doc, p.root, p.cfg.legacyNumbers); ok {
			return match, err
		}
	}
	return p.matchGeneral(doc)
}

// matchGeneral is Match on the general path: flatten, then the conjunctions.
func (p *Pattern) matchGeneral(doc []byte) (bool, error) {
	s := getState(len(p.paths), p.cfg.legacyNumbers)
	defer putState(s)
	if err := s.flatten(doc, p.root); err != nil {
		return false, err
	}
	ok := p.eval(s, nil, shapeAny)
	if !ok && s.exceeded != nil {
		return false, s.exceeded
	}
	return ok, nil
}

// String returns the pattern's text.
func (p *Pattern) String() string { return p.src }

// docShape is the format of the one field Lambda filters on (the Kafka value, the SQS body):
// a JSON object, plain text, or absent. shapeAny skips the check, for Pattern.Match.
type docShape uint8

const (
	shapeAny docShape = iota
	shapeJSON
	shapePlain
	shapeAbsent
)

// eval reports whether any conjunction matches the leaves in s. pathMap maps the pattern's
// path numbers to the leaves' (nil when they are the same); key and ds describe the shaped
// field for Lambda's format check.
func (p *Pattern) eval(s *state, pathMap []int, ds docShape, key ...string) bool {
	for ci := range p.conjs {
		c := &p.conjs[ci]
		if ds != shapeAny && !shapeOK(c, key[0], ds) {
			continue
		}
		if s.conjMatch(c, pathMap) {
			return true
		}
	}
	return false
}

// shapeOK is Lambda's format check: a pattern that names fields inside the value (an object)
// does not match plain text, and a pattern that lists values for it (a leaf) does not match a
// JSON object.
func shapeOK(c *conj, key string, ds docShape) bool { return shapeFits(c.topShape[key], ds) }

// shapeFits reports whether a document of shape ds can match a pattern whose top-level key
// has shape sh (see shapeOK).
func shapeFits(sh shape, ds docShape) bool {
	switch ds {
	case shapeJSON:
		return sh&shapeLeaf == 0
	case shapePlain:
		return sh&shapeObject == 0
	}
	return true
}

// conjMatch reports whether the leaves satisfy every condition of c together.
//
// Each condition first gets its candidates: the leaves at its path that its value list
// accepts. Without arrays of objects any choice of candidates will do. Under arrays of
// objects, the chosen leaves must lie in the same element of each array they share: the
// search then pins array positions as it chooses leaves, and looks up the candidates that
// agree with the pins in a sorted list rather than trying them all, so that two fields under
// an array of n objects cost n log n, not n squared.
func (s *state) conjMatch(c *conj, pathMap []int) bool {
	n := len(c.conds)
	s.cands, s.ranges, s.pins = s.cands[:0], s.ranges[:0], s.pins[:0]
	trails := false
	for k := range c.conds {
		cd := &c.conds[k]
		path := cd.path
		if pathMap != nil {
			path = pathMap[path]
		}
		start := len(s.cands)
		head := s.heads[path]
		for li := head; li >= 0; li = s.leaves[li].next {
			lf := &s.leaves[li]
			if cd.existsTrue || s.matchAny(cd.ms, lf) {
				s.cands = append(s.cands, li)
				trails = trails || lf.ntrail > 0
			}
		}
		absent := head < 0 && cd.existsFalse
		if len(s.cands) == start && !absent {
			return false
		}
		s.ranges = append(s.ranges, candRange{int32(start), int32(len(s.cands)), absent})
	}
	// Positions matter only when two or more conditions have candidates under arrays.
	if !trails || n < 2 {
		return true
	}
	s.steps = 0
	for k := range s.ranges {
		r := s.ranges[k]
		cs := s.cands[r.start:r.end]
		for _, li := range cs {
			if s.leaves[li].deep {
				s.exceeded = errDeepArrays
				return false
			}
		}
		slices.SortFunc(cs, s.compareTrails)
	}
	ok := s.search(0, n)
	if !ok && s.steps > maxSteps {
		s.exceeded = errTooManySteps
	}
	return ok
}

type candRange struct {
	start, end int32
	absent     bool // satisfied by there being no value at the path
}

func (s *state) trailOf(li int32) []arrayPos {
	lf := &s.leaves[li]
	return s.trails[lf.trail : lf.trail+lf.ntrail]
}

// compareTrails orders leaves by their array positions, outermost first.
func (s *state) compareTrails(a, b int32) int {
	ta, tb := s.trailOf(a), s.trailOf(b)
	for i := 0; i < len(ta) && i < len(tb); i++ {
		if ta[i].array != tb[i].array {
			return int(ta[i].array) - int(tb[i].array)
		}
		if ta[i].pos != tb[i].pos {
			return int(ta[i].pos) - int(tb[i].pos)
		}
	}
	return len(ta) - len(tb)
}

func (s *state) search(k, n int) bool {
	if k == n {
		return true
	}
	r := s.ranges[k]
	if r.absent {
		return s.search(k+1, n)
	}
	return s.tryRange(k, n, s.cands[r.start:r.end], 0)
}

// tryRange tries the candidates cs of condition k, which are sorted by trail and share their
// first level positions. Level by level, a run of candidates in an array that is pinned is
// narrowed by binary search to the pinned element, so that matching fields under arrays of
// objects, however nested, costs n log n rather than n squared.
func (s *state) tryRange(k, n int, cs []int32, level int) bool {
	for i := 0; i < len(cs); {
		t := s.trailOf(cs[i])
		if len(t) <= level {
			// No array at this level: the candidate is placed; try it.
			if s.try(k, n, cs[i]) {
				return true
			}
			if s.steps > maxSteps || s.leaves[cs[i]].ntrail == 0 {
				// A leaf outside any array constrains nothing: no other candidate of this
				// condition can do better for the conditions still to match.
				return false
			}
			i++
			continue
		}
		array := t[level].array
		// The run of candidates in this array ends at the first one in a later array (the
		// order is by array, then position): find it by binary search, not by scanning.
		rest := cs[i:]
		j, _ := slices.BinarySearchFunc(rest, array+1, func(li int32, a int32) int {
			return int(s.trailOf(li)[level].array) - int(a)
		})
		run := rest[:j]
		i += j
		if pos, ok := s.pinned(array); ok {
			byPos := func(li int32, p int32) int { return int(s.trailOf(li)[level].pos) - int(p) }
			lo, _ := slices.BinarySearchFunc(run, pos, byPos)
			hi, _ := slices.BinarySearchFunc(run, pos+1, byPos)
			if s.tryRange(k, n, run[lo:hi], level+1) {
				return true
			}
			continue
		}
		for _, li := range run {
			if s.try(k, n, li) {
				return true
			}
			if s.steps > maxSteps {
				return false
			}
		}
	}
	return false
}

// try chooses leaf li for condition k, if it is consistent with the choices so far, and goes
// on with the next condition.
func (s *state) try(k, n int, li int32) bool {
	s.steps++
	if s.steps > maxSteps {
		return false
	}
	lf := &s.leaves[li]
	if !s.consistent(lf) {
		return false
	}
	mark := len(s.pins)
	s.pin(lf)
	ok := s.search(k+1, n)
	s.pins = s.pins[:mark]
	return ok
}

func (s *state) pinned(array int32) (int32, bool) {
	for _, p := range s.pins {
		if p.array == array {
			return p.pos, true
		}
	}
	return 0, false
}

// consistent reports whether lf agrees with every pinned array position.
func (s *state) consistent(lf *leaf) bool {
	for _, a := range s.trails[lf.trail : lf.trail+lf.ntrail] {
		if pos, ok := s.pinned(a.array); ok && pos != a.pos {
			return false
		}
	}
	return true
}

// pin records lf's array positions.
func (s *state) pin(lf *leaf) {
	for _, a := range s.trails[lf.trail : lf.trail+lf.ntrail] {
		if _, ok := s.pinned(a.array); !ok {
			s.pins = append(s.pins, a)
		}
	}
}

func (s *state) matchAny(ms []matcher, lf *leaf) bool { return matchAny(ms, lf, s.legacy) }

// matchAny reports whether lf meets any matcher of the value list ms; legacy is
// WithLegacyNumbers.
func matchAny(ms []matcher, lf *leaf, legacy bool) bool {
	for i := range ms {
		if matchOne(&ms[i], lf, legacy) {
			return true
		}
	}
	return false
}

func matchOne(m *matcher, lf *leaf, legacy bool) bool {
	switch m.kind {
	case mString:
		return lf.kind == lString && string(lf.val) == m.s
	case mNumber:
		if lf.kind != lNumber {
			return false
		}
		if string(lf.val) == m.s {
			return true
		}
		f, ok := lf.number(legacy)
		return ok && m.hasF && f == m.f
	case mTrue:
		return lf.kind == lTrue
	case mFalse:
		return lf.kind == lFalse
	case mNull:
		return lf.kind == lNull
	case mPrefix:
		return lf.kind == lString && len(lf.val) >= len(m.s) && string(lf.val[:len(m.s)]) == m.s
	case mSuffix:
		return lf.kind == lString && len(lf.val) >= len(m.s) && string(lf.val[len(lf.val)-len(m.s):]) == m.s
	case mPrefixFold:
		return lf.kind == lString && hasPrefixFold(lf.val, m.s)
	case mSuffixFold:
		return lf.kind == lString && hasSuffixFold(lf.val, m.s)
	case mEqualsFold:
		return lf.kind == lString && equalFold(lf.val, m.s)
	case mNotStrings:
		if lf.kind != lString {
			return true
		}
		for _, x := range m.set {
			if string(lf.val) == x {
				return false
			}
		}
		return true
	case mNotNumbers:
		if lf.kind != lNumber {
			return true
		}
		f, ok := lf.number(legacy)
		if !ok {
			return true
		}
		for _, x := range m.nums {
			if f == x {
				return false
			}
		}
		return true
	case mNotPrefix:
		return lf.kind != lString || !(len(lf.val) >= len(m.s) && string(lf.val[:len(m.s)]) == m.s)
	case mNotSuffix:
		return lf.kind != lString || !(len(lf.val) >= len(m.s) && string(lf.val[len(lf.val)-len(m.s):]) == m.s)
	case mNotFold:
		if lf.kind != lString {
			return true
		}
		for _, x := range m.set {
			if equalFold(lf.val, x) {
				return false
			}
		}
		return true
	case mNotWildcard:
		if lf.kind != lString {
			return true
		}
		for _, x := range m.set {
			if wildcardMatch(lf.val, x) {
				return false
			}
		}
		return true
	case mNumeric:
		if lf.kind != lNumber {
			return false
		}
		f, ok := lf.number(legacy)
		if !ok {
			return false
		}
		switch m.loOp {
		case '>':
			if !(f > m.lo) {
				return false
			}
		case 'G':
			if !(f >= m.lo) {
				return false
			}
		}
		switch m.hiOp {
		case '<':
			return f < m.hi
		case 'L':
			return f <= m.hi
		}
		return true
	case mWildcard:
		return lf.kind == lString && wildcardMatch(lf.val, m.s)
	case mCIDR:
		if lf.kind != lString {
			return false
		}
		addr, err := netip.ParseAddr(string(lf.val))
		return err == nil && m.prefix.Contains(addr.Unmap())
	}
	return false
}

// equalFold reports whether b and s are equal under Unicode simple case folding.
func equalFold(b []byte, s string) bool {
	for len(b) > 0 && len(s) > 0 {
		if b[0] < utf8.RuneSelf && s[0] < utf8.RuneSelf {
			x, y := b[0], s[0]
			if x != y && lowerASCII(x) != lowerASCII(y) {
				return false
			}
			b, s = b[1:], s[1:]
			continue
		}
		r1, n1 := utf8.DecodeRune(b)
		r2, n2 := utf8.DecodeRuneInString(s)
		if r1 != r2 && !strings.EqualFold(string(r1), string(r2)) {
			return false
		}
		b, s = b[n1:], s[n2:]
	}
	return len(b) == 0 && len(s) == 0
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// hasPrefixFold reports whether b begins with prefix under Unicode case folding.
func hasPrefixFold(b []byte, prefix string) bool {
	for len(prefix) > 0 {
		if len(b) == 0 {
			return false
		}
		r1, n1 := utf8.DecodeRune(b)
		r2, n2 := utf8.DecodeRuneInString(prefix)
		if r1 != r2 && !strings.EqualFold(string(r1), string(r2)) {
			return false
		}
		b, prefix = b[n1:], prefix[n2:]
	}
	return true
}

// hasSuffixFold reports whether b ends with suffix under Unicode case folding.
func hasSuffixFold(b []byte, suffix string) bool {
	for len(suffix) > 0 {
		if len(b) == 0 {
			return false
		}
		r1, n1 := utf8.DecodeLastRune(b)
		r2, n2 := utf8.DecodeLastRuneInString(suffix)
		if r1 != r2 && !strings.EqualFold(string(r1), string(r2)) {
			return false
		}
		b, suffix = b[:len(b)-n1], suffix[:len(suffix)-n2]
	}
	return true
}

// wildcardMatch matches b against an EventBridge wildcard: '*' stands for any run of bytes,
// '\*' for a star and '\\' for a backslash. Greedy with one backtrack point, so linear in
// practice.
func wildcardMatch(b []byte, pat string) bool {
	bi, pi := 0, 0
	starP, starB := -1, 0
	for bi < len(b) {
		if pi < len(pat) {
			c, w := pat[pi], 1
			if c == '*' {
				starP, starB = pi+1, bi
				pi++
				continue
			}
			if c == '\\' && pi+1 < len(pat) {
				c, w = pat[pi+1], 2
			}
			if b[bi] == c {
				bi++
				pi += w
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starB++
		bi, pi = starB, starP
	}
	for pi < len(pat) && pat[pi] == '*' {
		pi++
	}
	return pi == len(pat)
}
