package capacity

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// messageBytes is one record's bytes in package fanout's SQS message: the value (base64 when
// binary, the worst case) and the kafka.record attribute. An estimate.
func messageBytes(recordSize int) int {
	return int(math.Ceil(float64(recordSize)*4/3)) + messageOverheadBytes
}

// queueStage is the fan-out design's queue: what SQS lets the dispatcher send and the
// workers' mapping receive.
type queueStage struct {
	in       *Input
	msgBytes int
	entries  int // messages per SendMessageBatch
	figs     figures
}

func newQueueStage(in *Input) *queueStage {
	q := &queueStage{in: in, msgBytes: messageBytes(in.RecordSize)}
	q.figs.add("queue.message_bytes", float64(q.msgBytes), "bytes",
		fmt.Sprintf("ceil(%d × 4/3) + %d = %d (the value, and fanout's kafka.record attribute: an estimate)", in.RecordSize, messageOverheadBytes, q.msgBytes), srcSQSBatch)
	q.entries = min(sqsBatchEntries, sqsMaxMessageBytes/q.msgBytes)
	q.figs.add("queue.messages_per_send", float64(q.entries), "messages",
		fmt.Sprintf("min(%d, floor(%d / %d)) = %d (a SendMessageBatch holds 10 messages of 1 MiB in all)", sqsBatchEntries, sqsMaxMessageBytes, q.msgBytes, q.entries), srcSQSBatch)
	return q
}

func (q *queueStage) fifo() bool { return q.in.Fanout.Queue == queueFIFO }

// calls is the FIFO queue's API calls per second per action.
func (q *queueStage) calls() int {
	if q.in.Fanout.HighThroughput {
		return q.in.Fanout.FIFOCallsPerSecond
	}
	return fifoCallsPerSecond
}

// stage is the queue's maximum: a FIFO queue's calls per second per action times the
// messages of each; a standard queue's is +Inf (no documented limit).
func (q *queueStage) stage() (Stage, string) {
	st := Stage{Name: "queue", Source: srcFIFOQuota + "; " + srcSQSBatch}
	if q.entries == 0 {
		st.Bound = fmt.Sprintf("a message of about %d bytes, over SQS's %d-byte (1 MiB) limit", q.msgBytes, sqsMaxMessageBytes)
		st.Formula = fmt.Sprintf("%d bytes > %d bytes: no message can carry the record", q.msgBytes, sqsMaxMessageBytes)
		return st, "queue: " + st.Bound
	}
	if !q.fifo() {
		st.MaxRecordsPerSecond = math.Inf(1)
		st.Bound = "a standard queue: nearly unlimited API calls per second (no documented limit)"
		st.Formula = "no limit"
		return st, ""
	}
	calls := q.calls()
	st.MaxRecordsPerSecond = float64(calls * q.entries)
	mode := "a FIFO queue"
	if q.in.Fanout.HighThroughput {
		mode = "a high-throughput FIFO queue (fifo_calls_per_second)"
	}
	st.Bound = fmt.Sprintf("%s: %d API calls per second per action, %d messages each", mode, calls, q.entries)
	st.Formula = fmt.Sprintf("%d calls/s × %d messages = %d messages/s", calls, q.entries, calls*q.entries)
	q.figs.add("queue.max_messages_per_second", st.MaxRecordsPerSecond, "messages/s", st.Formula, srcFIFOQuota)
	return st, ""
}

// workerStage is the fan-out design's workers behind the SQS mapping.
type workerStage struct {
	in    *Input
	bw    int // messages per invocation
	cap   int // concurrent invocations at most
	capBy string
	figs  figures
}

func newWorkerStage(in *Input, msgBytes int) (*workerStage, error) {
	f := in.Fanout
	w := &workerStage{in: in}
	w.bw = max(1, min(f.WorkerBatchSize, payloadBytes/(msgBytes+sqsRecordOverheadBytes)))
	w.figs.add("workers.messages_per_invocation", float64(w.bw), "messages",
		fmt.Sprintf("min(BatchSize %d, floor(%d / (%d + %d))) = %d (an SQS batch fills from the backlog; %d bytes around each message in the event: an estimate)", f.WorkerBatchSize, payloadBytes, msgBytes, sqsRecordOverheadBytes, w.bw, sqsRecordOverheadBytes), srcESMConfig)
	d := w.invocation(float64(w.bw))
	w.figs.add("workers.invocation_seconds", d, "s", w.durationFormula(d), srcSQSScaling)
	if time.Duration(d*float64(time.Second)) > lambdaTimeout {
		field, v := "fanout.worker_duration", f.WorkerDuration
		if f.WorkerBatchDuration > 0 {
			field, v = "fanout.worker_batch_duration", f.WorkerBatchDuration
		}
		return nil, errField(field, v, fmt.Sprintf("an invocation of %d messages then lasts %.6g s, over the %v a function may run (%s)", w.bw, d, lambdaTimeout, srcLambdaLimits))
	}
	w.cap, w.capBy = sqsMaxConcurrency, "the SQS mapping's 1,250"
	if f.MaximumConcurrency > 0 {
		w.cap, w.capBy = f.MaximumConcurrency, "MaximumConcurrency"
	}
	if in.Concurrency < w.cap {
		w.cap, w.capBy = in.Concurrency, "the concurrency"
	}
	if f.Queue == queueFIFO && f.MessageGroups < w.cap {
		w.cap, w.capBy = f.MessageGroups, "message groups, one batch in flight each"
	}
	w.figs.add("workers.concurrency_max", float64(w.cap), "invocations",
		fmt.Sprintf("min(MaximumConcurrency or %d, concurrency %d%s) = %d (%s)", sqsMaxConcurrency, in.Concurrency, groupsTerm(f), w.cap, w.capBy), srcSQSScaling)
	return w, nil
}

