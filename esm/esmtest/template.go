package esmtest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/esm/samspec"
)

// TemplateEnv is what reading a template's mapping needs besides the template.
type TemplateEnv struct {
	// Parameters are values of the template's parameters, over their Defaults.
	Parameters map[string]string
	// SQS is the client of the endpoint that holds the template's queues, and QueueURLs their
	// URLs there, by logical ID: a Kafka mapping's on-failure destination that is a queue of
	// the template is sent there (and read from there by Kafka.OnFailure), and an SQS mapping
	// reads its queue there. Both may be nil for a Kafka mapping without one.
	SQS       *sqs.Client
	QueueURLs map[string]string
}

// Mapping is an event source mapping of a SAM template, read as klt local reads it: its
// properties as a KafkaMapping or an SQSMapping, and the options its template implies.
type Mapping struct {
	ID       string // the EventSourceMapping resource's logical ID, or Function.Event for a SAM event
	Function string // the logical ID of the function it invokes
	// FunctionTimeout is the function's Timeout (Globals.Function's, or 3 s).
	FunctionTimeout time.Duration
	// LMIConcurrency is the function's invocations at once per execution environment when
	// its CapacityProviderConfig makes it a Lambda Managed Instances function, else 0
	// (samspec.FunctionSpec.LMIConcurrency); Options then has WithLMIConcurrency.
	LMIConcurrency int
	// Kafka is a Kafka mapping's properties (nil for an SQS mapping): pass it to NewKafka.
	Kafka *KafkaMapping
	// SQS is an SQS mapping's properties (nil for a Kafka mapping), and Queue the logical ID
	// of its queue: pass it to NewSQS.
	SQS   *SQSMapping
	Queue string

	opts []Option
}

// Options returns the options the template implies for NewKafka or NewSQS: the function's
// name and timeout, TemplateEnv's SQS client (WithSQS) and, for an SQS mapping, its queue's
// URL (WithQueue). Options given after them override them.
func (m *Mapping) Options() []Option { return slices.Clone(m.opts) }

// ReadMapping reads the mapping id of the SAM template at path: an
// AWS::Lambda::EventSourceMapping resource (its logical ID) or an MSK, SelfManagedKafka or SQS
// event of a function ("Function.Event"). The template's intrinsics are evaluated as klt local
// does (parameters from env.Parameters or their Defaults; conditions hold or not), and the
// mapping's properties fill a KafkaMapping or an SQSMapping: Topics, ConsumerGroupId (else
// id), StartingPosition, the MSK cluster's ARN, BatchSize, MaximumBatchingWindowInSeconds,
// FilterCriteria, FunctionResponseTypes, MaximumRetryAttempts, MaximumRecordAgeInSeconds,
// BisectBatchOnFunctionError, DestinationConfig (a queue of the template at its URL in
// env.QueueURLs), ProvisionedPollerConfig, MetricsConfig, SchemaRegistryConfig, and
// ScalingConfig. A property left out leaves AWS's default.
//
// A mapping whose Condition is false is not in the template for ReadMapping, which then
// fails naming those that are.
func ReadMapping(path, id string, env TemplateEnv) (*Mapping, error) {
	t, err := samspec.ReadInvokeTemplate(path)
	if err != nil {
		return nil, err
	}
	r, err := samspec.NewLocalResolver(t, env.Parameters)
	if err != nil {
		return nil, err
	}
	for q, u := range env.QueueURLs {
		r.QueueURLs[q] = u
	}
	specs, _, err := samspec.LocalMappings(t, r)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, spec := range specs {
		if spec.Id == id {
			return fromSpec(t, r, spec, env)
		}
		ids = append(ids, spec.Id)
	}
	return nil, fmt.Errorf("%s: no Kafka or SQS mapping %s (whose Condition holds); mappings: %s", path, id, strings.Join(ids, ", "))
}

