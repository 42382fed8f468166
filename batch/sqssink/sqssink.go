// Package sqssink is a failure destination for package batch that sends each failed record
// to an SQS queue, a dead-letter queue:
//
//	client := sqs.NewFromConfig(cfg)
//	lambda.Start(batch.KafkaHandler(handle,
//		batch.WithSink(sqssink.New(client, dlqURL), batch.SinkPermanent)))
//
// It is a package of its own so that batch, which every consumer links, does not link the
// SQS client: only a function that gives its failures to SQS carries it (as package
// batch/kafkasink carries the Kafka client). batch.ReadEnvelope reads back what it wrote.
package sqssink

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/limits"
)

// API is the part of the aws-sdk-go-v2 SQS client that the toolkit sends with: a [Sink]
// calls SendMessage, and package fanout's Dispatcher SendMessageBatch. *sqs.Client has it.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// Sink is a batch.Sink that sends each batch.Envelope, as JSON, in one SQS message. Make one
// with [New].
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
// it again. Under batch.WithIdempotency a record the sink took is not sent again (see
// batch.WithSink); without it, read a standard failure queue as "at least once".
//
// A message larger than the limit (limits.MaxSQSMessageBytes, or WithMaxMessageSize) is not
// sent: Send returns an error wrapping batch.ErrMessageTooLarge, and the record is reported
// as failed.
type Sink struct {
	client   API
	queueURL string
	fifo     bool
	maxSize  int
	groupID  func(*batch.Envelope) string
	err      error // the first invalid option
}

// Option configures a [Sink].
type Option func(*Sink)

// WithMaxMessageSize sets the largest message the sink sends, body and attributes together,
// for a queue whose MaximumMessageSize is below SQS's 1 MiB; n must be within
// 1..limits.MaxSQSMessageBytes. The default is limits.MaxSQSMessageBytes.
func WithMaxMessageSize(n int) Option {
	return func(s *Sink) {
		if n < 1 || n > limits.MaxSQSMessageBytes {
			s.invalid(fmt.Sprintf("WithMaxMessageSize(%d)", n), fmt.Sprintf("want 1 to %d", limits.MaxSQSMessageBytes))
		}
		s.maxSize = n
	}
}

// WithMessageGroupID sets how a FIFO queue's MessageGroupId is chosen, in place of the
// default, "topic-partition" or the SQS message's group; an empty result falls back to that
// default. It has no effect on a standard queue.
func WithMessageGroupID(fn func(*batch.Envelope) string) Option {
	return func(s *Sink) {
		if fn == nil {
			s.invalid("WithMessageGroupID(nil)", "want a function")
		}
		s.groupID = fn
	}
}

func (s *Sink) invalid(option, reason string) {
	if s.err == nil {
		s.err = &toolkit.OptionError{Package: "sqssink", Option: option, Reason: reason}
	}
}

// New returns a sink that sends envelopes to the queue at queueURL. The queue is FIFO when
// its URL ends in ".fifo". An option given an invalid value is an error (a
// *toolkit.OptionError) where the sink is given to batch.WithSink (so the handler made with
// it fails every batch), and every Send fails with it, rather than send in a way nobody
// asked for.
func New(client API, queueURL string, opts ...Option) *Sink {
	s := &Sink{client: client, queueURL: queueURL, fifo: strings.HasSuffix(queueURL, ".fifo"), maxSize: limits.MaxSQSMessageBytes}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Err returns the error of the first option New was given an invalid value, or nil.
// batch.WithSink checks it, so that such a sink fails the handler it is given to at once.
func (s *Sink) Err() error { return s.err }

// Send sends e as one message. It returns the SQS client's error, or an error wrapping
// batch.ErrMessageTooLarge, without retrying beyond the client's own retryer.
func (s *Sink) Send(ctx context.Context, e *batch.Envelope) error {
	if s.err != nil {
		return s.err
	}
	body, err := sqsBody(e)
	if err != nil {
		return fmt.Errorf("sqssink: %s: %w", envelopeName(e), err)
	}
	attrs := sqsAttributes(e)
	if size := sqsMessageSize(body, attrs); size > s.maxSize {
		return fmt.Errorf("%w: SQS: %s would be %d bytes, the queue takes at most %d", batch.ErrMessageTooLarge, envelopeName(e), size, s.maxSize)
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
		return fmt.Errorf("sqssink: send %s to %s: %w", envelopeName(e), s.queueURL, err)
	}
	return nil
}

// envelopeName names the record an envelope holds, for errors.
func envelopeName(e *batch.Envelope) string {
	if e.Source == "sqs" && e.Message != nil {
		return "message " + e.Message.MessageId
	}
	return fmt.Sprintf("record %s-%d@%d", e.Topic, e.Partition, e.Offset)
}

// sqsBody is e as JSON, with the two characters JSON allows raw but SQS refuses in a body
// (U+FFFE and U+FFFF, which can only occur inside strings) escaped. encoding/json already
// escapes control characters and replaces invalid UTF-8, so the rest is within SQS's set.
func sqsBody(e *batch.Envelope) (string, error) {
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

func sqsAttributes(e *batch.Envelope) map[string]types.MessageAttributeValue {
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

func defaultGroupID(e *batch.Envelope) string {
	if e.Source == "sqs" && e.Message != nil {
		if g := e.Message.Attributes["MessageGroupId"]; g != "" {
			return g
		}
		return e.Message.MessageId
	}
	return e.Topic + "-" + strconv.FormatInt(int64(e.Partition), 10)
}

func dedupID(e *batch.Envelope) string {
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
// character (a space, a byte beyond ASCII, from a WithMessageGroupID function, say),
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
