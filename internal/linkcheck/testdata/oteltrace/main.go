// Command oteltrace is the batch function with OpenTelemetry spans, on the API module only:
// a real function would also link the SDK and an exporter of its choice.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/oteltrace"
)

func handle(ctx context.Context, r *kafkaevent.Record) error { return nil }

func main() { lambda.Start(batch.KafkaHandler(handle, batch.WithHooks(oteltrace.New()))) }
