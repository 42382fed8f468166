package samtemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/criteria"
	"github.com/kafkalambda/toolkit/filter"
	"go.yaml.in/yaml/v3"
)

// Resource types that carry FilterCriteria.
const (
	SamFunctionType = "AWS::Serverless::Function"
	EsmType         = "AWS::Lambda::EventSourceMapping"
)

// SamTemplate is a SAM or CloudFormation template, YAML or JSON, read into yaml.Node so that
// short-form intrinsics (!Ref, !GetAtt, !Sub ...) anywhere in it are kept as tagged nodes
// instead of failing the read. Only the parts on the way to a FilterCriteria are looked at.
type SamTemplate struct {
	file      string     // name for messages
	resources *yaml.Node // the Resources mapping
}

// ParseTemplate reads a template.
func ParseTemplate(file string, data []byte) (*SamTemplate, error) {
	top, err := LoadYAML(file, data)
	if err != nil {
		return nil, err
	}
	if top == nil {
		return nil, fmt.Errorf("%s: empty file; want a SAM or CloudFormation template", file)
	}
	root := Resolve(top)
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: want a SAM or CloudFormation template, a mapping with Resources", file, root.Line)
	}
	resKey, res := MapGet(root, "Resources")
	if res == nil {
		return nil, fmt.Errorf("%s: no Resources: not a SAM or CloudFormation template", file)
	}
	if res.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: Resources is not a mapping", file, resKey.Line)
	}
	return &SamTemplate{file: file, resources: res}, nil
}

// Criteria returns the FilterCriteria that ref names: "Function.Event" for an event of an
// AWS::Serverless::Function, or "Mapping" for an AWS::Lambda::EventSourceMapping.
func (t *SamTemplate) Criteria(ref string) (*criteria.Spec, error) {
	name, event, dotted := strings.Cut(ref, ".")
	resKey, res := MapGet(t.resources, name)
	if res == nil {
		return nil, fmt.Errorf("%s: no resource %q in Resources; %s", t.file, name, t.FunctionList())
	}
	typ := scalarAt(res, "Type")
	_, props := MapGet(res, "Properties")
	switch typ {
	case SamFunctionType:
		eventsKey, events := MapGet(props, "Events")
		if events == nil || events.Kind != yaml.MappingNode || len(events.Content) == 0 {
			return nil, fmt.Errorf("%s:%d: function %s has no Events", t.file, resKey.Line, name)
		}
		if !dotted {
			return nil, fmt.Errorf("%s: %s is a function: name one of its events, as %s#%s.EVENT; events of %s: %s",
				t.file, name, t.file, name, name, strings.Join(mapKeys(events), ", "))
		}
		evKey, ev := MapGet(events, event)
		if ev == nil {
			return nil, fmt.Errorf("%s:%d: function %s has no event %q; events of %s: %s",
				t.file, eventsKey.Line, name, event, name, strings.Join(mapKeys(events), ", "))
		}
		evType := scalarAt(ev, "Type")
		_, evProps := MapGet(ev, "Properties")
		fcKey, fc := MapGet(evProps, "FilterCriteria")
		if fc == nil {
			return nil, fmt.Errorf("%s:%d: event %s.%s (Type %s) has no FilterCriteria", t.file, evKey.Line, name, event, OrNone(evType))
		}
		return t.spec(fcKey, fc, name+"."+event, evType), nil
	case EsmType:
		if dotted {
			return nil, fmt.Errorf("%s: %s is an %s, which has no events: name it alone, as %s#%s",
				t.file, name, EsmType, t.file, name)
		}
		fcKey, fc := MapGet(props, "FilterCriteria")
		if fc == nil {
			return nil, fmt.Errorf("%s:%d: event source mapping %s has no FilterCriteria", t.file, resKey.Line, name)
		}
		return t.spec(fcKey, fc, name, ""), nil
	}
	return nil, fmt.Errorf("%s:%d: resource %s is %s, not an %s or an %s; %s",
		t.file, resKey.Line, name, OrNone(typ), SamFunctionType, EsmType, t.FunctionList())
}

