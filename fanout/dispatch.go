package fanout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/internal/batchsettings"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
	"github.com/kafkalambda/toolkit/metrics"
)

// A Dispatcher sends the records of Kafka batches to an SQS queue, one message per record,
// in the format that [ReadRecord] reads back. Make one with [NewDispatcher]; it is safe for
// concurrent use, and meant to be made once, outside the handler.
type Dispatcher struct {
	client   sqssink.API
	queueURL string
	queue    string // the queue's name, for logs and the metric dimension
	fifo     bool
	cfg      config
}

// Option configures a [Dispatcher]: the options of this package are those of fanning out
// (message groups, message size, the SendMessageBatch calls and their retries); what a
// Dispatcher shares with every processor of Kafka batches (its logger, metrics, deadline
// margin, failure sink and the records' correlation IDs) it takes as package batch's own options, through
// [WithBatchOptions], so that each option is defined once, with one default.
//
// Options are checked once, by NewDispatcher: an option given an invalid value makes it
// return a *toolkit.OptionError (matching toolkit.ErrInvalidOption) that names the option and
// says why, with the value, as kgo.NewClient does; for an option of WithBatchOptions, it wraps
// batch's own error for that option.
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
	metrics     io.Writer        // batch.WithMetrics's writer; nil: no metrics
	namespace   string           // batch.WithMetricsNamespace's
	mx          *metrics.Metrics // what writes the metrics of each Dispatch; nil: none
	correlation string           // batch.WithCorrelationIDFrom's header; "": none
	batchOpts   []batch.Option
	now         func() time.Time
}

// invalid records the first invalid option: option is its name, the reason says why and
// gives the value: "fanout: invalid option WithSendConcurrency: want at least 1, not 0".
func (c *config) invalid(option, format string, args ...any) {
	if c.err == nil {
		c.err = &toolkit.OptionError{Package: "fanout", Option: option, Reason: fmt.Sprintf(format, args...)}
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
			c.invalid("WithMessageGroup", "want a function, not nil")
		}
		c.group = group
	}
}

// WithPartitionGroups makes each Kafka partition one FIFO message group ("topic-N"): the
// workers then see the records of a partition strictly in Kafka order, as a Kafka consumer
// would, at the cost of parallelism (one group per partition, and at most one message of a
// group in flight while it is sent). By default the group is the record's key.
func WithPartitionGroups() Option { return func(c *config) { c.group = groupByPartition } }

// WithSendConcurrency bounds how many SendMessageBatch calls are in flight at once (and how
// many records are given to the sink at once); n must be at least 1. The default is 10, the
// connections the SDK's HTTP client keeps open per host (MaxIdleConnsPerHost of
// aws/transport/http): with more calls in flight, the calls beyond it open connections that
// are closed after them, a TLS handshake each, unless the client's transport keeps more. With
// calls of 10 entries, 10 in flight is 100 records on the way; a FIFO queue without
// high-throughput mode takes 300 calls a second.
// (batch.WithConcurrency bounds the partitions handled at once, which a Dispatcher does not
// do: it sends the records of every partition together.)
func WithSendConcurrency(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.invalid("WithSendConcurrency", "want at least 1, not %d", n)
		}
		c.concurrency = n
	}
}

// WithSendRetry sets the attempts to send each record (at least 1; the default is 5) and the
// first backoff (the default is 100 ms), which doubles after each attempt of the record, with
// jitter, up to 2 seconds. Only what SQS did not accept is sent again: the entries in a
// call's Failed list that are not the sender's fault, or every entry of a call that failed
// whole with an error worth retrying (throttling, a server error, a lost connection). No
// retry is sent after the deadline (see batch.WithDeadlineMargin). These attempts come on top
// of the SQS client's own retries of a whole call. (batch.WithRetry is the retry of a
// record's handler, which a Dispatcher does not have.)
func WithSendRetry(attempts int, backoff time.Duration) Option {
	return func(c *config) {
		if attempts < 1 || backoff < 0 {
			c.invalid("WithSendRetry", "want at least 1 attempt and a backoff of 0 or more, not (%d, %v)", attempts, backoff)
		}
		c.attempts, c.backoff = attempts, backoff
	}
}

