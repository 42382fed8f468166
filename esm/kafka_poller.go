package esm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kafkalambda/toolkit/limits"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaPollerConcurrency is how many invocations one poller runs at once: AWS's "each poller
// can handle up to 5 concurrent invocations" (esm-contract.md §6).
const kafkaPollerConcurrency = 5

// errStopped ends an invocation's settling without an error: Run is ending or a partition was
// revoked. Records in hand are not committed; the partition's next owner gets them again.
var errStopped = errors.New("stopped")

// kafkaPoller holds some of the partitions the group assigned and invokes the function with
// their records, up to kafkaPollerConcurrency invocations at once. A partition is in at most
// one invocation at a time (busy from the moment its records are taken into a batch until
// they are all committed), so its records are delivered in offset order.
type kafkaPoller struct {
	m *Kafka

	mu      sync.Mutex
	parts   []*kafkaPart // held, sorted by partition number
	turn    int          // index in parts of the partition a batch starts with
	pending []*attempt   // failed records waiting for their next try, oldest first
	running int          // attempts under way
	changed chan struct{}
	fails   int             // encodeRecord failures in a row
	failing time.Time       // when the first of them happened
	taken   map[int32]int64 // partition: offset after the records just taken, for Lag (applied without mu)

	stop chan struct{} // closed to stop the poller
	done chan struct{} // closed when it and its attempts have stopped
	wg   sync.WaitGroup
}

// kafkaPart is one partition a poller holds. Its fields are guarded by the poller's mu, but
// revoked, which is atomic.
type kafkaPart struct {
	num    int32
	id     string // "topic-N"
	key    []byte // "topic-N":[
	poller *kafkaPoller

	inbox    []*kgo.Record // pushed by Run's poll loop, not yet drained
	buffered int           // records in inbox and queue
	paused   bool          // fetching paused because buffered reached highWater
	retryAt  time.Time     // encodeRecord failed: drain again from then on
	queue    []*kafkaEntry // drained, in offset order, not yet taken into a batch
	span     []*kafkaEntry // taken, not yet committed, in offset order; empty when free
	inflight bool          // records of it are in an attempt under way
	revoked  atomic.Bool   // read without mu by an attempt settling its records
}

// kafkaEntry is one record a partition has drained.
type kafkaEntry struct {
	rec        *kgo.Record
	part       *kafkaPart
	json       []byte // the record in the event; nil when filtered or given up at once
	condition  string // give the record up alone with this condition (encodeRecord, its size)
	arrived    time.Time
	deliveries int   // invocations that carried it
	done       bool  // succeeded or given up
	by         int64 // the invocation it succeeded in; 0 when given up
}

func (e *kafkaEntry) filtered() bool { return e.json == nil && e.condition == "" }

// attempt is records tried together: a batch, or what is left of one after a failure.
type attempt struct {
	recs      []*kafkaEntry // grouped by partition, in offset order within each
	parts     []*kafkaPart  // the partitions of recs (or, for a span of filtered records only, that partition)
	condition string        // give recs up at once with this condition
	retries   int           // failed tries of these records that counted as retries
	invokes   int           // invocations that held these records
	last      *Response     // the response of the last of them
	notBefore time.Time     // the next try waits for the backoff
}

func newKafkaPoller(m *Kafka) *kafkaPoller {
	return &kafkaPoller{m: m, changed: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
}

// notify wakes the poller's loop and whoever waits for a change. p.mu must be held.
func (p *kafkaPoller) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// highWater is how many records a partition buffers before its fetching is paused.
func (p *kafkaPoller) highWater() int { return max(2*p.m.cfg.batchSize, 1000) }

// add makes the poller hold partition num.
func (p *kafkaPoller) add(num int32) *kafkaPart {
	m := p.m
	pt := &kafkaPart{num: num, id: m.partitionID(num), key: partitionKey(m.topic, num), poller: p}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.parts = append(p.parts, pt)
	slices.SortFunc(p.parts, func(a, b *kafkaPart) int { return int(a.num) - int(b.num) })
	p.notify()
	return pt
}

// push hands records fetched for pt to the poller.
func (p *kafkaPoller) push(pt *kafkaPart, recs []*kgo.Record) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pt.revoked.Load() {
		return // its next owner fetches them again
	}
	p.m.counters.In.Add(int64(len(recs)))
	p.m.metrics.polled.Add(int64(len(recs)))
	pt.inbox = append(pt.inbox, recs...)
	pt.buffered += len(recs)
	if !pt.paused && pt.buffered >= p.highWater() {
		pt.paused = true
		p.m.client.Load().PauseFetchPartitions(map[string][]int32{p.m.topic: {pt.num}})
	}
	p.notify()
}

