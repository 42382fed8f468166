package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/filter"
	// Package idempotency is the engine alone: batch links no DynamoDB client (the store is
	// idempotency/dynamodb).
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/internal/recovered"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/metrics"
)

// Option configures ProcessKafka, ProcessSQS, KafkaHandler and SQSHandler. Options are checked
// once, where they are applied (see the package documentation, "Options"): an option given an
// invalid value (a nil logger, a negative margin) is a *toolkit.OptionError (it matches
// toolkit.ErrInvalidOption) that names the option and the value, rather than a run with a
// setting the caller did not ask for.
type Option func(*config)

type config struct {
	err            error // the first invalid option
	concurrency    int
	keyConcurrency int // WithKeyConcurrency's n; 0: records of a partition one after another
	deadlineMargin time.Duration
	attempts       int
	backoff        time.Duration
	maxBackoff     time.Duration
	errorOnAllFail bool
	criteria       *filter.Criteria
	store          idempotency.Store
	idemOpts       []idempotency.Option
	kafkaKey       func(*kafkaevent.Record) (string, error)             // nil: idempotency.KafkaKey
	sqsRecord      func(*events.SQSMessage) (*kafkaevent.Record, error) // nil: key SQS messages on their ID
	sink           Sink
	sinkPolicy     SinkPolicy
	correlation    string          // the header or attribute that names a record's correlation ID; "": none
	start          time.Time       // when the batch began
	stop           time.Time       // when processing stops: the deadline less the margin, or zero
	outer          context.Context // the invocation's context, with the function's deadline
	fatal          *fatalPanic     // the batch's first panic where no record was in hand
	hooks          hooks
	metricsOut     io.Writer        // nil: no metrics
	emf            *emfWriter       // WithMetrics's
	mx             *metrics.Metrics // what writes the batch's metrics: emf's for the source; nil: none
	namespace      string
	logger         *slog.Logger
	now            func() time.Time
	sleep          func(ctx context.Context, d time.Duration) error
}

// invalid records the first invalid option. The message is "Option(value): why".
func (c *config) invalid(format string, args ...any) {
	if c.err == nil {
		c.err = invalidOption(fmt.Sprintf(format, args...))
	}
}

// invalidOption is the error of an option given an invalid value, from a message
// "Option(value): why": "batch: invalid option WithRetry(0, 100ms): want ...".
func invalidOption(msg string) error {
	opt, why, _ := strings.Cut(msg, ": ")
	return &toolkit.OptionError{Package: "batch", Option: opt, Reason: why}
}

func newConfig(opts []Option) config {
	c := config{
		deadlineMargin: 500 * time.Millisecond,
		attempts:       3,
		backoff:        100 * time.Millisecond,
		maxBackoff:     2 * time.Second,
		namespace:      DefaultNamespace,
		now:            time.Now,
		sleep:          sleepCtx,
	}
	for _, o := range opts {
		if o == nil {
			c.invalid("Option(nil): want an option")
			continue
		}
		o(&c)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.kafkaKey != nil && c.store == nil {
		c.invalid("WithIdempotencyKey: needs WithIdempotency, which gives the store to key")
	}
	if c.keyConcurrency != 0 && c.store == nil {
		c.invalid("WithKeyConcurrency(%d): needs WithIdempotency, so that the records a failure sends back after they succeeded are skipped, not applied twice", c.keyConcurrency)
	}
	if c.keyConcurrency != 0 && c.concurrency != 0 {
		c.invalid("WithKeyConcurrency(%d): bounds the records in flight for the whole invocation; WithConcurrency(%d) would bound partitions too: give one of the two", c.keyConcurrency, c.concurrency)
	}
	c.start = c.now()
	if c.store != nil {
		// Store no result: the handler returns none. (A replay is counted where Do returns
		// without having called the handler, so a replay hook of the caller's still counts.)
		c.idemOpts = append([]idempotency.Option{idempotency.WithoutResult()}, c.idemOpts...)
	}
	return c
}

// WithConcurrency bounds how many partitions (or FIFO message groups, or standard-queue
// messages) are processed at once; n must be at least 1. By default ProcessKafka processes
// every partition of the batch at once, and ProcessSQS every FIFO message group at once, or
// 10 messages of a standard queue at once.
func WithConcurrency(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.invalid("WithConcurrency(%d): want at least 1", n)
		}
		c.concurrency = n
	}
}

