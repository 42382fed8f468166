package esm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/filter"
)

// Limits and defaults of the SQS event source mapping, as AWS documents them
// (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html,
// https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html).
const (
	// SQSDefaultBatchSize is the batch size when SQSConfig.BatchSize is 0.
	SQSDefaultBatchSize = 10
	// SQSMaxBatchSizeFIFO is the largest batch size of a FIFO queue's mapping.
	SQSMaxBatchSizeFIFO = 10
	// SQSMaxBatchSizeStandard is the largest batch size of a standard queue's mapping; above
	// 10 the mapping needs a batching window of at least one second.
	SQSMaxBatchSizeStandard = 10000
	// SQSMaxBatchingWindow is the largest MaximumBatchingWindowInSeconds.
	SQSMaxBatchingWindow = 300 * time.Second
	// SQSMaxPayload is the largest event a mapping sends: the 6 MB limit of a synchronous
	// invocation's payload (6 MiB, 6,291,456 bytes, as Lambda counts it).
	SQSMaxPayload = 6 << 20
	// SQSStartConcurrency is the number of concurrent invocations a standard queue's mapping
	// starts with; it adds SQSRampPerMinute a minute while messages are available, up to
	// SQSMaxConcurrency.
	SQSStartConcurrency = 5
	// SQSRampPerMinute is how many concurrent invocations a standard queue's mapping adds per
	// minute while messages are available.
	SQSRampPerMinute = 300
	// SQSMaxConcurrency is the most concurrent invocations (batches) one mapping makes: the
	// largest ScalingConfig.MaximumConcurrency, and the cap without one.
	SQSMaxConcurrency = 1000
)

// sqsReceiveMax is the most messages one ReceiveMessage call returns.
const sqsReceiveMax = 10

// SQSConfig describes one SQS event source mapping: the AWS::Serverless::Function event of
// type SQS (or an AWS::Lambda::EventSourceMapping on a queue).
type SQSConfig struct {
	// Name names the mapping in errors: its logical id in the template.
	Name string
	// Client is the SQS client the mapping polls with, for instance one made by
	// internal/localsqs for a local-aws-sqs server. Required.
	Client *sqs.Client
	// QueueURL is the queue's URL. Required.
	QueueURL string
	// QueueARN is the queue's ARN, the eventSourceARN of each record (whose fourth field
	// gives awsRegion). When empty, NewSQS reads it from the queue's QueueArn attribute.
	QueueARN string
	// BatchSize is the most messages per invocation: 0 means SQSDefaultBatchSize (10); at
	// most SQSMaxBatchSizeFIFO for a FIFO queue and SQSMaxBatchSizeStandard for a standard
	// queue, which above 10 needs a BatchingWindow of at least one second.
	BatchSize int
	// BatchingWindow is MaximumBatchingWindowInSeconds: how long the mapping gathers
	// messages before it invokes with fewer than BatchSize. 0 (the default for SQS) invokes
	// with what one ReceiveMessage returned. At most SQSMaxBatchingWindow; a FIFO queue's
	// mapping takes none (NewSQS fails).
	BatchingWindow time.Duration
	// Filter is the mapping's FilterCriteria; nil delivers every message. A message that
	// matches no filter is deleted from the queue and never delivered, as Lambda does. When
	// the filter cannot tell (filter.ErrTooComplex), Run stops with the error and leaves the
	// message in the queue rather than guess.
	Filter *filter.Criteria
	// ReportBatchItemFailures is FunctionResponseTypes [ReportBatchItemFailures]: the
	// function's response is read as a partial-batch response. Without it the response is
	// ignored and a successful invocation deletes the whole batch.
	ReportBatchItemFailures bool
	// MaximumConcurrency is ScalingConfig.MaximumConcurrency: 2 to SQSMaxConcurrency, or 0
	// for none (then the mapping scales up to SQSMaxConcurrency).
	MaximumConcurrency int
}

// SQSConfigError is an SQSConfig that NewSQS rejects, or a queue whose attributes it cannot
// use.
type SQSConfigError struct {
	Mapping string // SQSConfig.Name
	Field   string // the field or queue attribute at fault, e.g. "BatchSize"
	Reason  string
}

func (e *SQSConfigError) Error() string {
	return fmt.Sprintf("esm: SQS mapping %q: %s: %s", e.Mapping, e.Field, e.Reason)
}

