package esm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// errStopped ends a partition worker without an error: Run is ending or the partition was
// revoked. The batch in hand is not committed; the partition's next owner gets it again.
var errStopped = errors.New("stopped")

// kafkaPartition is the worker of one partition: it alone invokes the function with the
// partition's records, so there is never more than one invocation per partition in flight.
type kafkaPartition struct {
	m   *Kafka
	num int32
	id  string // "topic-N"
	env kafkaEnvelope

	mu       sync.Mutex
	inbox    []*kgo.Record // pushed by Run's poll loop, not yet seen by the worker
	buffered int           // records in inbox and queue
	paused   bool          // fetching paused because buffered reached highWater

	wake chan struct{} // a push happened (capacity 1)
	stop chan struct{} // closed to stop the worker
	done chan struct{} // closed when the worker has stopped

	queue []*kafkaEntry // the worker's own: records in offset order, filtered and encoded
}

type kafkaEntry struct {
	rec     *kgo.Record
	json    []byte // the record in the event; nil when FilterCriteria rejected it
	arrived time.Time
}

func newKafkaPartition(m *Kafka, p int32) *kafkaPartition {
	return &kafkaPartition{
		m: m, num: p, id: m.partitionID(p), env: m.envelope(p),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// highWater is how many records a partition buffers before its fetching is paused.
func (w *kafkaPartition) highWater() int { return max(2*w.m.cfg.batchSize, 1000) }

// push hands records fetched for the partition to its worker.
func (w *kafkaPartition) push(recs []*kgo.Record) {
	w.m.counters.In.Add(int64(len(recs)))
	w.mu.Lock()
	w.inbox = append(w.inbox, recs...)
	w.buffered += len(recs)
	if !w.paused && w.buffered >= w.highWater() {
		w.paused = true
		w.m.client.Load().PauseFetchPartitions(map[string][]int32{w.m.topic: {w.num}})
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// release forgets n records that left the queue, and resumes fetching when few are left.
func (w *kafkaPartition) release(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buffered -= n
	if w.paused && w.buffered < w.highWater()/2 {
		w.paused = false
		w.m.client.Load().ResumeFetchPartitions(map[string][]int32{w.m.topic: {w.num}})
	}
}

func (w *kafkaPartition) run(ctx context.Context) {
	defer close(w.done)
	for {
		span, ok := w.next(ctx)
		if !ok {
			return
		}
		err := w.handle(ctx, span)
		w.release(len(span))
		if errors.Is(err, errStopped) {
			return
		}
		if err != nil {
			w.m.failRun(fmt.Errorf("%s: %w", w.id, err))
			return
		}
	}
}

// drain moves the inbox to the queue, applying FilterCriteria and encoding each record.
func (w *kafkaPartition) drain() {
	w.mu.Lock()
	in := w.inbox
	w.inbox = nil
	w.mu.Unlock()
	now := time.Now()
	for _, r := range in {
		e := &kafkaEntry{rec: r, arrived: now}
		if f := w.m.cfg.filter; f != nil {
			ok, err := f.MatchKafka(kafkaRecord(r))
			// An error means the criteria cannot tell (filter.ErrTooComplex): deliver the
			// record rather than drop it unseen (fail closed).
			if err == nil && !ok {
				w.m.counters.Filtered.Add(1)
				w.queue = append(w.queue, e)
				continue
			}
		}
		e.json = appendKafkaRecord(nil, r)
		w.queue = append(w.queue, e)
	}
}

// scan measures the batch at the front of the queue: n records to deliver, the first end
// queue entries (filtered ones included), and whether the batch is full (batch size reached,
// or the next record would take the event over MaxPayloadBytes). A first record whose event
// alone is too large is a batch of its own, full.
func (w *kafkaPartition) scan() (n, end int, full bool) {
	bytes := 0
	for i, e := range w.queue {
		if e.json == nil {
			continue
		}
		if n == w.m.cfg.batchSize {
			return n, i, true
		}
		if w.env.size(n+1, bytes+len(e.json)) > MaxPayloadBytes {
			if n == 0 {
				return 1, i + 1, true
			}
			return n, i, true
		}
		n++
		bytes += len(e.json)
	}
	return n, len(w.queue), n == w.m.cfg.batchSize
}

// next waits for the next batch and takes it from the queue. It returns false when the worker
// must stop. A full batch is taken at once; one that is not waits for more records until the
// batching window, counted from its first record's arrival, has passed. Records that were all
// filtered out are taken at once, to be committed.
func (w *kafkaPartition) next(ctx context.Context) ([]*kafkaEntry, bool) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		w.drain()
		n, end, full := w.scan()
		var deadline time.Time
		if n > 0 {
			for _, e := range w.queue {
				if e.json != nil {
					deadline = e.arrived.Add(w.m.cfg.window)
					break
				}
			}
		}
		if end > 0 && (full || n == 0 || !time.Now().Before(deadline)) {
			span := w.queue[:end:end]
			w.queue = w.queue[end:]
			return span, true
		}
		var tick <-chan time.Time
		if n > 0 {
			if timer == nil {
				timer = time.NewTimer(time.Until(deadline))
			} else {
				timer.Reset(time.Until(deadline))
			}
			tick = timer.C
		}
		select {
		case <-w.wake:
		case <-tick:
		case <-w.stop:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
}

// handle delivers a batch (unless all of it was filtered out) and commits its offsets.
func (w *kafkaPartition) handle(ctx context.Context, span []*kafkaEntry) error {
	var deliver []*kafkaEntry
	for _, e := range span {
		if e.json != nil {
			deliver = append(deliver, e)
		}
	}
	switch {
	case len(deliver) == 1 && w.env.size(1, len(deliver[0].json)) > MaxPayloadBytes:
		if err := w.giveUp(ctx, deliver, ConditionMaximumPayloadSizeExceeded, 0, nil); err != nil {
			return err
		}
	case len(deliver) > 0:
		if err := w.process(ctx, deliver); err != nil {
			return err
		}
	}
	last := span[len(span)-1].rec
	return w.m.commit(ctx, w.num, last.Offset+1, last.LeaderEpoch)
}

// attempt is a run of records being retried together.
type attempt struct {
	recs    []*kafkaEntry
	retries int       // failed attempts of these records that counted as retries
	invokes int       // invocations that held these records
	last    *Response // response of the last of them
}

// process invokes the function with recs until every record has succeeded or been given up.
func (w *kafkaPartition) process(ctx context.Context, recs []*kafkaEntry) error {
	cfg := &w.m.cfg
	c := &w.m.counters
	queue := []*attempt{{recs: recs}}
	for len(queue) > 0 {
		a := queue[0]
		if w.stopped(ctx) {
			return errStopped
		}
		if cfg.maxAge > 0 {
			cutoff := time.Now().Add(-cfg.maxAge)
			var live, old []*kafkaEntry
			for _, e := range a.recs {
				if e.rec.Timestamp.Before(cutoff) {
					old = append(old, e)
				} else {
					live = append(live, e)
				}
			}
			if len(old) > 0 {
				if err := w.giveUp(ctx, old, ConditionRecordAgeExceeded, a.invokes, a.last); err != nil {
					return err
				}
				a.recs = live
				if len(live) == 0 {
					queue = queue[1:]
					continue
				}
			}
		}

		jsons := make([][]byte, len(a.recs))
		for i, e := range a.recs {
			jsons[i] = e.json
		}
		n := int64(len(a.recs))
		c.InFlight.Add(n)
		c.Invocations.Add(1)
		resp, err := w.m.fn.Invoke(ctx, w.env.build(jsons))
		c.InFlight.Add(-n)
		if err != nil {
			if ctx.Err() != nil {
				return errStopped
			}
			return fmt.Errorf("invoking the function: %w", err)
		}
		a.invokes++
		a.last = &resp

		done := len(a.recs) // records at the front that succeeded
		funcErr := resp.Err != nil
		switch {
		case funcErr:
			c.Errors.Add(1)
			done = 0
		case cfg.reportFailure:
			offsets := make([]int64, len(a.recs))
			for i, e := range a.recs {
				offsets[i] = e.rec.Offset
			}
			from, failed, perr := parseKafkaResponse(resp.Payload, w.id, offsets)
			switch {
			case perr != nil:
				done = 0
			case failed:
				done = 0
				for done < len(a.recs) && a.recs[done].rec.Offset < from {
					done++
				}
			}
		}
		c.Succeeded.Add(int64(done))
		if done == len(a.recs) {
			queue = queue[1:]
			continue
		}
		c.ReportedFailed.Add(int64(len(a.recs) - done))
		a.recs = a.recs[done:]

		if funcErr && cfg.bisect && len(a.recs) > 1 {
			h := len(a.recs) / 2
			first := &attempt{recs: a.recs[:h], retries: a.retries, invokes: a.invokes, last: a.last}
			second := &attempt{recs: a.recs[h:], retries: a.retries, invokes: a.invokes, last: a.last}
			queue = append([]*attempt{first, second}, queue[1:]...)
			continue
		}
		a.retries++
		if cfg.retries >= 0 && a.retries > cfg.retries {
			if err := w.giveUp(ctx, a.recs, ConditionRetryAttemptsExhausted, a.invokes, a.last); err != nil {
				return err
			}
			queue = queue[1:]
			continue
		}
		if !w.sleep(ctx, w.m.cfg.backoff(a.retries)) {
			return errStopped
		}
	}
	return nil
}

// backoff is the pause before the nth retry of the same records: 100 ms, doubling, at most 1 s.
// AWS documents none for Kafka.
func backoff(n int) time.Duration {
	if n > 4 {
		return time.Second
	}
	return min(time.Second, 100*time.Millisecond<<(n-1))
}

// giveUp sends recs to the on-failure destination, if any; the caller then commits past them.
// A destination that fails 5 times in a row stops the mapping: records are never committed
// before their on-failure record is written.
func (w *kafkaPartition) giveUp(ctx context.Context, recs []*kafkaEntry, condition string, invokes int, last *Response) error {
	d := w.m.cfg.onFailure
	if d == nil {
		return nil
	}
	f := &failure{condition: condition, invokes: invokes, last: last}
	bytes := 0
	for _, e := range recs {
		f.records = append(f.records, e.rec)
		bytes += len(e.json)
	}
	f.payloadSize = w.env.size(len(recs), bytes)
	var err error
	for try := 1; try <= 5; try++ {
		if err = d.send(ctx, w.m, f); err == nil {
			w.m.counters.DeadLettered.Add(int64(len(recs)))
			return nil
		}
		if !w.sleep(ctx, w.m.cfg.backoff(try)) {
			return errStopped
		}
	}
	return err
}

func (w *kafkaPartition) stopped(ctx context.Context) bool {
	select {
	case <-w.stop:
		return true
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// sleep waits d; false if the worker must stop first.
func (w *kafkaPartition) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.stop:
		return false
	case <-ctx.Done():
		return false
	}
}
