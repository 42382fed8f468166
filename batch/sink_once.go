package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/internal/completion"
)

// Sunk once: under WithIdempotency, a record the sink takes completes its key with the
// outcome "sunk" (completion.Sunk, stored as the entry's data), so that a
// redelivery of its batch skips it, with one "record already sent to the sink" line, rather
// than send it to the sink again. The record is given to the sink while its key is held: a
// concurrent redelivery finds the key in progress and comes back later. A sink that refuses
// the record leaves the key released, as a handler's failure does: the record is reported
// and comes back, never lost.

// sinkHeld gives a record that failed inside idempotency.Do to the sink, if the policy sends
// it there, while Do holds its key: the outcome completion.Sunk (Do completes the key with it)
// when the sink took it, otherwise the failure's error (Do releases the key).
func (c *config) sinkHeld(ctx context.Context, it Item, f *failure, u *unit) (completion.Outcome, error) {
	if c.toSink(f) {
		c.sendFailure(ctx, itemEnvelope(it, f), f, u)
		if f.sunk {
			return completion.Sunk, nil
		}
	}
	return "", f.err
}

// sinkKeyed gives the sink, under key, a record that failed before its handler could run (a
// value that did not decode, a filter that cannot decide on it). It returns nil when an
// earlier delivery completed the key (the record was sunk then: it is skipped, counted as
// replayed), or f, which says whether the sink took the record; a store that fails, or
// another invocation holding the key, reports the record, as for a handler's record.
func (c *config) sinkKeyed(ctx context.Context, key string, it Item, f *failure, u *unit) *failure {
	ran := false
	outcome, err := idempotency.Do(c.leaseCtx(ctx), c.store, key, nil, func(context.Context) (completion.Outcome, error) {
		ran = true
		return c.sinkHeld(ctx, it, f, u)
	}, c.idemOpts...)
	switch {
	case !ran && err == nil: // completed by an earlier delivery
		u.l.processed++
		u.l.replayed++
		if outcome == completion.Sunk {
			c.logSunkBefore(ctx, it, u)
		}
		return nil
	case !ran: // the store failed, or another invocation holds the key: not sunk now
		f.err, f.store, f.offered = fmt.Errorf("%w (not given to the sink: %w)", f.err, err), true, true
		f.permanent = f.permanent || errors.Is(err, idempotency.ErrPayloadMismatch)
	case f.sunk && err != nil: // the sink took it; its completion was not stored
		if u.lock() {
			c.logNotRecorded(ctx, it, fmt.Errorf("batch: the sink took the record: %w", err))
			u.unlock()
		}
	case err != nil && !f.sunk:
		f.err = err // with the release's error, if it failed too
	}
	return f
}

// logSunkBefore writes the line of a record skipped because an earlier delivery sent it to
// the sink and completed its key with the outcome "sunk".
func (c *config) logSunkBefore(ctx context.Context, it Item, u *unit) {
	if !c.logger.Enabled(ctx, slog.LevelInfo) || !u.lock() {
		return
	}
	defer u.unlock()
	group := ""
	if it.Kafka != nil {
		group = it.Kafka.PartitionID()
	}
	c.logger.LogAttrs(ctx, slog.LevelInfo, "record already sent to the sink", where(make([]slog.Attr, 0, 4), it, group)...)
}

// itemEnvelope is the envelope of a failed record or message.
func itemEnvelope(it Item, f *failure) *Envelope {
	if it.Kafka != nil {
		return kafkaEnvelope(it.Kafka, f)
	}
	return sqsEnvelope(it.SQS, f)
}
