// Command producer is ProducerFunction in template.yaml: a transactional-outbox relay,
// DynamoDB Streams -> Lambda -> Kafka. A service writes its change and an outbox item in one
// DynamoDB transaction; the outbox table's stream (NEW_IMAGE) brings each new item here, and
// the relay produces it to OUTPUT_TOPIC keyed by the entity it is about, so each entity's
// events keep their order.
//
// An outbox item: id (S, the table's key), entityId (S, the Kafka key), type (S), payload (S,
// the Kafka value), and optionally correlationId (S). Each Kafka record carries the headers
// outbox-id, outbox-type and outbox-sequence-number (the stream record's SequenceNumber);
// consumers dedup on outbox-id. It carries correlation-id too: the item's correlationId (the
// request that made the change, as the service logged it), else its id. The consumers read it
// (batch.WithCorrelationIDFrom), so one Logs Insights query on correlation_id finds a change's
// lines in every function it went through. Logs go through lambdalog, and the count of items
// relayed (OutboxItemsRelayed) through metrics, to stdout.
//
// Environment: OUTPUT_TOPIC, KAFKA_BOOTSTRAP_SERVERS, KAFKA_AUTH (iam on MSK), and with
// KAFKA_AUTH=scram, KAFKA_SCRAM_SECRET_ARN: the secret's ARN, never its value. The relay reads
// the secret at start (a missing or unreadable one stops the start, before any event).
// POWERTOOLS_SERVICE_NAME, POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_LOG_LEVEL: template.yaml's
// Globals.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/lambdalog"
	"github.com/kafkalambda/toolkit/metrics"
	"github.com/kafkalambda/toolkit/producer"
)

func main() {
	rl, err := newRelay(os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "outbox relay:", err)
		os.Exit(1)
	}
	lambda.Start(rl.handler())
}

// relay holds what lives across invocations: the Kafka client, the logger and the metrics,
// made once.
type relay struct {
	client  *kgo.Client
	topic   string
	log     *slog.Logger
	metrics *metrics.Metrics
}

// handler is handle as the runtime calls it: the logger's wrapper outermost, then the
// metrics' (docs/handlers.md, "Logs and metrics").
func (rl *relay) handler() func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return lambdalog.Wrap(metrics.Handle(rl.metrics, rl.handle))
}

func newRelay(out io.Writer) (*relay, error) {
	topic := os.Getenv("OUTPUT_TOPIC")
	if topic == "" {
		return nil, fmt.Errorf("environment variable OUTPUT_TOPIC is required (template.yaml sets it)")
	}
	// Brokers from KAFKA_BOOTSTRAP_SERVERS, authentication from KAFKA_AUTH (iam: the function's
	// role, through the default credentials chain; scram: the user and password of the secret
	// KAFKA_SCRAM_SECRET_ARN names, read here, once per execution environment).
	client, err := producer.NewClient()
	if err != nil {
		return nil, err
	}
	m, err := metrics.New(metrics.WithOutput(out)) // POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_SERVICE_NAME
	if err != nil {
		client.Close()
		return nil, err
	}
	log := slog.New(lambdalog.NewHandler(slog.NewJSONHandler(out, &slog.HandlerOptions{ReplaceAttr: lambdalog.ReplaceAttr})))
	slog.SetDefault(log)
	return &relay{client: client, topic: topic, log: log, metrics: m}, nil
}

// handle relays one batch of stream records (all from one shard, in order) and returns the
// partial-batch response (the mapping has FunctionResponseTypes: [ReportBatchItemFailures]):
// the SequenceNumber of the first record not relayed, from which the stream retries. No record
// after an unreadable one is produced. When a produce fails, later records of the batch may
// have landed: the retry produces them again (kgo's idempotent producer keeps each partition
// in order), so consumers see a duplicate, never an entity's events out of order once
// deduplicated on outbox-id.
func (rl *relay) handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	var recs []*kgo.Record
	var seqs []string
	failAt, skipped := "", 0
	for _, sr := range ev.Records {
		if sr.EventName != string(events.DynamoDBOperationTypeInsert) {
			skipped++ // outbox items are written once; REMOVE is their TTL clean-up
			if sr.EventName == string(events.DynamoDBOperationTypeModify) {
				rl.log.WarnContext(ctx, "outbox item modified: not relayed again", "sequenceNumber", sr.Change.SequenceNumber)
			}
			continue
		}
		rec, err := rl.record(sr)
		if err != nil {
			rl.log.ErrorContext(ctx, "outbox item not relayed", "sequenceNumber", sr.Change.SequenceNumber, "eventID", sr.EventID, "error", err.Error())
			failAt = sr.Change.SequenceNumber
			break
		}
		recs, seqs = append(recs, rec), append(seqs, sr.Change.SequenceNumber)
	}
	produced := 0
	for i, res := range producer.Produce(ctx, rl.client, recs...) {
		if res.Err != nil {
			rl.log.ErrorContext(ctx, "outbox item not produced", "sequenceNumber", seqs[i], "error", res.Err.Error())
			failAt = seqs[i]
			break
		}
		produced++
	}
	if failAt != "" {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: failAt})
	}
	rl.log.InfoContext(ctx, "outbox batch relayed", "records", len(ev.Records), "produced", produced, "skipped", skipped, "failedAt", failAt)
	return resp, metrics.Add(ctx, "OutboxItemsRelayed", metrics.Count, float64(produced))
}

// record is the Kafka record of an outbox item's stream record.
func (rl *relay) record(sr events.DynamoDBEventRecord) (*kgo.Record, error) {
	img := sr.Change.NewImage
	if img == nil {
		return nil, fmt.Errorf("no NewImage: the stream's view type must be NEW_IMAGE or NEW_AND_OLD_IMAGES, not %s", sr.Change.StreamViewType)
	}
	var f [4]string
	for i, name := range []string{"id", "entityId", "type", "payload"} {
		v, ok := img[name]
		if !ok || v.DataType() != events.DataTypeString || v.String() == "" {
			return nil, fmt.Errorf("outbox item: attribute %s is missing, empty or not a string", name)
		}
		f[i] = v.String()
	}
	correlation := f[0]
	if v, ok := img["correlationId"]; ok && v.DataType() == events.DataTypeString && v.String() != "" {
		correlation = v.String()
	}
	return &kgo.Record{Topic: rl.topic, Key: []byte(f[1]), Value: []byte(f[3]), Headers: []kgo.RecordHeader{
		{Key: "outbox-id", Value: []byte(f[0])},
		{Key: "outbox-type", Value: []byte(f[2])},
		{Key: "outbox-sequence-number", Value: []byte(sr.Change.SequenceNumber)},
		{Key: "correlation-id", Value: []byte(correlation)},
	}}, nil
}