// All returns every FilterCriteria of the template, in the template's order. It is an error
// when there is none, and when an intrinsic function may hide some (see criteriaRefs): then
// the FilterCriteria klt found come with the error, to be checked all the same.
func (t *SamTemplate) All() ([]*criteria.Spec, error) {
	refs, hidden := t.CriteriaRefs()
	var specs []*criteria.Spec
	for _, ref := range refs {
		s, err := t.Criteria(ref)
		if err != nil {
			return nil, err // cannot happen: criteriaRefs found the FilterCriteria
		}
		specs = append(specs, s)
	}
	if len(specs) == 0 && len(hidden) == 0 {
		return nil, fmt.Errorf("%s: no FilterCriteria in the template; %s", t.file, t.FunctionList())
	}
	return specs, errors.Join(hidden...)
}

// CriteriaRefs returns the names of every FilterCriteria of the template, as criteria takes
// them: "Function.Event" and "Mapping". It also returns an error for each place where an
// intrinsic function klt cannot evaluate stands where FilterCriteria could be (a function's
// Properties or Events, an event or its Properties, a mapping's Properties): what it hides is
// not known, so it must not pass for "no FilterCriteria here".
func (t *SamTemplate) CriteriaRefs() (refs []string, hidden []error) {
	hides := func(n *yaml.Node, where string) bool {
		f, ok := intrinsic(n)
		if ok {
			hidden = append(hidden, fmt.Errorf("%s:%d: %s is %s, an intrinsic function klt cannot evaluate, so FilterCriteria under it are not checked; write them out",
				t.file, n.Line, where, f))
		}
		return ok
	}
	for i := 0; i+1 < len(t.resources.Content); i += 2 {
		name, res := t.resources.Content[i].Value, Resolve(t.resources.Content[i+1])
		typ := scalarAt(res, "Type")
		if typ != SamFunctionType && typ != EsmType {
			continue
		}
		_, props := MapGet(res, "Properties")
		if hides(props, name+".Properties") || props == nil || props.Kind != yaml.MappingNode {
			continue
		}
		switch typ {
		case SamFunctionType:
			_, events := MapGet(props, "Events")
			if hides(events, name+".Properties.Events") || events == nil || events.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(events.Content); j += 2 {
				evName, ev := events.Content[j].Value, Resolve(events.Content[j+1])
				if hides(ev, name+".Events."+evName) {
					continue
				}
				_, evProps := MapGet(ev, "Properties")
				if hides(evProps, name+".Events."+evName+".Properties") {
					continue
				}
				if _, fc := MapGet(evProps, "FilterCriteria"); fc != nil {
					refs = append(refs, name+"."+evName)
				}
			}
		case EsmType:
			if _, fc := MapGet(props, "FilterCriteria"); fc != nil {
				refs = append(refs, name)
			}
		}
	}
	return refs, hidden
}

// FunctionList says which functions the template has, for an error about a missing one.
func (t *SamTemplate) FunctionList() string {
	var fns, esms []string
	for i := 0; i+1 < len(t.resources.Content); i += 2 {
		switch scalarAt(Resolve(t.resources.Content[i+1]), "Type") {
		case SamFunctionType:
			fns = append(fns, t.resources.Content[i].Value)
		case EsmType:
			esms = append(esms, t.resources.Content[i].Value)
		}
	}
	s := "functions in template: " + OrNone(strings.Join(fns, ", "))
	if len(esms) > 0 {
		s += "; event source mappings: " + strings.Join(esms, ", ")
	}
	return s
}

