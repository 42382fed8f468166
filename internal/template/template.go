package template

import (
	"fmt"
	"path/filepath"
)

// Resource types the toolkit's commands look at.
const (
	TypeFunction           = "AWS::Serverless::Function"
	TypeEventSourceMapping = "AWS::Lambda::EventSourceMapping"
	TypeTable              = "AWS::DynamoDB::Table"
	TypeSimpleTable        = "AWS::Serverless::SimpleTable"
	TypeQueue              = "AWS::SQS::Queue"
)

// Template is a SAM or CloudFormation template, read by Read. The sections are as written;
// nothing is evaluated (see Evaluator) and SAM's Globals are not merged in (see Property and
// Environment). A section the template does not have is nil.
type Template struct {
	File string // the name Read was given, as every Pos has it
	Root *Node  // the whole document, a Mapping

	Parameters []*Parameter // in file order
	Conditions *Node        // the Conditions mapping: name -> condition function
	Mappings   *Node        // the Mappings mapping, for Fn::FindInMap
	Globals    *Node        // SAM's Globals mapping (Function, Api...)
	Resources  []*Resource  // in file order
	Outputs    *Node

	resources  map[string]*Resource
	parameters map[string]*Parameter
}

// Parameter is one entry of Parameters.
type Parameter struct {
	Name          string
	Type          string  // String, Number, CommaDelimitedList, List<...>, AWS::...; "" when not a scalar
	Default       *Node   // nil when there is none
	AllowedValues []*Node // nil when not a list
	Pos           Pos     // of the name
	Node          *Node   // the whole entry
}

// Resource is one entry of Resources.
type Resource struct {
	LogicalID  string
	Type       string // "" when not a scalar
	Properties *Node  // nil when there are none; may be any node, an intrinsic function too
	Condition  string // the name of the condition it is made under, or ""
	DependsOn  []string
	Metadata   *Node
	Pos        Pos   // of the logical ID
	Node       *Node // the whole entry

	// Events are a SAM function's event sources (Properties.Events), in file order; nil for
	// other resources, and when Events is not a mapping (see Properties.Get("Events")).
	Events []*Event
}

// Event is one event source of a SAM function (Properties.Events.NAME).
type Event struct {
	Name       string
	Type       string // SQS, MSK, SelfManagedKafka, DynamoDB, Api...; "" when not a scalar
	Properties *Node  // nil when there are none
	Pos        Pos    // of the name
	Node       *Node  // the whole entry
}

// Dir returns the directory of the template file, absolute: SAM's relative paths (CodeUri)
// start there.
func (t *Template) Dir() (string, error) {
	abs, err := filepath.Abs(t.File)
	if err != nil {
		return "", err
	}
	return filepath.Dir(abs), nil
}

// Resource returns the resource with the logical ID id, or nil.
func (t *Template) Resource(id string) *Resource { return t.resources[id] }

// Parameter returns the parameter called name, or nil.
func (t *Template) Parameter(name string) *Parameter { return t.parameters[name] }

// Condition returns the condition function called name in Conditions, or nil.
func (t *Template) Condition(name string) *Node { return t.Conditions.Get(name) }

