package capacity

import (
	"time"

	"github.com/kafkalambda/toolkit/limits"
)

// The documented limits the model rests on. Each is cited with the page and the gist of its
// sentence; the same URL goes into the Source of every Figure and Stage that uses it. MB in
// this file is 1,000,000 bytes (AWS writes "5 MB/s" and "20 MB/s" for pollers and event poller
// units without saying which megabyte; the decimal one is the smaller throughput, so the plan
// errs on the side of more pollers); MiB is 1,048,576 bytes.

// Sources, one per page.
const (
	srcLowLatency = "https://docs.aws.amazon.com/lambda/latest/dg/with-kafka-low-latency.html: " +
		"an event poller allocates up to 5 MB/s and supports up to 5 concurrent invocations; " +
		"batch 20 at 50 ms gives 2,000 records/s per poller, 20,000 records/s needs at least 10 pollers"
	srcScalingModes = "https://docs.aws.amazon.com/lambda/latest/dg/kafka-scaling-modes.html: " +
		"each Kafka event poller handles up to 5 MB/s or up to 5 concurrent invocations; MaximumPollers " +
		"1-2,000, capped by Lambda at the number of partitions in the topic; on-demand mode: Lambda " +
		"adds or removes pollers from the offset lag, evaluated each minute"
	srcPollerConfig = "https://docs.aws.amazon.com/lambda/latest/api/API_ProvisionedPollerConfig.html: " +
		"for Amazon MSK and self-managed Apache Kafka, MinimumPollers 1-200 (default 1) and " +
		"MaximumPollers 1-2,000 (default 200); a poller group shares Event Poller Unit capacity " +
		"among up to 100 mappings whose maximum pollers add up to at most 2,000"
	srcESMConfig = "https://docs.aws.amazon.com/lambda/latest/api/API_EventSourceMappingConfiguration.html: " +
		"BatchSize 1-10,000 (100 by default for Kafka); all records of a batch go in one call, up to " +
		"the payload limit for synchronous invocation (6 MB); MaximumBatchingWindowInSeconds 0-300 " +
		"(500 ms by default for Kafka)"
	srcOnePartition = "https://docs.aws.amazon.com/lambda/latest/dg/with-msk-process.html: Lambda reads " +
		"messages sequentially for each partition (one invocation holds a partition at a time); a " +
		"payload can carry messages of several partitions"
	srcKeyConcurrency = "https://docs.aws.amazon.com/lambda/latest/dg/with-msk-process.html: Lambda reads " +
		"messages sequentially for each partition; within the invocation, batch.WithKeyConcurrency (this " +
		"toolkit's package batch) runs records of different keys at once and each key's in offset order, " +
		"so the longest same-key chain bounds the invocation (the key model: docs/plan.md)"
	srcKafkaTimeout = "https://docs.aws.amazon.com/lambda/latest/dg/with-kafka-configure.html: although " +
		"a Lambda function's timeout is at most 15 minutes, MSK and self-managed Kafka event source " +
		"mappings support only functions with a timeout of at most 14 minutes"
	srcLambdaLimits = "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html: " +
		"concurrent executions 1,000 per Region by default; function timeout at most 900 s (15 min); " +
		"memory 128-10,240 MB"
	srcSQSScaling = "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html: standard " +
		"queues: Lambda starts with 5 concurrent batches and adds up to 300 a minute; by default an " +
		"SQS mapping scales up to 1,250 concurrent instances; MaximumConcurrency (2-1,000) caps it; " +
		"FIFO: concurrent invocations are capped at the number of message group IDs or " +
		"MaximumConcurrency, whichever is lower"
	srcFIFOQuota = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html: " +
		"FIFO queues: 300 transactions per second per API action, 3,000 messages per second with " +
		"batches of 10; high throughput mode: up to 70,000 transactions per second per action in " +
		"us-east-1, us-west-2 and eu-west-1, less in other Regions; standard queues: nearly " +
		"unlimited API calls per second"
	srcSQSBatch = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-batch-api.html: " +
		"a batch action takes up to 10 messages; the messages of one SendMessageBatch total at most " +
		"1,048,576 bytes (1 MiB), the largest message"
	srcMonth = "30-day month (720 hours, 2,592,000 s), as the examples of " +
		"https://aws.amazon.com/lambda/pricing/ use (720 EPU-hours a month)"
)