// spec reads the FilterCriteria node fc, under the key fcKey, found at where ("Function.Event" or "Mapping"). Each
// Pattern is a JSON string or a YAML mapping, which is turned into JSON text.
func (t *SamTemplate) spec(fcKey, fc *yaml.Node, where, eventType string) *criteria.Spec {
	s := &criteria.Spec{File: t.file, Where: where, Line: fcKey.Line, EventType: eventType}
	// What is wrong with the FilterCriteria as a whole is a problem of the spec, as the
	// engine's would be, so that lint reports it in its place and goes on.
	bad := func(n *yaml.Node, format string, args ...any) *criteria.Spec {
		s.Line = n.Line
		s.ReadErrs = append(s.ReadErrs, fmt.Errorf(format, args...))
		return s
	}
	if f, ok := intrinsic(fc); ok {
		return bad(fcKey, "FilterCriteria is %s, an intrinsic function klt cannot evaluate; write the filters out", f)
	}
	if fc.Kind != yaml.MappingNode {
		return bad(fcKey, "FilterCriteria: want a mapping with Filters")
	}
	_, filters := MapGet(fc, "Filters")
	switch f, ok := intrinsic(filters); {
	case filters == nil:
		return bad(fcKey, "FilterCriteria has no Filters")
	case ok:
		return bad(filters, "Filters is %s, an intrinsic function klt cannot evaluate; write the filters out", f)
	case filters.Kind != yaml.SequenceNode:
		return bad(filters, "Filters: want a list of {Pattern: ...}")
	}
	// A filter that cannot be read is a problem of that filter, as the engine reports one,
	// so that lint still checks the others.
	for i, f := range filters.Content {
		f = Resolve(f)
		s.Patterns = append(s.Patterns, "")
		s.Lines = append(s.Lines, f.Line)
		bad := func(path, reason string) {
			s.ReadErrs = append(s.ReadErrs, &filter.Error{Filter: i, Path: path, Reason: reason})
		}

		if fn, ok := intrinsic(f); ok {
			bad("", fn+" is an intrinsic function klt cannot evaluate; write the filter out")
			continue
		}
		patKey, pat := MapGet(f, "Pattern")
		if pat == nil {
			bad("Pattern", "missing")
			continue
		}
		s.Lines[i] = patKey.Line
		text, err := PatternText(pat)
		if err != nil {
			if ne, ok := errors.AsType[*NodeError](err); ok {
				s.Lines[i] = ne.Node.Line
			}
			bad("Pattern", err.Error())
			continue
		}
		s.Patterns[i] = text
	}
	return s
}

// NodeError is an error about one node of a pattern, so that the message can give its line.
type NodeError struct {
	Node *yaml.Node
	msg  string
}

func (e *NodeError) Error() string { return e.msg }

// PatternText returns the JSON text of a Pattern node: the string itself when it is a scalar,
// as CloudFormation has it, or the JSON of a YAML mapping, which SAM also accepts.
func PatternText(n *yaml.Node) (string, error) {
	n = Resolve(n)
	if f, ok := intrinsic(n); ok {
		return "", &NodeError{n, fmt.Sprintf("%s is an intrinsic function klt cannot evaluate; write the pattern out", f)}
	}
	if n.Kind == yaml.ScalarNode {
		if n.ShortTag() == "!!null" {
			return "", &NodeError{n, "empty; want a JSON string or a mapping"}
		}
		return n.Value, nil
	}
	b, err := appendNodeJSON(nil, n, 0)
	return string(b), err
}

// Bounds on a pattern written as a YAML mapping. Aliases can make a small document stand for a
// huge or endless one; no pattern Lambda accepts comes near these.
const (
	maxPatternDepth = 100
	maxPatternJSON  = 16 * filter.MaxPatternLength
)