// WithKeyConcurrency handles the records of one partition whose keys differ at the same
// time, at most n records in flight for the whole invocation (all partitions together), the
// records of one key strictly in offset order; n must be at least 1. Records without a key
// (a nil or empty Key) are one sequence per partition, in partition order among themselves.
// For an SQS FIFO queue the MessageGroupId plays the key: n bounds the messages in flight,
// groups run at once, each in order. A standard SQS queue has no order to keep: a batch of
// one fails with a *toolkit.OptionError, nothing handled.
//
// A record that fails (after its retries, and not taken by the sink) stops its key: the
// later records of that key in the batch are not started, other keys go on, and the
// partition is reported from the lowest offset that did not succeed, so that Lambda delivers
// it again from there. The records after that offset that succeeded come back too, and are
// skipped through the idempotency store: so the option needs WithIdempotency (keyed on the
// record's position, the default, or on WithIdempotencyKey's function), and is a
// *toolkit.OptionError without it, or with WithConcurrency. See the package documentation,
// "Key concurrency", for the contract and what the hooks' groups are then. By default the
// records of a partition are handled one after another.
func WithKeyConcurrency(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.invalid("WithKeyConcurrency(%d): want at least 1", n)
		}
		c.keyConcurrency = n
	}
}

// WithDeadlineMargin sets how long before the function's deadline processing stops and the
// batch answers: the handler's context is cancelled then, records not started are reported
// (ErrDeadline), and so are the records whose handler has not returned (ErrAbandoned; the
// handler is left running, and cannot change the response), each with the rest of its
// partition or FIFO message group, so that a slow record cannot turn into a timeout that
// retries the whole batch. A batch that starts less than the margin before the deadline, or
// after it, is answered at once, every record reported, no handler called. The default is
// 500 ms; 0 stops at the deadline itself.
func WithDeadlineMargin(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("WithDeadlineMargin(%v): want 0 or more", d)
		}
		c.deadlineMargin = d
	}
}

// WithRetry sets the attempts per record for errors not marked Permanent (at least 1; the
// default is 3, so two retries) and the first backoff (the default is 100 ms), which doubles
// each time, with jitter, up to 2 seconds, and never sleeps past the deadline.
func WithRetry(attempts int, backoff time.Duration) Option {
	return func(c *config) {
		if attempts < 1 || backoff < 0 {
			c.invalid("WithRetry(%d, %v): want at least 1 attempt and a backoff of 0 or more", attempts, backoff)
		}
		c.attempts, c.backoff = attempts, backoff
	}
}

// WithErrorWhenAllFail returns an error instead of a partial response when every record of
// the batch failed, so that the event source mapping's own retry and bisect settings apply.
// By default a batch whose records all failed returns them all in the partial response.
func WithErrorWhenAllFail() Option { return func(c *config) { c.errorOnAllFail = true } }

// WithFilter skips, as successes, the records that do not match the criteria, as the event
// source mapping would have: a guard for self-managed setups and for criteria changes, which
// take minutes to apply. A record the criteria cannot decide on (filter.ErrTooComplex) is
// not skipped: it fails, as a permanent failure. By default every record is handled.
func WithFilter(c *filter.Criteria) Option {
	return func(cfg *config) {
		if c == nil {
			cfg.invalid("WithFilter(nil): want criteria")
		}
		cfg.criteria = c
	}
}

