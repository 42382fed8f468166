package batch

import "time"

// local counts what happened to the records of one unit (a partition, a message group, a
// standard-queue message) or, merged, of a batch: for the summary line, the metrics and
// the BatchResult of the hooks. A unit counts on its own goroutine and the answer merges the
// units once, so that parallel units do not contend on every record.
type local struct {
	processed   int64 // handled successfully, including replays and those not recorded
	failed      int64 // failed, each with its "record failed" line: reported or sent to the sink
	reported    int64 // reported for redelivery: the failed ones not sunk, and those behind them
	filtered    int64 // skipped by the filter criteria
	sunk        int64 // failed and sent to the failure destination
	replayed    int64 // skipped as already done under idempotency
	notRecorded int64 // processed, but their completion could not be stored (idempotency.ErrNotRecorded)

	oldest, newest time.Time // record timestamps
}

func (l *local) seen(t time.Time) {
	if t.IsZero() {
		return
	}
	if l.oldest.IsZero() || t.Before(l.oldest) {
		l.oldest = t
	}
	if t.After(l.newest) {
		l.newest = t
	}
}

func (l *local) merge(o *local) {
	l.processed += o.processed
	l.failed += o.failed
	l.reported += o.reported
	l.filtered += o.filtered
	l.sunk += o.sunk
	l.replayed += o.replayed
	l.notRecorded += o.notRecorded
	l.seen(o.oldest)
	l.seen(o.newest)
}

// result is what the hooks get.
func (l *local) result() *BatchResult {
	return &BatchResult{
		Processed:   int(l.processed),
		Failed:      int(l.failed),
		Reported:    int(l.reported),
		Filtered:    int(l.filtered),
		SentToSink:  int(l.sunk),
		Replayed:    int(l.replayed),
		NotRecorded: int(l.notRecorded),
	}
}
