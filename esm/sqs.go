package esm

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/kafkalambda/toolkit/limits"
)

// Defaults of the SQS event source mapping, as AWS documents them
// (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html,
// https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html); its limits are
// package limits' (MaxSQSBatchSize, MaxSQSFIFOBatchSize, MaxBatchingWindow,
// MaxSQSConcurrency, MaxLambdaPayloadBytes).
const (
	// SQSDefaultBatchSize is the batch size without WithBatchSize.
	SQSDefaultBatchSize = 10
	// sqsStartConcurrency is the number of concurrent invocations a standard queue's mapping
	// starts with; it adds sqsRampPerMinute a minute while messages are available, up to
	// limits.MaxSQSConcurrency.
	sqsStartConcurrency = 5
	// sqsRampPerMinute is how many concurrent invocations a standard queue's mapping adds per
	// minute while messages are available.
	sqsRampPerMinute = 300
)

// sqsReceiveMax is the most messages one ReceiveMessage call returns.
const sqsReceiveMax = 10

// SQS emulates the event source mapping of one SQS queue: it receives messages, applies
// FilterCriteria, builds batches and the event Lambda sends, invokes the function, and
// deletes what succeeded. It is made by [NewSQS] and started by [SQS.Run].
//
// # Outcomes
//
// A successful invocation deletes its batch (DeleteMessageBatch). A failed one (a function
// error, a timeout, a crash) deletes nothing: the messages come back when the queue's
// visibility timeout ends, and after maxReceiveCount receives the queue's RedrivePolicy
// moves them to the dead-letter queue. That redrive is the SQS server's (local-aws-sqs does
// it when a message's visibility timeout ends); the mapping does not imitate it. With
// [WithReportBatchItemFailures], the messages listed in the response stay and the rest are
// deleted; a response that is not valid JSON, an itemIdentifier that is missing, null,
// empty, not a string or not a message of the batch fails the whole batch. A response that
// is empty, null, or has no or an empty batchItemFailures list deletes the whole batch. A
// response that is JSON but not an object (a string, a number, a list) fails the whole
// batch: AWS does not say, and keeping the messages is the side that loses nothing.
//
// # Concurrency
//
// A standard queue's mapping starts with sqsStartConcurrency concurrent invocations and,
// each second in which it received messages, allows 5 more (sqsRampPerMinute a minute),
// up to MaximumConcurrency or limits.MaxSQSConcurrency; each second in which it received none it
// allows 5 fewer, down to sqsStartConcurrency (AWS describes the scale-down only as "back to
// five concurrent batches"). A FIFO queue's mapping does not ramp (AWS states the ramp for
// standard queues only): it runs at most one invocation per message group at a time, so its
// concurrency is the number of message groups with messages, capped by MaximumConcurrency
// (or limits.MaxSQSConcurrency).
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
	cfg       sqsConfig
	client    *sqs.Client
	queueURL  string
	fn        Invoker
	fifo      bool
	vt        time.Duration // the queue's visibility timeout
	maxRecv   int           // RedrivePolicy maxReceiveCount; 0 without one
	region    string
	batchSize int
	maxConc   int // cap of concurrent invocations
	counters  Counters
	metrics   metricCounts
	obsMu     sync.Mutex // one Observe call at a time

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced when the state below changes
	pending   []*sqsMsg     // received, not yet in an invocation, in receive order
	byID      map[string]*sqsMsg
	known     map[string]int // messages counted In and not yet settled: their deliveries so far
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

