package samspec

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kafkalambda/toolkit/internal/template"
)

// Resolver evaluates the intrinsic functions of a template's values for a local run, with
// internal/template's evaluator: a Ref or GetAtt of a table or queue gives the local server's
// name, ARN or URL (localValues); a pseudo parameter SAM CLI's local value; a Ref of a
// parameter, in this order, its value in Params (--parameter-overrides), its Default, or the
// address of a local server klt owns (Local) when the template uses the parameter where that
// server's address goes (see [KafkaBrokerParameters]). Anything it cannot evaluate is an error
// that names the place and the value, and for a parameter without a value, how to give one:
// klt never sets a variable to a guess.
type Resolver struct {
	T         *InvokeTemplate
	Tables    map[string]LocalTable // by logical ID
	QueueURLs map[string]string     // logical ID -> URL (only once the queues exist)
	Queues    map[string]LocalQueue // by logical ID
	Params    map[string]string     // parameter values that replace the Defaults (--parameter-overrides)
	Local     LocalEndpoints        // the local servers' addresses, once they run

	// ParameterHint says how a parameter is given a value, for the error about one that has
	// none: nil says "--parameter-overrides NAME=VALUE", the flag of klt invoke, klt env-vars
	// and klt local; a Go API sets its own.
	ParameterHint func(name string) string

	brokers []string // KafkaBrokerParameters(T), once computed
	found   bool
}

// LocalEndpoints are the addresses of the local servers klt owns, which stand for the
// parameters a template leaves to the deployer.
type LocalEndpoints struct {
	// KafkaBootstrapServers (host:port, comma-separated) is the value of every parameter with
	// neither an override nor a Default that the template uses where a Kafka mapping's
	// bootstrap servers go ([KafkaBrokerParameters]), whatever its name. "" until the local
	// Kafka runs: such a parameter is then an error.
	KafkaBootstrapServers string
}

// evaluator returns a template.Evaluator of r's values: a new one for each evaluation, as the
// parameters, local endpoints and queue URLs change between them (klt sets them once it has
// servers).
func (r *Resolver) evaluator() *template.Evaluator {
	return &template.Evaluator{Template: r.T.T, Parameters: r.parameters(), Pseudo: template.LocalPseudo(), Resources: localValues{r}}
}

// parameters returns Params, with the local Kafka's address for each Kafka broker parameter
// that has neither an override nor a Default.
func (r *Resolver) parameters() map[string]string {
	if r.Local.KafkaBootstrapServers == "" {
		return r.Params
	}
	if !r.found {
		r.brokers, r.found = KafkaBrokerParameters(r.T), true
	}
	var out map[string]string
	for _, name := range r.brokers {
		if _, given := r.Params[name]; given || r.T.T.Parameter(name).Default != nil {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(r.Params)+len(r.brokers))
			for k, v := range r.Params {
				out[k] = v
			}
		}
		out[name] = r.Local.KafkaBootstrapServers
	}
	if out == nil {
		return r.Params
	}
	return out
}

// KafkaBrokerParameters returns the template's parameters, sorted, that it uses where a Kafka
// mapping's bootstrap servers go: in a SelfManagedKafka event's KafkaBootstrapServers, in an
// AWS::Lambda::EventSourceMapping's SelfManagedEventSource.Endpoints.KafkaBootstrapServers,
// or in a function's environment variable of brokers ([IsBrokersVariable]), directly or inside
// intrinsics (!Split, !Join, !Sub).
func KafkaBrokerParameters(t *InvokeTemplate) []string {
	var places []*template.Node
	for _, res := range t.T.Resources {
		switch res.Type {
		case template.TypeEventSourceMapping:
			places = append(places, res.Properties.Lookup("SelfManagedEventSource", "Endpoints", "KafkaBootstrapServers"))
		case template.TypeFunction:
			for _, ev := range res.Events {
				if ev.Type == "SelfManagedKafka" {
					places = append(places, ev.Properties.Get("KafkaBootstrapServers"))
				}
			}
			env, _ := t.T.Environment(res) // a malformed Environment is reported where it is read
			for _, p := range env {
				if IsBrokersVariable(p.Key) {
					places = append(places, p.Value)
				}
			}
		}
	}
	var out []string
	for _, n := range places {
		for _, name := range template.Refs(n) {
			if t.T.Parameter(name) != nil && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// IsBrokersVariable reports whether an environment variable's name says it holds Kafka
// brokers: KAFKA_BOOTSTRAP_SERVERS (what package producer reads), or any name with
// BOOTSTRAP_SERVERS or BROKER in it (BROKERS, KAFKA_BROKER_LIST), in any case.
func IsBrokersVariable(name string) bool {
	u := strings.ToUpper(name)
	return strings.Contains(u, "BOOTSTRAP_SERVERS") || strings.Contains(u, "BROKER")
}

// Eval evaluates n, at where (for messages): a string, a []any, a map[string]any, nil, or
// template.NoValue. An absent value (nil) is "".
func (r *Resolver) Eval(n *template.Node, where string) (any, error) {
	if n == nil {
		return "", nil
	}
	v, err := r.evaluator().Eval(n)
	return v, r.explain(err, where)
}

// Str evaluates n to a string, at where (for messages).
func (r *Resolver) Str(n *template.Node, where string) (string, error) {
	if n == nil {
		return "", nil
	}
	s, err := r.evaluator().String(n)
	return s, r.explain(err, where)
}

// condition evaluates the template's condition name, named at at.
func (r *Resolver) condition(name string, at template.Pos, where string) (bool, error) {
	ok, err := r.evaluator().Condition(name, at)
	return ok, r.explain(err, where)
}

// explain puts where into an evaluation error, after FILE:LINE:COL, and says what to do about
// a value klt has no local value for: for a parameter, how to give it one (ParameterHint).
func (r *Resolver) explain(err error, where string) error {
	te, ok := errors.AsType[*template.Error](err)
	if !ok {
		return err
	}
	msg := where + ": " + te.Msg
	switch name, isParam := missingParameter(te.Msg); {
	case isParam && r.ParameterHint != nil:
		msg += "; " + r.ParameterHint(name)
	case isParam:
		msg += "; give it one with --parameter-overrides " + name + "=VALUE"
	case errors.Is(err, template.ErrUnknown):
		msg += "; klt has no local value for it: write the value out"
	}
	return &template.Error{Pos: te.Pos, Msg: msg, Err: te.Err}
}

// missingParameter returns the parameter an evaluation error of internal/template says has
// no value ("parameter NAME has no Default, and no value was given").
func missingParameter(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(msg, "parameter ")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, " has no Default, and no value was given")
	return name, ok && name != "" && !strings.Contains(name, " ")
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

// CheckParameters checks that every name of params is a parameter of the template, as
// CloudFormation does ("Parameters: [X] do not exist in the template").
func CheckParameters(t *InvokeTemplate, params map[string]string) error {
	var unknown []string
	for name, v := range params {
		if t.T.Parameter(name) == nil {
			unknown = append(unknown, name)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("the value of %s holds a NUL byte: a parameter's value goes to the function's environment, which cannot hold one", name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	var names []string
	for _, p := range t.T.Parameters {
		names = append(names, p.Name)
	}
	return fmt.Errorf("%s has no parameter %s (its parameters: %s)", t.File, strings.Join(unknown, ", "), orNone(strings.Join(names, ", ")))
}
