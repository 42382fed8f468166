package fanout

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/recovered"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// One Dispatch is one run: a single goroutine (the caller's) owns every item and decides
// what to send; the SendMessageBatch calls and the sink's sends run on goroutines of their
// own and report back on channels. At the stop time the run answers without waiting for
// them: a client or a sink that ignores its context cannot hold the response past Lambda's
// timeout. What they answer after that is never read, and they touch no item.

type itemState uint8

const (
	statePending  itemState = iota // to be sent (again, once due, after a failure)
	stateInFlight                  // in a call
	stateSinking                   // given to the sink
	stateAccepted                  // listed among a call's successful entries
	stateSunk                      // taken by the sink
	stateFailed                    // not accepted, for good: reported
)

// item is one record of the event.
type item struct {
	rec       *kafkaevent.Record
	part, idx int // partition index in the event, record index in the partition
	entry     types.SendMessageBatchRequestEntry
	size      int
	lane      int // FIFO: the index of its message group's lane
	state     itemState
	attempts  int
	solo      bool      // sent alone: a call with it and others failed as a whole
	due       time.Time // pending: when it may be sent again
	heapIdx   int
	err       error // the last error
	permanent bool
	callErr   bool // the last error failed the whole call
	sinkErr   error
	first     time.Time // the first failure
	last      time.Time // the last failure
}

// lane is a FIFO message group: its items in Kafka order, of which only the head may be in
// flight.
type lane struct {
	items   []*item
	head    int
	queued  bool // in run.readyLanes
	blocked bool // an item was not accepted: the rest is not sent
}

type callResult struct {
	items []*item
	out   *sqs.SendMessageBatchOutput
	err   error
}

type sinkResult struct {
	it  *item
	err error
}

type run struct {
	d      *Dispatcher
	ev     *kafkaevent.Event
	ctx    context.Context // ends at the stop time
	cancel context.CancelFunc
	stop   time.Time // zero: no deadline
	start  time.Time

	items    [][]item
	partStop []int // per partition: the index from which its records are reported

	// Standard queues: items to send, due retries first.
	retries []*item
	ready   []*item
	// FIFO queues.
	lanes      []lane
	readyLanes []int

	waiting waitHeap // pending items not yet due again

	calls, sinks int
	results      chan callResult
	sunk         chan sinkResult
	sinkSlots    chan struct{}
	quit         chan struct{} // closed when the run stops reading results
	timer        *time.Timer

	st       runStats
	panicked error // a panic where no record was in hand (the metrics writer's): the invocation fails
}

// runStats counts what happened, for the summary line and the metrics. failed is the
// records not dispatched, each with its one "record not dispatched" line, whether the sink
// then took it or the response reports it; reported is the records the response reports,
// those and the ones held behind them.
type runStats struct {
	records, dispatched, failed, reported, sunk int
	calls, failedCalls, retried                 int
	bytes                                       int64
	oldest, newest                              time.Time
}

func (d *Dispatcher) newRun(ctx context.Context, ev *kafkaevent.Event) *run {
	c := &d.cfg
	r := &run{d: d, ev: ev, start: c.now()}
	if dl, ok := ctx.Deadline(); ok {
		r.stop = dl.Add(-c.margin)
		r.ctx, r.cancel = context.WithDeadline(ctx, r.stop)
	} else {
		r.ctx, r.cancel = context.WithCancel(ctx)
	}
	r.results = make(chan callResult, c.concurrency)
	r.sunk = make(chan sinkResult, c.concurrency)
	r.sinkSlots = make(chan struct{}, c.concurrency)
	r.quit = make(chan struct{})

	r.items = make([][]item, len(ev.Partitions))
	r.partStop = make([]int, len(ev.Partitions))
	longest, total := 0, 0
	for p := range ev.Partitions {
		total += len(ev.Partitions[p].Records)
	}
	var enc encoder
	all := make([]item, total) // one allocation for the items of every partition
	for p := range ev.Partitions {
		recs := ev.Partitions[p].Records
		r.items[p], all = all[:len(recs):len(recs)], all[len(recs):]
		r.partStop[p] = len(recs)
		longest = max(longest, len(recs))
		for i := range recs {
			rec := &recs[i]
			it := &r.items[p][i]
			*it = item{rec: rec, part: p, idx: i, heapIdx: -1}
			r.st.records++
			r.st.seen(rec.Timestamp)
			e, size, err := enc.entry(rec, d.fifo, c.group)
			if err == nil && size > c.maxSize {
				err = &EncodeError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Field: "message",
					Err: fmt.Errorf("%w: %d bytes with its attributes, the queue takes %d (WithMaxMessageSize)", batch.ErrMessageTooLarge, size, c.maxSize)}
			}
			if err != nil {
				it.err, it.permanent = err, true
				continue
			}
			it.entry, it.size = e, size
		}
	}
	// Records in round-robin order across partitions, so that all move together.
	if d.fifo {
		r.makeLanes(longest, total)
	} else {
		r.ready = make([]*item, 0, total)
		for i := 0; i < longest; i++ {
			for p := range r.items {
				if i < len(r.items[p]) && r.items[p][i].err == nil {
					r.ready = append(r.ready, &r.items[p][i])
				}
			}
		}
	}
	// Records that cannot travel: to the sink, or their partition stops there.
	for p := range r.items {
		for i := range r.items[p] {
			if it := &r.items[p][i]; it.err != nil {
				now := c.now()
				it.first, it.last = now, now
				r.terminal(it, true)
			}
		}
	}
	for li := range r.lanes {
		r.kick(li)
	}
	return r
}

