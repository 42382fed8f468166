package producer_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit"

	"github.com/kafkalambda/toolkit/producer"
)

// The Lambda pattern: the client is made once per execution environment, outside the
// handler; each invocation produces its records and waits for them within its deadline. Here
// the broker is kfake and the invocation's context is made by hand, as Lambda makes it.
func Example() {
	cluster, err := kfake.NewCluster(kfake.SeedTopics(3, "orders"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	// In main, before lambda.Start. In a function this is producer.NewClient() with
	// KAFKA_BOOTSTRAP_SERVERS and KAFKA_AUTH set, or WithIAM(cfg.Credentials).
	client, err := producer.NewClient(producer.WithBootstrapServers(cluster.ListenAddrs()...), producer.WithPlaintext())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	handler := func(ctx context.Context, orderIDs []string) error {
		var recs []*kgo.Record
		for _, id := range orderIDs {
			recs = append(recs, &kgo.Record{Topic: "orders", Key: []byte(id), Value: []byte(`{"status":"CONFIRMED"}`)})
		}
		results := producer.Produce(ctx, client, recs...)
		for _, r := range results {
			if r.Err == nil {
				fmt.Printf("%s: partition %d offset %d\n", r.Record.Key, r.Record.Partition, r.Record.Offset)
			}
		}
		return results.Err()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // the function's timeout
	defer cancel()
	fmt.Println("error:", handler(ctx, []string{"order-1001", "order-1002", "order-1003"}))
	// Output:
	// order-1001: partition 0 offset 0
	// order-1002: partition 0 offset 1
	// order-1003: partition 1 offset 0
	// error: <nil>
}

// Produce returns one result per record, in order, so a handler can tell which of its inputs
// failed (and report just those as batch item failures). Here the client refuses records over
// 1 KiB.
func ExampleProduce() {
	cluster, err := kfake.NewCluster(kfake.SeedTopics(1, "events"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	client, err := producer.NewClient(producer.WithBootstrapServers(cluster.ListenAddrs()...), producer.WithPlaintext(),
		producer.WithClientOptions(kgo.ProducerBatchMaxBytes(1024)))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	results := producer.Produce(ctx, client,
		&kgo.Record{Topic: "events", Value: []byte("small")},
		&kgo.Record{Topic: "events", Value: []byte(strings.Repeat("x", 2048))},
		&kgo.Record{Topic: "events", Value: []byte("small too")},
	)
	for i, r := range results {
		switch {
		case r.Err == nil:
			fmt.Printf("input %d: written at offset %d\n", i, r.Record.Offset)
		case errors.Is(r.Err, producer.ErrNotAcknowledged):
			fmt.Printf("input %d: outcome unknown, retry it\n", i)
		default:
			fmt.Printf("input %d: failed, too large: %v\n", i, errors.Is(r.Err, kerr.MessageTooLarge))
		}
	}
	// Output:
	// input 0: written at offset 0
	// input 1: failed, too large: true
	// input 2: written at offset 1
}

// Opts gives kgo options to compose by hand: here a default topic for records without one.
func ExampleOpts() {
	cluster, err := kfake.NewCluster(kfake.SeedTopics(1, "audit"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	opts, err := producer.Opts(producer.WithBootstrapServers(cluster.ListenAddrs()...), producer.WithPlaintext())
	if err != nil {
		log.Fatal(err)
	}
	client, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic("audit"))...)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	results := producer.Produce(ctx, client, &kgo.Record{Value: []byte("login")})
	fmt.Println(results[0].Record.Topic, results.Err())
	// Output: audit <nil>
}

// Opts says what is missing rather than guess: here no authentication. The error is a
// *toolkit.OptionError naming the setting, as every package of the toolkit reports a bad
// option.
func ExampleOpts_missing() {
	_, err := producer.Opts(producer.WithBootstrapServers("b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"))
	var ce *toolkit.OptionError
	if errors.As(err, &ce) {
		fmt.Println(ce.Option, errors.Is(err, toolkit.ErrInvalidOption))
	}
	// Output: KAFKA_AUTH true
}

// MSK IAM from a Lambda function: the role's credentials (in a function,
// config.LoadDefaultConfig's cfg.Credentials), the region from the broker names. NewClient
// does not connect: the first Produce does, with a token signed for that region.
func ExampleWithIAM() {
	brokers := []string{"b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098",
		"b-2.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"}
	creds := credentials.NewStaticCredentialsProvider("AKIAIOSFODNN7EXAMPLE", "secret", "")
	client, err := producer.NewClient(producer.WithBootstrapServers(brokers...), producer.WithIAM(creds))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	region, _ := producer.RegionFromBroker(brokers[0])
	fmt.Println("signed for", region)
	// Output:
	// signed for eu-west-1
}
