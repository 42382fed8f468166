// Command secrets-provider is secrets-sdk reading its secret through the Secrets Manager
// provider of package parameters (parameters/secrets) instead.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/kafkalambda/toolkit/parameters/secrets"
)

func main() {
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	sm, err := secrets.New(secretsmanager.NewFromConfig(cfg))
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(func(ctx context.Context) (int, error) {
		v, err := sm.Get(ctx, os.Getenv("SECRET_ARN"))
		return len(v), err
	})
}
