package batch

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// Hook is a value that implements one or more of the hook interfaces of this package:
// [BatchHook], [GroupHook], [RecordHook] and [FailureHook]. Pass hooks with [WithHooks]; each
// is called for the events whose interface it implements, as franz-go's kgo.WithHooks does.
// Tracing adapters are hooks: package xraytrace records X-Ray subsegments and package
// oteltrace OpenTelemetry spans, so that this package links no tracing SDK itself.
//
// Hooks run on the processing goroutines: GroupHook and RecordHook methods of different groups
// run concurrently, so a hook must be safe for concurrent use. A hook must not block: it runs
// inside the function's time budget. A hook's panic fails the record in hand, or the
// invocation where there is none (see the package documentation, "Panics"); it never ends
// the process.
type Hook any

// BatchHook is called once per batch, around everything else.
type BatchHook interface {
	// OnBatchStart is called before any record is processed. The context it returns is the
	// parent of every group's context (a tracing hook returns one that carries its span).
	OnBatchStart(ctx context.Context, b *BatchInfo) context.Context
	// OnBatchEnd is called after the last record, with the batch's outcome.
	OnBatchEnd(ctx context.Context, b *BatchInfo, r *BatchResult)
}

// GroupHook is called around each unit processed in order: a Kafka partition, an SQS FIFO
// message group, or a single message of a standard queue; with WithKeyConcurrency, the
// records of one key within a Kafka partition (see the package documentation, "Key
// concurrency").
type GroupHook interface {
	// OnGroupStart is called before the group's first record; the context it returns is
	// passed to the group's records.
	OnGroupStart(ctx context.Context, g *GroupInfo) context.Context
	// OnGroupEnd is called after the group's last record was processed or reported;
	// reported is the number of its records in the response: a failed record the sink did
	// not take, and the records after it (BatchResult.Reported, for one group).
	OnGroupEnd(ctx context.Context, g *GroupInfo, reported int)
}

// RecordHook is called around each record the handler is given (not around records that
// are filtered out, skipped after a failure, or carry a decode error). A tracing hook uses
// it to continue the trace context a producer wrote into the record's headers.
type RecordHook interface {
	// OnRecordStart is called before the first attempt; the context it returns is the
	// handler's.
	OnRecordStart(ctx context.Context, it *Item) context.Context
	// OnRecordEnd is called after the last attempt, with its error (nil on success).
	OnRecordEnd(ctx context.Context, it *Item, err error)
}

// FailureHook is called once for each record that failed: reported to Lambda as a batch item
// failure, or sent to the failure destination. Records reported only because an earlier
// record of their partition or message group failed are not failures of their own and do not
// call it: the earlier record's Failure counts them in Reported.
type FailureHook interface {
	// OnFailure is called with the group's context (carrying the record's correlation ID
	// under WithCorrelationIDFrom), after the record's last attempt and
	// after the sink, if any, took it or refused it. f is not used after OnFailure returns.
	OnFailure(ctx context.Context, f *Failure)
}

// BatchInfo describes a batch to hooks.
type BatchInfo struct {
	Source  string // "kafka" or "sqs"
	Records int    // records (or messages) in the batch
	Groups  int    // partitions, FIFO message groups, or standard-queue messages
}

// BatchResult is the outcome of a batch, with the counts of the summary log line ("batch
// processed") and of the metrics (WithMetrics), field for field. Every record of the batch
// is processed, filtered, failed, or held behind a failed record of its partition or
// message group: Records = Processed + Filtered + Failed + (Reported - Failed + SentToSink).
type BatchResult struct {
	// Processed is the records handled successfully, now or by an earlier delivery
	// (Replayed), including those whose completion could not be stored (NotRecorded).
	Processed int
	// Failed is the records whose handling failed, each with its one "record failed" line
	// and FailureHook call: the handler's error, a panic, a decode error, the filter's or the
	// idempotency store's error, the deadline. A failed record is then sent to the sink
	// (SentToSink) or reported for redelivery.
	Failed int
	// Reported is the records the response reports for redelivery: the failed records the
	// sink did not take, and the later records of their partitions or message groups, which
	// were not handled. It is len(BatchItemFailures).
	Reported int
	// Filtered is the records skipped because the filter criteria do not match them.
	Filtered int
	// SentToSink is the failed records the sink took: their partitions moved on.
	SentToSink int
	// Replayed is the processed records that idempotency skipped as already done.
	Replayed int
	// NotRecorded is the processed records whose completion the idempotency store could not
	// store (idempotency.ErrNotRecorded), each with its "record completion not stored" line.
	// They are not reported: their effect has happened, and their key stays in progress while
	// the completion is retried in the background.
	NotRecorded int
}

// GroupInfo describes a unit processed in order to hooks.
type GroupInfo struct {
	Source string // "kafka" or "sqs"
	// ID is the Kafka partition key ("topic-N", as Lambda keyed it), the SQS MessageGroupId,
	// or, on a standard queue, the message ID.
	ID string
	// Partition is the Kafka partition (nil for SQS).
	Partition *kafkaevent.Partition
	// Messages are the SQS messages of the group, in order (nil for Kafka).
	Messages []*events.SQSMessage
}

