// Command dispatcher is DispatcherFunction in template.yaml: MSK -> Lambda -> SQS FIFO. It sends
// each Kafka record to the work queue, one message group per key, so the workers
// (samples/worker) run with the queue's parallelism and each key stays in Kafka order. Each
// record goes whole, its headers with it, so the worker reads the same correlation-id header
// (batch.WithCorrelationIDFrom there) and its lines carry the correlation ID the producer set.
// The dispatcher's own lines (lambdalog) carry the invocation's request ID, and a line about one
// record (one it could not send) carries that record's correlation ID too.
//
// Environment: WORK_QUEUE_URL (a .fifo queue), POWERTOOLS_SERVICE_NAME,
// POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_LOG_LEVEL (template.yaml's Globals).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/lambdalog"
	"github.com/kafkalambda/toolkit/metrics"
)

func main() {
	h, err := newHandler(context.Background(), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dispatcher:", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// newHandler makes the logger, the metrics and the SQS client once, outside the handler, and
// returns the handler; logs and metrics (the ColdStart metric) go to out.
func newHandler(ctx context.Context, out io.Writer) (lambda.Handler, error) {
	queue := os.Getenv("WORK_QUEUE_URL")
	if queue == "" {
		return nil, fmt.Errorf("environment variable WORK_QUEUE_URL is required (template.yaml sets it)")
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	log := slog.New(lambdalog.NewHandler(slog.NewJSONHandler(out, &slog.HandlerOptions{ReplaceAttr: lambdalog.ReplaceAttr})))
	slog.SetDefault(log)
	m, err := metrics.New(metrics.WithOutput(out)) // POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_SERVICE_NAME
	if err != nil {
		return nil, err
	}
	d, err := fanout.NewDispatcher(sqs.NewFromConfig(cfg), queue,
		fanout.WithBatchOptions(batch.WithLogger(log), batch.WithCorrelationIDFrom("correlation-id")))
	if err != nil {
		return nil, err
	}
	// The logger's wrapper outermost, then the metrics', then the dispatcher
	// (docs/handlers.md, "Logs and metrics").
	return lambdalog.WrapHandler(m.Wrap(d)), nil
}
