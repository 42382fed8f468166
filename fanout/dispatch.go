package fanout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// SQSAPI is the part of the aws-sdk-go-v2 SQS client that a [Dispatcher] uses; *sqs.Client
// has it.
type SQSAPI interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// MaxBatchEntries is the most entries SQS takes in one SendMessageBatch call.
const MaxBatchEntries = 10

// MaxBatchSize is the most bytes SQS takes in one SendMessageBatch call, counted as for
// MaxMessageSize and summed over the entries: 1 MiB.
const MaxBatchSize = 1 << 20

// A Dispatcher sends the records of Kafka batches to an SQS queue, one message per record,
// in the format that [Record] reads back. Make one with [NewDispatcher]; it is safe for
// concurrent use, and meant to be made once, outside the handler.
type Dispatcher struct {
	client   SQSAPI
	queueURL string
	queue    string // the queue's name, for logs and the metric dimension
	fifo     bool
	cfg      config
}

// Option configures a [Dispatcher]. An option given an invalid value (a nil sink, a
// concurrency of 0) makes every Dispatch fail, without a record sent, with an error wrapping
// batch.ErrInvalidOption that names the option, rather than run with a setting the caller
// did not ask for.
type Option func(*config)

type config struct {
	err         error // the first invalid option
	group       func(*kafkaevent.Record) string
	concurrency int
	attempts    int
	backoff     time.Duration
	maxBackoff  time.Duration
	margin      time.Duration
	maxSize     int
	sink        batch.Sink
	policy      batch.SinkPolicy
	logger      *slog.Logger
	metrics     io.Writer
	namespace   string
	now         func() time.Time
}

func (c *config) invalid(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("fanout: %w: %s", batch.ErrInvalidOption, fmt.Sprintf(format, args...))
	}
}

// WithMessageGroup sets the MessageGroupId of each record's message on a FIFO queue to what
// group returns for it: records of one group reach the workers in Kafka order, and groups
// are processed in parallel. The ID must be 1 to 128 ASCII letters, digits or punctuation;
// a record for which group returns anything else cannot be sent (an *EncodeError, handled as
// a record SQS refused). group must be safe for concurrent use. The default is the record's
// key (see the package documentation); WithPartitionGroups is the other common choice. The
// last of WithMessageGroup and WithPartitionGroups given wins. Neither has any effect on a
// standard queue.
func WithMessageGroup(group func(r *kafkaevent.Record) string) Option {
	return func(c *config) {
		if group == nil {
			c.invalid("WithMessageGroup(nil): want a function")
		}
		c.group = group
	}
}

// WithPartitionGroups makes each Kafka partition one FIFO message group ("topic-N"): the
// workers then see the records of a partition strictly in Kafka order, as a Kafka consumer
// would, at the cost of parallelism (one group per partition, and at most one message of a
// group in flight while it is sent). By default the group is the record's key.
func WithPartitionGroups() Option { return func(c *config) { c.group = groupByPartition } }

// WithConcurrency bounds how many SendMessageBatch calls are in flight at once (and how
// many records are given to the sink at once); n must be at least 1. The default is 10.
func WithConcurrency(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.invalid("WithConcurrency(%d): want at least 1", n)
		}
		c.concurrency = n
	}
}

// WithRetry sets the attempts per record (at least 1; the default is 5) and the first
// backoff (the default is 100 ms), which doubles after each attempt of the record, with
// jitter, up to 2 seconds. Only what SQS did not accept is sent again: the entries in a
// call's Failed list that are not the sender's fault, or every entry of a call that failed
// whole with an error worth retrying (throttling, a server error, a lost connection). No
// retry is sent after the deadline (see WithDeadlineMargin). These attempts come on top of
// the SQS client's own retries of a whole call.
func WithRetry(attempts int, backoff time.Duration) Option {
	return func(c *config) {
		if attempts < 1 || backoff < 0 {
			c.invalid("WithRetry(%d, %v): want at least 1 attempt and a backoff of 0 or more", attempts, backoff)
		}
		c.attempts, c.backoff = attempts, backoff
	}
}

