package localstack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/internal/samstack"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// timeoutFaults freezes (SIGSTOP) the instance that receives an event carrying an armed
// record, the first time each function receives one: the function cannot answer, so the
// invocation times out and its instance is replaced, as when a runtime hangs on Lambda.
type timeoutFaults struct {
	mu    sync.Mutex
	armed []armedTimeout
	fired map[string]time.Time // function + " " + order ID -> when
}

type armedTimeout struct {
	orderID int64
	markers [][]byte // the value as a Kafka event carries it (base64) and as an SQS body does
}

// arm arms a timeout for the record of order id, whose value is value.
func (t *timeoutFaults) arm(id int64, value []byte) {
	body, _ := json.Marshal(string(value))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.armed = append(t.armed, armedTimeout{id, [][]byte{
		[]byte(base64.StdEncoding.EncodeToString(value)),
		body[1 : len(body)-1],
	}})
}

// onEvent returns function fn's hook, which lambdaemu calls as it hands an event to an
// instance.
func (t *timeoutFaults) onEvent(fn string) func(instance, pid int, payload []byte) {
	return func(instance, pid int, payload []byte) {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, a := range t.armed {
			k := fmt.Sprintf("%s %d", fn, a.orderID)
			if _, done := t.fired[k]; done {
				continue
			}
			for _, m := range a.markers {
				if strings.Contains(string(payload), string(m)) {
					if t.fired == nil {
						t.fired = map[string]time.Time{}
					}
					t.fired[k] = time.Now()
					go func() {
						time.Sleep(100 * time.Millisecond) // mid-batch
						if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
							// The process is gone already: no timeout was injected, and the
							// report must not say there was.
							t.mu.Lock()
							delete(t.fired, k)
							t.mu.Unlock()
						}
					}()
					return
				}
			}
		}
	}
}

// firedFor reports whether fn's instance was frozen for order id.
func (t *timeoutFaults) firedFor(fn string, id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.fired[fmt.Sprintf("%s %d", fn, id)]
	return ok
}

// pipelineResult is what one phase measured of one pipeline.
type pipelineResult struct {
	pipe              *pipeline
	phase             string
	records           int
	seconds           float64
	latencies         []float64 // ms, sorted
	applied           int
	lost              int
	lostKeys          []string // the first few
	appliedTwice      int
	orderViolations   int
	deadLettered      int
	filtered          int
	retried           int
	duplicates        int // requests the orders API absorbed by Idempotency-Key
	failedInvocations int64
	faults            []faultOutcome
}

// faultOutcome is where one injected fault went in one pipeline.
type faultOutcome struct {
	pipeline, fault, record, outcome string
	attempts, applied                int
}

// phase runs pipes on n new records: it starts their mappings with consumer groups of the
// phase, produces the records, and waits until every record is accounted for (applied by the
// pipeline's last function, filtered out, or dead-lettered) and the mappings are idle, or
// until the phase times out; then it stops the mappings and measures.
func (s *stack) phase(ctx context.Context, name string, pipes []*pipeline, n int, firstID int64, faults bool, show func([]*running)) ([]pipelineResult, error) {
	since := time.Now()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var specs []*samstack.MappingSpec
	seen := map[*samstack.MappingSpec]bool{}
	topics := map[string]bool{}
	for _, p := range pipes {
		topics[p.topic] = true
		for _, m := range p.specs {
			if !seen[m] {
				seen[m] = true
				specs = append(specs, m)
			}
		}
	}
	runs, err := s.startMappings(pctx, specs, name, since)
	show(runs)
	defer func() {
		cancel()
		for _, r := range runs {
			<-r.done
		}
		show(nil)
	}()
	if err != nil {
		return nil, err
	}

	faultOf := map[int64]string{}
	if faults {
		faultOf[firstID+int64(n/5)] = faultPoison
		faultOf[firstID+int64(n/3)] = faultTransient
		faultOf[firstID+int64(n/2)] = faultTimeout
		for id, f := range faultOf {
			idx := int(id - firstID)
			customer := fmt.Sprintf("customer-%03d", idx%s.c.Keys)
			switch f {
			case faultTransient:
				s.api.inject(id, faultTransient)
			case faultTimeout:
				s.timeouts.arm(id, orderValue(id, customer, false))
			}
		}
	}
	var recs []produced
	for _, topic := range keysOf(topics) {
		got, err := produceLoad(pctx, s.producer, loadSpec{topic: topic, records: n, keys: s.c.Keys, rate: s.c.Rate, firstID: firstID, faults: faultOf})
		if err != nil {
			return nil, err
		}
		recs = append(recs, got...)
	}

	deadline := since.Add(s.c.PhaseTimeout)
	var idleSince time.Time
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		for _, r := range runs {
			select {
			case err := <-r.done:
				r.done <- err
				if err == nil {
					err = errors.New("stopped")
				}
				return nil, fmt.Errorf("mapping %s: %w", r.spec.Id, err)
			default:
			}
		}
		missing := 0
		for _, p := range pipes {
			res := s.account(p, name, recs, since, runs)
			missing += res.lost
		}
		idle := missing == 0
		for _, r := range runs {
			snap := r.counters.Snapshot()
			if snap.InFlight != 0 || snap.Lag != 0 {
				idle = false
			}
		}
		switch {
		case !idle:
			idleSince = time.Time{}
		case idleSince.IsZero():
			idleSince = time.Now()
		case time.Since(idleSince) >= 1500*time.Millisecond:
			// Accounted for, and nothing moved for 1.5 s: a late duplicate would have shown.
			return s.results(pipes, name, recs, since, runs, faultOf), nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(s.out, "klt local: phase %s timed out after %v (--phase-timeout) with %d records unaccounted for\n", name, s.c.PhaseTimeout, missing)
			return s.results(pipes, name, recs, since, runs, faultOf), nil
		}
	}
}

