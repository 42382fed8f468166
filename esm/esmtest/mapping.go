package esmtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// The settings of a mapping are the properties of its AWS::Lambda::EventSourceMapping
// resource (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-lambda-eventsourcemapping.html),
// under the same names, or of a SAM function's MSK, SelfManagedKafka or SQS event. A field
// left at its zero value is a property left out: the mapping has AWS's default. Where zero is
// a value AWS takes that is not the default (MaximumRetryAttempts 0, a batching window of 0),
// the field is a pointer: new(0) sets it (Go 1.26's new of a value).
//
// Two properties given in seconds are time.Duration fields named without "InSeconds":
// MaximumBatchingWindow and MaximumRecordAge. AWS takes whole seconds; a test may give less
// (a 100 ms window keeps a test quick), which only the emulator accepts.

// Starting positions of a Kafka mapping (KafkaMapping.StartingPosition).
const (
	TrimHorizon = esm.TrimHorizon // the oldest record of each partition (the default here)
	Latest      = esm.Latest      // records produced after the group first joins
	AtTimestamp = esm.AtTimestamp // records from StartingPositionTimestamp on
)

// ReportBatchItemFailures is the one value of FunctionResponseTypes: the mapping reads the
// function's response as a partial batch response.
const ReportBatchItemFailures = "ReportBatchItemFailures"

// Conditions of an on-failure record (OnFailureRecord.Condition): why a Kafka mapping gave up
// on records.
const (
	ConditionRetryAttemptsExhausted     = esm.ConditionRetryAttemptsExhausted     // MaximumRetryAttempts retries failed
	ConditionMaximumPayloadSizeExceeded = esm.ConditionMaximumPayloadSizeExceeded // one record's event alone is over 6 MB
	ConditionRecordAgeExceeded          = esm.ConditionRecordAgeExceeded          // older than MaximumRecordAge
	ConditionSchemaNotFound             = esm.ConditionSchemaNotFound             // SchemaRegistryConfig: the key or value names no schema the registry has
	ConditionDeserializationError       = esm.ConditionDeserializationError       // SchemaRegistryConfig: the key or value does not decode with its schema
)

// Groups of MetricsConfig.Metrics.
const (
	MetricsEventCount = esm.MetricsEventCount // counts of records through each step
	MetricsErrorCount = esm.MetricsErrorCount // counts of errors (Kafka only)
	MetricsKafka      = esm.MetricsKafka      // offset lag and commits (Kafka only)
)