func fromSpec(t *samspec.InvokeTemplate, r *samspec.Resolver, spec *samspec.MappingSpec, env TemplateEnv) (*Mapping, error) {
	f, err := t.Function(spec.Function)
	if err != nil {
		return nil, err
	}
	m := &Mapping{ID: spec.Id, Function: spec.Function, FunctionTimeout: time.Duration(f.Timeout) * time.Second}
	m.opts = []Option{WithFunctionName(spec.Function), WithFunctionTimeout(m.FunctionTimeout)}
	if m.LMIConcurrency = f.LMIConcurrency(); m.LMIConcurrency > 0 {
		m.opts = append(m.opts, WithLMIConcurrency(m.LMIConcurrency))
	}
	if env.SQS != nil {
		m.opts = append(m.opts, WithSQS(env.SQS))
	}
	var window *time.Duration
	if spec.Window >= 0 {
		window = &spec.Window
	}
	var types []string
	if spec.ReportFailures {
		types = []string{ReportBatchItemFailures}
	}
	var metrics *MetricsConfig
	if len(spec.Metrics) > 0 {
		metrics = &MetricsConfig{Metrics: spec.Metrics}
	}
	switch spec.Kind {
	case samspec.KafkaMapping:
		k := &KafkaMapping{name: spec.Id, Topics: spec.Topics, ConsumerGroupId: spec.GroupID,
			StartingPosition: spec.StartingPosition, BatchSize: spec.BatchSize, MaximumBatchingWindow: window,
			FilterCriteria: spec.Filter, FunctionResponseTypes: types, MaximumRetryAttempts: &spec.MaxRetry,
			MaximumRecordAge: spec.MaxRecordAge, BisectBatchOnFunctionError: spec.Bisect, MetricsConfig: metrics}
		if spec.Msk {
			k.EventSourceArn = spec.SourceARN
		}
		if spec.OnFailure != "" {
			d := spec.OnFailure
			if spec.OnFailureTopic() == "" {
				q, ok := samspec.QueueByARN(r, d)
				if !ok {
					return nil, fmt.Errorf("%s: on-failure destination %s is neither a queue of the template nor kafka://TOPIC; the emulator has no SNS or S3", spec.Id, d)
				}
				if d = env.QueueURLs[q]; d == "" || env.SQS == nil {
					return nil, fmt.Errorf("%s: on-failure destination %s: TemplateEnv needs its URL (QueueURLs) and the SQS client", spec.Id, q)
				}
			}
			k.DestinationConfig = &DestinationConfig{OnFailure: OnFailure{Destination: d}}
		}
		if spec.MinimumPollers > 0 {
			k.ProvisionedPollerConfig = &ProvisionedPollerConfig{MinimumPollers: spec.MinimumPollers, MaximumPollers: spec.MaximumPollers}
		}
		if sr := spec.SchemaRegistry; sr != nil {
			k.SchemaRegistryConfig = &SchemaRegistryConfig{SchemaRegistryURI: sr.URI, EventRecordFormat: sr.EventRecordFormat}
			for _, a := range sr.Attributes {
				k.SchemaRegistryConfig.SchemaValidationConfigs = append(k.SchemaRegistryConfig.SchemaValidationConfigs, SchemaValidationConfig{Attribute: a})
			}
		}
		m.Kafka = k
	case samspec.SqsMapping:
		m.Queue = spec.Queue
		url := env.QueueURLs[spec.Queue]
		if url == "" || env.SQS == nil {
			return nil, fmt.Errorf("%s reads the queue %s: TemplateEnv needs its URL (QueueURLs) and the SQS client", spec.Id, spec.Queue)
		}
		q, ok := r.Queues[spec.Queue]
		if !ok {
			return nil, fmt.Errorf("%s: the queue %s is not a queue of the template", spec.Id, spec.Queue)
		}
		m.SQS = &SQSMapping{name: spec.Id, EventSourceArn: "arn:aws:sqs:" + samspec.LocalRegion + ":" + samspec.LocalAccount + ":" + q.Name,
			BatchSize: spec.BatchSize, MaximumBatchingWindow: window, FilterCriteria: spec.Filter, FunctionResponseTypes: types, MetricsConfig: metrics}
		if spec.MaxConcurrency != 0 {
			m.SQS.ScalingConfig = &ScalingConfig{MaximumConcurrency: spec.MaxConcurrency}
		}
		m.opts = append(m.opts, WithQueue(Queue{URL: url}))
	}
	if !spec.Enabled {
		return nil, fmt.Errorf("%s is disabled (Enabled: false) in the template", spec.Id)
	}
	return m, nil
}