// results measures each pipeline at the end of a phase.
func (s *stack) results(pipes []*pipeline, phase string, recs []produced, since time.Time, runs []*running, faultOf map[int64]string) []pipelineResult {
	var out []pipelineResult
	for _, p := range pipes {
		res := s.account(p, phase, recs, since, runs)
		for _, r := range recs {
			f := faultOf[r.orderID]
			if f == "" || r.topic() != p.topic {
				continue
			}
			out := faultOutcome{pipeline: p.name, fault: f, record: r.key}
			out.attempts = s.api.attemptsOf(p.applier(), r.key)
			dups := 0
			for _, d := range s.api.duplicates() {
				if d.function == p.applier() && d.key == r.key {
					dups++
				}
			}
			apps, dl := s.fate(p, r)
			out.applied = apps
			again := ""
			if dups > 0 {
				again = fmt.Sprintf("; delivered again %d time(s) after, and the orders API's Idempotency-Key made it a no-op", dups)
			}
			switch {
			case dl != nil:
				out.outcome = fmt.Sprintf("sent to %s (%s)", dl.queue, base.OneLine(dl.why))
			case apps == 1 && f == faultTransient:
				out.outcome = fmt.Sprintf("applied once, after %d attempts: the orders API's 503 was retried in the invocation%s", out.attempts-dups, again)
			case apps == 1 && f == faultTimeout:
				var frozen []string
				for _, fn := range p.functions {
					if s.timeouts.firedFor(fn, r.orderID) {
						frozen = append(frozen, fn)
					}
				}
				switch {
				case len(frozen) == 0:
					out.outcome = "applied once; no invocation carrying it timed out"
				case dups > 0:
					out.outcome = fmt.Sprintf("the invocation of %s timed out and its instance was replaced; the batch was delivered again; the orders API got %d requests and applied it once (Idempotency-Key)", strings.Join(frozen, " and "), out.attempts)
				default:
					out.outcome = fmt.Sprintf("the invocation of %s timed out and its instance was replaced; the batch was delivered again; applied once", strings.Join(frozen, " and "))
				}
			case apps == 1:
				out.outcome = "applied once" + again
			case apps > 1:
				out.outcome = fmt.Sprintf("applied %d times", apps)
			default:
				out.outcome = "lost: neither applied nor dead-lettered"
			}
			res.faults = append(res.faults, out)
		}
		out = append(out, res)
	}
	return out
}

// topic returns the topic of the record.
func (p produced) topic() string {
	tp, _, _ := splitKey(p.key)
	t, _, _ := splitTopicPartition(tp)
	return t
}

// splitKey splits a recordKey, topic-partition-offset.
func splitKey(key string) (topicPartition string, offset int64, ok bool) {
	i := strings.LastIndexByte(key, '-')
	if i <= 0 {
		return "", 0, false
	}
	var n int64
	if _, err := fmt.Sscan(key[i+1:], &n); err != nil {
		return "", 0, false
	}
	return key[:i], n, true
}

