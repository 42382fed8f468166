package samspec

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/internal/template"
	"github.com/kafkalambda/toolkit/limits"
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
	// SchemaRegistry is the SchemaRegistryConfig of the mapping's
	// AmazonManagedKafkaEventSourceConfig or SelfManagedKafkaEventSourceConfig (a SAM event's
	// SchemaRegistryConfig); nil when it has none.
	SchemaRegistry *SchemaRegistrySpec
	// MinimumPollers and MaximumPollers are ProvisionedPollerConfig's (provisioned mode); 0
	// when the mapping has none (on-demand mode). klt local runs MinimumPollers pollers:
	// Lambda's autoscaling between the two is not emulated (NotEmulated says so).
	MinimumPollers, MaximumPollers int

	// SQS
	Queue          string // logical ID of the queue
	MaxConcurrency int    // ScalingConfig.MaximumConcurrency, 0 = not set

	// Both
	BatchSize      int
	Window         time.Duration // MaximumBatchingWindowInSeconds; -1 = the source's default
	Filter         *filter.Criteria
	ReportFailures bool // FunctionResponseTypes has ReportBatchItemFailures
	// Metrics are MetricsConfig.Metrics, in the template's order: esm.MetricsEventCount, and for
	// Kafka esm.MetricsErrorCount and esm.MetricsKafka; none when the mapping has no MetricsConfig.
	Metrics []string
	// SystemLogLevel is a Kafka mapping's LoggingConfig.SystemLogLevel (DEBUG, INFO or WARN),
	// "" without LoggingConfig. klt local writes no event poller system logs: NotEmulated
	// says so.
	SystemLogLevel string
}

// NotEmulated returns what the template asks of the mapping that klt local accepts but does
// not do, one sentence each, for klt local to print beside the mappings it runs: nothing of
// the template is silently dropped.
func (m *MappingSpec) NotEmulated() []string {
	var out []string
	if m.SystemLogLevel != "" {
		out = append(out, "LoggingConfig (SystemLogLevel "+m.SystemLogLevel+"): the event pollers' system logs are not written locally; the function's own logs are")
	}
	if m.MaximumPollers > m.MinimumPollers {
		out = append(out, fmt.Sprintf("ProvisionedPollerConfig: %d pollers run (MinimumPollers); Lambda's autoscaling up to MaximumPollers %d is not emulated", m.MinimumPollers, m.MaximumPollers))
	}
	return out
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
	n, ok := wholeNumber(s, lo, hi)
	if !ok {
		return fmt.Errorf("%s: %s.%s: %q is not a whole number from %d to %d", p.props.Get(key).Pos, p.where, key, s, lo, hi)
	}
	*dst = n
	return nil
}

