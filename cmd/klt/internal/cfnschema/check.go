package cfnschema

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/internal/template"
)

// Problem is one place where a resource's Properties break its schema.
type Problem struct {
	Pos     template.Pos // of the property's key, or of the value that is wrong
	Path    string       // from the resource: Properties.DestinationConfig.OnFailure, Properties.Tags[0]
	Problem string
	Fix     string // "" when there is nothing better to say than the problem

	keyed bool // Pos is a key's already, not the value's (see atKey)
}

// Checker checks the resources of one template.
type Checker struct {
	t *template.Template
}

// New returns a Checker of the resources of t: t's parameters tell what a Ref gives.
func New(t *template.Template) *Checker { return &Checker{t: t} }

// maxRefs bounds a chain of $refs that lead to $refs.
const maxRefs = 16

// check is one validation: of a resource, or of one branch of an anyOf/oneOf.
type check struct {
	c        *Checker
	root     map[string]any // the resource's schema, which $refs point into
	typ      string
	problems []Problem
}

// Resource checks the Properties of r against the schema of r.Type. It returns no problems
// when klt has no schema of the type (see Unchecked), and an error only when the vendored
// schemas cannot be read.
func (c *Checker) Resource(r *template.Resource) ([]Problem, error) {
	all, err := load()
	if err != nil {
		return nil, err
	}
	root := all[r.Type]
	if root == nil {
		return nil, nil
	}
	k := &check{c: c, root: root, typ: r.Type}
	props := r.Properties
	if props == nil {
		// No Properties: an empty mapping, so that required properties are reported, at the
		// resource's name.
		props = &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: r.Pos}
	}
	k.value(props, root, "Properties")
	if r.Properties != nil {
		k.atKey(0, r.Properties.Pos, r.Node.KeyPos("Properties"))
	}
	return k.problems, nil
}

// add reports a problem of the value at pos.
func (k *check) add(pos template.Pos, path, problem, fix string) {
	k.problems = append(k.problems, Problem{Pos: pos, Path: path, Problem: problem, Fix: fix})
}

// addAtKey reports a problem of the key at pos.
func (k *check) addAtKey(pos template.Pos, path, problem, fix string) {
	k.problems = append(k.problems, Problem{Pos: pos, Path: path, Problem: problem, Fix: fix, keyed: true})
}

// resolve follows s's $ref (a JSON pointer into the resource's schema, #/definitions/X).
func (k *check) resolve(s map[string]any) map[string]any {
	for range maxRefs {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		var cur any = k.root
		for part := range strings.SplitSeq(strings.TrimPrefix(ref, "#/"), "/") {
			m, _ := cur.(map[string]any)
			cur = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
		}
		next, ok := cur.(map[string]any)
		if !ok {
			return map[string]any{} // a $ref klt cannot follow checks nothing
		}
		// Keywords beside the $ref still apply.
		merged := make(map[string]any, len(next)+len(s))
		for key, v := range next {
			merged[key] = v
		}
		for key, v := range s {
			if key != "$ref" {
				merged[key] = v
			}
		}
		s = merged
	}
	return s
}

// value checks the node n against the schema s; path names n from the resource.
func (k *check) value(n *template.Node, s map[string]any, path string) {
	s = k.resolve(s)
	if name, arg, ok := n.Intrinsic(); ok {
		k.intrinsic(n, name, arg, s, path)
		return
	}
	if !k.typeOK(n, s, path) {
		return
	}
	switch n.Kind {
	case template.Scalar:
		k.scalar(n, s, path)
	case template.Sequence:
		k.array(n, s, path)
	case template.Mapping:
		k.object(n, s, path)
	}
	k.combinators(n, s, path)
}

