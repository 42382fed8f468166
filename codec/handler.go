package codec

import (
	"context"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// RecordFunc processes one typed record: it reads what it needs with [Record.Key] and
// [Record.Value] and returns nil when the record is done. [Deserializer.Func] adapts it to the
// per-record function of package batch.
type RecordFunc[K, V any] func(ctx context.Context, r *Record[K, V]) error

// Func adapts fn, a function of typed records, to a function of *kafkaevent.Record, the
// per-record function of package batch (batch.RecordFunc): each record is wrapped by d
// ([Deserializer.Record]) and given to fn, which decodes what it reads. Use it with
// batch.KafkaHandler and batch.ProcessKafka, and with fanout.WorkerHandler alike:
//
//	lambda.Start(batch.KafkaHandler(d.Func(handle), opts...))
//
// The processing is fn's, the decoding d's. An error of Key or Value that fn returns as it
// is keeps its [DecodeError.Permanent] answer, so a record that does not decode is reported,
// or sent to the failure sink, alone.
//
// Each call wraps the record afresh: a retried record (batch.WithRetry) is decoded again.
// Func panics if fn is nil, as http.HandleFunc does: it is a mistake in the program, not in
// its input.
func (d *Deserializer[K, V]) Func(fn RecordFunc[K, V]) func(context.Context, *kafkaevent.Record) error {
	if fn == nil {
		panic("codec: Func with a nil function")
	}
	return func(ctx context.Context, r *kafkaevent.Record) error {
		return fn(ctx, d.Record(r))
	}
}