// makeLanes puts the items of a FIFO run in the lanes of their message groups, in
// round-robin order across partitions: a first pass finds each item's lane and counts the
// lanes' items, a second fills them from one slice.
func (r *run) makeLanes(longest, total int) {
	laneOf := make(map[string]int) // the lane of each message group
	partLane := make([]int, len(r.items))
	for p := range partLane {
		partLane[p] = -1
	}
	var counts []int
	for i := 0; i < longest; i++ {
		for p := range r.items {
			if i >= len(r.items[p]) {
				continue
			}
			it := &r.items[p][i]
			// A record that cannot travel has no group ID: it gets a lane of its own, one
			// per partition. Reported, it stops its partition, and with it the later
			// records of its key; taken by the sink, it lets them go.
			var li int
			var ok bool
			if it.err == nil {
				li, ok = laneOf[*it.entry.MessageGroupId]
			} else {
				li = partLane[p]
				ok = li >= 0
			}
			if !ok {
				li = len(counts)
				if it.err == nil {
					laneOf[*it.entry.MessageGroupId] = li
				} else {
					partLane[p] = li
				}
				counts = append(counts, 0)
			}
			it.lane = li
			counts[li]++
		}
	}
	r.lanes = make([]lane, len(counts))
	all := make([]*item, total)
	for li, n := range counts {
		r.lanes[li].items, all = all[:0:n], all[n:]
	}
	for i := 0; i < longest; i++ {
		for p := range r.items {
			if i < len(r.items[p]) {
				it := &r.items[p][i]
				r.lanes[it.lane].items = append(r.lanes[it.lane].items, it)
			}
		}
	}
}

// loop sends until every item is accepted, sunk or failed for good, or the stop time. At
// the stop time it returns at once: the calls and sends still out are left behind, and
// their items are reported. Without a deadline it waits for them (the caller's context may
// still end them).
func (r *run) loop() {
	c := &r.d.cfg
	r.timer = time.NewTimer(time.Hour)
	r.timer.Stop()
	defer r.timer.Stop()
	defer close(r.quit)
	for {
		live := r.ctx.Err() == nil
		if !live && !r.stop.IsZero() {
			return
		}
		if live {
			r.promote(c.now())
			for r.calls < c.concurrency {
				b := r.nextCall()
				if len(b) == 0 {
					break
				}
				r.launch(b)
			}
		}
		if r.calls == 0 && r.sinks == 0 && (!live || r.waiting.Len() == 0) {
			return
		}
		var wake <-chan time.Time
		var done <-chan struct{}
		if live {
			done = r.ctx.Done()
			if r.waiting.Len() > 0 {
				r.timer.Reset(max(r.waiting[0].due.Sub(c.now()), 0))
				wake = r.timer.C
			}
		}
		select {
		case res := <-r.results:
			r.calls--
			r.handle(res)
		case res := <-r.sunk:
			r.sinks--
			r.sinkDone(res)
		case <-wake:
		case <-done:
		}
		r.timer.Stop()
	}
}

// promote makes the waiting items that are due sendable again.
func (r *run) promote(now time.Time) {
	for r.waiting.Len() > 0 && !r.waiting[0].due.After(now) {
		it := heap.Pop(&r.waiting).(*item)
		it.due = time.Time{}
		if r.d.fifo {
			r.kick(it.lane)
		} else {
			r.retries = append(r.retries, it)
		}
	}
}

// stopped reports whether the partition of it is reported from it on: it is not to be sent.
func (r *run) stopped(it *item) bool { return r.partStop[it.part] <= it.idx }

