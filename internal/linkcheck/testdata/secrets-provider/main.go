// Command secrets-provider is secrets-sdk reading its secret through the parameters package's
// Secrets Manager provider instead.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/kafkalambda/toolkit/parameters"
)

func main() {
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	secrets, err := parameters.NewSecrets(secretsmanager.NewFromConfig(cfg))
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(func(ctx context.Context) (int, error) {
		v, err := secrets.Get(ctx, os.Getenv("SECRET_ARN"))
		return len(v), err
	})
}
