package samlint

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/internal/template"
)

// The pitfall checks: settings that deploy and then behave otherwise than their writer meant.
// Each cites the sentence of AWS's documentation it follows (the copies and links are in
// /work/shared/reference/esm-contract.md).

// Rule IDs of the pitfall checks, as "klt lint --format json" gives them.
const (
	RuleFilterTwice      = "filter-twice"
	RuleOnDemandFeature  = "kafka-on-demand-feature"
	RuleInfiniteRetries  = "infinite-retries-with-destination"
	RuleFIFOWindow       = "fifo-batching-window"
	RuleIdempotencyTable = "idempotency-table-key"
)

const (
	filterCriteriaEnv = "FILTER_CRITERIA" // the consumer's in-code guard (samples/consumer)
	idempotencyKey    = "id"              // the partition key of idempotency/dynamodb's table
)

// checkPitfalls runs the pitfall checks. It runs after checkFunctions, which found the
// functions' code and the idempotency tables.
func (l *linter) checkPitfalls() {
	for _, fn := range l.sortedIDs(template.TypeFunction) {
		for _, src := range l.eventSources(fn) {
			l.checkFilterTwice(fn, src)
			switch src.typ {
			case "MSK", "SelfManagedKafka":
				l.checkOnDemandFeatures(src)
				l.checkInfiniteRetries(src)
			case "SQS":
				l.checkFIFOWindow(src)
			}
			l.checkKafkaOnly(src)
		}
	}
	l.checkIdempotencyKeys()
	l.checkAlarms()
	l.checkLMI()
}

// addRule adds a problem of a pitfall rule, at node n when it is known.
func (l *linter) addRule(rule string, n *template.Node, res, path, problem, fix string) {
	p := Problem{Resource: res, Path: path, Problem: problem, Fix: fix, Rule: rule}
	if n != nil {
		p.Pos = n.Pos
	}
	l.problems = append(l.problems, p)
}

