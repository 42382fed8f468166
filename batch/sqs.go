package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/internal/sqsparse"
)

// MessageFunc handles one SQS message. Returning an error fails the message; wrap it
// with Permanent when retrying cannot help.
type MessageFunc func(ctx context.Context, m *events.SQSMessage) error

// ProcessSQS runs h on every message of the batch and returns the partial-batch response
// (the event source mapping needs ReportBatchItemFailures).
//
// Messages of a standard queue are processed in parallel (WithConcurrency bounds how many at
// once, default 10). Messages of a FIFO queue (an ARN ending in ".fifo") are processed in
// order within each MessageGroupId, groups in parallel; when a message fails, it and every
// later message of its group are reported, so that they come back in order, and other groups
// go on. Retries, deadline, filter, idempotency, logs, hooks and errors work as in
// ProcessKafka.
func ProcessSQS(ctx context.Context, ev *events.SQSEvent, h MessageFunc, opts ...Option) (events.SQSEventResponse, error) {
	cfg := sqsConfig(opts)
	if cfg.err != nil {
		return events.SQSEventResponse{}, cfg.err
	}
	fifo := len(ev.Records) > 0 && strings.HasSuffix(ev.Records[0].EventSourceARN, ".fifo")
	if cfg.keyConcurrency != 0 {
		if !fifo && len(ev.Records) > 0 {
			// Fail loud: the option promises an order that a standard queue does not have.
			return events.SQSEventResponse{}, invalidOption(fmt.Sprintf("WithKeyConcurrency(%d): applies to Kafka and SQS FIFO queues; this batch comes from a standard queue (%s), which keeps no order", cfg.keyConcurrency, ev.Records[0].EventSourceARN))
		}
		// A FIFO group is a key: groups run at once, each in order, at most n messages (one
		// per group) in flight.
		cfg.concurrency = cfg.keyConcurrency
	}
	units := newSQSUnits(ev, fifo)
	if !fifo && cfg.concurrency == 0 {
		cfg.concurrency = 10
	}
	info := &BatchInfo{Source: "sqs", Records: len(ev.Records), Groups: units.count()}
	failed := make([]bool, len(ev.Records))
	s := &unitSet{
		len:   units.size,
		item:  func(i, k int) Item { return Item{SQS: units.message(i, k)} },
		group: units.id,
		do: func(ctx context.Context, i, k int, u *unit) *failure {
			m := units.message(i, k)
			return cfg.record(ctx, Item{SQS: m}, func(ctx context.Context) error { return h(ctx, m) }, u)
		},
		report: func(i, k int) {
			for ; k < units.size(i); k++ {
				failed[units.index(i, k)] = true
			}
		},
	}
	s.info = func(i int) *GroupInfo {
		g := &GroupInfo{Source: "sqs", ID: units.id(i), Messages: make([]*events.SQSMessage, units.size(i))}
		for k := range g.Messages {
			g.Messages[k] = units.message(i, k)
		}
		return g
	}
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	if err := cfg.runBatch(ctx, info, s, units.count(), func() {
		for i, f := range failed {
			if f {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
			}
		}
	}); err != nil {
		return events.SQSEventResponse{}, err // a panic where no record was in hand: the invocation fails
	}
	if cfg.errorOnAllFail && len(resp.BatchItemFailures) > 0 && len(resp.BatchItemFailures) == len(ev.Records) {
		return resp, ErrAllFailed
	}
	return resp, nil
}

// sqsUnits are the units of work of an SQS batch: one message each on a standard queue, one
// message group each, in order, on a FIFO queue. A standard queue's units are the messages
// themselves, so that its batch allocates nothing per message to describe them.
type sqsUnits struct {
	ev     *events.SQSEvent
	groups [][]int // FIFO: the indexes of each group's messages, in order; nil for a standard queue
}

func newSQSUnits(ev *events.SQSEvent, fifo bool) *sqsUnits {
	u := &sqsUnits{ev: ev}
	if !fifo {
		return u
	}
	u.groups = [][]int{}
	index := map[string]int{}
	for i := range ev.Records {
		g := ev.Records[i].Attributes["MessageGroupId"]
		n, ok := index[g]
		if !ok {
			n = len(u.groups)
			index[g] = n
			u.groups = append(u.groups, nil)
		}
		u.groups[n] = append(u.groups[n], i)
	}
	return u
}

// count is the number of units.
func (u *sqsUnits) count() int {
	if u.groups == nil {
		return len(u.ev.Records)
	}
	return len(u.groups)
}

// size is the number of messages in unit i.
func (u *sqsUnits) size(i int) int {
	if u.groups == nil {
		return 1
	}
	return len(u.groups[i])
}

// index is the index in the event of message k of unit i.
func (u *sqsUnits) index(i, k int) int {
	if u.groups == nil {
		return i
	}
	return u.groups[i][k]
}

func (u *sqsUnits) message(i, k int) *events.SQSMessage { return &u.ev.Records[u.index(i, k)] }

// id is unit i's ID in a Failure and a GroupInfo: its MessageGroupId on a FIFO queue, the
// message's ID on a standard queue.
func (u *sqsUnits) id(i int) string {
	if u.groups == nil {
		return u.ev.Records[i].MessageId
	}
	return u.message(i, 0).Attributes["MessageGroupId"]
}

// SQSHandler returns the handler for lambda.Start that processes each batch with ProcessSQS,
// h and opts:
//
//	lambda.Start(batch.SQSHandler(h))
//
// The options are checked here, once, as by KafkaHandler.
func SQSHandler(h MessageFunc, opts ...Option) SQSFunc {
	if err := sqsConfig(opts).err; err != nil {
		return func(context.Context, *events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, err
		}
	}
	return func(ctx context.Context, ev *events.SQSEvent) (events.SQSEventResponse, error) {
		return ProcessSQS(ctx, ev, h, opts...)
	}
}

// SQSFunc is a Lambda handler for SQS batches. It also implements lambda.Handler, which
// lambda.Start prefers: Invoke decodes the payload into an events.SQSEvent and writes the
// partial-batch response.
type SQSFunc func(ctx context.Context, ev *events.SQSEvent) (events.SQSEventResponse, error)

// Invoke implements lambda.Handler. It decodes the payload in one pass over its bytes (a
// large one on two cores when there are two), several times faster than encoding/json and
// into the same events.SQSEvent, value for value (see
// docs/performance.md#sqs-decoding and docs/handlers.md#sqs-payloads). A payload that is not
// an SQS event fails the invocation with an error that names the JSON path of the bad value
// and quotes it, such as `batch: SQS event: Records[3].body: want a string, got 42`; no
// message is processed then.
func (f SQSFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	ev, err := sqsparse.Parse(payload)
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	resp, err := f(ctx, ev)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

// sqsConfig is the configuration of an SQS batch: the options, checked.
func sqsConfig(opts []Option) config {
	cfg := newConfig(opts)
	if cfg.kafkaKey != nil && cfg.sqsRecord == nil {
		cfg.invalid("WithIdempotencyKey: applies to Kafka records; ProcessSQS keys on the message ID unless WithSQSKafkaRecord says how to read the record a message carries")
	}
	cfg.useMetrics("sqs")
	return cfg
}
