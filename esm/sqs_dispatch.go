package esm

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/kafkalambda/toolkit/limits"
)

// take removes the next batch from m.pending, or returns nil and how long to wait for the
// batching window (0: until something changes). m.mu must be held.
func (m *SQS) take(now time.Time) ([]*sqsMsg, time.Duration) {
	if len(m.pending) == 0 {
		return nil, 0
	}
	if !m.fifo {
		size, n := 0, 0
		for n < len(m.pending) && n < m.batchSize && size+len(m.pending[n].rec)+1 <= limits.MaxLambdaPayloadBytes-len(`{"Records":[]}`) {
			size += len(m.pending[n].rec) + 1
			n++
		}
		full := n == m.batchSize || n < len(m.pending)
		if !full {
			if left := m.cfg.window - now.Sub(m.pending[0].got); left > 0 {
				return nil, left
			}
		}
		b := append([]*sqsMsg(nil), m.pending[:n]...)
		m.pending = append(m.pending[:0], m.pending[n:]...)
		return b, 0
	}
	var b []*sqsMsg
	size := len(`{"Records":[]}`)
	in := map[string]bool{}      // groups in this batch
	stopped := map[string]bool{} // groups that cannot go further in this batch
	keep := m.pending[:0]
	for _, p := range m.pending {
		g := m.groups[p.group]
		switch {
		case len(b) == m.batchSize || stopped[p.group]:
		case !in[p.group] && (g.inflight || len(g.awaiting) > 0):
			stopped[p.group] = true
		case m.callsUpTo(p.barrier):
			stopped[p.group] = true
		case size+len(p.rec)+1 > limits.MaxLambdaPayloadBytes:
			stopped[p.group] = true
		default:
			size += len(p.rec) + 1
			in[p.group] = true
			b = append(b, p)
			continue
		}
		keep = append(keep, p)
	}
	clear(m.pending[len(keep):])
	m.pending = keep
	for grp := range in {
		m.groups[grp].inflight = true
	}
	return b, 0
}

// dispatch starts invocations while there are batches and free concurrency, and adjusts
// a standard queue's concurrency every second.
func (m *SQS) dispatch(ctx context.Context, wg *sync.WaitGroup, fail func(error)) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		m.mu.Lock()
		var wait time.Duration
		for m.busy < m.limit {
			b, w := m.take(time.Now())
			if b == nil {
				wait = w
				break
			}
			m.busy++
			for _, p := range b {
				p.inflight = true
			}
			m.counters.InFlight.Add(int64(len(b)))
			wg.Go(func() {
				if err := m.invoke(ctx, b); err != nil {
					fail(err)
				}
			})
		}
		ch := m.changed
		m.mu.Unlock()
		var timer <-chan time.Time
		var t *time.Timer
		if wait > 0 {
			t = time.NewTimer(wait)
			timer = t.C
		}
		select {
		case <-ctx.Done():
		case <-ch:
		case <-timer:
		case <-tick.C:
			if !m.fifo {
				m.mu.Lock()
				step := sqsRampPerMinute / 60
				if m.received > 0 || len(m.pending) > 0 {
					m.limit = min(m.limit+step, m.maxConc)
				} else {
					m.limit = max(m.limit-step, min(sqsStartConcurrency, m.maxConc))
				}
				m.received = 0
				m.notify()
				m.mu.Unlock()
			}
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// invoke sends one batch to the function and settles it.
func (m *SQS) invoke(ctx context.Context, b []*sqsMsg) error {
	m.mu.Lock()
	var payload bytes.Buffer
	payload.WriteString(`{"Records":[`)
	for i, p := range b {
		if i > 0 {
			payload.WriteByte(',')
		}
		payload.Write(p.rec)
	}
	payload.WriteString(`]}`)
	m.mu.Unlock()

	inv := m.delivering(b)
	resp, err := invoke(ctx, m.fn, payload.Bytes())
	invoked := err == nil
	failed := map[string]bool{}
	whole := "" // why the whole batch failed, if it did
	switch {
	case err != nil:
		for _, p := range b {
			failed[p.id] = true
		}
		if ctx.Err() == nil {
			err = fmt.Errorf("esm: SQS mapping %q: invoking: %w", m.cfg.name, err)
		} else {
			err = nil
		}
	case resp.Err != nil:
		whole = resp.Err.Type + ": " + resp.Err.Message
	case m.cfg.reportFailure:
		ids := make(map[string]bool, len(b))
		for _, p := range b {
			ids[p.id] = true
		}
		var perr error
		if failed, perr = parseSQSBatchResponse(resp.Payload, ids); perr != nil {
			whole = perr.Error()
		}
	}
	if whole != "" {
		failed = make(map[string]bool, len(b))
		for _, p := range b {
			failed[p.id] = true
		}
	}
	var ok []*sqsMsg
	for _, p := range b {
		if !failed[p.id] {
			ok = append(ok, p)
		}
	}
	deleted := m.delete(context.WithoutCancel(ctx), ok)
	m.counters.InFlight.Add(-int64(len(b)))
	m.settled(inv, b, failed, deleted, whole, invoked)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.busy--
	now := time.Now()
	for _, p := range b {
		delete(m.byID, p.id)
		if !m.fifo {
			continue
		}
		g := m.groups[p.group]
		g.inflight = false
		if failed[p.id] {
			if g.awaiting == nil {
				g.awaiting = map[string]*sqsAwait{}
			}
			a := &sqsAwait{order: p.order, ext: p.ext, due: p.visMax, dlq: m.toDLQ(p)}
			if a.due.Before(now) {
				a.due = now
			}
			g.awaiting[p.id] = a
		}
	}
	for _, p := range b {
		if g := m.groups[p.group]; g != nil && !g.inflight && len(g.awaiting) == 0 && !m.hasPending(p.group) {
			delete(m.groups, p.group)
		}
	}
	m.notify()
	return err
}

// hasPending reports whether a message of group grp is pending. m.mu must be held.
func (m *SQS) hasPending(grp string) bool {
	for _, p := range m.pending {
		if p.group == grp {
			return true
		}
	}
	return false
}

// delete deletes msgs from the queue with their latest receipt handles and returns those
// deleted. An entry SQS refuses (its receipt handle expired: the message became visible
// again and will be received again) is not deleted; a failed call stops the mapping.
func (m *SQS) delete(ctx context.Context, msgs []*sqsMsg) []*sqsMsg {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		deleted []*sqsMsg
	)
	for i := 0; i < len(msgs); i += sqsReceiveMax {
		chunk := msgs[i:min(i+sqsReceiveMax, len(msgs))]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		m.mu.Lock()
		for j, p := range chunk {
			entries[j] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), ReceiptHandle: aws.String(p.handle)}
		}
		m.mu.Unlock()
		wg.Go(func() {
			out, err := m.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(m.queueURL), Entries: entries})
			if err != nil {
				m.mu.Lock()
				if m.fatal == nil {
					m.fatal = fmt.Errorf("esm: SQS mapping %q: deleting from %s: %w", m.cfg.name, m.queueURL, err)
				}
				m.mu.Unlock()
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range out.Successful {
				if j, err := strconv.Atoi(aws.ToString(s.Id)); err == nil && j < len(chunk) {
					deleted = append(deleted, chunk[j])
				}
			}
		})
	}
	wg.Wait()
	return deleted
}