// wholeNumber reads an evaluated scalar (a string, as the resolver gives every scalar) as a
// whole number from lo to hi.
func wholeNumber(s string, lo, hi int) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= lo && n <= hi
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
	if err := m.readMetrics(p); err != nil {
		return nil, nil, err
	}
	if err := m.readLogging(p); err != nil {
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
	if err := p.num("BatchSize", &m.BatchSize, 1, limits.MaxKafkaBatchSize); err != nil {
		return err
	}
	secs := -1
	if err := p.num("MaximumBatchingWindowInSeconds", &secs, 0, int(limits.MaxBatchingWindow/time.Second)); err != nil {
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
			if err != nil || n < 2 || n > limits.MaxSQSConcurrency {
				return fmt.Errorf("%s: %s.ScalingConfig.MaximumConcurrency: %q is not a whole number from 2 to %d", p.props.KeyPos("ScalingConfig"), m.Id, s, limits.MaxSQSConcurrency)
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
	if err := p.num("MaximumRetryAttempts", &m.MaxRetry, -1, limits.MaxRetryAttempts); err != nil {
		return err
	}
	age := -1
	if err := p.num("MaximumRecordAgeInSeconds", &age, -1, int(limits.MaxRecordAge/time.Second)); err != nil {
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
	if err := m.readPollers(p); err != nil {
		return err
	}
	return m.readSchemaRegistry(p, sam)
}

// readPollers reads ProvisionedPollerConfig: MinimumPollers 1 to 200 (default 1),
// MaximumPollers 1 to 2,000 (default 200), not below MinimumPollers (AWS,
// API_ProvisionedPollerConfig).
func (m *MappingSpec) readPollers(p *mappingProps) error {
	pc, err := p.get("ProvisionedPollerConfig")
	if err != nil || pc == nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s.ProvisionedPollerConfig: %s", p.props.KeyPos("ProvisionedPollerConfig"), m.Id, fmt.Sprintf(format, args...))
	}
	c, ok := pc.(map[string]any)
	if !ok {
		return bad("want an object {MinimumPollers, MaximumPollers}, got %s", template.Describe(pc))
	}
	m.MinimumPollers, m.MaximumPollers = 1, 200
	for k, v := range c {
		var dst *int
		lo, hi := 1, 200
		switch k {
		case "MinimumPollers":
			dst = &m.MinimumPollers
		case "MaximumPollers":
			dst, hi = &m.MaximumPollers, limits.MaxPollers
		case "PollerGroupName":
			continue
		default:
			return bad("%s: not a property of ProvisionedPollerConfig", k)
		}
		s, _ := v.(string)
		n, ok := wholeNumber(s, lo, hi)
		if !ok {
			return bad("%s: %s is not a whole number from %d to %d", k, template.Describe(v), lo, hi)
		}
		*dst = n
	}
	if m.MaximumPollers < m.MinimumPollers {
		return bad("MaximumPollers %d is below MinimumPollers %d", m.MaximumPollers, m.MinimumPollers)
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

// SchemaRegistrySpec is a Kafka mapping's SchemaRegistryConfig, evaluated: what the emulated
// mapping needs to validate records against the registry (esm.SchemaRegistryConfig).
type SchemaRegistrySpec struct {
	URI               string   // SchemaRegistryURI: a Confluent registry URL or a Glue registry ARN
	EventRecordFormat string   // JSON or SOURCE
	Attributes        []string // SchemaValidationConfigs' Attribute values: KEY, VALUE, in the template's order
}

// readSchemaRegistry reads the SchemaRegistryConfig of a Kafka mapping: inside
// AmazonManagedKafkaEventSourceConfig or SelfManagedKafkaEventSourceConfig, or at the top of a
// SAM event (sam). A configuration the emulated mapping cannot follow is an error naming the
// mapping; among them AccessConfigs, whose Secrets Manager secrets klt local cannot read.
func (m *MappingSpec) readSchemaRegistry(p *mappingProps, sam bool) error {
	var where, top string // the property read, and its key in the mapping's properties
	var cfg map[string]any
	keys := []string{"AmazonManagedKafkaEventSourceConfig", "SelfManagedKafkaEventSourceConfig"}
	if sam {
		keys = append(keys, "SchemaRegistryConfig")
	}
	for _, key := range keys {
		v, err := p.get(key)
		if err != nil {
			return err
		}
		if key != "SchemaRegistryConfig" {
			c, _ := v.(map[string]any)
			v = c["SchemaRegistryConfig"]
			key += ".SchemaRegistryConfig"
		}
		if v == nil || v == template.NoValue {
			continue
		}
		topKey, _, _ := strings.Cut(key, ".")
		c, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %s.%s: want an object, got %s", p.props.KeyPos(topKey), m.Id, key, template.Describe(v))
		}
		if cfg != nil {
			return fmt.Errorf("%s: %s: two SchemaRegistryConfig (%s and %s): a mapping has one registry", p.props.KeyPos(topKey), m.Id, where, key)
		}
		cfg, where, top = c, key, topKey
	}
	if cfg == nil {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s.%s: %s", p.props.KeyPos(top), m.Id, where, fmt.Sprintf(format, args...))
	}
	spec := &SchemaRegistrySpec{}
	spec.URI, _ = cfg["SchemaRegistryURI"].(string)
	if spec.URI == "" {
		return bad("SchemaRegistryURI: want the URL of a Confluent registry or the ARN of a Glue registry, got %s", template.Describe(cfg["SchemaRegistryURI"]))
	}
	spec.EventRecordFormat, _ = cfg["EventRecordFormat"].(string)
	if spec.EventRecordFormat != "JSON" && spec.EventRecordFormat != "SOURCE" {
		return bad("EventRecordFormat: want JSON or SOURCE, got %s", template.Describe(cfg["EventRecordFormat"]))
	}
	svc, _ := cfg["SchemaValidationConfigs"].([]any)
	for _, x := range svc {
		a, _ := x.(map[string]any)
		attr, _ := a["Attribute"].(string)
		if attr != "KEY" && attr != "VALUE" {
			return bad("SchemaValidationConfigs: want objects {Attribute: KEY or VALUE}, got %s", template.Describe(x))
		}
		if !slices.Contains(spec.Attributes, attr) {
			spec.Attributes = append(spec.Attributes, attr)
		}
	}
	if len(spec.Attributes) == 0 {
		return bad("SchemaValidationConfigs: none; want KEY, VALUE or both (the mapping would validate nothing)")
	}
	if ac, _ := cfg["AccessConfigs"].([]any); len(ac) > 0 {
		return bad("AccessConfigs: klt local cannot authenticate to the registry (it does not read Secrets Manager secrets): " +
			"leave AccessConfigs out locally (Fn::If on a condition of a parameter, with AWS::NoValue) and point SchemaRegistryURI at a local registry")
	}
	for k := range cfg {
		switch k {
		case "SchemaRegistryURI", "EventRecordFormat", "SchemaValidationConfigs", "AccessConfigs":
		default:
			return bad("%s: not a property of SchemaRegistryConfig", k)
		}
	}
	m.SchemaRegistry = spec
	return nil
}

// readMetrics reads MetricsConfig.Metrics. AWS takes at most 3, each once: EventCount, and for
// MSK and self-managed Kafka ErrorCount and KafkaMetrics.
func (m *MappingSpec) readMetrics(p *mappingProps) error {
	mc, err := p.get("MetricsConfig")
	if err != nil || mc == nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s.MetricsConfig: %s", p.props.KeyPos("MetricsConfig"), m.Id, fmt.Sprintf(format, args...))
	}
	c, ok := mc.(map[string]any)
	if !ok {
		return bad("want an object {Metrics: [...]}, got %s", template.Describe(mc))
	}
	for k := range c {
		if k != "Metrics" {
			return bad("%s: not a property of MetricsConfig", k)
		}
	}
	list, ok := c["Metrics"].([]any)
	if c["Metrics"] != nil && !ok {
		return bad("Metrics: want a list, got %s", template.Describe(c["Metrics"]))
	}
	for _, x := range list {
		s, _ := x.(string)
		switch {
		case s != esm.MetricsEventCount && s != esm.MetricsErrorCount && s != esm.MetricsKafka:
			return bad("Metrics: %s is not EventCount, ErrorCount or KafkaMetrics", template.Describe(x))
		case s != esm.MetricsEventCount && m.Kind != KafkaMapping:
			return bad("Metrics: %s is for Amazon MSK and self-managed Apache Kafka mappings only", s)
		case slices.Contains(m.Metrics, s):
			return bad("Metrics: %s twice", s)
		}
		m.Metrics = append(m.Metrics, s)
	}
	return nil
}

// System log levels of LoggingConfig.SystemLogLevel, most detail first.
var systemLogLevels = []string{"DEBUG", "INFO", "WARN"}

// readLogging reads LoggingConfig: SystemLogLevel, DEBUG, INFO or WARN, on a Kafka mapping
// only (AWS, EventSourceMappingLoggingConfig: "(Amazon MSK, and self-managed Apache Kafka
// only)"). Provisioned mode, which the feature needs too, is klt lint's check.
func (m *MappingSpec) readLogging(p *mappingProps) error {
	lc, err := p.get("LoggingConfig")
	if err != nil || lc == nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s.LoggingConfig: %s", p.props.KeyPos("LoggingConfig"), m.Id, fmt.Sprintf(format, args...))
	}
	if m.Kind != KafkaMapping {
		return bad("for Amazon MSK and self-managed Apache Kafka mappings only")
	}
	c, ok := lc.(map[string]any)
	if !ok {
		return bad("want an object {SystemLogLevel: ...}, got %s", template.Describe(lc))
	}
	for k := range c {
		if k != "SystemLogLevel" {
			return bad("%s: not a property of LoggingConfig", k)
		}
	}
	level, _ := c["SystemLogLevel"].(string)
	if !slices.Contains(systemLogLevels, level) {
		return bad("SystemLogLevel: want DEBUG, INFO or WARN, got %s", template.Describe(c["SystemLogLevel"]))
	}
	m.SystemLogLevel = level
	return nil
}