// KafkaMapping is an Amazon MSK or self-managed Apache Kafka event source mapping: the
// properties of its AWS::Lambda::EventSourceMapping resource that the emulator follows.
type KafkaMapping struct {
	// Topics holds the topic the mapping reads (a mapping reads one); DefaultTopic when empty.
	Topics []string
	// EventSourceArn is the Amazon MSK cluster's ARN: the events' eventSource is then "aws:kafka"
	// with this eventSourceArn. Empty, the mapping is a self-managed one ("SelfManagedKafka",
	// no eventSourceArn).
	EventSourceArn string
	// ConsumerGroupId is the consumer group (AmazonManagedKafkaEventSourceConfig's or
	// SelfManagedKafkaEventSourceConfig's); by default one of the mapping's own.
	ConsumerGroupId string
	// StartingPosition is TrimHorizon (the default here: AWS requires the property, and a
	// test's records produced before the mapping starts are then not missed), Latest or
	// AtTimestamp, from StartingPositionTimestamp on.
	StartingPosition          string
	StartingPositionTimestamp time.Time
	// BatchSize is the most records in one invocation: 1 to 10,000, default 100.
	BatchSize int
	// MaximumBatchingWindow (MaximumBatchingWindowInSeconds) is how long a batch that is not
	// full waits for more records, counted from the arrival of its oldest: 0 to 300 s, default
	// 500 ms.
	MaximumBatchingWindow *time.Duration
	// FilterCriteria drops the records that match none of its filters (filter.ParseCriteria
	// reads the property's JSON); a record it cannot decide on is delivered. Nil delivers all.
	FilterCriteria *filter.Criteria
	// FunctionResponseTypes holds ReportBatchItemFailures for partial batch responses. Without
	// it the response is ignored: a batch fails only when its invocation does.
	FunctionResponseTypes []string
	// MaximumRetryAttempts is how many times a failed batch is retried: 0 to 10,000, or -1
	// for infinite, the default (nil). With an on-failure destination, -1 means 10, as AWS
	// documents.
	MaximumRetryAttempts *int
	// MaximumRecordAge (MaximumRecordAgeInSeconds) is the age past which a record is given up
	// on instead of being sent; 0, the default, never.
	MaximumRecordAge time.Duration
	// BisectBatchOnFunctionError splits a batch the function failed in two, and retries each
	// half.
	BisectBatchOnFunctionError bool
	// DestinationConfig.OnFailure.Destination is where records given up on go; without one
	// they are dropped (and committed). Kafka.OnFailure reads what it received.
	DestinationConfig *DestinationConfig
	// ProvisionedPollerConfig puts the mapping in provisioned mode: MinimumPollers pollers
	// share the partitions (Lambda's autoscaling up to MaximumPollers is not emulated).
	ProvisionedPollerConfig *ProvisionedPollerConfig
	// MetricsConfig enables the groups of metrics Kafka.Metrics returns.
	MetricsConfig *MetricsConfig
	// SchemaRegistryConfig (AmazonManagedKafkaEventSourceConfig's or
	// SelfManagedKafkaEventSourceConfig's) makes the mapping validate records against a
	// Confluent schema registry and, with EventRecordFormat JSON, deliver them as JSON.
	SchemaRegistryConfig *SchemaRegistryConfig

	name string // the template's logical ID (ReadMapping), for esm's messages
}

// SQSMapping is an Amazon SQS event source mapping: the properties of its
// AWS::Lambda::EventSourceMapping resource that the emulator follows. The queue it reads is
// the test's (WithQueue).
type SQSMapping struct {
	// EventSourceArn is the queue's ARN as the events' eventSourceARN say it; by default the
	// queue's QueueArn attribute.
	EventSourceArn string
	// BatchSize is the most messages in one invocation: 1 to 10,000 for a standard queue (above
	// 10 with a batching window of at least one second), 1 to 10 for a FIFO queue; default 10.
	BatchSize int
	// MaximumBatchingWindow (MaximumBatchingWindowInSeconds): 0 to 300 s, default 0, which
	// invokes with what one ReceiveMessage returned; a FIFO queue's mapping takes none.
	MaximumBatchingWindow *time.Duration
	// FilterCriteria: a message that matches none of its filters is deleted and never
	// delivered.
	FilterCriteria *filter.Criteria
	// FunctionResponseTypes holds ReportBatchItemFailures for partial batch responses.
	FunctionResponseTypes []string
	// ScalingConfig.MaximumConcurrency caps the mapping's concurrent invocations, 2 to 1,000.
	ScalingConfig *ScalingConfig
	// MetricsConfig enables the groups of metrics SQS.Metrics returns (EventCount only).
	MetricsConfig *MetricsConfig

	name string // the template's logical ID (ReadMapping)
}

// DestinationConfig is a Kafka mapping's DestinationConfig.
type DestinationConfig struct {
	OnFailure OnFailure
}

// OnFailure is DestinationConfig.OnFailure. Destination is "kafka://TOPIC", a topic of the
// mapping's cluster (NewKafka creates it), or an SQS queue, by its URL or its ARN, on the
// endpoint of WithSQS's client.
type OnFailure struct {
	Destination string
}

// ProvisionedPollerConfig is a Kafka mapping's ProvisionedPollerConfig.
type ProvisionedPollerConfig struct {
	MinimumPollers int // 1 to 200: the pollers that run
	MaximumPollers int // 1 to 2,000: not emulated (the pollers stay at MinimumPollers)
}

