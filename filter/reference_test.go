package filter_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// This file holds refMatch, a deliberately simple evaluator of FilterCriteria patterns on
// values decoded by encoding/json. It is two things at once: the obvious alternative the
// benchmarks compare the engine with (decode into map[string]any, then walk), and the oracle
// of the differential fuzz test. It favours being evidently right over being fast, and it
// implements only a subset of the operators (see refSupported), following
// /work/shared/reference/filter-semantics.md:
//
//   - exact string, number, true, false and null; a bare number literal matches textually
//     and numerically (300 matches 300.0 and 3e2, §2.4), with float64 semantics;
//   - value lists (OR), fields (AND), nested objects;
//   - arrays in events: a leaf matches if any of its values does, nested arrays are
//     flattened (§2.2). Array consistency: a nested object pattern is evaluated against each
//     element of an array of objects separately, so fields under the same array must match
//     in the same element;
//   - prefix, suffix, equals-ignore-case (strings.EqualFold), strings only (§2.3);
//   - anything-but with a string or a number, or a list of strings or of numbers: a field
//     matches if at least one of its leaf values is not excluded; missing, [] or an object
//     do not match, null does (§3);
//   - exists true and false: only leaves (scalars, null included) count; exists:false holds
//     when no leaf at all is at the path, anywhere in the event: with an array of objects it
//     is false if any element has the leaf (§2.7), which is why it is checked from the root
//     rather than per element;
//   - numeric =, <, <=, >, >= and ranges, on JSON numbers only, as float64.

// decodeJSON decodes one JSON value the way refMatch expects: objects as map[string]any,
// numbers as json.Number. Trailing data is an error.
func decodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

