package codec

import (
	"context"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// Handler adapts fn, a handler of typed records, to a batch.KafkaRecordHandler: each record
// is wrapped by d ([Deserializer.Record]) and given to fn, which decodes what it reads. Use it
// with batch.KafkaHandler and batch.ProcessKafka, and with fanout.WorkerHandler alike. An error
// of Key or Value that fn returns as it is keeps its batch.Permanent mark, so a record that
// does not decode is reported, or sent to the failure sink, alone.
//
// Each call wraps the record afresh: a retried record (batch.WithRetry) is decoded again.
// Handler panics if d or fn is nil.
func Handler[K, V any](d *Deserializer[K, V], fn func(ctx context.Context, r *Record[K, V]) error) batch.KafkaRecordHandler {
	if d == nil || fn == nil {
		panic("codec: Handler with a nil Deserializer or function")
	}
	return func(ctx context.Context, r *kafkaevent.Record) error {
		return fn(ctx, d.Record(r))
	}
}
