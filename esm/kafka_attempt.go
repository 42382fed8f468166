package esm

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// try makes one attempt: it gives its records up at once (a condition set when they were
// drained, or records older than MaximumRecordAge), or invokes the function with them; then it
// settles the outcome (settle) and commits what is done (commitDone).
func (m *Kafka) try(ctx context.Context, p *kafkaPoller, a *attempt) error {
	cfg := &m.cfg
	if a.condition != "" {
		if err := m.giveUp(ctx, p, a.recs, a.condition, 0, nil); err != nil {
			return err
		}
		return m.commitDone(ctx, p, a.parts)
	}
	if cfg.maxAge > 0 && len(a.recs) > 0 {
		cutoff := time.Now().Add(-cfg.maxAge)
		old := slices.DeleteFunc(slices.Clone(a.recs), func(e *kafkaEntry) bool { return !e.rec.Timestamp.Before(cutoff) })
		if len(old) > 0 {
			if err := m.giveUp(ctx, p, old, ConditionRecordAgeExceeded, a.invokes, a.last); err != nil {
				return err
			}
			a.recs = slices.DeleteFunc(a.recs, func(e *kafkaEntry) bool { return e.done })
		}
	}
	if len(a.recs) == 0 {
		return m.commitDone(ctx, p, a.parts)
	}
	inv, resp, err := m.invoke(ctx, a)
	if err != nil {
		return err
	}
	if err := m.settle(ctx, p, a, inv, resp); err != nil {
		return err
	}
	return m.commitDone(ctx, p, a.parts)
}

// invoke sends the attempt's records to the function and returns the invocation's number.
func (m *Kafka) invoke(ctx context.Context, a *attempt) (int64, Response, error) {
	c := &m.counters
	n := int64(len(a.recs))
	inv := c.Invocations.Add(1)
	c.Delivered.Add(n)
	c.InFlight.Add(n)
	for _, e := range a.recs {
		if e.deliveries > 0 {
			c.Retried.Add(1)
		}
		e.deliveries++
	}
	m.observe(Event{Kind: Delivered, Invocation: inv, Records: kafkaRefs(a.recs)})
	resp, err := invoke(ctx, m.fn, m.env.build(a.recs))
	c.InFlight.Add(-n)
	if err != nil {
		if ctx.Err() != nil {
			return 0, Response{}, errStopped
		}
		return 0, Response{}, fmt.Errorf("invoking the function: %w", err)
	}
	a.invokes++
	a.last = &resp
	return inv, resp, nil
}

