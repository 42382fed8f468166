package samtemplate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Resolver evaluates the intrinsic functions of a template's values for a local run: a Ref or
// GetAtt of a table or queue gives the local server's name, ARN or URL; a Ref of a parameter its
// Default; a pseudo parameter SAM CLI's local value. Anything it cannot evaluate is an error that
// names the function and the place: klt never sets a variable to a guess.
type Resolver struct {
	T         *InvokeTemplate
	Tables    map[string]LocalTable // by logical ID
	QueueURLs map[string]string     // logical ID -> URL (only once the queues exist)
	Queues    map[string]LocalQueue // by logical ID
	Params    map[string]string     // parameter values that replace the Defaults (klt local's)
}

// Str evaluates n to a string, at where (for messages).
func (r *Resolver) Str(n *yaml.Node, where string) (string, error) {
	v, err := r.Eval(n, where)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s:%d: %s: want a string, got %s", r.T.File, n.Line, where, DescribeValue(v))
	}
	return s, nil
}

// Eval evaluates n: a string, a []any, a map[string]any.
func (r *Resolver) Eval(n *yaml.Node, where string) (any, error) {
	n = Resolve(n)
	fail := func(format string, args ...any) (any, error) {
		return nil, fmt.Errorf("%s:%d: %s: %s", r.T.File, n.Line, where, fmt.Sprintf(format, args...))
	}
	if n == nil {
		return "", nil
	}
	name, arg, isFn := r.fn(n)
	if isFn {
		switch name {
		case "Ref":
			if arg.Kind != yaml.ScalarNode {
				return fail("Ref takes a name")
			}
			return r.ref(arg.Value, n, where)
		case "Fn::GetAtt":
			var res, att string
			switch {
			case arg.Kind == yaml.ScalarNode:
				var ok bool
				if res, att, ok = strings.Cut(arg.Value, "."); !ok {
					return fail("GetAtt %q: want Resource.Attribute", arg.Value)
				}
			case arg.Kind == yaml.SequenceNode && len(arg.Content) == 2:
				res, att = Resolve(arg.Content[0]).Value, Resolve(arg.Content[1]).Value
			default:
				return fail("GetAtt takes Resource.Attribute or [Resource, Attribute]")
			}
			return r.getAtt(res, att, n, where)
		case "Fn::Sub":
			tmpl, vars := arg, (*yaml.Node)(nil)
			if arg.Kind == yaml.SequenceNode {
				if len(arg.Content) != 2 {
					return fail("Sub takes a string or [string, {variables}]")
				}
				tmpl, vars = Resolve(arg.Content[0]), Resolve(arg.Content[1])
			}
			if tmpl.Kind != yaml.ScalarNode {
				return fail("Sub takes a string")
			}
			return r.sub(tmpl.Value, vars, n, where)
		case "Fn::Join":
			if arg.Kind != yaml.SequenceNode || len(arg.Content) != 2 {
				return fail("Join takes [delimiter, [values]]")
			}
			list, err := r.Eval(arg.Content[1], where)
			if err != nil {
				return nil, err
			}
			items, ok := list.([]any)
			if !ok {
				return fail("Join: want a list of values")
			}
			parts := make([]string, len(items))
			for i, it := range items {
				if parts[i], ok = it.(string); !ok {
					return fail("Join: item %d is %s, not a string", i, DescribeValue(it))
				}
			}
			return strings.Join(parts, Resolve(arg.Content[0]).Value), nil
		case "Fn::Select":
			if arg.Kind != yaml.SequenceNode || len(arg.Content) != 2 {
				return fail("Select takes [index, [values]]")
			}
			i, err := strconv.Atoi(Resolve(arg.Content[0]).Value)
			list, err2 := r.Eval(arg.Content[1], where)
			if err2 != nil {
				return nil, err2
			}
			items, ok := list.([]any)
			if err != nil || !ok || i < 0 || i >= len(items) {
				return fail("Select: index %q out of the list", Resolve(arg.Content[0]).Value)
			}
			return items[i], nil
		case "Fn::Split":
			if arg.Kind != yaml.SequenceNode || len(arg.Content) != 2 {
				return fail("Split takes [delimiter, string]")
			}
			s, err := r.Str(arg.Content[1], where)
			if err != nil {
				return nil, err
			}
			var out []any
			for _, p := range strings.Split(s, Resolve(arg.Content[0]).Value) {
				out = append(out, p)
			}
			return out, nil
		case "Fn::If":
			if arg.Kind != yaml.SequenceNode || len(arg.Content) != 3 {
				return fail("If takes [condition, value if true, value if false]")
			}
			ok, err := r.condition(Resolve(arg.Content[0]).Value, n, where, 0)
			if err != nil {
				return nil, err
			}
			if ok {
				return r.Eval(arg.Content[1], where)
			}
			return r.Eval(arg.Content[2], where)
		}
		return fail("%s is an intrinsic function klt invoke cannot evaluate locally; write the value out, or set it with --env-vars", name)
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value, nil
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := r.Eval(c, where)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.MappingNode:
		out := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := r.Eval(n.Content[i+1], where)
			if err != nil {
				return nil, err
			}
			out[n.Content[i].Value] = v
		}
		return out, nil
	}
	return fail("unexpected YAML")
}