// WithIdempotency runs each record's handler, with its retries, inside one
// idempotency.Do, so that a record already handled by an earlier delivery is not handled
// again. By default there is no idempotency.
//
// The key is idempotency.KafkaKey(r) ("topic-partition-offset") for a Kafka record, or what
// the function of WithIdempotencyKey returns, and idempotency.SQSKey(m) (the message ID) for
// an SQS message, under the prefix and expiry that opts give (see idempotency.WithKeyPrefix
// and idempotency.WithExpiry). For each record, the store holds the key's hash, its status
// (in progress, then completed), when the record expires and, while in progress, when its
// lease ends (the function's deadline); no result (the handler returns none:
// idempotency.WithoutResult; a record the sink took stores the outcome {"outcome":"sunk"}, see
// WithSink) and no payload hash, so nothing is validated beyond the key: the same key is the
// same record.
//
// A record costs one write to acquire its key and one to complete it, however many attempts
// it takes: the lease is held from the first attempt to the last. A record that fails every
// attempt has its key released (one more write) so that its redelivery runs again. A record
// already completed is acknowledged without calling the handler; a record whose key another
// invocation holds fails with idempotency.ErrInProgress and comes back later. A store that
// fails before the handler runs fails the record (fail closed); one that cannot store the
// completion of a record handled successfully (idempotency.ErrNotRecorded) leaves it a
// success, logged and counted as NotRecorded (see the package documentation); the completion
// is retried in the background, and the next batch on the store waits a second at most for
// it. The lease is renewed while the handler runs, also after the deadline margin abandoned
// it, so that a redelivery waits for an abandoned handler that still runs; when it cannot be
// renewed, the handler's context ends, and a result whose completion cannot be stored then
// (idempotency.ErrLeaseLost) fails the record, not to the sink.
//
// The handler's context carries the key: a handler that calls idempotency.Do itself with
// the same store and key (the idempotency package's example) runs inside this one rather than
// waiting for it.
func WithIdempotency(store idempotency.Store, opts ...idempotency.Option) Option {
	return func(c *config) {
		if store == nil {
			c.invalid("WithIdempotency(nil): want a store")
		}
		c.store, c.idemOpts = store, opts
	}
}

// WithIdempotencyKey makes WithIdempotency key each Kafka record on what key returns for it,
// instead of on the record's own position (idempotency.KafkaKey): so that two records that
// are the same thing count once. The case it is made for is a record produced by a transform
// that may produce it twice (its response lost after producing, and the batch retried): key
// on the identity of the input it was produced for, which producer.SetSource writes in a
// header and producer.SourceKey reads back:
//
//	batch.WithIdempotency(store), batch.WithIdempotencyKey(producer.SourceKey)
//
// A record for which key returns an error, or an empty key, fails as a permanent failure
// (not retried; given to the sink under either SinkPolicy), its handler not called: it is
// never handled without its key. The option needs WithIdempotency, and applies to Kafka
// records only (and to the records SQS messages carry, with WithSQSKafkaRecord): given
// without WithIdempotency, or to ProcessSQS without WithSQSKafkaRecord, it makes every batch
// fail with a *toolkit.OptionError. key must be safe for concurrent use (partitions run in
// parallel). By default the key is idempotency.KafkaKey(r).
func WithIdempotencyKey(key func(r *kafkaevent.Record) (string, error)) Option {
	return func(c *config) {
		if key == nil {
			c.invalid("WithIdempotencyKey(nil): want a function")
		}
		c.kafkaKey = key
	}
}

// WithSQSKafkaRecord tells ProcessSQS that each message carries a Kafka record, which decode
// rebuilds (fanout.ReadRecord is such a function), so that under WithIdempotency a message is
// keyed as its record would be on Kafka: on idempotency.KafkaKey(r), the record's topic,
// partition and offset, or on the function of WithIdempotencyKey; never on the message ID.
// A record sent to the queue twice arrives as two messages with two IDs; keyed on the record,
// it is handled once.
//
// A message decode fails on fails under WithIdempotency as a permanent failure (not retried;
// given to the sink under either SinkPolicy), its handler not called, as a Kafka record
// without a key does. Without WithIdempotency the option changes nothing. It applies to
// ProcessSQS only: given to ProcessKafka, it makes every batch fail with a
// *toolkit.OptionError. decode must be safe for concurrent use. By default an SQS message is
// keyed on idempotency.SQSKey(m), its message ID.
//
// With the option, the record-age metrics (WithMetrics: OldestRecordAge, NewestRecordAge) count
// from the Kafka records' timestamps rather than from when SQS received the messages: the age
// since the record was produced, across the hop.
func WithSQSKafkaRecord(decode func(m *events.SQSMessage) (*kafkaevent.Record, error)) Option {
	return func(c *config) {
		if decode == nil {
			c.invalid("WithSQSKafkaRecord(nil): want a function")
		}
		c.sqsRecord = decode
	}
}

