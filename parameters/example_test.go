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
	"github.com/kafkalambda/toolkit/parameters/appconfig"
	"github.com/kafkalambda/toolkit/parameters/paramstore"
	"github.com/kafkalambda/toolkit/parameters/secrets"
)

// The examples are compiled, not run: they need AWS (the providers' tests run the same calls
// against moto_server and a local AppConfig Data server).

// A secret read as JSON into a type, and told apart when its credentials are refused: the
// next Get reads the rotated secret at once.
func ExampleGetJSON() {
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
			return err // names secretsmanager and the ARN, never the value
		}
		if err := connect(creds.Username, creds.Password); errors.Is(err, errAuth) {
			dbSecret.Invalidate(id) // rotated: the next invocation reads the new value
			return err
		}
		return nil
	}
	_ = handler
}

// The same GetJSON reads a feature-flag profile of AppConfig.
func ExampleGetJSON_appConfig() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	flags, err := appconfig.New(appconfig.NewClient(cfg, ""), "orders", "prod")
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

// One option, every provider: a minute's max age for SSM parameters and secrets alike.
func ExampleWithMaxAge() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	params, err := paramstore.New(ssm.NewFromConfig(cfg), parameters.WithMaxAge(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	keys, err := secrets.New(secretsmanager.NewFromConfig(cfg), parameters.WithMaxAge(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	_, _ = params, keys
}

// A context with no deadline (a task outside a handler) gets the timeout.
func ExampleWithTimeout() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	params, _ := paramstore.New(ssm.NewFromConfig(cfg), parameters.WithTimeout(2*time.Second))
	v, err := params.Get(context.Background(), "/orders/limit") // at most 2 s, retries included
	fmt.Println(v, err)
}

// Force reads now, whatever the cache holds.
func ExampleForce() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	params, _ := paramstore.New(ssm.NewFromConfig(cfg))
	v, err := params.Get(context.Background(), "/orders/limit", parameters.Force())
	fmt.Println(v, err)
}

var errAuth = errors.New("authentication refused")

func connect(user, pass string) error { return nil }