// refMatch reports whether doc, as decoded by decodeJSON, matches pattern, also decoded by
// decodeJSON. Only an object can match. The pattern must be valid and within refSupported.
func refMatch(pattern, doc any) bool {
	pat, ok := pattern.(map[string]any)
	if !ok {
		return false
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	alts, ok := expandOr(pat)
	if !ok {
		panic("refMatch: unsupported pattern")
	}
	r := refEval{root: obj}
	for _, alt := range alts {
		if r.object(alt, obj, nil) {
			return true
		}
	}
	return false
}

// maxRefAlternatives bounds expandOr; the engine allows 1000 (limits.MaxFilterOrCombinations).
const maxRefAlternatives = 4096

// expandOr rewrites a pattern with $or into the patterns without $or it stands for, as
// event-ruler compiles it (§2.8): the fields of an object are ANDed with each branch of its
// $or, and nested objects are merged, so that {"a":{"b":["1"]},"$or":[{"a":{"c":["2"]}},…]}
// gives {"a":{"b":["1"],"c":["2"]}}, whose two fields then obey array consistency together.
// It fails (ok false) when an alternative would name one path twice, or a path and a path
// under it: event-ruler then keeps whichever comes last in the text, and the engine does
// otherwise (see the report), so refMatch leaves those alone.
func expandOr(pat map[string]any) (alts []map[string]any, ok bool) {
	result := []map[string]any{{}}
	for name, node := range pat {
		var choices []map[string]any
		switch node := node.(type) {
		case []any:
			if name == "$or" {
				for _, b := range node {
					bo, isObj := b.(map[string]any)
					if !isObj {
						return nil, false
					}
					sub, ok := expandOr(bo)
					if !ok {
						return nil, false
					}
					choices = append(choices, sub...)
				}
			} else {
				choices = []map[string]any{{name: node}}
			}
		case map[string]any:
			sub, ok := expandOr(node)
			if !ok {
				return nil, false
			}
			for _, s := range sub {
				choices = append(choices, map[string]any{name: s})
			}
		default:
			return nil, false
		}
		if len(result)*len(choices) > maxRefAlternatives {
			return nil, false
		}
		var next []map[string]any
		for _, r := range result {
			for _, c := range choices {
				m, ok := mergePatterns(r, c)
				if !ok {
					return nil, false
				}
				next = append(next, m)
			}
		}
		result = next
	}
	return result, true
}

// mergePatterns merges two patterns without $or, failing when they both constrain one path.
func mergePatterns(x, y map[string]any) (map[string]any, bool) {
	m := make(map[string]any, len(x)+len(y))
	for k, v := range x {
		m[k] = v
	}
	for k, v := range y {
		old, dup := m[k]
		if !dup {
			m[k] = v
			continue
		}
		om, ok1 := old.(map[string]any)
		vm, ok2 := v.(map[string]any)
		if !ok1 || !ok2 {
			return nil, false
		}
		merged, ok := mergePatterns(om, vm)
		if !ok {
			return nil, false
		}
		m[k] = merged
	}
	return m, true
}

type refEval struct {
	root map[string]any
}

// object evaluates the fields of a pattern object against ev, the event object at path, or
// nil when there is no object there (missing, a scalar, an empty array).
func (r *refEval) object(pat map[string]any, ev map[string]any, path []string) bool {
	for name, node := range pat {
		p := append(path[:len(path):len(path)], name)
		v, present := ev[name]
		if !r.field(node, v, present, p) {
			return false
		}
	}
	return true
}

// field evaluates one pattern node (a nested pattern object or a value list) against the
// event value v at path.
func (r *refEval) field(node, v any, present bool, path []string) bool {
	switch node := node.(type) {
	case map[string]any:
		return r.nested(node, v, present, path)
	case []any:
		absent := false
		var matchers []any
		for _, m := range node {
			if isExistsFalse(m) {
				absent = true
			} else {
				matchers = append(matchers, m)
			}
		}
		// exists:false is about the whole event, not one array element.
		if absent && !hasLeaf(r.root, path) {
			return true
		}
		if !present {
			return false
		}
		return anyLeaf(v, func(leaf any) bool {
			for _, m := range matchers {
				if matchLeaf(m, leaf) {
					return true
				}
			}
			return false
		})
	}
	return false
}

// nested evaluates a nested pattern object against v: against v itself when it is an object,
// against each element separately when it is an array, and against no object otherwise (so
// that only exists:false conditions can hold).
func (r *refEval) nested(pat map[string]any, v any, present bool, path []string) bool {
	switch v := v.(type) {
	case map[string]any:
		return r.object(pat, v, path)
	case []any:
		for _, e := range v {
			if r.nested(pat, e, true, path) {
				return true
			}
		}
	}
	return r.object(pat, nil, path)
}

func isExistsFalse(m any) bool {
	o, ok := m.(map[string]any)
	if !ok || len(o) != 1 {
		return false
	}
	b, ok := o["exists"].(bool)
	return ok && !b
}

// anyLeaf reports whether f holds for a leaf value of v: v itself when it is a scalar (nil
// for null), any leaf of an array's elements (nested arrays flattened), none of an object.
func anyLeaf(v any, f func(any) bool) bool {
	switch v := v.(type) {
	case map[string]any:
		return false
	case []any:
		for _, e := range v {
			if anyLeaf(e, f) {
				return true
			}
		}
		return false
	default:
		return f(v)
	}
}

// hasLeaf reports whether the event has a leaf value (a scalar or null) at path, through any
// arrays on the way.
func hasLeaf(v any, path []string) bool {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if hasLeaf(e, path) {
				return true
			}
		}
		return false
	case map[string]any:
		if len(path) == 0 {
			return false
		}
		c, ok := v[path[0]]
		return ok && hasLeaf(c, path[1:])
	default:
		return len(path) == 0
	}
}

// matchLeaf reports whether one element of a pattern value list matches one leaf value.
func matchLeaf(m, leaf any) bool {
	switch m := m.(type) {
	case nil:
		return leaf == nil
	case bool:
		b, ok := leaf.(bool)
		return ok && b == m
	case string:
		s, ok := leaf.(string)
		return ok && s == m
	case json.Number:
		n, ok := leaf.(json.Number)
		return ok && numberEqual(m, n)
	case map[string]any:
		for op, arg := range m {
			return matchOp(op, arg, leaf)
		}
	}
	return false
}