// SQS emulates the event source mapping of one SQS queue: it receives messages, applies
// FilterCriteria, builds batches and the event Lambda sends, invokes the function, and
// deletes what succeeded. It is made by NewSQS and started by Run.
//
// # Outcomes
//
// A successful invocation deletes its batch (DeleteMessageBatch). A failed one (a function
// error, a timeout, a crash) deletes nothing: the messages come back when the queue's
// visibility timeout ends, and after maxReceiveCount receives the queue's RedrivePolicy
// moves them to the dead-letter queue. That redrive is the SQS server's (local-aws-sqs does
// it when a message's visibility timeout ends); the mapping does not imitate it. With
// ReportBatchItemFailures, the messages listed in the response stay and the rest are
// deleted; a response that is not valid JSON, an itemIdentifier that is missing, null,
// empty, not a string or not a message of the batch fails the whole batch. A response that
// is empty, null, or has no or an empty batchItemFailures list deletes the whole batch. A
// response that is JSON but not an object (a string, a number, a list) fails the whole
// batch: AWS does not say, and keeping the messages is the side that loses nothing.
//
// # Concurrency
//
// A standard queue's mapping starts with SQSStartConcurrency concurrent invocations and,
// each second in which it received messages, allows 5 more (SQSRampPerMinute a minute),
// up to MaximumConcurrency or SQSMaxConcurrency; each second in which it received none it
// allows 5 fewer, down to SQSStartConcurrency (AWS describes the scale-down only as "back to
// five concurrent batches"). A FIFO queue's mapping does not ramp (AWS states the ramp for
// standard queues only): it runs at most one invocation per message group at a time, so its
// concurrency is the number of message groups with messages, capped by MaximumConcurrency
// (or SQSMaxConcurrency).
//
// # FIFO order on servers that do not lock groups
//
// SQS does not return a FIFO message while an earlier message of its group is in flight;
// local-aws-sqs does. So the mapping enforces group order itself: a message received while
// an earlier message of its group is in an invocation, or failed and not yet received
// again, is held by the mapping (its visibility timeout extended with
// ChangeMessageVisibilityBatch when half of it, at most 10 s, is left) and delivered only
// after the earlier ones. A failed message is delivered again before the held ones: the
// mapping waits until it is received again, or, when its receive count has reached the
// RedrivePolicy's maxReceiveCount, until its visibility timeout has passed and the server
// has moved it to the dead-letter queue. If a failed message is neither received again
// nor due for redrive within max(visibility timeout, 10 s) after its visibility timeout,
// the mapping stops waiting for it (something else deleted or moved it).
//
// Order within a group is the order in which messages were first received, not their
// SequenceNumber: local-aws-sqs's sequence numbers do not sort (the tenth message of a group
// gets a shorter, smaller number than the ninth), while it returns messages in queue order.
// local-aws-sqs also counts each ChangeMessageVisibility as a receive; the mapping
// subtracts its own extensions from ApproximateReceiveCount in the event, but the server
// still counts them toward maxReceiveCount, so a message held past half its visibility
// timeout can reach the dead-letter queue after fewer deliveries than maxReceiveCount.
//
// Batches take messages in the order received (across groups for a FIFO queue). SQS itself
// "returns as many messages with the same message group ID as possible" from a FIFO queue;
// the mapping does not imitate that.
//
// # Receiving
//
// Up to 10 ReceiveMessage calls run at once (one per five allowed invocations, at least
// two), each for up to 10 messages with every system and message attribute, and only while
// the messages held and waiting fill fewer than BatchSize times the allowed invocations
// (for a standard queue, times the free ones). A call long-polls for one second after a
// call that returned nothing, and polls without waiting otherwise: local-aws-sqs answers a
// long poll only when it has MaxNumberOfMessages messages or the wait is over.
//
// A message received again while the mapping still holds it or while its invocation runs
// (the invocation outlasted the visibility timeout) is not delivered twice at once: the
// mapping keeps its later receipt handle and deletes it with that.
type SQS struct {
	cfg       SQSConfig
	fn        Invoker
	fifo      bool
	vt        time.Duration // the queue's visibility timeout
	maxRecv   int           // RedrivePolicy maxReceiveCount; 0 without one
	region    string
	batchSize int
	maxConc   int // cap of concurrent invocations
	counters  Counters

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced when the state below changes
	pending   []*sqsMsg     // received, not yet in an invocation, in receive order
	byID      map[string]*sqsMsg
	groups    map[string]*sqsGroup
	order     uint64          // next receive order
	busy      int             // invocations running
	limit     int             // invocations allowed now
	received  int             // messages received since the last scaling tick
	receiving int             // messages asked for in ReceiveMessage calls under way
	ticket    uint64          // the next ReceiveMessage call's ticket
	calls     map[uint64]bool // tickets of the calls under way
	idle      bool            // the last call answered no message
	longPoll  bool            // a long poll is under way
	fatal     error
}

