package batch

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/kafkalambda/toolkit/internal/recovered"
)

// Panics and the invocation.
//
// On Lambda Managed Instances one process serves several invocations at once, and a panic
// that leaves this package ends them all: aws-lambda-go exits the process after reporting a
// handler's panic, and a panic on a goroutine this package started ends the process at once
// (AWS: "Understanding the Lambda Managed Instances execution environment"). So every call
// into code of the user's goes through guard: a panic with a record in hand fails that
// record (a *PanicError, permanent, its "record failed" line with the value and the stack,
// its partition stopping there as for any failure); a panic with none in hand (OnBatchStart,
// OnBatchEnd, OnGroupEnd, the WithMetrics writer) fails the invocation, with one "batch
// invocation failed" line; a hook's panic about a record that has failed already (OnFailure,
// and the hooks the answer closes for a unit it left behind) adds one "hook panicked" line.
// Each unit's goroutine also recovers around everything it does, so that a panic no guard
// names (a logger's handler, say) fails the record in hand rather than the process.

// fatalPanic is the first panic of a batch where no record was in hand.
type fatalPanic struct {
	mu  sync.Mutex
	err *PanicError
}

// error is the panic as an error, or nil.
func (f *fatalPanic) error() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		return nil
	}
	return f.err
}

// fail notes pe, a panic where no record was in hand, which fails the invocation, and writes
// its line.
func (c *config) fail(ctx context.Context, pe *PanicError) {
	c.logPanic(ctx, "batch invocation failed", pe)
	c.fatal.mu.Lock()
	if c.fatal.err == nil {
		c.fatal.err = pe
	}
	c.fatal.mu.Unlock()
}

// logPanic writes one line at level Error with the panic's value and stack.
func (c *config) logPanic(ctx context.Context, msg string, pe *PanicError) {
	c.logger.LogAttrs(ctx, slog.LevelError, msg, slog.String("error", pe.Error()), slog.String("stack", string(pe.Stack)))
}

// panicStack is the stack of the first panic in err's chain (a *PanicError, or the
// *recovered.Error of a store's panic, from package idempotency), or nil.
func panicStack(err error) []byte {
	var pe *PanicError
	if errors.As(err, &pe) {
		return pe.Stack
	}
	var re *recovered.Error
	if errors.As(err, &re) {
		return re.Stack
	}
	return nil
}

// noTime answers a batch that starts with no time left, its deadline less the margin already
// passed (Lambda Managed Instances do not stop a function at its timeout: the time left can
// be zero or below): every record is reported at once, with one line at level Warn; no
// handler, hook or store is called.
func (c *config) noTime(ctx context.Context, info *BatchInfo, s *unitSet, n int, respond func()) {
	var st local
	for i := 0; i < n; i++ {
		s.report(i, 0)
		st.reported += int64(s.len(i))
	}
	if s.finish != nil {
		s.finish()
	}
	respond()
	c.logger.LogAttrs(ctx, slog.LevelWarn, "batch not processed: no time left",
		slog.String("source", info.Source),
		slog.Int("records", info.Records),
		slog.Int64("reported", st.reported),
		slog.Int64("remainingMs", c.stop.Add(c.deadlineMargin).Sub(c.now()).Milliseconds()),
		slog.Int64("deadlineMarginMs", c.deadlineMargin.Milliseconds()),
		slog.String("error", ErrDeadline.Error()))
	if m := c.mx; m != nil {
		var err error
		if pe := guard("WithMetrics writer", func() { err = writeMetrics(ctx, m, c.now(), info.Records, &st, 0) }); pe != nil {
			c.logPanic(ctx, "batch metrics not written", pe)
		} else if err != nil {
			c.logger.LogAttrs(ctx, slog.LevelError, "batch metrics not written", slog.String("source", info.Source), slog.String("error", err.Error()))
		}
	}
}

// recoverUnit is the last guard of unit i's goroutine: deferred by run, it turns a panic
// that no guard caught into the failure of record k, the record in hand.
func (c *config) recoverUnit(ctx context.Context, s *unitSet, i int, k *int, u *unit) {
	p := recover()
	if p == nil {
		return
	}
	pe := newPanic("a call for the record", p)
	if u.held { // the panic came with the unit's lock held
		u.held = false
		u.mu.Unlock()
	}
	if !u.lock() {
		return // the batch answered without the unit
	}
	defer u.unlock()
	if u.group != nil {
		ctx = u.gctx
	}
	n := s.len(i)
	if u.ended || *k >= n {
		c.fail(ctx, pe)
		return
	}
	now := c.now()
	f := &failure{err: pe, permanent: true, first: now, last: now}
	if u.inRecord {
		u.inRecord = false
		if hp := c.hooks.recordEnd(u.rctx, u.item, pe); hp != nil {
			c.logPanic(ctx, "hook panicked", hp)
		}
	}
	fl := &Failure{Item: s.item(i, *k), Group: s.group(i)}
	c.failed(ctx, fl, f, n-*k, &u.l)
	s.report(i, *k)
	c.end(u, n-*k)
}
