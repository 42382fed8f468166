// Package producer configures franz-go's kgo for Amazon MSK and produces from AWS Lambda.
package producer
