// Command readme is the program of the README: the Lambda function most users of the toolkit
// write. It takes the batches of orders the Kafka event source mapping delivers, applies each
// order once however often Lambda delivers it, and sends an order that can never be applied to
// an SQS queue, so that its partition moves on. It logs and counts as Powertools for AWS Lambda
// does: JSON lines with the request ID, cold start and each record's correlation ID, and
// CloudWatch EMF metrics.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/lambdalog"
	"github.com/kafkalambda/toolkit/metrics"
)

// Order is what the topic carries, as JSON.
type Order struct {
	ID    string  `json:"id"`
	Total float64 `json:"total"`
}

func main() {
	table, queue := os.Getenv("IDEMPOTENCY_TABLE"), os.Getenv("FAILURE_QUEUE_URL")
	if table == "" || queue == "" {
		fail(fmt.Errorf("IDEMPOTENCY_TABLE and FAILURE_QUEUE_URL must be set"))
	}
	// The clients are made once per execution environment, outside the handler.
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		fail(err)
	}
	store, err := dynamodb.NewStore(awsdynamodb.NewFromConfig(cfg), table)
	if err != nil {
		fail(err)
	}
	sink := sqssink.New(sqs.NewFromConfig(cfg), queue)
	// Namespace and service from POWERTOOLS_METRICS_NAMESPACE and POWERTOOLS_SERVICE_NAME.
	m, err := metrics.New()
	if err != nil {
		fail(err)
	}
	slog.SetDefault(lambdalog.New()) // JSON lines with Powertools' keys; batch logs through it too
	h := batch.KafkaHandler(handle,
		batch.WithIdempotency(store),                  // a record delivered again is not applied again
		batch.WithSink(sink, batch.SinkPermanent),     // an order that can never succeed goes to the queue
		batch.WithCorrelationIDFrom("correlation-id"), // each record's lines carry this header's value
	)
	// The logger's wrapper outermost, then the metrics', then the batch handler.
	lambda.Start(lambdalog.WrapHandler(m.Wrap(h)))
}

// handle applies one order. An error is retried with backoff inside the invocation (3 attempts),
// then reported with the rest of its partition, which Lambda delivers again from there.
func handle(ctx context.Context, r *kafkaevent.Record) error {
	if r.IsTombstone() {
		return nil // no value: a deletion, nothing to apply
	}
	var o Order
	if err := json.Unmarshal(r.Value, &o); err != nil {
		return batch.Permanent(fmt.Errorf("order: %w", err)) // not retried: to the sink at once
	}
	return apply(ctx, o)
}

// apply is the side effect that must happen once per order: a payment, a write, a call.
func apply(ctx context.Context, o Order) error {
	slog.InfoContext(ctx, "order applied", "id", o.ID, "total", o.Total)
	return metrics.Add(ctx, "OrdersApplied", metrics.Count, 1) // written when the invocation ends
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "readme:", err)
	os.Exit(1)
}