// nextCall takes the items of the next call: at most limits.MaxSQSBatchEntries, at most limits.MaxSQSBatchBytes
// bytes, an item marked solo alone, and on a FIFO queue one item per message group.
func (r *run) nextCall() []*item {
	var b []*item
	size := 0
	fits := func(it *item) bool {
		if len(b) == 0 {
			return true
		}
		return !it.solo && !b[0].solo && size+it.size <= limits.MaxSQSBatchBytes
	}
	if !r.d.fifo {
		for len(b) < limits.MaxSQSBatchEntries {
			q := &r.retries
			if len(*q) == 0 {
				q = &r.ready
			}
			if len(*q) == 0 {
				break
			}
			it := (*q)[0]
			if r.stopped(it) {
				*q = (*q)[1:]
				continue
			}
			if !fits(it) {
				break
			}
			*q = (*q)[1:]
			b = append(b, it)
			size += it.size
		}
		return b
	}
	for len(b) < limits.MaxSQSBatchEntries && len(r.readyLanes) > 0 {
		li := r.readyLanes[0]
		l := &r.lanes[li]
		it := l.items[l.head]
		if r.stopped(it) {
			r.readyLanes = r.readyLanes[1:]
			l.queued = false
			r.block(li)
			continue
		}
		if !fits(it) {
			break
		}
		r.readyLanes = r.readyLanes[1:]
		l.queued = false
		b = append(b, it)
		size += it.size
	}
	return b
}

// launch starts a call with the items of b.
func (r *run) launch(b []*item) {
	entries := make([]types.SendMessageBatchRequestEntry, len(b))
	for i, it := range b {
		it.state = stateInFlight
		it.attempts++
		if it.attempts > 1 {
			r.st.retried++
		}
		entries[i] = it.entry
		entries[i].Id = &entryIDs[i]
	}
	r.calls++
	r.st.calls++
	in := &sqs.SendMessageBatchInput{QueueUrl: &r.d.queueURL, Entries: entries}
	go func() {
		// The client is the caller's: its panic on this goroutine would end the process, and
		// every invocation it serves. It is the call's error instead.
		var out *sqs.SendMessageBatchOutput
		err := recovered.CallErr("fanout: the SQS client's SendMessageBatch", func() (err error) {
			out, err = r.d.client.SendMessageBatch(r.ctx, in)
			return err
		})
		// r.results has room for every call in flight: this never blocks, read or not.
		r.results <- callResult{items: b, out: out, err: err}
	}()
}

// handle takes in what a call answered.
func (r *run) handle(res callResult) {
	if res.err == nil && res.out == nil {
		res.err = errors.New("fanout: SendMessageBatch returned neither a response nor an error")
	}
	if res.err != nil {
		r.st.failedCalls++
		r.callFailed(res)
		return
	}
	// What SQS said of each entry, by its index: the Ids are entryIDs. An Id that is not one
	// of the call's is ignored; the entry it should have named is then without a result.
	var failed [limits.MaxSQSBatchEntries]*types.BatchResultErrorEntry
	var ok [limits.MaxSQSBatchEntries]bool
	for i := range res.out.Failed {
		if k := entryIndex(res.out.Failed[i].Id, len(res.items)); k >= 0 && failed[k] == nil {
			failed[k] = &res.out.Failed[i]
		}
	}
	for i := range res.out.Successful {
		if k := entryIndex(res.out.Successful[i].Id, len(res.items)); k >= 0 {
			ok[k] = true
		}
	}
	for i, it := range res.items {
		if f := failed[i]; f != nil { // listed as failed, even if also as successful
			err := &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: f.SenderFault}
			if f.SenderFault {
				r.fail(it, err, true)
			} else {
				r.retry(it, err, false)
			}
			continue
		}
		if !ok[i] {
			r.retry(it, fmt.Errorf("%w (entry %d of %d)", ErrNoResult, i, len(res.items)), false)
			continue
		}
		it.state = stateAccepted
		r.st.dispatched++
		r.st.bytes += int64(it.size)
		if r.d.fifo {
			r.kick(it.lane)
		}
	}
}

// entryIDs are the Ids of a call's entries, by index. Entries point into it; nothing writes it.
var entryIDs = [limits.MaxSQSBatchEntries]string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

// entryIndex returns the index of the entry of a call of n entries whose Id is id, or -1.
func entryIndex(id *string, n int) int {
	if id == nil || len(*id) != 1 {
		return -1
	}
	k := int((*id)[0]) - '0'
	if k < 0 || k >= n {
		return -1
	}
	return k
}

