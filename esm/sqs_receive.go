package esm

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// room returns how many more messages the receivers may take now. m.mu must be held.
func (m *SQS) room(now time.Time) int {
	held := 0
	for _, p := range m.pending {
		if !m.fifo || len(m.groups[p.group].awaiting) == 0 {
			held++
		}
	}
	want := m.batchSize * m.limit
	if !m.fifo {
		want = m.batchSize * max(m.limit-m.busy, 0)
	}
	if m.fifo && want-held < sqsReceiveMax {
		// A failed message whose visibility timeout has ended must be received again for its
		// group to go on, whatever else is held.
		for _, g := range m.groups {
			for _, a := range g.awaiting {
				if now.After(a.due) {
					return sqsReceiveMax
				}
			}
		}
	}
	return want - held
}

// receive is one receiver: it calls ReceiveMessage while there is room.
func (m *SQS) receive(ctx context.Context, wg *sync.WaitGroup) error {
	for {
		m.mu.Lock()
		room, ch := m.room(time.Now())-m.receiving, m.changed
		n := min(room, sqsReceiveMax)
		var wait int32
		if m.idle {
			// One receiver long-polls for one message while the queue looks empty:
			// local-aws-sqs answers a long poll only once it has MaxNumberOfMessages
			// messages (or the wait is over), and their visibility timeout runs from when
			// it found them.
			n, wait = min(n, 1), 1
			if m.longPoll {
				room = 0
			}
		}
		ticket := m.ticket
		if room > 0 {
			m.receiving += n
			m.longPoll = m.longPoll || wait > 0
			m.ticket++
			m.calls[ticket] = true
		}
		m.mu.Unlock()
		if room <= 0 {
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil
			}
		}
		in := &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(m.queueURL),
			MaxNumberOfMessages:         int32(n),
			WaitTimeSeconds:             wait,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		}
		//lint:ignore SA1019 local-aws-sqs 2.0.2 reads system attribute names only from this field
		in.AttributeNames = []types.QueueAttributeName{types.QueueAttributeNameAll}
		start := time.Now()
		out, err := m.client.ReceiveMessage(ctx, in)
		var msgs []types.Message
		if out != nil {
			msgs = out.Messages
		}
		if err := m.add(ctx, wg, msgs, sqsReceiveCall{ticket: ticket, asked: n, long: wait > 0, start: start, end: time.Now()}); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("esm: SQS mapping %q: receiving from %s: %w", m.cfg.name, m.queueURL, err)
		}
	}
}

// sqsReceiveCall is one ReceiveMessage call.
type sqsReceiveCall struct {
	ticket     uint64 // its place among the calls, in the order they started
	asked      int
	long       bool // a long poll
	start, end time.Time
}