// WithCorrelationIDFrom gives each record a correlation ID, read from the header named name
// of a Kafka record, or the message attribute named name (its string value) of an SQS
// message; with WithSQSKafkaRecord, a message without that attribute has the ID of the header
// named name of the Kafka record it carries (fanout writes a record's headers into one
// attribute of its own). The record's handler, its RecordHook and FailureHook calls, the
// sink's Send and this package's lines about the record ("record failed") all get a context
// that carries the ID, so that every line logged through package lambdalog with that context
// has "correlation_id", as Powertools' Logger has it: one Logs Insights query finds every
// line of a record's handling, across functions and hops.
//
// An ID longer than lambdalog.MaxCorrelationIDBytes is cut there, at a character boundary, as
// lambdalog.WithCorrelationID cuts it. A record without the header or attribute, or with an
// empty value, has no correlation ID, and no error. The ID comes from the producer: it is
// logged, so do not name a header that carries anything secret. name must not be empty. By
// default records have no correlation ID, and nothing is read.
//
// fanout's Dispatcher takes the option too (fanout.WithBatchOptions): its line for a record
// it could not send carries the record's ID, and the header travels to the workers with the
// record, where a WorkerHandler given the same option finds it.
func WithCorrelationIDFrom(name string) Option {
	return func(c *config) {
		if name == "" {
			c.invalid("WithCorrelationIDFrom(\"\"): want the name of a header or message attribute")
		}
		c.correlation = name
	}
}

// withClock is for tests.
func withClock(now func() time.Time, sleep func(context.Context, time.Duration) error) Option {
	return func(c *config) { c.now, c.sleep = now, sleep }
}

// Permanent marks err as a failure that retrying cannot fix: the handler is not called again
// for the record in this invocation, and a sink (WithSink, under either policy) takes it.
// Without a sink the record is reported like any other failure: its partition (or FIFO
// message group) stops there, and the event source mapping delivers it again until its own
// retry limits (MaximumRetryAttempts, MaximumRecordAgeInSeconds) send it to its on-failure
// destination, if any.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() error   { return e.err }
func (e *permanentError) Permanent() bool { return true }

// IsPermanent reports whether err is marked Permanent, or any error in its chain says it is
// permanent with a method Permanent() bool that returns true (codec's decode errors do), so
// that a package can mark its errors without importing batch.
func IsPermanent(err error) bool {
	for err != nil {
		if p, ok := err.(interface{ Permanent() bool }); ok && p.Permanent() {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if IsPermanent(e) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// PanicError is the error of code of the user's that panicked while a record was in hand
// (the record fails, permanently: panics are not retried), or, where no record was (the
// batch hooks, an OnGroupEnd, the WithMetrics writer), the error ProcessKafka and ProcessSQS
// return: the invocation fails. A panic never leaves the package, so that it never ends the
// process and the other invocations it serves (Lambda Managed Instances). Its line ("record
// failed", or "batch invocation failed") carries the value and the stack, both bounded.
type PanicError struct {
	// In names the code that panicked: "" for the record's handler, or the hook method
	// ("OnRecordStart", ...), "Sink.Send", "WithIdempotencyKey", "WithSQSKafkaRecord",
	// "WithMetrics writer", or "a call for the record" when the panic was caught around the
	// whole record (a logger of the caller's, say).
	In    string
	Value any
	// Stack is the panicking goroutine's stack, cut to 16 KiB.
	Stack []byte
}

func (e *PanicError) Error() string {
	in := e.In
	if in == "" {
		in = "handler"
	}
	return "batch: " + in + " panicked: " + recovered.Cut(fmt.Sprint(e.Value), recovered.MaxValueBytes)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// newPanic is the PanicError of p, recovered in in; call it in the deferred function that
// recovered, so that the stack is the panic's.
func newPanic(in string, p any) *PanicError {
	return &PanicError{In: in, Value: p, Stack: recovered.Stack()}
}

// guard runs fn, returning the *PanicError of its panic, or nil: the one way this package
// calls code of the user's, whose panic must fail its record or its invocation, never the
// process.
func guard(in string, fn func()) (pe *PanicError) {
	defer func() {
		if p := recover(); p != nil {
			pe = newPanic(in, p)
		}
	}()
	fn()
	return nil
}

// ErrDeadline is the error of a record not handled because the function's deadline, less the
// margin of WithDeadlineMargin, came first: ProcessKafka and ProcessSQS did not start it, and
// package fanout's Dispatcher did not send it (or its retry would have come too late).
var ErrDeadline = errors.New("batch: the function's deadline is near")

// ErrAllFailed is returned, with WithErrorWhenAllFail, when every record failed.
var ErrAllFailed = errors.New("batch: every record failed")
