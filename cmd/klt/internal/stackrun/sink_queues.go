package stackrun

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
	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/esm/samspec"
	"github.com/kafkalambda/toolkit/fanout"
)

// queueLister lists every message of the queues where records go when they are given up on
// (failure queues, dead-letter queues, on-failure destinations) WITHOUT deleting any: the
// messages stay in their queues, readable while the stack runs and after. Each message is
// read once (by MessageId) into the ledger, with the record(s) it names and why it is there
// (effect.Failure): a batch sink's envelope, a Kafka mapping's on-failure record (one effect
// per offset of its KafkaBatchInfo ranges), a fanout message the queue's redrive moved
// there. A message it cannot read is noted (problems) and recorded as unattributed.
//
// SQS has no way to read a message without receiving it, so a scan receives the queue's
// messages with a visibility timeout of listVisibility, which hides them from other readers
// meanwhile, until a receive comes back empty: the scan has seen every message. It then
// makes them visible again (ChangeMessageVisibility 0) and starts the next scan. Each
// receive adds 1 to a message's ApproximateReceiveCount (these queues seldom have a redrive
// of their own). A FIFO queue hides the rest of a message group while some of its messages
// are received, so a scan of one sees at most the first 10 messages of each group: the
// lister says so (problems) for each FIFO queue it lists.
type queueLister struct {
	l      *ledger.Ledger
	client *sqs.Client
	notes

	mu     sync.Mutex
	seen   map[string]bool              // MessageId -> read
	held   map[string]map[string]string // queue URL -> MessageId -> receipt handle, hidden by the current scan
	scans  map[string]int               // queue URL -> scans completed
	waitCh chan struct{}                // closed and replaced when a scan completes
}

// listVisibility hides a listed message while its scan goes on: long enough for a scan of
// a few thousand messages, short enough that a listing klt could not finish gives them back
// soon.
const listVisibility = 20 * time.Second

func newQueueLister(l *ledger.Ledger, client *sqs.Client) *queueLister {
	return &queueLister{l: l, client: client, seen: map[string]bool{}, held: map[string]map[string]string{},
		scans: map[string]int{}, waitCh: make(chan struct{})}
}

// watch registers url as a queue being listed, before its run starts: settle waits for it.
func (q *queueLister) watch(url string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.scans[url]; !ok {
		q.scans[url] = 0
		if strings.HasSuffix(url, ".fifo") {
			q.notes.add("%s is a FIFO queue: listed without deleting, it shows at most the first 10 messages of each message group", url)
		}
	}
}

// run scans queue (logical ID) at url until ctx ends.
func (q *queueLister) run(ctx context.Context, queue, url string) {
	for ctx.Err() == nil {
		out, err := q.receive(ctx, url)
		if err != nil {
			if ctx.Err() == nil {
				q.add("%s: ReceiveMessage: %v", queue, err)
				sleep(ctx, time.Second)
			}
			continue
		}
		if len(out) == 0 {
			q.release(ctx, url)
			q.scanned(url)
			sleep(ctx, 500*time.Millisecond)
			continue
		}
		for _, m := range out {
			q.hold(url, m)
			if q.first(aws.ToString(m.MessageId)) {
				q.read(queue, m)
			}
		}
	}
}

func (q *queueLister) receive(ctx context.Context, url string) ([]types.Message, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := q.client.ReceiveMessage(rctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 0,
		VisibilityTimeout:           int32(listVisibility / time.Second),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		return nil, err
	}
	return out.Messages, nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (q *queueLister) hold(url string, m types.Message) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.held[url] == nil {
		q.held[url] = map[string]string{}
	}
	q.held[url][aws.ToString(m.MessageId)] = aws.ToString(m.ReceiptHandle)
}

// first reports whether message id is read for the first time.
func (q *queueLister) first(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.seen[id] {
		return false
	}
	q.seen[id] = true
	return true
}

// release makes the messages the scan of url hid visible again.
func (q *queueLister) release(ctx context.Context, url string) {
	q.mu.Lock()
	held := q.held[url]
	delete(q.held, url)
	q.mu.Unlock()
	var batch []types.ChangeMessageVisibilityBatchRequestEntry
	flush := func() {
		if len(batch) == 0 {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := q.client.ChangeMessageVisibilityBatch(cctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: batch})
		switch {
		case err != nil:
			q.add("%s: ChangeMessageVisibilityBatch: %v (the messages are visible again after %v)", url, err, listVisibility)
		case len(out.Failed) > 0:
			q.add("%s: ChangeMessageVisibilityBatch failed for %d messages: %s", url, len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
		batch = batch[:0]
	}
	for _, h := range held {
		batch = append(batch, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(len(batch))), ReceiptHandle: aws.String(h), VisibilityTimeout: 0})
		if len(batch) == 10 {
			flush()
		}
	}
	flush()
}

// restore makes every hidden message visible again, when the stack stops.
func (q *queueLister) restore() {
	q.mu.Lock()
	urls := make([]string, 0, len(q.held))
	for u := range q.held {
		urls = append(urls, u)
	}
	q.mu.Unlock()
	for _, u := range urls {
		q.release(context.Background(), u)
	}
}