// OfType returns the resources of any of the types, in file order.
func (t *Template) OfType(types ...string) []*Resource {
	var out []*Resource
	for _, r := range t.Resources {
		for _, typ := range types {
			if r.Type == typ {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// Property returns the property key of the SAM function fn as SAM deploys it: the function's
// own, else that of Globals.Function. Nil when neither has it.
func (t *Template) Property(fn *Resource, key string) *Node {
	if v := fn.Properties.Get(key); v != nil {
		return v
	}
	return t.Globals.Lookup("Function", key)
}

// Environment returns the Environment.Variables of the SAM function fn as SAM merges them:
// those of Globals.Function first, then the function's own, which replace a global one of the
// same name in its place. It fails, naming the place, when Variables is not a mapping.
func (t *Template) Environment(fn *Resource) ([]Pair, error) {
	var out []Pair
	index := map[string]int{}
	for _, src := range []*Node{t.Globals.Get("Function"), fn.Properties} {
		vars := src.Lookup("Environment", "Variables")
		if vars == nil {
			continue
		}
		if vars.Kind != Mapping {
			return nil, errorAt(vars.Pos, fmt.Sprintf("function %s: Environment.Variables must be a mapping", fn.LogicalID))
		}
		for _, p := range vars.Pairs {
			if i, ok := index[p.Key]; ok {
				out[i] = p
				continue
			}
			index[p.Key] = len(out)
			out = append(out, p)
		}
	}
	return out, nil
}

// newTemplate reads the sections of the document root.
func newTemplate(file string, root *Node) (*Template, error) {
	if root.Kind != Mapping {
		return nil, errorAt(root.Pos, "want a SAM or CloudFormation template, a mapping with Resources")
	}
	t := &Template{File: file, Root: root, resources: map[string]*Resource{}, parameters: map[string]*Parameter{}}
	res := root.Get("Resources")
	switch {
	case res == nil:
		return nil, errorAt(root.Pos, "no Resources: not a SAM or CloudFormation template")
	case res.Kind != Mapping:
		return nil, errorAt(root.KeyPos("Resources"), "Resources is not a mapping")
	}
	t.Conditions, t.Mappings = root.Get("Conditions"), root.Get("Mappings")
	t.Globals, t.Outputs = root.Get("Globals"), root.Get("Outputs")
	if t.Outputs != nil && t.Outputs.Kind == Mapping {
		for _, p := range t.Outputs.Pairs {
			if err := checkName("output", p.Key, p.KeyPos); err != nil {
				return nil, err
			}
		}
	}
	if ps := root.Get("Parameters"); ps != nil && ps.Kind == Mapping {
		for _, p := range ps.Pairs {
			if err := checkName("parameter", p.Key, p.KeyPos); err != nil {
				return nil, err
			}
			par := &Parameter{Name: p.Key, Type: p.Value.Get("Type").String(), Default: p.Value.Get("Default"), Pos: p.KeyPos, Node: p.Value}
			if av := p.Value.Get("AllowedValues"); av != nil && av.Kind == Sequence {
				par.AllowedValues = av.Items
			}
			t.Parameters = append(t.Parameters, par)
			t.parameters[p.Key] = par
		}
	}
	for _, p := range res.Pairs {
		if err := checkName("resource", p.Key, p.KeyPos); err != nil {
			return nil, err
		}
		r := newResource(p)
		// Events written as an intrinsic function (!If, say) have no names to check here: the
		// one key is the function's, and the commands that read events refuse what they cannot
		// evaluate.
		_, _, hidden := r.Properties.Get("Events").Intrinsic()
		for _, e := range r.Events {
			if hidden {
				break
			}
			if err := checkName("event", e.Name, e.Pos); err != nil {
				return nil, err
			}
		}
		t.Resources = append(t.Resources, r)
		t.resources[r.LogicalID] = r
	}
	return t, nil
}

// newResource reads one entry of Resources.
func newResource(p Pair) *Resource {
	n := p.Value
	r := &Resource{LogicalID: p.Key, Type: n.Get("Type").String(), Properties: n.Get("Properties"),
		Condition: n.Get("Condition").String(), Metadata: n.Get("Metadata"), Pos: p.KeyPos, Node: n}
	switch d := n.Get("DependsOn"); {
	case d == nil:
	case d.Kind == Scalar:
		r.DependsOn = []string{d.String()}
	case d.Kind == Sequence:
		for _, x := range d.Items {
			r.DependsOn = append(r.DependsOn, x.String())
		}
	}
	if r.Type != TypeFunction {
		return r
	}
	if evs := r.Properties.Get("Events"); evs != nil && evs.Kind == Mapping {
		r.Events = make([]*Event, 0, len(evs.Pairs))
		for _, e := range evs.Pairs {
			r.Events = append(r.Events, &Event{Name: e.Key, Type: e.Value.Get("Type").String(),
				Properties: e.Value.Get("Properties"), Pos: e.KeyPos, Node: e.Value})
		}
	}
	return r
}

// Event returns the event called name of the SAM function r, or nil.
func (r *Resource) Event(name string) *Event {
	for _, e := range r.Events {
		if e.Name == name {
			return e
		}
	}
	return nil
}
