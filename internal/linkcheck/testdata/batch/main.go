// Command batch is a minimal batch.KafkaHandler function, without tracing.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

func handle(ctx context.Context, r *kafkaevent.Record) error { return nil }

func main() { lambda.Start(batch.KafkaHandler(handle)) }