// sqsMsg is a message the mapping holds or has in an invocation.
type sqsMsg struct {
	id, group string
	handle    string
	order     uint64
	msg       types.Message
	rec       []byte    // the record's JSON, for the receipt handle in msg
	got       time.Time // when it was (last) received: the batching window starts here
	visMin    time.Time // earliest time its visibility timeout may end
	visMax    time.Time // latest time its visibility timeout may end
	ext       int       // ChangeMessageVisibility calls made on it (local-aws-sqs counts them)
	inflight  bool
	barrier   uint64 // FIFO: dispatch only once no call with this ticket or a lower one is under way
}

// sqsGroup is the state of one FIFO message group.
type sqsGroup struct {
	inflight bool
	awaiting map[string]*sqsAwait // failed messages not yet received again
}

// sqsAwait is a failed FIFO message the mapping waits for.
type sqsAwait struct {
	order uint64
	ext   int
	due   time.Time // its visibility timeout has surely ended
	dlq   bool      // the server moves it to the dead-letter queue at due
}

// NewSQS checks cfg, reads the queue's attributes (FifoQueue, VisibilityTimeout,
// RedrivePolicy, QueueArn) and returns the mapping, ready to Run. fn is the function.
// Errors are *SQSConfigError for a bad cfg, or wrap the GetQueueAttributes error.
func NewSQS(ctx context.Context, cfg SQSConfig, fn Invoker) (*SQS, error) {
	bad := func(field, format string, a ...any) error {
		return &SQSConfigError{Mapping: cfg.Name, Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case fn == nil:
		return nil, bad("Invoker", "nil")
	case cfg.Client == nil:
		return nil, bad("Client", "nil")
	case cfg.QueueURL == "":
		return nil, bad("QueueURL", "empty")
	case cfg.BatchSize < 0:
		return nil, bad("BatchSize", "%d is negative", cfg.BatchSize)
	case cfg.BatchingWindow < 0 || cfg.BatchingWindow > SQSMaxBatchingWindow:
		return nil, bad("BatchingWindow", "%v is outside 0 to %v", cfg.BatchingWindow, SQSMaxBatchingWindow)
	case cfg.MaximumConcurrency != 0 && (cfg.MaximumConcurrency < 2 || cfg.MaximumConcurrency > SQSMaxConcurrency):
		return nil, bad("MaximumConcurrency", "%d is outside 2 to %d", cfg.MaximumConcurrency, SQSMaxConcurrency)
	}
	out, err := cfg.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(cfg.QueueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameFifoQueue, types.QueueAttributeNameVisibilityTimeout,
			types.QueueAttributeNameRedrivePolicy, types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return nil, fmt.Errorf("esm: SQS mapping %q: reading the attributes of %s: %w", cfg.Name, cfg.QueueURL, err)
	}
	m := &SQS{cfg: cfg, fn: fn, changed: make(chan struct{}), byID: map[string]*sqsMsg{}, groups: map[string]*sqsGroup{},
		calls: map[uint64]bool{}, idle: true}
	attrs := out.Attributes
	m.fifo = attrs[string(types.QueueAttributeNameFifoQueue)] == "true"
	vt, err := strconv.Atoi(attrs[string(types.QueueAttributeNameVisibilityTimeout)])
	if err != nil || vt < 0 {
		return nil, bad("VisibilityTimeout", "the queue's attribute %q is not a number of seconds", attrs[string(types.QueueAttributeNameVisibilityTimeout)])
	}
	m.vt = time.Duration(vt) * time.Second
	if rp := attrs[string(types.QueueAttributeNameRedrivePolicy)]; rp != "" {
		if m.maxRecv, err = sqsMaxReceiveCount(rp); err != nil {
			return nil, bad("RedrivePolicy", "%v", err)
		}
	}
	if m.cfg.QueueARN == "" {
		m.cfg.QueueARN = attrs[string(types.QueueAttributeNameQueueArn)]
	}
	arn := strings.Split(m.cfg.QueueARN, ":")
	if len(arn) != 6 || arn[0] != "arn" || arn[2] != "sqs" || arn[3] == "" {
		return nil, bad("QueueARN", "%q is not an SQS queue ARN", m.cfg.QueueARN)
	}
	m.region = arn[3]

	m.batchSize = cfg.BatchSize
	if m.batchSize == 0 {
		m.batchSize = SQSDefaultBatchSize
	}
	switch {
	case m.fifo && m.batchSize > SQSMaxBatchSizeFIFO:
		return nil, bad("BatchSize", "%d is over %d, the most for a FIFO queue", m.batchSize, SQSMaxBatchSizeFIFO)
	case m.fifo && cfg.BatchingWindow > 0:
		return nil, bad("BatchingWindow", "a FIFO queue's mapping takes no batching window")
	case m.batchSize > SQSMaxBatchSizeStandard:
		return nil, bad("BatchSize", "%d is over %d", m.batchSize, SQSMaxBatchSizeStandard)
	case m.batchSize > 10 && cfg.BatchingWindow < time.Second:
		return nil, bad("BatchingWindow", "a batch size over 10 (%d) needs a batching window of at least 1 s", m.batchSize)
	}
	m.maxConc = SQSMaxConcurrency
	if cfg.MaximumConcurrency > 0 {
		m.maxConc = cfg.MaximumConcurrency
	}
	m.limit = m.maxConc
	if !m.fifo {
		m.limit = min(SQSStartConcurrency, m.maxConc)
	}
	return m, nil
}

// sqsMaxReceiveCount reads maxReceiveCount from a RedrivePolicy, where it is a number or a
// string of digits.
func sqsMaxReceiveCount(policy string) (int, error) {
	var rp struct {
		MaxReceiveCount json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(policy), &rp); err != nil {
		return 0, fmt.Errorf("not JSON: %w", err)
	}
	s := strings.Trim(string(rp.MaxReceiveCount), `"`)
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("maxReceiveCount %s is not a positive integer", rp.MaxReceiveCount)
	}
	return n, nil
}

