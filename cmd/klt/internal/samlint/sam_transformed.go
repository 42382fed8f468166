package samlint

// This file checks the properties of an AWS::Serverless::Function that the SAM transform
// copies into resources it writes, against the CloudFormation constraints of where they
// land: cfn-lint runs the transform and then the schemas, so it refuses a placeholder ARN in
// a destination or a dead-letter queue at the resource the transform made. klt reports it at
// the SAM property the user wrote (or the parameter Default it comes from).
//
// What the transform does with them (aws-sam-translator 1.110.0, model/sam_resources.py):
// DeadLetterQueue.TargetArn becomes the function's DeadLetterConfig.TargetArn and the Resource
// of the sqs:SendMessage or sns:Publish statement of the role it writes; an EventInvokeConfig's
// DestinationConfig.OnSuccess/OnFailure.Destination becomes the Destination of the
// AWS::Lambda::EventInvokeConfig it writes, and the Resource of the role's statement for it.
// The transform resolves a Ref to a parameter in EventInvokeConfig with the parameter's
// Default (resolve_parameter_refs), and cfn-lint does the same for the values it checks.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/cfnschema"
	"github.com/kafkalambda/toolkit/internal/template"
)

// policyResourceARN is what an IAM policy statement's Resource must match: cfn-lint's IAM
// policy schema (cfnlint/data/schemas/other/iam/policy.json, MIT-0), which it holds the
// transform's role policies to (E3510). The Lambda schema's DeadLetterConfig.TargetArn
// pattern lets any string through, so this is the one a DeadLetterQueue TargetArn meets.
var policyResourceARN = regexp.MustCompile(`^(arn:(aws[A-Za-z\-]*?|\*):[^:]+:[^:]*(:(?:\d{12}|\*|aws)?:.+|)|\*)$`)

// maxLiteralDepth bounds the Fn::If nesting followed to the values a property may take.
const maxLiteralDepth = 16

// checkTransformedARNs checks every function's DeadLetterQueue TargetArn and EventInvokeConfig
// destinations (its own or Globals') as CloudFormation will after the transform.
func (l *linter) checkTransformedARNs() {
	c := cfnschema.New(l.t)
	for _, fn := range l.sortedIDs(template.TypeFunction) {
		r := l.t.Resource(fn)
		for _, lit := range l.literals(l.t.Property(r, "DeadLetterQueue").Get("TargetArn"), "", 0) {
			if !policyResourceARN.MatchString(lit.node.Text) {
				l.addARN(fn, "Properties.DeadLetterQueue.TargetArn", lit,
					"does not match the pattern of an IAM policy Resource "+policyResourceARN.String()+" (the transform writes it into the role's dead-letter statement)",
					"give the ARN of the "+l.t.Property(r, "DeadLetterQueue").Get("Type").Text+" dead-letter target (arn:aws:SERVICE:REGION:ACCOUNT:NAME), or a !Ref/!GetAtt of one in the template")
			}
		}
		dc := l.t.Property(r, "EventInvokeConfig").Get("DestinationConfig")
		for _, on := range []string{"OnSuccess", "OnFailure"} {
			path := "Properties.EventInvokeConfig.DestinationConfig." + on + ".Destination"
			for _, lit := range l.literals(dc.Lookup(on, "Destination"), "", 0) {
				if msg := destinationProblem(c, on, lit.node); msg != "" {
					l.addARN(fn, path, lit, msg+" (the Destination of the AWS::Lambda::EventInvokeConfig the transform writes)",
						"give the ARN of the queue, topic, function or event bus (arn:aws:SERVICE:REGION:ACCOUNT:NAME), or a !Ref/!GetAtt of one in the template")
				}
			}
		}
	}
}

// literal is a string a property may take, and the parameter whose Default it is, if any.
type literal struct {
	node  *template.Node
	param string
}

// literals returns the strings written out that n may stand for: n itself, each branch of an
// Fn::If, the Default of a parameter a Ref names. Any other intrinsic stands for any value.
func (l *linter) literals(n *template.Node, param string, depth int) []literal {
	if n == nil || depth > maxLiteralDepth {
		return nil
	}
	name, arg, ok := n.Intrinsic()
	switch {
	case !ok:
		if n.Kind == template.Scalar && n.Tag == template.TagStr {
			return []literal{{n, param}}
		}
		return nil
	case name == "Fn::If" && arg.Kind == template.Sequence && len(arg.Items) == 3:
		return append(l.literals(arg.Items[1], param, depth+1), l.literals(arg.Items[2], param, depth+1)...)
	case name == "Ref" && arg.IsString() && param == "":
		if p := l.t.Parameter(arg.Text); p != nil && !strings.Contains(p.Type, "List") {
			return l.literals(p.Default, p.Name, depth+1)
		}
	}
	return nil
}

// destinationProblem checks a destination against the schema of
// AWS::Lambda::EventInvokeConfig, on a resource made up of it alone; "" when it passes.
func destinationProblem(c *cfnschema.Checker, on string, dest *template.Node) string {
	on1 := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: dest.Pos, Pairs: []template.Pair{{Key: "Destination", KeyPos: dest.Pos, Value: dest}}}
	dc := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: dest.Pos, Pairs: []template.Pair{{Key: on, KeyPos: dest.Pos, Value: on1}}}
	props := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: dest.Pos, Pairs: []template.Pair{{Key: "DestinationConfig", KeyPos: dest.Pos, Value: dc}}}
	probs, err := c.Resource(&template.Resource{Type: "AWS::Lambda::EventInvokeConfig", Properties: props, Node: props, Pos: dest.Pos})
	if err != nil {
		return err.Error()
	}
	for _, p := range probs {
		if p.Path == "Properties.DestinationConfig."+on+".Destination" {
			return p.Problem
		}
	}
	return ""
}

// addARN reports a value that is no ARN where the transform puts it, at the value (in the
// function, Globals or the parameter's Default).
func (l *linter) addARN(fn, path string, lit literal, msg, fix string) {
	if !strings.HasPrefix(msg, strconv.Quote(lit.node.Text)) {
		msg = strconv.Quote(lit.node.Text) + " " + msg
	}
	if lit.param != "" {
		msg = strings.Replace(msg, strconv.Quote(lit.node.Text), fmt.Sprintf("%q (the Default of parameter %s)", lit.node.Text, lit.param), 1)
	}
	l.problems = append(l.problems, Problem{Pos: lit.node.Pos, Resource: fn, Path: path, Problem: cfnFails + msg, Fix: fix})
}