// settle applies the outcome of invocation inv of a. A function error (or, with
// ReportBatchItemFailures, a response that is not a valid partial batch response) fails every
// record; a partial batch response fails, in each partition it names, the records from the
// lowest offset it reports on. The records that succeeded are marked done; the failed ones are
// retried (split in two first when bisecting a function error) or given up, each partition's
// records in their own order, apart from the other partitions' (see below). The partitions
// that are done go on in the next invocations.
func (m *Kafka) settle(ctx context.Context, p *kafkaPoller, a *attempt, inv int64, resp Response) error {
	cfg := &m.cfg
	c := &m.counters
	var from map[string]int64 // partition: lowest failed offset
	whole := ""               // the reason the whole batch failed, if it did
	funcErr := resp.Err != nil
	switch {
	case funcErr:
		whole = resp.Err.Type + ": " + resp.Err.Message
	case cfg.reportFailure:
		offsets := map[string][]int64{}
		for _, e := range a.recs {
			offsets[e.part.id] = append(offsets[e.part.id], e.rec.Offset)
		}
		var perr error
		if from, perr = parseKafkaResponse(resp.Payload, offsets); perr != nil {
			whole = perr.Error()
		}
	}
	var failed []*kafkaEntry
	for _, e := range a.recs {
		f, named := from[e.part.id]
		if whole != "" || named && e.rec.Offset >= f {
			failed = append(failed, e)
			continue
		}
		e.done, e.by = true, inv
	}
	if whole != "" {
		c.Errors.Add(1)
		c.ErrorFailed.Add(int64(len(failed)))
		m.metrics.invokeErrors.Add(1)
	} else {
		c.ReportedFailed.Add(int64(len(failed)))
	}
	if len(failed) == 0 {
		return nil
	}
	reason := whole
	if reason == "" {
		reason = "ReportBatchItemFailures"
	}
	m.observe(Event{Kind: Failed, Invocation: inv, Records: kafkaRefs(failed), Reason: reason})
	m.metrics.failedInvoke.Add(int64(len(failed)))
	failed = slices.DeleteFunc(failed, func(e *kafkaEntry) bool { return e.part.revoked.Load() })
	if len(failed) == 0 {
		return nil
	}
	// Each partition's failed records go on alone, so that one partition's failure does not
	// hold the others back: retries, bisection and giving up are counted per partition.
	var next []*attempt
	var exhausted []*kafkaEntry // given up together: one on-failure record names each partition's range
	for _, pt := range partsOf(failed) {
		recs := slices.DeleteFunc(slices.Clone(failed), func(e *kafkaEntry) bool { return e.part != pt })
		if funcErr && cfg.bisect && len(recs) > 1 {
			h := len(recs) / 2
			next = append(next,
				&attempt{recs: recs[:h:h], parts: []*kafkaPart{pt}, retries: a.retries, invokes: a.invokes, last: a.last},
				&attempt{recs: recs[h:], parts: []*kafkaPart{pt}, retries: a.retries, invokes: a.invokes, last: a.last})
			continue
		}
		r := &attempt{recs: recs, parts: []*kafkaPart{pt}, retries: a.retries + 1, invokes: a.invokes, last: a.last}
		if cfg.retries >= 0 && r.retries > cfg.retries {
			exhausted = append(exhausted, recs...)
			continue
		}
		r.notBefore = time.Now().Add(cfg.backoff(r.retries))
		next = append(next, r)
	}
	p.retry(next...)
	if len(exhausted) > 0 {
		return m.giveUp(ctx, p, exhausted, ConditionRetryAttemptsExhausted, a.invokes, a.last)
	}
	return nil
}

// retry puts attempts before the waiting ones: their partitions' records come before any
// other attempt of those partitions.
func (p *kafkaPoller) retry(as ...*attempt) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = append(slices.Clone(as), p.pending...)
	p.notify()
}

// partsOf lists the partitions of recs, which are grouped by partition.
func partsOf(recs []*kafkaEntry) []*kafkaPart {
	var out []*kafkaPart
	for _, e := range recs {
		if len(out) == 0 || out[len(out)-1] != e.part {
			out = append(out, e.part)
		}
	}
	return out
}

// commitDone commits, for each of parts, the offset after the records of its span that are
// done (succeeded, given up, or filtered out), and frees the partition for the next batch
// when its whole span is done. Nothing is committed for a revoked partition.
func (m *Kafka) commitDone(ctx context.Context, p *kafkaPoller, parts []*kafkaPart) error {
	offsets := map[int32]kgo.EpochOffset{}
	passed := map[*kafkaPart][]*kafkaEntry{}
	p.mu.Lock()
	for _, pt := range parts {
		if pt.revoked.Load() {
			continue
		}
		n := 0
		for n < len(pt.span) && (pt.span[n].done || pt.span[n].filtered()) {
			n++
		}
		if n == 0 {
			continue
		}
		last := pt.span[n-1].rec
		offsets[pt.num] = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
		passed[pt] = pt.span[:n:n]
	}
	p.mu.Unlock()
	if len(offsets) == 0 {
		return nil
	}
	if err := m.commit(ctx, offsets); err != nil {
		return err
	}
	p.mu.Lock()
	for pt, done := range passed {
		pt.span = slices.Clone(pt.span[len(done):])
	}
	p.notify()
	p.mu.Unlock()
	m.committed(passed)
	return nil
}

