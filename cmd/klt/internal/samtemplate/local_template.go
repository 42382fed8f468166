package samtemplate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kafkalambda/toolkit/filter"
	"go.yaml.in/yaml/v3"
)

// Kinds of event source mapping klt local emulates.
const (
	KafkaMapping = "kafka"
	SqsMapping   = "sqs"
)

// MappingSpec is one event source mapping of the template, evaluated for the local stack:
// an AWS::Lambda::EventSourceMapping resource whose Condition holds, or an event of type SQS,
// MSK or SelfManagedKafka of a SAM function.
type MappingSpec struct {
	Id       string // the resource's logical ID, or Function.Event for a SAM event
	Function string // logical ID of the function it invokes
	Kind     string // kafkaMapping or sqsMapping
	Enabled  bool

	// Kafka
	Topics           []string
	GroupID          string // "" = the mapping's UUID in AWS; locally its id
	StartingPosition string // TRIM_HORIZON, LATEST or AT_TIMESTAMP
	Msk              bool   // an Amazon MSK source (else self-managed)
	SourceARN        string // the MSK cluster's ARN
	MaxRetry         int    // MaximumRetryAttempts, -1 = infinite
	MaxRecordAge     time.Duration
	Bisect           bool
	OnFailure        string // DestinationConfig.OnFailure.Destination: a queue's ARN or kafka://topic

	// SQS
	Queue          string // logical ID of the queue
	MaxConcurrency int    // ScalingConfig.MaximumConcurrency, 0 = not set

	// Both
	BatchSize      int
	Window         time.Duration // MaximumBatchingWindowInSeconds; -1 = the source's default
	Filter         *filter.Criteria
	ReportFailures bool // FunctionResponseTypes has ReportBatchItemFailures
}

// skippedSource is an event source of the template klt local does not emulate (DynamoDB
// streams, Kinesis, ...): it is listed, loudly, never silently left out.
type skippedSource struct{ Id, Function, Typ string }

