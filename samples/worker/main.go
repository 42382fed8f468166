// Command worker is WorkerFunction in template.yaml: SQS FIFO -> Lambda, behind
// samples/dispatcher. It runs the handler that would run on the Kafka event source mapping,
// unchanged, on the Kafka record each message carries: each message group (a Kafka key) in
// order, each record applied once however often it was dispatched (idempotency on DynamoDB,
// keyed on the record's topic, partition and offset, not the message ID). An order that can
// never succeed goes to an SQS failure queue, so that its key moves on at once rather than
// after the work queue's maxReceiveCount receives. Applying an order means sending it to the
// orders API (ORDERS_API_URL; package samples/internal/orders); without one it is only logged.
//
// Environment: IDEMPOTENCY_TABLE, FAILURE_QUEUE_URL, ORDERS_API_URL (optional).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/samples/internal/orders"
)

func main() {
	h, err := newHandler(context.Background(), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// newHandler makes the clients once, outside the handler, and returns the handler; logs go to
// out.
func newHandler(ctx context.Context, out io.Writer) (batch.SQSFunc, error) {
	table, err := required("IDEMPOTENCY_TABLE")
	if err != nil {
		return nil, err
	}
	failureQueue, err := required("FAILURE_QUEUE_URL")
	if err != nil {
		return nil, err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	store, err := dynamodb.NewStore(awsdynamodb.NewFromConfig(cfg), table)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewJSONHandler(out, nil))
	api := orders.NewAPI(os.Getenv("ORDERS_API_URL"))
	return fanout.WorkerHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		return handle(ctx, log, api, r)
	},
		batch.WithIdempotency(store),
		batch.WithSink(sqssink.New(sqs.NewFromConfig(cfg), failureQueue), batch.SinkPermanent),
		batch.WithLogger(log)), nil
}

// handle applies one order, as it would on Kafka. An invalid order is Permanent
// (orders.Decode): it goes to the failure queue and the rest of its group goes on.
func handle(ctx context.Context, log *slog.Logger, api *orders.API, r *kafkaevent.Record) error {
	o, err := orders.Decode(r)
	if err != nil {
		return err
	}
	if err := api.Apply(ctx, r, o); err != nil {
		return err
	}
	log.InfoContext(ctx, "order applied", "orderId", o.OrderID, "status", o.Status, "total", o.Total,
		"partition", r.PartitionID(), "offset", r.Offset)
	return nil
}

// required returns the variable's value, or an error naming it when it is unset or empty.
func required(name string) (string, error) {
	if v := os.Getenv(name); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("environment variable %s is required (template.yaml sets it)", name)
}
