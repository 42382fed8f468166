package samlint

// This file checks the primary identifiers of the resources the SAM transform makes for
// uniqueness (cfn-lint E3019): two functions with one FunctionName cannot both be created.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/cfnschema"
	"github.com/kafkalambda/toolkit/internal/template"
)

// generatedType returns the type of the resource the transform makes of r (an
// AWS::Serverless::Function becomes an AWS::Lambda::Function, a SimpleTable an
// AWS::DynamoDB::Table), and the property of r each property of that type comes from.
func (l *linter) generatedType(r *template.Resource) (string, func(key string) *template.Node) {
	switch r.Type {
	case template.TypeFunction:
		return lambdaFunctionType, func(key string) *template.Node {
			if slices.Contains(lambdaFunctionProps, key) {
				return l.t.Property(r, key)
			}
			return nil
		}
	case template.TypeSimpleTable:
		return template.TypeTable, func(key string) *template.Node {
			if key == "TableName" {
				return r.Properties.Get(key)
			}
			return nil
		}
	}
	return r.Type, r.Properties.Get
}

// checkPrimaryIdentifiers reports resources of one type (after the transform) whose primary
// identifier, the name that identifies them in the account (an AWS::Lambda::Function's
// FunctionName), is written the same: CloudFormation cannot create the second (cfn-lint
// E3019). Resources made under different conditions may never exist together and are not
// compared; neither is an identifier that depends on a condition (Fn::If).
func (l *linter) checkPrimaryIdentifiers() {
	type group struct {
		typ, value string
		ids        []string
	}
	groups := map[string]*group{}
	var order []string
	for _, r := range l.t.Resources {
		typ, get := l.generatedType(r)
		keys := cfnschema.PrimaryIdentifier(typ)
		if len(keys) == 0 {
			continue
		}
		var parts []string
		ok := true
		for _, k := range keys {
			v := get(k)
			if v == nil || v.IsNull() || isNoValue(v) || hasIf(v) {
				ok = false
				break
			}
			plain, err := v.Plain()
			b, jerr := json.Marshal(plain)
			if err != nil || jerr != nil {
				ok = false
				break
			}
			parts = append(parts, k+": "+string(b))
		}
		if !ok {
			continue
		}
		value := strings.Join(parts, ", ")
		key := typ + "\x00" + r.Condition + "\x00" + value
		if groups[key] == nil {
			groups[key] = &group{typ: typ, value: value}
			order = append(order, key)
		}
		groups[key].ids = append(groups[key].ids, r.LogicalID)
	}
	for _, key := range order {
		g := groups[key]
		if len(g.ids) < 2 {
			continue
		}
		keys := cfnschema.PrimaryIdentifier(g.typ)
		path := "Properties"
		if len(keys) == 1 {
			path = "Properties." + keys[0]
		}
		for _, id := range g.ids {
			others := slices.DeleteFunc(slices.Clone(g.ids), func(o string) bool { return o == id })
			l.add(id, path, cfnFails+fmt.Sprintf("%s is also that of %s: the %s of an %s identifies it (its primary identifier), so two cannot share it",
				g.value, strings.Join(others, ", "), strings.Join(keys, " and "), g.typ),
				"give each its own "+strings.Join(keys, " and ")+", or leave it out so that CloudFormation names the resource")
		}
	}
}

// isNoValue reports whether n is Ref AWS::NoValue, a property left out.
func isNoValue(n *template.Node) bool {
	name, arg, ok := n.Intrinsic()
	return ok && name == "Ref" && arg.Text == "AWS::NoValue"
}

// hasIf reports whether n holds an Fn::If anywhere.
func hasIf(n *template.Node) bool {
	if n == nil {
		return false
	}
	if name, _, ok := n.Intrinsic(); ok && name == "Fn::If" {
		return true
	}
	return slices.ContainsFunc(n.Items, hasIf) || slices.ContainsFunc(n.Pairs, func(p template.Pair) bool { return hasIf(p.Value) })
}