// fate returns how often pipeline p applied record r, and where it was dead-lettered.
func (s *stack) fate(p *pipeline, r produced) (int, *deadLetter) {
	n := 0
	for _, a := range s.api.applications() {
		if a.function == p.applier() && a.key == r.key {
			n++
		}
	}
	dls, ranges, _ := s.drains.snapshot()
	for i := range dls {
		if dls[i].key == r.key && p.queues[dls[i].queue] {
			return n, &dls[i]
		}
	}
	if tp, off, ok := splitKey(r.key); ok {
		for _, rg := range ranges {
			if rg.topicPartition == tp && off >= rg.first && off <= rg.last && p.has(rg.function) && n == 0 {
				return n, &deadLetter{queue: rg.queue, key: r.key, at: rg.at, why: "on-failure destination: " + rg.condition}
			}
		}
	}
	return n, nil
}

// has reports whether fn is a function of p.
func (p *pipeline) has(fn string) bool {
	for _, f := range p.functions {
		if f == fn {
			return true
		}
	}
	return false
}

// account measures pipeline p on the phase's records so far.
func (s *stack) account(p *pipeline, phase string, recs []produced, since time.Time, runs []*running) pipelineResult {
	res := pipelineResult{pipe: p, phase: phase}
	apps := map[string][]application{}
	for _, a := range s.api.applications() {
		if a.function == p.applier() {
			apps[a.key] = append(apps[a.key], a)
		}
	}
	dls, ranges, _ := s.drains.snapshot()
	dead := map[string]time.Time{}
	for _, d := range dls {
		if p.queues[d.queue] {
			dead[d.key] = d.at
		}
	}
	last := since
	var firsts []application
	orderOf := map[string]int64{}
	for _, r := range recs {
		if r.topic() != p.topic {
			continue
		}
		res.records++
		if p.filtered(r) {
			res.filtered++
			continue
		}
		as := apps[r.key]
		if len(as) > 0 {
			res.applied++
			first := as[0]
			firsts = append(firsts, first)
			orderOf[r.key] = r.orderID
			res.latencies = append(res.latencies, float64(first.at.Sub(r.at).Microseconds())/1000)
			if first.at.After(last) {
				last = first.at
			}
			if len(as) > 1 {
				res.appliedTwice++
			}
			if s.api.attemptsOf(p.applier(), r.key) > 1 {
				res.retried++
			}
			continue
		}
		if at, ok := dead[r.key]; ok || s.inRange(p, r, ranges, &at) {
			res.deadLettered++
			if at.After(last) {
				last = at
			}
			continue
		}
		res.lost++
		if len(res.lostKeys) < 5 {
			res.lostKeys = append(res.lostKeys, r.key)
		}
	}
	inPhase := map[string]bool{}
	for _, r := range recs {
		inPhase[r.key] = true
	}
	for _, d := range s.api.duplicates() {
		if d.function == p.applier() && inPhase[d.key] {
			res.duplicates++
		}
	}
	sort.Float64s(res.latencies)
	res.orderViolations = orderViolations(firsts, orderOf)
	res.seconds = last.Sub(since).Seconds()
	for _, r := range runs {
		if p.has(r.spec.Function) {
			res.failedInvocations += r.counters.Snapshot().Errors
		}
	}
	return res
}

// inRange reports whether an on-failure destination record of p's functions names r.
func (s *stack) inRange(p *pipeline, r produced, ranges []ofdRange, at *time.Time) bool {
	tp, off, ok := splitKey(r.key)
	if !ok {
		return false
	}
	for _, rg := range ranges {
		if rg.topicPartition == tp && off >= rg.first && off <= rg.last && p.has(rg.function) {
			*at = rg.at
			return true
		}
	}
	return false
}

// filtered reports whether a mapping of p filters r out: the Kafka mapping on the value, an
// SQS mapping on the body the dispatcher gives it (the value, when it is text). A record a
// filter cannot decide on is not filtered out: the mappings deliver it. The answer is kept:
// a phase asks for every record four times a second.
func (p *pipeline) filtered(r produced) bool {
	if v, ok := p.filteredKeys[r.key]; ok {
		return v
	}
	if p.filteredKeys == nil {
		p.filteredKeys = map[string]bool{}
	}
	v := filteredOut(p, r)
	p.filteredKeys[r.key] = v
	return v
}

func filteredOut(p *pipeline, r produced) bool {
	for _, m := range p.specs {
		if m.Filter == nil {
			continue
		}
		var ok bool
		var err error
		if m.Kind == samstack.KafkaMapping {
			ok, err = m.Filter.MatchKafka(&kafkaevent.Record{Value: r.value})
		} else {
			ok, err = m.Filter.MatchSQS(&events.SQSMessage{Body: string(r.value)})
		}
		if err == nil && !ok {
			return true
		}
	}
	return false
}
