package samtemplate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/criteria"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/internal/template"
	"github.com/kafkalambda/toolkit/limits"
)

// SamTemplate is a SAM or CloudFormation template, YAML or JSON, read for the FilterCriteria
// it holds (internal/template reads it; only the parts on the way to a FilterCriteria are
// looked at here).
type SamTemplate struct {
	file string // name for messages
	t    *template.Template
}

// Resource types that carry FilterCriteria.
const (
	SamFunctionType = template.TypeFunction
	EsmType         = template.TypeEventSourceMapping
)

// NewSamTemplate returns the FilterCriteria reader of a template already read (klt lint's).
func NewSamTemplate(t *template.Template) *SamTemplate { return &SamTemplate{file: t.File, t: t} }

// ParseTemplate reads a template.
func ParseTemplate(file string, data []byte) (*SamTemplate, error) {
	t, err := template.Read(file, data)
	if err != nil {
		return nil, err
	}
	return &SamTemplate{file: file, t: t}, nil
}

// criteria returns the FilterCriteria that ref names: "Function.Event" for an event of an
// AWS::Serverless::Function, or "Mapping" for an AWS::Lambda::EventSourceMapping.
func (t *SamTemplate) Criteria(ref string) (*criteria.Spec, error) {
	name, event, dotted := strings.Cut(ref, ".")
	res := t.t.Resource(name)
	if res == nil {
		return nil, fmt.Errorf("%s: no resource %q in Resources; %s", t.file, name, t.FunctionList())
	}
	switch res.Type {
	case template.TypeFunction:
		events := res.Properties.Get("Events")
		if len(res.Events) == 0 {
			return nil, fmt.Errorf("%s: function %s has no Events", res.Pos, name)
		}
		if !dotted {
			return nil, fmt.Errorf("%s: %s is a function: name one of its events, as %s#%s.EVENT; events of %s: %s",
				t.file, name, t.file, name, name, strings.Join(events.Keys(), ", "))
		}
		ev := res.Event(event)
		if ev == nil {
			return nil, fmt.Errorf("%s: function %s has no event %q; events of %s: %s",
				res.Properties.KeyPos("Events"), name, event, name, strings.Join(events.Keys(), ", "))
		}
		fc := ev.Properties.Get("FilterCriteria")
		if fc == nil {
			return nil, fmt.Errorf("%s: event %s.%s (Type %s) has no FilterCriteria", ev.Pos, name, event, OrNone(ev.Type))
		}
		return t.spec(ev.Properties.KeyPos("FilterCriteria"), fc, name+"."+event, ev.Type), nil
	case template.TypeEventSourceMapping:
		if dotted {
			return nil, fmt.Errorf("%s: %s is an %s, which has no events: name it alone, as %s#%s",
				t.file, name, template.TypeEventSourceMapping, t.file, name)
		}
		fc := res.Properties.Get("FilterCriteria")
		if fc == nil {
			return nil, fmt.Errorf("%s: event source mapping %s has no FilterCriteria", res.Pos, name)
		}
		return t.spec(res.Properties.KeyPos("FilterCriteria"), fc, name, ""), nil
	}
	return nil, fmt.Errorf("%s: resource %s is %s, not an %s or an %s; %s",
		res.Pos, name, OrNone(res.Type), template.TypeFunction, template.TypeEventSourceMapping, t.FunctionList())
}

// all returns every FilterCriteria of the template, in the template's order. It is an error
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

// criteriaRefs returns the names of every FilterCriteria of the template, as criteria takes
// them: "Function.Event" and "Mapping". It also returns an error for each place where an
// intrinsic function klt cannot evaluate stands where FilterCriteria could be (a function's
// Properties or Events, an event or its Properties, a mapping's Properties): what it hides is
// not known, so it must not pass for "no FilterCriteria here".
func (t *SamTemplate) CriteriaRefs() (refs []string, hidden []error) {
	hides := func(n *template.Node, where string) bool {
		f := n.Written()
		ok := f != ""
		if ok {
			hidden = append(hidden, fmt.Errorf("%s: %s is %s, an intrinsic function klt cannot evaluate, so FilterCriteria under it are not checked; write them out",
				n.Pos, where, f))
		}
		return ok
	}
	for _, res := range t.t.OfType(template.TypeFunction, template.TypeEventSourceMapping) {
		name, props := res.LogicalID, res.Properties
		if hides(props, name+".Properties") || props == nil || props.Kind != template.Mapping {
			continue
		}
		if res.Type == template.TypeEventSourceMapping {
			if props.Get("FilterCriteria") != nil {
				refs = append(refs, name)
			}
			continue
		}
		if hides(props.Get("Events"), name+".Properties.Events") {
			continue
		}
		for _, ev := range res.Events {
			if hides(ev.Node, name+".Events."+ev.Name) || hides(ev.Properties, name+".Events."+ev.Name+".Properties") {
				continue
			}
			if ev.Properties.Get("FilterCriteria") != nil {
				refs = append(refs, name+"."+ev.Name)
			}
		}
	}
	return refs, hidden
}

