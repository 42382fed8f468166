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
