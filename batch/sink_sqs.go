package batch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQSAPI is the part of the aws-sdk-go-v2 SQS client that the toolkit sends with: [SQSSink]
// calls SendMessage, and package fanout's Dispatcher SendMessageBatch. *sqs.Client has it.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// SQSMaxMessageSize is the largest SQS message, body and message attributes together:
// 1 MiB (1,048,576 bytes).
const SQSMaxMessageSize = 1 << 20

// ErrMessageTooLarge is the error of a record whose message would exceed its destination's
// size limit: an SQSSink's queue, or the queue of package fanout's Dispatcher. The record is
// then reported as failed (or, from the Dispatcher, given to its sink) rather than lost.
var ErrMessageTooLarge = errors.New("batch: message too large")

// SQSSink is a [Sink] that sends each [Envelope], as JSON, in one SQS message. Make one with
// [NewSQSSink].
//
// Every message carries message attributes for routing and filtering without reading the
// body: "source" ("kafka" or "sqs"); for Kafka records "topic", "partition" and "offset" (the
// last two of type Number); for SQS messages "messageId".
//
// When the queue URL ends in ".fifo", messages carry a MessageGroupId, "topic-partition" for a
// Kafka record (so that a partition's failed records stay in order) or the SQS message's own
// group (its message id if it came from a standard queue), and a MessageDeduplicationId
// derived from the record's identity, "topic-partition-offset" or the SQS message id, so that
// a record sent twice within SQS's five-minute deduplication interval (its batch delivered
// again) is stored once. An id longer than SQS's 128 characters, or with a character SQS
// refuses in an id, becomes its first 63 characters (those SQS refuses replaced by "_"), "-",
// and the hex SHA-256 of the whole id.
//
// A standard queue has no deduplication: a record whose batch is delivered again may reach
// it again. Under [WithIdempotency] a record the sink took is not sent again (see
// [WithSink]); without it, read a standard failure queue as "at least once".
//
// A message larger than the limit (SQSMaxMessageSize, or WithSQSMaxMessageSize) is not sent:
// Send returns an error wrapping [ErrMessageTooLarge], and the record is reported as failed.
type SQSSink struct {
	client   SQSAPI
	queueURL string
	fifo     bool
	maxSize  int
	groupID  func(*Envelope) string
	err      error // the first invalid option
}

// SQSSinkOption configures an [SQSSink].
type SQSSinkOption func(*SQSSink)

// WithSQSMaxMessageSize sets the largest message the sink sends, body and attributes
// together, for a queue whose MaximumMessageSize is below SQS's 1 MiB; n must be within
// 1..SQSMaxMessageSize. The default is SQSMaxMessageSize.
func WithSQSMaxMessageSize(n int) SQSSinkOption {
	return func(s *SQSSink) {
		if n < 1 || n > SQSMaxMessageSize {
			s.invalid(fmt.Sprintf("WithSQSMaxMessageSize(%d): want 1 to %d", n, SQSMaxMessageSize))
		}
		s.maxSize = n
	}
}

// WithSQSMessageGroupID sets how a FIFO queue's MessageGroupId is chosen, in place of the
// default, "topic-partition" or the SQS message's group; an empty result falls back to that
// default. It has no effect on a standard queue.
func WithSQSMessageGroupID(fn func(*Envelope) string) SQSSinkOption {
	return func(s *SQSSink) {
		if fn == nil {
			s.invalid("WithSQSMessageGroupID(nil): want a function")
		}
		s.groupID = fn
	}
}

func (s *SQSSink) invalid(what string) {
	if s.err == nil {
		s.err = invalidOption(what)
	}
}

// NewSQSSink returns a sink that sends envelopes to the queue at queueURL. The queue is FIFO
// when its URL ends in ".fifo". An option given an invalid value is an error wrapping
// ErrInvalidOption where the sink is given to WithSink (so the handler made with it fails
// every batch), and every Send fails with it, rather than send in a way nobody asked for.
func NewSQSSink(client SQSAPI, queueURL string, opts ...SQSSinkOption) *SQSSink {
	s := &SQSSink{client: client, queueURL: queueURL, fifo: strings.HasSuffix(queueURL, ".fifo"), maxSize: SQSMaxMessageSize}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Send sends e as one message. It returns the SQS client's error, or an error wrapping
// ErrMessageTooLarge, without retrying beyond the client's own retryer.
func (s *SQSSink) Send(ctx context.Context, e *Envelope) error {
	if s.err != nil {
		return s.err
	}
	body, err := sqsBody(e)
	if err != nil {
		return fmt.Errorf("batch: sqs sink: %s: %w", envelopeName(e), err)
	}
	attrs := sqsAttributes(e)
	if size := sqsMessageSize(body, attrs); size > s.maxSize {
		return fmt.Errorf("%w: SQS: %s would be %d bytes, the queue takes at most %d", ErrMessageTooLarge, envelopeName(e), size, s.maxSize)
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(s.queueURL), MessageBody: aws.String(body), MessageAttributes: attrs}
	if s.fifo {
		group := ""
		if s.groupID != nil {
			group = s.groupID(e)
		}
		if group == "" {
			group = defaultGroupID(e)
		}
		in.MessageGroupId = aws.String(sqsID(group))
		in.MessageDeduplicationId = aws.String(sqsID(dedupID(e)))
	}
	if _, err := s.client.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("batch: sqs sink: send %s to %s: %w", envelopeName(e), s.queueURL, err)
	}
	return nil
}

