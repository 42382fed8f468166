// Command producer-scram is a minimal function that produces to Kafka with SASL/SCRAM, its
// user and password read from a Secrets Manager secret (producer.WithSCRAMSecret).
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/producer"
)

func main() {
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	cl, err := producer.NewClient(producer.WithSCRAMSecret(secretsmanager.NewFromConfig(cfg), os.Getenv("KAFKA_SCRAM_SECRET_ARN")))
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(func(ctx context.Context) error {
		return producer.Produce(ctx, cl, &kgo.Record{Topic: "t", Value: []byte("v")}).Err()
	})
}
