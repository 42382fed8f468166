package template

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Resources says what the resources of a template stand for in one evaluation: lint has
// nothing but their types (and answers ErrUnknown), klt invoke the names and URLs of local
// tables and queues, klt local ARNs too. An error it returns is wrapped with the position of
// the Ref or Fn::GetAtt; wrap ErrUnknown for a value that exists but is not known here.
type Resources interface {
	// Ref returns what Ref of r gives (for most resources, their name).
	Ref(r *Resource) (any, error)
	// GetAtt returns what Fn::GetAtt of r and attr gives ("Arn", "QueueUrl"...).
	GetAtt(r *Resource, attr string) (any, error)
}

// NoValue is the value of Ref AWS::NoValue: the property it is the value of is left out.
// Eval drops it from lists and mappings, and returns it for a value that is itself one.
var NoValue = noValue{}

type noValue struct{}

func (noValue) String() string { return "AWS::NoValue" }

// LocalPseudo returns the pseudo parameters as SAM CLI has them for a local run: account
// 123456789012, region us-east-1, stack "local".
func LocalPseudo() map[string]string {
	return map[string]string{
		"AWS::AccountId": "123456789012", "AWS::Region": "us-east-1", "AWS::Partition": "aws",
		"AWS::StackName": "local", "AWS::URLSuffix": "localhost", "AWS::StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/local/local",
	}
}

// An Evaluator evaluates the intrinsic functions of a template's values: Ref (of parameters,
// resources and pseudo parameters), Fn::GetAtt, Fn::Sub (both forms), Fn::Join, Fn::Select,
// Fn::Split, Fn::If, Fn::FindInMap, Fn::Base64, Fn::Length, Fn::ToJsonString, and the
// conditions of Conditions (Fn::Equals, Fn::And, Fn::Or, Fn::Not, Condition).
//
// It is total: every node gives a value or an *Error naming FILE:LINE:COL, never a panic, and
// the work of one call is bounded (MaxDepth of nesting, conditions met once each, at most
// MaxText bytes of strings built). A value it cannot know (Fn::ImportValue, Fn::GetAZs, a
// parameter without a value, what Resources does not say) is an error that errors.Is finds
// ErrUnknown in; a template mistake (a Ref to nothing, Fn::Select out of range) is not.
//
// An Evaluator remembers the conditions it has evaluated: it is not safe for concurrent use.
type Evaluator struct {
	Template *Template
	// Parameters are values that replace the parameters' Defaults, by name. A list
	// parameter's value is its items separated by commas.
	Parameters map[string]string
	// Pseudo are the values of the pseudo parameters, by name ("AWS::Region"); one not here
	// is ErrUnknown. AWS::NoValue is always NoValue.
	Pseudo map[string]string
	// Resources says what Ref and Fn::GetAtt of a resource give; nil makes them ErrUnknown.
	Resources Resources

	conditions map[string]bool // evaluated
	evaluating map[string]bool // being evaluated: met again, a cycle
	work       int             // bytes built and nodes visited by the current call
}

// maxCalls is how deep evaluations may call each other (nodes in nodes, conditions in
// conditions); the nodes themselves nest at most MaxDepth.
const maxCalls = 4 * MaxDepth

// Eval evaluates n. Scalars give their text (numbers and bools as written: intrinsic
// functions work on strings), null gives nil, lists []any and mappings map[string]any, with
// NoValue left out of both; Ref AWS::NoValue itself gives NoValue.
func (e *Evaluator) Eval(n *Node) (any, error) {
	e.work = 0
	return e.eval(n, 0)
}

// String evaluates n to a string; anything else is an error naming n.
func (e *Evaluator) String(n *Node) (string, error) {
	e.work = 0
	return e.str(n, 0)
}

// Condition evaluates the condition called name in Conditions; at is where it is named, for
// the error when there is none.
func (e *Evaluator) Condition(name string, at Pos) (bool, error) {
	e.work = 0
	return e.condition(name, at, 0)
}

func (e *Evaluator) str(n *Node, depth int) (string, error) {
	v, err := e.eval(n, depth)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", errorAt(n.Pos, "want a string, got "+Describe(v))
	}
	return s, nil
}

// charge counts units of work, failing past the bound.
func (e *Evaluator) charge(n *Node, units int) error {
	if e.work += units; e.work > MaxText {
		return &Error{Pos: n.Pos, Msg: fmt.Sprintf("the value grows past %d bytes", MaxText), Err: ErrTooLarge}
	}
	return nil
}

