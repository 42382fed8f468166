package secrets_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/secrets"
)

// The examples are compiled, not run: they need AWS (the tests run the same calls against
// moto_server).

// A secret read as JSON into a type, and told apart when its credentials are refused: the
// next Get reads the rotated secret at once.
func ExampleNew() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	dbSecret, err := secrets.New(secretsmanager.NewFromConfig(cfg))
	if err != nil {
		log.Fatal(err)
	}
	type dbCreds struct{ Username, Password string }
	id := os.Getenv("DB_SECRET_ARN") // the ARN, not the secret, is in the environment
	handler := func(ctx context.Context) error {
		creds, err := parameters.GetJSON[dbCreds](ctx, dbSecret, id)
		if err != nil {
			return err
		}
		if err := connect(creds.Username, creds.Password); errors.Is(err, errAuth) {
			dbSecret.Invalidate(id) // rotated: the next invocation reads the new value
			return err
		}
		return nil
	}
	_ = handler
}

// Bytes: a SecretBinary as AWS keeps it (the SDK decodes its base64).
func ExampleProvider_GetBinary() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	keys, _ := secrets.New(secretsmanager.NewFromConfig(cfg))
	key, err := keys.GetBinary(context.Background(), "orders/signing-key")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(key))
}

var errAuth = errors.New("authentication refused")

func connect(user, pass string) error { return nil }
