package fanout

import (
	"context"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// WorkerHandler returns the Lambda handler of a worker: a function behind an SQS event source
// mapping (with ReportBatchItemFailures) on the queue a [Dispatcher] sends to. It rebuilds the
// Kafka record each message carries ([ReadRecord]) and runs h on it: the handler code that would
// run on the Kafka event source mapping itself, with batch.ProcessKafka, runs unchanged behind
// the queue:
//
//	lambda.Start(fanout.WorkerHandler(handle, batch.WithIdempotency(store)))
//
// Each batch is processed by batch.ProcessSQS with opts: messages of a standard queue in
// parallel, those of a FIFO queue in order within each message group (so per key, in Kafka
// order, with the Dispatcher's default groups); when a message fails, it and the later
// messages of its group are reported in the partial-batch response, by message ID. Retries,
// the deadline margin, the sink, hooks, logs and metrics work as in batch.
//
// A message that does not carry a record in this package's format (ReadRecord fails) is a failed
// message, never a dropped one: its handler is not called, it fails as batch.Permanent with
// the *DecodeError (logged, reported, and given to the sink of batch.WithSink under either
// policy), and its group stops there.
//
// Under batch.WithIdempotency a message is keyed on the record it carries, never on its
// message ID: on idempotency.KafkaKey(r), the record's topic, partition and offset, or on the
// function of batch.WithIdempotencyKey (a business key). A record the dispatcher sent twice
// (a Kafka batch retried after a partial failure, or a standard queue's duplicate delivery)
// arrives in two messages with two IDs, and is handled once. WorkerHandler does this by
// adding batch.WithSQSKafkaRecord to opts.
//
// batch.WithFilter takes the criteria of the worker's own (SQS) event source mapping, with
// patterns on body, as batch.ProcessSQS does: the body is the record's value when the value
// is text, so a Kafka pattern on value works as the same pattern on body.
//
// The handler is a batch.SQSFunc, which implements lambda.Handler: Invoke decodes the
// payload's bytes straight into an events.SQSEvent and writes the partial-batch response.
// The options are checked here, once, as by batch.SQSHandler: with an option given an invalid
// value, every invocation fails with batch's error for it.
func WorkerHandler(h batch.RecordFunc, opts ...batch.Option) batch.SQSFunc {
	w := &worker{h: h}
	all := make([]batch.Option, 0, len(opts)+1)
	all = append(append(all, opts...), batch.WithSQSKafkaRecord(w.record))
	process := batch.SQSHandler(w.handle, all...) // checks the options, once
	return func(ctx context.Context, ev *events.SQSEvent) (events.SQSEventResponse, error) {
		// Each message is decoded once, up front: the idempotency key and the handler both
		// need its record. ProcessSQS hands out pointers into ev.Records, so they find it by
		// pointer; concurrent invocations have messages of their own.
		for i := range ev.Records {
			r, err := ReadRecord(&ev.Records[i])
			w.recs.Store(&ev.Records[i], decoded{r, err})
		}
		defer func() {
			for i := range ev.Records {
				w.recs.Delete(&ev.Records[i])
			}
		}()
		return process(ctx, ev)
	}
}

// worker is the state of a WorkerHandler: the handler, and the records of the messages of
// the invocations under way.
type worker struct {
	h    batch.RecordFunc
	recs sync.Map // *events.SQSMessage -> decoded
}

// decoded is a message's record, or why it has none.
type decoded struct {
	r   *kafkaevent.Record
	err error
}

// record is the record m carries, for batch.WithSQSKafkaRecord.
func (w *worker) record(m *events.SQSMessage) (*kafkaevent.Record, error) {
	d, ok := w.recs.Load(m)
	if !ok { // not a message of an invocation under way (a handler left running): decode it now
		return ReadRecord(m)
	}
	return d.(decoded).r, d.(decoded).err
}

// handle runs the handler on the record m carries; a message without one fails, permanently.
func (w *worker) handle(ctx context.Context, m *events.SQSMessage) error {
	r, err := w.record(m)
	if err != nil {
		return batch.Permanent(err)
	}
	return w.h(ctx, r)
}