// callFailed handles a call that failed as a whole.
func (r *run) callFailed(res callResult) {
	err := res.err
	switch {
	case r.ctx.Err() != nil:
		// Cut short by the stop time (or the caller): what SQS did with it is unknown, and
		// it is reported, so that Kafka delivers it again.
		if r.stop.IsZero() || r.d.cfg.now().Before(r.stop) {
			err = fmt.Errorf("fanout: not sent: %w (the call: %w)", context.Cause(r.ctx), err)
		} else {
			err = fmt.Errorf("%w (the call in flight was cancelled: %w)", batch.ErrDeadline, err)
		}
		for _, it := range res.items {
			r.failNow(it, err, false)
			it.callErr = true
			r.terminal(it, false)
		}
	case retryable(err):
		for _, it := range res.items {
			r.retry(it, err, true)
		}
	case queueError(err) || len(res.items) == 1 && !clientFault(err):
		for _, it := range res.items {
			r.failNow(it, err, false)
			it.callErr = true
			r.terminal(it, false)
		}
	case len(res.items) > 1:
		// Something in the call made SQS refuse it all (BatchRequestTooLong, say): each of
		// its entries is sent again alone, at once and without counting an attempt, so that
		// only the entry at fault fails.
		for _, it := range res.items {
			r.failNow(it, err, false)
			it.solo = true
			it.attempts--
			it.state = statePending
			if r.d.fifo {
				r.kick(it.lane)
			} else {
				r.retries = append(r.retries, it)
			}
		}
	default: // one entry, refused as the caller's fault
		r.fail(res.items[0], err, true)
	}
}

// retryable reports whether a failed call is worth sending again, as the SDK's own retryer
// decides (throttling, server errors, connection errors), and any error that is not an API
// error (the network).
func retryable(err error) bool {
	switch retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) {
	case aws.TrueTernary:
		return true
	case aws.FalseTernary:
		return false
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorFault() == smithy.FaultServer
	}
	return true
}

// queueErrors are the error codes of calls refused because of the queue or the credentials,
// not of what was in them: the records are reported, never given to the sink.
var queueErrors = map[string]bool{
	"AWS.SimpleQueueService.NonExistentQueue": true, "QueueDoesNotExist": true,
	"AccessDenied": true, "AccessDeniedException": true, "InvalidAddress": true, "InvalidSecurity": true,
	"InvalidClientTokenId": true, "UnrecognizedClientException": true, "SignatureDoesNotMatch": true,
	"ExpiredToken": true, "ExpiredTokenException": true, "MissingAuthenticationToken": true,
	"AWS.SimpleQueueService.UnsupportedOperation": true, "UnsupportedOperation": true,
	"KmsAccessDenied": true, "KmsDisabled": true, "KmsInvalidKeyUsage": true, "KmsInvalidState": true,
	"KmsNotFound": true, "KmsOptInRequired": true, "KmsThrottled": true,
	"KMS.AccessDeniedException": true, "KMS.DisabledException": true, "KMS.NotFoundException": true,
	"KMS.InvalidStateException": true, "KMS.OptInRequired": true, "KMS.ThrottlingException": true,
	"RequestThrottled": true,
}

func queueError(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && queueErrors[ae.ErrorCode()]
}

func clientFault(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorFault() == smithy.FaultClient
}

// failNow notes a failure of it.
func (r *run) failNow(it *item, err error, permanent bool) {
	now := r.d.cfg.now()
	if it.first.IsZero() {
		it.first = now
	}
	it.last = now
	it.err, it.permanent, it.callErr = err, permanent, false
}

// fail ends it with a failure of its own (SQS refused it, or it cannot travel).
func (r *run) fail(it *item, err error, permanent bool) {
	r.failNow(it, err, permanent)
	r.terminal(it, true)
}

// retry sends it again after a backoff, or ends it when it has had its attempts or the
// backoff would end past the stop time. callErr says whether the whole call failed.
func (r *run) retry(it *item, err error, callErr bool) {
	c := &r.d.cfg
	r.failNow(it, err, false)
	it.callErr = callErr
	if it.attempts >= c.attempts {
		it.err = fmt.Errorf("%w (after %d attempts)", err, it.attempts)
		r.terminal(it, !callErr)
		return
	}
	backoff := c.backoff
	for i := 1; i < it.attempts && backoff < c.maxBackoff; i++ {
		backoff *= 2
	}
	backoff = min(backoff, c.maxBackoff)
	wait := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
	due := c.now().Add(wait)
	if !r.stop.IsZero() && due.After(r.stop) {
		it.err = fmt.Errorf("%w (after %d attempts; no retry: %w)", err, it.attempts, batch.ErrDeadline)
		r.terminal(it, !callErr)
		return
	}
	it.state = statePending
	it.due = due
	heap.Push(&r.waiting, it)
}

