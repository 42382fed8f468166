package idempotency

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/internal/completion"
)

// The lease of a running call.
//
// An in-progress entry's lease ends at the invocation's deadline (or WithMaxLease after the
// claim), so that a function that crashes or times out frees its key. But fn may still run
// then: a handler that ignores its context, abandoned by package batch at its deadline margin,
// goes on in a process that keeps running (Lambda Managed Instances, or the next invocation
// of the same execution environment). While fn runs, and while a completion that could not be
// stored is retried, a holder renews the lease (Store.Renew), so that a redelivery gets
// ErrInProgress rather than running fn beside it. When the lease ends unrenewed, fn's context
// ends with it (cause ErrLeaseLost), and a completion that then cannot be stored is
// ErrLeaseLost, not a success.
//
// What remains is a process that stops without ending fn: frozen, it renews nothing, and the
// key is free once its lease ends (a renewal period after its last renewal at most); if the
// process resumes, fn goes on beside whoever took the key (docs/idempotency.md measures it).

// How far a renewal moves the lease, when WithMaxLease does not say: as far as the claim's
// lease went (the time to the deadline), within these bounds.
const (
	minRenewLease = time.Second
	renewLease    = 30 * time.Second
)

// completeRounds bounds the renewals made to store one completion after Do has returned.
const completeRounds = 10

// holder keeps one Do call's entry held while fn runs and while its completion is retried.
type holder struct {
	store  Store
	cfg    *config
	ctx    context.Context // Do's values, never cancelled: its calls end by the lease instead
	period time.Duration   // how far a renewal moves the lease while fn runs
	long   time.Duration   // and while a completion that failed is retried
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	rec     Entry     // the in-progress entry as last stored
	written time.Time // when rec's lease was written, by cfg.now
	gen     int       // renewals so far: a lease-end timer set before one is stale
	beat    *time.Timer
	expire  *time.Timer // ends fn's context when the lease ends before the context does
	paused  bool        // fn has returned: its context is done with
	ended   bool        // no more renewals on a timer
	taken   bool        // Renew said the entry is no longer this call's
	kicked  bool        // a failed completion asked for a renewal
}

// hold starts keeping rec held for a call under ctx.
func hold(ctx context.Context, cfg *config, store Store, rec *Entry) *holder {
	p := cfg.maxLease
	if p <= 0 {
		// As long as the claim's lease, so that a process that dies after a renewal frees
		// its key about as soon as one that dies before.
		p = min(max(rec.InProgressExpiration.Sub(cfg.now()), minRenewLease), renewLease)
	}
	long := cfg.maxLease
	if long <= 0 {
		long = renewLease
	}
	return &holder{store: store, cfg: cfg, ctx: context.WithoutCancel(ctx), period: p, long: long, rec: *rec, written: cfg.now()}
}

// bind returns fn's context: ctx, ended when the lease ends unrenewed, and starts the
// renewals.
func (h *holder) bind(ctx context.Context) context.Context {
	ctx, h.cancel = context.WithCancelCause(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	if d, ok := ctx.Deadline(); !ok || h.rec.InProgressExpiration.Before(d.Truncate(time.Millisecond)) {
		h.expire = time.AfterFunc(h.pastEnd(), h.onExpire(h.gen))
	}
	h.schedule()
	return ctx
}

// untilEnd is the time left in the lease. Called with h.mu held.
func (h *holder) untilEnd() time.Duration {
	return h.rec.InProgressExpiration.Sub(h.cfg.now())
}

// pastEnd is the time until the lease has ended by the store's condition, which holds it to
// its last millisecond. Called with h.mu held.
func (h *holder) pastEnd() time.Duration { return h.untilEnd() + time.Millisecond }

// schedule sets the next renewal: halfway through the lease, or half a period before it
// ends, whichever is later, so that a short call makes none. Called with h.mu held.
func (h *holder) schedule() {
	end := h.rec.InProgressExpiration
	at := h.written.Add(end.Sub(h.written) / 2)
	at = latest(at, end.Add(-h.period/2))
	wait := max(at.Sub(h.cfg.now()), 0)
	if h.beat == nil {
		h.beat = time.AfterFunc(wait, h.onBeat)
		return
	}
	h.beat.Reset(wait)
}

func (h *holder) onBeat() {
	h.mu.Lock()
	stop := h.ended
	d := h.period
	if h.paused { // fn has returned: its completion is being stored
		d = h.long
	}
	h.mu.Unlock()
	if stop || h.renew(d) != nil {
		return
	}
	h.mu.Lock()
	if !h.ended {
		h.schedule()
	}
	h.mu.Unlock()
}

// onExpire ends fn's context if the lease has not been renewed since generation gen.
func (h *holder) onExpire(gen int) func() {
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.gen == gen && !h.paused && !h.ended {
			h.cancel(ErrLeaseLost)
		}
	}
}

