package cfnschema

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/kafkalambda/toolkit/internal/template"
)

// present returns the keys of the mapping n that have a value: a key whose value is
// Ref AWS::NoValue is absent.
func present(n *template.Node) []string {
	var out []string
	for _, p := range n.Pairs {
		if !isNoValue(p.Value) {
			out = append(out, p.Key)
		}
	}
	return out
}

// object checks a literal mapping: its keys against properties, patternProperties and
// additionalProperties, each value against its schema, and the required-property keywords.
func (k *check) object(n *template.Node, s map[string]any, path string) {
	props, _ := s["properties"].(map[string]any)
	patterns, _ := s["patternProperties"].(map[string]any)
	closed := s["additionalProperties"] == false
	extra, _ := s["additionalProperties"].(map[string]any)
	for _, p := range n.Pairs {
		if isNoValue(p.Value) || strings.HasPrefix(p.Key, "Fn::") {
			continue // Fn::Transform (AWS::Include) beside properties: what it gives is not known
		}
		at := path + "." + p.Key
		from := len(k.problems)
		if ps, ok := props[p.Key].(map[string]any); ok {
			k.value(p.Value, ps, at)
		} else if ps, ok := matchPattern(patterns, p.Key); ok {
			k.value(p.Value, ps, at)
		} else if extra != nil {
			k.value(p.Value, extra, at)
		} else if closed && (props != nil || patterns != nil) {
			k.unknown(n, p.Key, props, at)
		}
		k.atKey(from, p.Value.Pos, p.KeyPos)
	}
	k.required(n, s, path)
}

// atKey moves the problems from index from on that point at the value at pos to the key
// at keyPos, as cfn-lint reports them: "Properties.BatchSize" is where the key is written.
func (k *check) atKey(from int, pos, keyPos template.Pos) {
	for i := from; i < len(k.problems); i++ {
		if p := &k.problems[i]; !p.keyed && p.Pos == pos {
			p.Pos, p.keyed = keyPos, true
		}
	}
}

// matchPattern returns the schema of the first patternProperties pattern that key matches.
// Patterns Go's regexp cannot compile match nothing, and so are not checked.
func matchPattern(patterns map[string]any, key string) (map[string]any, bool) {
	for _, pat := range sortedKeys(patterns) {
		if re := compile(pat); re != nil && re.MatchString(key) {
			ps, ok := patterns[pat].(map[string]any)
			return ps, ok
		}
	}
	return nil, false
}

// unknown reports key, a property the schema does not have, with the nearest name it has.
func (k *check) unknown(n *template.Node, key string, props map[string]any, path string) {
	what := "property"
	if path == "Properties."+key {
		what = k.typ + " property"
	}
	fix := ""
	if near := nearest(key, sortedKeys(props)); near != "" {
		fix = "did you mean " + near + "?"
	} else if len(props) > 0 && len(props) <= 12 {
		fix = "the properties are " + strings.Join(sortedKeys(props), ", ")
	}
	k.addAtKey(n.KeyPos(key), path, fmt.Sprintf("unknown %s %s", what, key), fix)
}

// required checks required, dependencies, dependentRequired, dependentExcluded, requiredXor
// and requiredOr on the mapping n.
func (k *check) required(n *template.Node, s map[string]any, path string) {
	has := present(n)
	for _, name := range strs(s["required"]) {
		if !slices.Contains(has, name) {
			k.add(n.Pos, path, "missing required property "+name, "add "+name)
		}
	}
	deps, _ := s["dependencies"].(map[string]any)
	req, _ := s["dependentRequired"].(map[string]any)
	for _, m := range []map[string]any{deps, req} {
		for _, key := range sortedKeys(m) {
			if !slices.Contains(has, key) {
				continue
			}
			if sub, ok := m[key].(map[string]any); ok {
				k.value(n, sub, path)
				continue
			}
			for _, need := range strs(m[key]) {
				if !slices.Contains(has, need) {
					k.addAtKey(n.KeyPos(key), path+"."+key, key+" needs "+need, "add "+need+", or remove "+key)
				}
			}
		}
	}
	excl, _ := s["dependentExcluded"].(map[string]any)
	for _, key := range sortedKeys(excl) {
		for _, not := range strs(excl[key]) {
			if slices.Contains(has, key) && slices.Contains(has, not) && key < not {
				k.addAtKey(n.KeyPos(not), path+"."+not, key+" and "+not+" cannot both be set", "remove one of them")
			}
		}
	}
	if xor := strs(s["requiredXor"]); len(xor) > 0 {
		switch set := intersect(xor, has); {
		case len(set) == 0:
			k.add(n.Pos, path, "needs one of "+strings.Join(xor, ", "), "add one of them")
		case len(set) > 1:
			k.addAtKey(n.KeyPos(set[1]), path, "only one of "+strings.Join(set, ", ")+" may be set", "remove all but one")
		}
	}
	if or := strs(s["requiredOr"]); len(or) > 0 && len(intersect(or, has)) == 0 {
		k.add(n.Pos, path, "needs at least one of "+strings.Join(or, ", "), "add one of them")
	}
}