// WithMaxMessageSize sets the largest message the dispatcher sends, counted as SQS does (the
// body and each message attribute's name, data type and value), for a queue whose
// MaximumMessageSize is below SQS's limit; n must be within 1..MaxMessageSize. A larger
// record is not sent: it fails with an *EncodeError wrapping batch.ErrMessageTooLarge. The
// default is limits.MaxSQSMessageBytes (1 MiB).
func WithMaxMessageSize(n int) Option {
	return func(c *config) {
		if n < 1 || n > limits.MaxSQSMessageBytes {
			c.invalid("WithMaxMessageSize", "want 1 to %d, not %d", limits.MaxSQSMessageBytes, n)
		}
		c.maxSize = n
	}
}

// WithBatchOptions gives the Dispatcher package batch's options for what it shares with
// batch.ProcessKafka, with their meaning and defaults there:
//
//   - batch.WithLogger: the logger of the summary line of each Dispatch (level Info, or Warn
//     when a record was not accepted) and of the line logged for each record not accepted
//     (level Error); by default slog.Default(). The lines never carry a record's key, value
//     or headers.
//   - batch.WithMetrics and batch.WithMetricsNamespace: one CloudWatch Embedded Metric
//     Format line per Dispatch, with the queue's name as the dimension "Queue": records,
//     records dispatched, failed and sent to the sink, SendMessageBatch calls, entries
//     retried, bytes sent, the duration, and the age of the oldest and newest records at
//     dispatch. Off by default. The line is written through package metrics, as batch's is
//     (see batch.WithMetrics): NewDispatcher sets that up once, and a metrics variable it
//     cannot read (POWERTOOLS_METRICS_DISABLED) is an invalid option.
//   - batch.WithDeadlineMargin: how long before the function's deadline (the context's) the
//     dispatcher stops: no call starts after it, the calls in flight are cancelled then, and
//     the records not accepted by then are reported (batch.ErrDeadline), so that the
//     response reaches Lambda before its timeout would retry the whole batch. 500 ms by
//     default; 0 stops at the deadline itself.
//   - batch.WithSink: sends the records the policy selects to the sink instead of reporting
//     them, so that a record that cannot be sent does not hold up its partition: under
//     batch.SinkPermanent, the records that cannot travel (an *EncodeError: too large, a
//     record that did not decode) and those SQS refused as the sender's fault; under
//     batch.SinkExhausted, also those SQS failed on every attempt. Records held back by the
//     deadline, or by a call that failed whole (a throttled call, a queue that does not
//     exist, missing permissions), are never given to the sink: they are reported, so that
//     Kafka delivers them again. A record the sink refuses is reported instead, and logged
//     with the sink's error. By default there is no sink.
//   - batch.WithCorrelationIDFrom: the header that holds a record's correlation ID. The line
//     logged for a record not accepted, and the sink's Send for it, get a context that
//     carries the ID, so that the line, logged through package lambdalog, has
//     "correlation_id". The record's message carries the ID to the workers with the rest of
//     its headers (kafka.headers): a worker given the same option (WorkerHandler) finds it
//     there, and every line of its handling of the message has the same "correlation_id".
//     By default records have no correlation ID.
//
// Any other batch option (batch.WithRetry, batch.WithFilter, ...) makes NewDispatcher fail
// with a *toolkit.OptionError for WithBatchOptions wrapping batch's error for that option: it
// has no meaning for a Dispatcher, which calls no handler.
// Given more than once, the options add up, in order.
func WithBatchOptions(opts ...batch.Option) Option {
	return func(c *config) { c.batchOpts = append(c.batchOpts, opts...) }
}

