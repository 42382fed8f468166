package template

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Pos is a place in a template file: the file's name as the caller gave it, and the line and
// column (both from 1) where a node starts.
type Pos struct {
	File      string
	Line, Col int
}

// String returns "FILE:LINE:COL", the form of every message that points into a template.
func (p Pos) String() string {
	return p.File + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col)
}

// Kind is the shape of a Node.
type Kind uint8

// The kinds of node. YAML aliases are not a kind: an alias is the node it stands for (the
// same *Node, shared), so no reader of the model meets one.
const (
	Scalar   Kind = iota + 1 // a string, number, bool or null: Node.Text, typed by Node.Tag
	Sequence                 // a list: Node.Items
	Mapping                  // a mapping: Node.Pairs, in file order
)

// Tags of scalars, as YAML 1.1 (and yaml.v3) resolves a plain scalar or an explicit tag. A JSON
// template's scalars have the same tags.
const (
	TagStr       = "!!str"
	TagInt       = "!!int"
	TagFloat     = "!!float"
	TagBool      = "!!bool"
	TagNull      = "!!null"
	TagTimestamp = "!!timestamp" // a plain 2026-01-15: a string to CloudFormation
	TagBinary    = "!!binary"    // !!binary: base64 text, a string to CloudFormation
	TagSeq       = "!!seq"
	TagMap       = "!!map"
)

// Node is one value of a template, where it was written. Nodes are shared where YAML aliases
// share them, and never change once Read returns: treat them as read-only.
//
// Short-form intrinsic functions are normalised to their long form: the node of !Ref X is a
// Mapping with the one pair Ref: X, of !GetAtt A.B a Mapping Fn::GetAtt: [A, B], as
// CloudFormation reads them; the synthesised nodes have the position of the tag, and the
// mapping has the short tag as its Tag (see Node.Written).
type Node struct {
	Kind  Kind
	Tag   string  // one of the Tag constants, or the short tag of a function (!Ref, !Sub...)
	Text  string  // a Scalar's text, as written (quotes and escapes undone)
	Items []*Node // a Sequence's items
	Pairs []Pair  // a Mapping's pairs, in file order, keys unique
	Pos   Pos
}

// Pair is one key and its value in a Mapping.
type Pair struct {
	Key    string
	KeyPos Pos
	Value  *Node
}

// Get returns the value of key in the mapping n, or nil when n is nil, not a mapping or has no
// such key.
func (n *Node) Get(key string) *Node {
	if p := n.pair(key); p != nil {
		return p.Value
	}
	return nil
}

// KeyPos returns the position of key in the mapping n, or n's own position when n has no such
// key (n must not be nil).
func (n *Node) KeyPos(key string) Pos {
	if p := n.pair(key); p != nil {
		return p.KeyPos
	}
	return n.Pos
}

func (n *Node) pair(key string) *Pair {
	if n == nil || n.Kind != Mapping {
		return nil
	}
	for i := range n.Pairs {
		if n.Pairs[i].Key == key {
			return &n.Pairs[i]
		}
	}
	return nil
}

// List returns the items of the sequence n; nil for nil or any other node.
func (n *Node) List() []*Node {
	if n == nil || n.Kind != Sequence {
		return nil
	}
	return n.Items
}

// Lookup follows keys down nested mappings: n.Lookup("Properties", "Events") is
// n.Get("Properties").Get("Events").
func (n *Node) Lookup(keys ...string) *Node {
	for _, k := range keys {
		n = n.Get(k)
	}
	return n
}

// Keys returns the keys of the mapping n in file order (nil for any other node).
func (n *Node) Keys() []string {
	if n == nil || n.Kind != Mapping {
		return nil
	}
	keys := make([]string, len(n.Pairs))
	for i, p := range n.Pairs {
		keys[i] = p.Key
	}
	return keys
}

// IsString reports whether n is a string scalar: not a number, bool or null, and not an
// intrinsic function (which is a Mapping).
func (n *Node) IsString() bool {
	return n != nil && n.Kind == Scalar && (n.Tag == TagStr || n.Tag == TagTimestamp || n.Tag == TagBinary)
}

