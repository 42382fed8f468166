package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrNotAcknowledged is the error (matched with errors.Is) of a record that [Produce] stopped
// waiting for at the context's deadline, or when the context was cancelled. Its outcome is
// unknown: it may still land, so report it failed and let the retry (which idempotency keys
// make harmless) decide.
var ErrNotAcknowledged = errors.New("producer: not acknowledged before the deadline")

// MaxDeadlineMargin caps the margin [Produce] keeps before the context's deadline. The margin
// is a tenth of the time left when Produce is called, at most MaxDeadlineMargin, so that a
// Lambda handler still has time to build and return its response.
const MaxDeadlineMargin = time.Second

// NoDeadlineWait is how long [Produce] waits when its context has no deadline (the Java
// client's delivery.timeout.ms): a Produce without a deadline still ends.
const NoDeadlineWait = 2 * time.Minute

// Result is the outcome of one record of a [Produce] call.
type Result struct {
	// Record is the record as given; on success kgo has set its Partition, Offset and
	// Timestamp.
	Record *kgo.Record
	// Err is nil when the broker acknowledged the record (with every in-sync replica under
	// the default acks). Else it is the produce error, or wraps [ErrNotAcknowledged].
	Err error
}

// Results are the outcomes of the records of one [Produce] call, in the order given.
type Results []Result

// Err is nil when every record succeeded; else it joins (errors.Join) one error per failed
// record, naming its index and topic and wrapping its Err, so errors.Is(err,
// ErrNotAcknowledged) tells whether any outcome is unknown.
func (rs Results) Err() error {
	var errs []error
	for i, r := range rs {
		if r.Err == nil {
			continue
		}
		topic := ""
		if r.Record != nil {
			topic = r.Record.Topic
		}
		errs = append(errs, fmt.Errorf("record %d (topic %q): %w", i, topic, r.Err))
	}
	return errors.Join(errs...)
}

// Failed returns the results that have an error.
func (rs Results) Failed() Results {
	var out Results
	for _, r := range rs {
		if r.Err != nil {
			out = append(out, r)
		}
	}
	return out
}

// Produce produces records on cl and waits until each is acknowledged or has failed,
// returning at the latest at ctx's deadline less a margin (a tenth of the time left, at most
// [MaxDeadlineMargin]): records not acknowledged by then are failed with an error wrapping
// [ErrNotAcknowledged], never left unreported and never waited for past the deadline. Records
// still buffered in cl when Produce returns that way are cancelled (kgo fails a partition's
// buffered records when the first one's context ends, so records another goroutine produced
// into the same batch may fail with them); records already sent cannot be, and may still land.
//
// On a client made by [Opts] or [NewClient], Produce also stops waiting when a connection
// fails in a way that reconnecting will not cure (authentication refused, credentials or a
// token that cannot be made, an untrusted certificate): the records still waiting fail at
// once with an error that matches ErrNotAcknowledged and wraps that failure. At the deadline,
// the error names the last connection error of the last minute, if any.
//
// Each record's Context is set to ctx when nil, so kgo hooks (the tracing adapters) see the
// caller's span. Without a deadline on ctx, Produce waits at most [NoDeadlineWait]. A record's
// Timestamp, old or new, does not shorten the wait. A nil cl or nil record fails rather than
// panics.
func Produce(ctx context.Context, cl *kgo.Client, records ...*kgo.Record) Results {
	rs := make(Results, len(records))
	for i, r := range records {
		rs[i].Record = r
	}
	if len(records) == 0 {
		return rs
	}
	if cl == nil {
		for i := range rs {
			rs[i].Err = errors.New("producer: nil *kgo.Client")
		}
		return rs
	}

	var wctx context.Context
	var cancel context.CancelFunc
	if dl, ok := ctx.Deadline(); ok {
		wctx, cancel = context.WithDeadline(ctx, waitDeadline(dl, time.Now()))
	} else {
		wctx, cancel = context.WithTimeout(ctx, NoDeadlineWait)
	}
	defer cancel()

	// A client made from Opts reports connection failures that retrying cannot cure
	// (authentication refused): stop waiting at the first one rather than at the deadline.
	// The last connection error is worth naming if it is recent (kgo may have given up
	// reconnecting for a while just before this call).
	recent := time.Now().Add(-time.Minute)
	var failed <-chan error
	watch := watchOf(cl)
	if watch != nil {
		ch, unsubscribe := watch.subscribe()
		defer unsubscribe()
		failed = ch
	}

	var (
		mu        sync.Mutex
		pending   = len(records)
		finished  bool
		acked     = make([]bool, len(records))
		ctxFailed = make([]bool, len(records))
		done      = make(chan struct{})
	)
	finish := func(i int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if finished || acked[i] {
			return
		}
		if err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
			// kgo gave the record up when wctx ended: reported below, as those not
			// acknowledged at all are.
			ctxFailed[i] = true
		}
		rs[i].Err, acked[i] = err, true
		if pending--; pending == 0 {
			close(done)
		}
	}
	if err := wctx.Err(); err == nil {
		for i, r := range records {
			if r == nil {
				finish(i, errors.New("producer: nil *kgo.Record"))
				continue
			}
			if r.Context == nil {
				r.Context = ctx
			}
			cl.Produce(wctx, r, func(_ *kgo.Record, err error) { finish(i, err) })
		}
		// Like ProduceSync, do not let the records linger (kgo waits ProducerLinger, 10 ms by
		// default, for more records): all of them are buffered now. Flush stops lingering
		// while it runs (kgo logs "flushing" at info level); it is stopped when Produce returns.
		if lingers(cl) {
			fctx, stop := context.WithCancel(wctx)
			defer stop()
			go cl.Flush(fctx) //nolint:errcheck // only its side effect on lingering matters
		}
	}

	var connErr error
	select {
	case <-done:
	case <-wctx.Done():
	case connErr = <-failed:
	}
	mu.Lock()
	defer mu.Unlock()
	finished = true
	out := make(Results, len(rs))
	copy(out, rs)
	var notAcked error
	for i := range out {
		if acked[i] && !ctxFailed[i] {
			continue
		}
		if notAcked == nil {
			cause := wctx.Err()
			if cause == nil { // kgo failed it on a context error while wctx itself lives on
				cause = out[i].Err
			}
			switch last := watch.lastSince(recent); {
			case connErr != nil:
				notAcked = &notAcknowledged{cause: connErr}
			case last != nil:
				notAcked = fmt.Errorf("%w (%w; last connection error: %w)", ErrNotAcknowledged, cause, last)
			default:
				notAcked = fmt.Errorf("%w (%w)", ErrNotAcknowledged, cause)
			}
		}
		out[i].Err = notAcked
	}
	return out
}

// waitDeadline is when Produce, called at now under a context whose deadline is dl, stops
// waiting: dl less a tenth of the time left, at most MaxDeadlineMargin (dl itself once it
// has passed). A function of now, so that the tests give it the time.
func waitDeadline(dl, now time.Time) time.Time {
	margin := min(dl.Sub(now)/10, MaxDeadlineMargin)
	return dl.Add(-max(margin, 0))
}

// lingers reports whether cl holds records back (ProducerLinger or ManualFlushing), so that
// Produce must flush.
func lingers(cl *kgo.Client) bool {
	linger, _ := cl.OptValue(kgo.ProducerLinger).(time.Duration)
	manual, _ := cl.OptValue(kgo.ManualFlushing).(bool)
	return linger > 0 || manual
}
