package limits

// MaxSQSMessageBytes is the largest SQS message, its body and its message attributes (each
// attribute's name, data type and value) together: 1 MiB (1,048,576 bytes), the most a
// queue's MaximumMessageSize can be. See
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html
const MaxSQSMessageBytes = 1 << 20

// MaxSQSBatchEntries is the most entries one SendMessageBatch call takes: 10. See
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessageBatch.html
const MaxSQSBatchEntries = 10

// MaxSQSBatchBytes is the most bytes one SendMessageBatch call takes, the sum of its entries'
// sizes counted as for a single message (body and message attributes): 1 MiB (1,048,576
// bytes). See
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessageBatch.html
const MaxSQSBatchBytes = 1 << 20
