package filter

import (
	"math/bits"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// The one-pass matcher. The general path (flatten, then conjMatch for each conjunction)
// collects every value on a pattern's path as a leaf, with its array positions, and then
// searches the leaves for each conjunction. Most documents need far less: a conjunction whose
// values lie outside arrays of objects matches exactly when each of its conditions is met by
// some value, whichever. So the fast path evaluates every condition on a value as the scan
// meets it, keeping one bit per condition (met by a value outside any array, met inside one,
// met more than maxTrail arrays deep) and one per path (some value is there), and decides
// each conjunction from the bits after the scan, without storing a leaf or touching a pool.
//
// The fast path is an optimisation, never a second semantics: whenever its bits cannot
// decide as the general path would (two or more conditions met only inside arrays, where the
// element positions matter; a document that is not valid JSON or nests too deep, whose error
// the general path words; criteria with more than 64 conditions or paths), it gives up and
// the caller runs the general path on the same input, which then answers. Its scan is at
// least as strict as flatten (what it accepts, flatten accepts, with the same values), and its
// decision mirrors conjMatch line by line; TestFastPathAgrees and the fuzz and differential
// tests compare the two on every input they make.

// maxPlanBits is the most conditions, and paths, a plan holds: one bit each in a uint64.
const maxPlanBits = 64

// plan is the fast path's view of compiled patterns: their conditions numbered once (the
// copies $or expansion makes share a number), and for each filter its conjunctions as masks
// of those numbers. The trie nodes of the paths point back at their conditions.
type plan struct {
	conds   []planCond
	filters [][]planConj
}

type planCond struct {
	cd      *cond
	pathBit uint64 // the bit of the condition's path
}

// planConj is a conjunction: the bits of its conditions, their number as conjMatch counts
// them, and its use of the top-level fields "value" and "body" for Lambda's format check.
type planConj struct {
	mask              uint64
	required          uint64 // the conditions other than {"exists": false}, which absence meets
	n                 int
	topValue, topBody shape
}

// condRef is a condition at a trie node: the one path it tests. exact lists the strings of
// a value list of exact strings alone (the usual one), which scalarLeaf compares without
// matchAny; nil for any other.
type condRef struct {
	bit   uint64
	cd    *cond
	exact []string
}

func newCondRef(id int, cd *cond) condRef {
	r := condRef{bit: 1 << id, cd: cd}
	if cd.existsTrue || len(cd.ms) == 0 {
		return r
	}
	exact := make([]string, 0, len(cd.ms))
	for i := range cd.ms {
		if cd.ms[i].kind != mString {
			return r
		}
		exact = append(exact, cd.ms[i].s)
	}
	r.exact = exact
	return r
}

// newPlan numbers the conditions of pats, whose paths (mapped by pathMaps, nil for none) are
// the trie below root. It returns nil when there are more conditions or paths than a plan
// holds: the general path then serves every document.
func newPlan(root *trieNode, pats []*Pattern, pathMaps [][]int) *plan {
	type condKey struct {
		path        int
		ms          *matcher
		nms         int
		exists, not bool
	}
	nodes := map[int]*trieNode{}
	root.walk(func(n *trieNode) {
		if n.pathID >= 0 {
			nodes[n.pathID] = n
		}
	})
	if len(nodes) > maxPlanBits {
		return nil
	}
	pl := &plan{}
	index := map[condKey]int{}
	refs := map[*trieNode][]condRef{}
	for i, p := range pats {
		var conjs []planConj
		for ci := range p.conjs {
			c := &p.conjs[ci]
			pc := planConj{n: len(c.conds)}
			pc.topValue, pc.topBody = c.topShape["value"], c.topShape["body"]
			for k := range c.conds {
				cd := &c.conds[k]
				path := cd.path
				if pathMaps != nil {
					path = pathMaps[i][path]
				}
				key := condKey{path: path, nms: len(cd.ms), exists: cd.existsTrue, not: cd.existsFalse}
				if len(cd.ms) > 0 {
					key.ms = &cd.ms[0]
				}
				id, ok := index[key]
				if !ok {
					id = len(pl.conds)
					if id == maxPlanBits {
						return nil
					}
					index[key] = id
					n := nodes[path]
					pl.conds = append(pl.conds, planCond{cd: cd, pathBit: 1 << path})
					refs[n] = append(refs[n], newCondRef(id, cd))
				}
				pc.mask |= 1 << id
				if !cd.existsFalse {
					pc.required |= 1 << id
				}
			}
			conjs = append(conjs, pc)
		}
		pl.filters = append(pl.filters, conjs)
	}
	for path, n := range nodes {
		n.pathBit = 1 << path
		n.conds = refs[n]
	}
	return pl
}

// shapeOK is the package's shapeOK for the planned conjunction.
func (cj *planConj) shapeOK(key string, ds docShape) bool {
	var sh shape
	switch key {
	case "value":
		sh = cj.topValue
	case "body":
		sh = cj.topBody
	}
	return shapeFits(sh, ds)
}

// verdict is the fast path's answer for a conjunction or a filter.
type verdict uint8

const (
	no verdict = iota
	yes
	unknown // the bits do not decide: the general path must
)

// pass is one document's scan on the fast path. It lives on the caller's stack.
type pass struct {
	pl     *plan
	legacy bool
	// badUTF8 is set when some string holds bytes that are not valid UTF-8.
	badUTF8 bool
	// present has the bit of every path some value lies on; free, arr and deep the bits of
	// the conditions some value meets outside any array, inside 1 to maxTrail arrays, and
	// inside more.
	present, free, arr, deep uint64
	exceeded                 error    // errDeepArrays, as conjMatch sets it
	scratch                  [64]byte // for unescaping a name or value: most fit
}

// document scans the JSON document d below trie node n, evaluating the conditions on its
// values. It reports false when the general path must read d instead.
func (p *pass) document(d []byte, n *trieNode) bool {
	i, ok := p.value(d, jsonscan.SkipWS(d, 0), n, 0, 0)
	return ok && jsonscan.SkipWS(d, i) == len(d)
}

// filter decides filter i as Pattern.eval does, with key and ds describing the shaped field.
func (p *pass) filter(i int, key string, ds docShape) verdict {
	has, under := p.free|p.arr|p.deep, p.arr|p.deep
	conjs := p.pl.filters[i]
	for k := range conjs {
		cj := &conjs[k]
		if ds != shapeAny && !cj.shapeOK(key, ds) {
			continue
		}
		// The usual answers of conj, here in line: every condition met, none under arrays
		// or only one condition; or a condition that only a value can meet not met.
		missing := cj.mask &^ has
		if missing == 0 && (cj.n < 2 || under&cj.mask == 0) {
			return yes
		}
		if missing&cj.required != 0 {
			continue
		}
		if v := p.conj(cj); v != no {
			return v
		}
	}
	return no
}

// conj decides a conjunction from the bits, as conjMatch does from the leaves.
func (p *pass) conj(cj *planConj) verdict {
	has := p.free | p.arr | p.deep
	// A condition no value meets fails the conjunction, unless it is {"exists": false} and
	// nothing lies at its path.
	for missing := cj.mask &^ has; missing != 0; missing &= missing - 1 {
		pc := &p.pl.conds[bits.TrailingZeros64(missing)]
		if !pc.cd.existsFalse || p.present&pc.pathBit != 0 {
			return no
		}
	}
	// Positions matter only when two or more conditions have candidates under arrays.
	if cj.n < 2 || (p.arr|p.deep)&cj.mask == 0 {
		return yes
	}
	if p.deep&cj.mask != 0 {
		p.exceeded = errDeepArrays
		return no
	}
	// A value outside any array pins no position: when every condition met has one, the
	// search would choose them and succeed at once.
	if has&cj.mask&^p.free == 0 {
		return yes
	}
	return unknown
}

// leaf evaluates the conditions at trie node n on one value, inside arrays arrays.
func (p *pass) leaf(n *trieNode, arrays int, lf *leaf) {
	p.present |= n.pathBit
	met := &p.free
	if arrays > maxTrail {
		met = &p.deep
	} else if arrays > 0 {
		met = &p.arr
	}
	for k := range n.conds {
		r := &n.conds[k]
		if *met&r.bit == 0 && (r.cd.existsTrue || matchAny(r.cd.ms, lf, p.legacy)) {
			*met |= r.bit
		}
	}
}

func (n *trieNode) walk(fn func(*trieNode)) {
	fn(n)
	for _, c := range n.children {
		c.walk(fn)
	}
}

// The fast entry points: each reports ok false when the general path must answer.

// which is Criteria.Which on the fast path.
func (c *Criteria) whichFast(doc []byte, dst []int) ([]int, bool, error) {
	p := pass{pl: c.plan, legacy: c.cfg.legacyNumbers}
	if !p.document(doc, c.root) {
		return dst, false, nil
	}
	start := len(dst)
	has, under := p.free|p.arr|p.deep, p.arr|p.deep
	for i, conjs := range c.plan.filters {
		// filter's loop, here in line, for filters of one conjunction met outright or
		// failed outright.
		if len(conjs) == 1 {
			if cj := &conjs[0]; cj.mask&^has == 0 && (cj.n < 2 || under&cj.mask == 0) {
				dst = append(dst, i)
				continue
			} else if cj.mask&^has&cj.required != 0 {
				continue
			}
		}
		switch p.filter(i, "", shapeAny) {
		case yes:
			dst = append(dst, i)
		case unknown:
			return dst[:start], false, nil
		}
	}
	return dst, true, p.exceeded
}

// matchFast is Criteria.Match on the fast path, and Pattern.Match's with one filter.
func (pl *plan) matchFast(doc []byte, root *trieNode, legacy bool) (match, ok bool, err error) {
	p := pass{pl: pl, legacy: legacy}
	if !p.document(doc, root) {
		return false, false, nil
	}
	for i := range pl.filters {
		switch p.filter(i, "", shapeAny) {
		case yes:
			return true, true, nil
		case unknown:
			return false, false, nil
		}
	}
	return false, true, p.exceeded
}

// shapedFast is Criteria.shaped, without explaining, on the fast path: shape, then the
// filters in order.
func (c *Criteria) shapedFast(key string, value []byte, absent bool) (match, ok bool, err error) {
	p := pass{pl: c.plan, legacy: c.cfg.legacyNumbers}
	node := c.root.child(key, false)
	ds := shapeAbsent
	switch {
	case absent:
	case isJSONObject(value) && node != nil:
		// A value the scan accepts is valid JSON, and valid UTF-8 unless a string says
		// otherwise (outside strings, valid JSON is ASCII): then no utf8.Valid pass is needed.
		// A value it does not accept may be plain text, or not UTF-8: the general path knows.
		if !p.document(value, node) || p.badUTF8 {
			return false, false, nil
		}
		ds = shapeJSON
	case !utf8.Valid(value):
	case isJSONObject(value):
		ds = shapeJSON // no pattern looks at the value: its format does not matter
	default:
		ds = shapePlain
		if node != nil && node.pathBit != 0 {
			p.leaf(node, 0, &leaf{kind: lString, val: value})
		}
	}
	for i := range c.filters {
		switch p.filter(i, key, ds) {
		case yes:
			return true, true, nil
		case unknown:
			return false, false, nil
		}
	}
	return false, true, p.exceeded
}
