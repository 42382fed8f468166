package stackrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/esm/samspec"
	"github.com/kafkalambda/toolkit/producer"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A phase runs some pipelines on new records: it starts their mappings with consumer groups of
// the phase, arms the faults, produces the records, and waits until every record's fate is
// observed (applied, filtered, in a failure queue, dead-lettered) and the mappings are idle,
// or until the phase times out; then it stops the mappings and accounts.

// phaseResult is what one phase observed.
type phaseResult struct {
	name     string    // the phase's name: p1, p2..., faults
	since    time.Time // when it started, before its mappings and its first record
	faulted  bool      // the --fault-load phase
	pipes    []*pipeline
	accounts []ledger.PipelineAccount // per pipe, in the order of pipes
	seconds  []float64                // per pipe: from the first record produced to the last fate
	faults   []armed                  // the record faults armed, with their records
	runs     []*running
	timedOut bool
}

// armed is one fault of a phase, with the record it was armed for (zero for server faults).
type armed struct {
	spec  FaultSpec
	topic string
	id    ledger.RecordID
	seq   int
	key   string
	found bool // the selector picked a record of the phase
}

// phase runs pipes on n records each (per distinct topic: pipelines that read one topic share
// its records).
func (s *stack) phase(ctx context.Context, name string, pipes []*pipeline, n int, faulted bool, lv *live) (*phaseResult, error) {
	since := time.Now()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var specs []*samspec.MappingSpec
	seen := map[*samspec.MappingSpec]bool{}
	var topics []string
	for _, p := range pipes {
		if !contains(topics, p.topic) {
			topics = append(topics, p.topic)
		}
		for _, m := range p.specs {
			if !seen[m] {
				seen[m] = true
				specs = append(specs, m)
			}
		}
	}
	runs, err := s.startMappings(pctx, specs, name, since)
	lv.set(name, runs)
	defer func() {
		cancel()
		for _, r := range runs {
			<-r.done
		}
		lv.set(name, nil)
	}()
	if err != nil {
		return nil, err
	}
	res := &phaseResult{name: name, since: since, faulted: faulted, pipes: pipes, runs: runs}
	faults := s.c.Faults
	if s.c.FaultLoad > 0 && !faulted {
		faults = nil
	}
	s.armServerFaults(faults)
	for _, topic := range topics {
		recs, err := s.source.records(n)
		if err != nil {
			return nil, err
		}
		arms := applyValueFaults(faults, recs, topic)
		ids, err := s.produce(pctx, topic, name, recs)
		if err != nil {
			return nil, err
		}
		for i := range arms {
			if arms[i].found {
				arms[i].id = ids[arms[i].seq-1]
				s.armRecordFault(arms[i], pipes)
			}
		}
		res.faults = append(res.faults, arms...)
	}
	for _, f := range faults {
		if !f.isRecordFault() {
			res.faults = append(res.faults, armed{spec: f})
		}
	}
	if err := s.waitPhase(ctx, res, since); err != nil {
		return nil, err
	}
	return res, nil
}

// waitPhase waits until the phase's records are accounted for and its mappings idle for
// 1.5 s, or --phase-timeout passes, and fills res's accounts.
func (s *stack) waitPhase(ctx context.Context, res *phaseResult, since time.Time) error {
	deadline := since.Add(s.c.PhaseTimeout)
	var idleSince time.Time
	var stalls stallWatch
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		for _, r := range res.runs {
			select {
			case err := <-r.done:
				r.done <- err
				if err == nil {
					err = errors.New("stopped")
				}
				return fmt.Errorf("mapping %s: %w", r.spec.Id, err)
			default:
			}
		}
		s.watchStalls(&stalls, res.name, res.runs, time.Now())
		// The mappings first: while one has records in flight or waiting, the phase is not
		// over, and the accounting, which reads the whole ledger, can wait.
		idle := true
		for _, r := range res.runs {
			snap := r.counters.Snapshot()
			if snap.InFlight != 0 || snap.Lag != 0 {
				idle = false
			}
		}
		waiting := -1
		if idle || time.Now().After(deadline) {
			res.account(s, since)
			waiting = 0
			for _, a := range res.accounts {
				waiting += a.Fates[ledger.FateInFlight]
			}
			idle = idle && waiting == 0
		}
		switch {
		case !idle:
			idleSince = time.Time{}
		case idleSince.IsZero():
			idleSince = time.Now()
		case time.Since(idleSince) >= 1500*time.Millisecond:
			// Accounted for, and nothing moved for 1.5 s: a late duplicate would have shown.
			// The observers settle first: every message on the listed queues and every
			// record on the output topics as of now is in the ledger.
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := s.obs.settle(sctx)
			cancel()
			if err != nil {
				return fmt.Errorf("phase %s: the observers did not settle: %w", res.name, err)
			}
			res.account(s, since)
			return nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(s.out, "klt local: phase %s timed out after %v (--phase-timeout) with %d records on their way: they count as lost\n", res.name, s.c.PhaseTimeout, max(waiting, 0))
			res.timedOut = true
			res.account(s, since)
			return nil
		}
	}
}

