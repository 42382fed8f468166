package template_test

import (
	"errors"
	"fmt"

	"github.com/kafkalambda/toolkit/internal/template"
)

const orders = `Parameters:
  Stage: {Type: String, Default: dev}
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
Resources:
  Orders:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Sub "orders-${Stage}"
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: ./worker
      Environment:
        Variables:
          QUEUE_URL: !Ref Orders
          QUEUE_ARN: !GetAtt Orders.Arn
          LOG_LEVEL: !If [IsProd, info, debug]
          SHARED: !ImportValue shared-bucket
      Events:
        Orders:
          Type: SQS
          Properties:
            Queue: !GetAtt Orders.Arn
            FilterCriteria:
              Filters:
                - Pattern: {body: {status: [PLACED]}}
`

// Reading a template: resources in file order, a SAM function's events as typed values, and a
// place for every node.
func ExampleRead() {
	t, err := template.Read("template.yaml", []byte(orders))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range t.Resources {
		fmt.Println(r.Pos, r.LogicalID, r.Type)
		for _, e := range r.Events {
			fmt.Println("  event", e.Name, e.Type, "at", e.Pos)
		}
	}
	// Output:
	// template.yaml:6:3 Orders AWS::SQS::Queue
	// template.yaml:10:3 Worker AWS::Serverless::Function
	//   event Orders SQS at template.yaml:21:9
}

// Every error that points into a template names FILE:LINE:COL.
func ExampleRead_duplicateKey() {
	_, err := template.Read("template.yaml", []byte("Resources:\n  Queue: {Type: AWS::SQS::Queue}\n  Queue: {Type: AWS::SQS::Queue}\n"))
	fmt.Println(err)
	// Output:
	// template.yaml:3:3: mapping key "Queue" given twice (first at line 2, column 3); CloudFormation refuses such a template
}

// localQueues is what a local run makes of the template's queues: the Resources hook of an
// Evaluator.
type localQueues struct{}

func (localQueues) Ref(r *template.Resource) (any, error) {
	return "http://localhost:9324/123456789012/" + r.LogicalID, nil
}

func (localQueues) GetAtt(r *template.Resource, attr string) (any, error) {
	if attr == "Arn" {
		return "arn:aws:sqs:us-east-1:123456789012:" + r.LogicalID, nil
	}
	return nil, fmt.Errorf("no local %s: %w", attr, template.ErrUnknown)
}

// Evaluating a function's environment for a local run (klt invoke): the caller says what the
// resources stand for; what cannot be known is ErrUnknown, at its place.
func ExampleEvaluator() {
	t, _ := template.Read("template.yaml", []byte(orders))
	ev := &template.Evaluator{Template: t, Pseudo: template.LocalPseudo(), Resources: localQueues{}}
	env, _ := t.Environment(t.Resource("Worker"))
	for _, v := range env {
		s, err := ev.String(v.Value)
		switch {
		case errors.Is(err, template.ErrUnknown):
			fmt.Printf("%s: cannot be known here (%v)\n", v.Key, err)
		case err != nil:
			fmt.Printf("%s: %v\n", v.Key, err)
		default:
			fmt.Printf("%s=%s\n", v.Key, s)
		}
	}
	// Output:
	// QUEUE_URL=http://localhost:9324/123456789012/Orders
	// QUEUE_ARN=arn:aws:sqs:us-east-1:123456789012:Orders
	// LOG_LEVEL=debug
	// SHARED: cannot be known here (template.yaml:19:19: !ImportValue is an intrinsic function klt cannot evaluate)
}

// Checking a value without a deployment (klt lint): without a Resources hook a resource's
// value is unknown, but Refs still says which resources a value names.
func ExampleRefs() {
	t, _ := template.Read("template.yaml", []byte(orders))
	queue := t.Resource("Worker").Event("Orders").Properties.Get("Queue")
	for _, name := range template.Refs(queue) {
		fmt.Println(name, "is a", t.Resource(name).Type)
	}
	_, err := (&template.Evaluator{Template: t}).Eval(queue)
	fmt.Println(errors.Is(err, template.ErrUnknown))
	// Output:
	// Orders is a AWS::SQS::Queue
	// true
}

// A filter pattern written as a YAML mapping, as JSON text with its keys in order (klt filter
// lint); Plain gives the same as Go values, for a JSON schema.
func ExampleNode_AppendJSON() {
	t, _ := template.Read("template.yaml", []byte(orders))
	pattern := t.Resource("Worker").Event("Orders").Properties.Lookup("FilterCriteria", "Filters").Items[0].Get("Pattern")
	b, err := pattern.AppendJSON(nil, 4096)
	fmt.Println(string(b), err)
	v, _ := pattern.Plain()
	fmt.Println(v)
	// Output:
	// {"body":{"status":["PLACED"]}} <nil>
	// map[body:map[status:[PLACED]]]
}