// String returns the text of n when n is a scalar other than null, else "": the plain value of
// a Type, a Condition, a Metadata entry. A number or bool gives its text as written.
func (n *Node) String() string {
	if n == nil || n.Kind != Scalar || n.Tag == TagNull {
		return ""
	}
	return n.Text
}

// IsNull reports whether n is absent (nil) or a null scalar (~, null, or nothing).
func (n *Node) IsNull() bool {
	return n == nil || n.Kind == Scalar && n.Tag == TagNull
}

// Intrinsic reports whether n is an intrinsic function, and returns its long name ("Ref",
// "Fn::Sub", "Condition") and its argument. An intrinsic function is a mapping with one key,
// Ref, Condition or a name that starts with "Fn::" (short forms are already in this form).
// A {Condition: NAME} mapping is one only where a condition is expected; Intrinsic reports it
// all the same, with the name "Condition".
func (n *Node) Intrinsic() (name string, arg *Node, ok bool) {
	if n == nil || n.Kind != Mapping || len(n.Pairs) != 1 {
		return "", nil, false
	}
	k, v := n.Pairs[0].Key, n.Pairs[0].Value
	switch {
	case k == "Ref" && v.Kind == Scalar, k == "Condition" && v.Kind == Scalar, strings.HasPrefix(k, "Fn::"):
		return k, v, true
	}
	return "", nil, false
}

// Written returns the name of the intrinsic function n as the template writes it: the short
// tag ("!Sub") or the long name ("Fn::Sub"); "" when n is not an intrinsic function.
func (n *Node) Written() string {
	name, _, ok := n.Intrinsic()
	switch {
	case !ok:
		return ""
	case strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!"):
		return n.Tag
	}
	return name
}

// FindIntrinsic returns the first intrinsic function at or under n, in file order, or nil: for
// a caller that must refuse values it cannot know (a filter pattern).
func (n *Node) FindIntrinsic() *Node {
	if n == nil {
		return nil
	}
	if _, _, ok := n.Intrinsic(); ok {
		return n
	}
	for _, c := range n.Items {
		if f := c.FindIntrinsic(); f != nil {
			return f
		}
	}
	for _, p := range n.Pairs {
		if f := p.Value.FindIntrinsic(); f != nil {
			return f
		}
	}
	return nil
}

