package esm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// sqsEventAttributes are the system attributes Lambda puts in a record's attributes, when
// the message has them: the four every message has, AWSTraceHeader when it was sent with
// one, and a FIFO message's three.
var sqsEventAttributes = []string{
	"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp",
	"AWSTraceHeader", "MessageGroupId", "MessageDeduplicationId", "SequenceNumber",
}

// sqsRecord is one record of the event, its members in the order Lambda writes them.
type sqsRecord struct {
	MessageID              string                  `json:"messageId"`
	ReceiptHandle          string                  `json:"receiptHandle"`
	Body                   string                  `json:"body"`
	Attributes             map[string]string       `json:"attributes"`
	MessageAttributes      map[string]sqsAttribute `json:"messageAttributes"`
	MD5OfBody              string                  `json:"md5OfBody"`
	MD5OfMessageAttributes string                  `json:"md5OfMessageAttributes,omitempty"`
	EventSource            string                  `json:"eventSource"`
	EventSourceARN         string                  `json:"eventSourceARN"`
	AWSRegion              string                  `json:"awsRegion"`
}

// sqsAttribute is a message attribute as Lambda writes it: binary values in standard
// base64 (encoding/json's []byte), the list members always present (SQS has no list
// values yet, so they are empty).
type sqsAttribute struct {
	StringValue      *string  `json:"stringValue,omitempty"`
	BinaryValue      []byte   `json:"binaryValue,omitempty"`
	StringListValues []string `json:"stringListValues"`
	BinaryListValues [][]byte `json:"binaryListValues"`
	DataType         string   `json:"dataType"`
}

