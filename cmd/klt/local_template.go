package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kafkalambda/toolkit/filter"
)

// Kinds of event source mapping klt local emulates.
const (
	kafkaMapping = "kafka"
	sqsMapping   = "sqs"
)

// mappingSpec is one event source mapping of the template, evaluated for the local stack:
// an AWS::Lambda::EventSourceMapping resource whose Condition holds, or an event of type SQS,
// MSK or SelfManagedKafka of a SAM function.
type mappingSpec struct {
	id       string // the resource's logical ID, or Function.Event for a SAM event
	function string // logical ID of the function it invokes
	kind     string // kafkaMapping or sqsMapping
	enabled  bool

	// Kafka
	topics           []string
	groupID          string // "" = the mapping's UUID in AWS; locally its id
	startingPosition string // TRIM_HORIZON, LATEST or AT_TIMESTAMP
	msk              bool   // an Amazon MSK source (else self-managed)
	sourceARN        string // the MSK cluster's ARN
	maxRetry         int    // MaximumRetryAttempts, -1 = infinite
	maxRecordAge     time.Duration
	bisect           bool
	onFailure        string // DestinationConfig.OnFailure.Destination: a queue's ARN or kafka://topic

	// SQS
	queue          string // logical ID of the queue
	maxConcurrency int    // ScalingConfig.MaximumConcurrency, 0 = not set

	// Both
	batchSize      int
	window         time.Duration // MaximumBatchingWindowInSeconds; -1 = the source's default
	filter         *filter.Criteria
	reportFailures bool // FunctionResponseTypes has ReportBatchItemFailures
}

// skippedSource is an event source of the template klt local does not emulate (DynamoDB
// streams, Kinesis, ...): it is listed, loudly, never silently left out.
type skippedSource struct{ id, function, typ string }

