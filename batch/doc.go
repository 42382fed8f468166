// Package batch processes the records of a Kafka or SQS batch one by one and returns the
// partial-batch response, so that one bad record does not make Lambda retry the whole batch.
//
// By default a Kafka event source mapping retries a whole batch until it succeeds or its
// records expire: one record that always fails stalls its partition. With
// FunctionResponseTypes ReportBatchItemFailures, a function can report just the records that
// failed. [ProcessKafka] does that:
//
//	func handle(ctx context.Context, ev *kafkaevent.Event) (batch.KafkaResponse, error) {
//		return batch.ProcessKafka(ctx, ev, func(ctx context.Context, r *kafkaevent.Record) error {
//			return save(ctx, r.Value)
//		})
//	}
//
// It keeps the guarantees a Kafka consumer relies on: the records of a partition are handled
// strictly in order, and when one fails, it and every later record of its partition are
// reported, so that they come back in order; other partitions, processed in parallel, go on.
// Errors are retried inside the invocation with backoff (WithRetry), except those marked
// [Permanent] and panics. Near the deadline no record is started and the handler's context is
// cancelled, so the response goes out before Lambda's timeout.
//
// [ProcessSQS] does the same for SQS: standard queues in parallel, FIFO queues in order per
// message group. [WithFilter] skips records the FilterCriteria do not match; [WithIdempotency]
// skips records already handled.
package batch
