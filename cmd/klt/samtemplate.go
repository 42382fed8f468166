package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kafkalambda/toolkit/filter"
)

// Resource types that carry FilterCriteria.
const (
	samFunctionType = "AWS::Serverless::Function"
	esmType         = "AWS::Lambda::EventSourceMapping"
)

// samTemplate is a SAM or CloudFormation template, YAML or JSON, read into yaml.Node so that
// short-form intrinsics (!Ref, !GetAtt, !Sub ...) anywhere in it are kept as tagged nodes
// instead of failing the read. Only the parts on the way to a FilterCriteria are looked at.
type samTemplate struct {
	file      string     // name for messages
	resources *yaml.Node // the Resources mapping
}

// parseTemplate reads a template.
func parseTemplate(file string, data []byte) (*samTemplate, error) {
	top, err := loadYAML(file, data)
	if err != nil {
		return nil, err
	}
	if top == nil {
		return nil, fmt.Errorf("%s: empty file; want a SAM or CloudFormation template", file)
	}
	root := resolve(top)
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: want a SAM or CloudFormation template, a mapping with Resources", file, root.Line)
	}
	resKey, res := mapGet(root, "Resources")
	if res == nil {
		return nil, fmt.Errorf("%s: no Resources: not a SAM or CloudFormation template", file)
	}
	if res.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: Resources is not a mapping", file, resKey.Line)
	}
	return &samTemplate{file: file, resources: res}, nil
}

// criteria returns the FilterCriteria that ref names: "Function.Event" for an event of an
// AWS::Serverless::Function, or "Mapping" for an AWS::Lambda::EventSourceMapping.
func (t *samTemplate) criteria(ref string) (*criteriaSpec, error) {
	name, event, dotted := strings.Cut(ref, ".")
	resKey, res := mapGet(t.resources, name)
	if res == nil {
		return nil, fmt.Errorf("%s: no resource %q in Resources; %s", t.file, name, t.functionList())
	}
	typ := scalarAt(res, "Type")
	_, props := mapGet(res, "Properties")
	switch typ {
	case samFunctionType:
		eventsKey, events := mapGet(props, "Events")
		if events == nil || events.Kind != yaml.MappingNode || len(events.Content) == 0 {
			return nil, fmt.Errorf("%s:%d: function %s has no Events", t.file, resKey.Line, name)
		}
		if !dotted {
			return nil, fmt.Errorf("%s: %s is a function: name one of its events, as %s#%s.EVENT; events of %s: %s",
				t.file, name, t.file, name, name, strings.Join(mapKeys(events), ", "))
		}
		evKey, ev := mapGet(events, event)
		if ev == nil {
			return nil, fmt.Errorf("%s:%d: function %s has no event %q; events of %s: %s",
				t.file, eventsKey.Line, name, event, name, strings.Join(mapKeys(events), ", "))
		}
		evType := scalarAt(ev, "Type")
		_, evProps := mapGet(ev, "Properties")
		fcKey, fc := mapGet(evProps, "FilterCriteria")
		if fc == nil {
			return nil, fmt.Errorf("%s:%d: event %s.%s (Type %s) has no FilterCriteria", t.file, evKey.Line, name, event, orNone(evType))
		}
		return t.spec(fcKey, fc, name+"."+event, evType), nil
	case esmType:
		if dotted {
			return nil, fmt.Errorf("%s: %s is an %s, which has no events: name it alone, as %s#%s",
				t.file, name, esmType, t.file, name)
		}
		fcKey, fc := mapGet(props, "FilterCriteria")
		if fc == nil {
			return nil, fmt.Errorf("%s:%d: event source mapping %s has no FilterCriteria", t.file, resKey.Line, name)
		}
		return t.spec(fcKey, fc, name, ""), nil
	}
	return nil, fmt.Errorf("%s:%d: resource %s is %s, not an %s or an %s; %s",
		t.file, resKey.Line, name, orNone(typ), samFunctionType, esmType, t.functionList())
}