// Plain returns n as the value encoding/json makes of the same template written as JSON:
// map[string]any, []any, string, float64, bool or nil. Intrinsic functions stay in their long
// form ({"Ref": "X"}, {"Fn::GetAtt": ["A", "B"]}), as CloudFormation reads them and a JSON
// schema of templates expects them. It fails, naming the node, on what has no JSON form: a
// YAML merge key (<<), a number JSON cannot hold (.inf, .nan), an int out of float64's range.
// The depth is bounded by Read (MaxDepth), the size by MaxNodes and MaxText.
func (n *Node) Plain() (any, error) {
	switch n.Kind {
	case Mapping:
		m := make(map[string]any, len(n.Pairs))
		for _, p := range n.Pairs {
			if p.Key == "<<" {
				return nil, errorAt(p.KeyPos, "YAML merge keys (<<) are not part of CloudFormation templates")
			}
			v, err := p.Value.Plain()
			if err != nil {
				return nil, err
			}
			m[p.Key] = v
		}
		return m, nil
	case Sequence:
		l := make([]any, len(n.Items))
		for i, c := range n.Items {
			v, err := c.Plain()
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return l, nil
	}
	return n.scalar()
}

// scalar returns the typed value of a scalar node.
func (n *Node) scalar() (any, error) {
	switch n.Tag {
	case TagNull:
		return nil, nil
	case TagBool:
		return parseBool(n.Text), nil
	case TagInt, TagFloat:
		f, err := n.Float()
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	return n.Text, nil
}

// parseBool reads a scalar resolved as !!bool by YAML 1.1 rules (true, True, TRUE, yes, on...).
func parseBool(s string) bool {
	switch strings.ToLower(s) {
	case "true", "yes", "y", "on":
		return true
	}
	return false
}

// Float returns the number of an int or float scalar: 10, -2.5, 1e3, 0x1F, 0o17, +7, .5, 1_000.
// It fails, naming the node, for a number JSON cannot hold (.inf, .nan) and for any other node.
func (n *Node) Float() (float64, error) {
	if n.Kind != Scalar || n.Tag != TagInt && n.Tag != TagFloat {
		return 0, errorAt(n.Pos, "want a number, not "+n.describe())
	}
	f, err := parseYAMLFloat(n.Text)
	if n.Tag == TagInt {
		f, err = parseYAMLInt(n.Text)
	}
	if err != nil {
		return 0, errorAt(n.Pos, fmt.Sprintf("%s is not a number klt can read", n.Text))
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, errorAt(n.Pos, n.Text+" is not a number JSON can hold")
	}
	return f, nil
}

// parseYAMLInt reads a scalar yaml.v3 resolved as !!int: decimal, 0x, 0o, 0b or a leading 0
// (octal), with a sign and underscores; one past int64 is read as uint64, then as a float.
func parseYAMLInt(s string) (float64, error) {
	clean := strings.ReplaceAll(s, "_", "")
	if i, err := strconv.ParseInt(clean, 0, 64); err == nil {
		return float64(i), nil
	}
	if u, err := strconv.ParseUint(strings.TrimPrefix(clean, "+"), 0, 64); err == nil {
		return float64(u), nil
	}
	return strconv.ParseFloat(clean, 64)
}

// parseYAMLFloat reads a YAML 1.1 float: Go's syntax plus .inf, .nan and a leading dot.
func parseYAMLFloat(s string) (float64, error) {
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case ".inf":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case ".nan":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
}

// AppendJSON appends the JSON text of n to b: mappings keep their order, a number keeps the
// text it was written with when that is JSON (10, -2.5, 1e3; 0x1F becomes 31), a string is
// escaped without HTML escaping, an intrinsic function is written in its long form. It fails,
// naming the node, where Plain fails, and when b would grow past max bytes (max <= 0: no cap
// but MaxNodes and MaxText).
func (n *Node) AppendJSON(b []byte, max int) ([]byte, error) {
	if max > 0 && len(b) > max {
		return nil, errorAt(n.Pos, fmt.Sprintf("more than %d bytes as JSON", max))
	}
	switch n.Kind {
	case Mapping:
		b = append(b, '{')
		for i, p := range n.Pairs {
			if p.Key == "<<" {
				return nil, errorAt(p.KeyPos, "YAML merge keys (<<) are not part of CloudFormation templates")
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, p.Key)
			b = append(b, ':')
			var err error
			if b, err = p.Value.AppendJSON(b, max); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case Sequence:
		b = append(b, '[')
		for i, c := range n.Items {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = c.AppendJSON(b, max); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	switch n.Tag {
	case TagNull:
		return append(b, "null"...), nil
	case TagBool:
		return strconv.AppendBool(b, parseBool(n.Text)), nil
	case TagInt, TagFloat:
		if json.Valid([]byte(n.Text)) {
			return append(b, n.Text...), nil // as written
		}
		f, err := n.Float()
		if err != nil {
			return nil, err
		}
		return strconv.AppendFloat(b, f, 'g', -1, 64), nil
	}
	return appendJSONString(b, n.Text), nil
}

// appendJSONString appends s as a JSON string, without HTML escaping (a "<" of a numeric
// filter stays readable).
func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // cannot fail for a string
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// describe names what n is, for messages: "a list", "a mapping", "!Ref", "the number 3".
func (n *Node) describe() string {
	if name, _, ok := n.Intrinsic(); ok {
		return name
	}
	switch n.Kind {
	case Sequence:
		return "a list"
	case Mapping:
		return "a mapping"
	}
	switch n.Tag {
	case TagNull:
		return "null"
	case TagInt, TagFloat:
		return "the number " + n.Text
	case TagBool:
		return n.Text
	}
	return strconv.Quote(n.Text)
}
