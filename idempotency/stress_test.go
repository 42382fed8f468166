package idempotency_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/internal/faulthttp"
)

var (
	stressRecords = flag.Int("stress.records", 1000, "records TestStress delivers")
	stressSeed    = flag.Uint64("stress.seed", 0, "TestStress's seed (0: from the clock)")
)

// stressFault is a kind of fault TestStress injects at a store call.
type stressFault int

const (
	sfPass        stressFault = iota
	sfServerError             // HTTP 500, not applied
	sfThrottle                // ProvisionedThroughputExceededException, not applied
	sfResetBefore             // connection reset before the server saw the call
	sfResetAfter              // connection reset after the server applied the call
	sfDelay                   // 20 to 200 ms before the call is sent
	stressFaultKinds
)

var stressFaultNames = [...]string{"pass", "500", "throttle", "reset before apply", "reset after apply", "delay"}

// stressTransport injects a random fault, drawn per HTTP request, at every DynamoDB call:
// faulthttp's for 500s, throttling and resets after the server applied the call, its own
// for resets before it and delays.
type stressTransport struct {
	mu     sync.Mutex
	rng    *rand.Rand
	pass   http.RoundTripper
	by     [stressFaultKinds]http.RoundTripper
	counts [stressFaultKinds]atomic.Int64
}

func newStressTransport(seed uint64) *stressTransport {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64
	st := &stressTransport{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), pass: base}
	st.by[sfServerError] = faulthttp.New(base, faulthttp.Rule{Fault: faulthttp.ServerError})
	st.by[sfThrottle] = faulthttp.New(base, faulthttp.Rule{Fault: faulthttp.Throttle})
	st.by[sfResetAfter] = faulthttp.New(base, faulthttp.Rule{Fault: faulthttp.DropAfterApply})
	return st
}

// draw picks the fault of one request: 5% 500s, 5% throttling, 3% resets before, 3% after,
// 5% delays.
func (st *stressTransport) draw() (stressFault, time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch p := st.rng.IntN(100); {
	case p < 5:
		return sfServerError, 0
	case p < 10:
		return sfThrottle, 0
	case p < 13:
		return sfResetBefore, 0
	case p < 16:
		return sfResetAfter, 0
	case p < 21:
		return sfDelay, time.Duration(20+st.rng.IntN(180)) * time.Millisecond
	}
	return sfPass, 0
}

func (st *stressTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f, delay := st.draw()
	st.counts[f].Add(1)
	switch f {
	case sfResetBefore:
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}
	case sfDelay:
		t := time.NewTimer(delay)
		select {
		case <-req.Context().Done():
			t.Stop()
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, req.Context().Err()
		case <-t.C:
		}
		return st.pass.RoundTrip(req)
	case sfPass:
		return st.pass.RoundTrip(req)
	}
	return st.by[f].RoundTrip(req)
}

// stressLedger counts, independently of the store, how often each record's effect was
// applied, and how its deliveries ended.
type stressLedger struct {
	applied  []atomic.Int32
	done     []atomic.Bool // a delivery said done
	mu       sync.Mutex
	hist     map[int][]string
	outcomes sync.Map // outcome name -> *atomic.Int64
}

func (l *stressLedger) note(rec int, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hist == nil {
		l.hist = map[int][]string{}
	}
	l.hist[rec] = append(l.hist[rec], what)
}

func (l *stressLedger) history(rec int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hist[rec]
	return h[:min(len(h), 12)]
}

