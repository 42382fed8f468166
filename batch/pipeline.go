package batch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/internal/completion"
	"github.com/kafkalambda/toolkit/internal/correlation"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// The pipeline: one for Kafka records and SQS messages. A batch runs its units (see unit.go)
// through runBatch; each record of a unit goes through record, which admits it (its decode
// error, the filter, its idempotency key), runs its handler with retries inside
// idempotency.Do (process, handle, attempt), and gives a failure to the sink. Where the two
// sources differ, an Item says which one it holds.

// runBatch processes the n units of s as one batch described by info: every unit at once, or
// c.concurrency at a time, until the deadline less the margin; then respond, which reads what
// s.report marked, the summary line and metrics, and the batch hooks' end.
func (c *config) runBatch(ctx context.Context, info *BatchInfo, s *unitSet, n int, respond func()) (err error) {
	c.outer = ctx
	c.fatal = &s.fatal // in s, allocated already: a batch without a panic allocates nothing for it
	defer func() {
		// The last guard of the invocation's goroutine: a panic no guard names (a logger's
		// handler, say) fails the invocation rather than reach aws-lambda-go, which would
		// exit the process and every invocation it serves.
		if p := recover(); p != nil {
			pe := newPanic("the batch's answer", p)
			c.logPanic(ctx, "batch invocation failed", pe)
			err = pe
		}
	}()
	c.stop = c.stopAt(ctx)
	if !c.stop.IsZero() && !c.now().Before(c.stop) {
		c.noTime(ctx, info, s, n, respond)
		return nil
	}
	c.settle(c.stop)
	hctx := ctx
	if !c.stop.IsZero() {
		var cancel context.CancelFunc
		hctx, cancel = context.WithDeadline(ctx, c.stop)
		defer cancel()
	}
	quit := answerAt(hctx, c.stop)
	if len(c.hooks.batch) > 0 {
		var pe *PanicError
		if hctx, pe = c.hooks.batchStart(hctx, info); pe != nil {
			c.fail(ctx, pe) // no record handled: the invocation fails, and its batch comes back whole
			return pe
		}
	}
	us := make([]unit, n)
	for i := range us {
		us[i].guard = quit != nil
	}
	forEach(len(us), c.concurrency, quit, func(i int) { c.run(hctx, c.stop, s, i, &us[i]) })
	st := c.answer(hctx, s, us)
	if s.finish != nil {
		st.reported = s.finish()
	}
	respond()
	c.observe(ctx, info.Source, info.Records, &st)
	if len(c.hooks.batch) > 0 {
		if pe := c.hooks.batchEnd(hctx, info, st.result()); pe != nil {
			c.fail(hctx, pe)
		}
	}
	return c.fatal.error()
}

// record processes one record or message that may start: nil when it is done (handled,
// filtered out, or already done under idempotency), or the failure, which says whether the
// sink took it. run calls the handler on it.
func (c *config) record(ctx context.Context, it Item, run func(context.Context) error, u *unit) *failure {
	if c.correlation != "" {
		ctx = c.correlate(ctx, it)
	}
	if c.metricsOut != nil {
		// The ages go only into the metrics line; reading an SQS message's costs a lookup in
		// its attributes, a tenth of a no-op batch (issue 21). A Kafka record's is read here,
		// not through a call: a call on every record cost 18 instructions of about 450.
		if it.Kafka != nil {
			u.l.seen(it.Kafka.Timestamp)
		} else {
			u.l.seen(c.messageTime(it.SQS))
		}
	}
	var err error
	if it.Kafka != nil {
		err = it.Kafka.Err // a record that did not decode
	}
	if err == nil && c.criteria != nil {
		var pass bool
		// A record the filter cannot decide on is a failed record, never a filtered one.
		if pass, err = c.match(it); err == nil && !pass {
			u.l.filtered++
			return nil
		}
		if err != nil {
			err = fmt.Errorf("batch: the filter criteria cannot decide on the %s: %w", it.noun(), err)
		}
	}
	key := ""
	if err == nil && c.store != nil {
		key, err = c.key(it)
	}
	var f *failure
	if err != nil {
		now := c.now()
		f = &failure{err: err, permanent: true, first: now, last: now}
		// Under idempotency, a record that cannot be handled is sunk under its key too, when
		// the key is its own position or message ID (a function of WithIdempotencyKey or
		// WithSQSKafkaRecord is not called on it).
		if c.store != nil && c.keyedOnItself(it) && c.toSink(f) {
			if f = c.sinkKeyed(ctx, itemKey(it), it, f, u); f == nil {
				return nil
			}
		}
	} else if f = c.process(ctx, c.stop, key, it, run, u); f == nil {
		return nil
	}
	if c.toSink(f) && !f.offered {
		c.sendFailure(ctx, itemEnvelope(it, f), f, u)
	}
	return f
}

// correlate returns ctx carrying the item's correlation ID (WithCorrelationIDFrom), or ctx
// when it has none.
func (c *config) correlate(ctx context.Context, it Item) context.Context {
	if id := c.correlationID(it); id != "" {
		return correlation.With(ctx, id)
	}
	return ctx
}

