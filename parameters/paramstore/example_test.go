package paramstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/paramstore"
)

// The examples are compiled, not run: they need AWS (the tests run the same calls against
// moto_server).

// A provider made once in main: its cache then serves every invocation.
func ExampleNew() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	params, err := paramstore.New(ssm.NewFromConfig(cfg), parameters.WithMaxAge(time.Minute))
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
func ExampleProvider_GetByPath() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	params, _ := paramstore.New(ssm.NewFromConfig(cfg))
	all, err := params.GetByPath(context.Background(), "/orders") // {"db/url": ..., "queue/name": ...}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(all["db/url"])
}

// Bytes: a binary value kept as base64 in a String parameter.
func ExampleProvider_GetBinary() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	params, _ := paramstore.New(ssm.NewFromConfig(cfg))
	key, err := params.GetBinary(context.Background(), "/orders/signing-key")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(key))
}
