package samlint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/criteria"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/samtemplate"
	"github.com/kafkalambda/toolkit/filter"
)

// Problem is one mistake klt lint found: printed as "RESOURCE PATH: PROBLEM; fix: FIX".
type Problem struct {
	Resource string // logical ID, or Globals
	Path     string // property path inside the resource, dot-separated
	Problem  string
	Fix      string
}

func (p Problem) String() string {
	s := p.Resource + " " + p.Path + ": " + p.Problem
	if p.Fix != "" {
		s += "; fix: " + p.Fix
	}
	return s
}

// Limits the checks enforce (reference/esm-contract.md).
const (
	kafkaMaxBatchSize    = 10000 // MSK and self-managed Kafka BatchSize: 1..10,000
	kafkaMaxWindow       = 300   // MaximumBatchingWindowInSeconds: 0..300
	fifoMaxBatchSize     = 10    // SQS FIFO event source mappings
	visibilityFactor     = 6     // SQS VisibilityTimeout >= 6 x function timeout + window
	defaultTimeout       = 3     // Lambda's default function timeout, seconds
	defaultVisibility    = 30    // SQS's default VisibilityTimeout, seconds
	idempotencyTTLAttr   = "expiration"
	idempotencyTableEnv  = "IDEMPOTENCY_TABLE"
	reportBatchItemFails = "ReportBatchItemFailures"
)

// LintFile lints the template file. The error is for a template that cannot be read at all.
func LintFile(ctx context.Context, file string) ([]Problem, error) {
	data, err := base.ReadInputFile(file, nil, base.TemplateLimit)
	if err != nil {
		return nil, err
	}
	return LintData(ctx, file, filepath.Dir(file), data)
}

// LintData lints the template text data, named file in messages, whose relative paths
// (CodeUri) start at dir.
func LintData(ctx context.Context, file, dir string, data []byte) ([]Problem, error) {
	root, err := samtemplate.LoadYAML(file, data)
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, fmt.Errorf("%s: empty file; want a SAM template", file)
	}
	v, err := samtemplate.TemplateValue(root, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want a SAM template, a mapping with Resources", file)
	}
	if _, ok := doc["Resources"].(map[string]any); !ok {
		return nil, fmt.Errorf("%s: no Resources mapping: not a SAM template", file)
	}
	problems, err := SchemaProblems(doc)
	if err != nil {
		return nil, err
	}
	l := &linter{file: file, dir: dir, doc: doc, ctx: ctx}
	l.resources, _ = doc["Resources"].(map[string]any)
	l.params, _ = doc["Parameters"].(map[string]any)
	if g, ok := doc["Globals"].(map[string]any); ok {
		l.globals, _ = g["Function"].(map[string]any)
	}
	l.filterProblems(data)
	l.checkFunctions()
	l.checkIdempotencyTables()
	return append(problems, l.problems...), nil
}

// linter holds a template being checked and the problems found.
type linter struct {
	ctx       context.Context
	file, dir string
	doc       map[string]any
	resources map[string]any
	params    map[string]any
	globals   map[string]any
	problems  []Problem
	// idemTables are the tables that hold idempotency records: logical ID -> who uses it.
	idemTables map[string]string
}

func (l *linter) add(res, path, problem, fix string) {
	l.problems = append(l.problems, Problem{Resource: res, Path: path, Problem: problem, Fix: fix})
}

// sortedKeys returns the keys of m in order, so that problems come out the same every run.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// resourceType returns the Type of resource name, or "".
func (l *linter) resourceType(name string) string {
	r, _ := l.resources[name].(map[string]any)
	t, _ := r["Type"].(string)
	return t
}

// props returns the Properties of resource name.
func (l *linter) props(name string) map[string]any {
	r, _ := l.resources[name].(map[string]any)
	p, _ := r["Properties"].(map[string]any)
	return p
}