// correlationID is the item's correlation ID, cut to correlation.MaxBytes, or "": a Kafka
// record's header, an SQS message's string attribute, or, with WithSQSKafkaRecord, the header
// of the record the message carries.
func (c *config) correlationID(it Item) string {
	var v []byte
	if r := it.Kafka; r != nil {
		// The header is cut before it is copied: a producer's header may be large.
		v, _ = r.Header(c.correlation)
		return string(correlation.Cut(v))
	}
	m := it.SQS
	if a, ok := m.MessageAttributes[c.correlation]; ok && a.StringValue != nil && *a.StringValue != "" {
		return correlation.Cut(*a.StringValue)
	}
	if c.sqsRecord != nil {
		if r, err := c.decodeSQS(m); err == nil && r != nil {
			v, _ = r.Header(c.correlation)
		}
	}
	return string(correlation.Cut(v))
}

// noun is what the item is, in messages: "record" or "message".
func (it Item) noun() string {
	if it.Kafka != nil {
		return "record"
	}
	return "message"
}

// match reports whether the filter criteria match the item.
func (c *config) match(it Item) (pass bool, err error) {
	if pe := guard("the filter", func() {
		if it.Kafka != nil {
			pass, err = c.criteria.MatchKafka(it.Kafka)
		} else {
			pass, err = c.criteria.MatchSQS(it.SQS)
		}
	}); pe != nil {
		return false, pe
	}
	return pass, err
}

// decodeSQS is WithSQSKafkaRecord's function on m, its panic an error.
func (c *config) decodeSQS(m *events.SQSMessage) (r *kafkaevent.Record, err error) {
	if pe := guard("WithSQSKafkaRecord", func() { r, err = c.sqsRecord(m) }); pe != nil {
		return nil, pe
	}
	return r, err
}

// keyedOnItself reports whether the item's idempotency key is its own identity (itemKey), not
// what a function of the caller's makes of it.
func (c *config) keyedOnItself(it Item) bool {
	if it.Kafka != nil {
		return c.kafkaKey == nil
	}
	return c.sqsRecord == nil
}

// itemKey is the idempotency key of the item's own identity: a record's position
// (idempotency.KafkaKey) or a message's ID (idempotency.SQSKey).
func itemKey(it Item) string {
	if it.Kafka != nil {
		return idempotency.KafkaKey(it.Kafka)
	}
	return idempotency.SQSKey(it.SQS)
}

// key is the item's key under WithIdempotency.
func (c *config) key(it Item) (string, error) {
	if it.Kafka != nil {
		return c.idempotencyKey(it.Kafka)
	}
	return c.sqsKey(it.SQS)
}

// idempotencyKey is the record's key under WithIdempotency: idempotency.KafkaKey, or the
// WithIdempotencyKey function's, which may not fail or give an empty key.
func (c *config) idempotencyKey(r *kafkaevent.Record) (string, error) {
	if c.kafkaKey == nil {
		return idempotency.KafkaKey(r), nil
	}
	var (
		key string
		err error
	)
	if pe := guard("WithIdempotencyKey", func() { key, err = c.kafkaKey(r) }); pe != nil {
		err = pe
	}
	switch {
	case err != nil:
		return "", fmt.Errorf("batch: no idempotency key for the record: %w", err)
	case key == "":
		return "", fmt.Errorf("batch: no idempotency key for the record: WithIdempotencyKey's function returned %w", idempotency.ErrEmptyKey)
	}
	return key, nil
}

// sqsKey is the message's key under WithIdempotency: its ID, or with WithSQSKafkaRecord the
// key of the Kafka record it carries.
func (c *config) sqsKey(m *events.SQSMessage) (string, error) {
	if c.sqsRecord == nil {
		return idempotency.SQSKey(m), nil
	}
	r, err := c.decodeSQS(m)
	if err != nil {
		return "", fmt.Errorf("batch: no idempotency key for the message: the Kafka record it carries: %w", err)
	}
	return c.idempotencyKey(r)
}

// messageTime is the time a message's age is counted from, for the metrics (a Kafka record's
// is its timestamp): with WithSQSKafkaRecord, the timestamp of the Kafka record it carries
// (so a fan-out worker's metrics give the age since the record was produced, across the
// hop); otherwise, or when the record has none, when SQS received the message
// (SentTimestamp). The zero time when neither is known.
func (c *config) messageTime(m *events.SQSMessage) time.Time {
	if c.sqsRecord != nil {
		if r, err := c.decodeSQS(m); err == nil && r != nil && !r.Timestamp.IsZero() {
			return r.Timestamp
		}
	}
	if ms, err := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64); err == nil {
		return time.UnixMilli(ms)
	}
	return time.Time{}
}

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
			err = newPanic("", p)
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
	rctx, pe := c.hooks.recordStart(ctx, it)
	if pe != nil { // the record fails, its handler not called
		u.unlock()
		now := c.now()
		return &failure{err: pe, permanent: true, first: now, last: now}
	}
	u.rctx, u.item, u.inRecord = rctx, it, true
	u.unlock()
	before := u.l
	f := c.handle(rctx, stop, key, item, run, u)
	if u.lock() {
		u.inRecord = false
		if pe := c.hooks.recordEnd(rctx, it, f.error()); pe != nil {
			// A panic with the record in hand fails it, never a silent success: a record that
			// succeeded is counted as failed instead.
			if f == nil {
				u.l.processed, u.l.replayed, u.l.notRecorded = before.processed, before.replayed, before.notRecorded
				now := c.now()
				f = &failure{err: pe, permanent: true, attempts: 1, first: now, last: now}
			} else {
				f.err = fmt.Errorf("%w; then %w", f.err, pe)
			}
		}
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
	var err error
	if pe := guard("Sink.Send", func() { err = c.sink.Send(ctx, e) }); pe != nil {
		err = pe
	}
	if err != nil {
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
