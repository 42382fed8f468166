package batch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Units and the answer at the deadline.
//
// A unit is what runs in order on one goroutine: a Kafka partition, an SQS FIFO message
// group, or one message of a standard queue. When the context has a deadline, the batch
// answers at the deadline less the margin whether or not every unit has ended, because a
// handler that ignores its context would otherwise hold the response past Lambda's timeout,
// and Lambda would deliver the whole batch again. A unit still running then is sealed: the
// answer reports its record in flight and the rest of the unit, and closes its hooks; its
// goroutine is left behind and, from then on, touches nothing shared (the response, the
// counts, hooks, logs, the sink). The unit's goroutine and the answer decide who speaks for
// the unit under the unit's lock, which is taken only when there is a deadline.

// ErrAbandoned is the error of a record whose handling had not ended at the deadline less
// WithDeadlineMargin, typically a handler that does not watch its context: the record and
// the rest of its partition (or FIFO message group) are reported so that the response beats
// Lambda's timeout, and the handler is left running. What it does after that changes
// nothing in the response already returned.
var ErrAbandoned = errors.New("batch: not done by the deadline margin: reported, and its handler left running")

type unit struct {
	guard bool // the answer may come before the unit ends: mu guards what follows

	mu     sync.Mutex
	held   bool // the unit's goroutine holds mu (for its last guard, recoverUnit)
	sealed bool // answered without the unit: its goroutine must stop
	ended  bool // the goroutine spoke for the unit: its counts and response are final
	pos    int  // the records before pos are done
	busy   bool // the record at pos was started
	// handled: the record at pos succeeded, only its completion is being stored, so it is
	// not reported whatever the store says (see idempotency.ErrNotRecorded).
	handled bool
	done    local // what the records before pos counted

	l local // the goroutine's own counts, published into done

	// The hooks the answer closes when it leaves the unit behind.
	gctx     context.Context
	group    *GroupInfo
	rctx     context.Context
	item     *Item // the record in flight, when record hooks were started for it
	inRecord bool
}

// lock takes the unit's lock when there is one to take. It reports false, holding nothing,
// when the batch has been answered without the unit: the caller must then stop.
func (u *unit) lock() bool {
	if !u.guard {
		return true
	}
	u.mu.Lock()
	if u.sealed {
		u.mu.Unlock()
		return false
	}
	u.held = true
	return true
}

func (u *unit) unlock() {
	if u.guard {
		u.held = false
		u.mu.Unlock()
	}
}

// publish notes, under the lock, that the records before pos are done, and whether the
// record at pos has started.
func (u *unit) publish(pos int, busy bool) {
	u.pos, u.busy, u.handled, u.done = pos, busy, false, u.l
}

// step publishes that the records before i are done and record i starts (busy says whether
// it is handled or failed at once as late). It reports false when the unit was sealed.
func (u *unit) step(i int, busy bool) bool {
	if !u.guard {
		return true
	}
	if !u.lock() {
		return false
	}
	u.publish(i, busy)
	u.unlock()
	return true
}

// succeeded notes that the record in flight succeeded: only storing its completion is left.
func (u *unit) succeeded() {
	if u.lock() {
		u.handled = true
		u.unlock()
	}
}

// live reports whether the unit may still act (send to the sink, say).
func (u *unit) live() bool {
	if !u.lock() {
		return false
	}
	u.unlock()
	return true
}

