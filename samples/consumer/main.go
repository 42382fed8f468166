// Command consumer is ConsumerFunction in template.yaml: MSK -> Lambda directly. Each order
// record is handled once (idempotency on DynamoDB), records the event's FilterCriteria drop are
// skipped (a guard), a record that can never succeed goes to an SQS failure queue so its
// partition moves on. Logs (lambdalog: JSON lines with the request ID, cold start and each
// record's correlation ID, from its correlation-id header) and EMF metrics (OrdersApplied,
// OrderTotal, with the service dimension) go to stdout.
//
// Applying an order means sending it to the orders API (ORDERS_API_URL; package
// samples/internal/orders); without one it is only logged.
//
// Environment: IDEMPOTENCY_TABLE, FAILURE_QUEUE_URL, ORDERS_API_URL (optional),
// FILTER_CRITERIA (optional: the JSON of the event source mapping's FilterCriteria),
// KEY_CONCURRENCY (optional: n > 0 handles records of different keys at once, at most n in
// flight per invocation, each key in offset order: batch.WithKeyConcurrency; 0 or unset: a
// partition's records one after another),
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
	"strconv"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/lambdalog"
	"github.com/kafkalambda/toolkit/metrics"
	"github.com/kafkalambda/toolkit/samples/internal/orders"
)

func main() {
	h, err := newHandler(context.Background(), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
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
	opts := []batch.Option{
		batch.WithIdempotency(store),
		batch.WithSink(sqssink.New(sqs.NewFromConfig(cfg), failureQueue), batch.SinkPermanent),
		batch.WithLogger(log),
		batch.WithMetrics(out),
		batch.WithCorrelationIDFrom("correlation-id"), // the header the producer sets
	}
	if criteria, ok := os.LookupEnv("FILTER_CRITERIA"); ok {
		c, err := filter.ParseCriteria([]byte(criteria))
		if err != nil {
			return nil, fmt.Errorf("FILTER_CRITERIA (unset it for no guard): %w", err)
		}
		opts = append(opts, batch.WithFilter(c))
	}
	n, err := keyConcurrency()
	if err != nil {
		return nil, err
	}
	if n > 0 {
		opts = append(opts, batch.WithKeyConcurrency(n)) // WithIdempotency above, which it needs
	}
	api := orders.NewAPI(os.Getenv("ORDERS_API_URL"))
	h := batch.KafkaHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		return handle(ctx, log, api, r)
	}, opts...)
	// The logger's wrapper outermost (the invocation's request ID and cold start in the
	// context), then the metrics' (a recorder per invocation, written when it returns), then
	// the batch handler (each record's correlation ID in its context): docs/handlers.md.
	return lambdalog.WrapHandler(m.Wrap(h)), nil
}

// handle applies one order. An order that cannot be read or is invalid will never succeed:
// orders.Decode makes it Permanent, so it goes to the failure queue at once.
func handle(ctx context.Context, log *slog.Logger, api *orders.API, r *kafkaevent.Record) error {
	o, err := orders.Decode(r)
	if err != nil {
		return err
	}
	if err := api.Apply(ctx, r, o); err != nil {
		return err
	}
	log.InfoContext(ctx, "order accepted", "orderId", o.OrderID, "total", o.Total, "currency", o.Currency,
		"partition", r.PartitionID(), "offset", r.Offset)
	return errors.Join(
		metrics.Add(ctx, "OrdersApplied", metrics.Count, 1),
		metrics.Add(ctx, "OrderTotal", metrics.None, o.Total))
}

// keyConcurrency reads KEY_CONCURRENCY (template.yaml's KeyConcurrency parameter): 0 when it
// is unset or empty, an error naming it when it is not a whole number from 0.
func keyConcurrency() (int, error) {
	v := os.Getenv("KEY_CONCURRENCY")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("environment variable KEY_CONCURRENCY=%q: want a whole number from 0 (0: off)", v)
	}
	return n, nil
}

// required returns the variable's value, or an error naming it when it is unset or empty.
func required(name string) (string, error) {
	if v := os.Getenv(name); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("environment variable %s is required (template.yaml sets it)", name)
}
