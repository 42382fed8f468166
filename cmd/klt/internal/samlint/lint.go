package samlint

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/criteria"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/samtemplate"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/internal/template"
)

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
	data, err := input.ReadFileOrStdin(file, nil, input.TemplateLimit)
	if err != nil {
		return nil, err
	}
	return LintData(ctx, file, filepath.Dir(file), data)
}

// LintData lints the template text data, named file in messages, whose relative paths
// (CodeUri) start at dir.
func LintData(ctx context.Context, file, dir string, data []byte) ([]Problem, error) {
	t, err := template.Read(file, data)
	if err != nil {
		return nil, err
	}
	doc, err := t.Root.Plain()
	if err != nil {
		return nil, err
	}
	problems, err := SchemaProblems(doc)
	if err != nil {
		return nil, err
	}
	events, err := loadSAMEvents()
	if err != nil {
		return nil, err
	}
	l := &linter{file: file, dir: dir, t: t, ev: &template.Evaluator{Template: t}, ctx: ctx, samEvents: events}
	l.filterProblems()
	l.checkSAMEvents()
	l.checkTransformedARNs()
	l.checkFunctions()
	l.checkIdempotencyTables()
	l.checkPitfalls()
	l.checkEnvironment()
	l.checkResourceSchemas()
	l.checkGeneratedFunctions()
	l.checkGeneratedMappings()
	l.checkCycles()
	l.checkPrimaryIdentifiers()
	problems = append(dropShadowed(problems, l.problems), l.problems...)
	l.locate(problems)
	return problems, nil
}

// linter holds a template being checked and the problems found.
type linter struct {
	ctx       context.Context
	file, dir string
	t         *template.Template
	// ev evaluates values with the parameters' Defaults, and nothing known of resources or
	// pseudo parameters: what depends on them cannot be checked.
	ev       *template.Evaluator
	problems []Problem
	// samEvents are the properties the SAM transform accepts per event type, and their kinds.
	samEvents map[string]map[string]samPropKind
	// idemTables are the tables that hold idempotency records: logical ID -> who uses it.
	idemTables map[string]string
}

func (l *linter) add(res, path, problem, fix string) {
	l.problems = append(l.problems, Problem{Resource: res, Path: path, Problem: problem, Fix: fix})
}

// sortedIDs returns the logical IDs of the resources of type typ, in order, so that problems
// come out the same every run.
func (l *linter) sortedIDs(typ string) []string {
	var ids []string
	for _, r := range l.t.OfType(typ) {
		ids = append(ids, r.LogicalID)
	}
	sort.Strings(ids)
	return ids
}

// resourceType returns the Type of resource name, or "".
func (l *linter) resourceType(name string) string {
	if r := l.t.Resource(name); r != nil {
		return r.Type
	}
	return ""
}

// props returns the Properties of resource name.
func (l *linter) props(name string) *template.Node {
	if r := l.t.Resource(name); r != nil {
		return r.Properties
	}
	return nil
}

// fnProp returns property key of function fn, or the Globals' when the function has none.
func (l *linter) fnProp(fn, key string) *template.Node {
	return l.t.Property(l.t.Resource(fn), key)
}

// fnEnv returns the environment variables of function fn, the Globals' merged under its own.
func (l *linter) fnEnv(fn string) map[string]*template.Node {
	env := map[string]*template.Node{}
	vars, _ := l.t.Environment(l.t.Resource(fn)) // not a mapping: the schema says so
	for _, p := range vars {
		env[p.Key] = p.Value
	}
	return env
}

// number returns the integer value of v: a number, a string of one, or what an intrinsic
// function gives with the parameters' Defaults. ok is false when v is absent (nil). The
// error says why the value is not a whole number, or cannot be known here.
func (l *linter) number(v *template.Node) (n int64, ok bool, err error) {
	if v == nil {
		return 0, false, nil
	}
	if v.Tag == template.TagInt || v.Tag == template.TagFloat {
		f, err := v.Float()
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, true, fmt.Errorf("%s is not a whole number", v.Text)
		}
		return int64(f), true, nil
	}
	s, err := l.ev.String(v)
	if te, isTE := errors.AsType[*template.Error](err); isTE {
		if errors.Is(err, template.ErrUnknown) {
			return 0, true, fmt.Errorf("not known before deployment (%s)", te.Msg)
		}
		return 0, true, errors.New(te.Msg)
	}
	if err != nil {
		return 0, true, err
	}
	n, err = strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("%q is not a whole number", s)
	}
	return n, true, nil
}

// isTrue reports whether v is true, as a YAML bool or the string "true".
func isTrue(v *template.Node) bool {
	if v == nil || v.Kind != template.Scalar {
		return false
	}
	x, _ := v.Plain()
	b, _ := x.(bool)
	return b || strings.EqualFold(v.Text, "true")
}

