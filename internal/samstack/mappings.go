package samstack

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/internal/template"
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

// LocalMappings returns the event source mappings of the template that klt local emulates,
// sorted by id, and those it does not.
func LocalMappings(t *InvokeTemplate, r *Resolver) ([]*MappingSpec, []skippedSource, error) {
	var out []*MappingSpec
	var skipped []skippedSource
	add := func(m *MappingSpec, skip *skippedSource) {
		switch {
		case skip != nil:
			skipped = append(skipped, *skip)
		case m != nil:
			out = append(out, m)
		}
	}
	for _, res := range t.T.Resources {
		id := res.LogicalID
		switch res.Type {
		case template.TypeEventSourceMapping:
			if res.Condition != "" {
				ok, err := r.condition(res.Condition, res.Node.KeyPos("Condition"), id+".Condition")
				if err != nil {
					return nil, nil, err
				}
				if !ok {
					continue
				}
			}
			m, skip, err := mappingFrom(t, r, id, "", res.Properties, "")
			if err != nil {
				return nil, nil, err
			}
			add(m, skip)
		case template.TypeFunction:
			for _, ev := range res.Events {
				m, skip, err := mappingFrom(t, r, id+"."+ev.Name, id, ev.Properties, ev.Type)
				if err != nil {
					return nil, nil, err
				}
				add(m, skip)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out, skipped, nil
}

// mappingProps reads the evaluated properties of one event source mapping.
type mappingProps struct {
	r     *Resolver
	where string // the mapping's id, for messages
	props *template.Node
}

// get evaluates property key: nil when it is absent or AWS::NoValue.
func (p *mappingProps) get(key string) (any, error) {
	v := p.props.Get(key)
	if v == nil {
		return nil, nil
	}
	x, err := p.r.Eval(v, p.where+"."+key)
	if x == template.NoValue {
		return nil, err
	}
	return x, err
}

// str evaluates property key to a string; "" when it is absent.
func (p *mappingProps) str(key string) (string, error) {
	v, err := p.get(key)
	if err != nil || v == nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: %s.%s: want a string, got %s", p.props.Get(key).Pos, p.where, key, template.Describe(v))
	}
	return s, nil
}

// num evaluates property key to a whole number from lo to hi, into dst; absent, dst is kept.
func (p *mappingProps) num(key string, dst *int, lo, hi int) error {
	s, err := p.str(key)
	if err != nil || s == "" {
		return err
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("%s: %s.%s: %q is not a whole number from %d to %d", p.props.Get(key).Pos, p.where, key, s, lo, hi)
	}
	*dst = n
	return nil
}

// mappingFrom reads one mapping: props of an EventSourceMapping resource (samType "") or of a
// SAM function's event of type samType (fn is then the function). A SAM event of a type that is
// not an event source mapping (Api, Schedule...) gives nil, nil, nil.
func mappingFrom(t *InvokeTemplate, r *Resolver, id, fn string, props *template.Node, samType string) (*MappingSpec, *skippedSource, error) {
	p := &mappingProps{r: r, where: id, props: props}
	m := &MappingSpec{Id: id, Function: fn, Enabled: true, Window: -1, MaxRetry: -1}
	source, skip, err := m.readSource(t, p, samType)
	if err != nil || skip != nil || m.Kind == "" {
		return nil, skip, err
	}
	if err := m.readCommon(p); err != nil {
		return nil, nil, err
	}
	switch m.Kind {
	case SqsMapping:
		err = m.readSQS(p, source)
	case KafkaMapping:
		err = m.readKafka(p, samType != "")
	}
	if err != nil {
		return nil, nil, err
	}
	return m, nil, nil
}

// readSource sets the kind of m and its function, and returns its source: the EventSourceArn,
// or the SAM event's Queue or Stream. A source klt local does not emulate is skipped; a SAM
// event that is no event source mapping leaves the kind "".
func (m *MappingSpec) readSource(t *InvokeTemplate, p *mappingProps, samType string) (source string, skip *skippedSource, err error) {
	switch samType {
	case "":
		f, err := p.str("FunctionName")
		if err != nil {
			return "", nil, err
		}
		if t.ResourceType(f) != template.TypeFunction {
			return "", nil, fmt.Errorf("%s: %s.FunctionName: %q is not a function of the template", p.props.KeyPos("FunctionName"), m.Id, f)
		}
		m.Function = f
		if source, err = p.str("EventSourceArn"); err != nil {
			return "", nil, err
		}
		switch {
		case p.props.Get("SelfManagedEventSource") != nil:
			m.Kind = KafkaMapping
		case strings.HasPrefix(source, "arn:aws:kafka:") || strings.Contains(source, ":kafka:"):
			m.Kind, m.Msk = KafkaMapping, true
		case strings.Contains(source, ":sqs:"):
			m.Kind = SqsMapping
		default:
			return "", &skippedSource{m.Id, m.Function, "event source " + source}, nil
		}
	case "SQS":
		m.Kind = SqsMapping
		source, err = p.str("Queue")
	case "MSK":
		m.Kind, m.Msk = KafkaMapping, true
		source, err = p.str("Stream")
	case "SelfManagedKafka":
		m.Kind = KafkaMapping
	case "DynamoDB", "Kinesis", "MQ", "DocumentDB":
		return "", &skippedSource{m.Id, m.Function, samType}, nil
	}
	if m.Msk {
		m.SourceARN = source
	}
	return source, nil, err
}

// readCommon reads what mappings of both kinds have: Enabled, BatchSize, the batching window,
// FunctionResponseTypes and FilterCriteria.
func (m *MappingSpec) readCommon(p *mappingProps) error {
	if v, err := p.str("Enabled"); err != nil {
		return err
	} else if v == "false" {
		m.Enabled = false
	}
	if err := p.num("BatchSize", &m.BatchSize, 1, 10000); err != nil {
		return err
	}
	secs := -1
	if err := p.num("MaximumBatchingWindowInSeconds", &secs, 0, 300); err != nil {
		return err
	}
	if secs >= 0 {
		m.Window = time.Duration(secs) * time.Second
	}
	types, err := p.get("FunctionResponseTypes")
	if err != nil {
		return err
	}
	if l, ok := types.([]any); ok {
		m.ReportFailures = slices.Contains(l, any("ReportBatchItemFailures"))
	}
	fc, err := p.get("FilterCriteria")
	if err != nil || fc == nil {
		return err
	}
	data, err := json.Marshal(fc)
	if err != nil {
		return err
	}
	if m.Filter, err = filter.ParseCriteria(data); err != nil {
		return fmt.Errorf("%s: %s.FilterCriteria: %w", p.props.KeyPos("FilterCriteria"), m.Id, err)
	}
	return nil
}

// readSQS reads the queue of an SQS mapping (source is its ARN) and its ScalingConfig.
func (m *MappingSpec) readSQS(p *mappingProps, source string) error {
	q, ok := QueueByARN(p.r, source)
	if !ok {
		return fmt.Errorf("%s: %s: the queue %q is not a queue of the template", p.props.Pos, m.Id, source)
	}
	m.Queue = q
	sc, err := p.get("ScalingConfig")
	if err != nil {
		return err
	}
	if sc, ok := sc.(map[string]any); ok {
		if s, ok := sc["MaximumConcurrency"].(string); ok {
			n, err := strconv.Atoi(s)
			if err != nil || n < 2 || n > 1000 {
				return fmt.Errorf("%s: %s.ScalingConfig.MaximumConcurrency: %q is not a whole number from 2 to 1000", p.props.KeyPos("ScalingConfig"), m.Id, s)
			}
			m.MaxConcurrency = n
		}
	}
	return nil
}

// readKafka reads the topic, starting position, consumer group, retries and on-failure
// destination of a Kafka mapping; sam says whether it is a SAM event, which has
// ConsumerGroupId at the top level.
func (m *MappingSpec) readKafka(p *mappingProps, sam bool) error {
	topics, err := p.get("Topics")
	if err != nil {
		return err
	}
	l, _ := topics.([]any)
	for _, x := range l {
		if s, ok := x.(string); ok && s != "" {
			m.Topics = append(m.Topics, s)
		}
	}
	if len(m.Topics) != 1 {
		return fmt.Errorf("%s: %s.Topics: want one topic (an event source mapping reads one), got %v", p.props.KeyPos("Topics"), m.Id, topics)
	}
	if m.StartingPosition, err = p.str("StartingPosition"); err != nil {
		return err
	}
	for _, key := range []string{"AmazonManagedKafkaEventSourceConfig", "SelfManagedKafkaEventSourceConfig"} {
		c, err := p.get(key)
		if err != nil {
			return err
		}
		if c, ok := c.(map[string]any); ok {
			if g, ok := c["ConsumerGroupId"].(string); ok {
				m.GroupID = g
			}
		}
	}
	if sam {
		if g, err := p.str("ConsumerGroupId"); err != nil {
			return err
		} else if g != "" {
			m.GroupID = g
		}
	}
	if err := p.num("MaximumRetryAttempts", &m.MaxRetry, -1, 10000); err != nil {
		return err
	}
	age := -1
	if err := p.num("MaximumRecordAgeInSeconds", &age, -1, 604800); err != nil {
		return err
	}
	if age > 0 {
		m.MaxRecordAge = time.Duration(age) * time.Second
	}
	b, err := p.str("BisectBatchOnFunctionError")
	if err != nil {
		return err
	}
	m.Bisect = b == "true"
	dc, err := p.get("DestinationConfig")
	if err != nil {
		return err
	}
	if dc, ok := dc.(map[string]any); ok {
		if of, ok := dc["OnFailure"].(map[string]any); ok {
			m.OnFailure, _ = of["Destination"].(string)
		}
	}
	if m.GroupID == "" {
		m.GroupID = m.Id
	}
	return nil
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

// NewLocalResolver returns a Resolver of t's intrinsics for klt local, with params replacing
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
