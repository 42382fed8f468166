// Command worker is WorkerFunction in template.yaml: SQS FIFO -> Lambda, behind
// samples/dispatcher. It runs the handler that would run on the Kafka event source mapping,
// unchanged, on the Kafka record each message carries: each message group (a Kafka key) in
// order, each record applied once however often it was dispatched (idempotency on DynamoDB,
// keyed on the record's topic, partition and offset, not the message ID). An order that can
// never succeed goes to an SQS failure queue, so that its key moves on at once rather than
// after the work queue's maxReceiveCount receives. Applying an order means sending it to the
// orders API (ORDERS_API_URL; package samples/internal/orders); without one it is only logged.
// Logs (lambdalog) carry the request ID and each record's correlation ID, the correlation-id
// header of the Kafka record the message carries; metrics (OrdersApplied, OrderTotal) are EMF.
//
// Environment: IDEMPOTENCY_TABLE, FAILURE_QUEUE_URL, ORDERS_API_URL (optional),
// POWERTOOLS_SERVICE_NAME, POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_LOG_LEVEL (template.yaml's
// Globals).
package main

import (
	"context"
	"errors"
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
	"github.com/kafkalambda/toolkit/lambdalog"
	"github.com/kafkalambda/toolkit/metrics"
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

// newHandler makes the logger, the metrics and the clients once, outside the handler, and
// returns the handler; logs and metrics go to out.
func newHandler(ctx context.Context, out io.Writer) (lambda.Handler, error) {
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
	log := slog.New(lambdalog.NewHandler(slog.NewJSONHandler(out, &slog.HandlerOptions{ReplaceAttr: lambdalog.ReplaceAttr})))
	slog.SetDefault(log)
	m, err := metrics.New(metrics.WithOutput(out)) // POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_SERVICE_NAME
	if err != nil {
		return nil, err
	}
	api := orders.NewAPI(os.Getenv("ORDERS_API_URL"))
	h := fanout.WorkerHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		return handle(ctx, log, api, r)
	},
		batch.WithIdempotency(store),
		batch.WithSink(sqssink.New(sqs.NewFromConfig(cfg), failureQueue), batch.SinkPermanent),
		batch.WithLogger(log),
		batch.WithCorrelationIDFrom("correlation-id")) // the Kafka record's header, passed on by the dispatcher
	// The logger's wrapper outermost, then the metrics', then the batch handler
	// (docs/handlers.md, "Logs and metrics").
	return lambdalog.WrapHandler(m.Wrap(h)), nil
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
	return errors.Join(
		metrics.Add(ctx, "OrdersApplied", metrics.Count, 1),
		metrics.Add(ctx, "OrderTotal", metrics.None, o.Total))
}

// required returns the variable's value, or an error naming it when it is unset or empty.
func required(name string) (string, error) {
	if v := os.Getenv(name); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("environment variable %s is required (template.yaml sets it)", name)
}