// refsOfType returns the resources of type typ (any of them) that v refers to, sorted and
// without repeats.
func (l *linter) refsOfType(v *template.Node, typ ...string) []string {
	var out []string
	for _, r := range template.Refs(v) {
		if slices.Contains(typ, l.resourceType(r)) {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// filterProblems checks every FilterCriteria of the template with the filter package, as
// "klt filter lint" does.
func (l *linter) filterProblems() {
	t := samtemplate.NewSamTemplate(l.t)
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
	for _, fn := range l.sortedIDs(template.TypeFunction) {
		code, err := l.functionCode(fn)
		if err != nil {
			l.add(fn, "Properties.CodeUri", err.Error(), "point CodeUri at the function's main package, or at a directory whose Makefile has a build-"+fn+" target that builds it")
		}
		timeout := int64(defaultTimeout)
		if v := l.fnProp(fn, "Timeout"); v != nil {
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
		for _, t := range l.refsOfType(l.fnEnv(fn)[idempotencyTableEnv], template.TypeTable, template.TypeSimpleTable) {
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
	props     *template.Node // the properties
	queue     *template.Node // the SQS queue: Queue of an event, EventSourceArn of a mapping
}

// eventSources returns the event sources of function fn, in a stable order.
func (l *linter) eventSources(fn string) []eventSource {
	var out []eventSource
	events := slices.Clone(l.t.Resource(fn).Events)
	slices.SortFunc(events, func(a, b *template.Event) int { return strings.Compare(a.Name, b.Name) })
	for _, ev := range events {
		out = append(out, eventSource{res: fn, path: "Properties.Events." + ev.Name + ".Properties", typ: ev.Type, props: ev.Properties, queue: ev.Properties.Get("Queue")})
	}
	for _, m := range l.sortedIDs(template.TypeEventSourceMapping) {
		props := l.props(m)
		if !slices.Contains(template.Refs(props.Get("FunctionName")), fn) {
			continue
		}
		arn := props.Get("EventSourceArn")
		src := eventSource{res: m, path: "Properties", props: props, queue: arn}
		switch {
		case props.Get("SelfManagedEventSource") != nil:
			src.typ = "SelfManagedKafka"
		case props.Get("Topics") != nil || props.Get("AmazonManagedKafkaEventSourceConfig") != nil:
			src.typ = "MSK"
		case len(l.refsOfType(arn, template.TypeQueue)) > 0:
			src.typ = "SQS"
		case len(l.refsOfType(arn, template.TypeTable)) > 0:
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
func (l *linter) reportsItemFailures(props *template.Node) bool {
	for _, t := range props.Get("FunctionResponseTypes").List() {
		if t.String() == reportBatchItemFails {
			return true
		}
	}
	return false
}

// checkKafkaEvent checks BatchSize and MaximumBatchingWindowInSeconds of an MSK or
// SelfManagedKafka event.
func (l *linter) checkKafkaEvent(res, path string, props *template.Node) {
	if n, ok, err := l.number(props.Get("BatchSize")); err != nil {
		l.add(res, path+".BatchSize", "BatchSize is "+err.Error(), "write a whole number from 1 to 10000")
	} else if ok && (n < 1 || n > kafkaMaxBatchSize) {
		l.add(res, path+".BatchSize", fmt.Sprintf("BatchSize %d is out of range: Kafka event source mappings take 1 to %d", n, kafkaMaxBatchSize),
			fmt.Sprintf("set BatchSize between 1 and %d", kafkaMaxBatchSize))
	}
	if n, ok, err := l.number(props.Get("MaximumBatchingWindowInSeconds")); err != nil {
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
	queues := l.refsOfType(src.queue, template.TypeQueue)
	batch, hasBatch, batchErr := l.number(props.Get("BatchSize"))
	window, _, winErr := l.number(props.Get("MaximumBatchingWindowInSeconds"))
	if winErr != nil {
		l.add(res, path+".MaximumBatchingWindowInSeconds", "MaximumBatchingWindowInSeconds is "+winErr.Error(), "write a whole number of seconds")
	}
	for _, q := range queues {
		qp := l.props(q)
		if isTrue(qp.Get("FifoQueue")) {
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
		if v := qp.Get("VisibilityTimeout"); v != nil {
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
		case template.TypeSimpleTable:
			l.add(t, "Type", "an AWS::Serverless::SimpleTable cannot expire items, and "+why+" keeps idempotency records in it, which then pile up for ever",
				"make it an AWS::DynamoDB::Table with TimeToLiveSpecification: {AttributeName: expiration, Enabled: true}")
		case template.TypeTable:
			ttl := l.props(t).Get("TimeToLiveSpecification")
			attr, enabled := "", isTrue(ttl.Get("Enabled"))
			if a := ttl.Get("AttributeName"); a.IsString() {
				attr = a.Text
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