// ScalingConfig is an SQS mapping's ScalingConfig.
type ScalingConfig struct {
	MaximumConcurrency int
}

// MetricsConfig is a mapping's MetricsConfig: Metrics holds MetricsEventCount, and for Kafka
// MetricsErrorCount and MetricsKafka.
type MetricsConfig struct {
	Metrics []string
}

// SchemaRegistryConfig is a Kafka mapping's SchemaRegistryConfig, for a Confluent registry.
type SchemaRegistryConfig struct {
	SchemaRegistryURI string // the registry's URL
	EventRecordFormat string // "JSON" or "SOURCE"
	// SchemaValidationConfigs name what is validated: Attribute "KEY", "VALUE" or both.
	SchemaValidationConfigs []SchemaValidationConfig
}

// SchemaValidationConfig is one of SchemaRegistryConfig.SchemaValidationConfigs.
type SchemaValidationConfig struct {
	Attribute string // "KEY" or "VALUE"
}

// topic returns the topic the mapping reads.
func (m *KafkaMapping) topic() (string, error) {
	switch len(m.Topics) {
	case 0:
		return DefaultTopic, nil
	case 1:
		if m.Topics[0] == "" {
			return DefaultTopic, nil
		}
		return m.Topics[0], nil
	}
	return "", fmt.Errorf("the mapping's Topics %v: an event source mapping reads one topic", m.Topics)
}

// reportFailures reads FunctionResponseTypes.
func reportFailures(types []string) (bool, error) {
	for _, t := range types {
		if t != ReportBatchItemFailures {
			return false, fmt.Errorf("FunctionResponseTypes: %q is not %s", t, ReportBatchItemFailures)
		}
	}
	return len(types) > 0, nil
}

// common returns the esm options of the settings both kinds of mapping have.
func common(name string, size int, window *time.Duration, fc *filter.Criteria, types []string, mc *MetricsConfig) ([]esm.Option, error) {
	var opts []esm.Option
	if name != "" {
		opts = append(opts, esm.WithName(name))
	}
	if size != 0 {
		opts = append(opts, esm.WithBatchSize(size))
	}
	if window != nil {
		opts = append(opts, esm.WithBatchingWindow(*window))
	}
	if fc != nil {
		opts = append(opts, esm.WithFilter(fc))
	}
	report, err := reportFailures(types)
	if err != nil {
		return nil, err
	}
	if report {
		opts = append(opts, esm.WithReportBatchItemFailures())
	}
	if mc != nil {
		opts = append(opts, esm.WithMetricsConfig(mc.Metrics...))
	}
	return opts, nil
}

// kafkaOptions returns the esm options of the mapping; sqsClient is WithSQS's, for an SQS
// on-failure destination, whose URL is returned with the destination.
func (m *KafkaMapping) kafkaOptions(ctx context.Context, sqsClient *sqs.Client) (opts []esm.KafkaOption, dest esm.Destination, destURL string, err error) {
	c, err := common(m.name, m.BatchSize, m.MaximumBatchingWindow, m.FilterCriteria, m.FunctionResponseTypes, m.MetricsConfig)
	if err != nil {
		return nil, nil, "", err
	}
	for _, o := range c {
		opts = append(opts, o)
	}
	if m.EventSourceArn != "" {
		opts = append(opts, esm.WithEventSource(kafkaevent.SourceMSK, m.EventSourceArn))
	}
	if m.ConsumerGroupId != "" {
		opts = append(opts, esm.WithGroupID(m.ConsumerGroupId))
	}
	switch m.StartingPosition {
	case "":
	case AtTimestamp:
		opts = append(opts, esm.WithStartingTimestamp(m.StartingPositionTimestamp))
	default:
		opts = append(opts, esm.WithStartingPosition(m.StartingPosition))
	}
	if m.MaximumRetryAttempts != nil {
		opts = append(opts, esm.WithMaximumRetryAttempts(*m.MaximumRetryAttempts))
	}
	if m.MaximumRecordAge != 0 {
		opts = append(opts, esm.WithMaximumRecordAge(m.MaximumRecordAge))
	}
	if m.BisectBatchOnFunctionError {
		opts = append(opts, esm.WithBisectBatchOnFunctionError())
	}
	if p := m.ProvisionedPollerConfig; p != nil {
		n := p.MinimumPollers
		if n == 0 {
			n = 1 // AWS's default MinimumPollers
		}
		opts = append(opts, esm.WithPollers(n))
	}
	if sr := m.SchemaRegistryConfig; sr != nil {
		cfg := esm.SchemaRegistryConfig{SchemaRegistryURI: sr.SchemaRegistryURI, EventRecordFormat: sr.EventRecordFormat}
		for _, v := range sr.SchemaValidationConfigs {
			if !slices.Contains(cfg.Attributes, v.Attribute) {
				cfg.Attributes = append(cfg.Attributes, v.Attribute)
			}
		}
		opts = append(opts, esm.WithSchemaRegistry(cfg))
	}
	if d := m.DestinationConfig; d != nil && d.OnFailure.Destination != "" {
		dest, destURL, err = destination(ctx, d.OnFailure.Destination, sqsClient)
		if err != nil {
			return nil, nil, "", err
		}
		opts = append(opts, esm.WithOnFailure(dest))
	}
	return opts, dest, destURL, nil
}

