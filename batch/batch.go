package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/filter"
	// Package idempotency is the engine alone: batch links no DynamoDB client (the store is
	// idempotency/dynamodb).
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/internal/completion"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// Option configures ProcessKafka, ProcessSQS, KafkaHandler and SQSHandler. Options are checked
// once, where they are applied (see the package documentation, "Options"): an option given an
// invalid value (a nil logger, a negative margin) is an error wrapping ErrInvalidOption that
// names the option and the value, rather than a run with a setting the caller did not ask for.
type Option func(*config)

type config struct {
	err            error // the first invalid option
	concurrency    int
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
	start          time.Time       // when the batch began
	outer          context.Context // the invocation's context, with the function's deadline
	hooks          hooks
	metricsOut     io.Writer // nil: no metrics
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
// "Option(value): why": "batch: WithRetry(0, 100ms): invalid option: want ...".
func invalidOption(msg string) error {
	opt, why, _ := strings.Cut(msg, ": ")
	return &optionError{option: opt, why: why}
}

type optionError struct{ option, why string }

func (e *optionError) Error() string        { return "batch: " + e.option + ": invalid option: " + e.why }
func (e *optionError) Is(target error) bool { return target == ErrInvalidOption }

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

// WithDeadlineMargin sets how long before the function's deadline processing stops and the
// batch answers: the handler's context is cancelled then, records not started are reported
// (ErrDeadline), and so are the records whose handler has not returned (ErrAbandoned; the
// handler is left running, and cannot change the response), each with the rest of its
// partition or FIFO message group, so that a slow record cannot turn into a timeout that
// retries the whole batch. The default is 500 ms; 0 stops at the deadline itself.
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
// fail with ErrInvalidOption. key must be safe for concurrent use (partitions run in parallel).
// By default the key is idempotency.KafkaKey(r).
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
// ProcessSQS only: given to ProcessKafka, it makes every batch fail with ErrInvalidOption.
// decode must be safe for concurrent use. By default an SQS message is keyed on
// idempotency.SQSKey(m), its message ID.
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

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// IsPermanent reports whether err is marked Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// PanicError is the error of a handler that panicked. Panics are not retried.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("batch: handler panicked: %v", e.Value) }

// ErrDeadline is the error of a record not handled because the function's deadline, less the
// margin of WithDeadlineMargin, came first: ProcessKafka and ProcessSQS did not start it, and
// package fanout's Dispatcher did not send it (or its retry would have come too late).
var ErrDeadline = errors.New("batch: the function's deadline is near")

// ErrInvalidOption is wrapped by the error of an option given an invalid value
// (WithConcurrency(0), WithLogger(nil), ...); the error names the option and the value:
// "batch: WithConcurrency(0): invalid option: want at least 1".
var ErrInvalidOption = errors.New("batch: invalid option")

// ErrAllFailed is returned, with WithErrorWhenAllFail, when every record failed.
var ErrAllFailed = errors.New("batch: every record failed")

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call runs h, turning a panic into a *PanicError.
func call(ctx context.Context, h func(context.Context) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return h(ctx)
}

// attempt runs h with retries for errors that are not permanent, never past the deadline.
// It returns nil on success, or what it learned of the failure.
func (c *config) attempt(ctx context.Context, deadline time.Time, h func(context.Context) error) *failure {
	backoff := c.backoff
	var first time.Time
	if c.sink != nil { // only an envelope needs the time
		first = c.now()
	}
	for i := 1; ; i++ {
		err := call(ctx, h)
		if err == nil {
			return nil
		}
		if first.IsZero() {
			first = c.now()
		}
		var pe *PanicError
		permanent := IsPermanent(err) || errors.As(err, &pe) || errors.Is(err, idempotency.ErrPayloadMismatch)
		f := &failure{err: err, permanent: permanent, attempts: i, first: first, last: c.now()}
		if i >= c.attempts || permanent || errors.Is(err, idempotency.ErrInProgress) {
			return f
		}
		wait := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1)) // jitter
		if !deadline.IsZero() && c.now().Add(wait).After(deadline) {
			return f
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			// Say why the retries stopped early, beside the handler's error.
			f.err = fmt.Errorf("%w (no retry: %w)", err, serr)
			return f
		}
		backoff = min(2*backoff, c.maxBackoff)
	}
}

// process runs a record's handler through handle, with the record hooks around it.
func (c *config) process(ctx context.Context, stop time.Time, key string, item Item, run func(context.Context) error, u *unit) *failure {
	if len(c.hooks.record) == 0 {
		return c.handle(ctx, stop, key, item, run, u)
	}
	if !u.lock() {
		return c.late() // sealed: never said
	}
	cp := item // only this copy escapes to the hooks, so without hooks nothing is allocated
	it := &cp
	rctx := c.hooks.recordStart(ctx, it)
	u.rctx, u.item, u.inRecord = rctx, it, true
	u.unlock()
	f := c.handle(rctx, stop, key, item, run, u)
	if u.lock() {
		u.inRecord = false
		c.hooks.recordEnd(rctx, it, f.error())
		u.unlock()
	}
	return f
}

