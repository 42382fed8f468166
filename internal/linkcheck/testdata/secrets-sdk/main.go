// Command secrets-sdk is a minimal function that reads a Secrets Manager secret with the SDK's
// client alone: the base that secrets-provider is compared with.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

func main() {
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	sm := secretsmanager.NewFromConfig(cfg)
	lambda.Start(func(ctx context.Context) (string, error) {
		out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(os.Getenv("SECRET_ARN"))})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.ARN), nil
	})
}