// all returns every FilterCriteria of the template, in the template's order. It is an error
// when there is none, and when an intrinsic function may hide some (see criteriaRefs): then
// the FilterCriteria klt found come with the error, to be checked all the same.
func (t *samTemplate) all() ([]*criteriaSpec, error) {
	refs, hidden := t.criteriaRefs()
	var specs []*criteriaSpec
	for _, ref := range refs {
		s, err := t.criteria(ref)
		if err != nil {
			return nil, err // cannot happen: criteriaRefs found the FilterCriteria
		}
		specs = append(specs, s)
	}
	if len(specs) == 0 && len(hidden) == 0 {
		return nil, fmt.Errorf("%s: no FilterCriteria in the template; %s", t.file, t.functionList())
	}
	return specs, errors.Join(hidden...)
}

// criteriaRefs returns the names of every FilterCriteria of the template, as criteria takes
// them: "Function.Event" and "Mapping". It also returns an error for each place where an
// intrinsic function klt cannot evaluate stands where FilterCriteria could be (a function's
// Properties or Events, an event or its Properties, a mapping's Properties): what it hides is
// not known, so it must not pass for "no FilterCriteria here".
func (t *samTemplate) criteriaRefs() (refs []string, hidden []error) {
	hides := func(n *yaml.Node, where string) bool {
		f, ok := intrinsic(n)
		if ok {
			hidden = append(hidden, fmt.Errorf("%s:%d: %s is %s, an intrinsic function klt cannot evaluate, so FilterCriteria under it are not checked; write them out",
				t.file, n.Line, where, f))
		}
		return ok
	}
	for i := 0; i+1 < len(t.resources.Content); i += 2 {
		name, res := t.resources.Content[i].Value, resolve(t.resources.Content[i+1])
		typ := scalarAt(res, "Type")
		if typ != samFunctionType && typ != esmType {
			continue
		}
		_, props := mapGet(res, "Properties")
		if hides(props, name+".Properties") || props == nil || props.Kind != yaml.MappingNode {
			continue
		}
		switch typ {
		case samFunctionType:
			_, events := mapGet(props, "Events")
			if hides(events, name+".Properties.Events") || events == nil || events.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(events.Content); j += 2 {
				evName, ev := events.Content[j].Value, resolve(events.Content[j+1])
				if hides(ev, name+".Events."+evName) {
					continue
				}
				_, evProps := mapGet(ev, "Properties")
				if hides(evProps, name+".Events."+evName+".Properties") {
					continue
				}
				if _, fc := mapGet(evProps, "FilterCriteria"); fc != nil {
					refs = append(refs, name+"."+evName)
				}
			}
		case esmType:
			if _, fc := mapGet(props, "FilterCriteria"); fc != nil {
				refs = append(refs, name)
			}
		}
	}
	return refs, hidden
}

// functionList says which functions the template has, for an error about a missing one.
func (t *samTemplate) functionList() string {
	var fns, esms []string
	for i := 0; i+1 < len(t.resources.Content); i += 2 {
		switch scalarAt(resolve(t.resources.Content[i+1]), "Type") {
		case samFunctionType:
			fns = append(fns, t.resources.Content[i].Value)
		case esmType:
			esms = append(esms, t.resources.Content[i].Value)
		}
	}
	s := "functions in template: " + orNone(strings.Join(fns, ", "))
	if len(esms) > 0 {
		s += "; event source mappings: " + strings.Join(esms, ", ")
	}
	return s
}

// spec reads the FilterCriteria node fc, under the key fcKey, found at where ("Function.Event" or "Mapping"). Each
// Pattern is a JSON string or a YAML mapping, which is turned into JSON text.
func (t *samTemplate) spec(fcKey, fc *yaml.Node, where, eventType string) *criteriaSpec {
	s := &criteriaSpec{file: t.file, where: where, line: fcKey.Line, eventType: eventType}
	// What is wrong with the FilterCriteria as a whole is a problem of the spec, as the
	// engine's would be, so that lint reports it in its place and goes on.
	bad := func(n *yaml.Node, format string, args ...any) *criteriaSpec {
		s.line = n.Line
		s.readErrs = append(s.readErrs, fmt.Errorf(format, args...))
		return s
	}
	if f, ok := intrinsic(fc); ok {
		return bad(fcKey, "FilterCriteria is %s, an intrinsic function klt cannot evaluate; write the filters out", f)
	}
	if fc.Kind != yaml.MappingNode {
		return bad(fcKey, "FilterCriteria: want a mapping with Filters")
	}
	_, filters := mapGet(fc, "Filters")
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
		f = resolve(f)
		s.patterns = append(s.patterns, "")
		s.lines = append(s.lines, f.Line)
		bad := func(path, reason string) {
			s.readErrs = append(s.readErrs, &filter.Error{Filter: i, Path: path, Reason: reason})
		}

		if fn, ok := intrinsic(f); ok {
			bad("", fn+" is an intrinsic function klt cannot evaluate; write the filter out")
			continue
		}
		patKey, pat := mapGet(f, "Pattern")
		if pat == nil {
			bad("Pattern", "missing")
			continue
		}
		s.lines[i] = patKey.Line
		text, err := patternText(pat)
		if err != nil {
			if ne, ok := errors.AsType[*nodeError](err); ok {
				s.lines[i] = ne.node.Line
			}
			bad("Pattern", err.Error())
			continue
		}
		s.patterns[i] = text
	}
	return s
}