// LocalMappings returns the event source mappings of the template that klt local emulates,
// sorted by id, and those it does not.
func LocalMappings(t *InvokeTemplate, r *Resolver) ([]*MappingSpec, []skippedSource, error) {
	var out []*MappingSpec
	var skipped []skippedSource
	for i := 0; i+1 < len(t.Resources.Content); i += 2 {
		id, res := t.Resources.Content[i].Value, Resolve(t.Resources.Content[i+1])
		switch scalarAt(res, "Type") {
		case "AWS::Lambda::EventSourceMapping":
			if _, c := MapGet(res, "Condition"); c != nil {
				ok, err := r.condition(c.Value, c, id+".Condition", 0)
				if err != nil {
					return nil, nil, err
				}
				if !ok {
					continue
				}
			}
			_, props := MapGet(res, "Properties")
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
			_, props := MapGet(res, "Properties")
			_, evs := MapGet(props, "Events")
			if evs == nil || evs.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(evs.Content); j += 2 {
				name, ev := evs.Content[j].Value, Resolve(evs.Content[j+1])
				typ := scalarAt(ev, "Type")
				_, eprops := MapGet(ev, "Properties")
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
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out, skipped, nil
}

// mappingFrom reads one mapping: props of an EventSourceMapping resource (samType "") or of a
// SAM function's event of type samType (fn is then the function). A SAM event of a type that is
// not an event source mapping (Api, Schedule...) gives nil, nil, nil.
func mappingFrom(t *InvokeTemplate, r *Resolver, id, fn string, props *yaml.Node, samType string) (*MappingSpec, *skippedSource, error) {
	where := id
	m := &MappingSpec{Id: id, Function: fn, Enabled: true, Window: -1, MaxRetry: -1}
	get := func(key string) (any, error) {
		_, v := MapGet(props, key)
		if v == nil {
			return nil, nil
		}
		x, err := r.Eval(v, where+"."+key)
		if _, none := x.(NoValue); none {
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
			return "", fmt.Errorf("%s: %s.%s: want a string, got %s", t.File, where, key, DescribeValue(v))
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
			return fmt.Errorf("%s: %s.%s: %q is not a whole number from %d to %d", t.File, where, key, s, lo, hi)
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
		if t.ResourceType(f) != samFunctionKind {
			return nil, nil, fmt.Errorf("%s: %s.FunctionName: %q is not a function of the template", t.File, where, f)
		}
		m.Function = f
		if source, err = str("EventSourceArn"); err != nil {
			return nil, nil, err
		}
		_, sm := MapGet(props, "SelfManagedEventSource")
		switch {
		case sm != nil:
			m.Kind = KafkaMapping
		case strings.HasPrefix(source, "arn:aws:kafka:") || strings.Contains(source, ":kafka:"):
			m.Kind, m.Msk = KafkaMapping, true
		case strings.Contains(source, ":sqs:"):
			m.Kind = SqsMapping
		default:
			return nil, &skippedSource{id, m.Function, "event source " + source}, nil
		}
	case "SQS":
		m.Kind = SqsMapping
		var err error
		if source, err = str("Queue"); err != nil {
			return nil, nil, err
		}
	case "MSK":
		m.Kind, m.Msk = KafkaMapping, true
		var err error
		if source, err = str("Stream"); err != nil {
			return nil, nil, err
		}
	case "SelfManagedKafka":
		m.Kind = KafkaMapping
	case "DynamoDB", "Kinesis", "MQ", "DocumentDB":
		return nil, &skippedSource{id, fn, samType}, nil
	default:
		return nil, nil, nil
	}
	if m.Msk {
		m.SourceARN = source
	}

	if v, err := str("Enabled"); err != nil {
		return nil, nil, err
	} else if v == "false" {
		m.Enabled = false
	}
	if err := num("BatchSize", &m.BatchSize, 1, 10000); err != nil {
		return nil, nil, err
	}
	secs := -1
	if err := num("MaximumBatchingWindowInSeconds", &secs, 0, 300); err != nil {
		return nil, nil, err
	}
	if secs >= 0 {
		m.Window = time.Duration(secs) * time.Second
	}
	types, err := get("FunctionResponseTypes")
	if err != nil {
		return nil, nil, err
	}
	if l, ok := types.([]any); ok {
		for _, x := range l {
			if x == "ReportBatchItemFailures" {
				m.ReportFailures = true
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
		if m.Filter, err = filter.ParseCriteria(data); err != nil {
			return nil, nil, fmt.Errorf("%s: %s.FilterCriteria: %w", t.File, where, err)
		}
	}

	switch m.Kind {
	case SqsMapping:
		q, ok := QueueByARN(r, source)
		if !ok {
			return nil, nil, fmt.Errorf("%s: %s: the queue %q is not a queue of the template", t.File, where, source)
		}
		m.Queue = q
		sc, err := get("ScalingConfig")
		if err != nil {
			return nil, nil, err
		}
		if sc, ok := sc.(map[string]any); ok {
			if s, ok := sc["MaximumConcurrency"].(string); ok {
				n, err := strconv.Atoi(s)
				if err != nil || n < 2 || n > 1000 {
					return nil, nil, fmt.Errorf("%s: %s.ScalingConfig.MaximumConcurrency: %q is not a whole number from 2 to 1000", t.File, where, s)
				}
				m.MaxConcurrency = n
			}
		}
	case KafkaMapping:
		topics, err := get("Topics")
		if err != nil {
			return nil, nil, err
		}
		l, _ := topics.([]any)
		for _, x := range l {
			if s, ok := x.(string); ok && s != "" {
				m.Topics = append(m.Topics, s)
			}
		}
		if len(m.Topics) != 1 {
			return nil, nil, fmt.Errorf("%s: %s.Topics: want one topic (an event source mapping reads one), got %v", t.File, where, topics)
		}
		if m.StartingPosition, err = str("StartingPosition"); err != nil {
			return nil, nil, err
		}
		for _, key := range []string{"AmazonManagedKafkaEventSourceConfig", "SelfManagedKafkaEventSourceConfig"} {
			c, err := get(key)
			if err != nil {
				return nil, nil, err
			}
			if c, ok := c.(map[string]any); ok {
				if g, ok := c["ConsumerGroupId"].(string); ok {
					m.GroupID = g
				}
			}
		}
		if samType != "" { // SAM events have ConsumerGroupId at the top level
			if g, err := str("ConsumerGroupId"); err != nil {
				return nil, nil, err
			} else if g != "" {
				m.GroupID = g
			}
		}
		if err := num("MaximumRetryAttempts", &m.MaxRetry, -1, 10000); err != nil {
			return nil, nil, err
		}
		age := -1
		if err := num("MaximumRecordAgeInSeconds", &age, -1, 604800); err != nil {
			return nil, nil, err
		}
		if age > 0 {
			m.MaxRecordAge = time.Duration(age) * time.Second
		}
		if b, err := str("BisectBatchOnFunctionError"); err != nil {
			return nil, nil, err
		} else {
			m.Bisect = b == "true"
		}
		dc, err := get("DestinationConfig")
		if err != nil {
			return nil, nil, err
		}
		if dc, ok := dc.(map[string]any); ok {
			if of, ok := dc["OnFailure"].(map[string]any); ok {
				m.OnFailure, _ = of["Destination"].(string)
			}
		}
		if m.GroupID == "" {
			m.GroupID = id
		}
	}
	return m, nil, nil
}

// QueueByARN returns the logical ID of the template's queue with this local ARN.
func QueueByARN(r *Resolver, arn string) (string, bool) {
	for id, q := range r.Queues {
		if arn == "arn:aws:sqs:"+LocalRegion+":"+LocalAccount+":"+q.Name {
			return id, true
		}
	}
	return "", false
}

// NewLocalResolver returns a resolver of t's intrinsics for klt local, with params replacing
// the parameters' Defaults. Queue URLs are known once the queues exist (createQueues).
func NewLocalResolver(t *InvokeTemplate, params map[string]string) (*Resolver, error) {
	r := &Resolver{T: t, Tables: map[string]LocalTable{}, Queues: map[string]LocalQueue{}, QueueURLs: map[string]string{}, Params: params}
	tables, err := t.Tables()
	if err != nil {
		return nil, err
	}
	for _, tb := range tables {
		r.Tables[tb.LogicalID] = tb
	}
	for _, q := range t.Queues() {
		r.Queues[q.LogicalID] = q
	}
	return r, nil
}
