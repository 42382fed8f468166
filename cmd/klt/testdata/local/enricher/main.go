// Command enricher is EnricherFunction in template.yaml: it reads sensor readings from a Kafka
// topic (a SelfManagedKafka event) and produces one enriched reading per input to OUTPUT_TOPIC,
// keyed by the input's key, once per input (producer.ProduceOnce, with the idempotency records in
// IDEMPOTENCY_TABLE). Each output carries producer.SourceHeader, the input's identity.
//
// A reading is the JSON {"id": N, "reading": X}; the output is the same with "fahrenheit"
// (X read as degrees Celsius) and "source" (the input's topic/partition/offset). A reading
// that is not a number, or a value that is not such an object, can never succeed: it goes to
// FAILURE_QUEUE_URL (batch's SQS sink, in its record envelope) and its partition moves on.
//
// Environment: OUTPUT_TOPIC, KAFKA_BOOTSTRAP_SERVERS, KAFKA_AUTH, IDEMPOTENCY_TABLE,
// FAILURE_QUEUE_URL.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/producer"
)

func main() {
	h, err := newHandler(context.Background(), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "enricher:", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// newHandler makes the clients once, outside the handler, and returns the handler; logs go to
// out.
func newHandler(ctx context.Context, out io.Writer) (batch.KafkaFunc, error) {
	var env [3]string
	for i, name := range []string{"OUTPUT_TOPIC", "IDEMPOTENCY_TABLE", "FAILURE_QUEUE_URL"} {
		if env[i] = os.Getenv(name); env[i] == "" {
			return nil, fmt.Errorf("environment variable %s is required (template.yaml sets it)", name)
		}
	}
	topic, table, failureQueue := env[0], env[1], env[2]
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	store, err := dynamodb.NewStore(awsdynamodb.NewFromConfig(cfg), table)
	if err != nil {
		return nil, err
	}
	// Brokers from KAFKA_BOOTSTRAP_SERVERS, authentication from KAFKA_AUTH.
	client, err := producer.NewClient()
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewJSONHandler(out, nil))
	return batch.KafkaHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		rec, err := enrich(topic, r)
		if err != nil {
			return err
		}
		if err := producer.ProduceOnce(ctx, client, store, r, []*kgo.Record{rec}); err != nil {
			return err
		}
		log.InfoContext(ctx, "reading enriched", "partition", r.PartitionID(), "offset", r.Offset, "to", topic)
		return nil
	},
		batch.WithSink(sqssink.New(sqs.NewFromConfig(cfg), failureQueue), batch.SinkPermanent),
		batch.WithLogger(log),
	), nil
}

// enriched is an output's value.
type enriched struct {
	ID         json.Number `json:"id"`
	Reading    json.Number `json:"reading"`
	Fahrenheit float64     `json:"fahrenheit"`
	Source     string      `json:"source"`
}

// errNotANumber is why a reading is refused.
var errNotANumber = errors.New("not a number")

// enrich returns the output record of input r, or a batch.Permanent error for a value that is
// not a reading.
func enrich(topic string, r *kafkaevent.Record) (*kgo.Record, error) {
	var in struct {
		ID      json.RawMessage `json:"id"`
		Reading json.RawMessage `json:"reading"`
	}
	if err := json.Unmarshal(r.Value, &in); err != nil {
		return nil, batch.Permanent(fmt.Errorf("value is not a JSON object {\"id\": N, \"reading\": X}: %w", err))
	}
	id, err := number("id", in.ID)
	if err != nil {
		return nil, err
	}
	x, err := number("reading", in.Reading)
	if err != nil {
		return nil, err
	}
	c, err := x.Float64()
	if err != nil {
		return nil, batch.Permanent(fmt.Errorf("reading %s: %w", x, err))
	}
	value, err := json.Marshal(enriched{ID: id, Reading: x, Fahrenheit: c*9/5 + 32,
		Source: fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset)})
	if err != nil {
		return nil, batch.Permanent(err)
	}
	return &kgo.Record{Topic: topic, Key: r.Key, Value: value}, nil
}

// number returns the JSON number raw, or a batch.Permanent error naming field when it is
// missing or of another type.
func number(field string, raw json.RawMessage) (json.Number, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", batch.Permanent(fmt.Errorf("%s: missing", field))
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", batch.Permanent(fmt.Errorf("%s: %w", field, err))
	}
	n, ok := v.(json.Number)
	if !ok {
		return "", batch.Permanent(fmt.Errorf("%s %s: %w", field, raw, errNotANumber))
	}
	return n, nil
}
