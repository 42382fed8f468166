package fanout

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// WorkerHandler returns the Lambda handler of a worker: a function behind an SQS event source
// mapping (with ReportBatchItemFailures) on the queue a [Dispatcher] sends to. It rebuilds the
// Kafka record each message carries ([Record]) and runs h on it: the handler code that would
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
// A message that does not carry a record in this package's format (Record fails) is a failed
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
func WorkerHandler(h batch.KafkaRecordHandler, opts ...batch.Option) WorkerFunc {
	return func(ctx context.Context, ev *events.SQSEvent) (events.SQSEventResponse, error) {
		return work(ctx, ev, h, opts)
	}
}

// WorkerFunc is the Lambda handler of a worker, made by [WorkerHandler]. It can be called on
// an events.SQSEvent, and implements lambda.Handler, which lambda.Start prefers: Invoke
// decodes the payload's bytes straight into an events.SQSEvent, as batch.SQSFunc does,
// without encoding/json's pass over the whole batch, and writes the partial-batch response.
type WorkerFunc func(ctx context.Context, ev *events.SQSEvent) (events.SQSEventResponse, error)

// Invoke implements lambda.Handler.
func (f WorkerFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return batch.SQSFunc(f).Invoke(ctx, payload)
}

// decoded is a message's record, or why it has none.
type decoded struct {
	r   *kafkaevent.Record
	err error
}

func work(ctx context.Context, ev *events.SQSEvent, h batch.KafkaRecordHandler, opts []batch.Option) (events.SQSEventResponse, error) {
	// Each message is decoded once, up front: the idempotency key and the handler both need
	// its record. ProcessSQS hands out pointers into ev.Records, so they find it by pointer.
	recs := make(map[*events.SQSMessage]decoded, len(ev.Records))
	for i := range ev.Records {
		r, err := Record(ev.Records[i])
		recs[&ev.Records[i]] = decoded{r, err}
	}
	record := func(m *events.SQSMessage) (*kafkaevent.Record, error) {
		d, ok := recs[m]
		if !ok { // not a message of this event: decode it now
			return Record(*m)
		}
		return d.r, d.err
	}
	handle := func(ctx context.Context, m *events.SQSMessage) error {
		r, err := record(m)
		if err != nil {
			return batch.Permanent(err)
		}
		return h(ctx, r)
	}
	all := make([]batch.Option, 0, len(opts)+1)
	all = append(append(all, opts...), batch.WithSQSKafkaRecord(record))
	return batch.ProcessSQS(ctx, ev, handle, all...)
}
