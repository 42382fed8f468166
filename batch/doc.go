// Package batch processes the records of a Kafka or SQS batch one by one and returns the
// partial-batch response, so that one bad record does not make Lambda retry the whole batch.
//
// By default a Kafka event source mapping retries a whole batch until it succeeds or its
// records expire: one record that always fails stalls its partition. With
// FunctionResponseTypes ReportBatchItemFailures, a function reports just the records that
// failed. A function gives [KafkaHandler] its record handler and hands the result to
// lambda.Start:
//
//	func main() {
//		lambda.Start(batch.KafkaHandler(func(ctx context.Context, r *kafkaevent.Record) error {
//			var o Order
//			if err := json.Unmarshal(r.Value, &o); err != nil {
//				return batch.Permanent(err) // retrying will not help
//			}
//			return save(ctx, o) // an error is retried, then reported
//		}))
//	}
//
// KafkaHandler returns a [KafkaFunc], which implements lambda.Handler: lambda.Start then
// gives it the payload's bytes, which go straight to kafkaevent.Parse, without the pass
// encoding/json would make over the whole batch first. [ProcessKafka] does the same work on an
// event already parsed, and [SQSHandler] and [ProcessSQS] on SQS batches.
//
// # Order and failures
//
// The records of a partition are handled strictly in order, one at a time; partitions are
// processed in parallel ([WithConcurrency] bounds how many at once). When a record fails, it
// and every later record of its partition are reported, so that they come back in order;
// the other partitions go on. A record fails when its handler returns an error on every
// attempt ([WithRetry]: 3 attempts with backoff by default), at once when the error is
// marked [Permanent] or the handler panics ([PanicError]), and without a call when its
// Record.Err is set (a field that did not decode). Near the function's deadline
// ([WithDeadlineMargin]) no record is started and the handler's context is cancelled, so the
// response goes out before Lambda's timeout; the records not started fail with [ErrDeadline].
//
// SQS works alike: messages of a standard queue in parallel, those of a FIFO queue in order
// within each message group.
//
// # Seeing failures
//
// Each failed record is logged, one line at level Error ("record failed") with where it is
// (partition and offset, or message ID and group), its attempts, whether it was permanent or
// went to the sink, how many records the response reports because of it, and the error; a
// panic's stack is in its own attribute. Keys, values and bodies are never logged. Each batch
// ends with one summary line ("batch processed") of counts. [WithLogger] chooses the logger.
//
// [WithHooks] adds hooks: a [FailureHook] sees each failure as a [Failure], and the tracing
// adapters (packages xraytrace and oteltrace) are [BatchHook], [GroupHook] and [RecordHook]
// values. [WithMetrics] writes CloudWatch Embedded Metric Format counts, off by default
// because custom metrics cost money.
//
// # Options
//
// [WithSink] sends the records that cannot succeed to a failure destination ([NewSQSSink],
// [NewKafkaSink], or any [Sink]) so that their partition moves on; [ReadEnvelope] reads what
// it wrote back. [WithFilter] skips the records FilterCriteria do not match, as the event
// source mapping would, and fails those it cannot decide on. [WithIdempotency] skips the
// records already handled by an earlier delivery. An option given an invalid value makes
// every batch fail with [ErrInvalidOption].
package batch