func (e *Evaluator) eval(n *Node, depth int) (any, error) {
	if depth > maxCalls {
		return nil, &Error{Pos: n.Pos, Msg: fmt.Sprintf("intrinsic functions nested more than %d deep", maxCalls), Err: ErrTooLarge}
	}
	if err := e.charge(n, 1); err != nil {
		return nil, err
	}
	if name, arg, ok := n.Intrinsic(); ok {
		return e.function(n, name, arg, depth+1)
	}
	switch n.Kind {
	case Sequence:
		out := make([]any, 0, len(n.Items))
		for _, c := range n.Items {
			v, err := e.eval(c, depth+1)
			if err != nil {
				return nil, err
			}
			if v != NoValue {
				out = append(out, v)
			}
		}
		return out, nil
	case Mapping:
		out := make(map[string]any, len(n.Pairs))
		for _, p := range n.Pairs {
			v, err := e.eval(p.Value, depth+1)
			if err != nil {
				return nil, err
			}
			if v != NoValue {
				out[p.Key] = v
			}
		}
		return out, nil
	}
	if n.Tag == TagNull {
		return nil, nil
	}
	return n.Text, nil
}

// function evaluates the intrinsic function n, called name, with its argument arg.
func (e *Evaluator) function(n *Node, name string, arg *Node, depth int) (any, error) {
	switch name {
	case "Ref":
		return e.ref(arg.Text, n.Pos)
	case "Fn::GetAtt":
		return e.getAtt(n, arg, depth)
	case "Fn::Sub":
		return e.sub(n, arg, depth)
	case "Fn::Join":
		return e.join(n, arg, depth)
	case "Fn::Select":
		return e.selectItem(n, arg, depth)
	case "Fn::Split":
		return e.split(n, arg, depth)
	case "Fn::If":
		if arg.Kind != Sequence || len(arg.Items) != 3 || arg.Items[0].Kind != Scalar {
			return nil, errorAt(n.Pos, "Fn::If takes [condition name, value if true, value if false]")
		}
		ok, err := e.condition(arg.Items[0].Text, arg.Items[0].Pos, depth)
		if err != nil {
			return nil, err
		}
		if ok {
			return e.eval(arg.Items[1], depth)
		}
		return e.eval(arg.Items[2], depth)
	case "Fn::FindInMap":
		return e.findInMap(n, arg, depth)
	case "Fn::Base64":
		s, err := e.str(arg, depth)
		if err != nil {
			return nil, err
		}
		return base64.StdEncoding.EncodeToString([]byte(s)), e.charge(n, len(s)*4/3)
	case "Fn::Length":
		v, err := e.eval(arg, depth)
		if err != nil {
			return nil, err
		}
		l, ok := v.([]any)
		if !ok {
			return nil, errorAt(n.Pos, "Fn::Length takes a list, not "+Describe(v))
		}
		return strconv.Itoa(len(l)), nil
	case "Fn::ToJsonString":
		v, err := e.eval(arg, depth)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, errorAt(n.Pos, "Fn::ToJsonString: "+err.Error())
		}
		return string(b), e.charge(n, len(b))
	case "Fn::Equals", "Fn::And", "Fn::Or", "Fn::Not", "Condition":
		return nil, errorAt(n.Pos, n.Written()+" is a condition function: it belongs in Conditions, and Fn::If names the condition")
	}
	return nil, unknownAt(n.Pos, n.Written()+" is an intrinsic function klt cannot evaluate")
}

// ref evaluates Ref name, written at pos.
func (e *Evaluator) ref(name string, pos Pos) (any, error) {
	if name == "AWS::NoValue" {
		return NoValue, nil
	}
	if strings.HasPrefix(name, "AWS::") {
		if v, ok := e.Pseudo[name]; ok {
			return v, nil
		}
		return nil, unknownAt(pos, "pseudo parameter "+name+" has no value here")
	}
	t := e.Template
	if p := t.Parameter(name); p != nil {
		return e.parameter(p, pos)
	}
	if r := t.Resource(name); r != nil {
		if e.Resources == nil {
			return nil, unknownAt(pos, "Ref "+name+": the value of a resource is known once it is made")
		}
		v, err := e.Resources.Ref(r)
		if err != nil {
			return nil, &Error{Pos: pos, Msg: "Ref " + name + ": " + err.Error(), Err: err}
		}
		return v, nil
	}
	return nil, errorAt(pos, "Ref "+name+": no such parameter or resource")
}