// functionList says which functions the template has, for an error about a missing one.
func (t *SamTemplate) FunctionList() string {
	var fns, esms []string
	for _, r := range t.t.OfType(template.TypeFunction, template.TypeEventSourceMapping) {
		if r.Type == template.TypeFunction {
			fns = append(fns, r.LogicalID)
		} else {
			esms = append(esms, r.LogicalID)
		}
	}
	s := "functions in template: " + OrNone(strings.Join(fns, ", "))
	if len(esms) > 0 {
		s += "; event source mappings: " + strings.Join(esms, ", ")
	}
	return s
}

// spec reads the FilterCriteria node fc, whose key is at fcAt, found at where ("Function.Event"
// or "Mapping"). Each Pattern is a JSON string or a YAML mapping, which is turned into JSON text.
func (t *SamTemplate) spec(fcAt template.Pos, fc *template.Node, where, eventType string) *criteria.Spec {
	s := &criteria.Spec{File: t.file, Where: where, At: fcAt, EventType: eventType}
	// What is wrong with the FilterCriteria as a whole is a problem of the spec, as the
	// engine's would be, so that lint reports it in its place and goes on.
	bad := func(at template.Pos, format string, args ...any) *criteria.Spec {
		s.At = at
		s.ReadErrs = append(s.ReadErrs, fmt.Errorf(format, args...))
		return s
	}
	if f := fc.Written(); f != "" {
		return bad(fcAt, "FilterCriteria is %s, an intrinsic function klt cannot evaluate; write the filters out", f)
	}
	if fc.Kind != template.Mapping {
		return bad(fcAt, "FilterCriteria: want a mapping with Filters")
	}
	filters := fc.Get("Filters")
	switch f := filters.Written(); {
	case filters == nil:
		return bad(fcAt, "FilterCriteria has no Filters")
	case f != "":
		return bad(filters.Pos, "Filters is %s, an intrinsic function klt cannot evaluate; write the filters out", f)
	case filters.Kind != template.Sequence:
		return bad(filters.Pos, "Filters: want a list of {Pattern: ...}")
	}
	// A filter that cannot be read is a problem of that filter, as the engine reports one,
	// so that lint still checks the others.
	for i, f := range filters.Items {
		s.Patterns = append(s.Patterns, "")
		s.Ats = append(s.Ats, f.Pos)
		bad := func(path, reason string) {
			s.ReadErrs = append(s.ReadErrs, &filter.Error{Filter: i, Path: path, Reason: reason})
		}
		if fn := f.Written(); fn != "" {
			bad("", fn+" is an intrinsic function klt cannot evaluate; write the filter out")
			continue
		}
		pat := f.Get("Pattern")
		if pat == nil {
			bad("Pattern", "missing")
			continue
		}
		s.Ats[i] = f.KeyPos("Pattern")
		text, err := PatternText(pat)
		if err != nil {
			if te, ok := errors.AsType[*template.Error](err); ok {
				s.Ats[i], err = te.Pos, errors.New(te.Msg)
			}
			bad("Pattern", err.Error())
			continue
		}
		s.Patterns[i] = text
	}
	return s
}

// maxPatternJSON bounds a pattern written as a YAML mapping, as JSON. Aliases can make a small
// document stand for a huge one; no pattern Lambda accepts comes near it.
const maxPatternJSON = 16 * limits.MaxFilterPatternLength

// PatternText returns the JSON text of a Pattern node: the string itself when it is a scalar,
// as CloudFormation has it, or the JSON of a YAML mapping, which SAM also accepts. An error
// about one node of the pattern is a *template.Error at that node.
func PatternText(n *template.Node) (string, error) {
	if f := n.FindIntrinsic(); f != nil {
		name := f.Written()
		what := "value"
		if f == n {
			what = "pattern"
		}
		return "", &template.Error{Pos: f.Pos, Msg: fmt.Sprintf("%s is an intrinsic function klt cannot evaluate; write the %s out", name, what)}
	}
	if n.Kind == template.Scalar {
		if n.IsNull() {
			return "", &template.Error{Pos: n.Pos, Msg: "empty; want a JSON string or a mapping"}
		}
		return n.Text, nil
	}
	b, err := n.AppendJSON(nil, maxPatternJSON)
	if te, ok := errors.AsType[*template.Error](err); ok && strings.HasPrefix(te.Msg, "more than") {
		te.Msg += fmt.Sprintf("; Lambda allows %d characters", limits.MaxFilterPatternLength)
	}
	return string(b), err
}

// OrNone returns s, or "none" when s is empty.
func OrNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