// NewSQS returns the mapping of the queue at queueURL, polled with client (for instance one
// made by internal/standin for a local-aws-sqs server), that invokes fn, ready to
// [SQS.Run]. It checks the options, then reads the queue's attributes (FifoQueue,
// VisibilityTimeout, RedrivePolicy, QueueArn) and checks the settings that depend on them.
// Bad settings are reported as *toolkit.OptionError values, joined; a failed GetQueueAttributes call
// is wrapped.
func NewSQS(ctx context.Context, client *sqs.Client, queueURL string, fn Invoker, opts ...SQSOption) (*SQS, error) {
	c := sqsConfig{mappingConfig: mappingConfig{batchSize: SQSDefaultBatchSize}}
	for _, o := range opts {
		o.applySQS(&c)
	}
	if c.name == "" {
		c.name = queueURL
	}
	if f, ok := fn.(InvokerFunc); fn == nil || ok && f == nil {
		c.reject("Invoker", "nil")
	}
	if client == nil {
		c.reject("client", "nil")
	}
	if queueURL == "" {
		c.reject("queueURL", "empty")
	}
	c.checkBatching(limits.MaxSQSBatchSize, limits.MaxBatchingWindow)
	c.checkMetrics(false)
	if err := c.configErr("SQS"); err != nil {
		return nil, err
	}
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameFifoQueue, types.QueueAttributeNameVisibilityTimeout,
			types.QueueAttributeNameRedrivePolicy, types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return nil, fmt.Errorf("esm: SQS mapping %q: reading the attributes of %s: %w", c.name, queueURL, err)
	}
	m := &SQS{cfg: c, client: client, queueURL: queueURL, fn: fn, changed: make(chan struct{}), byID: map[string]*sqsMsg{}, known: map[string]int{},
		groups: map[string]*sqsGroup{}, calls: map[uint64]bool{}, idle: true, batchSize: c.batchSize}
	m.useAttributes(out.Attributes)
	if err := m.cfg.configErr("SQS"); err != nil {
		return nil, err
	}
	m.maxConc = limits.MaxSQSConcurrency
	if c.maxConcurrency > 0 {
		m.maxConc = c.maxConcurrency
	}
	m.limit = m.maxConc
	if !m.fifo {
		m.limit = min(sqsStartConcurrency, m.maxConc)
	}
	return m, nil
}

// useAttributes reads the queue's attributes into m and checks the settings that depend on
// them, recording what is wrong in m.cfg.
func (m *SQS) useAttributes(attrs map[string]string) {
	c := &m.cfg
	m.fifo = attrs[string(types.QueueAttributeNameFifoQueue)] == "true"
	vt, err := strconv.Atoi(attrs[string(types.QueueAttributeNameVisibilityTimeout)])
	if err != nil || vt < 0 {
		c.reject("VisibilityTimeout", "the queue's attribute %q is not a number of seconds", attrs[string(types.QueueAttributeNameVisibilityTimeout)])
	}
	m.vt = time.Duration(vt) * time.Second
	if rp := attrs[string(types.QueueAttributeNameRedrivePolicy)]; rp != "" {
		if m.maxRecv, err = sqsMaxReceiveCount(rp); err != nil {
			c.reject("RedrivePolicy", "%v", err)
		}
	}
	if c.queueARN == "" {
		c.queueARN = attrs[string(types.QueueAttributeNameQueueArn)]
	}
	arn := strings.Split(c.queueARN, ":")
	if len(arn) != 6 || arn[0] != "arn" || arn[2] != "sqs" || arn[3] == "" {
		c.reject("WithQueueARN", "%q is not an SQS queue ARN", c.queueARN)
	} else {
		m.region = arn[3]
	}
	switch {
	case m.fifo && m.batchSize > limits.MaxSQSFIFOBatchSize:
		c.reject("WithBatchSize", "%d is over %d, the most for a FIFO queue", m.batchSize, limits.MaxSQSFIFOBatchSize)
	case m.fifo && c.window > 0:
		c.reject("WithBatchingWindow", "a FIFO queue's mapping takes no batching window")
	case m.batchSize > 10 && c.window < time.Second:
		c.reject("WithBatchingWindow", "a batch size over 10 (%d) needs a batching window of at least 1 s", m.batchSize)
	}
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

// Counters returns the mapping's counters (see [Counters]). In counts each message once, at
// its first receipt; DeadLettered counts the messages the queue's RedrivePolicy will move to
// the dead-letter queue, as far as the mapping can tell (a message that failed once its
// receive count reached maxReceiveCount). Lag is the queue's ApproximateNumberOfMessages (the
// visible messages, not yet delivered), read every second while Run runs.
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
