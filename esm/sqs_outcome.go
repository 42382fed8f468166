package esm

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// An SQS mapping's counters and observer events. Each message is counted In once, when the
// mapping first receives it (a message received again after a failure is not new), and ends as
// Filtered (deleted unseen), Succeeded (deleted after its invocation succeeded for it) or
// DeadLettered; meanwhile it is on its way (in an invocation, or back in the queue until its
// visibility timeout ends). DeadLettered is the mapping's own prediction: a message that fails
// once its ApproximateReceiveCount has reached the RedrivePolicy's maxReceiveCount will be
// moved to the dead-letter queue by the queue when its visibility timeout ends, so the mapping
// counts it (and reports GaveUp) then. The queue may count receives the mapping does not see
// (local-aws-sqs counts each ChangeMessageVisibility; another consumer may receive the
// message); such a message reaches the dead-letter queue without being counted, and stays "on
// its way". Without a RedrivePolicy nothing is dead-lettered: a failing message is retried
// until the queue's retention period drops it.

// firstReceipt counts a message In the first time the mapping receives it. m.mu must be held.
func (m *SQS) firstReceipt(id string) {
	if _, ok := m.known[id]; !ok {
		m.known[id] = 0
		m.counters.In.Add(1)
	}
}

// delivering counts the delivery of batch b and reports it; it returns the invocation's
// number.
func (m *SQS) delivering(b []*sqsMsg) int64 {
	c := &m.counters
	inv := c.Invocations.Add(1)
	c.Delivered.Add(int64(len(b)))
	m.mu.Lock()
	for _, p := range b {
		if m.known[p.id] > 0 {
			c.Retried.Add(1)
		}
		m.known[p.id]++
	}
	m.mu.Unlock()
	m.observe(Event{Kind: Delivered, Invocation: inv, Records: sqsRefs(b)})
	return inv
}

// settled counts and reports the outcome of invocation inv of batch b: failed are the messages
// that failed (all of them when whole, the reason the whole batch failed, is set), deleted those
// deleted. invoked is false when no invocation could be made (the Invoker failed).
func (m *SQS) settled(inv int64, b []*sqsMsg, failed map[string]bool, deleted []*sqsMsg, whole string, invoked bool) {
	c := &m.counters
	var bad, dlq []*sqsMsg
	for _, p := range b {
		if failed[p.id] {
			bad = append(bad, p)
		}
	}
	m.mu.Lock()
	for _, p := range deleted {
		delete(m.known, p.id)
	}
	if invoked {
		for _, p := range bad {
			if m.toDLQ(p) {
				dlq = append(dlq, p)
				delete(m.known, p.id)
			}
		}
	}
	m.mu.Unlock()
	c.Succeeded.Add(int64(len(deleted)))
	m.metrics.deleted.Add(int64(len(deleted)))
	if !invoked {
		return
	}
	if whole != "" {
		c.Errors.Add(1)
		c.ErrorFailed.Add(int64(len(bad)))
	} else {
		c.ReportedFailed.Add(int64(len(bad)))
	}
	m.metrics.failedInvoke.Add(int64(len(bad)))
	if len(bad) > 0 {
		reason := whole
		if reason == "" {
			reason = "ReportBatchItemFailures"
		}
		m.observe(Event{Kind: Failed, Invocation: inv, Records: sqsRefs(bad), Reason: reason})
	}
	if len(deleted) > 0 {
		m.observe(Event{Kind: Succeeded, Invocation: inv, Records: sqsRefs(deleted)})
	}
	if len(dlq) > 0 {
		c.DeadLettered.Add(int64(len(dlq)))
		m.observe(Event{Kind: GaveUp, Records: sqsRefs(dlq), Reason: fmt.Sprintf("maxReceiveCount %d reached: the queue moves the message to its dead-letter queue", m.maxRecv)})
	}
}

// toDLQ reports whether the queue moves p to its dead-letter queue when p fails now: its
// receive count has reached maxReceiveCount.
func (m *SQS) toDLQ(p *sqsMsg) bool {
	count, _ := strconv.Atoi(p.msg.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	return m.maxRecv > 0 && count >= m.maxRecv
}

// filteredOut counts and reports messages FilterCriteria dropped and the mapping deleted.
func (m *SQS) filteredOut(deleted []*sqsMsg) {
	if len(deleted) == 0 {
		return
	}
	m.mu.Lock()
	for _, p := range deleted {
		delete(m.known, p.id)
	}
	m.mu.Unlock()
	m.counters.Filtered.Add(int64(len(deleted)))
	m.observe(Event{Kind: Filtered, Records: sqsRefs(deleted)})
}

func sqsRefs(b []*sqsMsg) []RecordRef {
	out := make([]RecordRef, len(b))
	for i, p := range b {
		r := RecordRef{MessageID: p.id, MessageGroupID: p.group}
		for k, v := range p.msg.MessageAttributes {
			if v.StringValue != nil {
				if r.Attributes == nil {
					r.Attributes = map[string]string{}
				}
				r.Attributes[k] = *v.StringValue
			}
		}
		out[i] = r
	}
	return out
}

// observe reports e to the observer, if any, one event at a time.
func (m *SQS) observe(e Event) { m.cfg.notify(&m.obsMu, e) }