// seal is the answer's claim on u: it reports whether u's goroutine had ended; if not, u is
// sealed, and the answer speaks for it from u.pos on.
func (u *unit) seal() (ended bool) {
	if !u.guard {
		return true // nothing answers before every unit ends
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.ended {
		u.sealed = true
	}
	return u.ended
}

// sealedFailure is what the answer says of the record at u.pos of a sealed unit: a success
// whose completion was not stored yet (notRecorded), or the failure of the first record it
// reports, and the index of that record.
func (c *config) sealedFailure(u *unit, n int) (f *failure, first int, notRecorded bool) {
	now := c.now()
	switch {
	case u.pos >= n:
		return nil, n, false
	case u.busy && u.handled:
		first, notRecorded = u.pos+1, true
		u.done.processed++
		u.done.notRecorded++
	case u.busy:
		return &failure{err: ErrAbandoned, first: now, last: now}, u.pos, false
	default:
		first = u.pos
	}
	if first >= n {
		return nil, n, notRecorded
	}
	return &failure{err: ErrDeadline, first: now, last: now}, first, notRecorded
}

// errStillStoring is the error logged for a record that succeeded but whose completion was
// still being stored when the batch answered.
var errStillStoring = errors.New("batch: the handler succeeded; its completion was still being stored at the deadline margin")

// closeHooks ends the hooks a sealed unit left open: the record in flight, then the group.
func (c *config) closeHooks(u *unit, err error, reported int) {
	if u.inRecord {
		if pe := c.hooks.recordEnd(u.rctx, u.item, err); pe != nil {
			c.logPanic(u.rctx, "hook panicked", pe) // the record is reported already
		}
	}
	if u.group != nil {
		if pe := c.hooks.groupEnd(u.gctx, u.group, reported); pe != nil {
			c.fail(u.gctx, pe)
		}
	}
}

// forEach runs fn for each of n units, at most limit at once (0: all at once). It returns once
// every call has returned, or, when quit is not nil, once quit is closed: the calls still
// running are left behind, and the units not yet begun are not begun.
func forEach(n, limit int, quit <-chan struct{}, fn func(i int)) {
	if n == 0 {
		return
	}
	if n == 1 && quit == nil {
		fn(0)
		return
	}
	if limit <= 0 || limit > n {
		limit = n
	}
	// The workers take the next unit by index from a shared counter: one atomic add per
	// unit, where a channel send costs a lock and a goroutine handoff (a fifth of a no-op
	// SQS batch's time, issue 21).
	var next atomic.Int64
	var wg sync.WaitGroup
	work := func() {
		defer wg.Done()
		for {
			if quit != nil {
				select {
				case <-quit: // the batch has answered: begin no other unit
					return
				default:
				}
			}
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			fn(i)
		}
	}
	if quit == nil {
		wg.Add(limit)
		for w := 1; w < limit; w++ {
			go work()
		}
		work() // the caller is the last worker
		wg.Wait()
		return
	}
	wg.Add(limit)
	for w := 0; w < limit; w++ {
		go work()
	}
	all := make(chan struct{})
	go func() {
		wg.Wait()
		close(all)
	}()
	select {
	case <-all:
	case <-quit:
	}
}

// answerAt is when the batch answers without waiting for its units: the handler context's
// end, which comes at the deadline less the margin; nil when there is no deadline.
func answerAt(hctx context.Context, stop time.Time) <-chan struct{} {
	if stop.IsZero() {
		return nil
	}
	return hctx.Done()
}

// unitSet describes the units of a batch, Kafka partitions or SQS groups, to run and answer.
type unitSet struct {
	len   func(i int) int        // records in unit i
	item  func(i, k int) Item    // record k of unit i
	group func(i int) string     // unit i's ID in a Failure: partition key, message group, or message ID
	info  func(i int) *GroupInfo // unit i for the group hooks
	// do processes record k of unit i: nil when it is done, or its failure, after the sink.
	do func(ctx context.Context, i, k int, u *unit) *failure
	// report marks the records of unit i from k on as reported in the response.
	report func(i, k int)
	// finish, when set (key sequences: keys.go), is called once every unit has been
	// answered for, before the response is read: it makes the response from what the
	// units reported, and returns how many records it reports.
	finish func() int64

	fatal fatalPanic // the batch's first panic where no record was in hand
}

// run processes unit i on its goroutine, in order, until a failure that is reported stops it.
func (c *config) run(ctx context.Context, stop time.Time, s *unitSet, i int, u *unit) {
	k := 0 // the record in hand, for the last guard
	defer c.recoverUnit(ctx, s, i, &k, u)
	gctx := ctx
	n := s.len(i)
	if len(c.hooks.group) > 0 {
		if !u.lock() {
			return
		}
		u.group = s.info(i)
		var pe *PanicError
		gctx, pe = c.hooks.groupStart(ctx, u.group)
		u.gctx = gctx
		if pe != nil { // the group's first record is in hand: it fails, and the group stops
			now := c.now()
			c.failed(gctx, &Failure{Item: s.item(i, 0), Group: s.group(i)}, &failure{err: pe, permanent: true, first: now, last: now}, n, &u.l)
			s.report(i, 0)
			c.end(u, n)
			u.unlock()
			return
		}
		u.unlock()
	}
	for ; k < n; k++ {
		late := !stop.IsZero() && !c.now().Before(stop)
		if !u.step(k, !late) {
			return
		}
		var f *failure
		if late {
			f = c.late()
		} else if f = s.do(gctx, i, k, u); f == nil {
			continue
		}
		if !u.lock() {
			return
		}
		fl := &Failure{Item: s.item(i, k), Group: s.group(i)}
		fctx := gctx // the failure's line and hooks: the group's context, with the record's ID
		if c.correlation != "" {
			fctx = c.correlate(gctx, fl.Item)
		}
		if f.sunk { // the unit moves on
			c.failed(fctx, fl, f, 0, &u.l)
			u.publish(k+1, false)
			u.unlock()
			continue
		}
		c.failed(fctx, fl, f, n-k, &u.l)
		s.report(i, k)
		c.end(u, n-k)
		u.unlock()
		return
	}
	if u.lock() {
		c.end(u, 0)
		u.unlock()
	}
}

// end closes unit u, under its lock, from its own goroutine: its counts are final.
func (c *config) end(u *unit, reported int) {
	u.ended, u.done = true, u.l
	if u.group != nil {
		if pe := c.hooks.groupEnd(u.gctx, u.group, reported); pe != nil {
			c.fail(u.gctx, pe) // no record in hand: the invocation fails
		}
	}
}

// answer seals the units that have not ended, speaks for them, and returns the batch's
// counts.
func (c *config) answer(ctx context.Context, s *unitSet, us []unit) local {
	var total local
	for i := range us {
		u := &us[i]
		if !u.seal() {
			c.answerFor(ctx, s, i, u)
		}
		total.merge(&u.done)
	}
	return total
}

// answerFor speaks for sealed unit i: the record in flight is reported as abandoned (or, if
// it had succeeded and only its completion was being stored, counted as processed and not
// recorded), and so is the rest of the unit; the hooks it left open are closed.
func (c *config) answerFor(ctx context.Context, s *unitSet, i int, u *unit) {
	if u.group != nil {
		ctx = u.gctx
	}
	n := s.len(i)
	f, first, notRecorded := c.sealedFailure(u, n)
	if notRecorded {
		it := s.item(i, u.pos)
		lctx := ctx
		if c.correlation != "" {
			lctx = c.correlate(ctx, it)
		}
		c.logNotRecorded(lctx, it, errStillStoring)
	}
	reported := 0
	if f != nil {
		reported = n - first
		fl := &Failure{Item: s.item(i, first), Group: s.group(i)}
		fctx := ctx
		if c.correlation != "" {
			fctx = c.correlate(ctx, fl.Item)
		}
		c.failed(fctx, fl, f, reported, &u.done)
		s.report(i, first)
	}
	var recordErr error
	if u.busy && !u.handled {
		recordErr = ErrAbandoned
	}
	c.closeHooks(u, recordErr, reported)
}