// checkFilterTwice compares the FilterCriteria of an event source with the function's
// FILTER_CRITERIA guard, as filter patterns. Lambda drops what its criteria do not match
// and "Lambda commits offsets for matched and unmatched messages after successfully invoking
// the function" (https://docs.aws.amazon.com/lambda/latest/dg/with-kafka-filtering.html);
// batch.WithFilter then drops what the guard does not match. Two different sets of patterns
// mean the stricter one silently wins, and a record meant for the function is never seen.
func (l *linter) checkFilterTwice(fn string, src eventSource) {
	envNode := l.fnEnv(fn)[filterCriteriaEnv]
	fcNode := src.props.Get("FilterCriteria")
	if envNode == nil || fcNode == nil {
		return
	}
	guard, ok := l.knownString(envNode)
	if !ok {
		return // not known here: nothing to compare
	}
	envSet, err := patternSet([]byte(guard))
	if err != nil {
		return // the function itself refuses it at start (filter.ParseCriteria)
	}
	v, err := l.ev.Eval(fcNode)
	if err != nil {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	mapSet, err := patternSet(data)
	if err != nil {
		return // reported by filterProblems
	}
	if slices.Equal(envSet, mapSet) {
		return
	}
	l.addRule(RuleFilterTwice, fcNode, src.res, src.path+".FilterCriteria",
		fmt.Sprintf("these FilterCriteria and the %s guard of %s are different filters, so Lambda drops what the criteria do not match and the function drops what its guard does not: a record either one drops is lost, as Lambda commits the offsets of unmatched records too", filterCriteriaEnv, fn),
		"give both the same patterns (copy the FilterCriteria's JSON into "+filterCriteriaEnv+"), or drop the guard")
}

// patternSet parses FilterCriteria JSON and returns its patterns in a canonical form, sorted:
// keys in order, the values of a list in order (a list is an OR), no repeats.
func patternSet(data []byte) ([]string, error) {
	c, err := filter.ParseCriteria(data)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range c.Filters() {
		var v any
		if err := json.Unmarshal([]byte(p.String()), &v); err != nil {
			return nil, err
		}
		b, err := json.Marshal(canonical(v))
		if err != nil {
			return nil, err
		}
		out = append(out, string(b))
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

// canonical sorts the lists of v, deep, by their JSON: in a filter pattern a list's elements
// are alternatives, so their order does not matter.
func canonical(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = canonical(e)
		}
		return x
	case []any:
		keys := make([]string, len(x))
		for i, e := range x {
			x[i] = canonical(e)
			b, _ := json.Marshal(x[i])
			keys[i] = string(b)
		}
		idx := make([]int, len(x))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
		out := make([]any, 0, len(x))
		for i, j := range idx {
			if i > 0 && keys[j] == keys[idx[i-1]] {
				continue
			}
			out = append(out, x[j])
		}
		return out
	}
	return v
}

// present reports whether property n is given: not absent, and not an Fn::If that gives
// AWS::NoValue with the parameters' Defaults. known is false when that cannot be told.
func (l *linter) present(n *template.Node) (present, known bool) {
	if n == nil {
		return false, true
	}
	v, err := l.ev.Eval(n)
	if err != nil {
		return true, false
	}
	return v != template.NoValue && v != nil, true
}

// knownString returns the string value of n, and whether it is given and known here.
func (l *linter) knownString(n *template.Node) (string, bool) {
	if n == nil {
		return "", false
	}
	s, err := l.ev.String(n)
	return s, err == nil
}

// schemaRegistry returns the SchemaRegistryConfig of Kafka event properties: the SAM event's
// own, or the one inside the mapping's (Amazon|Self)ManagedKafkaEventSourceConfig.
func schemaRegistry(props *template.Node) (*template.Node, string) {
	if n := props.Get("SchemaRegistryConfig"); n != nil {
		return n, "SchemaRegistryConfig"
	}
	for _, k := range []string{"AmazonManagedKafkaEventSourceConfig", "SelfManagedKafkaEventSourceConfig"} {
		if n := props.Get(k).Get("SchemaRegistryConfig"); n != nil {
			return n, k + ".SchemaRegistryConfig"
		}
	}
	return nil, ""
}

// checkOnDemandFeatures reports a Kafka-topic on-failure destination, a schema registry or a
// LoggingConfig (checkLoggingOnDemand) on a Kafka event source without ProvisionedPollerConfig. The Kafka topic destination's page
// says "Provisioned mode required"
// (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html), and the
// schema registry integration works in provisioned mode only (esm-contract.md 1.4, from
// https://docs.aws.amazon.com/lambda/latest/dg/services-consume-kafka-events.html): the
// mapping fails at deploy time.
func (l *linter) checkOnDemandFeatures(src eventSource) {
	if on, known := l.present(src.props.Get("ProvisionedPollerConfig")); on || !known {
		return
	}
	dest := src.props.Get("DestinationConfig").Get("OnFailure").Get("Destination")
	if s, ok := l.knownString(dest); ok && strings.HasPrefix(s, "kafka://") {
		l.addRule(RuleOnDemandFeature, dest, src.res, src.path+".DestinationConfig.OnFailure.Destination",
			fmt.Sprintf("a Kafka topic on-failure destination (%s) needs provisioned mode, and this %s event source has no ProvisionedPollerConfig: Lambda refuses the mapping", s, src.typ),
			"add ProvisionedPollerConfig: {MinimumPollers: 1, MaximumPollers: N}, or send failures to an SQS queue, SNS topic or S3 bucket")
	}
	l.checkLoggingOnDemand(src)
	if reg, at := schemaRegistry(src.props); reg != nil {
		if on, _ := l.present(reg); on {
			l.addRule(RuleOnDemandFeature, reg, src.res, src.path+"."+at,
				fmt.Sprintf("a schema registry needs provisioned mode, and this %s event source has no ProvisionedPollerConfig: Lambda refuses the mapping", src.typ),
				"add ProvisionedPollerConfig: {MinimumPollers: 1, MaximumPollers: N}, or decode the schema in the function")
		}
	}
}

// checkInfiniteRetries reports MaximumRetryAttempts: -1 (infinite) beside an on-failure
// destination on a Kafka event source: "When you configure both infinite retries and an
// on-failure destination, Lambda automatically applies a maximum of 10 retry attempts"
// (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html). The writer
// asked for never giving up and gets ten retries and then the destination. Only a -1 written
// out is reported: the default is -1 too, but leaving it out is no claim of infinity.
func (l *linter) checkInfiniteRetries(src eventSource) {
	dest := src.props.Get("DestinationConfig").Get("OnFailure").Get("Destination")
	if on, _ := l.present(dest); !on {
		return
	}
	retries := src.props.Get("MaximumRetryAttempts")
	if on, known := l.present(retries); !on || !known {
		return
	}
	n, _, err := l.number(retries)
	if err != nil || n != -1 {
		return
	}
	l.addRule(RuleInfiniteRetries, retries, src.res, src.path+".MaximumRetryAttempts",
		"MaximumRetryAttempts -1 asks for retrying a failed batch for ever, but with an on-failure destination Lambda caps the retries at 10 and then sends the batch to the destination (\"When you configure both infinite retries and an on-failure destination, Lambda automatically applies a maximum of 10 retry attempts\")",
		"set MaximumRetryAttempts to the number of retries you mean (0 to 10,000), or remove the DestinationConfig to retry for ever")
}

// checkFIFOWindow reports a batching window on an SQS event of a FIFO queue. Lambda's FIFO
// event source mappings take no batching window: "Batching window is not supported for FIFO
// queues" (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html): the
// mapping is refused, and a window would anyway hold a
// message group's next messages back by that long, on top of the Timeout that the queue's
// VisibilityTimeout (6 x Timeout + window, checked by checkSQSEvent) is sized for.
func (l *linter) checkFIFOWindow(src eventSource) {
	w := src.props.Get("MaximumBatchingWindowInSeconds")
	n, ok, err := l.number(w)
	if !ok || err != nil || n <= 0 {
		return
	}
	for _, q := range l.refsOfType(src.queue, template.TypeQueue) {
		if !isTrue(l.props(q).Get("FifoQueue")) {
			continue
		}
		l.addRule(RuleFIFOWindow, w, src.res, src.path+".MaximumBatchingWindowInSeconds",
			fmt.Sprintf("MaximumBatchingWindowInSeconds %d on the FIFO queue %s: Lambda refuses the mapping (\"Batching window is not supported for FIFO queues\")", n, q),
			"remove MaximumBatchingWindowInSeconds, and keep VisibilityTimeout at least 6 x the function's Timeout")
	}
}

// checkIdempotencyKeys checks that each AWS::DynamoDB::Table holding idempotency records has
// the key idempotency/dynamodb writes (idempotency/dynamodb/store.go: Key "id"): a partition
// key "id" of type S, and no sort key. With another key every PutItem fails: DynamoDB's PutItem
// reference says "When you add an item, the primary key attributes are the only required
// attributes" (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html),
// and a write without them fails, so each record fails and is retried, never processed. The
// TTL is checked by checkIdempotencyTables.
func (l *linter) checkIdempotencyKeys() {
	names := make([]string, 0, len(l.idemTables))
	for t := range l.idemTables {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		if l.resourceType(t) != template.TypeTable {
			continue // a SimpleTable is reported by checkIdempotencyTables
		}
		props := l.props(t)
		ks := props.Get("KeySchema")
		if ks == nil || ks.Kind != template.Sequence || ks.FindIntrinsic() != nil {
			continue // the CloudFormation schema reports a missing or odd KeySchema
		}
		hash, rangeKey := "", ""
		for _, k := range ks.Items {
			switch k.Get("KeyType").String() {
			case "HASH":
				hash = k.Get("AttributeName").String()
			case "RANGE":
				rangeKey = k.Get("AttributeName").String()
			}
		}
		typ := ""
		for _, d := range props.Get("AttributeDefinitions").List() {
			if d.Get("AttributeName").String() == idempotencyKey {
				typ = d.Get("AttributeType").String()
			}
		}
		if hash == idempotencyKey && rangeKey == "" && typ == "S" {
			continue
		}
		why := fmt.Sprintf("the partition key is %q", hash)
		switch {
		case hash == idempotencyKey && rangeKey != "":
			why = fmt.Sprintf("the table has a sort key %q", rangeKey)
		case hash == idempotencyKey:
			why = fmt.Sprintf("%q is of type %q, not S", idempotencyKey, typ)
		}
		l.addRule(RuleIdempotencyTable, ks, t, "Properties.KeySchema",
			fmt.Sprintf("%s keeps idempotency records here, which idempotency/dynamodb writes under a partition key %q (a string) alone, but %s: every write fails with a ValidationException, so every record fails and is retried", l.idemTables[t], idempotencyKey, why),
			`use KeySchema: [{AttributeName: id, KeyType: HASH}] with AttributeDefinitions: [{AttributeName: id, AttributeType: S}]`)
	}
}

// idempotencyUse says how the code keeps idempotency records, for problems.
func (c *codeInfo) idempotencyUse() string {
	if c.withIdem {
		return "calls batch.WithIdempotency"
	}
	return "imports " + pkgIdemDynamoDB
}