// Counters returns the mapping's counters. In counts each receipt of a message the mapping
// did not already hold (a message delivered again after a failure counts again, as Failed
// counts each failure); Lag is the queue's ApproximateNumberOfMessages plus
// ApproximateNumberOfMessagesNotVisible, read every second while Run runs.
func (m *SQS) Counters() *Counters { return &m.counters }

// FIFO reports whether the queue is a FIFO queue.
func (m *SQS) FIFO() bool { return m.fifo }

// Run polls the queue and invokes the function until ctx is done, then waits for the
// invocations under way (which see ctx cancelled), settles them, and returns nil. It
// returns an error, after the same wait, when an SQS call fails, when the Invoker returns
// one (no invocation could be made), or when the filter cannot decide on a message. Run
// may be called once.
func (m *SQS) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	fail := func(err error) {
		m.mu.Lock()
		if m.fatal == nil && ctx.Err() == nil {
			m.fatal = err
		}
		m.mu.Unlock()
		cancel()
	}
	receivers := min(max(m.maxConc/5, 2), 10)
	for range receivers {
		wg.Go(func() {
			if err := m.receive(ctx, &wg); err != nil {
				fail(err)
			}
		})
	}
	wg.Go(func() {
		if err := m.watch(ctx); err != nil {
			fail(err)
		}
	})
	m.dispatch(ctx, &wg, fail)
	wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fatal
}