func (l *stressLedger) outcome(name string) {
	v, _ := l.outcomes.LoadOrStore(name, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// outcomeOf names how a delivery ended, and whether the record is done (the mapping would
// not deliver it again): a success, a replay, or a success whose completion is not stored.
func outcomeOf(err error, ran bool) (string, bool) {
	var pe *idempotency.PersistenceError
	switch {
	case err == nil && ran:
		return "applied", true
	case err == nil:
		return "replayed", true
	case errors.Is(err, idempotency.ErrNotRecorded):
		return "not recorded (retried after return)", true
	case errors.Is(err, idempotency.ErrLeaseLost):
		return "lease lost", false
	case errors.Is(err, idempotency.ErrInProgress):
		return "in progress", false
	case errors.Is(err, errHandler):
		return "handler failed", false
	case errors.As(err, &pe) && errors.Is(err, context.DeadlineExceeded):
		return "store failed at " + pe.Op + " (out of time)", false
	case errors.As(err, &pe):
		return "store failed at " + pe.Op, false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "handler out of time", false
	}
	return "other: " + err.Error(), false
}

var errHandler = errors.New("handler failed before its effect")

// TestStress delivers records as the event source mapping does, to several execution
// environments (each its own store value and DynamoDB client) sharing a table on dynalite,
// with a concurrent duplicate delivery of every record at first and a redelivery of every
// record whose deliveries all failed, while every HTTP request to DynamoDB may get a fault:
// HTTP 500, throttling, a connection reset before or after the server applied the call, a
// delay. Handlers honour their context, take a random time, and fail one time in ten before
// their effect. An independent ledger counts each record's applications: none may be lost
// (done without being applied) or applied twice.
//
//	go test -race -run TestStress -v ./idempotency/ [-stress.records 5000]
func TestStress(t *testing.T) {
	t.Parallel()
	seed := *stressSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	e := newEnv(t)
	table := e.newTable(t)
	st := newStressTransport(seed)
	const envs = 4
	stores := make([]idempotency.Store, envs)
	for i := range stores {
		client := e.srv.Client(func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: st} })
		stores[i] = newStore(t, client, table)
	}

	n := *stressRecords
	l := &stressLedger{applied: make([]atomic.Int32, n), done: make([]atomic.Bool, n)}
	var deliveries, rounds atomic.Int64
	slots := make(chan struct{}, 24) // deliveries at once
	rng := rand.New(rand.NewPCG(seed, 1))
	var rngMu sync.Mutex
	intN := func(k int) int {
		rngMu.Lock()
		defer rngMu.Unlock()
		return rng.IntN(k)
	}

	deliver := func(rec, env int) (string, bool) {
		slots <- struct{}{}
		defer func() { <-slots }()
		deliveries.Add(1)
		timeout := time.Duration(500+intN(1000)) * time.Millisecond
		work := time.Duration(intN(100)) * time.Millisecond
		fail := intN(10) == 0
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		ran := false
		_, err := idempotency.Do(ctx, stores[env], fmt.Sprintf("record-%d", rec), nil, func(ctx context.Context) (struct{}, error) {
			ran = true
			t := time.NewTimer(work)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return struct{}{}, ctx.Err()
			case <-t.C:
			}
			if fail {
				return struct{}{}, errHandler
			}
			if err := ctx.Err(); err != nil {
				return struct{}{}, err
			}
			l.applied[rec].Add(1)
			return struct{}{}, nil
		})
		name, done := outcomeOf(err, ran)
		l.outcome(name)
		l.note(rec, fmt.Sprintf("%s@env%d(%v)", name, env, err))
		return name, done
	}

	start := time.Now()
	var undone atomic.Int64
	var wg sync.WaitGroup
	for rec := range n {
		wg.Go(func() {
			giveUp := time.Now().Add(40 * time.Second)
			for round := 0; ; round++ {
				rounds.Add(1)
				copies := 1
				if round == 0 {
					copies = 2 // the delivery and a concurrent redelivery
				}
				first := intN(envs)
				var done atomic.Bool
				var dg sync.WaitGroup
				for c := range copies {
					dg.Go(func() {
						if _, ok := deliver(rec, (first+c)%envs); ok {
							done.Store(true)
						}
					})
				}
				dg.Wait()
				if done.Load() {
					l.done[rec].Store(true)
					return
				}
				if time.Now().After(giveUp) {
					undone.Add(1)
					it := e.item(t, table, keyID(t, fmt.Sprintf("record-%d", rec)))
					t.Logf("record %d never done: %v; item %v", rec, l.history(rec), it)
					return
				}
				time.Sleep(time.Duration(10+intN(90)) * time.Millisecond) // the mapping's retry
			}
		})
	}
	wg.Wait()
	for _, s := range stores {
		if !idempotency.Settle(s, 30*time.Second) {
			t.Errorf("completions still being retried 30 s after the last delivery")
		}
	}
	elapsed := time.Since(start)

	reportStress(t, stressRun{seed: seed, records: n, deliveries: deliveries.Load(), rounds: rounds.Load(),
		elapsed: elapsed, undone: undone.Load()}, l, st, e)
}

// stressRun is what a TestStress run counted besides its ledger and its faults.
type stressRun struct {
	seed                       uint64
	records                    int
	deliveries, rounds, undone int64
	elapsed                    time.Duration
}

// reportStress logs a TestStress run's figures and fails the test on a record lost, applied
// twice or never done.
func reportStress(t *testing.T, r stressRun, l *stressLedger, st *stressTransport, e *env) {
	seed, n := r.seed, r.records
	var lost, twice []int
	for i := range l.applied {
		switch c := l.applied[i].Load(); {
		case c == 0 && l.done[i].Load():
			lost = append(lost, i)
		case c > 1:
			twice = append(twice, i)
			t.Logf("record %d applied %d times: %v", i, c, l.history(i))
		}
	}
	t.Logf("seed %d: %d records, %d deliveries in %d rounds, %v", seed, n, r.deliveries, r.rounds, r.elapsed.Round(time.Millisecond))
	var total int64
	for f := sfServerError; f < stressFaultKinds; f++ {
		total += st.counts[f].Load()
	}
	t.Logf("DynamoDB requests %d, faults injected %d:", total+st.counts[sfPass].Load(), total)
	for f := sfServerError; f < stressFaultKinds; f++ {
		t.Logf("  %-20s %d", stressFaultNames[f], st.counts[f].Load())
	}
	t.Log("deliveries by outcome:")
	l.outcomes.Range(func(k, v any) bool {
		t.Logf("  %-40s %d", k, v.(*atomic.Int64).Load())
		return true
	})
	t.Logf("lost %d, applied twice %d, never done %d", len(lost), len(twice), r.undone)
	if len(lost) > 0 || len(twice) > 0 || r.undone > 0 {
		t.Errorf("lost %v, applied twice %v, never done %d (seed %d)\ndynalite (exited: %v):\n%s", head(lost), head(twice), r.undone, seed, e.srv.Exited(), e.srv.Output())
	}
}

func head(s []int) []int { return s[:min(len(s), 10)] }
