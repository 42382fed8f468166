package samspec

import (
	"fmt"
	"strings"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// The conversion of a template's mapping to package esm's options, shared by klt local and
// package esm/esmtest, so that a mapping behaves the same in both. Each property the template
// gives becomes the option of the same name; a property it leaves out leaves esm's default
// (which is AWS's), except where said below.

// LocalFunctionARN is the ARN of the template's function fn on the local stack: the
// functionArn of on-failure records.
func LocalFunctionARN(fn string) string {
	return "arn:aws:lambda:" + LocalRegion + ":" + LocalAccount + ":function:" + fn
}

// KafkaTargets is what a Kafka mapping's options point at that the template does not say.
type KafkaTargets struct {
	// Brokers are the cluster's host:port, the events' bootstrapServers; nil leaves esm's
	// default, the brokers given to esm.NewKafka.
	Brokers []string
	// FunctionARN is the functionArn of on-failure records; "" is LocalFunctionARN of the
	// mapping's function.
	FunctionARN string
	// SQS is the client of the SQS endpoint that holds the template's queues (r.QueueURLs):
	// an on-failure destination that is a queue of the template is sent there.
	SQS esm.SQSSender
}

// KafkaOptions returns the esm options of a Kafka mapping: its name (the mapping's Id), the
// consumer group (GroupID: the template's ConsumerGroupId, else the Id), MaximumRetryAttempts
// (-1, infinite, when absent), the starting position (TRIM_HORIZON when absent), the event
// source (aws:kafka with the cluster's ARN for MSK, else SelfManagedKafka), BatchSize,
// MaximumBatchingWindowInSeconds, FilterCriteria, ReportBatchItemFailures,
// MaximumRecordAgeInSeconds, ProvisionedPollerConfig's MinimumPollers (esm.WithPollers),
// BisectBatchOnFunctionError and the on-failure destination. Options appended after these override them: klt local gives each phase of
// a run its own group and starting time that way.
func (m *MappingSpec) KafkaOptions(r *Resolver, t KafkaTargets) ([]esm.KafkaOption, error) {
	if m.Kind != KafkaMapping {
		return nil, fmt.Errorf("%s is an %s mapping, not a Kafka one", m.Id, m.Kind)
	}
	arn := t.FunctionARN
	if arn == "" {
		arn = LocalFunctionARN(m.Function)
	}
	opts := []esm.KafkaOption{
		esm.WithName(m.Id), esm.WithGroupID(m.GroupID),
		esm.WithMaximumRetryAttempts(m.MaxRetry),
		esm.WithFunctionARN(arn),
		esm.WithStartingPosition(orDefault(m.StartingPosition, esm.TrimHorizon)),
	}
	if len(t.Brokers) > 0 {
		opts = append(opts, esm.WithBootstrapServers(t.Brokers...))
	}
	if m.Msk {
		opts = append(opts, esm.WithEventSource(kafkaevent.SourceMSK, m.SourceARN))
	} else {
		opts = append(opts, esm.WithEventSource(kafkaevent.SourceSelfManaged, ""))
	}
	for _, o := range m.commonOptions() {
		opts = append(opts, o)
	}
	if m.MinimumPollers > 0 {
		opts = append(opts, esm.WithPollers(m.MinimumPollers))
	}
	if m.MaxRecordAge > 0 {
		opts = append(opts, esm.WithMaximumRecordAge(m.MaxRecordAge))
	}
	if m.Bisect {
		opts = append(opts, esm.WithBisectBatchOnFunctionError())
	}
	d, err := m.destination(r, t.SQS)
	if err != nil {
		return nil, err
	}
	if d != nil {
		opts = append(opts, esm.WithOnFailure(d))
	}
	if sr := m.SchemaRegistry; sr != nil {
		opts = append(opts, esm.WithSchemaRegistry(esm.SchemaRegistryConfig{
			SchemaRegistryURI: sr.URI, EventRecordFormat: sr.EventRecordFormat, Attributes: sr.Attributes,
		}))
	}
	return opts, nil
}

// OnFailureTopic returns the topic of a kafka://TOPIC on-failure destination, or "".
func (m *MappingSpec) OnFailureTopic() string {
	t, _ := strings.CutPrefix(m.OnFailure, "kafka://")
	if t == m.OnFailure {
		return ""
	}
	return t
}

// destination returns the Kafka mapping's on-failure destination: a kafka://TOPIC on the
// mapping's cluster, or a queue of the template (by its ARN) at its URL in r.QueueURLs,
// sent with client. It is nil when the mapping has none, and an error when it is something
// else (an SNS topic, an S3 bucket, a queue outside the template) or names a queue with no
// URL in r.QueueURLs: the records would have nowhere to go.
func (m *MappingSpec) destination(r *Resolver, client esm.SQSSender) (esm.Destination, error) {
	if m.OnFailure == "" {
		return nil, nil
	}
	if t := m.OnFailureTopic(); t != "" {
		return esm.OnFailureKafkaTopic(t), nil
	}
	q, ok := QueueByARN(r, m.OnFailure)
	if !ok {
		return nil, fmt.Errorf("%s: on-failure destination %s is neither a queue of the template nor kafka://TOPIC; klt local has no SNS or S3", m.Id, m.OnFailure)
	}
	u, ok := r.QueueURLs[q]
	if !ok || client == nil {
		return nil, fmt.Errorf("%s: on-failure destination %s: the queue has no local URL or SQS client", m.Id, q)
	}
	return esm.OnFailureSQS(client, u), nil
}

// SQSOptions returns the esm options of an SQS mapping: its name (the mapping's Id), the
// queue's local ARN (the events' eventSourceARN), BatchSize, MaximumBatchingWindowInSeconds,
// FilterCriteria, ReportBatchItemFailures, ScalingConfig.MaximumConcurrency and MetricsConfig. The queue
// itself, r.QueueURLs[m.Queue], is esm.NewSQS's argument.
func (m *MappingSpec) SQSOptions(r *Resolver) ([]esm.SQSOption, error) {
	if m.Kind != SqsMapping {
		return nil, fmt.Errorf("%s is a %s mapping, not an SQS one", m.Id, m.Kind)
	}
	q, ok := r.Queues[m.Queue]
	if !ok {
		return nil, fmt.Errorf("%s: the queue %s is not a queue of the template", m.Id, m.Queue)
	}
	opts := []esm.SQSOption{
		esm.WithName(m.Id),
		esm.WithQueueARN("arn:aws:sqs:" + LocalRegion + ":" + LocalAccount + ":" + q.Name),
	}
	for _, o := range m.commonOptions() {
		opts = append(opts, o)
	}
	if m.MaxConcurrency != 0 {
		opts = append(opts, esm.WithMaximumConcurrency(m.MaxConcurrency))
	}
	return opts, nil
}

// commonOptions returns the options both kinds of mapping take from the template: BatchSize,
// MaximumBatchingWindowInSeconds, FilterCriteria, ReportBatchItemFailures and MetricsConfig.
func (m *MappingSpec) commonOptions() []esm.Option {
	var opts []esm.Option
	if m.BatchSize > 0 {
		opts = append(opts, esm.WithBatchSize(m.BatchSize))
	}
	if m.Window >= 0 {
		opts = append(opts, esm.WithBatchingWindow(m.Window))
	}
	if m.Filter != nil {
		opts = append(opts, esm.WithFilter(m.Filter))
	}
	if m.ReportFailures {
		opts = append(opts, esm.WithReportBatchItemFailures())
	}
	if len(m.Metrics) > 0 {
		opts = append(opts, esm.WithMetricsConfig(m.Metrics...))
	}
	return opts
}