// parameter returns the value of parameter p: the caller's, else its Default. A list
// parameter gives a list of strings, any other a string.
func (e *Evaluator) parameter(p *Parameter, pos Pos) (any, error) {
	s, ok := e.Parameters[p.Name]
	switch {
	case ok:
	case p.Default == nil:
		return nil, unknownAt(pos, "parameter "+p.Name+" has no Default, and no value was given")
	case p.Default.Kind == Sequence: // a list written as a list
		parts := make([]string, len(p.Default.Items))
		for i, c := range p.Default.Items {
			if c.Kind != Scalar {
				return nil, errorAt(c.Pos, "parameter "+p.Name+": a Default list holds strings")
			}
			parts[i] = c.Text
		}
		s = strings.Join(parts, ",")
	case p.Default.Kind == Scalar:
		s = p.Default.Text
	default:
		return nil, errorAt(p.Default.Pos, "parameter "+p.Name+": Default must be a string")
	}
	if p.Type != "CommaDelimitedList" && !strings.HasPrefix(p.Type, "List<") {
		return s, nil
	}
	var out []any
	for _, item := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(item))
	}
	return out, nil
}

// getAtt evaluates Fn::GetAtt [resource, attribute] (or "resource.attribute").
func (e *Evaluator) getAtt(n, arg *Node, depth int) (any, error) {
	var res, attr string
	switch {
	case arg.Kind == Scalar:
		var ok bool
		if res, attr, ok = strings.Cut(arg.Text, "."); !ok {
			return nil, errorAt(n.Pos, fmt.Sprintf("Fn::GetAtt %q: want Resource.Attribute", arg.Text))
		}
	case arg.Kind == Sequence && len(arg.Items) == 2 && arg.Items[0].Kind == Scalar:
		res = arg.Items[0].Text
		var err error
		if attr, err = e.str(arg.Items[1], depth); err != nil { // Fn::GetAtt [R, !Ref AttrName]
			return nil, err
		}
	default:
		return nil, errorAt(n.Pos, "Fn::GetAtt takes [Resource, Attribute]")
	}
	return e.attribute(res, attr, n.Pos)
}

// attribute evaluates Fn::GetAtt res.attr, written at pos.
func (e *Evaluator) attribute(res, attr string, pos Pos) (any, error) {
	r := e.Template.Resource(res)
	if r == nil {
		return nil, errorAt(pos, "Fn::GetAtt "+res+"."+attr+": no resource "+res)
	}
	if e.Resources == nil {
		return nil, unknownAt(pos, "Fn::GetAtt "+res+"."+attr+": the attributes of a resource are known once it is made")
	}
	v, err := e.Resources.GetAtt(r, attr)
	if err != nil {
		return nil, &Error{Pos: pos, Msg: "Fn::GetAtt " + res + "." + attr + ": " + err.Error(), Err: err}
	}
	return v, nil
}

// sub evaluates Fn::Sub "text" or [text, {variables}].
func (e *Evaluator) sub(n, arg *Node, depth int) (any, error) {
	text, vars := arg, (*Node)(nil)
	if arg.Kind == Sequence {
		if len(arg.Items) != 2 || arg.Items[1].Kind != Mapping {
			return nil, errorAt(n.Pos, "Fn::Sub takes a string or [string, {variables}]")
		}
		text, vars = arg.Items[0], arg.Items[1]
	}
	if !text.IsString() {
		return nil, errorAt(text.Pos, "Fn::Sub takes a string, not "+text.describe())
	}
	var b strings.Builder
	s := text.Text
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), e.charge(n, b.Len())
		}
		b.WriteString(s[:i])
		s = s[i+2:]
		j := strings.IndexByte(s, '}')
		if j < 0 {
			return nil, errorAt(n.Pos, "Fn::Sub: ${ without its }")
		}
		name := strings.TrimSpace(s[:j])
		s = s[j+1:]
		if lit, ok := strings.CutPrefix(name, "!"); ok { // ${!Literal} is "${Literal}"
			b.WriteString("${" + lit + "}")
			continue
		}
		val, err := e.subVar(n, name, vars, depth)
		if err != nil {
			return nil, err
		}
		if b.WriteString(val); b.Len() > MaxText {
			return nil, e.charge(n, b.Len())
		}
	}
}

// subVar evaluates the variable ${name} of the Fn::Sub n: one of vars, a pseudo parameter, a
// resource's attribute (Name.Attr), or a Ref.
func (e *Evaluator) subVar(n *Node, name string, vars *Node, depth int) (string, error) {
	var val any
	var err error
	if v := vars.Get(name); v != nil {
		val, err = e.eval(v, depth)
	} else if res, attr, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(name, "AWS::") {
		val, err = e.attribute(res, attr, n.Pos)
	} else {
		val, err = e.ref(name, n.Pos)
	}
	if err != nil {
		return "", err
	}
	s, ok := val.(string)
	if !ok {
		return "", errorAt(n.Pos, "Fn::Sub: ${"+name+"} is "+Describe(val)+", not a string")
	}
	return s, nil
}

