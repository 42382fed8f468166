package samtemplate

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// intrinsicTags maps the short tags of CloudFormation's intrinsic functions to their long
// names. A tag not listed here is an error: the template would not deploy either.
var intrinsicTags = map[string]string{
	"!Ref": "Ref", "!Condition": "Condition",
	"!Base64": "Fn::Base64", "!Cidr": "Fn::Cidr", "!FindInMap": "Fn::FindInMap",
	"!GetAtt": "Fn::GetAtt", "!GetAZs": "Fn::GetAZs", "!ImportValue": "Fn::ImportValue",
	"!Join": "Fn::Join", "!Select": "Fn::Select", "!Split": "Fn::Split", "!Sub": "Fn::Sub",
	"!Transform": "Fn::Transform", "!And": "Fn::And", "!Equals": "Fn::Equals",
	"!If": "Fn::If", "!Not": "Fn::Not", "!Or": "Fn::Or", "!ToJsonString": "Fn::ToJsonString",
	"!Length": "Fn::Length", "!ForEach": "Fn::ForEach",
}

// TemplateValue turns a YAML node into the value encoding/json would make of the same
// template written as JSON (map[string]any, []any, string, json.Number, bool, nil), with
// every short-form intrinsic (!Ref X, !GetAtt A.B, !Sub ...) in its long form
// ({"Ref": "X"}, {"Fn::GetAtt": ["A", "B"]}, {"Fn::Sub": ...}), as CloudFormation reads it.
func TemplateValue(n *yaml.Node, depth int) (any, error) {
	n = Resolve(n)
	if depth > 200 {
		return nil, fmt.Errorf("line %d: nested more than 200 deep", n.Line)
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		name, ok := intrinsicTags[n.Tag]
		if !ok {
			return nil, fmt.Errorf("line %d: unknown tag %s; not one of the short forms of CloudFormation (!Ref, !GetAtt, !Sub, !If and the others)", n.Line, n.Tag)
		}
		plain := *n
		plain.Tag = ""
		switch n.Kind {
		case yaml.ScalarNode:
			plain.Tag = "!!str"
		case yaml.SequenceNode:
			plain.Tag = "!!seq"
		case yaml.MappingNode:
			plain.Tag = "!!map"
		}
		arg, err := TemplateValue(&plain, depth+1)
		if err != nil {
			return nil, err
		}
		if s, ok := arg.(string); ok && name == "Fn::GetAtt" {
			res, attr, _ := strings.Cut(s, ".")
			arg = []any{res, attr}
		}
		return map[string]any{name: arg}, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := Resolve(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a mapping key must be a plain name", k.Line)
			}
			if k.Value == "<<" {
				return nil, fmt.Errorf("line %d: YAML merge keys (<<) are not part of CloudFormation templates", k.Line)
			}
			v, err := TemplateValue(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := TemplateValue(c, depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
			return b, nil
		case "!!int", "!!float":
			b, err := appendScalarJSON(nil, n)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
			return json.Number(b), nil
		default:
			return n.Value, nil
		}
	}
	return nil, fmt.Errorf("line %d: unexpected YAML", n.Line)
}
