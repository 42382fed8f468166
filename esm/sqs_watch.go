package esm

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// watch reads the queue's visible messages into Lag every second, and every 200 ms extends the
// visibility of held FIFO messages and gives up waiting for failed ones that went to the
// dead-letter queue.
func (m *SQS) watch(ctx context.Context) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var lagAt time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			if now.Sub(lagAt) >= time.Second {
				lagAt = now
				if err := m.lag(ctx); err != nil {
					return err
				}
			}
			if m.fifo {
				if err := m.extend(ctx, now); err != nil {
					return err
				}
			}
		}
	}
}

// lag reads the queue's visible messages (ApproximateNumberOfMessages) into Lag.
func (m *SQS) lag(ctx context.Context) error {
	out, err := m.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(m.queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
	})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("esm: SQS mapping %q: reading the depth of %s: %w", m.cfg.name, m.queueURL, err)
	}
	visible, err := strconv.ParseInt(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)], 10, 64)
	if err != nil {
		return fmt.Errorf("esm: SQS mapping %q: the depth of %s: %w", m.cfg.name, m.queueURL, err)
	}
	m.counters.Lag.Store(visible)
	return nil
}

// extend extends the visibility of held FIFO messages whose visibility timeout is half
// over (at most 10 s left), and resolves failed messages that are gone.
func (m *SQS) extend(ctx context.Context, now time.Time) error {
	margin := min(m.vt/2, 10*time.Second)
	var due []*sqsMsg
	m.mu.Lock()
	for _, p := range m.pending {
		if p.visMin.Sub(now) < margin {
			due = append(due, p)
		}
	}
	changed := false
	for _, g := range m.groups {
		for id, a := range g.awaiting {
			gone := a.due.Add(100 * time.Millisecond)
			if !a.dlq {
				gone = a.due.Add(max(m.vt, 10*time.Second))
			}
			if now.After(gone) {
				delete(g.awaiting, id)
				changed = true
			}
		}
	}
	if changed {
		m.notify()
	}
	secs := int32(m.vt / time.Second)
	batches := make([][]types.ChangeMessageVisibilityBatchRequestEntry, 0, (len(due)+9)/10)
	for i := 0; i < len(due); i += sqsReceiveMax {
		chunk := due[i:min(i+sqsReceiveMax, len(due))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for j, p := range chunk {
			entries[j] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), ReceiptHandle: aws.String(p.handle), VisibilityTimeout: secs}
		}
		batches = append(batches, entries)
	}
	m.mu.Unlock()
	for i, entries := range batches {
		start := time.Now()
		out, err := m.client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(m.queueURL), Entries: entries})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("esm: SQS mapping %q: extending the visibility of held messages in %s: %w", m.cfg.name, m.queueURL, err)
		}
		end := time.Now()
		m.mu.Lock()
		for _, s := range out.Successful {
			// An entry SQS refuses has become visible and will be received again; add
			// takes its new receipt handle then.
			if j, err := strconv.Atoi(aws.ToString(s.Id)); err == nil && i*sqsReceiveMax+j < len(due) {
				p := due[i*sqsReceiveMax+j]
				p.visMin, p.visMax = start.Add(m.vt), end.Add(m.vt)
				p.ext++
				if !p.inflight {
					if rec, err := m.record(p); err == nil {
						p.rec = rec
					}
				}
			}
		}
		m.mu.Unlock()
	}
	return nil
}
