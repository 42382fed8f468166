package batch

import (
	"sync"
	"sync/atomic"
	"time"
)

// stats counts what happened to a batch, for the metrics and the summary log line.
type stats struct {
	start     time.Time
	processed atomic.Int64 // handled successfully (including replays under idempotency)
	failed    atomic.Int64 // reported as batch item failures
	filtered  atomic.Int64 // skipped by the filter criteria
	sunk      atomic.Int64 // sent to the failure destination
	replayed  atomic.Int64 // skipped as already done under idempotency

	mu             sync.Mutex
	oldest, newest time.Time // record timestamps
}

func (s *stats) seen(t time.Time) {
	if t.IsZero() {
		return
	}
	s.mu.Lock()
	if s.oldest.IsZero() || t.Before(s.oldest) {
		s.oldest = t
	}
	if t.After(s.newest) {
		s.newest = t
	}
	s.mu.Unlock()
}

// local counts for one partition or message group, merged into the batch's stats once, so
// that parallel partitions do not contend on every record.
type local struct {
	processed, filtered, sunk int64
	oldest, newest            time.Time
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

// result reads the counts for hooks.
func (s *stats) result() *BatchResult {
	return &BatchResult{
		Processed:  int(s.processed.Load()),
		Failed:     int(s.failed.Load()),
		Filtered:   int(s.filtered.Load()),
		SentToSink: int(s.sunk.Load()),
		Replayed:   int(s.replayed.Load()),
	}
}

func (s *stats) merge(l *local) {
	s.processed.Add(l.processed)
	s.filtered.Add(l.filtered)
	s.sunk.Add(l.sunk)
	s.seen(l.oldest)
	s.seen(l.newest)
}
