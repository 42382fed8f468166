package filter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/limits"
)

// Pattern is a compiled filter pattern. It is safe for concurrent use.
type Pattern struct {
	src string
	cfg config
	// conjs is the pattern with its $or clauses expanded: it matches when any one of these
	// conjunctions does.
	conjs []conj
	// paths are the leaf paths the pattern names, indexed by cond.path.
	paths [][]string
	root  *trieNode
	plan  *plan // nil when the pattern is too large for the fast path
}

// conj is a conjunction of conditions, one per leaf path.
type conj struct {
	conds []cond
	// topShape says how the conjunction uses each top-level field: as a leaf (a value list)
	// or as an object (nested fields). Lambda compares it with the format of the SQS body or
	// Kafka value before matching.
	topShape map[string]shape
}

type shape uint8

const (
	shapeLeaf shape = 1 << iota
	shapeObject
)

// cond is one leaf of the pattern: the path and its value list, any of which may match.
type cond struct {
	path        int
	ms          []matcher
	existsTrue  bool // {"exists": true}: any value at the path, null included
	existsFalse bool // {"exists": false}: no value at the path
	text        string
}

type mkind uint8

const (
	mString mkind = iota
	mNumber
	mTrue
	mFalse
	mNull
	mPrefix
	mSuffix
	mPrefixFold
	mSuffixFold
	mEqualsFold
	mNotStrings  // anything-but a list of strings
	mNotNumbers  // anything-but a list of numbers
	mNotPrefix   // anything-but {"prefix": ...}
	mNotSuffix   // anything-but {"suffix": ...}
	mNotFold     // anything-but {"equals-ignore-case": ...}
	mNotWildcard // anything-but {"wildcard": ...}
	mNumeric
	mWildcard
	mCIDR
)

// matcher is one entry of a value list.
type matcher struct {
	kind mkind
	s    string    // string operand; for mNumber the literal's text
	f    float64   // mNumber: the literal's value, when hasF
	hasF bool      //
	set  []string  // mNotStrings, mNotFold, mNotWildcard
	nums []float64 // mNotNumbers
	// mNumeric: lo/hi bounds; loOp is 0, '>' or 'G' (>=); hiOp is 0, '<' or 'L' (<=).
	lo, hi     float64
	loOp, hiOp byte
	prefix     netip.Prefix // mCIDR
}

// Compile validates pattern, an EventBridge-style event pattern in the subset Lambda's
// FilterCriteria support, and compiles it for matching. An invalid pattern gives an *Error
// that names the path and the reason.
func Compile(pattern string, opts ...Option) (*Pattern, error) {
	cfg := newConfig(opts)
	return compile(pattern, cfg, -1)
}

