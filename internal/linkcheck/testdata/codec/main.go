// Command codec is a minimal batch.KafkaHandler function whose values are JSON (codec.JSON),
// with no schema registry: it must not link the AWS Glue client (codec/glue).
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/codec"
)

type order struct {
	ID string `json:"id"`
}

func handle(ctx context.Context, r *codec.Record[string, order]) error {
	_, err := r.Value(ctx)
	return err
}

func main() {
	d, err := codec.NewDeserializer(codec.String(), codec.JSON[order]())
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(batch.KafkaHandler(d.Func(handle)))
}