// fnProp returns property key of function fn, or the Globals' when the function has none.
func (l *linter) fnProp(fn, key string) (any, bool) {
	if v, ok := l.props(fn)[key]; ok {
		return v, true
	}
	v, ok := l.globals[key]
	return v, ok
}

// fnEnv returns the environment variables of function fn, the Globals' merged under its own.
func (l *linter) fnEnv(fn string) map[string]any {
	env := map[string]any{}
	for _, src := range []map[string]any{l.globals, l.props(fn)} {
		e, _ := src["Environment"].(map[string]any)
		vars, _ := e["Variables"].(map[string]any)
		for k, v := range vars {
			env[k] = v
		}
	}
	return env
}

// errUnknown says a value is an intrinsic function klt cannot evaluate.
var errUnknown = errors.New("an intrinsic function klt cannot evaluate")

// number returns the integer value of v: a number, a string of one, or a Ref to a parameter
// with a Default. ok is false when v is absent (nil).
func (l *linter) number(v any) (n int64, ok bool, err error) {
	switch x := v.(type) {
	case nil:
		return 0, false, nil
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil {
			return 0, true, fmt.Errorf("%s is not a whole number", x)
		}
		return n, true, nil
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, true, fmt.Errorf("%q is not a whole number", x)
		}
		return n, true, nil
	case map[string]any:
		if p, ok := x["Ref"].(string); ok && len(x) == 1 {
			param, isParam := l.params[p].(map[string]any)
			if !isParam {
				return 0, true, fmt.Errorf("!Ref %s, which is not a parameter of the template", p)
			}
			if d, ok := param["Default"]; ok {
				return l.number(d)
			}
			return 0, true, fmt.Errorf("!Ref %s, a parameter without a Default", p)
		}
	}
	return 0, true, errUnknown
}

// Refs returns the logical names (resources and parameters) that v refers to, through Ref,
// Fn::GetAtt and the ${Name} or ${Name.Attr} variables of Fn::Sub, anywhere inside it.
func Refs(v any) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x["Ref"].(string); ok && len(x) == 1 {
				if !strings.Contains(r, "::") { // not a pseudo parameter (AWS::Region)
					out = append(out, r)
				}
				return
			}
			if ga, ok := x["Fn::GetAtt"]; ok && len(x) == 1 {
				switch g := ga.(type) {
				case []any:
					if len(g) > 0 {
						if s, ok := g[0].(string); ok {
							out = append(out, s)
						}
					}
				case string:
					r, _, _ := strings.Cut(g, ".")
					out = append(out, r)
				}
				return
			}
			if sub, ok := x["Fn::Sub"]; ok && len(x) == 1 {
				var text string
				switch s := sub.(type) {
				case string:
					text = s
				case []any:
					if len(s) > 0 {
						text, _ = s[0].(string)
					}
					if len(s) > 1 {
						walk(s[1])
					}
				}
				out = append(out, subVars(text)...)
				return
			}
			for _, k := range sortedKeys(x) {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// subVars returns the names in the ${Name} and ${Name.Attr} variables of a Fn::Sub string,
// leaving out pseudo parameters (${AWS::Region}) and literals (${!Text}).
func subVars(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return out
		}
		s = s[i+2:]
		j := strings.IndexByte(s, '}')
		if j < 0 {
			return out
		}
		v := s[:j]
		s = s[j+1:]
		if strings.HasPrefix(v, "!") || strings.Contains(v, "::") {
			continue
		}
		name, _, _ := strings.Cut(v, ".")
		out = append(out, strings.TrimSpace(name))
	}
}