// WithDeadlineMargin sets how long before the function's deadline (the context's) the
// dispatcher stops: no call starts after it, the calls in flight are cancelled then, and the
// records not accepted by then are reported, so that the response reaches Lambda before its
// timeout would retry the whole batch. The default is 500 ms; 0 stops at the deadline itself.
func WithDeadlineMargin(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("WithDeadlineMargin(%v): want 0 or more", d)
		}
		c.margin = d
	}
}

// WithMaxMessageSize sets the largest message the dispatcher sends, counted as SQS does (the
// body and each message attribute's name, data type and value), for a queue whose
// MaximumMessageSize is below SQS's limit; n must be within 1..MaxMessageSize. A larger
// record is not sent: it fails with an *EncodeError wrapping ErrTooLarge. The default is
// MaxMessageSize (1 MiB).
func WithMaxMessageSize(n int) Option {
	return func(c *config) {
		if n < 1 || n > MaxMessageSize {
			c.invalid("WithMaxMessageSize(%d): want 1 to %d", n, MaxMessageSize)
		}
		c.maxSize = n
	}
}

// WithSink sends the records the policy selects to s instead of reporting them, so that a
// record that cannot be sent does not hold up its partition: under batch.SinkPermanent, the
// records that cannot travel (an *EncodeError: too large, a record that did not decode) and
// those SQS refused as the sender's fault; under batch.SinkExhausted, also those SQS failed
// on every attempt. Records held back by the deadline, or by a call that failed whole (a
// throttled call, a queue that does not exist, missing permissions), are never given to the
// sink: they are reported, so that Kafka delivers them again. A record the sink refuses is
// reported instead, and logged with the sink's error. By default there is no sink: every
// record not accepted is reported.
func WithSink(s batch.Sink, policy batch.SinkPolicy) Option {
	return func(c *config) {
		if s == nil {
			c.invalid("WithSink(nil, %d): want a sink", policy)
		} else if policy != batch.SinkPermanent && policy != batch.SinkExhausted {
			c.invalid("WithSink: unknown policy %d", policy)
		}
		c.sink, c.policy = s, policy
	}
}

// WithLogger sets the logger of the summary line of each Dispatch (level Info, or Warn when
// a record was not accepted) and of the line logged for each record not accepted (level
// Error); by default slog.Default(). The lines never carry a record's key, value or headers.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.invalid("WithLogger(nil): want a logger (slog.New(slog.DiscardHandler) logs nothing)")
		}
		c.logger = l
	}
}

// WithMetrics writes one CloudWatch Embedded Metric Format line per Dispatch to w (os.Stdout
// in Lambda, where CloudWatch Logs turns it into metrics), with the queue's name as the
// dimension "Queue": records, records dispatched, failed and sent to the sink,
// SendMessageBatch calls, entries retried, bytes sent, the duration, and the age of the
// oldest and newest records at dispatch. Custom metrics cost money, so by default none are
// written. The namespace is batch.DefaultNamespace unless WithMetricsNamespace names
// another.
func WithMetrics(w io.Writer) Option {
	return func(c *config) {
		if w == nil {
			c.invalid("WithMetrics(nil): want a writer")
		}
		c.metrics = w
	}
}

// WithMetricsNamespace sets the CloudWatch namespace of the metrics that WithMetrics turns on
// (by default batch.DefaultNamespace). Without WithMetrics it has no effect.
func WithMetricsNamespace(ns string) Option {
	return func(c *config) {
		if ns == "" {
			c.invalid("WithMetricsNamespace(\"\"): want a namespace")
		}
		c.namespace = ns
	}
}

