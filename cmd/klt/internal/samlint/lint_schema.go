package samlint

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// samSchemaJSON is the SAM template schema (draft-04) that the SAM translator generates from
// its models; see schema/README.md. loadSAMSchema adds to it the event properties the
// transform accepts and it leaves out (acceptTransformEvents).
//
//go:embed schema/sam.schema.json
var samSchemaJSON []byte

// samSchemaURL names the vendored schema inside the compiler.
const samSchemaURL = "file:///klt/sam.schema.json"

var (
	samSchemaOnce sync.Once
	samSchema     *jsonschema.Schema
	samSchemaErr  error
)

// loadSAMSchema compiles the vendored schema once.
func loadSAMSchema() (*jsonschema.Schema, error) {
	samSchemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(samSchemaJSON))
		if err != nil {
			samSchemaErr = fmt.Errorf("vendored SAM schema: %w", err)
			return
		}
		events, err := loadSAMEvents()
		if err != nil {
			samSchemaErr = err
			return
		}
		if err := acceptTransformEvents(doc, events); err != nil {
			samSchemaErr = fmt.Errorf("vendored %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft4)
		c.UseRegexpEngine(schemaRegexp)
		if err := c.AddResource(samSchemaURL, doc); err != nil {
			samSchemaErr = fmt.Errorf("vendored SAM schema: %w", err)
			return
		}
		samSchema, samSchemaErr = c.Compile(samSchemaURL)
		if samSchemaErr != nil {
			samSchemaErr = fmt.Errorf("vendored SAM schema: %w", samSchemaErr)
		}
	})
	return samSchema, samSchemaErr
}

// notServerless is the one pattern of the SAM schema that Go's regexp cannot compile: a
// negative lookahead, which says a resource of any other type is a plain CloudFormation one.
const notServerless = "^(?!AWS::Serverless::).+$"

// schemaRegexp compiles the patterns of the SAM schema: Go's regexp for all but
// notServerless, which is matched by hand.
func schemaRegexp(s string) (jsonschema.Regexp, error) {
	if s == notServerless {
		return notServerlessRegexp{}, nil
	}
	return regexp.Compile(s)
}

type notServerlessRegexp struct{}

func (notServerlessRegexp) String() string { return notServerless }
func (notServerlessRegexp) MatchString(s string) bool {
	return s != "" && !strings.HasPrefix(s, "AWS::Serverless::") && !strings.ContainsAny(s, "\n")
}

// SchemaProblems validates the template doc (as template.Node.Plain gives it: intrinsic
// functions in their long forms, as CloudFormation reads them) against the SAM schema and returns one problem
// per mistake. Where a value may be one of several shapes (a resource of any type, an event
// of any type) the schema says "anyOf"; the problems are then those of the shape whose Type
// the value has, not of every shape it is not.
func SchemaProblems(doc any) ([]Problem, error) {
	sch, err := loadSAMSchema()
	if err != nil {
		return nil, err
	}
	// The validator wants what its own UnmarshalJSON makes: go through JSON text.
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("template as JSON: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("template as JSON: %w", err)
	}
	err = sch.Validate(inst)
	if err == nil {
		return nil, nil
	}
	ve, ok := errors.AsType[*jsonschema.ValidationError](err)
	if !ok {
		return nil, fmt.Errorf("SAM schema: %w", err)
	}
	tol := tolerance{doc: inst}
	if tol.all(ve) {
		return nil, nil
	}
	var leaves []*jsonschema.ValidationError
	tol.leaves(ve, &leaves)
	p := message.NewPrinter(language.English)
	var out []Problem
	seen := map[string]bool{}
	for _, l := range leaves {
		pr := schemaProblem(l, p)
		key := pr.String()
		if !seen[key] {
			seen[key] = true
			out = append(out, pr)
		}
	}
	return out, nil
}

// leaves collects the errors at the bottom of e that the SAM transform would raise too
// (see tolerance). For anyOf and oneOf it keeps only the branches whose Type matched, when
// some did.
func (tol tolerance) leaves(e *jsonschema.ValidationError, out *[]*jsonschema.ValidationError) {
	if len(e.Causes) == 0 {
		*out = append(*out, e)
		return
	}
	var causes []*jsonschema.ValidationError
	for _, c := range e.Causes {
		if !tol.all(c) {
			causes = append(causes, c)
		}
	}
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		typeLoc := append(slices.Clone(e.InstanceLocation), "Type")
		var kept []*jsonschema.ValidationError
		for _, c := range causes {
			if !failsAt(c, typeLoc) {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 {
			if len(causes) > 1 {
				*out = append(*out, e) // no shape fits at all: say so once
				return
			}
			kept = causes
		}
		causes = kept
	}
	for _, c := range causes {
		tol.leaves(c, out)
	}
}

// failsAt reports whether e or one of its causes is an error about the value at loc.
func failsAt(e *jsonschema.ValidationError, loc []string) bool {
	if slices.Equal(e.InstanceLocation, loc) {
		return true
	}
	for _, c := range e.Causes {
		if failsAt(c, loc) {
			return true
		}
	}
	return false
}

// schemaProblem turns one schema error into a lint problem.
func schemaProblem(e *jsonschema.ValidationError, p *message.Printer) Problem {
	loc := e.InstanceLocation
	pr := Problem{Resource: "(template)"}
	switch {
	case len(loc) >= 2 && (loc[0] == "Resources" || loc[0] == "Globals" || loc[0] == "Outputs" || loc[0] == "Parameters"):
		pr.Resource, pr.Path = loc[1], strings.Join(loc[2:], ".")
		if loc[0] != "Resources" {
			pr.Resource, pr.Path = loc[0], strings.Join(loc[1:], ".")
		}
	default:
		pr.Path = strings.Join(loc, ".")
	}
	pr.Problem = "the SAM schema says: " + e.ErrorKind.LocalizedString(p)
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		pr.Problem = fmt.Sprintf("the SAM schema does not allow %s here", strings.Join(quoteAll(k.Properties), ", "))
		if len(k.Properties) == 1 {
			pr.Path = strings.TrimPrefix(pr.Path+"."+k.Properties[0], ".")
			pr.Problem = "the SAM schema does not allow this property here"
		}
		pr.Fix = "remove it or correct its name or place (names are case-sensitive)"
	case *kind.AnyOf, *kind.OneOf:
		pr.Problem = "matches none of the shapes the SAM schema allows here"
		pr.Fix = "check its Type and properties against the SAM documentation"
	case *kind.Required:
		pr.Fix = "add " + strings.Join(k.Missing, ", ")
	default:
		pr.Fix = "write what the SAM schema accepts here"
	}
	if pr.Path == "" {
		pr.Path = "(whole)"
	}
	return pr
}

func quoteAll(s []string) []string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return q
}