// release forgets n records that left pt's queue, and resumes fetching when few are left.
// p.mu must be held.
func (p *kafkaPoller) release(pt *kafkaPart, n int) {
	pt.buffered -= n
	if pt.paused && !pt.revoked.Load() && pt.buffered < p.highWater()/2 {
		pt.paused = false
		p.m.client.Load().ResumeFetchPartitions(map[string][]int32{p.m.topic: {pt.num}})
	}
}

// revoke stops holding the partitions nums: it drops their waiting records and retries, waits
// until no attempt under way holds them, and resumes their fetching (a partition assigned
// again must get records).
func (p *kafkaPoller) revoke(nums []int32) {
	p.mu.Lock()
	var gone []*kafkaPart
	p.parts = slices.DeleteFunc(p.parts, func(pt *kafkaPart) bool {
		if !slices.Contains(nums, pt.num) {
			return false
		}
		pt.revoked.Store(true)
		gone = append(gone, pt)
		return true
	})
	p.dropRevoked()
	p.notify()
	for slices.ContainsFunc(gone, func(pt *kafkaPart) bool { return pt.inflight }) {
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-p.done:
		}
		p.mu.Lock()
	}
	var resume []int32
	for _, pt := range gone {
		if pt.paused {
			pt.paused = false
			resume = append(resume, pt.num)
		}
	}
	p.mu.Unlock()
	if len(resume) > 0 {
		p.m.client.Load().ResumeFetchPartitions(map[string][]int32{p.m.topic: resume})
	}
}

// dropRevoked removes the records of revoked partitions from the attempts waiting for a retry.
// p.mu must be held.
func (p *kafkaPoller) dropRevoked() {
	keep := p.pending[:0]
	for _, a := range p.pending {
		a.recs = slices.DeleteFunc(a.recs, func(e *kafkaEntry) bool { return e.part.revoked.Load() })
		a.parts = slices.DeleteFunc(a.parts, func(pt *kafkaPart) bool { return pt.revoked.Load() })
		if len(a.parts) > 0 {
			keep = append(keep, a)
		}
	}
	clear(p.pending[len(keep):])
	p.pending = keep
}

