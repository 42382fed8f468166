package producer_test

import (
	"context"
	"log"
	"os"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/kafkalambda/toolkit/producer"
)

// A self-managed cluster with SASL/SCRAM-SHA-512: the function gets the secret's ARN (the one
// its event source mapping's SASL_SCRAM_512_AUTH names), never the password, and reads the
// secret once, in main. A missing or unreadable secret fails here, at the start. With
// KAFKA_AUTH=scram and KAFKA_SCRAM_SECRET_ARN set, producer.NewClient() does the same. (Not
// run: it needs a Secrets Manager; TestSCRAMSecretRotation runs it against moto_server.)
func ExampleWithSCRAMSecret() {
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	client, err := producer.NewClient(
		producer.WithBootstrapServers("b-1.example.internal:9096"),
		producer.WithSCRAMSecret(secretsmanager.NewFromConfig(cfg), os.Getenv("KAFKA_SCRAM_SECRET_ARN")),
	)
	if err != nil {
		log.Fatal(err) // names WithSCRAMSecret, the secret, and why it cannot be used
	}
	defer client.Close()
}