// handle runs a record's handler with its retries, all inside one idempotency.Do under key
// when there is a store; it returns nil when the record is done.
func (c *config) handle(ctx context.Context, stop time.Time, key string, item Item, run func(context.Context) error, u *unit) *failure {
	l := &u.l
	if c.store == nil {
		f := c.attempt(ctx, stop, run)
		if f == nil {
			l.processed++
		}
		return f
	}
	var (
		f     *failure
		calls int // handler calls: none means Do replayed the record
	)
	// The lease lasts until the function's own deadline: the handler may run past its
	// context's end, which comes a margin earlier, and must keep the key meanwhile.
	outcome, err := idempotency.Do(c.leaseCtx(ctx), c.store, key, nil, func(dctx context.Context) (completion.Outcome, error) {
		// The handler keeps its own, earlier deadline, and gets the values of Do's context,
		// which say that this key is held, so that a nested Do with it runs inside this one.
		// Its context ends too when Do's does before it: the lease ended unrenewed
		// (idempotency.ErrLeaseLost), and another invocation may take the record.
		lctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		defer context.AfterFunc(dctx, func() { cancel(context.Cause(dctx)) })()
		hctx := mixedContext{Context: lctx, values: dctx}
		f = c.attempt(hctx, stop, func(ctx context.Context) error { calls++; return run(ctx) })
		if f != nil {
			return c.sinkHeld(ctx, item, f, u)
		}
		// From here on the record is a success, even if the batch answers before Do has
		// stored its completion.
		u.succeeded()
		return "", nil
	}, c.idemOpts...)
	switch {
	case err == nil && f != nil: // the sink took the record, and Do completed its key "sunk"
		return f
	case err == nil: // handled now, or before (a replay)
		l.processed++
		if calls == 0 {
			l.replayed++
			if outcome == completion.Sunk {
				c.logSunkBefore(ctx, item, u)
			}
		}
		return nil
	case f != nil && f.sunk: // the sink took the record; its completion was not stored
		if u.lock() {
			c.logNotRecorded(ctx, item, fmt.Errorf("batch: the sink took the record: %w", err))
			u.unlock()
		}
		return f
	case f != nil: // the handler failed (and the sink, if any, refused it): Do released the key
		f.err = err // with the release's error, if it failed too
		return f
	case errors.Is(err, idempotency.ErrNotRecorded):
		// The handler succeeded and its effect happened; only its completion is not stored.
		// Reporting the record would apply the effect again once the lease ends, so it is a
		// success, logged and counted.
		if u.lock() {
			l.processed++
			l.notRecorded++
			c.logNotRecorded(ctx, item, err)
			u.publish(u.pos+1, false) // done: the answer must not speak for it again
			u.unlock()
		}
		return nil
	}
	// The store failed, or another invocation holds the key, or took it over while the
	// handler ran (idempotency.ErrLeaseLost: not a success): the record comes back, and does
	// not go to the sink.
	now := c.now()
	return &failure{err: err, attempts: calls, first: now, last: now, store: true,
		permanent: errors.Is(err, idempotency.ErrPayloadMismatch)}
}

// sendFailure hands a failed record to the sink, once, and notes in f whether the sink took
// it. A sealed unit sends nothing: the answer has reported the record.
func (c *config) sendFailure(ctx context.Context, e *Envelope, f *failure, u *unit) {
	f.offered = true
	if !u.live() {
		return
	}
	if err := c.sink.Send(ctx, e); err != nil {
		f.sinkErr = err
		return
	}
	f.sunk = true
	u.l.sunk++
}

// late is the failure of a record not started because the deadline is near.
func (c *config) late() *failure {
	now := c.now()
	return &failure{err: ErrDeadline, first: now, last: now}
}

// toSink reports whether a failure goes to the sink under the policy: records that the
// handler failed on, not those the deadline, the idempotency store or another invocation
// held back.
func (c *config) toSink(f *failure) bool {
	if c.sink == nil || f.store || errors.Is(f.err, ErrDeadline) || errors.Is(f.err, idempotency.ErrInProgress) {
		return false
	}
	return f.permanent || c.sinkPolicy == SinkExhausted
}

// leaseCtx is the context for idempotency.Do: the handler's values (trace) with the
// invocation's deadline, so that the in-progress lease outlasts the handler's context.
func (c *config) leaseCtx(ctx context.Context) context.Context {
	if c.outer == nil {
		return ctx
	}
	return mixedContext{Context: c.outer, values: ctx}
}

// mixedContext takes its deadline and cancellation from one context and its values from
// another.
type mixedContext struct {
	context.Context
	values context.Context
}

func (m mixedContext) Value(key any) any { return m.values.Value(key) }

// settle gives the completions that earlier batches on this store could not store before
// they answered (idempotency.ErrNotRecorded; they are retried since, under a renewed lease)
// time to be stored before this batch takes its first record, as when an execution
// environment resumes after a freeze: at most a second, and at most a quarter of the time
// until processing stops. Without such completions it costs an atomic load.
func (c *config) settle(stop time.Time) {
	if c.store == nil {
		return
	}
	d := time.Second
	if !stop.IsZero() {
		d = min(d, time.Until(stop)/4)
	}
	if d > 0 {
		completion.Settle(c.store, d)
	}
}

// stopAt is when processing stops: the context's deadline less the margin, or zero.
func (c *config) stopAt(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Time{}
	}
	return d.Add(-c.deadlineMargin)
}