// intrinsic checks an intrinsic function where s is wanted: Fn::If on both branches, the
// others by the kind of value they produce.
func (k *check) intrinsic(n *template.Node, name string, arg *template.Node, s map[string]any, path string) {
	if name == "Fn::If" {
		items := arg.List()
		if len(items) == 3 {
			for _, b := range items[1:] {
				if !isNoValue(b) {
					k.value(b, s, path)
				}
			}
		}
		return
	}
	got := k.produces(name, arg)
	types := schemaTypes(s)
	if got == kindAny || got == kindNoValue || len(types) == 0 {
		return
	}
	if got == kindList {
		if !slices.Contains(types, "array") {
			k.add(n.Pos, path, fmt.Sprintf("%s gives a list, want %s", n.Written(), strings.Join(types, " or ")), "")
		}
		return
	}
	if !slices.ContainsFunc(types, func(t string) bool { return t != "array" && t != "object" }) {
		k.add(n.Pos, path, fmt.Sprintf("%s gives a string, want %s", n.Written(), strings.Join(types, " or ")), "")
	}
}

// Kinds of value an intrinsic function produces.
const (
	kindAny = iota
	kindString
	kindList
	kindNoValue
)

// produces returns the kind of value the intrinsic function name(arg) produces.
func (k *check) produces(name string, arg *template.Node) int {
	switch name {
	case "Ref":
		return k.refKind(arg.Text)
	case "Fn::Sub", "Fn::Join", "Fn::Base64", "Fn::ToJsonString", "Fn::Length":
		return kindString
	case "Fn::Split", "Fn::GetAZs", "Fn::Cidr":
		return kindList
	}
	return kindAny // Fn::GetAtt (lists too), Fn::Select, Fn::FindInMap, Fn::ImportValue...
}

// refKind returns the kind of value Ref name gives.
func (k *check) refKind(name string) int {
	switch name {
	case "AWS::NoValue":
		return kindNoValue
	case "AWS::NotificationARNs":
		return kindList
	}
	if p := k.c.t.Parameter(name); p != nil {
		if p.Type == "CommaDelimitedList" || strings.HasPrefix(p.Type, "List<") || strings.Contains(p.Type, "<List<") {
			return kindList
		}
	}
	return kindString
}

func isNoValue(n *template.Node) bool {
	name, arg, ok := n.Intrinsic()
	return ok && name == "Ref" && arg.Text == "AWS::NoValue"
}

// schemaTypes returns the types s allows, or nil when it says none.
func schemaTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if str, ok := x.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

// typeOK reports whether the literal n is of a type s allows, reporting it when not.
func (k *check) typeOK(n *template.Node, s map[string]any, path string) bool {
	types := schemaTypes(s)
	if len(types) == 0 || n.IsNull() {
		return true
	}
	if slices.ContainsFunc(types, func(t string) bool { return isType(n, t) }) {
		return true
	}
	k.add(n.Pos, path, fmt.Sprintf("got %s, want %s", describe(n), strings.Join(types, " or ")), "")
	return false
}

// isType reports whether n is of the JSON schema type t, read as CloudFormation reads it.
func isType(n *template.Node, t string) bool {
	switch t {
	case "object":
		return n.Kind == template.Mapping
	case "array":
		return n.Kind == template.Sequence
	}
	if n.Kind != template.Scalar {
		return false
	}
	switch t {
	case "string":
		return true
	case "integer":
		_, err := strconv.ParseInt(strings.TrimSpace(n.Text), 10, 64)
		return n.Tag != template.TagBool && (err == nil || n.Tag == template.TagInt)
	case "number":
		_, err := strconv.ParseFloat(strings.TrimSpace(n.Text), 64)
		return n.Tag != template.TagBool && (err == nil || n.Tag == template.TagInt || n.Tag == template.TagFloat)
	case "boolean":
		return n.Tag == template.TagBool || strings.EqualFold(n.Text, "true") || strings.EqualFold(n.Text, "false")
	}
	return true
}

