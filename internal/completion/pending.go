package completion

import (
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// Completions being retried after idempotency.Do returned, by store, for Settle. A store is
// any comparable value (an idempotency.Store); one that is not comparable is counted but
// cannot be waited for.
var (
	pendingMu    sync.Mutex
	pendingCount atomic.Int64 // all stores: Settle looks no further when it is 0
	pendingBy    = map[any]*Pending{}
)

// Pending is the count of completions pending on one store.
type Pending struct {
	store any
	n     int
	idle  chan struct{} // closed when n drops to 0
}

// Add counts one more completion pending on store; the caller calls Done on the result when
// the completion has been stored or given up.
func Add(store any) *Pending {
	pendingMu.Lock()
	defer pendingMu.Unlock()
	pendingCount.Add(1)
	if !reflect.TypeOf(store).Comparable() {
		return &Pending{n: 1, idle: make(chan struct{})}
	}
	p := pendingBy[store]
	if p == nil {
		p = &Pending{store: store, idle: make(chan struct{})}
		pendingBy[store] = p
	}
	p.n++
	return p
}

// Done counts one completion of p's store as stored or given up.
func (p *Pending) Done() {
	pendingMu.Lock()
	defer pendingMu.Unlock()
	pendingCount.Add(-1)
	if p.n--; p.n == 0 {
		close(p.idle)
		if p.store != nil && pendingBy[p.store] == p {
			delete(pendingBy, p.store)
		}
	}
}

// Settle waits up to d for the completions pending on store to be stored or given up; it
// reports whether they were. Without pending completions it costs an atomic load.
func Settle(store any, d time.Duration) bool { return settle(store, time.Now().Add(d)) }

func settle(store any, stop time.Time) bool {
	if pendingCount.Load() == 0 || !reflect.TypeOf(store).Comparable() {
		return true
	}
	pendingMu.Lock()
	p := pendingBy[store]
	pendingMu.Unlock()
	if p == nil {
		return true
	}
	t := time.NewTimer(time.Until(stop))
	defer t.Stop()
	select {
	case <-p.idle:
		return true
	case <-t.C:
		return false
	}
}