// add takes in received messages: filters them (deleting those that match no filter),
// and holds the rest for dispatch.
func (m *SQS) add(ctx context.Context, wg *sync.WaitGroup, msgs []types.Message, call sqsReceiveCall) error {
	start, end := call.start, call.end
	var drop []*sqsMsg
	m.mu.Lock()
	defer func() {
		m.notify()
		m.mu.Unlock()
		if len(drop) > 0 {
			wg.Go(func() { m.deleteFiltered(context.WithoutCancel(ctx), drop) })
		}
	}()
	m.receiving -= call.asked
	if call.long {
		m.longPoll = false
	}
	delete(m.calls, call.ticket)
	m.idle = len(msgs) == 0
	m.received += len(msgs)
	m.metrics.polled.Add(int64(len(msgs)))
	// A message of a FIFO group may be dispatched only once every call that was under way
	// when it arrived has answered: one of them may hold an earlier message of its group.
	barrier := m.ticket - 1
	for _, msg := range msgs {
		id := aws.ToString(msg.MessageId)
		if p, ok := m.byID[id]; ok {
			// Received again while held or in an invocation: keep the newer receipt handle.
			p.msg.ReceiptHandle, p.handle = msg.ReceiptHandle, aws.ToString(msg.ReceiptHandle)
			p.msg.Attributes = msg.Attributes
			p.visMin, p.visMax = start.Add(m.vt), end.Add(m.vt)
			if !p.inflight {
				rec, err := m.record(p)
				if err != nil {
					return err
				}
				p.rec = rec
			}
			continue
		}
		p := &sqsMsg{id: id, handle: aws.ToString(msg.ReceiptHandle), msg: msg, got: end, visMin: start.Add(m.vt), visMax: end.Add(m.vt), barrier: barrier}
		if m.fifo {
			p.group = msg.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
			if p.group == "" {
				return fmt.Errorf("esm: SQS mapping %q: FIFO message %s came without its MessageGroupId attribute", m.cfg.name, id)
			}
		}
		m.firstReceipt(id)
		if m.cfg.filter != nil {
			ev := SQSMessage(msg, m.cfg.queueARN, m.region)
			ok, err := m.cfg.filter.MatchSQS(&ev)
			if err != nil {
				return fmt.Errorf("esm: SQS mapping %q: filtering message %s: %w", m.cfg.name, id, err)
			}
			if !ok {
				drop = append(drop, p)
				continue
			}
		}
		g := m.groups[p.group]
		if g == nil {
			g = &sqsGroup{}
			m.groups[p.group] = g
		}
		p.order = m.order
		m.order++
		if a, ok := g.awaiting[id]; ok {
			// A failed message back: it keeps its place before the messages held after it.
			p.order, p.ext = a.order, a.ext
			delete(g.awaiting, id)
		}
		rec, err := m.record(p)
		if err != nil {
			return err
		}
		p.rec = rec
		m.byID[id] = p
		m.insert(p)
	}
	return nil
}

// insert puts p into m.pending by its order. m.mu must be held.
func (m *SQS) insert(p *sqsMsg) {
	i := len(m.pending)
	for i > 0 && m.pending[i-1].order > p.order {
		i--
	}
	m.pending = append(m.pending, nil)
	copy(m.pending[i+1:], m.pending[i:])
	m.pending[i] = p
	if !m.fifo {
		return
	}
	// Within its group, p takes its place by SequenceNumber: calls running at once answer
	// in any order.
	var at []int
	var grp []*sqsMsg
	for j, q := range m.pending {
		if q.group == p.group {
			at, grp = append(at, j), append(grp, q)
		}
	}
	sort.SliceStable(grp, func(a, b int) bool {
		return sqsSeqLess(grp[a].msg.Attributes["SequenceNumber"], grp[b].msg.Attributes["SequenceNumber"])
	})
	for k, j := range at {
		m.pending[j] = grp[k]
	}
}

// callsUpTo reports whether a ReceiveMessage call with a ticket up to t is under way.
// m.mu must be held.
func (m *SQS) callsUpTo(t uint64) bool {
	for c := range m.calls {
		if c <= t {
			return true
		}
	}
	return false
}

// sqsSeqLess orders two SequenceNumbers of one FIFO group. SQS's are 20-digit numbers,
// compared as numbers. local-aws-sqs's are its per-group counter n (k digits) after the
// first 21-2k digits of a per-group random prefix, so they shrink as n grows (the ninth
// message's has 20 digits, the tenth's 19): when the lengths differ and neither is longer
// than 20 digits, the counters are compared.
func sqsSeqLess(a, b string) bool {
	if len(a) == len(b) || len(a) > 20 || len(b) > 20 {
		if len(a) != len(b) {
			return len(a) < len(b)
		}
		return a < b
	}
	return sqsLocalCounter(a) < sqsLocalCounter(b)
}

func sqsLocalCounter(s string) uint64 {
	k := min(max(21-len(s), 1), len(s))
	n, _ := strconv.ParseUint(s[len(s)-k:], 10, 64)
	return n
}

// deleteFiltered deletes messages that matched no filter.
func (m *SQS) deleteFiltered(ctx context.Context, drop []*sqsMsg) {
	m.filteredOut(m.delete(ctx, drop))
}
