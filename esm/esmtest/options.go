package esmtest

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// An Option controls what a mapping's resource does not say: the cluster or the queue the
// test gives it, the function's name and timeout, and the emulator's own switches. The
// mapping's settings are KafkaMapping's or SQSMapping's fields. Each option's doc says
// which kind of mapping takes it; NewKafka and NewSQS fail the test on one of the other kind.
type Option interface{ apply(*config) }

// config holds the options of NewKafka or NewSQS.
type config struct {
	kind string // "Kafka" or "SQS"
	bad  []string

	functionName    string
	functionTimeout time.Duration
	lmiConcurrency  int
	sqs             *sqs.Client

	partitions   int      // Kafka
	topics       []string // Kafka
	onePartition bool     // Kafka

	queue Queue // SQS
}

// option is an Option; only is the kind of mapping that takes it, "" for both.
type option struct {
	name, only string
	f          func(*config)
}

func (o option) apply(c *config) {
	if o.only != "" && o.only != c.kind {
		c.bad = append(c.bad, o.name+" is an option of "+o.only+" mappings")
		return
	}
	o.f(c)
}

// newConfig applies opts for a mapping of kind.
func newConfig(kind string, opts []Option) *config {
	c := &config{kind: kind}
	for _, o := range opts {
		o.apply(c)
	}
	return c
}

// WithFunctionName names the function in the ARN of its context (InvokedFunctionArn) and of
// on-failure records; DefaultFunctionName by default. Both kinds.
func WithFunctionName(name string) Option {
	return option{"WithFunctionName", "", func(c *config) { c.functionName = name }}
}

// WithFunctionTimeout sets the function's timeout (its Timeout property): its context's
// deadline, after which the invocation fails as "Sandbox.Timedout"; DefaultFunctionTimeout,
// Lambda's default, by default. Both kinds.
func WithFunctionTimeout(d time.Duration) Option {
	return option{"WithFunctionTimeout", "", func(c *config) { c.functionTimeout = d }}
}

// WithLMIConcurrency runs the function as a Lambda Managed Instances function whose
// PerExecutionEnvironmentMaxConcurrency is n (1 to 1600): the invocations are counted in
// emulated execution environments of n invocations at once each (Invocation.Environment,
// Environments), filling one before the next, as klt local does, and an invocation past its
// deadline fails as "Sandbox.Timedout" while its handler runs on and keeps its place in its
// environment (Invocation.PastDeadline), as LMI does not stop it. The test's environment gets
// AWS_LAMBDA_MAX_CONCURRENCY=n (testing.TB.Setenv: not in a parallel test). ReadMapping
// gives it for a function with CapacityProviderConfig. By default the function runs in
// Lambda's default model. Both kinds.
func WithLMIConcurrency(n int) Option {
	return option{"WithLMIConcurrency", "", func(c *config) {
		if n < 1 || n > 1600 {
			c.bad = append(c.bad, fmt.Sprintf("WithLMIConcurrency(%d): want 1 to 1600, PerExecutionEnvironmentMaxConcurrency's range", n))
			return
		}
		c.lmiConcurrency = n
	}}
}

// WithSQS gives the client of an SQS endpoint (local-aws-sqs, ElasticMQ, ... started by the
// test). Kafka: the endpoint of an SQS on-failure destination, which Kafka.OnFailure reads.
// SQS: the endpoint of the mapping's queue; without it NewSQS starts local-aws-sqs for the
// test (it needs Node and the toolkit's node_modules).
func WithSQS(client *sqs.Client) Option {
	return option{"WithSQS", "", func(c *config) { c.sqs = client }}
}

// WithPartitions sets the partitions of the mapping's topic; 1 by default. Kafka only.
func WithPartitions(n int) Option {
	return option{"WithPartitions", "Kafka", func(c *config) { c.partitions = n }}
}

// WithTopics creates more topics on the cluster, one partition each: a topic the handler
// produces to, for Kafka.Records. (A kafka:// on-failure destination's topic is created
// without it.) Kafka only.
func WithTopics(topics ...string) Option {
	return option{"WithTopics", "Kafka", func(c *config) { c.topics = append(c.topics, topics...) }}
}

// WithOnePartitionPerInvocation makes each invocation hold records of one partition only (the
// event's "records" object has one key). By default an invocation holds records of several
// partitions, as on AWS; use it to test a function that assumes one partition per event.
// Kafka only.
func WithOnePartitionPerInvocation() Option {
	return option{"WithOnePartitionPerInvocation", "Kafka", func(c *config) { c.onePartition = true }}
}

// Queue is the queue an SQS mapping reads: one the test made (URL), or one NewSQS creates.
type Queue struct {
	// URL is the queue, made by the test on WithSQS's endpoint. When empty, NewSQS creates a
	// queue called Name (DefaultQueue when empty; a name ending in ".fifo" makes a FIFO queue)
	// with Attributes.
	URL        string
	Name       string
	Attributes map[string]string // of the created queue: "VisibilityTimeout", "FifoQueue"...
	// MaxReceiveCount, when positive, gives the created queue a dead-letter queue (Name +
	// "-dlq", or before ".fifo") with this maxReceiveCount in its RedrivePolicy: SQS.DeadLetters
	// reads it.
	MaxReceiveCount int
	// DeadLetterQueueURL is the queue SQS.DeadLetters reads when the test made the queue itself.
	DeadLetterQueueURL string
}

// WithQueue sets the queue the mapping reads; by default NewSQS creates DefaultQueue, a
// standard queue. SQS only.
func WithQueue(q Queue) Option {
	return option{"WithQueue", "SQS", func(c *config) { c.queue = q }}
}