// terminal ends a failed item: to the sink when it may go there (sinkable: the record's
// own failure, not its call's) and the policy selects it, otherwise its partition and its
// message group stop at it.
func (r *run) terminal(it *item, sinkable bool) {
	c := &r.d.cfg
	if sinkable && c.sink != nil && (it.permanent || c.policy == batch.SinkExhausted) {
		it.state = stateSinking
		r.sinks++
		e := envelope(it)
		sctx := r.correlate(r.ctx, it.rec)
		go func() {
			var err error
			select {
			case r.sinkSlots <- struct{}{}:
				err = recovered.CallErr("fanout: Sink.Send", func() error { return c.sink.Send(sctx, e) })
				<-r.sinkSlots
			case <-r.ctx.Done():
				err = context.Cause(r.ctx)
			}
			select {
			case r.sunk <- sinkResult{it: it, err: err}:
			case <-r.quit: // the run has answered without it
			}
		}()
		return
	}
	r.failed(it)
}

// failed ends it as reported: its partition is reported from it on, and on a FIFO queue its
// message group stops there (once the group's earlier records are accepted).
func (r *run) failed(it *item) {
	it.state = stateFailed
	r.stopAt(it.part, it.idx)
	if r.d.fifo {
		r.kick(it.lane)
	}
}

// sinkDone takes in the sink's answer.
func (r *run) sinkDone(res sinkResult) {
	it := res.it
	if res.err != nil {
		it.sinkErr = res.err
		r.failed(it)
		return
	}
	it.state = stateSunk
	r.st.sunk++
	if r.d.fifo {
		r.kick(it.lane)
	}
}

// stopAt makes partition p reported from record i on.
func (r *run) stopAt(p, i int) {
	if i < r.partStop[p] {
		r.partStop[p] = i
	}
}

// block stops a FIFO lane at its head: the rest of its items will not be sent, and each is
// reported with its partition.
func (r *run) block(li int) {
	l := &r.lanes[li]
	if l.blocked {
		return
	}
	l.blocked = true
	for _, it := range l.items[l.head:] {
		if it.state == statePending || it.state == stateFailed {
			r.stopAt(it.part, it.idx)
		}
	}
}

// kick moves a FIFO lane past its accepted or sunk items, and queues it when its head may
// be sent.
func (r *run) kick(li int) {
	l := &r.lanes[li]
	if l.blocked {
		return
	}
	for l.head < len(l.items) {
		it := l.items[l.head]
		switch it.state {
		case stateAccepted, stateSunk:
			l.head++
			continue
		case stateFailed:
			r.block(li)
		case statePending:
			if it.due.IsZero() && !l.queued {
				l.queued = true
				r.readyLanes = append(r.readyLanes, li)
			}
		}
		return
	}
}

// envelope is what the sink gets for a failed item.
func envelope(it *item) *batch.Envelope {
	rec := it.rec
	e := &batch.Envelope{Version: batch.EnvelopeVersion, Source: "kafka", Topic: rec.Topic, Partition: rec.Partition,
		Offset: rec.Offset, TimestampType: rec.TimestampType, Key: rec.Key, Value: rec.Value, Tombstone: rec.Value == nil,
		Error: it.err.Error(), Permanent: it.permanent, Attempts: it.attempts, FirstAttempt: it.first.UTC(), FailedAt: it.last.UTC()}
	if !rec.Timestamp.IsZero() {
		t := rec.Timestamp
		e.Timestamp = &t
	}
	for _, h := range rec.Headers {
		e.Headers = append(e.Headers, batch.EnvelopeHeader{Key: h.Key, Value: h.Value})
	}
	return e
}

func (s *runStats) seen(t time.Time) {
	if t.IsZero() {
		return
	}
	if s.oldest.IsZero() || t.Before(s.oldest) {
		s.oldest = t
	}
	if t.After(s.newest) {
		s.newest = t
	}
}

// waitHeap orders pending items by when they are due.
type waitHeap []*item

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}
func (h *waitHeap) Push(x any) {
	it := x.(*item)
	it.heapIdx = len(*h)
	*h = append(*h, it)
}
func (h *waitHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.heapIdx = -1
	return it
}
