package appconfig_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/appconfig"
)

// The examples are compiled, not run: they need AWS (the tests run the same calls against a
// local AppConfig Data server).

// A feature-flag profile, as JSON into a type. The provider is made once, in main.
func ExampleNew() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
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

// A configuration as text (YAML, or whatever the profile holds).
func ExampleProvider_Get() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	conf, _ := appconfig.New(appconfig.NewClient(cfg, ""), "orders", "prod")
	text, err := conf.Get(context.Background(), "routing")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(text))
}

// A client of a VPC endpoint, or of a local server in tests.
func ExampleNewClient() {
	cfg, _ := config.LoadDefaultConfig(context.Background())
	client := appconfig.NewClient(cfg, "https://vpce-0123-abcd.appconfigdata.eu-west-1.vpce.amazonaws.com")
	_, _ = appconfig.New(client, "orders", "prod")
}
