// Command dispatcher is DispatcherFunction in template.yaml: MSK -> Lambda -> SQS FIFO. It sends
// each Kafka record to the work queue, one message group per key, so the workers
// (samples/worker) run with the queue's parallelism and each key stays in Kafka order.
//
// Environment: WORK_QUEUE_URL (a .fifo queue).
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
)

func main() {
	h, err := newHandler(context.Background(), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dispatcher:", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// newHandler makes the SQS client once, outside the handler, and returns the handler; logs go
// to out.
func newHandler(ctx context.Context, out io.Writer) (*fanout.Dispatcher, error) {
	queue := os.Getenv("WORK_QUEUE_URL")
	if queue == "" {
		return nil, fmt.Errorf("environment variable WORK_QUEUE_URL is required (template.yaml sets it)")
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	return fanout.NewDispatcher(sqs.NewFromConfig(cfg), queue,
		fanout.WithBatchOptions(batch.WithLogger(slog.New(slog.NewJSONHandler(out, nil)))))
}