// withClock is for tests.
func withClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// NewDispatcher returns a dispatcher that sends records to the queue at queueURL through
// client (an *sqs.Client). The queue is FIFO when its URL ends in ".fifo". A nil client, an
// empty URL or an option given an invalid value is a *toolkit.OptionError (wrapping batch's
// error, for an option of WithBatchOptions), and no Dispatcher.
func NewDispatcher(client sqssink.API, queueURL string, opts ...Option) (*Dispatcher, error) {
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
			maxSize:     limits.MaxSQSMessageBytes,
			now:         time.Now,
		},
	}
	c := &d.cfg
	if client == nil {
		c.invalid("NewDispatcher", "want an SQS client, not nil")
	}
	if queueURL == "" {
		c.invalid("NewDispatcher", "want a queue URL, not \"\"")
	}
	for _, o := range opts {
		if o == nil {
			c.invalid("Option", "want an option, not nil")
			continue
		}
		o(c)
	}
	if c.err != nil {
		return nil, c.err
	}
	s, err := batchsettings.Read(c.batchOpts)
	if err != nil {
		return nil, &toolkit.OptionError{Package: "fanout", Option: "WithBatchOptions", Err: err}
	}
	c.logger, c.metrics, c.namespace, c.margin = s.Logger, s.Metrics, s.Namespace, s.DeadlineMargin
	c.correlation = s.Correlation
	c.sink, _ = s.Sink.(batch.Sink)
	c.policy = batch.SinkPolicy(s.SinkPolicy)
	if c.metrics != nil {
		// The document of every Dispatch holds what it always held: the queue as its one
		// dimension, no service dimension, no ColdStart metric (see batch.WithMetrics).
		m, err := metrics.New(metrics.WithOutput(c.metrics), metrics.WithNamespace(c.namespace), metrics.WithService(""),
			metrics.WithColdStartMetric(false), metrics.WithDefaultDimensions(map[string]string{"Queue": d.queue}))
		if err != nil {
			return nil, &toolkit.OptionError{Package: "fanout", Option: "WithBatchOptions", Err: err}
		}
		c.mx = m
	}
	return d, nil
}

// ErrGroupBlocked is the error of a record of a FIFO queue not sent because an earlier record
// of its message group was not accepted: sending it would have put it before that record.
var ErrGroupBlocked = errors.New("fanout: not sent: an earlier record of its message group was not accepted")

// ErrNoResult is the error of an entry that a SendMessageBatch response named neither among
// the successful nor among the failed entries. It is retried, as an entry SQS failed.
var ErrNoResult = errors.New("fanout: SQS answered without a result for the entry")

// EntryError is SQS's answer for an entry of a SendMessageBatch call that it did not accept
// (an entry of the response's Failed list). An entry that is the sender's fault is not sent
// again: it is handled like a record that cannot travel (see batch.WithSink in
// WithBatchOptions).
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
// Records are packed into SendMessageBatch calls of at most limits.MaxSQSBatchEntries entries and
// limits.MaxSQSBatchBytes bytes, and up to WithSendConcurrency calls are in flight at once. An entry SQS
// fails (the response's Failed list, which comes with HTTP 200) is sent again, alone of its
// call, after a backoff (see WithSendRetry); an entry that is the sender's fault is not. A
// record that cannot be sent (an *EncodeError, a refusal that is the sender's fault, or,
// under batch.SinkExhausted, a failure on every attempt) goes to the sink of batch.WithSink,
// if any, and its partition moves on; otherwise it is reported. Each record not accepted is
// logged on one line (partition, offset, attempts, error; never the payload), and each
// Dispatch logs one summary line (see WithBatchOptions).
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
// The error is nil (the options were checked by NewDispatcher), unless the writer of
// batch.WithMetrics panicked: the invocation then fails with an error that says so, after
// one "dispatch invocation failed" line with the stack, rather than the panic ending the
// process. A panic of the caller's code with a record in hand (WithMessageGroup's function,
// the sink's Send, the SQS client) fails that record, never the process.
func (d *Dispatcher) Dispatch(ctx context.Context, ev *kafkaevent.Event) (batch.KafkaResponse, error) {
	r := d.newRun(ctx, ev)
	defer r.cancel()
	r.loop()
	resp := r.finish(ctx)
	if r.panicked != nil {
		return batch.KafkaResponse{}, r.panicked
	}
	return resp, nil
}

// Invoke implements lambda.Handler, so that a Dispatcher is the function's handler and the
// payload goes straight to kafkaevent.Parse, as with batch.KafkaFunc:
//
//	lambda.Start(d)
func (d *Dispatcher) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return batch.KafkaFunc(d.Dispatch).Invoke(ctx, payload)
}
