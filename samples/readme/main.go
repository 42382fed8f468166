// Command readme is the program of the README: the Lambda function most users of the toolkit
// write. It takes the batches of orders the Kafka event source mapping delivers, applies each
// order once however often Lambda delivers it, and sends an order that can never be applied to
// an SQS queue, so that its partition moves on.
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
	lambda.Start(batch.KafkaHandler(handle,
		batch.WithIdempotency(store),              // a record delivered again is not applied again
		batch.WithSink(sink, batch.SinkPermanent), // an order that can never succeed goes to the queue
	))
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
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "readme:", err)
	os.Exit(1)
}
