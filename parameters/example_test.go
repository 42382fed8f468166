package parameters_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/kafkalambda/toolkit/parameters"
)

// The examples are compiled, not run: they need AWS (the tests run the same calls against
// moto_server and a local AppConfig Data server).

// A provider per store, made once in main: its cache then serves every invocation.
func ExampleNewSSM() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	params, err := parameters.NewSSM(ssm.NewFromConfig(cfg), parameters.WithMaxAge(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	handler := func(ctx context.Context) error {
		url, err := params.Get(ctx, "/orders/db/url") // decrypted if a SecureString
		if err != nil {
			return err // names ssm and /orders/db/url, never the value
		}
		_ = url
		return nil
	}
	_ = handler
}

// Every parameter under a path, keyed by the rest of its name.
func ExampleSSM_GetByPath() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	params, _ := parameters.NewSSM(ssm.NewFromConfig(cfg))
	all, err := params.GetByPath(context.Background(), "/orders") // {"db/url": ..., "queue/name": ...}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(all["db/url"])
}

// A secret read as JSON into a type, and told apart when its credentials are refused: the
// next Get reads the rotated secret at once.
func ExampleNewSecrets() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	secrets, err := parameters.NewSecrets(secretsmanager.NewFromConfig(cfg))
	if err != nil {
		log.Fatal(err)
	}
	type dbCreds struct{ Username, Password string }
	id := os.Getenv("DB_SECRET_ARN") // the ARN, not the secret, is in the environment
	handler := func(ctx context.Context) error {
		creds, err := parameters.GetJSON[dbCreds](ctx, secrets, id)
		if err != nil {
			return err
		}
		if err := connect(creds.Username, creds.Password); errors.Is(err, errAuth) {
			secrets.Invalidate(id) // rotated: the next invocation reads the new value
			return err
		}
		return nil
	}
	_ = handler
}

// Bytes: a SecretBinary as AWS keeps it (the SDK decodes its base64).
func ExampleSecrets_GetBinary() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	secrets, _ := parameters.NewSecrets(secretsmanager.NewFromConfig(cfg))
	key, err := secrets.GetBinary(context.Background(), "orders/signing-key")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(key))
}

// A feature-flag profile of AppConfig, as JSON into a type.
func ExampleNewAppConfig() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	flags, err := parameters.NewAppConfig(parameters.NewAppConfigDataClient(cfg, ""), "orders", "prod")
	if err != nil {
		log.Fatal(err)
	}
	type features struct {
		Checkout bool `json:"checkout"`
	}
	f, err := parameters.GetJSON[features](context.Background(), flags, "features")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f.Checkout)
}

// Force reads now, whatever the cache holds.
func ExampleForce() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	params, _ := parameters.NewSSM(ssm.NewFromConfig(cfg))
	v, err := params.Get(context.Background(), "/orders/limit", parameters.Force())
	fmt.Println(v, err)
}

var errAuth = errors.New("authentication refused")

func connect(user, pass string) error { return nil }
