// Command xraytrace is the batch function with X-Ray subsegments.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/xraytrace"
)

func handle(ctx context.Context, r *kafkaevent.Record) error { return nil }

func main() { lambda.Start(batch.KafkaHandler(handle, batch.WithHooks(xraytrace.New()))) }