// localMappings returns the event source mappings of the template that klt local emulates,
// sorted by id, and those it does not.
func localMappings(t *invokeTemplate, r *resolver) ([]*mappingSpec, []skippedSource, error) {
	var out []*mappingSpec
	var skipped []skippedSource
	for i := 0; i+1 < len(t.resources.Content); i += 2 {
		id, res := t.resources.Content[i].Value, resolve(t.resources.Content[i+1])
		switch scalarAt(res, "Type") {
		case "AWS::Lambda::EventSourceMapping":
			if _, c := mapGet(res, "Condition"); c != nil {
				ok, err := r.condition(c.Value, c, id+".Condition", 0)
				if err != nil {
					return nil, nil, err
				}
				if !ok {
					continue
				}
			}
			_, props := mapGet(res, "Properties")
			m, skip, err := mappingFrom(t, r, id, "", props, "")
			if err != nil {
				return nil, nil, err
			}
			if skip != nil {
				skipped = append(skipped, *skip)
				continue
			}
			out = append(out, m)
		case samFunctionKind:
			_, props := mapGet(res, "Properties")
			_, evs := mapGet(props, "Events")
			if evs == nil || evs.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(evs.Content); j += 2 {
				name, ev := evs.Content[j].Value, resolve(evs.Content[j+1])
				typ := scalarAt(ev, "Type")
				_, eprops := mapGet(ev, "Properties")
				m, skip, err := mappingFrom(t, r, id+"."+name, id, eprops, typ)
				if err != nil {
					return nil, nil, err
				}
				if skip != nil {
					skipped = append(skipped, *skip)
					continue
				}
				if m != nil {
					out = append(out, m)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, skipped, nil
}

// mappingFrom reads one mapping: props of an EventSourceMapping resource (samType "") or of a
// SAM function's event of type samType (fn is then the function). A SAM event of a type that is
// not an event source mapping (Api, Schedule...) gives nil, nil, nil.
func mappingFrom(t *invokeTemplate, r *resolver, id, fn string, props *yaml.Node, samType string) (*mappingSpec, *skippedSource, error) {
	where := id
	m := &mappingSpec{id: id, function: fn, enabled: true, window: -1, maxRetry: -1}
	get := func(key string) (any, error) {
		_, v := mapGet(props, key)
		if v == nil {
			return nil, nil
		}
		x, err := r.eval(v, where+"."+key)
		if _, none := x.(noValue); none {
			return nil, err
		}
		return x, err
	}
	str := func(key string) (string, error) {
		v, err := get(key)
		if err != nil || v == nil {
			return "", err
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%s: %s.%s: want a string, got %s", t.file, where, key, describeValue(v))
		}
		return s, nil
	}
	num := func(key string, dst *int, lo, hi int) error {
		s, err := str(key)
		if err != nil || s == "" {
			return err
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%s: %s.%s: %q is not a whole number from %d to %d", t.file, where, key, s, lo, hi)
		}
		*dst = n
		return nil
	}

	var source string // the EventSourceArn, or the SAM event's Queue/Stream
	switch samType {
	case "":
		f, err := str("FunctionName")
		if err != nil {
			return nil, nil, err
		}
		if t.resourceType(f) != samFunctionKind {
			return nil, nil, fmt.Errorf("%s: %s.FunctionName: %q is not a function of the template", t.file, where, f)
		}
		m.function = f
		if source, err = str("EventSourceArn"); err != nil {
			return nil, nil, err
		}
		_, sm := mapGet(props, "SelfManagedEventSource")
		switch {
		case sm != nil:
			m.kind = kafkaMapping
		case strings.HasPrefix(source, "arn:aws:kafka:") || strings.Contains(source, ":kafka:"):
			m.kind, m.msk = kafkaMapping, true
		case strings.Contains(source, ":sqs:"):
			m.kind = sqsMapping
		default:
			return nil, &skippedSource{id, m.function, "event source " + source}, nil
		}
	case "SQS":
		m.kind = sqsMapping
		var err error
		if source, err = str("Queue"); err != nil {
			return nil, nil, err
		}
	case "MSK":
		m.kind, m.msk = kafkaMapping, true
		var err error
		if source, err = str("Stream"); err != nil {
			return nil, nil, err
		}
	case "SelfManagedKafka":
		m.kind = kafkaMapping
	case "DynamoDB", "Kinesis", "MQ", "DocumentDB":
		return nil, &skippedSource{id, fn, samType}, nil
	default:
		return nil, nil, nil
	}
	if m.msk {
		m.sourceARN = source
	}

	if v, err := str("Enabled"); err != nil {
		return nil, nil, err
	} else if v == "false" {
		m.enabled = false
	}
	if err := num("BatchSize", &m.batchSize, 1, 10000); err != nil {
		return nil, nil, err
	}
	secs := -1
	if err := num("MaximumBatchingWindowInSeconds", &secs, 0, 300); err != nil {
		return nil, nil, err
	}
	if secs >= 0 {
		m.window = time.Duration(secs) * time.Second
	}
	types, err := get("FunctionResponseTypes")
	if err != nil {
		return nil, nil, err
	}
	if l, ok := types.([]any); ok {
		for _, x := range l {
			if x == "ReportBatchItemFailures" {
				m.reportFailures = true
			}
		}
	}
	fc, err := get("FilterCriteria")
	if err != nil {
		return nil, nil, err
	}
	if fc != nil {
		data, err := json.Marshal(fc)
		if err != nil {
			return nil, nil, err
		}
		if m.filter, err = filter.ParseCriteria(data); err != nil {
			return nil, nil, fmt.Errorf("%s: %s.FilterCriteria: %w", t.file, where, err)
		}
	}

	switch m.kind {
	case sqsMapping:
		q, ok := queueByARN(r, source)
		if !ok {
			return nil, nil, fmt.Errorf("%s: %s: the queue %q is not a queue of the template", t.file, where, source)
		}
		m.queue = q
		sc, err := get("ScalingConfig")
		if err != nil {
			return nil, nil, err
		}
		if sc, ok := sc.(map[string]any); ok {
			if s, ok := sc["MaximumConcurrency"].(string); ok {
				n, err := strconv.Atoi(s)
				if err != nil || n < 2 || n > 1000 {
					return nil, nil, fmt.Errorf("%s: %s.ScalingConfig.MaximumConcurrency: %q is not a whole number from 2 to 1000", t.file, where, s)
				}
				m.maxConcurrency = n
			}
		}
	case kafkaMapping:
		topics, err := get("Topics")
		if err != nil {
			return nil, nil, err
		}
		l, _ := topics.([]any)
		for _, x := range l {
			if s, ok := x.(string); ok && s != "" {
				m.topics = append(m.topics, s)
			}
		}
		if len(m.topics) != 1 {
			return nil, nil, fmt.Errorf("%s: %s.Topics: want one topic (an event source mapping reads one), got %v", t.file, where, topics)
		}
		if m.startingPosition, err = str("StartingPosition"); err != nil {
			return nil, nil, err
		}
		for _, key := range []string{"AmazonManagedKafkaEventSourceConfig", "SelfManagedKafkaEventSourceConfig"} {
			c, err := get(key)
			if err != nil {
				return nil, nil, err
			}
			if c, ok := c.(map[string]any); ok {
				if g, ok := c["ConsumerGroupId"].(string); ok {
					m.groupID = g
				}
			}
		}
		if samType != "" { // SAM events have ConsumerGroupId at the top level
			if g, err := str("ConsumerGroupId"); err != nil {
				return nil, nil, err
			} else if g != "" {
				m.groupID = g
			}
		}
		if err := num("MaximumRetryAttempts", &m.maxRetry, -1, 10000); err != nil {
			return nil, nil, err
		}
		age := -1
		if err := num("MaximumRecordAgeInSeconds", &age, -1, 604800); err != nil {
			return nil, nil, err
		}
		if age > 0 {
			m.maxRecordAge = time.Duration(age) * time.Second
		}
		if b, err := str("BisectBatchOnFunctionError"); err != nil {
			return nil, nil, err
		} else {
			m.bisect = b == "true"
		}
		dc, err := get("DestinationConfig")
		if err != nil {
			return nil, nil, err
		}
		if dc, ok := dc.(map[string]any); ok {
			if of, ok := dc["OnFailure"].(map[string]any); ok {
				m.onFailure, _ = of["Destination"].(string)
			}
		}
		if m.groupID == "" {
			m.groupID = id
		}
	}
	return m, nil, nil
}

// queueByARN returns the logical ID of the template's queue with this local ARN.
func queueByARN(r *resolver, arn string) (string, bool) {
	for id, q := range r.queues {
		if arn == "arn:aws:sqs:"+localRegion+":"+localAccount+":"+q.name {
			return id, true
		}
	}
	return "", false
}

// newLocalResolver returns a resolver of t's intrinsics for klt local, with params replacing
// the parameters' Defaults. Queue URLs are known once the queues exist (createQueues).
func newLocalResolver(t *invokeTemplate, params map[string]string) (*resolver, error) {
	r := &resolver{t: t, tables: map[string]localTable{}, queues: map[string]localQueue{}, queueURLs: map[string]string{}, params: params}
	tables, err := t.tables()
	if err != nil {
		return nil, err
	}
	for _, tb := range tables {
		r.tables[tb.logicalID] = tb
	}
	for _, q := range t.queues() {
		r.queues[q.logicalID] = q
	}
	return r, nil
}