// run is the poller's loop: it drains what Run fetched and starts attempts while there are
// batches and free invocations, until the poller is stopped.
func (p *kafkaPoller) run(ctx context.Context) {
	defer close(p.done)
	defer p.wg.Wait()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		// The channel is taken before draining: a push after drain has read the inboxes
		// closes it, so its records are drained on the next turn rather than left waiting
		// for another push (which may never come).
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		wakeAt := p.drain(ctx)
		p.mu.Lock()
		wait := p.dispatch(ctx, time.Now())
		taken := p.taken
		p.taken = nil
		p.mu.Unlock()
		for num, next := range taken {
			p.m.delivering(num, next)
		}
		if !wakeAt.IsZero() && (wait == 0 || time.Until(wakeAt) < wait) {
			wait = max(time.Until(wakeAt), time.Millisecond)
		}
		var tick <-chan time.Time
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			tick = timer.C
		}
		select {
		case <-ch:
		case <-tick:
		case <-p.stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// drain moves the partitions' inboxes to their queues, applying FilterCriteria and encoding
// each record ([Kafka.encodeRecord]). When the schema registry fails, the partition's records
// from the failed one on wait for the backoff; a registry that fails every try for
// registryPatience stops Run. drain returns when
// to try again (zero: nothing to wait for).
func (p *kafkaPoller) drain(ctx context.Context) (wakeAt time.Time) {
	m := p.m
	now := time.Now()
	type work struct {
		pt   *kafkaPart
		recs []*kgo.Record
	}
	var todo []work
	var lastErr error
	p.mu.Lock()
	for _, pt := range p.parts {
		switch {
		case len(pt.inbox) == 0:
		case now.Before(pt.retryAt):
			// Still in its backoff: the poller must wake for it then, even when this turn
			// was woken by something else (a timer set by an earlier turn is reset by this
			// one's wait).
			if wakeAt.IsZero() || pt.retryAt.Before(wakeAt) {
				wakeAt = pt.retryAt
			}
		default:
			todo = append(todo, work{pt, pt.inbox})
			pt.inbox = nil
		}
	}
	p.mu.Unlock()
	for _, w := range todo {
		var out []*kafkaEntry
		var rest []*kgo.Record
		answered := false // encodeRecord returned for a record: the registry is not down
		for i, r := range w.recs {
			e := &kafkaEntry{rec: r, part: w.pt, arrived: now}
			if f := m.cfg.filter; f != nil {
				ok, err := f.MatchKafka(kafkaRecord(r))
				// An error means the criteria cannot tell (filter.ErrTooComplex): deliver the
				// record rather than drop it unseen (fail closed).
				if err == nil && !ok {
					out = append(out, e)
					continue
				}
			}
			js, cond, err := m.encode(ctx, r)
			if err != nil {
				m.metrics.schemaErrors.Add(1)
				lastErr = fmt.Errorf("%s: offset %d: %w", w.pt.id, r.Offset, err)
				rest = w.recs[i:]
				break
			}
			answered = true
			e.json, e.condition = js, cond
			if cond == "" && m.single(w.pt, len(js)) > limits.MaxLambdaPayloadBytes {
				e.json, e.condition = nil, ConditionMaximumPayloadSizeExceeded
			}
			out = append(out, e)
		}
		p.mu.Lock()
		w.pt.queue = append(w.pt.queue, out...)
		if answered {
			p.fails = 0 // failures in a row end at a record the registry answered for
		}
		if rest != nil {
			w.pt.inbox = append(rest, w.pt.inbox...)
			if p.fails == 0 {
				p.failing = time.Now()
			}
			p.fails++
			w.pt.retryAt = time.Now().Add(m.cfg.backoff(p.fails))
			if wakeAt.IsZero() || w.pt.retryAt.Before(wakeAt) {
				wakeAt = w.pt.retryAt
			}
			if time.Since(p.failing) >= m.cfg.patience {
				p.mu.Unlock()
				m.failRun(fmt.Errorf("the schema registry failed %d times in a row over %v: %w", p.fails, m.cfg.patience, lastErr))
				return time.Time{}
			}
		} else {
			p.fails = 0
		}
		p.mu.Unlock()
	}
	return wakeAt
}

// registryPatience is how long a schema registry may fail every try before the mapping stops.
// AWS does not say what a mapping does while its registry is unreachable; records cannot be
// checked, so they wait (never delivered unchecked, never given up on), and the mapping goes on
// trying for a minute, long enough for a registry to restart, then stops Run with the error
// rather than stall without a word.
const registryPatience = time.Minute

// dispatch starts attempts while fewer than kafkaPollerConcurrency run: first the retries
// that are due, oldest first, then new batches. It returns how long to wait for a batching
// window or a backoff to end (0: until something changes). p.mu must be held.
func (p *kafkaPoller) dispatch(ctx context.Context, now time.Time) time.Duration {
	var wait time.Duration
	later := func(d time.Duration) {
		if d > 0 && (wait == 0 || d < wait) {
			wait = d
		}
	}
	for p.running < kafkaPollerConcurrency {
		if a := p.dueRetry(now, later); a != nil {
			p.start(ctx, a)
			continue
		}
		a, w := p.take(now)
		if a == nil {
			later(w)
			break
		}
		p.start(ctx, a)
	}
	return wait
}

// dueRetry takes the oldest waiting attempt that may go now: its backoff is over, and none of
// its partitions is in an attempt under way or in an older waiting one. p.mu must be held.
func (p *kafkaPoller) dueRetry(now time.Time, later func(time.Duration)) *attempt {
	seen := map[*kafkaPart]bool{}
	for i, a := range p.pending {
		ok := true
		for _, pt := range a.parts {
			if pt.inflight || seen[pt] {
				ok = false
			}
			seen[pt] = true
		}
		if !ok {
			continue
		}
		if now.Before(a.notBefore) {
			later(a.notBefore.Sub(now))
			continue
		}
		p.pending = slices.Delete(p.pending, i, i+1)
		return a
	}
	return nil
}

func (p *kafkaPoller) start(ctx context.Context, a *attempt) {
	for _, pt := range a.parts {
		pt.inflight = true
	}
	p.running++
	p.wg.Go(func() {
		err := p.m.try(ctx, p, a)
		p.mu.Lock()
		for _, pt := range a.parts {
			pt.inflight = false
		}
		p.running--
		p.notify()
		p.mu.Unlock()
		if err != nil && !errors.Is(err, errStopped) {
			p.m.failRun(err)
		}
	})
}

// take builds the next batch from the free partitions (none of their records taken yet).
// A partition whose queue holds only filtered records is taken at once, to be committed; so is
// a record to be given up alone (its condition set when drained), once the records before it
// are done. Otherwise the batch is filled from the free partitions with waiting records in
// turn, starting with the partition after the one the previous batch started with: all the
// waiting records of one partition, then those of the next, until the batch holds the batch
// size or the next record would take the event over limits.MaxLambdaPayloadBytes. So when records pile up
// each invocation holds one partition and up to 5 partitions are in invocations at once; when
// they trickle in, one invocation holds what waits in every partition. A batch that is not full waits until the batching window, counted
// from the arrival of its oldest record, has passed. With WithOnePartitionPerInvocation a
// batch holds records of one partition. p.mu must be held.
func (p *kafkaPoller) take(now time.Time) (*attempt, time.Duration) {
	cfg := &p.m.cfg
	var cands []*kafkaPart
	for i := range p.parts {
		pt := p.parts[(p.turn+i)%len(p.parts)]
		// Free: no record of it taken, and no attempt holds it. An attempt that has just
		// committed its whole span still holds the partition until it ends (and then clears
		// inflight): a batch taken from it meanwhile would be in an attempt that inflight
		// does not show, so a retry of its records could run beside it, and two commits
		// of the partition cut its span at once.
		if pt.revoked.Load() || pt.inflight || len(pt.span) > 0 || len(pt.queue) == 0 {
			continue
		}
		first := slices.IndexFunc(pt.queue, func(e *kafkaEntry) bool { return !e.filtered() })
		switch {
		case first < 0:
			return p.takeSpan(pt, len(pt.queue), &attempt{parts: []*kafkaPart{pt}}), 0
		case pt.queue[first].condition != "":
			e := pt.queue[first]
			return p.takeSpan(pt, first+1, &attempt{recs: []*kafkaEntry{e}, parts: []*kafkaPart{pt}, condition: e.condition}), 0
		}
		cands = append(cands, pt)
	}
	if len(cands) == 0 {
		return nil, 0
	}
	if cfg.onePartition {
		cands = cands[:1]
	}
	// Fill in turn: next[i] is the index in cands[i].queue after its last record taken.
	next := make([]int, len(cands))
	taken := make([][]*kafkaEntry, len(cands))
	sz := newKafkaSizer(&p.m.env)
	n, full := 0, false
	for i, pt := range cands {
		for j := 0; j < len(pt.queue) && !full; j++ {
			e := pt.queue[j]
			if e.filtered() {
				continue
			}
			if e.condition != "" {
				break // given up alone, once the records before it are done
			}
			if n == cfg.batchSize || n > 0 && sz.with(pt, len(taken[i]) == 0, len(e.json)) > limits.MaxLambdaPayloadBytes {
				full = true
				break
			}
			sz.add(pt, len(taken[i]) == 0, len(e.json))
			taken[i] = append(taken[i], e)
			n++
			next[i] = j + 1
		}
		if full {
			break
		}
	}
	full = full || n == cfg.batchSize
	if !full {
		oldest := now
		for _, pt := range cands {
			for _, e := range pt.queue {
				if !e.filtered() {
					if e.arrived.Before(oldest) {
						oldest = e.arrived
					}
					break
				}
			}
		}
		if left := oldest.Add(cfg.window).Sub(now); left > 0 {
			return nil, left
		}
	}
	a := &attempt{}
	for i, pt := range cands {
		if len(taken[i]) == 0 {
			continue
		}
		end := next[i]
		if !slices.ContainsFunc(pt.queue[end:], func(e *kafkaEntry) bool { return !e.filtered() }) {
			end = len(pt.queue) // filtered records after the last one go with it
		}
		a.parts = append(a.parts, pt)
		p.takeSpan(pt, end, nil)
	}
	slices.SortFunc(a.parts, func(x, y *kafkaPart) int { return int(x.num) - int(y.num) })
	for _, pt := range a.parts {
		i := slices.Index(cands, pt)
		a.recs = append(a.recs, taken[i]...)
	}
	p.turn = (slices.Index(p.parts, cands[0]) + 1) % len(p.parts)
	return a, 0
}

// takeSpan moves the first end entries of pt's queue to its span, and returns a. p.mu must be
// held.
func (p *kafkaPoller) takeSpan(pt *kafkaPart, end int, a *attempt) *attempt {
	pt.span = append(pt.span, pt.queue[:end]...)
	pt.queue = slices.Clone(pt.queue[end:])
	p.release(pt, end)
	if p.taken == nil {
		p.taken = map[int32]int64{}
	}
	p.taken[pt.num] = pt.span[len(pt.span)-1].rec.Offset + 1
	return a
}

// size is how many partitions the poller holds.
func (p *kafkaPoller) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.parts)
}