// fn returns the name ("Ref", "Fn::Sub") and argument of an intrinsic function node.
func (r *Resolver) fn(n *yaml.Node) (string, *yaml.Node, bool) {
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		name := strings.TrimPrefix(n.Tag, "!")
		if name != "Ref" {
			name = "Fn::" + name
		}
		// The short form's argument is the node itself, without its tag.
		arg := *n
		arg.Tag = ""
		if arg.Kind == yaml.ScalarNode {
			arg.Tag = "!!str"
		}
		return name, &arg, true
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		k := n.Content[0].Value
		if k == "Ref" || strings.HasPrefix(k, "Fn::") {
			return k, Resolve(n.Content[1]), true
		}
	}
	return "", nil, false
}

// ref evaluates Ref name.
func (r *Resolver) ref(name string, n *yaml.Node, where string) (any, error) {
	switch name {
	case "AWS::AccountId":
		return LocalAccount, nil
	case "AWS::Region":
		return LocalRegion, nil
	case "AWS::StackName":
		return "local", nil
	case "AWS::URLSuffix":
		return "localhost", nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::NoValue":
		return NoValue{}, nil
	}
	if tb, ok := r.Tables[name]; ok {
		return tb.Name, nil
	}
	if q, ok := r.Queues[name]; ok {
		return r.queueURL(q, n, where)
	}
	if v, ok := r.Params[name]; ok {
		return v, nil
	}
	if _, p := MapGet(r.T.Params, name); p != nil {
		_, def := MapGet(p, "Default")
		if def == nil {
			return nil, fmt.Errorf("%s:%d: %s: parameter %s has no Default, so klt invoke has no local value for it; give it a Default, or set the variable with --env-vars", r.T.File, n.Line, where, name)
		}
		if def.Kind == yaml.SequenceNode { // a CommaDelimitedList written as a list
			var parts []string
			for _, c := range def.Content {
				parts = append(parts, c.Value)
			}
			return strings.Join(parts, ","), nil
		}
		return def.Value, nil
	}
	if r.T.ResourceType(name) != "" {
		return name, nil // as sam local invoke: the logical ID
	}
	return nil, fmt.Errorf("%s:%d: %s: Ref %s: no such parameter or resource", r.T.File, n.Line, where, name)
}

// NoValue is the value of Ref AWS::NoValue: the property (here, the variable) is left out.
type NoValue struct{}

// condition evaluates the template's condition name (Conditions), depth deep in other
// conditions.
func (r *Resolver) condition(name string, n *yaml.Node, where string, depth int) (bool, error) {
	_, conds := MapGet(r.T.root, "Conditions")
	_, c := MapGet(conds, name)
	if c == nil {
		return false, fmt.Errorf("%s:%d: %s: no condition %q in Conditions", r.T.File, n.Line, where, name)
	}
	if depth > 20 {
		return false, fmt.Errorf("%s:%d: %s: conditions nested more than 20 deep (a cycle?)", r.T.File, n.Line, where)
	}
	return r.boolean(c, where, depth+1)
}

