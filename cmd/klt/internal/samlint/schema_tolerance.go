package samlint

import (
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// tolerance says which of the SAM schema's errors the SAM transform does not raise, so that
// klt lint does not refuse what `sam deploy` accepts. The schema is stricter than the
// transform in two ways, and both are forgiven here:
//
//   - An intrinsic function ({"Ref": ...}, {"Fn::...": ...}) stands for a value of any type:
//     the schema allows it in only some places (KafkaBootstrapServers: !Ref AListParameter
//     is "got object, want array" to it), the transform and CloudFormation everywhere, and
//     what it yields is known only at deployment.
//   - A number or boolean where the schema wants a string (SqsSubscription's BatchSize: 8):
//     the transform copies it through, and CloudFormation turns scalars into strings.
//
// An anyOf or oneOf whose one branch fails only for such reasons is met.
type tolerance struct {
	doc any // the template as the validator read it
}

// all reports whether every error in e is one the transform does not raise.
func (tol tolerance) all(e *jsonschema.ValidationError) bool {
	if tol.inIntrinsic(e.InstanceLocation) {
		return true
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		return (k.Got == "number" || k.Got == "integer" || k.Got == "boolean") && slices.Contains(k.Want, "string")
	case *kind.AnyOf, *kind.OneOf:
		return slices.ContainsFunc(e.Causes, tol.all)
	}
	if len(e.Causes) == 0 {
		return false
	}
	for _, c := range e.Causes {
		if !tol.all(c) {
			return false
		}
	}
	return true
}

// inIntrinsic reports whether the value at loc, or one that holds it, is an intrinsic
// function.
func (tol tolerance) inIntrinsic(loc []string) bool {
	v := tol.doc
	for i := 0; ; i++ {
		if isIntrinsicValue(v) {
			return true
		}
		if i == len(loc) {
			return false
		}
		switch x := v.(type) {
		case map[string]any:
			v = x[loc[i]]
		case []any:
			n, err := strconv.Atoi(loc[i])
			if err != nil || n < 0 || n >= len(x) {
				return false
			}
			v = x[n]
		default:
			return false
		}
	}
}

// isIntrinsicValue reports whether v is a mapping of one key, Ref, Condition or Fn::...,
// as CloudFormation reads an intrinsic function.
func isIntrinsicValue(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	for k := range m {
		return k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::")
	}
	return false
}
