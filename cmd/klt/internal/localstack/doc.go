// Package localstack runs a SAM stack on this machine for "klt local": Kafka (kfake), DynamoDB
// (dynalite) and SQS (local-aws-sqs) with the template's tables, queues and topics; each
// function an event source mapping invokes, built and run under the Lambda Runtime API; the
// mappings themselves, emulated by package esm. With --load it produces records, follows every
// record's fate through each pipeline, and writes the report (package localreport).
package localstack