// notify wakes everything waiting on the state. m.mu must be held.
func (m *SQS) notify() {
	close(m.changed)
	m.changed = make(chan struct{})
}

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
			QueueUrl:                    aws.String(m.cfg.QueueURL),
			MaxNumberOfMessages:         int32(n),
			WaitTimeSeconds:             wait,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		}
		//lint:ignore SA1019 local-aws-sqs 2.0.2 reads system attribute names only from this field
		in.AttributeNames = []types.QueueAttributeName{types.QueueAttributeNameAll}
		start := time.Now()
		out, err := m.cfg.Client.ReceiveMessage(ctx, in)
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
			return fmt.Errorf("esm: SQS mapping %q: receiving from %s: %w", m.cfg.Name, m.cfg.QueueURL, err)
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
				return fmt.Errorf("esm: SQS mapping %q: FIFO message %s came without its MessageGroupId attribute", m.cfg.Name, id)
			}
		}
		m.counters.In.Add(1)
		if m.cfg.Filter != nil {
			ev := SQSMessage(msg, m.cfg.QueueARN, m.region)
			ok, err := m.cfg.Filter.MatchSQS(&ev)
			if err != nil {
				return fmt.Errorf("esm: SQS mapping %q: filtering message %s: %w", m.cfg.Name, id, err)
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
	ok := m.delete(ctx, drop)
	m.counters.Filtered.Add(int64(len(ok)))
}

// take removes the next batch from m.pending, or returns nil and how long to wait for the
// batching window (0: until something changes). m.mu must be held.
func (m *SQS) take(now time.Time) ([]*sqsMsg, time.Duration) {
	if len(m.pending) == 0 {
		return nil, 0
	}
	if !m.fifo {
		size, n := 0, 0
		for n < len(m.pending) && n < m.batchSize && size+len(m.pending[n].rec)+1 <= SQSMaxPayload-len(`{"Records":[]}`) {
			size += len(m.pending[n].rec) + 1
			n++
		}
		full := n == m.batchSize || n < len(m.pending)
		if !full {
			if left := m.cfg.BatchingWindow - now.Sub(m.pending[0].got); left > 0 {
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
		case size+len(p.rec)+1 > SQSMaxPayload:
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
				step := SQSRampPerMinute / 60
				if m.received > 0 || len(m.pending) > 0 {
					m.limit = min(m.limit+step, m.maxConc)
				} else {
					m.limit = max(m.limit-step, min(SQSStartConcurrency, m.maxConc))
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

	m.counters.Invocations.Add(1)
	resp, err := m.fn.Invoke(ctx, payload.Bytes())
	failed := map[string]bool{}
	switch {
	case err != nil:
		for _, p := range b {
			failed[p.id] = true
		}
		if ctx.Err() == nil {
			err = fmt.Errorf("esm: SQS mapping %q: invoking: %w", m.cfg.Name, err)
		} else {
			err = nil
		}
	case resp.Err != nil:
		m.counters.Errors.Add(1)
		for _, p := range b {
			failed[p.id] = true
		}
	case m.cfg.ReportBatchItemFailures:
		ids := make(map[string]bool, len(b))
		for _, p := range b {
			ids[p.id] = true
		}
		if failed, err = parseSQSBatchResponse(resp.Payload, ids); err != nil {
			failed, err = ids, nil
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
	m.counters.Done.Add(int64(len(deleted)))
	m.counters.Failed.Add(int64(len(failed)))

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
			count, _ := strconv.Atoi(p.msg.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
			a := &sqsAwait{order: p.order, ext: p.ext, due: p.visMax, dlq: m.maxRecv > 0 && count >= m.maxRecv}
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
			out, err := m.cfg.Client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(m.cfg.QueueURL), Entries: entries})
			if err != nil {
				m.mu.Lock()
				if m.fatal == nil {
					m.fatal = fmt.Errorf("esm: SQS mapping %q: deleting from %s: %w", m.cfg.Name, m.cfg.QueueURL, err)
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

// watch reads the queue's depth into Lag every second, and every 200 ms extends the
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

// lag reads the queue's depth into Lag.
func (m *SQS) lag(ctx context.Context) error {
	out, err := m.cfg.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(m.cfg.QueueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
	})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("esm: SQS mapping %q: reading the depth of %s: %w", m.cfg.Name, m.cfg.QueueURL, err)
	}
	visible, err1 := strconv.ParseInt(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)], 10, 64)
	hidden, err2 := strconv.ParseInt(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("esm: SQS mapping %q: the depth of %s: %w", m.cfg.Name, m.cfg.QueueURL, err)
	}
	m.counters.Lag.Store(visible + hidden)
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
		out, err := m.cfg.Client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(m.cfg.QueueURL), Entries: entries})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("esm: SQS mapping %q: extending the visibility of held messages in %s: %w", m.cfg.Name, m.cfg.QueueURL, err)
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

// record returns p's record JSON, with ApproximateReceiveCount less the mapping's own
// ChangeMessageVisibility calls (local-aws-sqs counts those as receives).
func (m *SQS) record(p *sqsMsg) ([]byte, error) {
	msg := p.msg
	if p.ext > 0 {
		k := string(types.MessageSystemAttributeNameApproximateReceiveCount)
		if n, err := strconv.Atoi(msg.Attributes[k]); err == nil && n-p.ext >= 1 {
			attrs := make(map[string]string, len(msg.Attributes))
			for a, v := range msg.Attributes {
				attrs[a] = v
			}
			attrs[k] = strconv.Itoa(n - p.ext)
			msg.Attributes = attrs
		}
	}
	rec, err := sqsRecordJSON(msg, m.cfg.QueueARN, m.region)
	if err != nil {
		return nil, fmt.Errorf("esm: SQS mapping %q: message %s: %w", m.cfg.Name, p.id, err)
	}
	return rec, nil
}