func (q *queueLister) scanned(url string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.scans[url]++
	close(q.waitCh)
	q.waitCh = make(chan struct{})
}

// settle waits until every queue being listed has completed a scan that started after the
// call (two more completed scans: the one under way may have started before), or ctx ends.
func (q *queueLister) settle(ctx context.Context) error {
	q.mu.Lock()
	want := map[string]int{}
	for u, n := range q.scans {
		want[u] = n + 2
	}
	q.mu.Unlock()
	for {
		q.mu.Lock()
		done := true
		for u, n := range want {
			done = done && q.scans[u] >= n
		}
		ch := q.waitCh
		q.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("listing the failure and dead-letter queues: %w", ctx.Err())
		case <-ch:
		}
	}
}

// read writes what message m of queue says into the ledger.
func (q *queueLister) read(queue string, m types.Message) {
	now := time.Now()
	body := aws.ToString(m.Body)
	e := ledger.Effect{Kind: ledger.EffectQueue, Resource: queue, Op: "listed", At: now, Body: capBody([]byte(body)), ID: aws.ToString(m.MessageId)}
	if id, why, ok := recordOfEnvelope(body); ok {
		e.Record, e.Via, e.Failure = id, ledger.ViaEnvelope, why
		q.l.AddEffect(e)
		return
	}
	if ok, err := readOnFailure(q.l, e, []byte(body)); ok {
		if err != nil {
			q.add("%s: message %s: %v", queue, aws.ToString(m.MessageId), err)
		}
		return
	}
	msg := esm.SQSMessage(m, "", samspec.LocalRegion)
	if r, err := fanout.ReadRecord(&msg); err == nil {
		e.Record, e.Via = ledger.RecordID{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}, ledger.ViaRecordAttribute
		e.Failure = "moved to the dead-letter queue after " + msg.Attributes["ApproximateReceiveCount"] + " receives (maxReceiveCount)"
		q.l.AddEffect(e)
		return
	} else {
		q.add("%s: message %s: not a batch sink's envelope, an on-failure record or a fanout message: %v", queue, aws.ToString(m.MessageId), err)
	}
	q.l.AddUnattributed(ledger.Unattributed{Kind: ledger.EffectQueue, Resource: queue, At: now, Why: "message " + aws.ToString(m.MessageId) + " names no record"})
}

// maxOnFailureRange bounds the offsets one on-failure record may name (its batch).
const maxOnFailureRange = 100000

// readOnFailure reads a Kafka mapping's on-failure record (requestContext, KafkaBatchInfo
// with the offsets of each partition's failed batch) into one effect per record, like e,
// whose Failure is the condition. It reports false when body is not one.
func readOnFailure(l *ledger.Ledger, e ledger.Effect, body []byte) (bool, error) {
	var ofd struct {
		RequestContext struct {
			Condition   string `json:"condition"`
			FunctionArn string `json:"functionArn"`
		} `json:"requestContext"`
		ResponseContext struct {
			FunctionError string `json:"functionError"`
		} `json:"responseContext"`
		KafkaBatchInfo *struct {
			RecordsInfo map[string]struct {
				First string `json:"firstRecordOffset"`
				Last  string `json:"lastRecordOffset"`
			} `json:"recordsInfo"`
		} `json:"KafkaBatchInfo"`
	}
	if json.Unmarshal(body, &ofd) != nil || ofd.KafkaBatchInfo == nil {
		return false, nil
	}
	arn := ofd.RequestContext.FunctionArn
	e.Via, e.Failure = ledger.ViaOnFailure, ofd.RequestContext.Condition
	if ofd.ResponseContext.FunctionError != "" {
		e.Failure += " (" + ofd.ResponseContext.FunctionError + ")"
	}
	fn := arn[strings.LastIndexByte(arn, ':')+1:]
	e.Function = fn
	var bad []string
	for tp, ri := range ofd.KafkaBatchInfo.RecordsInfo {
		topic, part, ok := topicPartitionOf(tp)
		first, err1 := strconv.ParseInt(ri.First, 10, 64)
		last, err2 := strconv.ParseInt(ri.Last, 10, 64)
		if !ok || err1 != nil || err2 != nil || first < 0 || last < first || last-first >= maxOnFailureRange {
			bad = append(bad, fmt.Sprintf("%s offsets %q..%q", tp, ri.First, ri.Last))
			l.AddUnattributed(ledger.Unattributed{Kind: e.Kind, Resource: e.Resource, At: e.At, Why: "on-failure record of " + fn + ": " + tp})
			continue
		}
		for off := first; off <= last; off++ {
			r := e
			r.Record = ledger.RecordID{Topic: topic, Partition: part, Offset: off}
			l.AddEffect(r)
		}
	}
	if len(bad) > 0 {
		return true, fmt.Errorf("on-failure record with unreadable ranges: %s", strings.Join(bad, ", "))
	}
	return true, nil
}

// topicPartitionOf splits "topic-N" at its last dash.
func topicPartitionOf(tp string) (string, int32, bool) {
	i := strings.LastIndexByte(tp, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(tp[i+1:], 10, 32)
	return tp[:i], int32(n), err == nil && n >= 0
}