func matchOp(op string, arg, leaf any) bool {
	s, isString := leaf.(string)
	switch op {
	case "exists":
		return arg == true // any leaf; exists:false is handled in field
	case "prefix":
		return isString && strings.HasPrefix(s, arg.(string))
	case "suffix":
		return isString && strings.HasSuffix(s, arg.(string))
	case "equals-ignore-case":
		return isString && strings.EqualFold(s, arg.(string))
	case "anything-but":
		excluded := arg
		if list, ok := arg.([]any); ok {
			for _, x := range list {
				if matchExcluded(x, leaf) {
					return false
				}
			}
			return true
		}
		return !matchExcluded(excluded, leaf)
	case "numeric":
		n, ok := leaf.(json.Number)
		if !ok {
			return false
		}
		f, ok := toFloat(n)
		if !ok {
			return false
		}
		args := arg.([]any)
		for i := 0; i+1 < len(args); i += 2 {
			bound, _ := toFloat(args[i+1].(json.Number))
			var in bool
			switch args[i].(string) {
			case "=":
				in = f == bound
			case "<":
				in = f < bound
			case "<=":
				in = f <= bound
			case ">":
				in = f > bound
			case ">=":
				in = f >= bound
			}
			if !in {
				return false
			}
		}
		return true
	}
	return false
}

// matchExcluded reports whether leaf equals an anything-but operand: a string exactly, a
// number numerically; other types are never excluded.
func matchExcluded(x, leaf any) bool {
	switch x := x.(type) {
	case string:
		s, ok := leaf.(string)
		return ok && s == x
	case json.Number:
		n, ok := leaf.(json.Number)
		return ok && numberEqual(x, n)
	}
	return false
}

// numberEqual compares two JSON numbers as the engine compiles a bare literal: same text, or
// the same finite float64.
func numberEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	fa, ok := toFloat(a)
	if !ok {
		return false
	}
	fb, ok := toFloat(b)
	return ok && fa == fb
}

func toFloat(n json.Number) (float64, bool) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// refSupported reports whether a pattern, decoded by decodeJSON, is a valid pattern that uses
// only what refMatch implements. It is stricter than the engine where refMatch would be
// unsure: no $or, no field name with a dot (event-ruler aliases dotted names, §2.9), no
// numbers that overflow float64, no IP-looking strings (§2.9).
func refSupported(pattern any) bool {
	pat, ok := pattern.(map[string]any)
	if !ok || !refSupportedObject(pat) {
		return false
	}
	_, ok = expandOr(pat)
	return ok
}

