package codec

import (
	"context"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// KafkaRecordHandler adapts fn, a function of typed records, to a batch.RecordFunc:
// each record is wrapped by d ([Deserializer.Record]) and given to fn, which decodes what it
// reads. Use it with batch.KafkaHandler and batch.ProcessKafka, and with fanout.WorkerHandler
// alike:
//
//	lambda.Start(batch.KafkaHandler(d.KafkaRecordHandler(handle), opts...))
//
// It is named for what it returns, as a conversion is: the processing is fn's, the decoding
// d's. An error of Key or Value that fn returns as it is keeps its batch.Permanent mark, so
// a record that does not decode is reported, or sent to the failure sink, alone.
//
// Each call wraps the record afresh: a retried record (batch.WithRetry) is decoded again.
// KafkaRecordHandler panics if fn is nil, as http.HandleFunc does: it is a mistake in the
// program, not in its input.
func (d *Deserializer[K, V]) KafkaRecordHandler(fn func(ctx context.Context, r *Record[K, V]) error) batch.RecordFunc {
	if fn == nil {
		panic("codec: KafkaRecordHandler with a nil function")
	}
	return func(ctx context.Context, r *kafkaevent.Record) error {
		return fn(ctx, d.Record(r))
	}
}