// appendNodeJSON appends the JSON form of the YAML node n, at nesting depth, to b. Mappings
// keep their order.
func appendNodeJSON(b []byte, n *yaml.Node, depth int) ([]byte, error) {
	n = Resolve(n)
	switch {
	case depth > maxPatternDepth:
		return nil, &NodeError{n, fmt.Sprintf("nested more than %d deep", maxPatternDepth)}
	case len(b) > maxPatternJSON:
		return nil, &NodeError{n, fmt.Sprintf("more than %d bytes as JSON; Lambda allows %d characters",
			maxPatternJSON, filter.MaxPatternLength)}
	}
	if f, ok := intrinsic(n); ok {
		return nil, &NodeError{n, fmt.Sprintf("%s is an intrinsic function klt cannot evaluate; write the value out", f)}
	}
	switch n.Kind {
	case yaml.MappingNode:
		if tag := n.ShortTag(); tag != "!!map" {
			return nil, &NodeError{n, "YAML tag " + tag + " has no JSON form"}
		}
		b = append(b, '{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := Resolve(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				return nil, &NodeError{k, "a mapping key must be a plain name"}
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k.Value)
			b = append(b, ':')
			var err error
			if b, err = appendNodeJSON(b, n.Content[i+1], depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case yaml.SequenceNode:
		if tag := n.ShortTag(); tag != "!!seq" {
			return nil, &NodeError{n, "YAML tag " + tag + " has no JSON form"}
		}
		b = append(b, '[')
		for i, c := range n.Content {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendNodeJSON(b, c, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case yaml.ScalarNode:
		return appendScalarJSON(b, n)
	}
	return nil, &NodeError{n, "unexpected YAML"}
}

// appendScalarJSON appends the JSON form of a scalar node, by its resolved YAML type.
func appendScalarJSON(b []byte, n *yaml.Node) ([]byte, error) {
	switch tag := n.ShortTag(); tag {
	case "!!null":
		return append(b, "null"...), nil
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return nil, &NodeError{n, err.Error()}
		}
		return strconv.AppendBool(b, v), nil
	case "!!int", "!!float":
		if json.Valid([]byte(n.Value)) {
			return append(b, n.Value...), nil // 10, -2.5, 1e3: as written
		}
		var f float64 // 0x1F, +1, .5, .inf: through the number
		if err := n.Decode(&f); err != nil {
			return nil, &NodeError{n, err.Error()}
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, &NodeError{n, n.Value + " is not a number JSON can hold"}
		}
		return strconv.AppendFloat(b, f, 'g', -1, 64), nil
	case "!!str", "!!timestamp", "!!binary":
		return appendJSONString(b, n.Value), nil
	default:
		return nil, &NodeError{n, "YAML tag " + tag + " has no JSON form"}
	}
}

// appendJSONString appends s as a JSON string, without HTML escaping.
func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "<" of numeric operators readable
	enc.Encode(s)            // cannot fail for a string
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// intrinsic reports whether n is a CloudFormation intrinsic function and returns its name as
// written: a short form such as "!Sub" (a local tag), or a long form, a one-key mapping such
// as {"Fn::Sub": ...} or {"Ref": ...}.
func intrinsic(n *yaml.Node) (string, bool) {
	if n == nil {
		return "", false
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return n.Tag, true
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		k, v := n.Content[0].Value, Resolve(n.Content[1])
		if strings.HasPrefix(k, "Fn::") || (k == "Ref" && v.Kind == yaml.ScalarNode) {
			return k, true
		}
	}
	return "", false
}

// Resolve follows YAML aliases (*name) to the node they stand for.
func Resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// MapGet returns the key and value nodes of key in the mapping m, or nils when m is not a
// mapping or has no such key. The value is resolved.
func MapGet(m *yaml.Node, key string) (k, v *yaml.Node) {
	m = Resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], Resolve(m.Content[i+1])
		}
	}
	return nil, nil
}

// mapKeys returns the keys of the mapping m in order.
func mapKeys(m *yaml.Node) []string {
	var keys []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		keys = append(keys, m.Content[i].Value)
	}
	return keys
}

// scalarAt returns the text of the scalar m[key], or "" when there is none.
func scalarAt(m *yaml.Node, key string) string {
	if _, v := MapGet(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// OrNone returns s, or "none" when s is empty.
func OrNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
