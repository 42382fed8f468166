package stackrun

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/kafkalambda/toolkit/esm/samspec"
)

// Variant is one --variant: a copy of a function of the template, under a name of its own,
// whose environment is resolved with one template parameter given another value, run beside
// the original as a pipeline of its own: its mappings are the original's, copied, reading the
// same topics in a consumer group of their own. It measures one change of a function's
// configuration against the function as it is, in one run (make demo: the consumer with key
// concurrency beside the consumer without).
type Variant struct {
	Name     string // the copy's name, a logical ID of its own
	Function string // the function of the template it copies
	Param    string // the template parameter it resolves otherwise
	Value    string
}

// VariantsFlag is the repeatable --variant flag: NAME=FUNCTION:PARAMETER=VALUE.
type VariantsFlag struct{ Variants *[]Variant }

var logicalID = regexp.MustCompile(`^[A-Za-z0-9]{1,64}$`)

func (f VariantsFlag) String() string {
	if f.Variants == nil {
		return ""
	}
	var parts []string
	for _, v := range *f.Variants {
		parts = append(parts, v.String())
	}
	return strings.Join(parts, " ")
}

func (v Variant) String() string { return v.Name + "=" + v.Function + ":" + v.Param + "=" + v.Value }

func (f VariantsFlag) Set(s string) error {
	name, rest, ok1 := strings.Cut(s, "=")
	fn, assign, ok2 := strings.Cut(rest, ":")
	param, value, ok3 := strings.Cut(assign, "=")
	if !ok1 || !ok2 || !ok3 || !logicalID.MatchString(name) || !logicalID.MatchString(fn) || !logicalID.MatchString(param) {
		return fmt.Errorf("want NAME=FUNCTION:PARAMETER=VALUE (NAME, FUNCTION and PARAMETER alphanumeric, as logical IDs are), got %q", s)
	}
	for _, v := range *f.Variants {
		if v.Name == name {
			return fmt.Errorf("%q: a second variant named %s", s, name)
		}
	}
	*f.Variants = append(*f.Variants, Variant{Name: name, Function: fn, Param: param, Value: value})
	return nil
}

// addVariants copies, for each variant, the Kafka mappings of its function: each copy invokes
// the variant and reads in a consumer group of its own. A variant's function must be invoked by
// Kafka mappings only, and its name must be new.
func (s *stack) addVariants() error {
	s.variants = map[string]Variant{}
	for _, v := range s.c.Variants {
		if s.t.T.Parameter(v.Param) == nil {
			return fmt.Errorf("--variant %s: %s has no parameter %s", v, s.c.Template, v.Param)
		}
		if v.Param == s.c.HTTPSink {
			return fmt.Errorf("--variant %s: %s is --http-sink's parameter, which klt sets", v, v.Param)
		}
		var copies []*samspec.MappingSpec
		for _, m := range s.specs {
			if m.Function == v.Name || m.Id == v.Name+"Mapping" {
				return fmt.Errorf("--variant %s: the template already has %s", v, v.Name)
			}
			if m.Function != v.Function {
				continue
			}
			if m.Kind != samspec.KafkaMapping {
				return fmt.Errorf("--variant %s: %s is invoked by %s, an SQS mapping; a variant copies a function Kafka invokes", v, v.Function, m.Id)
			}
			c := *m
			c.Id, c.Function, c.GroupID = v.Name+"Mapping", v.Name, v.Name
			copies = append(copies, &c)
		}
		switch len(copies) {
		case 0:
			return fmt.Errorf("--variant %s: no enabled Kafka mapping of %s invokes %s", v, s.c.Template, v.Function)
		case 1:
		default:
			return fmt.Errorf("--variant %s: %d mappings invoke %s; a variant copies a function one mapping invokes", v, len(copies), v.Function)
		}
		s.specs = append(s.specs, copies...)
		s.variants[v.Name] = v
	}
	return nil
}

// functionSpec is the spec of function fn: the template's, or for a variant a copy of its
// function's under its own name.
func (s *stack) functionSpec(fn string, resolve func(string) (*samspec.FunctionSpec, error)) (*samspec.FunctionSpec, error) {
	v, ok := s.variants[fn]
	if !ok {
		return resolve(fn)
	}
	f, err := resolve(v.Function)
	if err != nil {
		return nil, err
	}
	c := *f
	c.LogicalID = v.Name
	return &c, nil
}

// withVariantParam runs f with the parameters as fn sees them: for a variant, its parameter
// set to its value; params is the resolver's map, restored after.
func (s *stack) withVariantParam(fn string, params map[string]string, f func() error) error {
	v, ok := s.variants[fn]
	if !ok {
		return f()
	}
	old, had := params[v.Param]
	params[v.Param] = v.Value
	defer func() {
		if had {
			params[v.Param] = old
		} else {
			delete(params, v.Param)
		}
	}()
	return f()
}
