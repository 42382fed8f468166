// Package esm is the engine of klt local and of package esmtest: it emulates AWS Lambda event
// source mappings on local servers. A test that puts a handler behind a mapping uses
// [github.com/kafkalambda/toolkit/esm/esmtest], whose settings are named as the
// AWS::Lambda::EventSourceMapping resource names them; this package's API is what those two
// need, and nothing more.
//
// It runs a Kafka mapping (kfake or any Kafka) and an SQS mapping (local-aws-sqs or any SQS
// endpoint). Each polls its source, builds the event Lambda would send, invokes the function
// through an [Invoker], and applies the rules AWS documents to the outcome: batching,
// filtering, partial-batch responses, retries, on-failure destinations, visibility timeouts,
// FIFO group order and concurrency. klt local runs one per mapping of a SAM template. The AWS
// limits it enforces are package limits' constants.
//
// Both kinds are configured alike: the source and the function are the constructor's
// arguments, everything else is an option ([NewKafka] takes [KafkaOption] values, [NewSQS]
// [SQSOption] values). A setting both kinds have is one [Option] under one name for both
// ([WithName], [WithBatchSize], [WithBatchingWindow], [WithFilter],
// [WithReportBatchItemFailures]); the defaults and limits that differ between the kinds are
// stated on each option. The constructors check every option before they connect to
// anything and report all bad values at once, one [*toolkit.OptionError] each:
//
//	k, err := esm.NewKafka(brokers, "orders", fn, esm.WithBatchSize(50), esm.WithReportBatchItemFailures())
//	q, err := esm.NewSQS(ctx, client, queueURL, fn, esm.WithBatchSize(50), esm.WithBatchingWindow(time.Second))
//
// A Kafka mapping invokes with records of several partitions at once, as AWS does (see
// [Kafka]); [WithOnePartitionPerInvocation] gives each invocation one partition.
//
// A mapping shows its progress three ways: [Counters], running totals per record (In,
// Filtered, Delivered, Succeeded, DeadLettered, ...); an [Observer] ([WithObserver]) that
// sees each step of every record; and [Kafka.Metrics] and [SQS.Metrics], the CloudWatch
// metrics of the groups a MetricsConfig enables ([WithMetricsConfig]).
//
// Each rule has a conformance test that quotes the sentence of the AWS documentation it
// follows. Where the documentation is silent, the package says what it does and why.
package esm

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/kafkalambda/toolkit/limits"
)

// Response is the outcome of one synchronous invocation.
type Response struct {
	// Payload is the function's response (on success; empty when Err is set).
	Payload []byte
	// Err is set when the invocation failed: the function returned an error or panicked,
	// timed out, its process crashed, or its response was over [limits.MaxLambdaResponseBytes]. A mapping
	// treats each as a failed batch.
	Err *InvokeError
}

// InvokeError is a failed invocation, as Lambda reports it to an event source mapping.
type InvokeError struct {
	Type    string // errorType, e.g. "errorString", "Sandbox.Timedout", "Runtime.ExitError"
	Message string // errorMessage
}

func (e *InvokeError) Error() string { return fmt.Sprintf("%s: %s", e.Type, e.Message) }

// ResponseTooLarge is the error Lambda reports for a response of n bytes, over
// [limits.MaxLambdaResponseBytes]: type "Function.ResponseSizeTooLarge", message "Response payload size (n
// bytes) exceeded maximum allowed payload size (6291556 bytes).", the runtime interface
// emulator's text (reference/lambda-local.md §1, "Payload limits").
func ResponseTooLarge(n int64) *InvokeError {
	return &InvokeError{
		Type:    "Function.ResponseSizeTooLarge",
		Message: fmt.Sprintf("Response payload size (%d bytes) exceeded maximum allowed payload size (%d bytes).", n, limits.MaxLambdaResponseBytes),
	}
}

// invoke calls fn with payload; a response over limits.MaxLambdaResponseBytes is the failed invocation
// Lambda makes of it, whatever the Invoker passed on.
func invoke(ctx context.Context, fn Invoker, payload []byte) (Response, error) {
	resp, err := fn.Invoke(ctx, payload)
	if err == nil && resp.Err == nil && len(resp.Payload) > limits.MaxLambdaResponseBytes {
		resp = Response{Err: ResponseTooLarge(int64(len(resp.Payload)))}
	}
	return resp, err
}

// Invoker invokes a function synchronously with payload, the JSON event. An error (rather
// than a Response.Err) means no invocation could be made, say because the emulator is
// shutting down; a mapping stops on it.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) (Response, error)
}

// InvokerFunc adapts a function to an Invoker.
type InvokerFunc func(ctx context.Context, payload []byte) (Response, error)

// Invoke calls f.
func (f InvokerFunc) Invoke(ctx context.Context, payload []byte) (Response, error) {
	return f(ctx, payload)
}

// Counters are a mapping's running totals, read at any time (progress lines, the report's
// time series). All counts are of records (Kafka) or messages (SQS), not of batches. Each
// record taken from the source ends as exactly one of Filtered, Succeeded or DeadLettered,
// or is still on its way (in flight, waiting for a retry, or not yet delivered): In =
// Filtered + Succeeded + DeadLettered + what is still on its way.
type Counters struct {
	In             atomic.Int64 // taken from the source
	Filtered       atomic.Int64 // dropped by FilterCriteria, never delivered: counted once committed (Kafka) or deleted (SQS)
	Delivered      atomic.Int64 // deliveries: each record once per invocation that carried it
	InFlight       atomic.Int64 // in an invocation right now
	Succeeded      atomic.Int64 // done, each record once: its invocation succeeded for it, and it was committed or deleted
	ReportedFailed atomic.Int64 // deliveries the function's partial batch response failed (Kafka: the offsets from the lowest one reported)
	ErrorFailed    atomic.Int64 // deliveries in an invocation that failed as a whole (function error, timeout, crash, bad response)
	Retried        atomic.Int64 // deliveries of a record after its first: Delivered minus the records delivered at least once
	DeadLettered   atomic.Int64 // given up on: sent to the on-failure destination or, without one, dropped and committed (Kafka); moved to the dead-letter queue (SQS, as far as the mapping can tell: see [SQS.Counters])
	Invocations    atomic.Int64 // invocations made
	Errors         atomic.Int64 // invocations that failed as a whole
	Lag            atomic.Int64 // records in the source not yet delivered (Kafka: high watermark minus the next offset to deliver, per partition; SQS: messages visible in the queue)
}

// Snapshot is a copy of Counters at one moment.
type Snapshot struct {
	In, Filtered, Delivered, InFlight, Succeeded, ReportedFailed, ErrorFailed, Retried, DeadLettered, Invocations, Errors, Lag int64
}

// Snapshot returns the counters' current values.
func (c *Counters) Snapshot() Snapshot {
	return Snapshot{
		In: c.In.Load(), Filtered: c.Filtered.Load(), Delivered: c.Delivered.Load(), InFlight: c.InFlight.Load(),
		Succeeded: c.Succeeded.Load(), ReportedFailed: c.ReportedFailed.Load(), ErrorFailed: c.ErrorFailed.Load(),
		Retried: c.Retried.Load(), DeadLettered: c.DeadLettered.Load(), Invocations: c.Invocations.Load(),
		Errors: c.Errors.Load(), Lag: c.Lag.Load(),
	}
}