// account accounts for each pipeline of the phase from the ledger.
func (res *phaseResult) account(s *stack, since time.Time) {
	res.accounts = res.accounts[:0]
	res.seconds = res.seconds[:0]
	for _, p := range res.pipes {
		a := ledger.Account(s.obs.ledger, s.accountSpec(p), res.name)
		if res.timedOut {
			a.TimedOutAsLost()
		}
		res.accounts = append(res.accounts, a)
		last := s.lastFate(a)
		if last.Before(since) {
			last = since
		}
		res.seconds = append(res.seconds, last.Sub(since).Seconds())
	}
}

// produce produces recs to topic through the producer package (acks from all in-sync
// replicas, idempotent, murmur2 partitioning by key, as a Java client would), at --rate, and
// records each in the ledger as an input of phase. It returns their identities, in order.
func (s *stack) produce(ctx context.Context, topic, phase string, recs []inputRecord) ([]ledger.RecordID, error) {
	const chunk = 500
	out := make([]ledger.RecordID, 0, len(recs))
	start := time.Now()
	rate := s.c.Rate
	for i := 0; i < len(recs); {
		n := min(chunk, len(recs)-i)
		if rate > 0 {
			// Hold the rate, in chunks of a tenth of a second: the chunk's first record goes
			// out at start + i/rate.
			n = min(n, max(1, int(math.Ceil(rate/10))))
			if d := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return out, ctx.Err()
				}
			}
		}
		krs := make([]*kgo.Record, n)
		for j := range krs {
			r := recs[i+j]
			krs[j] = &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: r.Headers}
			if r.HasPartition {
				krs[j].Partition = r.Partition
			}
		}
		rs := producer.Produce(ctx, s.producer, krs...)
		if err := rs.Err(); err != nil {
			return out, fmt.Errorf("producing the load to %s: %w", topic, err)
		}
		for j, r := range rs {
			id := ledger.RecordID{Topic: r.Record.Topic, Partition: r.Record.Partition, Offset: r.Record.Offset}
			s.obs.ledger.Produced(ledger.Input{ID: id, Key: recs[i+j].Key, Value: recs[i+j].Value, At: r.Record.Timestamp, Phase: phase})
			out = append(out, id)
		}
		i += n
	}
	return out, nil
}

// applyValueFaults picks the records of the phase's record faults among recs (produced to
// topic), replaces the values of the value faults, and returns the faults with their records.
func applyValueFaults(faults []FaultSpec, recs []inputRecord, topic string) []armed {
	var out []armed
	for _, f := range faults {
		if !f.isRecordFault() {
			continue
		}
		a := armed{spec: f, topic: topic}
		if i := f.Select.pick(recs); i >= 0 {
			a.found, a.seq, a.key = true, recs[i].Seq, string(recs[i].Key)
			if f.Kind == faultValue {
				recs[i].Value = []byte(expand(f.Value, recs[i].Seq, a.key))
			}
		}
		out = append(out, a)
	}
	return out
}

// armRecordFault arms a produced record's fault: the process faults in the functions they
// name (the last function of each pipeline that reads the record's topic, by default), the
// HTTP sink's 503.
func (s *stack) armRecordFault(a armed, pipes []*pipeline) {
	switch a.spec.Kind {
	case faultTimeout, faultCrash:
		var fns []string
		for _, p := range pipes {
			if p.topic != a.topic {
				continue
			}
			switch {
			case a.spec.Function == "":
				fns = append(fns, p.applier())
			case p.has(a.spec.Function):
				fns = append(fns, a.spec.Function)
			}
		}
		s.faults.arm(a.id, a.spec.Kind, a.spec.Text, fns)
	case faultHTTP:
		s.failFirstRequest(a.id)
	}
}

// armServerFaults arms the phase's dynamodb, sqs and kafka faults, before its records go.
func (s *stack) armServerFaults(faults []FaultSpec) {
	for _, f := range faults {
		switch f.Kind {
		case faultDynamoDB:
			s.failDynamoDB(f.N, f.Op)
		case faultSQS:
			s.failSQS(f.N, f.Op)
		case faultKafka:
			s.failKafka(f.N)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