func refSupportedObject(pat map[string]any) bool {
	if len(pat) == 0 {
		return false
	}
	for name, node := range pat {
		if strings.Contains(name, ".") {
			return false
		}
		if name == "$or" {
			branches, ok := node.([]any)
			if !ok || len(branches) < 2 {
				return false
			}
			for _, b := range branches {
				bo, ok := b.(map[string]any)
				if !ok || !refSupportedObject(bo) {
					return false
				}
				for k := range bo {
					if refOperators[k] {
						return false
					}
				}
			}
			continue
		}
		switch node := node.(type) {
		case map[string]any:
			if !refSupportedObject(node) {
				return false
			}
		case []any:
			if len(node) == 0 {
				return false
			}
			for _, m := range node {
				if !refSupportedValue(m) {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// refOperators are the operator names, which a $or branch may not use as field names (§2.8).
var refOperators = map[string]bool{
	"prefix": true, "suffix": true, "equals-ignore-case": true, "anything-but": true,
	"numeric": true, "exists": true, "wildcard": true, "cidr": true,
}

func refSupportedValue(m any) bool {
	switch m := m.(type) {
	case nil, bool:
		return true
	case string:
		return !ipLike(m)
	case json.Number:
		// §2.4: a literal that is not exactly a binary64 value gets only the textual
		// matcher; where that begins is unclear (the note says "for example 20+ significant
		// digits"), so refMatch leaves long literals alone.
		_, ok := toFloat(m)
		return ok && significantDigits(string(m)) <= 15
	case map[string]any:
		if len(m) != 1 {
			return false
		}
		for op, arg := range m {
			switch op {
			case "prefix", "suffix", "equals-ignore-case":
				_, ok := arg.(string)
				return ok
			case "exists":
				_, ok := arg.(bool)
				return ok
			case "anything-but":
				switch arg := arg.(type) {
				case string:
					return true
				case json.Number:
					_, ok := toFloat(arg)
					return ok
				case []any:
					return homogeneous(arg)
				}
				return false
			case "numeric":
				args, ok := arg.([]any)
				return ok && validNumeric(args)
			}
		}
	}
	return false
}

// significantDigits counts the digits of a JSON number's mantissa without leading zeros.
func significantDigits(n string) int {
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		n = n[:i]
	}
	n = strings.TrimLeft(strings.ReplaceAll(strings.TrimPrefix(n, "-"), ".", ""), "0")
	return len(n)
}

// homogeneous reports whether an anything-but list is non-empty and all strings or all
// (float64-representable) numbers.
func homogeneous(list []any) bool {
	if len(list) == 0 {
		return false
	}
	_, strs := list[0].(string)
	for _, x := range list {
		switch x := x.(type) {
		case string:
			if !strs {
				return false
			}
		case json.Number:
			if _, ok := toFloat(x); strs || !ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// validNumeric checks the operand forms of §2.5: ["=", v], [op, v] with op one of <, <=, >,
// >=, or [>|>=, lo, <|<=, hi] with lo < hi.
func validNumeric(args []any) bool {
	if len(args) != 2 && len(args) != 4 {
		return false
	}
	var bounds []float64
	for i := 0; i < len(args); i += 2 {
		if _, ok := args[i].(string); !ok {
			return false
		}
		n, ok := args[i+1].(json.Number)
		if !ok {
			return false
		}
		f, ok := toFloat(n)
		if !ok {
			return false
		}
		bounds = append(bounds, f)
	}
	op0 := args[0].(string)
	if len(args) == 2 {
		switch op0 {
		case "=", "<", "<=", ">", ">=":
			return true
		}
		return false
	}
	op1 := args[2].(string)
	return (op0 == ">" || op0 == ">=") && (op1 == "<" || op1 == "<=") && bounds[0] < bounds[1]
}

// ipLike reports whether s might be compiled as an IP address range by event-ruler (§2.9):
// anything made of hex digits, dots and colons with a dot or a colon.
func ipLike(s string) bool {
	if !strings.ContainsAny(s, ".:") {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF.:", c) {
			return false
		}
	}
	return true
}

// refComparable reports whether the JSON text data is one refMatch and the engine should see
// alike: valid UTF-8 with no \u escape of a surrogate (encoding/json turns those into U+FFFD
// while an engine may keep the bytes), no duplicate object names (event-ruler flattens every
// member, encoding/json keeps the last), and no name with a dot.
func refComparable(data []byte) bool {
	if !utf8.Valid(data) || hasSurrogateEscape(data) {
		return false
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	ok, err := comparableValue(d)
	return ok && err == nil
}

func hasSurrogateEscape(data []byte) bool {
	for i := 0; i+5 < len(data); i++ {
		if data[i] == '\\' && data[i+1] == 'u' && (data[i+2] == 'd' || data[i+2] == 'D') &&
			strings.IndexByte("89abcdefABCDEF", data[i+3]) >= 0 {
			return true
		}
		if data[i] == '\\' {
			i++ // skip the escaped character, so that \\ud800 is not taken for an escape
		}
	}
	return false
}

func comparableValue(d *json.Decoder) (bool, error) {
	t, err := d.Token()
	if err != nil {
		return false, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			seen := map[string]bool{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return false, err
				}
				name := k.(string)
				if seen[name] || strings.Contains(name, ".") {
					return false, nil
				}
				seen[name] = true
				if ok, err := comparableValue(d); !ok || err != nil {
					return ok, err
				}
			}
		case '[':
			for d.More() {
				if ok, err := comparableValue(d); !ok || err != nil {
					return ok, err
				}
			}
		}
		_, err := d.Token() // the closing delimiter
		return err == nil, err
	}
	return true, nil
}

// refCase is a pattern, a document and whether the pattern matches it.
type refCase struct {
	pattern, doc string
	want         bool
}

// TestRefMatch checks the oracle itself on the cases the semantics note spells out.
func TestRefMatch(t *testing.T) {
	tests := append(refStructureCases(), refValueCases()...)
	for _, tt := range tests {
		p, err := decodeJSON([]byte(tt.pattern))
		if err != nil {
			t.Fatalf("pattern %s: %v", tt.pattern, err)
		}
		if !refSupported(p) {
			t.Errorf("pattern %s: refSupported = false", tt.pattern)
		}
		d, err := decodeJSON([]byte(tt.doc))
		if err != nil {
			t.Fatalf("doc %s: %v", tt.doc, err)
		}
		if got := refMatch(p, d); got != tt.want {
			t.Errorf("refMatch(%s, %s) = %v, want %v", tt.pattern, tt.doc, got, tt.want)
		}
	}
}

// refStructureCases are TestRefMatch's cases of §2.1 to §2.4: structure, arrays, types, numbers.
func refStructureCases() []refCase {
	return []refCase{
		// §2.1 structure
		{`{"a":["x"]}`, `{"a":"x"}`, true},
		{`{"a":["x"]}`, `{"a":"y"}`, false},
		{`{"a":["x","y"]}`, `{"a":"y"}`, true},
		{`{"a":["x"],"b":["y"]}`, `{"a":"x","b":"y","c":1}`, true},
		{`{"a":["x"],"b":["y"]}`, `{"a":"x"}`, false},
		{`{"a":{"b":["x"]}}`, `{"a":{"b":"x"}}`, true},
		{`{"a":{"b":["x"]}}`, `{"a":"x"}`, false},
		{`{"a":["x"]}`, `{"a":{"b":"x"}}`, false},
		{`{"A":["x"]}`, `{"a":"x"}`, false},
		// §2.2 arrays
		{`{"a":["x"]}`, `{"a":["y","x"]}`, true},
		{`{"a":["x"]}`, `{"a":[["y"],["x"]]}`, true},
		{`{"a":{"b":[1]}}`, `{"a":[{"b":1}]}`, true},
		{`{"e":{"f":["Anna"],"l":["Jones"]}}`, `{"e":[{"f":"Anna","l":"Smith"},{"f":"Peter","l":"Jones"}]}`, false},
		{`{"e":{"f":["Anna"],"l":["Jones"]}}`, `{"e":[{"f":"Anna","l":"Smith"},{"f":"Anna","l":"Jones"}]}`, true},
		{`{"a":["x"]}`, `{"a":[]}`, false},
		{`{"a":[null]}`, `{"a":[]}`, false},
		{`{"a":[{"exists":true}]}`, `{"a":[]}`, false},
		{`{"a":[{"exists":false}]}`, `{"a":[]}`, true},
		{`{"a":[{"anything-but":"x"}]}`, `{"a":[]}`, false},
		// §2.3 types
		{`{"a":["5"]}`, `{"a":5}`, false},
		{`{"a":[5]}`, `{"a":"5"}`, false},
		{`{"a":[true]}`, `{"a":"true"}`, false},
		{`{"a":[true]}`, `{"a":true}`, true},
		{`{"a":[null]}`, `{"a":"null"}`, false},
		{`{"a":[null]}`, `{"a":""}`, false},
		{`{"a":[null]}`, `{"a":null}`, true},
		{`{"a":[""]}`, `{"a":""}`, true},
		{`{"a":[{"prefix":""}]}`, `{"a":5}`, false},
		{`{"a":[{"prefix":""}]}`, `{"a":""}`, true},
		{`{"a":[{"suffix":""}]}`, `{"a":"q"}`, true},
		{`{"a":[{"numeric":[">",1]}]}`, `{"a":"5"}`, false},
		{`{"a":["5",5]}`, `{"a":5}`, true},
		{`{"a":["5",5]}`, `{"a":"5"}`, true},
		{`{"a":["{\"b\":1}"]}`, `{"a":"{\"b\":1}"}`, true},
		{`{"a":{"b":[1]}}`, `{"a":"{\"b\":1}"}`, false},
		// §2.4 numbers
		{`{"n":[300]}`, `{"n":300.0}`, true},
		{`{"n":[300]}`, `{"n":3.0e2}`, true},
		{`{"n":[300]}`, `{"n":301}`, false},
		{`{"n":[{"numeric":["=",100]}]}`, `{"n":100.0}`, true},
		{`{"n":[{"numeric":["=",3.018e2]}]}`, `{"n":301.8}`, true},
		{`{"n":[{"numeric":[">",10,"<=",20]}]}`, `{"n":20}`, true},
		{`{"n":[{"numeric":[">",10,"<=",20]}]}`, `{"n":10}`, false},
		{`{"n":[{"numeric":[">=",10,"<",20]}]}`, `{"n":10}`, true},
		{`{"n":[{"numeric":["<",0]}]}`, `{"n":-0}`, false},
		{`{"n":[{"numeric":["=",0]}]}`, `{"n":-0}`, true},
		{`{"n":[{"anything-but":[100]}]}`, `{"n":100.0}`, false},
		{`{"n":[{"anything-but":[100]}]}`, `{"n":"100"}`, true},
		{`{"n":[{"anything-but":"100"}]}`, `{"n":100}`, true},
	}
}

// refValueCases are TestRefMatch's cases of §2.6 on: null and missing, exists, strings,
// anything-but, $or, documents that are not objects.
func refValueCases() []refCase {
	return []refCase{
		// §2.6 null vs missing vs empty
		{`{"a":[{"exists":true}]}`, `{}`, false},
		{`{"a":[{"exists":false}]}`, `{}`, true},
		{`{"a":[{"anything-but":"x"}]}`, `{}`, false},
		{`{"a":[{"exists":true}]}`, `{"a":null}`, true},
		{`{"a":[{"exists":false}]}`, `{"a":null}`, false},
		{`{"a":[{"anything-but":"x"}]}`, `{"a":null}`, true},
		{`{"a":[{"exists":true}]}`, `{"a":""}`, true},
		{`{"a":[{"anything-but":"x"}]}`, `{"a":""}`, true},
		{`{"a":[{"exists":true}]}`, `{"a":{}}`, false},
		{`{"a":[{"exists":false}]}`, `{"a":{}}`, true},
		{`{"a":[{"exists":true}]}`, `{"a":{"b":1}}`, false},
		{`{"a":[{"anything-but":"x"}]}`, `{"a":{"b":1}}`, false},
		{`{"a":[{"numeric":[">",0]}]}`, `{"a":null}`, false},
		// §2.7 exists
		{`{"p":{"a":[{"exists":false}]}}`, `{}`, true},
		{`{"p":{"a":[{"exists":false}]}}`, `{"p":5}`, true},
		{`{"p":{"a":[{"exists":false}]}}`, `{"p":[]}`, true},
		{`{"p":{"a":[{"exists":false}]}}`, `{"p":[{"a":1},{"b":2}]}`, false},
		{`{"p":{"a":[{"exists":false}]}}`, `{"p":[{"b":1},{"b":2}]}`, true},
		{`{"p":{"a":[{"exists":true}]}}`, `{"p":[{"b":1},{"a":null}]}`, true},
		{`{"a":[{"anything-but":["roses"]},{"exists":false}]}`, `{}`, true},
		{`{"a":[{"anything-but":["roses"]},{"exists":false}]}`, `{"a":"roses"}`, false},
		{`{"a":[{"anything-but":["roses"]},{"exists":false}]}`, `{"a":"tulips"}`, true},
		{`{"p":{"a":["x"],"b":[{"exists":false}]}}`, `{"p":[{"a":"x"},{"b":1}]}`, false},
		{`{"p":{"a":["x"],"b":[{"exists":false}]}}`, `{"p":[{"a":"x"},{"c":1}]}`, true},
		// §2.9 strings
		{`{"a":["Alice"]}`, `{"a":"alice"}`, false},
		{`{"a":[{"equals-ignore-case":"alice"}]}`, `{"a":"ALICE"}`, true},
		{`{"a":[{"equals-ignore-case":"école"}]}`, `{"a":"ÉCOLE"}`, true},
		{`{"a":[{"equals-ignore-case":"5"}]}`, `{"a":5}`, false},
		{`{"a":[{"prefix":"us-"}]}`, `{"a":"us-east-1"}`, true},
		{`{"a":[{"prefix":"us-"}]}`, `{"a":"eu-west-1"}`, false},
		{`{"a":[{"suffix":".png"}]}`, `{"a":"x.png"}`, true},
		{`{"a":[{"suffix":".png"}]}`, `{"a":"x.PNG"}`, false},
		// §3 anything-but
		{`{"a":[{"anything-but":"x"}]}`, `{"a":["x","y"]}`, true},
		{`{"a":[{"anything-but":["x","y"]}]}`, `{"a":["x","y"]}`, false},
		{`{"a":[{"anything-but":["x","y"]}]}`, `{"a":"X"}`, true},
		{`{"a":[{"anything-but":"x"}]}`, `{"a":true}`, true},
		// §2.8 $or
		{`{"$or":[{"a":["1"]},{"b":["2"]}]}`, `{"b":"2"}`, true},
		{`{"$or":[{"a":["1"]},{"b":["2"]}]}`, `{"b":"1"}`, false},
		{`{"c":["3"],"$or":[{"a":["1"]},{"b":["2"]}]}`, `{"b":"2"}`, false},
		{`{"c":["3"],"$or":[{"a":["1"]},{"b":["2"]}]}`, `{"b":"2","c":"3"}`, true},
		{`{"e":{"f":["Anna"]},"$or":[{"e":{"l":["Jones"]}},{"x":["1"]}]}`, `{"e":[{"f":"Anna","l":"Smith"},{"f":"Peter","l":"Jones"}]}`, false},
		{`{"e":{"f":["Anna"]},"$or":[{"e":{"l":["Jones"]}},{"x":["1"]}]}`, `{"e":[{"f":"Anna","l":"Jones"}]}`, true},
		{`{"e":{"f":["Anna"],"$or":[{"l":["Jones"]},{"l":["Smith"]}]}}`, `{"e":[{"f":"Anna","l":"Smith"}]}`, true},
		{`{"$or":[{"$or":[{"a":["1"]},{"b":["2"]}]},{"c":["3"]}]}`, `{"b":"2"}`, true},
		// not an object
		{`{"a":["x"]}`, `["x"]`, false},
		{`{"a":["x"]}`, `"x"`, false},
	}
}

func TestRefSupported(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		want    bool
	}{
		{`{"a":["x"]}`, true},
		{`{"a":[]}`, false},
		{`{"a":{}}`, false},
		{`{}`, false},
		{`{"a":"x"}`, false},
		{`{"$or":[{"a":["x"]},{"b":["y"]}]}`, true},
		{`{"$or":[{"a":["x"]},{"a":["y"]}]}`, true},
		{`{"a":{"b":["1"]},"$or":[{"a":{"c":["2"]}},{"d":["3"]}]}`, true},
		{`{"a":["x"],"$or":[{"a":["y"]},{"b":["z"]}]}`, false},
		{`{"a":["x"],"$or":[{"a":{"b":["y"]}},{"b":["z"]}]}`, false},
		{`{"$or":[{"a":["x"]}]}`, false},
		{`{"$or":[{"a":["x"]},{"prefix":["y"]}]}`, false},
		{`{"a":[123456789012345678]}`, false},
		{`{"a.b":["x"]}`, false},
		{`{"a":[{"wildcard":"x*"}]}`, false},
		{`{"a":[{"cidr":"10.0.0.0/8"}]}`, false},
		{`{"a":["10.0.0.1"]}`, false},
		{`{"a":[{"prefix":{"equals-ignore-case":"x"}}]}`, false},
		{`{"a":[{"anything-but":{"prefix":"x"}}]}`, false},
		{`{"a":[{"anything-but":["x",1]}]}`, false},
		{`{"a":[{"anything-but":[]}]}`, false},
		{`{"a":[{"anything-but":["x","y"]}]}`, true},
		{`{"a":[{"anything-but":[1,2.5]}]}`, true},
		{`{"a":[{"numeric":[">",1,"<",2]}]}`, true},
		{`{"a":[{"numeric":[">",2,"<",2]}]}`, false},
		{`{"a":[{"numeric":["<",2,">",1]}]}`, false},
		{`{"a":[{"numeric":["=",1e400]}]}`, false},
		{`{"a":[1e400]}`, false},
		{`{"a":[{"exists":true,"prefix":"x"}]}`, false},
	} {
		p, err := decodeJSON([]byte(tt.pattern))
		if err != nil {
			t.Fatalf("pattern %s: %v", tt.pattern, err)
		}
		if got := refSupported(p); got != tt.want {
			t.Errorf("refSupported(%s) = %v, want %v", tt.pattern, got, tt.want)
		}
	}
}

func TestRefComparable(t *testing.T) {
	for _, tt := range []struct {
		doc  string
		want bool
	}{
		{`{"a":1,"b":[{"c":"x"}]}`, true},
		{`{"a":1,"a":2}`, false},
		{`{"a":{"b":1,"b":2}}`, false},
		{`{"a.b":1}`, false},
		{`{"a":"\ud83d\ude00"}`, false},
		{`{"a":"\\ud800"}`, true},
		{"{\"a\":\"\xff\"}", false},
		{`{"a":1e999}`, true},
	} {
		if got := refComparable([]byte(tt.doc)); got != tt.want {
			t.Errorf("refComparable(%s) = %v, want %v", tt.doc, got, tt.want)
		}
	}
}