// boolean evaluates a condition function: Equals, Not, And, Or, Condition.
func (r *Resolver) boolean(n *yaml.Node, where string, depth int) (bool, error) {
	n = Resolve(n)
	name, arg, ok := r.fn(n)
	if !ok {
		if _, c := MapGet(n, "Condition"); c != nil {
			return r.condition(c.Value, n, where, depth)
		}
		return false, fmt.Errorf("%s:%d: %s: want a condition function", r.T.File, n.Line, where)
	}
	switch name {
	case "Fn::Equals":
		if arg.Kind != yaml.SequenceNode || len(arg.Content) != 2 {
			return false, fmt.Errorf("%s:%d: %s: Equals takes two values", r.T.File, n.Line, where)
		}
		a, err := r.Eval(arg.Content[0], where)
		if err != nil {
			return false, err
		}
		b, err := r.Eval(arg.Content[1], where)
		if err != nil {
			return false, err
		}
		return fmt.Sprint(a) == fmt.Sprint(b), nil
	case "Fn::Not", "Fn::And", "Fn::Or":
		if arg.Kind != yaml.SequenceNode || len(arg.Content) == 0 {
			return false, fmt.Errorf("%s:%d: %s: %s takes a list of conditions", r.T.File, n.Line, where, name)
		}
		var vals []bool
		for _, c := range arg.Content {
			v, err := r.boolean(c, where, depth+1)
			if err != nil {
				return false, err
			}
			vals = append(vals, v)
		}
		switch name {
		case "Fn::Not":
			return !vals[0], nil
		case "Fn::And":
			for _, v := range vals {
				if !v {
					return false, nil
				}
			}
			return true, nil
		default:
			for _, v := range vals {
				if v {
					return true, nil
				}
			}
			return false, nil
		}
	case "Fn::Condition":
		return r.condition(arg.Value, n, where, depth)
	}
	return false, fmt.Errorf("%s:%d: %s: %s is not a condition function", r.T.File, n.Line, where, name)
}

// queueURL returns the local URL of q; it is an error to ask before the queues exist.
func (r *Resolver) queueURL(q LocalQueue, n *yaml.Node, where string) (string, error) {
	u, ok := r.QueueURLs[q.LogicalID]
	if !ok {
		return "", fmt.Errorf("%s:%d: %s: queue %s has no local URL yet (internal error)", r.T.File, n.Line, where, q.LogicalID)
	}
	return u, nil
}

// getAtt evaluates GetAtt res.att.
func (r *Resolver) getAtt(res, att string, n *yaml.Node, where string) (any, error) {
	if tb, ok := r.Tables[res]; ok {
		arn := "arn:aws:dynamodb:" + LocalRegion + ":" + LocalAccount + ":table/" + tb.Name
		switch att {
		case "Arn":
			return arn, nil
		case "StreamArn":
			return arn + "/stream/local", nil
		}
	}
	if q, ok := r.Queues[res]; ok {
		switch att {
		case "Arn":
			return "arn:aws:sqs:" + LocalRegion + ":" + LocalAccount + ":" + q.Name, nil
		case "QueueName":
			return q.Name, nil
		case "QueueUrl":
			return r.queueURL(q, n, where)
		}
	}
	if r.T.ResourceType(res) == samFunctionKind && att == "Arn" {
		return "arn:aws:lambda:" + LocalRegion + ":" + LocalAccount + ":function:" + res, nil
	}
	return nil, fmt.Errorf("%s:%d: %s: GetAtt %s.%s has no local value (klt invoke knows the Arn, StreamArn, QueueUrl and QueueName of tables and queues, and a function's Arn); set the variable with --env-vars",
		r.T.File, n.Line, where, res, att)
}

// sub evaluates Fn::Sub.
func (r *Resolver) sub(s string, vars *yaml.Node, n *yaml.Node, where string) (any, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i+2:]
		if strings.HasPrefix(s, "!") { // ${!Literal}
			b.WriteString("${")
			continue
		}
		j := strings.IndexByte(s, '}')
		if j < 0 {
			return nil, fmt.Errorf("%s:%d: %s: Sub: unclosed ${", r.T.File, n.Line, where)
		}
		name := s[:j]
		s = s[j+1:]
		if _, v := MapGet(vars, name); v != nil {
			val, err := r.Str(v, where)
			if err != nil {
				return nil, err
			}
			b.WriteString(val)
			continue
		}
		var val any
		var err error
		if res, att, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(name, "AWS::") {
			val, err = r.getAtt(res, att, n, where)
		} else {
			val, err = r.ref(name, n, where)
		}
		if err != nil {
			return nil, err
		}
		str, ok := val.(string)
		if !ok {
			return nil, fmt.Errorf("%s:%d: %s: Sub: ${%s} is %s, not a string", r.T.File, n.Line, where, name, DescribeValue(val))
		}
		b.WriteString(str)
	}
}

// DescribeValue names the kind of an evaluated value, for messages.
func DescribeValue(v any) string {
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
	}
	return fmt.Sprintf("%T", v)
}