// renew moves the lease d past now. The call ends when the lease does, or a quarter of d
// from now if that is later (a renewal after the lease ended is still safe: it applies only
// while no other call has taken the entry).
func (h *holder) renew(d time.Duration) error {
	h.mu.Lock()
	r := h.rec
	h.mu.Unlock()
	now := h.cfg.now()
	stop := time.Now().Add(max(r.InProgressExpiration.Sub(now), d/4))
	r.InProgressExpiration = latest(r.InProgressExpiration, now.Add(d)).Truncate(time.Millisecond)
	r.Expiration = latest(r.Expiration, r.InProgressExpiration.Truncate(time.Second))
	err := persist(h.ctx, stop, "Renew", func(ctx context.Context) error { return h.store.Renew(ctx, &r) })
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		if errors.Is(err, ErrLeaseLost) {
			h.taken = true
			if !h.paused && !h.ended {
				h.cancel(ErrLeaseLost)
			}
		}
		return err
	}
	if r.InProgressExpiration.After(h.rec.InProgressExpiration) {
		h.rec.InProgressExpiration, h.rec.Expiration, h.written = r.InProgressExpiration, r.Expiration, now
		h.gen++
		if h.expire != nil && !h.paused && !h.ended {
			h.expire.Stop()
			h.expire = time.AfterFunc(h.pastEnd(), h.onExpire(h.gen))
		}
	}
	return nil
}

// halfLeft is half the time left in the lease.
func (h *holder) halfLeft() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return max(h.untilEnd()/2, 0)
}

// kick renews the lease now, once, rather than at its next time: a completion has failed,
// and the retries must happen under a lease that outlives them.
func (h *holder) kick() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.kicked && !h.ended && h.beat != nil {
		h.kicked = true
		h.beat.Reset(0)
	}
}

// pause ends fn's context: fn has returned. The renewals go on while its completion is
// being stored.
func (h *holder) pause() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.paused = true
	if h.expire != nil {
		h.expire.Stop()
	}
	h.cancel(context.Canceled)
}

// end stops the renewals on a timer: the entry is completed, released, left to its lease, or
// completeLater renews it itself.
func (h *holder) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = true
	if h.beat != nil {
		h.beat.Stop()
	}
	if h.expire != nil {
		h.expire.Stop()
	}
}

// entry returns the in-progress entry as last stored.
func (h *holder) entry() Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rec
}

// lost reports whether the lease may have passed to another call: Renew said so, or it has
// ended unrenewed.
func (h *holder) lost() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.taken || h.cfg.now().UnixMilli() > h.rec.InProgressExpiration.UnixMilli()
}

// completeLater stores done after Do has returned, renewing the lease as it goes, until it
// is stored, the store refuses it for good, the lease passes to another call, or
// completeRounds renewals have not sufficed. Every call ends by the lease, so a process that
// stops renewing frees the key when its lease ends. It starts before Do returns, so before
// its caller takes another record; package batch waits for it (completion.Settle) before the
// next batch of the same store, as an execution environment resumes after a freeze.
func (h *holder) completeLater(done *Entry) {
	p := completion.Add(h.store)
	h.end()
	go func() {
		defer p.Done()
		for round := 0; round < completeRounds; round++ {
			h.mu.Lock()
			left := h.untilEnd()
			h.mu.Unlock()
			if left <= h.long/2 && h.renew(h.long) != nil {
				return
			}
			h.mu.Lock()
			stop := time.Now().Add(h.untilEnd() - h.long/4)
			h.mu.Unlock()
			err := persist(h.ctx, stop, "Complete", func(ctx context.Context) error { return h.store.Complete(ctx, done) })
			if err == nil || !(transient(err) || errors.Is(err, context.DeadlineExceeded)) {
				return
			}
		}
	}()
}

// releaseLater deletes the entry after Do has returned, fn having failed and the release
// not having been made in time: a renewed lease would otherwise hold the key long after fn.
func (h *holder) releaseLater() {
	p := completion.Add(h.store)
	go func() {
		defer p.Done()
		h.mu.Lock()
		r := h.rec
		// Until the lease ends, or a quarter period from now if that is later: a renewal
		// still in flight may move the lease on, and a release only deletes the entry while it
		// is still this call's.
		stop := time.Now().Add(max(h.untilEnd(), h.period/4))
		h.mu.Unlock()
		_ = persist(h.ctx, stop, "Release", func(ctx context.Context) error { return h.store.Release(ctx, &r) })
	}()
}