// envelopeName names the record an envelope holds, for errors.
func envelopeName(e *Envelope) string {
	if e.Source == "sqs" && e.Message != nil {
		return "message " + e.Message.MessageId
	}
	return fmt.Sprintf("record %s-%d@%d", e.Topic, e.Partition, e.Offset)
}

// sqsBody is e as JSON, with the two characters JSON allows raw but SQS refuses in a body
// (U+FFFE and U+FFFF, which can only occur inside strings) escaped. encoding/json already
// escapes control characters and replaces invalid UTF-8, so the rest is within SQS's set.
func sqsBody(e *Envelope) (string, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	if bytes.Contains(b, []byte("\xef\xbf\xbe")) || bytes.Contains(b, []byte("\xef\xbf\xbf")) {
		b = bytes.ReplaceAll(b, []byte("\xef\xbf\xbe"), []byte(`\ufffe`))
		b = bytes.ReplaceAll(b, []byte("\xef\xbf\xbf"), []byte(`\uffff`))
	}
	return string(b), nil
}

func sqsAttributes(e *Envelope) map[string]types.MessageAttributeValue {
	attrs := map[string]types.MessageAttributeValue{}
	str := func(name, v string) {
		if v != "" { // SQS refuses empty attribute values
			attrs[name] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
	}
	num := func(name string, v int64) {
		attrs[name] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.FormatInt(v, 10))}
	}
	str("source", e.Source)
	if e.Source == "sqs" {
		if e.Message != nil {
			str("messageId", e.Message.MessageId)
		}
	} else {
		str("topic", e.Topic)
		num("partition", int64(e.Partition))
		num("offset", e.Offset)
	}
	return attrs
}

// sqsMessageSize is the size SQS checks against MaximumMessageSize: the body plus each
// attribute's name, data type and value.
func sqsMessageSize(body string, attrs map[string]types.MessageAttributeValue) int {
	n := len(body)
	for name, a := range attrs {
		n += len(name) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue)) + len(a.BinaryValue)
	}
	return n
}

func defaultGroupID(e *Envelope) string {
	if e.Source == "sqs" && e.Message != nil {
		if g := e.Message.Attributes["MessageGroupId"]; g != "" {
			return g
		}
		return e.Message.MessageId
	}
	return e.Topic + "-" + strconv.FormatInt(int64(e.Partition), 10)
}

func dedupID(e *Envelope) string {
	if e.Source == "sqs" && e.Message != nil {
		return e.Message.MessageId
	}
	return e.Topic + "-" + strconv.FormatInt(int64(e.Partition), 10) + "-" + strconv.FormatInt(e.Offset, 10)
}

// sqsIDMax is the longest MessageGroupId or MessageDeduplicationId SQS takes.
const sqsIDMax = 128

// sqsID fits id into what SQS takes as a MessageGroupId or MessageDeduplicationId: "up to 128
// characters", which "can contain alphanumeric characters (a-z, A-Z, 0-9) and punctuation
// (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~)" (SQS API Reference, SendMessage), that is the bytes
// 0x21 to 0x7E. An id within both stays as it is: Kafka topic names (letters, digits, ".",
// "_", "-"), the offsets and SQS message ids always are. A longer one, or one with another
// character (a space, a byte beyond ASCII, from a WithSQSMessageGroupID function, say),
// becomes its first 63 bytes, each byte SQS refuses replaced by "_", then "-" and the 64 hex
// digits of the SHA-256 of the whole id: the same id always gives the same result, and two
// ids differ in it as their hashes do.
func sqsID(id string) string {
	if len(id) <= sqsIDMax && sqsIDChars(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	head := []byte(id[:min(len(id), sqsIDMax-1-2*len(sum))])
	for i, c := range head {
		if c < 0x21 || c > 0x7e {
			head[i] = '_'
		}
	}
	return string(head) + "-" + hex.EncodeToString(sum[:])
}

// sqsIDChars reports whether every byte of id is one SQS takes in an id (0x21 to 0x7E).
func sqsIDChars(id string) bool {
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}
