package samlint

// This file checks the plain CloudFormation resources of a template (an
// AWS::Lambda::EventSourceMapping, an AWS::SQS::Queue...) against their resource provider
// schemas, with package cfnschema. SAM's resources are the SAM schema's (lint_schema.go).

import (
	"context"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/cfnschema"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/internal/template"
)

// checkResourceSchemas reports every place a resource's Properties break its schema, in file
// order. The problem's Resource starts with the position of the property, FILE:LINE:COL. It
// runs after klt's own checks, and leaves out a property they reported already: theirs say more
// (BatchSize 0 is out of range for Kafka, not just under the schema's minimum).
func (l *linter) checkResourceSchemas() {
	c := cfnschema.New(l.t)
	done := map[string]bool{}
	for _, p := range l.problems {
		done[p.Resource+" "+p.Path] = true
	}
	for _, r := range l.t.Resources {
		probs, err := c.Resource(r)
		if err != nil {
			l.add(r.LogicalID, "Type", err.Error(), "")
			return
		}
		for _, p := range probs {
			if done[r.LogicalID+" "+p.Path] {
				continue
			}
			l.problems = append(l.problems, Problem{Pos: p.Pos, Resource: r.LogicalID, Path: p.Path, Problem: p.Problem, Fix: p.Fix})
		}
	}
}

// UncheckedNote returns a note naming the resource types of the template file whose
// properties klt lint does not check, for want of a CloudFormation schema; "" when there are
// none, or the template cannot be read (LintFile says why).
func UncheckedNote(ctx context.Context, file string) string {
	data, err := input.ReadFileOrStdin(file, nil, input.TemplateLimit)
	if err != nil {
		return ""
	}
	t, err := template.Read(file, data)
	if err != nil {
		return ""
	}
	types := cfnschema.Unchecked(t)
	if len(types) == 0 {
		return ""
	}
	return "note: not checked against a CloudFormation schema (klt carries none for them): " + strings.Join(types, ", ")
}
