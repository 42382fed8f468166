package esm

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// kafkaConfig holds a Kafka mapping's settings.
type kafkaConfig struct {
	mappingConfig
	groupID      string
	startAt      time.Time // AT_TIMESTAMP
	start        string
	retries      int
	retriesSet   bool
	maxAge       time.Duration
	bisect       bool
	onFailure    Destination
	source       kafkaevent.Source
	sourceARN    string
	bootstrap    []string
	bootstrapSet bool
	functionARN  string
	clientOpts   []kgo.Opt
	backoff      func(retry int) time.Duration // backoff, or shorter in tests
	patience     time.Duration                 // how long the schema registry, or joining the group, may fail before Run stops: registryPatience, or shorter in tests
	schema       *schemaRegistry               // WithSchemaRegistry; nil: records are delivered as they are
	pollers      int                           // WithPollers
	onePartition bool                          // WithOnePartitionPerInvocation
}

// WithPollers sets how many pollers share the partitions the group assigns: the mapping's
// event pollers, as ProvisionedPollerConfig's MinimumPollers sets them in provisioned mode.
// Each poller holds some of the partitions (a new partition goes to a new poller while there
// are fewer than n, then to the poller holding the fewest) and runs up to 5 invocations at
// once, as AWS's pollers do; there are never more pollers than partitions, as AWS caps them.
// 1 to 2,000 (MaximumPollers' limit); the default is 1: one poller holds every partition.
func WithPollers(n int) KafkaOption {
	return kafkaOption(func(c *kafkaConfig) {
		if n < 1 || n > limits.MaxPollers {
			c.reject("WithPollers", "%d: want 1 to %d", n, limits.MaxPollers)
		}
		c.pollers = n
	})
}

// WithOnePartitionPerInvocation makes each invocation hold records of one partition only (the
// event's "records" object has one key). By default an invocation holds records of several
// partitions, as on AWS: "A single Lambda payload can contain messages from multiple
// partitions." Use it to test a function that assumes one partition per event; concurrency is
// unchanged (up to 5 invocations per poller, each of a different partition).
func WithOnePartitionPerInvocation() KafkaOption {
	return kafkaOption(func(c *kafkaConfig) { c.onePartition = true })
}

// WithGroupID sets the consumer group ID (the mapping's ConsumerGroupId). The default is
// "klt-esm-" followed by the mapping's name. A group's committed offsets override the
// starting position, as on AWS.
func WithGroupID(id string) KafkaOption { return kafkaOption(func(c *kafkaConfig) { c.groupID = id }) }

// WithStartingPosition sets where a group without committed offsets starts: [TrimHorizon]
// (the default) or [Latest]. AWS requires the property; TRIM_HORIZON is the default here so
// that records produced before the mapping starts are not missed.
func WithStartingPosition(p string) KafkaOption {
	return kafkaOption(func(c *kafkaConfig) { c.start = p })
}

// WithStartingTimestamp makes a group without committed offsets start at the first record of
// each partition whose timestamp is t or later: the AT_TIMESTAMP starting position with
// StartingPositionTimestamp t.
func WithStartingTimestamp(t time.Time) KafkaOption {
	return kafkaOption(func(c *kafkaConfig) { c.start, c.startAt = AtTimestamp, t })
}

// WithMaximumRetryAttempts sets how many times a failed batch is retried, not counting the
// first attempt: 0 to 10,000, or -1 for infinite, the default. With an on-failure destination,
// -1 means 10, as AWS documents.
func WithMaximumRetryAttempts(n int) KafkaOption {
	return kafkaOption(func(c *kafkaConfig) { c.retries, c.retriesSet = n, true })
}

// WithMaximumRecordAge sets the age (from the record's timestamp) past which a record is given
// up on instead of being sent; by default records never expire. d must be positive. AWS takes
// 60 s to 7 days; shorter ages are accepted here, for tests.
func WithMaximumRecordAge(d time.Duration) KafkaOption {
	return kafkaOption(func(c *kafkaConfig) {
		if d <= 0 {
			c.reject("WithMaximumRecordAge", "%v is not positive (leave the option out for no limit)", d)
		}
		c.maxAge = d
	})
}

// WithBisectBatchOnFunctionError makes the mapping split a batch the function failed in two
// and retry each half (BisectBatchOnFunctionError); off by default.
func WithBisectBatchOnFunctionError() KafkaOption {
	return kafkaOption(func(c *kafkaConfig) { c.bisect = true })
}

// WithOnFailure sets the on-failure destination, [OnFailureSQS] or [OnFailureKafkaTopic]; by
// default records given up on are dropped (and committed).
func WithOnFailure(d Destination) KafkaOption {
	return kafkaOption(func(c *kafkaConfig) {
		if d == nil {
			c.reject("WithOnFailure", "nil destination")
		}
		c.onFailure = d
	})
}

// WithEventSource sets the event's eventSource and eventSourceArn: [kafkaevent.SourceMSK]
// with the cluster ARN, or [kafkaevent.SourceSelfManaged] with arn "" (the default).
func WithEventSource(source kafkaevent.Source, arn string) KafkaOption {
	return kafkaOption(func(c *kafkaConfig) { c.source, c.sourceARN = source, arn })
}

// WithBootstrapServers sets the event's bootstrapServers, host:port each; the default is the
// brokers given to NewKafka.
func WithBootstrapServers(servers ...string) KafkaOption {
	return kafkaOption(func(c *kafkaConfig) { c.bootstrap, c.bootstrapSet = servers, true })
}

// WithFunctionARN sets the functionArn of on-failure records; the default is
// "arn:aws:lambda:us-east-1:123456789012:function:" followed by the mapping's name.
func WithFunctionARN(arn string) KafkaOption {
	return kafkaOption(func(c *kafkaConfig) { c.functionARN = arn })
}

// withClientOptions adds franz-go client options (TLS, SASL, logging), applied after the
// mapping's own; none by default.
func withClientOptions(opts ...kgo.Opt) KafkaOption {
	return kafkaOption(func(c *kafkaConfig) { c.clientOpts = append(c.clientOpts, opts...) })
}