const (
	// payloadBytes is the synchronous invocation payload limit, 6 MB (6,291,456 bytes), the
	// same constant the emulated mappings of package esm enforce. srcESMConfig.
	payloadBytes = limits.MaxLambdaPayloadBytes

	// pollerBytesPerSecond and invocationsPerPoller are one provisioned Kafka poller's
	// throughput and concurrent invocations. srcLowLatency, srcScalingModes.
	pollerBytesPerSecond = 5_000_000
	invocationsPerPoller = 5
	// maxPollers is MaximumPollers' upper bound, which is also a poller group's total;
	// defaultMaximumPollers its default for MSK and self-managed Kafka: "the accepted range
	// is between 1 and 2,000, with a default of 200" (API_ProvisionedPollerConfig, the Lambda
	// API reference). srcPollerConfig.
	maxPollers            = 2_000
	defaultMaximumPollers = 200
	// maxMinimumPollers is MinimumPollers' upper bound. srcPollerConfig.
	maxMinimumPollers = 200
	// epuBytesPerSecond and pollersPerEPU are one event poller unit's capacity: 20 MB/s and,
	// by default, 10 pollers (https://aws.amazon.com/lambda/pricing/, "Provisioned Mode for
	// Event Source Mapping (ESM) Pricing").
	epuBytesPerSecond = 20_000_000
	pollersPerEPU     = 10
	// pollerGroupMappings is how many mappings a poller group holds. srcPollerConfig.
	pollerGroupMappings = 100

	// Kafka mapping settings. srcESMConfig.
	defaultBatchSize = 100
	maxBatchSize     = 10_000
	defaultWindow    = 500 * time.Millisecond
	maxWindow        = 300 * time.Second

	// kafkaTimeout is the longest invocation of a Kafka mapping's function (srcKafkaTimeout),
	// lambdaTimeout that of any function, the workers' included (srcLambdaLimits).
	kafkaTimeout  = 14 * time.Minute
	lambdaTimeout = 15 * time.Minute

	// defaultConcurrency is the account's concurrent executions by default. srcLambdaLimits.
	defaultConcurrency = 1_000

	// SQS FIFO throughput: API calls per second per action, and messages per batch call.
	// srcFIFOQuota, srcSQSBatch.
	fifoCallsPerSecond = 300
	sqsBatchEntries    = 10
	// defaultHighThroughputCalls is the high-throughput FIFO quota the plan takes when the
	// Region's is not given (Fanout.FIFOCallsPerSecond): 2,400 calls per second per action, the
	// quota of the Regions with the lowest one, so that the plan does not promise more than any
	// Region gives. us-east-1, us-west-2 and eu-west-1 have 70,000. srcFIFOQuota.
	defaultHighThroughputCalls = 2_400
	// sqsMaxMessageBytes is the largest SQS message, and the largest SendMessageBatch.
	// srcSQSBatch.
	sqsMaxMessageBytes = limits.MaxSQSMessageBytes

	// The SQS mapping's scaling (standard queues): 5 concurrent batches at first, up to 300
	// more a minute (5 a second in the model), at most 1,250 by default; MaximumConcurrency
	// 2-1,000. srcSQSScaling.
	sqsStartConcurrency   = 5
	sqsRampPerSecond      = 5
	sqsMaxConcurrency     = 1_250
	minMaximumConcurrency = 2
	maxMaximumConcurrency = 1_000

	// monthSeconds and monthHours are the month of every cost. srcMonth.
	monthSeconds = 2_592_000
	monthHours   = 720

	// maxRecordAge is the longest MaximumRecordAgeInSeconds of a Kafka mapping (7 days): a
	// burst's lag that has not drained by then would have been dropped or sent to the
	// on-failure destination, so the plan stops looking. https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html.
	maxRecordAge = 604_800 * time.Second

	// Bounds of the planner's own (not AWS's): they keep every figure finite and every loop
	// short. A topic has at most 100,000 partitions here; rates from one record every 1,000
	// seconds (below it a month's figures round to nothing) up to a billion records a second.
	maxPartitions    = 100_000
	minRate          = 1e-3
	maxRate          = 1e9
	maxConcurrency   = 1_000_000
	maxGroups        = 100_000_000
	maxPPI           = 100_000
	maxWrites        = 100
	maxItemBytes     = 400 * 1024 // DynamoDB's item size limit, 400 KB
	maxEgressBytes   = 1_000_000_000
	maxPrice         = 1e6
	maxHTCallsPerSec = 1_000_000
)

// Estimates of the plan's (not documented by AWS), named so that a reader finds them.
const (
	// eventOverheadBytes is the JSON around one record's base64 value in a Kafka event (topic,
	// partition, offset, timestamp, key, headers' brackets): an estimate.
	eventOverheadBytes = 200
	// messageOverheadBytes is what package fanout adds to a record in its SQS message (the
	// kafka.record attribute with topic, partition, offset, timestamp and key): an estimate.
	messageOverheadBytes = 300
	// sqsRecordOverheadBytes is what the SQS mapping adds around one message in the workers'
	// event (messageId, receiptHandle, attributes, md5s, ARNs): an estimate.
	sqsRecordOverheadBytes = 700
	// sqsChunkBytes: every 64 KB (65,536 bytes) chunk of a request's payload is billed as one
	// request. https://aws.amazon.com/sqs/pricing/.
	sqsChunkBytes = 65_536
	// writeUnitBytes: one DynamoDB write request unit writes an item of up to 1 KB.
	// https://aws.amazon.com/dynamodb/pricing/on-demand/.
	writeUnitBytes = 1_024
)
