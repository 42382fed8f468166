package esmtest

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/esm"
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

// Mapping is an event source mapping of a SAM template, read as klt local reads it, with
// the esm options its properties imply.
type Mapping struct {
	ID       string // the EventSourceMapping resource's logical ID, or Function.Event for a SAM event
	Function string // the logical ID of the function it invokes
	// FunctionTimeout is the function's Timeout (Globals.Function's, or 3 s).
	FunctionTimeout time.Duration

	// Kafka: the topic, and the options of NewKafka. OnFailure is the on-failure
	// destination (nil without one), which KafkaOptions already sets, for Kafka.OnFailure.
	Topic        string
	KafkaOptions []esm.KafkaOption
	OnFailure    esm.Destination

	// SQS: the queue's logical ID and URL (TemplateEnv.QueueURLs), and the options of NewSQS.
	Queue      string
	QueueURL   string
	SQSOptions []esm.SQSOption

	env            TemplateEnv
	onFailureTopic string
}

// ReadMapping reads the mapping id of the SAM template at path: an
// AWS::Lambda::EventSourceMapping resource (its logical ID) or an MSK, SelfManagedKafka or SQS
// event of a function ("Function.Event"). The template's intrinsics are evaluated as klt local
// does (parameters from env.Parameters or their Defaults; conditions hold or not), and the
// mapping's properties become the options of esm/samspec's MappingSpec.KafkaOptions and
// SQSOptions: its name, consumer group (ConsumerGroupId, else id), BatchSize,
// MaximumBatchingWindowInSeconds, FilterCriteria, FunctionResponseTypes, MaximumRetryAttempts,
// MaximumRecordAgeInSeconds, BisectBatchOnFunctionError, the on-failure destination, and
// ScalingConfig.MaximumConcurrency. A property left out leaves esm's default, which is AWS's.
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
	m := &Mapping{ID: spec.Id, Function: spec.Function, FunctionTimeout: time.Duration(f.Timeout) * time.Second, env: env}
	switch spec.Kind {
	case samspec.KafkaMapping:
		m.Topic = spec.Topics[0]
		m.onFailureTopic = spec.OnFailureTopic()
		var sender esm.SQSSender
		if env.SQS != nil {
			sender = env.SQS
		}
		if m.KafkaOptions, err = spec.KafkaOptions(r, samspec.KafkaTargets{SQS: sender}); err != nil {
			return nil, err
		}
		if m.OnFailure, err = spec.Destination(r, sender); err != nil {
			return nil, err
		}
	case samspec.SqsMapping:
		m.Queue = spec.Queue
		if m.QueueURL = env.QueueURLs[spec.Queue]; m.QueueURL == "" || env.SQS == nil {
			return nil, fmt.Errorf("%s reads the queue %s: TemplateEnv needs its URL (QueueURLs) and the SQS client", spec.Id, spec.Queue)
		}
		if m.SQSOptions, err = spec.SQSOptions(r); err != nil {
			return nil, err
		}
	}
	if !spec.Enabled {
		return nil, fmt.Errorf("%s is disabled (Enabled: false) in the template", spec.Id)
	}
	return m, nil
}

// KafkaConfig returns the configuration of NewKafka for the mapping: its topic, its
// function's name and timeout, the on-failure topic (a kafka:// destination) to create, and
// the SQS client of TemplateEnv. Set Partitions, which the template does not know.
func (m *Mapping) KafkaConfig() KafkaConfig {
	c := KafkaConfig{Topic: m.Topic, FunctionName: m.Function, FunctionTimeout: m.FunctionTimeout, SQS: m.env.SQS}
	if m.onFailureTopic != "" {
		c.Topics = []string{m.onFailureTopic}
	}
	return c
}

// SQSConfig returns the configuration of NewSQS for the mapping: the queue of TemplateEnv,
// its client, and the function's name and timeout.
func (m *Mapping) SQSConfig() SQSConfig {
	return SQSConfig{Client: m.env.SQS, QueueURL: m.QueueURL, FunctionName: m.Function, FunctionTimeout: m.FunctionTimeout}
}