func groupsTerm(f Fanout) string {
	if f.Queue != queueFIFO {
		return ""
	}
	return fmt.Sprintf(", message groups %d", f.MessageGroups)
}

// invocation is Dw(n).
func (w *workerStage) invocation(n float64) float64 {
	f := w.in.Fanout
	if f.WorkerBatchDuration > 0 {
		return time.Duration(f.WorkerBatchDuration).Seconds() * n / float64(f.WorkerBatchSize)
	}
	return n * time.Duration(f.WorkerDuration).Seconds()
}

func (w *workerStage) durationFormula(d float64) string {
	f := w.in.Fanout
	if f.WorkerBatchDuration > 0 {
		return fmt.Sprintf("%v × %d / %d = %.6g (the batch's time, linear in its messages)", f.WorkerBatchDuration, w.bw, f.WorkerBatchSize, d)
	}
	return fmt.Sprintf("%d × %v = %.6g (the messages one after another)", w.bw, f.WorkerDuration, d)
}

// capacityAt is the workers' records per second with conc concurrent invocations.
func (w *workerStage) capacityAt(conc int) float64 {
	return float64(conc) * float64(w.bw) / w.invocation(float64(w.bw))
}

func (w *workerStage) stage() Stage {
	d := w.invocation(float64(w.bw))
	mx := w.capacityAt(w.cap)
	return Stage{Name: "workers", MaxRecordsPerSecond: mx,
		Bound:   fmt.Sprintf("%d concurrent workers (%s), %.6g s per invocation of %d messages", w.cap, w.capBy, d, w.bw),
		Formula: fmt.Sprintf("%d concurrent invocations × %d messages / %.6g s = %.6g records/s", w.cap, w.bw, d, mx),
		Source:  srcSQSScaling}
}

// needs is the workers' concurrency for rate, 0 and why when over the cap.
func (w *workerStage) needs(rate float64) (int, string) {
	c := max(1, ceilInt(rate*w.invocation(float64(w.bw))/float64(w.bw)))
	if c > w.cap {
		return 0, fmt.Sprintf("workers: %d concurrent invocations needed, over %d (%s)", c, w.cap, w.capBy)
	}
	return c, ""
}

// highThroughputMaxCalls is the largest high-throughput FIFO quota AWS publishes, API calls
// per second per action (us-east-1, us-west-2, eu-west-1). srcFIFOQuota.
const highThroughputMaxCalls = 70_000

// fanoutLifts are the inputs that lift the bound of the fan-out's queue and workers when they
// do not reach the rate: a FIFO queue's throughput (a standard queue, high throughput mode, a
// higher Regional quota) and the workers' concurrency (more message groups, a standard queue,
// MaximumConcurrency, the concurrency).
func fanoutLifts(in *Input, q *queueStage, w *workerStage, sq Stage) []Lift {
	f := in.Fanout
	if q.entries == 0 { // no message carries the record: nothing lifts that
		return nil
	}
	var l []Lift
	standard := Lift{Field: "fanout.queue", Value: queueStd, Source: srcFIFOQuota,
		Why: "a standard queue has no documented limit on API calls per second and no message groups; it keeps no order between the records of a key and may deliver a message twice"}
	queueBound := q.fifo() && !reaches(sq.MaxRecordsPerSecond, in.Rate)
	if queueBound {
		l = append(l, standard)
		calls := ceilInt(in.Rate / float64(q.entries))
		switch {
		case !f.HighThroughput && calls <= highThroughputMaxCalls:
			l = append(l, Lift{Field: "fanout.high_throughput", Value: "true",
				Why: fmt.Sprintf("a FIFO queue in high throughput mode takes the Region's quota, %d API calls per second per action needed here (--fifo-calls-per-second: 70,000 in us-east-1, us-west-2 and eu-west-1, 2,400 in the Regions with the least)", calls), Source: srcFIFOQuota})
		case f.HighThroughput && calls <= highThroughputMaxCalls:
			l = append(l, Lift{Field: "fanout.fifo_calls_per_second", Value: strconv.Itoa(calls),
				Why: fmt.Sprintf("the Region's high-throughput quota must be at least %d API calls per second per action (70,000 in us-east-1, us-west-2 and eu-west-1)", calls), Source: srcFIFOQuota})
		}
	}
	c := max(1, ceilInt(in.Rate*w.invocation(float64(w.bw))/float64(w.bw)))
	if c <= w.cap {
		return l
	}
	switch {
	case q.fifo() && w.cap == f.MessageGroups:
		if c <= maxGroups {
			l = append(l, Lift{Field: "fanout.message_groups", Value: strconv.Itoa(c),
				Why: fmt.Sprintf("a FIFO queue's mapping runs one batch per message group at a time: %d concurrent workers need %d distinct keys (message group IDs) with records", c, c), Source: srcSQSScaling})
		}
		if !queueBound {
			l = append(l, standard)
		}
	case f.MaximumConcurrency > 0 && w.cap == f.MaximumConcurrency && c <= maxMaximumConcurrency:
		l = append(l, Lift{Field: "fanout.maximum_concurrency", Value: strconv.Itoa(c),
			Why: fmt.Sprintf("the SQS mapping's MaximumConcurrency must be at least %d (2 to 1,000)", c), Source: srcSQSScaling})
	case w.cap == in.Concurrency && c <= min(maxConcurrency, sqsMaxConcurrency):
		l = append(l, Lift{Field: "concurrency", Value: strconv.Itoa(c),
			Why: fmt.Sprintf("the workers need %d concurrent invocations: reserved concurrency, or a higher concurrent executions quota (1,000 a Region by default)", c), Source: srcLambdaLimits})
	}
	return l
}