// refsOfType returns the resources of type typ (any of them) that v refers to, sorted and
// without repeats.
func (l *linter) refsOfType(v any, typ ...string) []string {
	var out []string
	for _, r := range Refs(v) {
		if slices.Contains(typ, l.resourceType(r)) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// filterProblems checks every FilterCriteria of the template with the filter package, as
// "klt filter lint" does.
func (l *linter) filterProblems(data []byte) {
	t, err := samtemplate.ParseTemplate(l.file, data)
	if err != nil {
		l.add("(template)", "", err.Error(), "")
		return
	}
	refs, hidden := t.CriteriaRefs()
	for _, h := range hidden {
		l.add("(template)", "FilterCriteria", h.Error(), "write the FilterCriteria out")
	}
	for _, ref := range refs {
		s, err := t.Criteria(ref)
		if err != nil {
			l.add(ref, "FilterCriteria", err.Error(), "")
			continue
		}
		res, event, isEvent := strings.Cut(ref, ".")
		path := "Properties.FilterCriteria"
		if isEvent {
			path = "Properties.Events." + event + ".Properties.FilterCriteria"
		}
		_, problems := s.Compile(nil)
		for _, p := range problems {
			at, reason := path, p.Error()
			if fe, ok := errors.AsType[*filter.Error](p); ok {
				reason = criteria.OptionFlags.Replace(fe.Reason)
				if fe.Filter >= 0 {
					at += ".Filters[" + strconv.Itoa(fe.Filter) + "].Pattern"
				}
				if fe.Path != "" && fe.Path != "Pattern" {
					reason = fe.Path + ": " + reason
				}
			}
			l.add(res, at, "invalid FilterCriteria: "+reason,
				`correct the pattern; "klt filter test --criteria `+l.file+"#"+ref+` --event EVENT" shows what it lets through`)
		}
	}
}

// Event types whose batches a function may answer with a partial-batch response.
var pbrEventTypes = map[string]bool{"MSK": true, "SelfManagedKafka": true, "SQS": true, "DynamoDB": true}

// checkFunctions runs the checks of each AWS::Serverless::Function.
func (l *linter) checkFunctions() {
	for _, fn := range sortedKeys(l.resources) {
		if l.resourceType(fn) != samtemplate.SamFunctionType {
			continue
		}
		code, err := l.functionCode(fn)
		if err != nil {
			l.add(fn, "Properties.CodeUri", err.Error(), "point CodeUri at the function's main package, or at a directory whose Makefile has a build-"+fn+" target that builds it")
		}
		timeout := int64(defaultTimeout)
		if v, ok := l.fnProp(fn, "Timeout"); ok {
			n, _, err := l.number(v)
			if err != nil {
				l.add(fn, "Properties.Timeout", "Timeout is "+err.Error()+", so the SQS visibility timeout cannot be checked", "write the timeout out, or give its parameter a Default")
				timeout = -1
			} else {
				timeout = n
			}
		}
		for _, src := range l.eventSources(fn) {
			if pbrEventTypes[src.typ] && code != nil && code.partialBatch != "" && !l.reportsItemFailures(src.props) {
				l.add(src.res, src.path+".FunctionResponseTypes",
					fmt.Sprintf("the code of %s returns partial-batch responses (%s) but its %s event source does not ask for them, so Lambda takes every batch with failed records as a success and the failures are lost", fn, code.partialBatch, src.typ),
					"add FunctionResponseTypes: [ReportBatchItemFailures]")
			}
			switch src.typ {
			case "MSK", "SelfManagedKafka":
				l.checkKafkaEvent(src.res, src.path, src.props)
			case "SQS":
				l.checkSQSEvent(fn, src, timeout)
			}
		}
		for _, t := range l.refsOfType(l.fnEnv(fn)[idempotencyTableEnv], "AWS::DynamoDB::Table", "AWS::Serverless::SimpleTable") {
			l.markIdempotencyTable(t, fn)
		}
		if code != nil {
			l.checkIAM(fn, code)
		}
	}
}

// eventSource is where batches come to a function from: an event of its Events, or an
// AWS::Lambda::EventSourceMapping whose FunctionName refers to it.
type eventSource struct {
	res, path string         // the resource and the path of the properties, for problems
	typ       string         // MSK, SelfManagedKafka, SQS, DynamoDB ... as SAM names them
	props     map[string]any // the properties
	queue     any            // the SQS queue: Queue of an event, EventSourceArn of a mapping
}

// eventSources returns the event sources of function fn, in a stable order.
func (l *linter) eventSources(fn string) []eventSource {
	var out []eventSource
	events, _ := l.props(fn)["Events"].(map[string]any)
	for _, name := range sortedKeys(events) {
		ev, _ := events[name].(map[string]any)
		typ, _ := ev["Type"].(string)
		props, _ := ev["Properties"].(map[string]any)
		out = append(out, eventSource{res: fn, path: "Properties.Events." + name + ".Properties", typ: typ, props: props, queue: props["Queue"]})
	}
	for _, m := range sortedKeys(l.resources) {
		if l.resourceType(m) != samtemplate.EsmType {
			continue
		}
		props := l.props(m)
		if !slices.Contains(Refs(props["FunctionName"]), fn) {
			continue
		}
		src := eventSource{res: m, path: "Properties", props: props, queue: props["EventSourceArn"]}
		switch arn := props["EventSourceArn"]; {
		case props["SelfManagedEventSource"] != nil:
			src.typ = "SelfManagedKafka"
		case props["Topics"] != nil || props["AmazonManagedKafkaEventSourceConfig"] != nil:
			src.typ = "MSK"
		case len(l.refsOfType(arn, "AWS::SQS::Queue")) > 0:
			src.typ = "SQS"
		case len(l.refsOfType(arn, "AWS::DynamoDB::Table")) > 0:
			src.typ = "DynamoDB"
		case len(l.refsOfType(arn, "AWS::Kinesis::Stream")) > 0:
			src.typ = "Kinesis"
		default:
			src.typ = "unknown"
		}
		out = append(out, src)
	}
	return out
}

// reportsItemFailures reports whether event properties ask for partial-batch responses.
func (l *linter) reportsItemFailures(props map[string]any) bool {
	types, _ := props["FunctionResponseTypes"].([]any)
	for _, t := range types {
		if t == reportBatchItemFails {
			return true
		}
	}
	return false
}

// checkKafkaEvent checks BatchSize and MaximumBatchingWindowInSeconds of an MSK or
// SelfManagedKafka event.
func (l *linter) checkKafkaEvent(res, path string, props map[string]any) {
	if n, ok, err := l.number(props["BatchSize"]); err != nil {
		l.add(res, path+".BatchSize", "BatchSize is "+err.Error(), "write a whole number from 1 to 10000")
	} else if ok && (n < 1 || n > kafkaMaxBatchSize) {
		l.add(res, path+".BatchSize", fmt.Sprintf("BatchSize %d is out of range: Kafka event source mappings take 1 to %d", n, kafkaMaxBatchSize),
			fmt.Sprintf("set BatchSize between 1 and %d", kafkaMaxBatchSize))
	}
	if n, ok, err := l.number(props["MaximumBatchingWindowInSeconds"]); err != nil {
		l.add(res, path+".MaximumBatchingWindowInSeconds", "MaximumBatchingWindowInSeconds is "+err.Error(), "write a whole number of seconds from 0 to 300")
	} else if ok && (n < 0 || n > kafkaMaxWindow) {
		l.add(res, path+".MaximumBatchingWindowInSeconds", fmt.Sprintf("MaximumBatchingWindowInSeconds %d is out of range: Kafka event source mappings take 0 to %d seconds", n, kafkaMaxWindow),
			fmt.Sprintf("set MaximumBatchingWindowInSeconds between 0 and %d", kafkaMaxWindow))
	}
}

// checkSQSEvent checks an SQS event against its queue: the FIFO batch size and the
// visibility timeout.
func (l *linter) checkSQSEvent(fn string, src eventSource, timeout int64) {
	res, path, props := src.res, src.path, src.props
	queues := l.refsOfType(src.queue, "AWS::SQS::Queue")
	batch, hasBatch, batchErr := l.number(props["BatchSize"])
	window, _, winErr := l.number(props["MaximumBatchingWindowInSeconds"])
	if winErr != nil {
		l.add(res, path+".MaximumBatchingWindowInSeconds", "MaximumBatchingWindowInSeconds is "+winErr.Error(), "write a whole number of seconds")
	}
	for _, q := range queues {
		qp := l.props(q)
		fifo := false
		if b, ok := qp["FifoQueue"].(bool); ok {
			fifo = b
		} else if s, ok := qp["FifoQueue"].(string); ok {
			fifo = strings.EqualFold(s, "true")
		}
		if fifo {
			switch {
			case batchErr != nil:
				l.add(res, path+".BatchSize", "BatchSize is "+batchErr.Error(), "write a whole number from 1 to 10")
			case hasBatch && batch > fifoMaxBatchSize:
				l.add(res, path+".BatchSize", fmt.Sprintf("BatchSize %d is over %d, the most an event source mapping on a FIFO queue (%s) takes", batch, fifoMaxBatchSize, q),
					fmt.Sprintf("set BatchSize to %d or less", fifoMaxBatchSize))
			}
		}
		if timeout < 0 {
			continue // reported with the Timeout
		}
		vis := int64(defaultVisibility)
		if v, ok := qp["VisibilityTimeout"]; ok {
			n, _, err := l.number(v)
			if err != nil {
				l.add(q, "Properties.VisibilityTimeout", "VisibilityTimeout is "+err.Error()+", so it cannot be checked against "+fn+"'s timeout", "write it out, or give its parameter a Default")
				continue
			}
			vis = n
		}
		if want := visibilityFactor*timeout + window; vis < want {
			l.add(q, "Properties.VisibilityTimeout",
				fmt.Sprintf("VisibilityTimeout %ds is under %d x the %ds Timeout of %s, which it feeds, plus its %ds batching window: a message can come back while a batch is still being processed, and be processed twice", vis, visibilityFactor, timeout, fn, window),
				fmt.Sprintf("set VisibilityTimeout to at least %d", want))
		}
	}
}

// checkIdempotencyTables checks that each table holding idempotency records has TTL on
// "expiration", the attribute the idempotency package writes.
func (l *linter) checkIdempotencyTables() {
	names := make([]string, 0, len(l.idemTables))
	for t := range l.idemTables {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		why := l.idemTables[t]
		switch l.resourceType(t) {
		case "AWS::Serverless::SimpleTable":
			l.add(t, "Type", "an AWS::Serverless::SimpleTable cannot expire items, and "+why+" keeps idempotency records in it, which then pile up for ever",
				"make it an AWS::DynamoDB::Table with TimeToLiveSpecification: {AttributeName: expiration, Enabled: true}")
		case "AWS::DynamoDB::Table":
			ttl, _ := l.props(t)["TimeToLiveSpecification"].(map[string]any)
			attr, _ := ttl["AttributeName"].(string)
			enabled, _ := ttl["Enabled"].(bool)
			if s, ok := ttl["Enabled"].(string); ok {
				enabled = strings.EqualFold(s, "true")
			}
			switch {
			case ttl == nil:
				l.add(t, "Properties.TimeToLiveSpecification", "no TTL, and "+why+" keeps idempotency records in it: they pile up for ever",
					"add TimeToLiveSpecification: {AttributeName: expiration, Enabled: true}")
			case attr != idempotencyTTLAttr || !enabled:
				l.add(t, "Properties.TimeToLiveSpecification", fmt.Sprintf("TTL is on %q (enabled: %v), but the idempotency records of %s expire through %q", attr, enabled, why, idempotencyTTLAttr),
					"set TimeToLiveSpecification to {AttributeName: expiration, Enabled: true}")
			}
		}
	}
}

// markIdempotencyTable records that table holds idempotency records of fn.
func (l *linter) markIdempotencyTable(table, fn string) {
	if l.idemTables == nil {
		l.idemTables = map[string]string{}
	}
	if _, ok := l.idemTables[table]; !ok {
		l.idemTables[table] = fn
	}
}