// strs returns the strings of the JSON array v.
func strs(v any) []string {
	a, _ := v.([]any)
	var out []string
	for _, x := range a {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// intersect returns the names of want that has holds, in want's order.
func intersect(want, has []string) []string {
	var out []string
	for _, w := range want {
		if slices.Contains(has, w) {
			out = append(out, w)
		}
	}
	return out
}

// combinators checks allOf, anyOf, oneOf and if/then/else on the literal n.
func (k *check) combinators(n *template.Node, s map[string]any, path string) {
	for _, sub := range subSchemas(s["allOf"]) {
		k.value(n, sub, path)
	}
	if c, ok := s["if"].(map[string]any); ok {
		branch := "else"
		if len(k.branch(n, c, path)) == 0 {
			branch = "then"
		}
		if sub, ok := s[branch].(map[string]any); ok {
			k.value(n, sub, path)
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		subs := subSchemas(s[kw])
		if len(subs) == 0 {
			continue
		}
		var best []Problem
		var passed [][]string // the required names of each branch n passes
		for _, sub := range subs {
			probs := k.branch(n, sub, path)
			if len(probs) == 0 {
				passed = append(passed, strs(k.resolve(sub)["required"]))
			} else if best == nil || len(probs) < len(best) {
				best = probs
			}
		}
		switch {
		case len(passed) == 0:
			k.none(n, subs, best, path)
		case kw == "oneOf" && len(passed) > 1 && !slices.ContainsFunc(passed, func(r []string) bool { return len(r) == 0 }):
			var names []string
			for _, r := range passed {
				names = append(names, strings.Join(r, "+"))
			}
			k.add(n.Pos, path, "only one of "+strings.Join(names, ", ")+" may be set", "remove all but one")
		}
	}
}

// none reports n matching no branch of an anyOf or oneOf: as a choice of required
// properties when the branches are that, else as the problems of the nearest branch.
func (k *check) none(n *template.Node, subs []map[string]any, best []Problem, path string) {
	var choices []string
	for _, sub := range subs {
		sub = k.resolve(sub)
		req := strs(sub["required"])
		if len(req) == 0 || len(sub) != 1 {
			k.problems = append(k.problems, best...)
			return
		}
		choices = append(choices, strings.Join(req, "+"))
	}
	k.add(n.Pos, path, "needs one of "+strings.Join(choices, ", "), "add one of them")
}

// branch returns the problems of n against sub, without reporting them.
func (k *check) branch(n *template.Node, sub map[string]any, path string) []Problem {
	b := &check{c: k.c, root: k.root, typ: k.typ}
	b.value(n, sub, path)
	return b.problems
}

// subSchemas returns the schemas of the JSON array v.
func subSchemas(v any) []map[string]any {
	a, _ := v.([]any)
	var out []map[string]any
	for _, x := range a {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// regexps caches the schemas' patterns, compiled; nil for one Go's regexp cannot compile
// (a lookahead, a backreference), which is then not checked.
var regexps sync.Map // string -> *regexp.Regexp

func compile(pat string) *regexp.Regexp {
	if re, ok := regexps.Load(pat); ok {
		return re.(*regexp.Regexp)
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		re = nil
	}
	regexps.Store(pat, re)
	return re
}
