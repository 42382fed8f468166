package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/idempotency"
)

// Option configures ProcessKafka and ProcessSQS.
type Option func(*config)

type config struct {
	concurrency    int
	deadlineMargin time.Duration
	attempts       int
	backoff        time.Duration
	maxBackoff     time.Duration
	errorOnAllFail bool
	criteria       *filter.Criteria
	store          idempotency.Store
	idemOpts       []idempotency.Option
	sink           Sink
	sinkPolicy     SinkPolicy
	st             *stats
	outer          context.Context // the invocation's context, with the function's deadline
	hooks          hooks
	metricsOut     io.Writer
	namespace      string
	metricsSet     bool
	logger         *slog.Logger
	loggerSet      bool
	now            func() time.Time
	sleep          func(ctx context.Context, d time.Duration) error
}

func newConfig(opts []Option) config {
	c := config{
		deadlineMargin: 500 * time.Millisecond,
		attempts:       3,
		backoff:        100 * time.Millisecond,
		maxBackoff:     2 * time.Second,
		now:            time.Now,
		sleep:          sleepCtx,
	}
	for _, o := range opts {
		o(&c)
	}
	if c.attempts < 1 {
		c.attempts = 1
	}
	c.st = &stats{start: c.now()}
	if c.store != nil {
		// Count replays; a replay hook of the caller's, given after, takes precedence.
		c.idemOpts = append([]idempotency.Option{idempotency.WithReplayHook(func(context.Context, *idempotency.Record) {
			c.st.replayed.Add(1)
		})}, c.idemOpts...)
	}
	return c
}

// WithConcurrency bounds how many partitions (or FIFO message groups, or standard-queue
// messages) are processed at once. The default, 0, processes every partition at once.
func WithConcurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// WithDeadlineMargin sets how long before the function's deadline processing stops: records
// not started by then are reported as failed, and the handler's context is cancelled then, so
// that a slow record cannot turn into a timeout that retries the whole batch. Default 500 ms.
func WithDeadlineMargin(d time.Duration) Option { return func(c *config) { c.deadlineMargin = d } }

// WithRetry sets the attempts per record for errors not marked Permanent (default 3, so two
// retries) and the first backoff (default 100 ms), which doubles each time, with jitter, up to
// 2 seconds, and never sleeps past the deadline.
func WithRetry(attempts int, backoff time.Duration) Option {
	return func(c *config) { c.attempts, c.backoff = attempts, backoff }
}

// WithErrorWhenAllFail returns an error instead of a partial response when every record of
// the batch failed, so that the event source mapping's own retry and bisect settings apply.
func WithErrorWhenAllFail() Option { return func(c *config) { c.errorOnAllFail = true } }

// WithFilter skips, as successes, the records that do not match the criteria, as the event
// source mapping would have: a guard for self-managed setups and for criteria changes, which
// take minutes to apply.
func WithFilter(c *filter.Criteria) Option { return func(cfg *config) { cfg.criteria = c } }

// WithIdempotency runs the handler through idempotency.Do for each record, keyed by
// idempotency.KafkaKey or idempotency.SQSKey: records already completed are skipped without
// calling the handler, and records in progress elsewhere are reported as failed.
func WithIdempotency(store idempotency.Store, opts ...idempotency.Option) Option {
	return func(c *config) { c.store, c.idemOpts = store, opts }
}

// withClock is for tests.
func withClock(now func() time.Time, sleep func(context.Context, time.Duration) error) Option {
	return func(c *config) { c.now, c.sleep = now, sleep }
}

// Permanent marks err as a failure that retrying cannot fix: the record is not retried.
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

// ErrDeadline is the error of a record that was not started because the deadline was near.
var ErrDeadline = errors.New("batch: not started: the function's deadline is near")

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
		if c.sleep(ctx, wait) != nil {
			return f
		}
		backoff = min(2*backoff, c.maxBackoff)
	}
}

// handle runs a record's handler, through idempotency.Do under key when there is a store,
// with the retries; it returns nil when the record is done.
func (c *config) handle(ctx context.Context, stop time.Time, key string, run func(context.Context) error, l *local) *failure {
	if c.store != nil {
		inner := run
		run = func(ctx context.Context) error {
			// The lease lasts until the function's own deadline: the handler may run past its
			// context's end, which comes a margin earlier, and must keep the key meanwhile.
			_, err := idempotency.Do(c.leaseCtx(ctx), c.store, key, nil,
				func(context.Context) (struct{}, error) { return struct{}{}, call(ctx, inner) }, c.idemOpts...)
			return err
		}
	}
	f := c.attempt(ctx, stop, run)
	if f == nil {
		l.processed++
	}
	return f
}

// send hands a failed record to the sink and reports whether the sink took it.
func (c *config) send(ctx context.Context, e *Envelope, l *local) bool {
	if c.sink.Send(ctx, e) != nil {
		return false
	}
	l.sunk++
	return true
}

// toSink reports whether a failure goes to the sink under the policy.
func (c *config) toSink(f *failure) bool {
	if c.sink == nil || errors.Is(f.err, idempotency.ErrInProgress) || errors.Is(f.err, ErrDeadline) {
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
	return leaseContext{Context: c.outer, values: ctx}
}

// leaseContext takes its deadline and cancellation from the invocation and its values from
// the handler's context.
type leaseContext struct {
	context.Context
	values context.Context
}

func (l leaseContext) Value(key any) any { return l.values.Value(key) }

// stopAt is when processing stops: the context's deadline less the margin, or zero.
func (c *config) stopAt(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Time{}
	}
	return d.Add(-c.deadlineMargin)
}

// forEach runs fn for each of n units, at most limit at once (0: all at once).
func forEach(n, limit int, fn func(i int)) {
	if n == 1 {
		fn(0)
		return
	}
	if limit <= 0 || limit > n {
		limit = n
	}
	next := make(chan int)
	done := make(chan struct{})
	for w := 0; w < limit; w++ {
		go func() {
			for i := range next {
				fn(i)
			}
			done <- struct{}{}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < limit; w++ {
		<-done
	}
}