// pair returns the two items of a Fn::Join, Select or Split argument.
func pair(n, arg *Node, usage string) (*Node, *Node, error) {
	if arg.Kind != Sequence || len(arg.Items) != 2 {
		return nil, nil, errorAt(n.Pos, usage)
	}
	return arg.Items[0], arg.Items[1], nil
}

// list evaluates n to a list.
func (e *Evaluator) list(n *Node, fn string, depth int) ([]any, error) {
	v, err := e.eval(n, depth)
	if err != nil {
		return nil, err
	}
	l, ok := v.([]any)
	if !ok {
		return nil, errorAt(n.Pos, fn+": want a list, got "+Describe(v))
	}
	return l, nil
}

// join evaluates Fn::Join [delimiter, [values]].
func (e *Evaluator) join(n, arg *Node, depth int) (any, error) {
	d, l, err := pair(n, arg, "Fn::Join takes [delimiter, [values]]")
	if err != nil {
		return nil, err
	}
	delim, err := e.str(d, depth)
	if err != nil {
		return nil, err
	}
	items, err := e.list(l, "Fn::Join", depth)
	if err != nil {
		return nil, err
	}
	parts := make([]string, len(items))
	size := 0
	for i, it := range items {
		var ok bool
		if parts[i], ok = it.(string); !ok {
			return nil, errorAt(l.Pos, fmt.Sprintf("Fn::Join: item %d is %s, not a string", i, Describe(it)))
		}
		size += len(parts[i]) + len(delim)
	}
	if err := e.charge(n, size); err != nil {
		return nil, err
	}
	return strings.Join(parts, delim), nil
}

