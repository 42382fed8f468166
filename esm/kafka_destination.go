package esm

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Conditions of an on-failure record: why the mapping gave up on records.
const (
	// ConditionRetryAttemptsExhausted: the records failed MaximumRetryAttempts retries.
	ConditionRetryAttemptsExhausted = "RetryAttemptsExhausted"
	// ConditionMaximumPayloadSizeExceeded: one record's event alone exceeds limits.MaxLambdaPayloadBytes.
	ConditionMaximumPayloadSizeExceeded = "MaximumPayloadSizeExceeded"
	// ConditionRecordAgeExceeded: the records were older than MaximumRecordAge. The Kafka pages
	// of the AWS documentation do not name this condition; this is the name Kinesis and
	// DynamoDB mappings use for it.
	ConditionRecordAgeExceeded = "RecordAgeExceeded"
)

// Destination is where a Kafka mapping sends what it gives up on: [OnFailureSQS] or
// [OnFailureKafkaTopic].
type Destination interface {
	send(ctx context.Context, m *Kafka, f *failure) error
	String() string
}

// SQSSender is what [OnFailureSQS] needs; *sqs.Client has it.
type SQSSender interface {
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// OnFailureSQS returns the on-failure destination that sends one message to the queue at
// queueURL for each batch the mapping gives up on, in the format AWS documents for SQS and SNS
// destinations (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html): the
// metadata of the invocation only, not the records:
//
//	{"requestContext":{"requestId":"…","functionArn":"…","condition":"RetryAttemptsExhausted",
//	  "approximateInvokeCount":11},
//	 "responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},
//	 "version":"1.0","timestamp":"2026-01-15T10:00:00.021Z",
//	 "KafkaBatchInfo":{"batchSize":500,"eventSourceArn":"…","bootstrapServers":"…",
//	  "payloadSize":2039086,"recordsInfo":{"orders-0":{"firstRecordOffset":"100",
//	  "lastRecordOffset":"599","firstRecordTimestamp":"…","lastRecordTimestamp":"…"}}}}
//
// responseContext is null when no invocation held the records (MaximumPayloadSizeExceeded, or
// records too old before their first invocation); functionError is left out when the last
// invocation succeeded but reported the records in batchItemFailures. eventSourceArn is left
// out for self-managed Kafka.
func OnFailureSQS(client SQSSender, queueURL string) Destination {
	return sqsDestination{client: client, url: queueURL}
}

// OnFailureKafkaTopic returns the on-failure destination that produces one message per record
// given up on to topic, on the mapping's own cluster, as AWS documents for Kafka topic
// destinations ("kafka://topic", https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html):
// the message has the record's key, and its value is the metadata of [OnFailureSQS] with
// KafkaBatchInfo.batchSize 1 and recordInfo {"offset":"…","timestamp":"…"} instead of
// recordsInfo, plus "payload": the Kafka event that holds the record alone, as a JSON object.
// The topic must exist and differ from the mapping's topic.
func OnFailureKafkaTopic(topic string) Destination {
	return kafkaTopicDestination{topic: topic}
}

type sqsDestination struct {
	client SQSSender
	url    string
}

func (d sqsDestination) String() string { return "SQS queue " + d.url }

func (d sqsDestination) send(ctx context.Context, m *Kafka, f *failure) error {
	// recordsInfo has one range per partition: a multi-partition batch is given up on
	// per partition, the records of each in offset order.
	ranges := map[string]any{}
	for i := 0; i < len(f.records); {
		j := i
		for j+1 < len(f.records) && f.records[j+1].Partition == f.records[i].Partition {
			j++
		}
		first, last := f.records[i], f.records[j]
		ranges[m.partitionID(first.Partition)] = map[string]string{
			"firstRecordOffset":    strconv.FormatInt(first.Offset, 10),
			"lastRecordOffset":     strconv.FormatInt(last.Offset, 10),
			"firstRecordTimestamp": isoMillis(first.Timestamp),
			"lastRecordTimestamp":  isoMillis(last.Timestamp),
		}
		i = j + 1
	}
	info := map[string]any{
		"batchSize":   len(f.records),
		"payloadSize": f.payloadSize,
		"recordsInfo": ranges,
	}
	m.addSourceInfo(info)
	body, err := json.Marshal(f.record(m, info, nil))
	if err != nil {
		return fmt.Errorf("esm: on-failure record: %w", err)
	}
	_, err = d.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &d.url, MessageBody: new(string(body))})
	if err != nil {
		return fmt.Errorf("esm: sending on-failure record to %s: %w", d.url, err)
	}
	return nil
}

type kafkaTopicDestination struct{ topic string }

func (d kafkaTopicDestination) String() string { return "kafka://" + d.topic }

func (d kafkaTopicDestination) send(ctx context.Context, m *Kafka, f *failure) error {
	recs := make([]*kgo.Record, 0, len(f.records))
	for _, r := range f.records {
		pt := &kafkaPart{num: r.Partition, key: partitionKey(m.topic, r.Partition)}
		payload := m.env.build([]*kafkaEntry{{rec: r, part: pt, json: appendKafkaRecord(nil, r)}})
		info := map[string]any{
			"batchSize":   1,
			"payloadSize": len(payload),
			"recordInfo": map[string]string{
				"offset":    strconv.FormatInt(r.Offset, 10),
				"timestamp": isoMillis(r.Timestamp),
			},
		}
		m.addSourceInfo(info)
		value, err := json.Marshal(f.record(m, info, json.RawMessage(payload)))
		if err != nil {
			return fmt.Errorf("esm: on-failure record: %w", err)
		}
		recs = append(recs, &kgo.Record{Topic: d.topic, Key: r.Key, Value: value})
	}
	if err := m.client.Load().ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("esm: producing on-failure records to %s: %w", d, err)
	}
	return nil
}

// failure is what a mapping gives up on: records of one or more partitions, grouped by
// partition, in offset order within each.
type failure struct {
	condition   string
	records     []*kgo.Record
	invokes     int       // invocations that held these records
	last        *Response // the last of them; nil if none
	payloadSize int       // length of the event holding the records
}

// record is the on-failure record common to every destination, with info as KafkaBatchInfo
// and, when not nil, payload.
func (f *failure) record(m *Kafka, info map[string]any, payload json.RawMessage) map[string]any {
	var response any // null unless an invocation held the records
	if f.last != nil {
		rc := map[string]any{"statusCode": 200, "executedVersion": "$LATEST"}
		if f.last.Err != nil {
			rc["functionError"] = "Unhandled"
		}
		response = rc
	}
	rec := map[string]any{
		"requestContext": map[string]any{
			"requestId":              newRequestID(),
			"functionArn":            m.cfg.functionARN,
			"condition":              f.condition,
			"approximateInvokeCount": f.invokes,
		},
		"responseContext": response,
		"version":         "1.0",
		"timestamp":       isoMillis(time.Now()),
		"KafkaBatchInfo":  info,
	}
	if payload != nil {
		rec["payload"] = payload
	}
	return rec
}

// addSourceInfo sets KafkaBatchInfo's eventSourceArn (MSK only) and bootstrapServers.
func (m *Kafka) addSourceInfo(info map[string]any) {
	if m.cfg.sourceARN != "" {
		info["eventSourceArn"] = m.cfg.sourceARN
	}
	if len(m.cfg.bootstrap) > 0 {
		info["bootstrapServers"] = strings.Join(m.cfg.bootstrap, ",")
	}
}

func isoMillis(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// newRequestID returns a random version 4 UUID, the shape of a Lambda request ID.
func newRequestID() string { return uuid.NewString() }
