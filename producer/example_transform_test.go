package producer_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/producer"
)

// The consumer downstream of a transform keys its idempotency on the source header, so that
// two copies of one output (the transform produced it twice: it died before it could record
// that it had) are applied once. A record without the header fails: it is never applied
// without its key.
func ExampleSourceKey() {
	from := func(source string) kafkaeventtest.RecordOption {
		return kafkaeventtest.WithHeader(producer.SourceHeader, []byte(source))
	}
	payments := kafkaeventtest.NewBuilder().
		Add("payments", 0, []byte("pay order 1"), kafkaeventtest.WithOffset(7), from("orders/0/0/0")).
		Add("payments", 0, []byte("pay order 2"), kafkaeventtest.WithOffset(8), from("orders/0/1/0")).
		Add("payments", 0, []byte("pay order 1"), kafkaeventtest.WithOffset(9), from("orders/0/0/0")). // the copy
		Add("payments", 1, []byte("pay order 9")).                                                     // no header
		Event()

	apply := func(ctx context.Context, r *kafkaevent.Record) error {
		fmt.Printf("applied %s (offset %d)\n", r.Value, r.Offset)
		return nil
	}
	resp, err := batch.ProcessKafka(context.Background(), payments, apply,
		batch.WithIdempotency(idempotencytest.NewStore()), // in Lambda: dynamodb.NewStore
		batch.WithIdempotencyKey(producer.SourceKey),
		batch.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range resp.BatchItemFailures {
		fmt.Printf("failed: %s at %d\n", f.ItemIdentifier.Partition, f.ItemIdentifier.Offset)
	}
	// Output:
	// applied pay order 1 (offset 7)
	// applied pay order 2 (offset 8)
	// failed: payments-1 at 0
}