// selectItem evaluates Fn::Select [index, [values]].
func (e *Evaluator) selectItem(n, arg *Node, depth int) (any, error) {
	ix, l, err := pair(n, arg, "Fn::Select takes [index, [values]]")
	if err != nil {
		return nil, err
	}
	s, err := e.str(ix, depth)
	if err != nil {
		return nil, err
	}
	items, err := e.list(l, "Fn::Select", depth)
	if err != nil {
		return nil, err
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= len(items) {
		return nil, errorAt(ix.Pos, fmt.Sprintf("Fn::Select: index %q is not in the list of %d", s, len(items)))
	}
	return items[i], nil
}

// split evaluates Fn::Split [delimiter, string].
func (e *Evaluator) split(n, arg *Node, depth int) (any, error) {
	d, str, err := pair(n, arg, "Fn::Split takes [delimiter, string]")
	if err != nil {
		return nil, err
	}
	delim, err := e.str(d, depth)
	if err != nil {
		return nil, err
	}
	if delim == "" {
		return nil, errorAt(d.Pos, "Fn::Split: the delimiter is empty")
	}
	s, err := e.str(str, depth)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(s, delim)
	if err := e.charge(n, len(parts)); err != nil {
		return nil, err
	}
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

// findInMap evaluates Fn::FindInMap [MapName, TopLevelKey, SecondLevelKey].
func (e *Evaluator) findInMap(n, arg *Node, depth int) (any, error) {
	if arg.Kind != Sequence || len(arg.Items) != 3 {
		return nil, errorAt(n.Pos, "Fn::FindInMap takes [MapName, TopLevelKey, SecondLevelKey]")
	}
	v := e.Template.Mappings
	path := "Mappings"
	for _, k := range arg.Items {
		key, err := e.str(k, depth)
		if err != nil {
			return nil, err
		}
		path += "." + key
		if v = v.Get(key); v == nil {
			return nil, errorAt(k.Pos, "Fn::FindInMap: no "+path+" in the template")
		}
	}
	return e.eval(v, depth)
}

// condition evaluates the condition called name, named at pos.
func (e *Evaluator) condition(name string, pos Pos, depth int) (bool, error) {
	if v, ok := e.conditions[name]; ok {
		return v, nil
	}
	c := e.Template.Condition(name)
	switch {
	case c == nil:
		return false, errorAt(pos, fmt.Sprintf("no condition %q in Conditions", name))
	case e.evaluating[name]:
		return false, errorAt(pos, fmt.Sprintf("condition %q depends on itself", name))
	}
	if e.evaluating == nil {
		e.evaluating, e.conditions = map[string]bool{}, map[string]bool{}
	}
	e.evaluating[name] = true
	v, err := e.boolean(c, depth+1)
	delete(e.evaluating, name)
	if err != nil {
		return false, err
	}
	e.conditions[name] = v
	return v, nil
}

// boolean evaluates a condition function: Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition.
func (e *Evaluator) boolean(n *Node, depth int) (bool, error) {
	if depth > maxCalls {
		return false, &Error{Pos: n.Pos, Msg: fmt.Sprintf("conditions nested more than %d deep", maxCalls), Err: ErrTooLarge}
	}
	name, arg, ok := n.Intrinsic()
	if !ok {
		return false, errorAt(n.Pos, "want a condition function (Fn::Equals, Fn::And, Fn::Or, Fn::Not, Condition), not "+n.describe())
	}
	switch name {
	case "Condition":
		return e.condition(arg.Text, n.Pos, depth)
	case "Fn::Equals":
		if arg.Kind != Sequence || len(arg.Items) != 2 {
			return false, errorAt(n.Pos, "Fn::Equals takes [value, value]")
		}
		a, err := e.eval(arg.Items[0], depth)
		if err != nil {
			return false, err
		}
		b, err := e.eval(arg.Items[1], depth)
		if err != nil {
			return false, err
		}
		return equal(a, b), nil
	case "Fn::Not", "Fn::And", "Fn::Or":
		if arg.Kind != Sequence || len(arg.Items) == 0 || len(arg.Items) > 10 || name == "Fn::Not" && len(arg.Items) != 1 {
			return false, errorAt(n.Pos, name+" takes a list of conditions (Fn::Not one, Fn::And and Fn::Or up to 10)")
		}
		all, any := true, false
		for _, c := range arg.Items {
			v, err := e.boolean(c, depth+1)
			if err != nil {
				return false, err
			}
			all, any = all && v, any || v
		}
		switch name {
		case "Fn::Not":
			return !all, nil
		case "Fn::And":
			return all, nil
		}
		return any, nil
	}
	return false, errorAt(n.Pos, name+" is not a condition function")
}

// equal compares two evaluated values as Fn::Equals does: strings by their text, lists item by
// item, mappings key by key.
func equal(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, equal)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !equal(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}

// Describe names the kind of an evaluated value, for messages: "a list", "a mapping {A, B}",
// "AWS::NoValue", "null", or the string quoted.
func Describe(v any) string {
	switch v := v.(type) {
	case []any:
		return "a list"
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return "a mapping {" + strings.Join(keys, ", ") + "}"
	case nil:
		return "null"
	case string:
		return strconv.Quote(v)
	case noValue:
		return "AWS::NoValue"
	}
	return fmt.Sprintf("%T", v)
}

// Refs returns the names of the parameters and resources that n refers to, through Ref,
// Fn::GetAtt and the variables of Fn::Sub (${Name}, ${Name.Attr}), anywhere inside it, in the
// order they first appear. Pseudo parameters (AWS::Region) and the variables a Fn::Sub defines
// itself are left out. Nothing is evaluated: a Ref under a Fn::If branch counts.
func Refs(n *Node) []string {
	var out []string
	add := func(name string) {
		if name != "" && !strings.Contains(name, "::") && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	var walk func(n *Node)
	walk = func(n *Node) {
		if n == nil {
			return
		}
		name, arg, ok := n.Intrinsic()
		switch {
		case ok && name == "Ref":
			add(arg.Text)
			return
		case ok && name == "Fn::GetAtt":
			if arg.Kind == Scalar {
				res, _, _ := strings.Cut(arg.Text, ".")
				add(res)
			} else if len(arg.Items) > 0 {
				add(arg.Items[0].String())
				walk(&Node{Kind: Sequence, Items: arg.Items[1:]})
			}
			return
		case ok && name == "Fn::Sub":
			text, vars := arg, (*Node)(nil)
			if arg.Kind == Sequence && len(arg.Items) > 0 {
				text = arg.Items[0]
				if len(arg.Items) > 1 {
					vars = arg.Items[1]
					walk(vars)
				}
			}
			for _, v := range SubVariables(text.String()) {
				if vars.Get(v) == nil {
					res, _, _ := strings.Cut(v, ".")
					add(res)
				}
			}
			return
		}
		for _, c := range n.Items {
			walk(c)
		}
		for _, p := range n.Pairs {
			walk(p.Value)
		}
	}
	walk(n)
	return out
}

// SubVariables returns the variables of a Fn::Sub string, as written between ${ and } (spaces
// trimmed), leaving out the literals ${!Text}.
func SubVariables(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return out
		}
		s = s[i+2:]
		j := strings.IndexByte(s, '}')
		if j < 0 {
			return out
		}
		v := strings.TrimSpace(s[:j])
		s = s[j+1:]
		if !strings.HasPrefix(v, "!") {
			out = append(out, v)
		}
	}
}
