// Command worker is WorkerFunction in template.yaml: SQS FIFO -> Lambda, behind
// samples/dispatcher. It runs the handler that would run on the Kafka event source mapping,
// unchanged, on the Kafka record each message carries: each message group (a Kafka key) in
// order, each record applied once however often it was dispatched (idempotency on DynamoDB,
// keyed on the record's topic, partition and offset, not the message ID).
//
// Environment: IDEMPOTENCY_TABLE.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

func main() {
	h, err := newHandler(context.Background(), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// newHandler makes the DynamoDB client once, outside the handler, and returns the handler;
// logs go to out.
func newHandler(ctx context.Context, out io.Writer) (fanout.WorkerFunc, error) {
	table := os.Getenv("IDEMPOTENCY_TABLE")
	if table == "" {
		return nil, fmt.Errorf("environment variable IDEMPOTENCY_TABLE is required (template.yaml sets it)")
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewJSONHandler(out, nil))
	return fanout.WorkerHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		return handle(ctx, log, r)
	},
		batch.WithIdempotency(idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), table)),
		batch.WithLogger(log)), nil
}

// Order is what the orders topic carries.
type Order struct {
	OrderID  int64   `json:"orderId"`
	Customer string  `json:"customer"`
	Total    float64 `json:"total"`
	Currency string  `json:"currency"`
	Status   string  `json:"status"`
}

// handle applies one order, as it would on Kafka. An invalid order is Permanent: it is
// reported at once with the later messages of its group, which wait behind it (the queue's
// redrive policy moves it to the dead-letter queue after its receives).
func handle(ctx context.Context, log *slog.Logger, r *kafkaevent.Record) error {
	var o Order
	if err := json.Unmarshal(r.Value, &o); err != nil {
		return batch.Permanent(fmt.Errorf("order: %w", err))
	}
	if o.OrderID <= 0 || o.Total < 0 || o.Currency == "" {
		return batch.Permanent(fmt.Errorf("invalid order %d: total %v %q", o.OrderID, o.Total, o.Currency))
	}
	log.InfoContext(ctx, "order applied", "orderId", o.OrderID, "status", o.Status, "total", o.Total,
		"partition", r.PartitionID(), "offset", r.Offset)
	return nil
}
