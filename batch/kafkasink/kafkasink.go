// Package kafkasink is a failure destination for package batch that produces each failed
// record to a Kafka topic, a dead letter topic:
//
//	cl, err := producer.NewClient() // MSK with IAM, from the environment
//	...
//	lambda.Start(batch.KafkaHandler(handle,
//		batch.WithSink(kafkasink.New(cl, "orders.dlq"), batch.SinkPermanent)))
//
// It is a package of its own so that batch, which every consumer links, does not link a
// Kafka client: only a function that gives its failures to Kafka carries franz-go.
// batch.ReadEnvelope reads back what it wrote.
package kafkasink

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/producer"
)

// Headers that a Sink adds to each record it produces, after the original record's own.
const (
	HeaderError           = "kafkalambda-error"             // the error text
	HeaderSourceTopic     = "kafkalambda-source-topic"      // the original topic (Kafka records)
	HeaderSourcePartition = "kafkalambda-source-partition"  // the original partition, in decimal
	HeaderSourceOffset    = "kafkalambda-source-offset"     // the original offset, in decimal
	HeaderSourceQueue     = "kafkalambda-source-queue"      // the queue's ARN (SQS messages)
	HeaderSourceMessageID = "kafkalambda-source-message-id" // the message id (SQS messages)
)

// Sink is a batch.Sink that produces each batch.Envelope as one record to a Kafka topic, a
// dead letter topic. Make one with [New].
//
// The record's value is the envelope as JSON (which batch.ReadEnvelope reads back, original value
// included), its key the original record's key, so that a partition's failures stay together
// and in order, and its headers the original record's headers followed by HeaderError,
// HeaderSourceTopic, HeaderSourcePartition and HeaderSourceOffset. An envelope of an SQS
// message is keyed by its MessageGroupId (its message id outside FIFO queues) and carries
// HeaderError, HeaderSourceQueue and HeaderSourceMessageID.
type Sink struct {
	client *kgo.Client
	topic  string
}

// New returns a sink that produces to topic with client, which [producer.NewClient]
// makes for Amazon MSK (IAM, SCRAM, TLS) with the producer defaults an operator expects. The
// client's producer settings (acks, idempotence, retries, timeouts, max record size) apply to
// every Send.
func New(client *kgo.Client, topic string) *Sink {
	return &Sink{client: client, topic: topic}
}

// Send produces e with [producer.Produce] and waits until the broker has acknowledged it, at
// the latest until ctx's deadline less Produce's margin: a record not acknowledged by then
// fails with an error wrapping producer.ErrNotAcknowledged rather than hold the function
// past its timeout. It returns the produce error, so that the record is reported as failed
// and comes back.
func (s *Sink) Send(ctx context.Context, e *batch.Envelope) error {
	value, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("kafkasink: %s: %w", envelopeName(e), err)
	}
	rec := &kgo.Record{Topic: s.topic, Value: value}
	if e.Source == "sqs" && e.Message != nil {
		key := e.Message.Attributes["MessageGroupId"]
		if key == "" {
			key = e.Message.MessageId
		}
		rec.Key = []byte(key)
		rec.Headers = []kgo.RecordHeader{
			{Key: HeaderError, Value: []byte(e.Error)},
			{Key: HeaderSourceQueue, Value: []byte(e.Message.EventSourceARN)},
			{Key: HeaderSourceMessageID, Value: []byte(e.Message.MessageId)},
		}
	} else {
		rec.Key = e.Key
		rec.Headers = make([]kgo.RecordHeader, 0, len(e.Headers)+4)
		for _, h := range e.Headers {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		rec.Headers = append(rec.Headers,
			kgo.RecordHeader{Key: HeaderError, Value: []byte(e.Error)},
			kgo.RecordHeader{Key: HeaderSourceTopic, Value: []byte(e.Topic)},
			kgo.RecordHeader{Key: HeaderSourcePartition, Value: strconv.AppendInt(nil, int64(e.Partition), 10)},
			kgo.RecordHeader{Key: HeaderSourceOffset, Value: strconv.AppendInt(nil, e.Offset, 10)},
		)
	}
	if err := producer.Produce(ctx, s.client, rec)[0].Err; err != nil {
		return fmt.Errorf("kafkasink: produce %s to %s: %w", envelopeName(e), s.topic, err)
	}
	return nil
}

// envelopeName names the record an envelope holds, for errors, as batch's own sinks do.
func envelopeName(e *batch.Envelope) string {
	if e.Source == "sqs" && e.Message != nil {
		return "message " + e.Message.MessageId
	}
	return fmt.Sprintf("record %s-%d@%d", e.Topic, e.Partition, e.Offset)
}