// Item is one record or message: exactly one of Kafka and SQS is set.
type Item struct {
	Kafka *kafkaevent.Record
	SQS   *events.SQSMessage
}

// Failure is what is known of a failed record: given to each [FailureHook], and logged, one
// line per failed record, as "record failed" with the attributes source, partition and
// offset (Kafka) or messageId and messageGroup (SQS), attempts, permanent, sentToSink,
// reported, error, and sinkError and stack when there are.
type Failure struct {
	Item
	// Group is the ID of the record's group, as in GroupInfo.ID.
	Group string
	// Err is why it failed: the handler's last error, a *PanicError, the record's decode
	// error, ErrDeadline, the filter's error (filter.ErrTooComplex), or the idempotency
	// store's (idempotency.ErrInProgress, *idempotency.PersistenceError).
	Err error
	// Attempts is the number of handler calls made: 0 when the handler never ran.
	Attempts int
	// Permanent reports whether the error was not retried (Permanent, a panic, a decode
	// error, the filter's error).
	Permanent bool
	// SentToSink reports whether the record went to the failure destination instead of
	// being reported to Lambda.
	SentToSink bool
	// SinkErr is the failure destination's error when it refused the record, which was then
	// reported to Lambda instead.
	SinkErr error
	// Reported is the number of records the response reports because of this failure: the
	// record and every later record of its partition or FIFO message group (1 on a standard
	// queue), or 0 when the record went to the failure destination.
	Reported int
}

// WithHooks adds hooks; see [Hook]. Hooks given in several WithHooks options add up, and are
// called in the order given. Each hook must implement at least one of the hook interfaces.
// By default there are none.
func WithHooks(hooks ...Hook) Option {
	return func(c *config) {
		for i, h := range hooks {
			switch h.(type) {
			case BatchHook, GroupHook, RecordHook, FailureHook:
			default:
				c.invalid("WithHooks: hook %d (%T) implements none of BatchHook, GroupHook, RecordHook and FailureHook", i, h)
				continue
			}
			if h, ok := h.(BatchHook); ok {
				c.hooks.batch = append(c.hooks.batch, h)
			}
			if h, ok := h.(GroupHook); ok {
				c.hooks.group = append(c.hooks.group, h)
			}
			if h, ok := h.(RecordHook); ok {
				c.hooks.record = append(c.hooks.record, h)
			}
			if h, ok := h.(FailureHook); ok {
				c.hooks.failure = append(c.hooks.failure, h)
			}
		}
	}
}

// hooks are the hooks of a config, sorted by interface, so that the hot path tests a length.
type hooks struct {
	batch   []BatchHook
	group   []GroupHook
	record  []RecordHook
	failure []FailureHook
}

// Each call of a hook goes through guard: a hook's panic comes back as a *PanicError. A start
// hook that panics stops the chain (the context it should have returned is unknown); an end
// hook's panic does not keep the later hooks from their call, and the first panic is returned.

func (h *hooks) batchStart(ctx context.Context, b *BatchInfo) (context.Context, *PanicError) {
	for _, x := range h.batch {
		if pe := guard("OnBatchStart", func() { ctx = x.OnBatchStart(ctx, b) }); pe != nil {
			return ctx, pe
		}
	}
	return ctx, nil
}

func (h *hooks) batchEnd(ctx context.Context, b *BatchInfo, r *BatchResult) (first *PanicError) {
	for _, x := range h.batch {
		if pe := guard("OnBatchEnd", func() { x.OnBatchEnd(ctx, b, r) }); pe != nil && first == nil {
			first = pe
		}
	}
	return first
}

func (h *hooks) groupStart(ctx context.Context, g *GroupInfo) (context.Context, *PanicError) {
	for _, x := range h.group {
		if pe := guard("OnGroupStart", func() { ctx = x.OnGroupStart(ctx, g) }); pe != nil {
			return ctx, pe
		}
	}
	return ctx, nil
}

func (h *hooks) groupEnd(ctx context.Context, g *GroupInfo, reported int) (first *PanicError) {
	for _, x := range h.group {
		if pe := guard("OnGroupEnd", func() { x.OnGroupEnd(ctx, g, reported) }); pe != nil && first == nil {
			first = pe
		}
	}
	return first
}

func (h *hooks) recordStart(ctx context.Context, it *Item) (context.Context, *PanicError) {
	for _, x := range h.record {
		if pe := guard("OnRecordStart", func() { ctx = x.OnRecordStart(ctx, it) }); pe != nil {
			return ctx, pe
		}
	}
	return ctx, nil
}

func (h *hooks) recordEnd(ctx context.Context, it *Item, err error) (first *PanicError) {
	for _, x := range h.record {
		if pe := guard("OnRecordEnd", func() { x.OnRecordEnd(ctx, it, err) }); pe != nil && first == nil {
			first = pe
		}
	}
	return first
}

func (h *hooks) onFailure(ctx context.Context, f *Failure) (first *PanicError) {
	for _, x := range h.failure {
		if pe := guard("OnFailure", func() { x.OnFailure(ctx, f) }); pe != nil && first == nil {
			first = pe
		}
	}
	return first
}