// nodeError is an error about one node of a pattern, so that the message can give its line.
type nodeError struct {
	node *yaml.Node
	msg  string
}

func (e *nodeError) Error() string { return e.msg }

// patternText returns the JSON text of a Pattern node: the string itself when it is a scalar,
// as CloudFormation has it, or the JSON of a YAML mapping, which SAM also accepts.
func patternText(n *yaml.Node) (string, error) {
	n = resolve(n)
	if f, ok := intrinsic(n); ok {
		return "", &nodeError{n, fmt.Sprintf("%s is an intrinsic function klt cannot evaluate; write the pattern out", f)}
	}
	if n.Kind == yaml.ScalarNode {
		if n.ShortTag() == "!!null" {
			return "", &nodeError{n, "empty; want a JSON string or a mapping"}
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
	n = resolve(n)
	switch {
	case depth > maxPatternDepth:
		return nil, &nodeError{n, fmt.Sprintf("nested more than %d deep", maxPatternDepth)}
	case len(b) > maxPatternJSON:
		return nil, &nodeError{n, fmt.Sprintf("more than %d bytes as JSON; Lambda allows %d characters",
			maxPatternJSON, filter.MaxPatternLength)}
	}
	if f, ok := intrinsic(n); ok {
		return nil, &nodeError{n, fmt.Sprintf("%s is an intrinsic function klt cannot evaluate; write the value out", f)}
	}
	switch n.Kind {
	case yaml.MappingNode:
		if tag := n.ShortTag(); tag != "!!map" {
			return nil, &nodeError{n, "YAML tag " + tag + " has no JSON form"}
		}
		b = append(b, '{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				return nil, &nodeError{k, "a mapping key must be a plain name"}
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
			return nil, &nodeError{n, "YAML tag " + tag + " has no JSON form"}
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
	return nil, &nodeError{n, "unexpected YAML"}
}

// appendScalarJSON appends the JSON form of a scalar node, by its resolved YAML type.
func appendScalarJSON(b []byte, n *yaml.Node) ([]byte, error) {
	switch tag := n.ShortTag(); tag {
	case "!!null":
		return append(b, "null"...), nil
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return nil, &nodeError{n, err.Error()}
		}
		return strconv.AppendBool(b, v), nil
	case "!!int", "!!float":
		if json.Valid([]byte(n.Value)) {
			return append(b, n.Value...), nil // 10, -2.5, 1e3: as written
		}
		var f float64 // 0x1F, +1, .5, .inf: through the number
		if err := n.Decode(&f); err != nil {
			return nil, &nodeError{n, err.Error()}
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, &nodeError{n, n.Value + " is not a number JSON can hold"}
		}
		return strconv.AppendFloat(b, f, 'g', -1, 64), nil
	case "!!str", "!!timestamp", "!!binary":
		return appendJSONString(b, n.Value), nil
	default:
		return nil, &nodeError{n, "YAML tag " + tag + " has no JSON form"}
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
		k, v := n.Content[0].Value, resolve(n.Content[1])
		if strings.HasPrefix(k, "Fn::") || (k == "Ref" && v.Kind == yaml.ScalarNode) {
			return k, true
		}
	}
	return "", false
}

// resolve follows YAML aliases (*name) to the node they stand for.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// mapGet returns the key and value nodes of key in the mapping m, or nils when m is not a
// mapping or has no such key. The value is resolved.
func mapGet(m *yaml.Node, key string) (k, v *yaml.Node) {
	m = resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], resolve(m.Content[i+1])
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
	if _, v := mapGet(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// orNone returns s, or "none" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