// onFailureTopic returns the topic of a kafka://TOPIC on-failure destination, or "".
func (m *KafkaMapping) onFailureTopic() string {
	if m.DestinationConfig == nil {
		return ""
	}
	t, _ := strings.CutPrefix(m.DestinationConfig.OnFailure.Destination, "kafka://")
	if t == m.DestinationConfig.OnFailure.Destination {
		return ""
	}
	return t
}

// destination returns the on-failure destination d: kafka://TOPIC, or a queue (its URL is
// returned too) by URL or ARN on client's endpoint.
func destination(ctx context.Context, d string, client *sqs.Client) (esm.Destination, string, error) {
	if t, ok := strings.CutPrefix(d, "kafka://"); ok {
		return esm.OnFailureKafkaTopic(t), "", nil
	}
	if client == nil {
		return nil, "", fmt.Errorf("DestinationConfig.OnFailure.Destination %s: an SQS destination needs WithSQS, a client of its endpoint", d)
	}
	url := d
	if strings.HasPrefix(d, "arn:") {
		parts := strings.Split(d, ":")
		if len(parts) != 6 || parts[2] != "sqs" {
			return nil, "", fmt.Errorf("DestinationConfig.OnFailure.Destination %s: want kafka://TOPIC, or an SQS queue's URL or ARN (the emulator has no SNS or S3)", d)
		}
		out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &parts[5]})
		if err != nil {
			return nil, "", fmt.Errorf("DestinationConfig.OnFailure.Destination %s: %w", d, err)
		}
		url = *out.QueueUrl
	} else if !strings.HasPrefix(d, "http://") && !strings.HasPrefix(d, "https://") {
		return nil, "", fmt.Errorf("DestinationConfig.OnFailure.Destination %s: want kafka://TOPIC, or an SQS queue's URL or ARN", d)
	}
	return esm.OnFailureSQS(client, url), url, nil
}

// sqsOptions returns the esm options of the mapping.
func (m *SQSMapping) sqsOptions() ([]esm.SQSOption, error) {
	c, err := common(m.name, m.BatchSize, m.MaximumBatchingWindow, m.FilterCriteria, m.FunctionResponseTypes, m.MetricsConfig)
	if err != nil {
		return nil, err
	}
	var opts []esm.SQSOption
	for _, o := range c {
		opts = append(opts, o)
	}
	if m.EventSourceArn != "" {
		opts = append(opts, esm.WithQueueARN(m.EventSourceArn))
	}
	if m.ScalingConfig != nil {
		opts = append(opts, esm.WithMaximumConcurrency(m.ScalingConfig.MaximumConcurrency))
	}
	return opts, nil
}