// withClock is for tests.
func withClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// NewDispatcher returns a dispatcher that sends records to the queue at queueURL through
// client (an *sqs.Client). The queue is FIFO when its URL ends in ".fifo". A nil client, an
// empty URL or an option given an invalid value makes every Dispatch fail with an error
// wrapping batch.ErrInvalidOption.
func NewDispatcher(client SQSAPI, queueURL string, opts ...Option) *Dispatcher {
	d := &Dispatcher{
		client:   client,
		queueURL: queueURL,
		queue:    queueURL[strings.LastIndexByte(queueURL, '/')+1:],
		fifo:     strings.HasSuffix(queueURL, ".fifo"),
		cfg: config{
			concurrency: 10,
			attempts:    5,
			backoff:     100 * time.Millisecond,
			maxBackoff:  2 * time.Second,
			margin:      500 * time.Millisecond,
			maxSize:     MaxMessageSize,
			namespace:   batch.DefaultNamespace,
			now:         time.Now,
		},
	}
	c := &d.cfg
	if client == nil {
		c.invalid("NewDispatcher: nil client")
	}
	if queueURL == "" {
		c.invalid("NewDispatcher: empty queue URL")
	}
	for _, o := range opts {
		o(c)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	return d
}

// ErrDeadline is the error of a record not accepted by SQS because the function's deadline
// (less WithDeadlineMargin) came first: it was never sent, or its retry would have come too
// late, or its call was cancelled.
var ErrDeadline = errors.New("fanout: not sent: the function's deadline is near")

// ErrGroupBlocked is the error of a record of a FIFO queue not sent because an earlier record
// of its message group was not accepted: sending it would have put it before that record.
var ErrGroupBlocked = errors.New("fanout: not sent: an earlier record of its message group was not accepted")

// ErrNoResult is the error of an entry that a SendMessageBatch response named neither among
// the successful nor among the failed entries. It is retried, as an entry SQS failed.
var ErrNoResult = errors.New("fanout: SQS answered without a result for the entry")

// EntryError is SQS's answer for an entry of a SendMessageBatch call that it did not accept
// (an entry of the response's Failed list). An entry that is the sender's fault is not sent
// again: it is handled like a record that cannot travel (see WithSink).
type EntryError struct {
	Code        string
	Message     string
	SenderFault bool
}

func (e *EntryError) Error() string {
	fault := ""
	if e.SenderFault {
		fault = " (sender's fault)"
	}
	return fmt.Sprintf("fanout: SQS did not accept the message: %s: %s%s", e.Code, e.Message, fault)
}

// Dispatch sends every record of ev to the queue and returns the partial-batch response for
// the event source mapping: the records SQS did not accept, each with the rest of its
// partition, as batch.ProcessKafka reports them, so that Kafka delivers them again in order.
// A record is counted as sent only once a SendMessageBatch response lists it among the
// successful entries.
//
// Records are packed into SendMessageBatch calls of at most MaxBatchEntries entries and
// MaxBatchSize bytes, and up to WithConcurrency calls are in flight at once. An entry SQS
// fails (the response's Failed list, which comes with HTTP 200) is sent again, alone of its
// call, after a backoff (see WithRetry); an entry that is the sender's fault is not. A
// record that cannot be sent (an *EncodeError, a refusal that is the sender's fault, or,
// under batch.SinkExhausted, a failure on every attempt) goes to the sink of WithSink, if
// any, and its partition moves on; otherwise it is reported. Each record not accepted is
// logged on one line (partition, offset, attempts, error; never the payload), and each
// Dispatch logs one summary line (see WithLogger and WithMetrics).
//
// On a FIFO queue, a record is sent only once every earlier record of its message group in
// ev has been accepted (or taken by the sink): at most one message of a group is in flight,
// so that a failed entry can never let a later one of its group overtake it, and the workers
// see each group in Kafka order. The records of a group that follow a record not accepted
// are not sent, and are reported. A record delivered again is sent with the same
// MessageDeduplicationId, so that SQS drops the copy within its five-minute deduplication
// window. On a standard queue, records go out as fast as the calls allow, in no promised
// order, and a record delivered again is sent again: workers must be idempotent (see
// WorkerHandler).
//
// The error is nil, unless the dispatcher was made with an invalid option or argument (an
// error wrapping batch.ErrInvalidOption; nothing is sent).
func (d *Dispatcher) Dispatch(ctx context.Context, ev *kafkaevent.Event) (batch.KafkaResponse, error) {
	if d.cfg.err != nil {
		return batch.KafkaResponse{}, d.cfg.err
	}
	r := d.newRun(ctx, ev)
	defer r.cancel()
	r.loop()
	return r.finish(ctx), nil
}

// Handler returns d.Dispatch as a batch.KafkaFunc, a lambda.Handler that gives the payload
// straight to kafkaevent.Parse:
//
//	lambda.Start(d.Handler())
func (d *Dispatcher) Handler() batch.KafkaFunc { return d.Dispatch }
