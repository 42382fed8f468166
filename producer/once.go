package producer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// ProduceOnce produces records with cl, the outputs of the input record src, at most once per
// input as long as store remembers it: the safe path for a function that consumes a topic and
// produces to another (consume, transform, produce).
//
//	transform := batch.KafkaHandler(func(ctx context.Context, r *kafkaevent.Record) error {
//		return producer.ProduceOnce(ctx, cl, store, r, outputs(r))
//	})
//
// Each output carries the input's identity in its [SourceHeader], so that the copies that
// remain (see below) are applied once downstream, with batch.WithIdempotencyKey([SourceKey]).
//
// A call for an input whose records were all acknowledged before (a batch delivered again
// because the function's response was lost, or a partition replayed after a later record
// failed) produces nothing and returns nil. Give it all the outputs of one input in one call,
// in an order that depends on the input only. store is any idempotency.Store: the DynamoDB
// store of package idempotency/dynamodb in a function.
//
// It sets each record's SourceHeader with SetSource (the i-th record is output i of src),
// then runs [Produce] inside idempotency.Do under the key "kafkalambda-produce:" followed by
// src's "topic/partition/offset", with the topics and keys of the records (not their values,
// which may hold a time) as the payload, and idempotency.WithoutResult, followed by opts (for
// the expiry and the key prefix: see idempotency.WithExpiry and idempotency.WithKeyPrefix;
// the defaults are one hour and the function's name). So:
//
//   - every record acknowledged: the key is completed, nil is returned;
//   - any record failed or not acknowledged by the deadline: the key is released and the error
//     names the failures (see Results.Err): the caller fails the input, and its retry
//     produces every record again, including those that landed: duplicates, with the same
//     headers;
//   - another invocation holds the key (it is producing the same input now, or died doing so
//     and its lease, which lasts until its context's deadline, has not ended):
//     idempotency.ErrInProgress, nothing produced;
//   - the key was completed with records of other topics or keys (a second call for the same
//     input, or a transform that does not route the same way twice):
//     idempotency.ErrPayloadMismatch, nothing produced, rather than a silent skip of records
//     never produced;
//   - the store fails before producing: an *idempotency.PersistenceError, nothing produced.
//
// What remains: the function can die (timeout, crash) after the acknowledgements and before
// the completion is written, or the completion write can fail. The key then stays in
// progress until its lease ends, the input is delivered again, and the retry after the lease
// produces every record again. ProduceOnce makes duplicates rare; it cannot make them
// impossible, since a Kafka acknowledgement and a DynamoDB write are not one transaction. The
// duplicates carry the same header, and a downstream consumer keyed on it with
// batch.WithIdempotencyKey(SourceKey) applies each output once.
//
// ProduceOnce changes records: it sets their header, and Produce their Context when it is
// nil. No records is not an error: nothing is produced and the store is not called. A nil
// cl, store, src or record is an error, as is an input SetSource cannot name; nothing is
// produced then. With idempotency.DisabledEnv set to a true value, idempotency.Do runs its
// function every time, and ProduceOnce produces on every call.
func ProduceOnce(ctx context.Context, cl *kgo.Client, store idempotency.Store, src *kafkaevent.Record, records []*kgo.Record, opts ...idempotency.Option) error {
	switch {
	case cl == nil:
		return errors.New("producer: ProduceOnce: nil client")
	case store == nil:
		return errors.New("producer: ProduceOnce: nil store")
	case src == nil:
		return errors.New("producer: ProduceOnce: nil input record")
	}
	if len(records) == 0 {
		return nil
	}
	for i, rec := range records {
		if rec == nil {
			return fmt.Errorf("producer: ProduceOnce: record %d is nil", i)
		}
	}
	for i, rec := range records {
		if err := SetSource(rec, src, i); err != nil {
			return err
		}
	}
	in := Source{Topic: src.Topic, Partition: src.Partition, Offset: src.Offset}
	key := "kafkalambda-produce:" + in.Topic + "/" + strconv.FormatInt(int64(in.Partition), 10) + "/" + strconv.FormatInt(in.Offset, 10)
	all := append([]idempotency.Option{idempotency.WithoutResult()}, opts...)
	_, err := idempotency.Do(ctx, store, key, routing(records), func(ctx context.Context) (struct{}, error) {
		return struct{}{}, Produce(ctx, cl, records...).Err()
	}, all...)
	if err != nil {
		return fmt.Errorf("producer: ProduceOnce for %s-%d at offset %d: %w", src.Topic, src.Partition, src.Offset, err)
	}
	return nil
}

// routing is the fingerprint of where records go: the hash of their number, topics and keys.
func routing(records []*kgo.Record) string {
	h := sha256.New()
	var n [20]byte
	for _, rec := range records {
		h.Write(strconv.AppendInt(n[:0], int64(len(rec.Topic)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(rec.Topic))
		if rec.Key == nil {
			h.Write([]byte{'-'})
		} else {
			h.Write(strconv.AppendInt(n[:0], int64(len(rec.Key)), 10))
			h.Write([]byte{':'})
			h.Write(rec.Key)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