// committed counts and reports records just committed: filtered ones, and those that
// succeeded, by the invocation they succeeded in.
func (m *Kafka) committed(passed map[*kafkaPart][]*kafkaEntry) {
	var filtered []*kafkaEntry
	byInv := map[int64][]*kafkaEntry{}
	var n int64
	for _, done := range passed {
		n += int64(len(done))
		for _, e := range done {
			switch {
			case e.filtered():
				filtered = append(filtered, e)
			case e.by > 0:
				byInv[e.by] = append(byInv[e.by], e)
			}
		}
	}
	m.metrics.committed.Add(n)
	if len(filtered) > 0 {
		m.counters.Filtered.Add(int64(len(filtered)))
		m.observe(Event{Kind: Filtered, Records: kafkaRefs(sortEntries(filtered))})
	}
	invs := make([]int64, 0, len(byInv))
	for inv := range byInv {
		invs = append(invs, inv)
	}
	slices.Sort(invs)
	for _, inv := range invs {
		recs := sortEntries(byInv[inv])
		m.counters.Succeeded.Add(int64(len(recs)))
		m.observe(Event{Kind: Succeeded, Invocation: inv, Records: kafkaRefs(recs)})
	}
}

func sortEntries(es []*kafkaEntry) []*kafkaEntry {
	slices.SortFunc(es, func(a, b *kafkaEntry) int {
		if a.part.num != b.part.num {
			return int(a.part.num) - int(b.part.num)
		}
		return int(a.rec.Offset - b.rec.Offset)
	})
	return es
}

func kafkaRefs(es []*kafkaEntry) []RecordRef {
	out := make([]RecordRef, len(es))
	for i, e := range es {
		out[i] = RecordRef{Topic: e.rec.Topic, Partition: e.rec.Partition, Offset: e.rec.Offset}
	}
	return out
}

// giveUp sends recs to the on-failure destination, if any, and marks them done; they are
// committed with their partitions' next commit. A destination that fails 5 times in a row
// stops the mapping: records are never committed before their on-failure record is written.
func (m *Kafka) giveUp(ctx context.Context, p *kafkaPoller, recs []*kafkaEntry, condition string, invokes int, last *Response) error {
	recs = slices.DeleteFunc(slices.Clone(recs), func(e *kafkaEntry) bool { return e.part.revoked.Load() })
	if len(recs) == 0 {
		return nil
	}
	if d := m.cfg.onFailure; d != nil {
		f := &failure{condition: condition, invokes: invokes, last: last}
		for _, e := range recs {
			f.records = append(f.records, e.rec)
		}
		f.payloadSize = m.payloadSize(recs)
		var err error
		for try := 1; ; try++ {
			if err = d.send(ctx, m, f); err == nil {
				break
			}
			m.metrics.destErrors.Add(1)
			if try == 5 {
				return err
			}
			if !p.sleep(ctx, m.cfg.backoff(try)) {
				return errStopped
			}
		}
		m.metrics.destDelivered.Add(int64(len(recs)))
	} else {
		m.metrics.dropped.Add(int64(len(recs)))
	}
	for _, e := range recs {
		e.done, e.by = true, 0
	}
	m.counters.DeadLettered.Add(int64(len(recs)))
	m.observe(Event{Kind: GaveUp, Records: kafkaRefs(recs), Reason: condition})
	return nil
}

// payloadSize is the length of the event holding recs (a record without JSON, given up when it
// was drained, counts with the JSON appendKafkaRecord writes).
func (m *Kafka) payloadSize(recs []*kafkaEntry) int {
	sz := newKafkaSizer(&m.env)
	var last *kafkaPart
	for _, e := range sortEntries(slices.Clone(recs)) {
		n := len(e.json)
		if e.json == nil {
			n = len(appendKafkaRecord(nil, e.rec))
		}
		sz.add(e.part, e.part != last, n)
		last = e.part
	}
	return sz.bytes
}

// sleep waits d; false if the poller must stop first.
func (p *kafkaPoller) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.stop:
		return false
	case <-ctx.Done():
		return false
	}
}

// backoff is the pause before the nth retry of the same records: 100 ms, doubling, at most 1 s.
// AWS documents none for Kafka.
func backoff(n int) time.Duration {
	if n > 4 {
		return time.Second
	}
	return min(time.Second, 100*time.Millisecond<<(n-1))
}
