package esm

import "github.com/kafkalambda/toolkit/limits"

// sqsConfig holds an SQS mapping's settings.
type sqsConfig struct {
	mappingConfig
	queueARN       string
	maxConcurrency int
}

// WithQueueARN sets the queue's ARN, the eventSourceARN of each record (whose fourth field
// gives awsRegion). By default NewSQS reads it from the queue's QueueArn attribute.
func WithQueueARN(arn string) SQSOption {
	return sqsOption(func(c *sqsConfig) { c.queueARN = arn })
}

// WithMaximumConcurrency sets ScalingConfig.MaximumConcurrency: 2 to [limits.MaxSQSConcurrency]. By
// default there is none, and the mapping scales up to limits.MaxSQSConcurrency.
func WithMaximumConcurrency(n int) SQSOption {
	return sqsOption(func(c *sqsConfig) {
		if n < 2 || n > limits.MaxSQSConcurrency {
			c.reject("WithMaximumConcurrency", "%d: want 2 to %d", n, limits.MaxSQSConcurrency)
		}
		c.maxConcurrency = n
	})
}