// sqsRecordJSON returns the record of msg in the event Lambda sends for a message of the
// queue arn in region: {messageId, receiptHandle, body, attributes, messageAttributes,
// md5OfBody, [md5OfMessageAttributes], eventSource "aws:sqs", eventSourceARN, awsRegion}.
// md5OfMessageAttributes is left out when the message has no attributes.
func sqsRecordJSON(msg types.Message, arn, region string) ([]byte, error) {
	if msg.MessageId == nil || msg.ReceiptHandle == nil || msg.Body == nil {
		return nil, errors.New("the message lacks its MessageId, ReceiptHandle or Body")
	}
	r := sqsRecord{
		MessageID:              *msg.MessageId,
		ReceiptHandle:          *msg.ReceiptHandle,
		Body:                   *msg.Body,
		Attributes:             make(map[string]string, 4),
		MessageAttributes:      make(map[string]sqsAttribute, len(msg.MessageAttributes)),
		MD5OfBody:              aws.ToString(msg.MD5OfBody),
		MD5OfMessageAttributes: aws.ToString(msg.MD5OfMessageAttributes),
		EventSource:            "aws:sqs",
		EventSourceARN:         arn,
		AWSRegion:              region,
	}
	for _, k := range sqsEventAttributes {
		if v, ok := msg.Attributes[k]; ok {
			r.Attributes[k] = v
		}
	}
	for name, a := range msg.MessageAttributes {
		r.MessageAttributes[name] = sqsAttribute{
			StringValue: a.StringValue, BinaryValue: a.BinaryValue,
			StringListValues: sqsNonNil(a.StringListValues), BinaryListValues: sqsNonNil(a.BinaryListValues),
			DataType: aws.ToString(a.DataType),
		}
	}
	if len(msg.MessageAttributes) == 0 {
		r.MD5OfMessageAttributes = ""
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as Lambda writes bodies: "<" stays "<"
	if err := enc.Encode(&r); err != nil {
		return nil, fmt.Errorf("encoding the record: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func sqsNonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// SQSMessage returns msg, received from the queue with the ARN arn in region, as a function
// behind an SQS event source mapping sees it (one of events.SQSEvent's Records): the system
// attributes Lambda passes on, message attributes with empty list values.
func SQSMessage(msg types.Message, arn, region string) events.SQSMessage {
	ev := events.SQSMessage{
		MessageId: aws.ToString(msg.MessageId), ReceiptHandle: aws.ToString(msg.ReceiptHandle),
		Body: aws.ToString(msg.Body), Md5OfBody: aws.ToString(msg.MD5OfBody),
		Md5OfMessageAttributes: aws.ToString(msg.MD5OfMessageAttributes),
		Attributes:             map[string]string{}, MessageAttributes: map[string]events.SQSMessageAttribute{},
		EventSourceARN: arn, EventSource: "aws:sqs", AWSRegion: region,
	}
	for _, k := range sqsEventAttributes {
		if v, ok := msg.Attributes[k]; ok {
			ev.Attributes[k] = v
		}
	}
	for name, a := range msg.MessageAttributes {
		ev.MessageAttributes[name] = events.SQSMessageAttribute{StringValue: a.StringValue, BinaryValue: a.BinaryValue,
			StringListValues: sqsNonNil(a.StringListValues), BinaryListValues: sqsNonNil(a.BinaryListValues), DataType: aws.ToString(a.DataType)}
	}
	return ev
}

// sqsResponseError is a partial-batch response Lambda treats as the failure of the whole
// batch.
type sqsResponseError struct {
	Path   string // where in the response, e.g. "batchItemFailures[2].itemIdentifier"
	Reason string
}

func (e *sqsResponseError) Error() string {
	if e.Path == "" {
		return "esm: partial-batch response: " + e.Reason
	}
	return fmt.Sprintf("esm: partial-batch response: %s: %s", e.Path, e.Reason)
}

// parseSQSBatchResponse reads a function's response as an SQS partial-batch response,
// {"batchItemFailures":[{"itemIdentifier":"<messageId>"}]}, for a batch of the messages in
// ids, and returns the message IDs it lists. Member names are case-sensitive, as Lambda's
// are: an object without batchItemFailures (say with BatchItemFailures) lists none.
//
// A complete success (nil, nil): an empty or null payload, an object without
// batchItemFailures, or with it null or []. A complete failure (an *sqsResponseError): not
// JSON, JSON that is not an object (AWS does not say; keeping the messages loses nothing),
// batchItemFailures not a list, an entry that is not an object, has no itemIdentifier, or
// has one that is null, not a string, empty, or not the ID of a message in ids.
func parseSQSBatchResponse(payload []byte, ids map[string]bool) (map[string]bool, error) {
	p := bytes.TrimSpace(payload)
	if len(p) == 0 || string(p) == "null" {
		return nil, nil
	}
	if !json.Valid(p) {
		return nil, &sqsResponseError{Reason: "not valid JSON"}
	}
	if p[0] != '{' {
		return nil, &sqsResponseError{Reason: "not a JSON object"}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(p, &top); err != nil {
		return nil, &sqsResponseError{Reason: err.Error()}
	}
	raw, ok := top["batchItemFailures"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '[' {
		return nil, &sqsResponseError{Path: "batchItemFailures", Reason: "not a list"}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &sqsResponseError{Path: "batchItemFailures", Reason: err.Error()}
	}
	failed := make(map[string]bool, len(items))
	for i, it := range items {
		path := fmt.Sprintf("batchItemFailures[%d]", i)
		if len(it) == 0 || it[0] != '{' {
			return nil, &sqsResponseError{Path: path, Reason: "not an object"}
		}
		var item map[string]json.RawMessage
		if err := json.Unmarshal(it, &item); err != nil {
			return nil, &sqsResponseError{Path: path, Reason: err.Error()}
		}
		v, ok := item["itemIdentifier"]
		if !ok {
			keys := make([]string, 0, len(item))
			for k := range item {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return nil, &sqsResponseError{Path: path, Reason: fmt.Sprintf("no itemIdentifier (members %q)", keys)}
		}
		path += ".itemIdentifier"
		if string(v) == "null" {
			return nil, &sqsResponseError{Path: path, Reason: "null"}
		}
		var id string
		if err := json.Unmarshal(v, &id); err != nil {
			return nil, &sqsResponseError{Path: path, Reason: "not a string"}
		}
		switch {
		case id == "":
			return nil, &sqsResponseError{Path: path, Reason: "empty"}
		case !ids[id]:
			return nil, &sqsResponseError{Path: path, Reason: fmt.Sprintf("%q is not the ID of a message in the batch", id)}
		}
		failed[id] = true
	}
	if len(failed) == 0 {
		return nil, nil
	}
	return failed, nil
}

// record returns p's record JSON, with ApproximateReceiveCount less the mapping's own
// ChangeMessageVisibility calls (local-aws-sqs counts those as receives).
func (m *SQS) record(p *sqsMsg) ([]byte, error) {
	msg := p.msg
	if p.ext > 0 {
		k := string(types.MessageSystemAttributeNameApproximateReceiveCount)
		if n, err := strconv.Atoi(msg.Attributes[k]); err == nil && n-p.ext >= 1 {
			attrs := make(map[string]string, len(msg.Attributes))
			for a, v := range msg.Attributes {
				attrs[a] = v
			}
			attrs[k] = strconv.Itoa(n - p.ext)
			msg.Attributes = attrs
		}
	}
	rec, err := sqsRecordJSON(msg, m.cfg.queueARN, m.region)
	if err != nil {
		return nil, fmt.Errorf("esm: SQS mapping %q: message %s: %w", m.cfg.name, p.id, err)
	}
	return rec, nil
}
