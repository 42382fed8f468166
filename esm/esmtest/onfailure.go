package esmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// OnFailureRecord is one on-failure record a Kafka mapping sent to its destination when it
// gave up on records: an SQS destination gets one per batch, naming its offsets; a kafka://
// destination one per record, with the record's event as its payload.
type OnFailureRecord struct {
	Condition     string // requestContext.condition: ConditionRetryAttemptsExhausted...
	InvokeCount   int    // requestContext.approximateInvokeCount
	FunctionError string // responseContext.functionError: "Unhandled" when the last invocation failed, else ""
	// Partition is the records' partition, "topic-N", and FirstOffset and LastOffset the
	// first and last of them: the same offset for a Kafka topic destination, which sends one
	// on-failure record per record.
	Partition               string
	FirstOffset, LastOffset int64
	Key                     []byte          // Kafka topic destination: the record's key
	Payload                 json.RawMessage // Kafka topic destination: the event holding the record alone
	Raw                     []byte          // the whole on-failure record
}

// parseOnFailure reads an on-failure record; key is the Kafka message's.
func parseOnFailure(data, key []byte) (OnFailureRecord, error) {
	var v struct {
		RequestContext struct {
			Condition string `json:"condition"`
			Count     int    `json:"approximateInvokeCount"`
		} `json:"requestContext"`
		ResponseContext *struct {
			FunctionError string `json:"functionError"`
		} `json:"responseContext"`
		Info struct {
			RecordsInfo map[string]struct {
				First string `json:"firstRecordOffset"`
				Last  string `json:"lastRecordOffset"`
			} `json:"recordsInfo"`
			RecordInfo *struct {
				Offset string `json:"offset"`
			} `json:"recordInfo"`
		} `json:"KafkaBatchInfo"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return OnFailureRecord{}, fmt.Errorf("not an on-failure record: %w", err)
	}
	f := OnFailureRecord{Condition: v.RequestContext.Condition, InvokeCount: v.RequestContext.Count, Key: key, Payload: v.Payload, Raw: data}
	if v.ResponseContext != nil {
		f.FunctionError = v.ResponseContext.FunctionError
	}
	var err error
	switch {
	case v.Info.RecordInfo != nil:
		f.FirstOffset, err = strconv.ParseInt(v.Info.RecordInfo.Offset, 10, 64)
		f.LastOffset = f.FirstOffset
		f.Partition, err = payloadPartition(v.Payload, err)
	case len(v.Info.RecordsInfo) == 1:
		for p, ri := range v.Info.RecordsInfo {
			f.Partition = p
			f.FirstOffset, err = strconv.ParseInt(ri.First, 10, 64)
			if err == nil {
				f.LastOffset, err = strconv.ParseInt(ri.Last, 10, 64)
			}
		}
	default:
		err = fmt.Errorf("KafkaBatchInfo names %d partitions, want 1", len(v.Info.RecordsInfo))
	}
	if err != nil {
		return OnFailureRecord{}, fmt.Errorf("on-failure record %s: %w", data, err)
	}
	return f, nil
}

// payloadPartition returns the one partition key ("topic-N") of the event in payload.
func payloadPartition(payload json.RawMessage, err error) (string, error) {
	if err != nil {
		return "", err
	}
	var ev struct {
		Records map[string]json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil || len(ev.Records) != 1 {
		return "", fmt.Errorf("payload is not an event of one partition")
	}
	for p := range ev.Records {
		return p, nil
	}
	return "", nil
}

// receiveAll receives every message of the queue at url until a receive returns none, and
// deletes them; it returns their bodies in the order received.
func receiveAll(client *sqs.Client, url string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	var out []string
	for {
		msgs, err := receive(ctx, client, url)
		if err != nil || len(msgs) == 0 {
			return out, err
		}
		for _, m := range msgs {
			out = append(out, aws.ToString(m.Body))
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
				return out, fmt.Errorf("esmtest: deleting from %s: %w", url, err)
			}
		}
	}
}

// receive makes one ReceiveMessage call that does not wait, with every attribute.
func receive(ctx context.Context, client *sqs.Client, url string) ([]types.Message, error) {
	resp, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: &url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, VisibilityTimeout: 30,
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		// local-aws-sqs returns system attributes only for the deprecated field.
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}, //lint:ignore SA1019 see above
	})
	if err != nil {
		return nil, fmt.Errorf("esmtest: receiving from %s: %w", url, err)
	}
	return resp.Messages, nil
}
