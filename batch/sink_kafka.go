package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/producer"
)

// Headers that KafkaSink adds to each record it produces, after the original record's own.
const (
	HeaderError           = "kafkalambda-error"             // the error text
	HeaderSourceTopic     = "kafkalambda-source-topic"      // the original topic (Kafka records)
	HeaderSourcePartition = "kafkalambda-source-partition"  // the original partition, in decimal
	HeaderSourceOffset    = "kafkalambda-source-offset"     // the original offset, in decimal
	HeaderSourceQueue     = "kafkalambda-source-queue"      // the queue's ARN (SQS messages)
	HeaderSourceMessageID = "kafkalambda-source-message-id" // the message id (SQS messages)
)

// KafkaSink is a [Sink] that produces each [Envelope] as one record to a Kafka topic, a dead
// letter topic. Make one with [NewKafkaSink].
//
// The record's value is the envelope as JSON (which [ReadEnvelope] reads back, original value
// included), its key the original record's key, so that a partition's failures stay together
// and in order, and its headers the original record's headers followed by HeaderError,
// HeaderSourceTopic, HeaderSourcePartition and HeaderSourceOffset. An envelope of an SQS
// message is keyed by its MessageGroupId (its message id outside FIFO queues) and carries
// HeaderError, HeaderSourceQueue and HeaderSourceMessageID.
type KafkaSink struct {
	client *kgo.Client
	topic  string
}

// NewKafkaSink returns a sink that produces to topic with client, which [producer.NewClient]
// makes for Amazon MSK (IAM, SCRAM, TLS) with the producer defaults an operator expects. The
// client's producer settings (acks, idempotence, retries, timeouts, max record size) apply to
// every Send.
func NewKafkaSink(client *kgo.Client, topic string) *KafkaSink {
	return &KafkaSink{client: client, topic: topic}
}

// Send produces e with [producer.Produce] and waits until the broker has acknowledged it, at
// the latest until ctx's deadline less Produce's margin: a record not acknowledged by then
// fails with an error wrapping producer.ErrNotAcknowledged rather than hold the function
// past its timeout. It returns the produce error, so that the record is reported as failed
// and comes back.
func (s *KafkaSink) Send(ctx context.Context, e *Envelope) error {
	value, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("batch: kafka sink: %s: %w", envelopeName(e), err)
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
		return fmt.Errorf("batch: kafka sink: produce %s to %s: %w", envelopeName(e), s.topic, err)
	}
	return nil
}
