package samstack

import (
	"errors"
	"fmt"

	"github.com/kafkalambda/toolkit/internal/template"
)

// Resolver evaluates the intrinsic functions of a template's values for a local run, with
// internal/template's evaluator: a Ref or GetAtt of a table or queue gives the local server's
// name, ARN or URL (localValues); a Ref of a parameter its Default or klt local's value; a
// pseudo parameter SAM CLI's local value. Anything it cannot evaluate is an error that names
// the place and the value: klt never sets a variable to a guess.
type Resolver struct {
	T         *InvokeTemplate
	Tables    map[string]LocalTable // by logical ID
	QueueURLs map[string]string     // logical ID -> URL (only once the queues exist)
	Queues    map[string]LocalQueue // by logical ID
	Params    map[string]string     // parameter values that replace the Defaults (klt local's)
}

// evaluator returns a template.Evaluator of r's values: a new one for each evaluation, as the
// parameters and queue URLs change between them (klt local sets both once it has servers).
func (r *Resolver) evaluator() *template.Evaluator {
	return &template.Evaluator{Template: r.T.T, Parameters: r.Params, Pseudo: template.LocalPseudo(), Resources: localValues{r}}
}

// Eval evaluates n, at where (for messages): a string, a []any, a map[string]any, nil, or
// template.NoValue. An absent value (nil) is "".
func (r *Resolver) Eval(n *template.Node, where string) (any, error) {
	if n == nil {
		return "", nil
	}
	v, err := r.evaluator().Eval(n)
	return v, explain(err, where)
}

// Str evaluates n to a string, at where (for messages).
func (r *Resolver) Str(n *template.Node, where string) (string, error) {
	if n == nil {
		return "", nil
	}
	s, err := r.evaluator().String(n)
	return s, explain(err, where)
}

// condition evaluates the template's condition name, named at at.
func (r *Resolver) condition(name string, at template.Pos, where string) (bool, error) {
	ok, err := r.evaluator().Condition(name, at)
	return ok, explain(err, where)
}

// explain puts where into an evaluation error, after FILE:LINE:COL, and says what to do about
// a value klt has no local value for.
func explain(err error, where string) error {
	te, ok := errors.AsType[*template.Error](err)
	if !ok {
		return err
	}
	msg := where + ": " + te.Msg
	if errors.Is(err, template.ErrUnknown) {
		msg += "; klt has no local value for it: write the value out, or set the variable with --env-vars"
	}
	return &template.Error{Pos: te.Pos, Msg: msg, Err: te.Err}
}

// localValues says what the template's resources stand for locally (template.Resources): a
// table its local name, a queue its local URL, as sam local invoke; another resource its
// logical ID.
type localValues struct{ r *Resolver }

func (l localValues) Ref(res *template.Resource) (any, error) {
	if tb, ok := l.r.Tables[res.LogicalID]; ok {
		return tb.Name, nil
	}
	if q, ok := l.r.Queues[res.LogicalID]; ok {
		return l.r.queueURL(q)
	}
	return res.LogicalID, nil // as sam local invoke: the logical ID
}

func (l localValues) GetAtt(res *template.Resource, att string) (any, error) {
	if tb, ok := l.r.Tables[res.LogicalID]; ok {
		arn := "arn:aws:dynamodb:" + LocalRegion + ":" + LocalAccount + ":table/" + tb.Name
		switch att {
		case "Arn":
			return arn, nil
		case "StreamArn":
			return arn + "/stream/local", nil
		}
	}
	if q, ok := l.r.Queues[res.LogicalID]; ok {
		switch att {
		case "Arn":
			return "arn:aws:sqs:" + LocalRegion + ":" + LocalAccount + ":" + q.Name, nil
		case "QueueName":
			return q.Name, nil
		case "QueueUrl":
			return l.r.queueURL(q)
		}
	}
	if res.Type == template.TypeFunction && att == "Arn" {
		return "arn:aws:lambda:" + LocalRegion + ":" + LocalAccount + ":function:" + res.LogicalID, nil
	}
	return nil, fmt.Errorf("klt invoke knows the Arn, StreamArn, QueueUrl and QueueName of tables and queues, and a function's Arn: %w", template.ErrUnknown)
}

// queueURL returns the local URL of q; it is an error to ask before the queues exist.
func (r *Resolver) queueURL(q LocalQueue) (string, error) {
	u, ok := r.QueueURLs[q.LogicalID]
	if !ok {
		return "", fmt.Errorf("queue %s has no local URL yet (internal error)", q.LogicalID)
	}
	return u, nil
}