// describe names the kind of n for a message.
func describe(n *template.Node) string {
	switch n.Kind {
	case template.Mapping:
		return "a mapping"
	case template.Sequence:
		return "a list"
	}
	switch n.Tag {
	case template.TagBool:
		return "boolean " + n.Text
	case template.TagInt, template.TagFloat:
		return "number " + n.Text
	}
	return strconv.Quote(n.Text)
}

// scalar checks enum, const, lengths and bounds of a literal scalar.
func (k *check) scalar(n *template.Node, s map[string]any, path string) {
	if n.IsNull() {
		return
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(v any) bool { return sameScalar(n, v) }) {
		k.add(n.Pos, path, fmt.Sprintf("%s is not one of the allowed values", strconv.Quote(n.Text)), "use one of "+listValues(enum))
	}
	if c, ok := s["const"]; ok && !sameScalar(n, c) {
		k.add(n.Pos, path, fmt.Sprintf("%s is not the one allowed value", strconv.Quote(n.Text)), "use "+listValues([]any{c}))
	}
	types := schemaTypes(s)
	if slices.Contains(types, "string") && !slices.Contains(types, "number") && !slices.Contains(types, "integer") {
		l := float64(len([]rune(n.Text)))
		if minL, ok := s["minLength"].(float64); ok && l < minL {
			k.add(n.Pos, path, fmt.Sprintf("%s is shorter than %v characters", strconv.Quote(n.Text), minL), "")
		}
		if maxL, ok := s["maxLength"].(float64); ok && l > maxL {
			k.add(n.Pos, path, fmt.Sprintf("a string of %v characters is longer than %v", l, maxL), "")
		}
		// Patterns are checked on strings as written: a number stays a number to cfn-lint.
		if pat, ok := s["pattern"].(string); ok && n.Tag == template.TagStr {
			if re := compile(pat); re != nil && !re.MatchString(n.Text) {
				k.add(n.Pos, path, fmt.Sprintf("%s does not match the pattern %s", strconv.Quote(n.Text), pat), "")
			}
		}
		return
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(n.Text), 64)
	if err != nil || math.IsNaN(f) {
		return
	}
	if lo, ok := s["minimum"].(float64); ok && f < lo {
		k.add(n.Pos, path, fmt.Sprintf("%s is under the minimum %v", n.Text, lo), "")
	}
	if hi, ok := s["maximum"].(float64); ok && f > hi {
		k.add(n.Pos, path, fmt.Sprintf("%s is over the maximum %v", n.Text, hi), "")
	}
}

// sameScalar reports whether the scalar n is the schema value v.
func sameScalar(n *template.Node, v any) bool {
	switch v := v.(type) {
	case string:
		return n.Text == v
	case bool:
		return isType(n, "boolean") && strings.EqualFold(n.Text, strconv.FormatBool(v))
	case float64:
		f, err := strconv.ParseFloat(strings.TrimSpace(n.Text), 64)
		return err == nil && f == v
	}
	return false
}

// listValues writes enum values for a fix, at most 12 of them.
func listValues(vs []any) string {
	var out []string
	for i, v := range vs {
		if i == 12 {
			out = append(out, fmt.Sprintf("... (%d in all)", len(vs)))
			break
		}
		out = append(out, fmt.Sprint(v))
	}
	return strings.Join(out, ", ")
}

// array checks the lengths and the items of a literal list.
func (k *check) array(n *template.Node, s map[string]any, path string) {
	count := float64(len(n.Items))
	if lo, ok := s["minItems"].(float64); ok && count < lo {
		k.add(n.Pos, path, fmt.Sprintf("%v items, want at least %v", count, lo), "")
	}
	if hi, ok := s["maxItems"].(float64); ok && count > hi {
		k.add(n.Pos, path, fmt.Sprintf("%v items, want at most %v", count, hi), "")
	}
	items, ok := s["items"].(map[string]any)
	if !ok {
		return
	}
	for i, it := range n.Items {
		if !isNoValue(it) {
			k.value(it, items, path+"["+strconv.Itoa(i)+"]")
		}
	}
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for key := range m {
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}
