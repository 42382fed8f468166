package limits

import "time"

// The limits of an event source mapping's settings (AWS::Lambda::EventSourceMapping), as the
// Lambda API reference states them
// (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html).

// MaxKafkaBatchSize is the largest BatchSize of an Amazon MSK or self-managed Kafka mapping.
// AWS: "Amazon Managed Streaming for Apache Kafka – Default 100. Max 10,000."
// (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html#lambda-CreateEventSourceMapping-request-BatchSize).
const MaxKafkaBatchSize = 10_000

// MaxSQSBatchSize is the largest BatchSize of a standard queue's mapping; above 10 it needs
// a batching window of at least one second. AWS: "Amazon Simple Queue Service – Default 10.
// For standard queues the max is 10,000. For FIFO queues the max is 10."
// (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html#lambda-CreateEventSourceMapping-request-BatchSize).
const MaxSQSBatchSize = 10_000

// MaxSQSFIFOBatchSize is the largest BatchSize of a FIFO queue's mapping (same page as
// [MaxSQSBatchSize]).
const MaxSQSFIFOBatchSize = 10

// MaxBatchingWindow is the largest MaximumBatchingWindowInSeconds, 300 seconds. AWS: "You can
// configure MaximumBatchingWindowInSeconds to any value from 0 seconds to 300 seconds in
// increments of seconds."
// (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html#lambda-CreateEventSourceMapping-request-MaximumBatchingWindowInSeconds).
const MaxBatchingWindow = 300 * time.Second

// MaxRetryAttempts is the largest MaximumRetryAttempts (-1, infinite, is the default). AWS:
// "Minimum value of -1. Maximum value of 10000."
// (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html#lambda-CreateEventSourceMapping-request-MaximumRetryAttempts).
const MaxRetryAttempts = 10_000

// MaxRecordAge is the largest MaximumRecordAgeInSeconds, 7 days. AWS: "Minimum value of -1.
// Maximum value of 604800."
// (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html#lambda-CreateEventSourceMapping-request-MaximumRecordAgeInSeconds).
const MaxRecordAge = 604_800 * time.Second

// MaxPollers is the largest ProvisionedPollerConfig.MaximumPollers of a Kafka mapping in
// provisioned mode. AWS: "Valid Range: Minimum value of 1. Maximum value of 2000."
// (https://docs.aws.amazon.com/lambda/latest/api/API_ProvisionedPollerConfig.html).
const MaxPollers = 2_000

// MaxSQSConcurrency is the most concurrent invocations one SQS mapping makes: the largest
// ScalingConfig.MaximumConcurrency, and the cap without one. AWS: "Minimum value of 2.
// Maximum value of 1000."
// (https://docs.aws.amazon.com/lambda/latest/api/API_ScalingConfig.html).
const MaxSQSConcurrency = 1_000