func compile(pattern string, cfg config, filterIndex int) (*Pattern, error) {
	c := compiler{cfg: cfg, filter: filterIndex, pathIndex: map[string]int{}}
	if !utf8.ValidString(pattern) {
		return nil, c.errorf(nil, "pattern is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(pattern); n > limits.MaxFilterPatternLength {
		return nil, c.errorf(nil, "pattern is %d characters long; Lambda allows at most %d", n, limits.MaxFilterPatternLength)
	}
	dec := json.NewDecoder(strings.NewReader(pattern))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, c.errorf(nil, "pattern is not valid JSON: %v", jsonErrText(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, c.errorf(nil, "pattern is not valid JSON: data after the top-level object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, c.errorf(nil, "pattern must be a JSON object, got %s", describe(v))
	}
	conjs, err := c.object(obj, nil)
	if err != nil {
		return nil, err
	}
	p := &Pattern{src: pattern, cfg: cfg, conjs: conjs, paths: c.paths}
	p.root = buildTrie(p.paths)
	p.plan = newPlan(p.root, []*Pattern{p}, nil)
	return p, nil
}

func jsonErrText(err error) string {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "unexpected end of JSON input" // encoding/json's words, as the documents' errors
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

type compiler struct {
	cfg       config
	filter    int
	paths     [][]string
	pathIndex map[string]int
}

func (c *compiler) errorf(path []string, format string, args ...any) *Error {
	return &Error{Filter: c.filter, Path: strings.Join(path, "."), Reason: fmt.Sprintf(format, args...)}
}

// operators are the names that may open a match object; they cannot be field names of a
// $or branch.
var operators = map[string]bool{
	"prefix": true, "suffix": true, "equals-ignore-case": true, "anything-but": true,
	"numeric": true, "exists": true, "wildcard": true, "cidr": true,
}

// object compiles the fields of one pattern object at path into its disjunctive normal form.
func (c *compiler) object(obj map[string]any, path []string) ([]conj, error) {
	if len(obj) == 0 {
		return nil, c.errorf(path, "empty object: name at least one field")
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	result := []conj{{}}
	for _, k := range keys {
		v := obj[k]
		var alts []conj
		switch {
		case k == "$or":
			branches, ok := v.([]any)
			if !ok || len(branches) < 2 {
				return nil, c.errorf(path, "$or must be an array of at least two objects")
			}
			for i, b := range branches {
				bo, ok := b.(map[string]any)
				if !ok {
					return nil, c.errorf(path, "$or[%d] must be an object, got %s", i, describe(b))
				}
				for bk := range bo {
					if operators[bk] {
						return nil, c.errorf(path, "$or[%d]: %q is an operator, not a field name", i, bk)
					}
				}
				sub, err := c.object(bo, path)
				if err != nil {
					return nil, err
				}
				alts = append(alts, sub...)
				if len(alts) > limits.MaxFilterOrCombinations {
					return nil, c.errorf(path, "$or expands to more than %d combinations", limits.MaxFilterOrCombinations)
				}
			}
		default:
			fieldPath := append(slices.Clip(path), k)
			switch fv := v.(type) {
			case map[string]any:
				sub, err := c.object(fv, fieldPath)
				if err != nil {
					return nil, err
				}
				alts = sub
			case []any:
				cd, err := c.leaf(fv, fieldPath)
				if err != nil {
					return nil, err
				}
				alts = []conj{{conds: []cond{cd}}}
			default:
				return nil, c.errorf(fieldPath, "must be an object or an array, got %s", describe(v))
			}
			if len(path) == 0 {
				sh := shapeLeaf
				if _, ok := v.(map[string]any); ok {
					sh = shapeObject
				}
				for i := range alts {
					alts[i].topShape = mergeShape(alts[i].topShape, map[string]shape{k: sh})
				}
			}
		}
		if len(result)*len(alts) > limits.MaxFilterOrCombinations {
			return nil, c.errorf(path, "$or expands to more than %d combinations", limits.MaxFilterOrCombinations)
		}
		next := make([]conj, 0, len(result)*len(alts))
		for _, a := range result {
			for _, b := range alts {
				next = append(next, conj{
					conds:    append(slices.Clip(a.conds), b.conds...),
					topShape: mergeShape(a.topShape, b.topShape),
				})
			}
		}
		result = next
	}
	return result, nil
}

func mergeShape(a, b map[string]shape) map[string]shape {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	m := make(map[string]shape, len(a)+len(b))
	for k, v := range a {
		m[k] |= v
	}
	for k, v := range b {
		m[k] |= v
	}
	return m
}

func (c *compiler) pathID(path []string) int {
	key := strings.Join(path, "\x00")
	if id, ok := c.pathIndex[key]; ok {
		return id
	}
	id := len(c.paths)
	c.paths = append(c.paths, slices.Clone(path))
	c.pathIndex[key] = id
	return id
}

// leaf compiles a value list.
func (c *compiler) leaf(list []any, path []string) (cond, error) {
	if len(list) == 0 {
		return cond{}, c.errorf(path, "empty array: list at least one value to match")
	}
	cd := cond{path: c.pathID(path)}
	var text []string
	for _, v := range list {
		t, err := jsonText(v)
		if err != nil {
			return cond{}, c.errorf(path, "cannot write the value %s back as JSON: %v", describe(v), err)
		}
		text = append(text, t)
		switch v := v.(type) {
		case string:
			cd.ms = append(cd.ms, matcher{kind: mString, s: v})
		case json.Number:
			cd.ms = append(cd.ms, c.numberLiteral(v))
		case bool:
			if v {
				cd.ms = append(cd.ms, matcher{kind: mTrue})
			} else {
				cd.ms = append(cd.ms, matcher{kind: mFalse})
			}
		case nil:
			cd.ms = append(cd.ms, matcher{kind: mNull})
		case map[string]any:
			if err := c.operator(v, path, &cd); err != nil {
				return cond{}, err
			}
		default:
			return cond{}, c.errorf(path, "match value must be a string, number, true, false, null or an operator object, got %s", describe(v))
		}
	}
	cd.text = "[" + strings.Join(text, ",") + "]"
	return cd, nil
}

// numberLiteral compiles a bare number: it matches the same text, and also numerically equal
// numbers (300 matches 300.0 and 3e2), as the engine behind Lambda does, when the literal has
// few enough digits to be a float64 exactly.
func (c *compiler) numberLiteral(n json.Number) matcher {
	m := matcher{kind: mNumber, s: n.String()}
	if f, ok := numericValue(n.String(), c.cfg.legacyNumbers); ok && significantDigits(n.String()) <= 17 {
		m.f, m.hasF = f, true
	}
	return m
}

func significantDigits(s string) int {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimLeft(strings.ReplaceAll(strings.TrimPrefix(s, "-"), ".", ""), "0")
	return len(s)
}

// numericValue parses a JSON number for numeric comparison. With legacy set, it applies the
// older engine's range (-5e9..5e9) and precision (six decimal places, truncated).
func numericValue(s string, legacy bool) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 {
		f = 0 // -0 equals 0
	}
	if legacy {
		return legacyValue(f)
	}
	return f, true
}

const legacyLimit = 5e9

func legacyValue(f float64) (float64, bool) {
	if f < -legacyLimit || f > legacyLimit {
		return 0, false
	}
	return math.Trunc(f*1e6) / 1e6, true
}

// decimals returns the number of decimal places of the JSON number s, at most
// math.MaxInt32: 1.25 has 2, 125e-4 has 4 and 1.5e3 none.
func decimals(s string) int {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.ParseInt(s[i+1:], 10, 32)
		if err != nil {
			// Out of range: a negative exponent that large leaves more decimal places than
			// any limit, a positive one none.
			if strings.HasPrefix(s[i+1:], "-") {
				return math.MaxInt32
			}
			return 0
		}
		return int(min(math.MaxInt32, max(0, int64(decimals(s[:i]))-exp)))
	}
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return len(s) - i - 1
	}
	return 0
}

func (c *compiler) operator(obj map[string]any, path []string, cd *cond) error {
	if len(obj) != 1 {
		if len(obj) == 0 {
			return c.errorf(path, "empty match object: name one operator")
		}
		return c.errorf(path, "only one key allowed in a match expression, got %d", len(obj))
	}
	var op string
	var arg any
	for op, arg = range obj {
	}
	eb := func(what string) error {
		if c.cfg.eventBridge {
			return nil
		}
		return c.errorf(path, "%s is an EventBridge operator that Lambda's FilterCriteria do not support (WithEventBridge accepts it)", what)
	}
	switch op {
	case "prefix", "suffix":
		kind, fold := mPrefix, mPrefixFold
		if op == "suffix" {
			kind, fold = mSuffix, mSuffixFold
		}
		switch a := arg.(type) {
		case string:
			cd.ms = append(cd.ms, matcher{kind: kind, s: a})
		case map[string]any:
			s, ok := a["equals-ignore-case"].(string)
			if len(a) != 1 || !ok {
				return c.errorf(path, "%s takes a string or {\"equals-ignore-case\": string}", op)
			}
			cd.ms = append(cd.ms, matcher{kind: fold, s: s})
		default:
			return c.errorf(path, "%s takes a string, got %s", op, describe(arg))
		}
	case "equals-ignore-case":
		s, ok := arg.(string)
		if !ok {
			return c.errorf(path, "equals-ignore-case takes a single string, got %s", describe(arg))
		}
		cd.ms = append(cd.ms, matcher{kind: mEqualsFold, s: s})
	case "exists":
		b, ok := arg.(bool)
		if !ok {
			return c.errorf(path, "exists takes true or false, got %s", describe(arg))
		}
		if b {
			cd.existsTrue = true
		} else {
			cd.existsFalse = true
		}
	case "anything-but":
		return c.anythingBut(arg, path, cd, eb)
	case "numeric":
		m, err := c.numeric(arg, path)
		if err != nil {
			return err
		}
		cd.ms = append(cd.ms, m)
	case "wildcard":
		if err := eb("wildcard"); err != nil {
			return err
		}
		s, ok := arg.(string)
		if !ok {
			return c.errorf(path, "wildcard takes a string, got %s", describe(arg))
		}
		if err := c.checkWildcard(s, path); err != nil {
			return err
		}
		cd.ms = append(cd.ms, matcher{kind: mWildcard, s: s})
	case "cidr":
		if err := eb("cidr"); err != nil {
			return err
		}
		s, ok := arg.(string)
		if !ok {
			return c.errorf(path, "cidr takes a string, got %s", describe(arg))
		}
		pfx, err := netip.ParsePrefix(s)
		if err != nil {
			return c.errorf(path, "cidr: %q is not an IP prefix such as 10.0.0.0/24", s)
		}
		// The engine behind EventBridge rejects single-address prefixes.
		if pfx.Addr().Is4() && pfx.Bits() == 32 {
			return c.errorf(path, "cidr: mask bits must be < 32 for IPv4 (%q)", s)
		}
		if pfx.Addr().Is6() && pfx.Bits() == 128 {
			return c.errorf(path, "cidr: mask bits must be < 128 for IPv6 (%q)", s)
		}
		cd.ms = append(cd.ms, matcher{kind: mCIDR, prefix: pfx.Masked()})
	default:
		return c.errorf(path, "unrecognized match type %q", op)
	}
	return nil
}

func (c *compiler) checkWildcard(s string, path []string) error {
	if strings.Contains(s, "**") {
		return c.errorf(path, "wildcard: consecutive '*' characters are not allowed (%q)", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			if i+1 >= len(s) || (s[i+1] != '*' && s[i+1] != '\\') {
				return c.errorf(path, "wildcard: '\\' must escape '*' or '\\' (%q)", s)
			}
			i++
		}
	}
	return nil
}

func (c *compiler) anythingBut(arg any, path []string, cd *cond, eb func(string) error) error {
	switch a := arg.(type) {
	case string:
		cd.ms = append(cd.ms, matcher{kind: mNotStrings, set: []string{a}})
	case json.Number:
		f, ok := numericValue(a.String(), c.cfg.legacyNumbers)
		if !ok {
			return c.errorf(path, "anything-but: number %s is out of range", a)
		}
		cd.ms = append(cd.ms, matcher{kind: mNotNumbers, nums: []float64{f}})
	case []any:
		if len(a) == 0 {
			return c.errorf(path, "anything-but: empty list")
		}
		switch a[0].(type) {
		case string:
			var set []string
			for _, v := range a {
				s, ok := v.(string)
				if !ok {
					return c.errorf(path, "anything-but: a list must be all strings or all numbers, got %s among strings", describe(v))
				}
				set = append(set, s)
			}
			cd.ms = append(cd.ms, matcher{kind: mNotStrings, set: set})
		case json.Number:
			var nums []float64
			for _, v := range a {
				n, ok := v.(json.Number)
				if !ok {
					return c.errorf(path, "anything-but: a list must be all strings or all numbers, got %s among numbers", describe(v))
				}
				f, ok := numericValue(n.String(), c.cfg.legacyNumbers)
				if !ok {
					return c.errorf(path, "anything-but: number %s is out of range", n)
				}
				nums = append(nums, f)
			}
			cd.ms = append(cd.ms, matcher{kind: mNotNumbers, nums: nums})
		default:
			return c.errorf(path, "anything-but: a list must be all strings or all numbers, got %s", describe(a[0]))
		}
	case map[string]any:
		if len(a) != 1 {
			return c.errorf(path, "anything-but: only one key allowed in a match expression, got %d", len(a))
		}
		var op string
		var v any
		for op, v = range a {
		}
		if err := eb("anything-but with " + op); err != nil {
			if op != "prefix" && op != "suffix" && op != "equals-ignore-case" && op != "wildcard" {
				return c.errorf(path, "anything-but: unsupported operator %q", op)
			}
			return err
		}
		switch op {
		case "prefix", "suffix":
			s, ok := v.(string)
			if !ok || s == "" {
				return c.errorf(path, "anything-but: %s takes a non-empty string", op)
			}
			kind := mNotPrefix
			if op == "suffix" {
				kind = mNotSuffix
			}
			cd.ms = append(cd.ms, matcher{kind: kind, s: s})
		case "equals-ignore-case", "wildcard":
			var set []string
			switch vv := v.(type) {
			case string:
				set = []string{vv}
			case []any:
				for _, e := range vv {
					s, ok := e.(string)
					if !ok {
						return c.errorf(path, "anything-but: %s takes strings, got %s", op, describe(e))
					}
					set = append(set, s)
				}
			}
			if len(set) == 0 {
				return c.errorf(path, "anything-but: %s takes a string or a non-empty list of strings", op)
			}
			kind := mNotFold
			if op == "wildcard" {
				kind = mNotWildcard
				for _, s := range set {
					if err := c.checkWildcard(s, path); err != nil {
						return err
					}
				}
			}
			cd.ms = append(cd.ms, matcher{kind: kind, set: set})
		default:
			return c.errorf(path, "anything-but: unsupported operator %q", op)
		}
	default:
		return c.errorf(path, "anything-but takes a string, a number, or a list of them, got %s", describe(arg))
	}
	return nil
}

// numeric compiles ["=", n], [op, n] or [lowOp, lo, highOp, hi].
func (c *compiler) numeric(arg any, path []string) (matcher, error) {
	list, ok := arg.([]any)
	if !ok || len(list) == 0 || len(list)%2 != 0 || len(list) > 4 {
		return matcher{}, c.errorf(path, `numeric takes ["=", n], [op, n] or [">"|">=", low, "<"|"<=", high], got %s`, describe(arg))
	}
	operand := func(i int) (float64, error) {
		n, ok := list[i].(json.Number)
		if !ok {
			return 0, c.errorf(path, "numeric: operand %d must be a number, got %s", i/2+1, describe(list[i]))
		}
		if c.cfg.legacyNumbers && decimals(n.String()) > 6 {
			return 0, c.errorf(path, "numeric: %s has more than 6 decimal places, the limit of WithLegacyNumbers", n)
		}
		f, ok := numericValue(n.String(), c.cfg.legacyNumbers)
		if !ok {
			if c.cfg.legacyNumbers {
				return 0, c.errorf(path, "numeric: %s is outside -5e9..5e9, the range of WithLegacyNumbers", n)
			}
			return 0, c.errorf(path, "numeric: %s is out of range", n)
		}
		return f, nil
	}
	var m matcher
	m.kind = mNumeric
	for i := 0; i < len(list); i += 2 {
		op, ok := list[i].(string)
		if !ok {
			return matcher{}, c.errorf(path, "numeric: operator %d must be a string, got %s", i/2+1, describe(list[i]))
		}
		v, err := operand(i + 1)
		if err != nil {
			return matcher{}, err
		}
		switch {
		case op == "=" && len(list) == 2:
			m.loOp, m.lo, m.hiOp, m.hi = 'G', v, 'L', v
		case (op == ">" || op == ">=") && i == 0:
			m.loOp, m.lo = map[string]byte{">": '>', ">=": 'G'}[op], v
		case (op == "<" || op == "<=") && (i == 2 || len(list) == 2):
			m.hiOp, m.hi = map[string]byte{"<": '<', "<=": 'L'}[op], v
		case op == "=" || op == ">" || op == ">=" || op == "<" || op == "<=":
			return matcher{}, c.errorf(path, `numeric: %q out of place: a range is [">"|">=", low, "<"|"<=", high]`, op)
		default:
			return matcher{}, c.errorf(path, "numeric: unrecognized operator %q", op)
		}
	}
	lo, hi := m.lo, m.hi
	if c.cfg.legacyNumbers {
		// The older engine gave a one-sided range the end of its number range as the other
		// bound, so [">", 5e9] is an empty range, and invalid, there.
		if m.loOp == 0 {
			lo = -legacyLimit
		}
		if m.hiOp == 0 {
			hi = legacyLimit
		}
	}
	if (len(list) == 4 || c.cfg.legacyNumbers && op0(list) != "=") && !(lo < hi) {
		return matcher{}, c.errorf(path, "numeric: bottom must be less than top (%v, %v)", lo, hi)
	}
	return m, nil
}

func op0(list []any) string {
	s, _ := list[0].(string)
	return s
}

// jsonText writes a decoded pattern value back as JSON, for messages (without escaping < and
// >, which numeric operators use).
func jsonText(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// describe names a decoded JSON value's type for error messages.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return "number " + v.String()
	case string:
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return "string " + strconv.Quote(v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// trieNode is a field of the pattern's paths: Match reads only the parts of a document that
// some path leads to, and skips the rest.
type trieNode struct {
	names    []string
	children []*trieNode
	pathID   int // the path ending here, or -1
	// For the fast path (pass.go): the children by name's length and first bytes, and, when
	// a path ends here, its bit and the conditions on it.
	keys    []trieKey
	table   []trieKey // keys by a perfect hash of word and length, or nil: see index
	mult    uint64
	shift   uint8
	pathBit uint64
	conds   []condRef
}

func buildTrie(paths [][]string) *trieNode {
	root := &trieNode{pathID: -1}
	for id, p := range paths {
		n := root
		for _, name := range p {
			n = n.child(name, true)
		}
		n.pathID = id
	}
	root.index()
	return root
}

func (n *trieNode) child(name string, create bool) *trieNode {
	for i, s := range n.names {
		if s == name {
			return n.children[i]
		}
	}
	if !create {
		return nil
	}
	c := &trieNode{pathID: -1}
	n.names = append(n.names, name)
	n.children = append(n.children, c)
	return c
}

// childBytes finds a child by a name given as bytes, without allocating.
func (n *trieNode) childBytes(name []byte) *trieNode {
	for i, s := range n.names {
		if s == string(name) {
			return n.children[i]
		}
	}
	return nil
}
