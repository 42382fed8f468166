package stackrun

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/clitext"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/funcrun"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
	"github.com/kafkalambda/toolkit/esm/samspec"
)

// live is the set of mappings running now, for the progress lines and the recorder, and
// the totals of those that ran before.
type live struct {
	s      *stack
	mu     sync.Mutex
	runs   []*running
	totals map[string]*report.Mapping // by mapping id
	order  []string
	rec    *report.Recorder // nil before the load starts
}

func newLive(s *stack) *live { return &live{s: s, totals: map[string]*report.Mapping{}} }

// set makes runs the mappings of phase; nil ends the phase and adds its mappings' counts to
// the totals.
func (l *live) set(phase string, runs []*running) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if runs == nil {
		for _, r := range l.runs {
			t := l.totals[r.spec.Id]
			if t == nil {
				m := report.MappingFromSnapshot(r.spec.Id, r.spec.Function, r.source(), r.counters.Snapshot())
				t = &m
				t.OnFailure = l.s.onFailureOf(r.spec)
				t.Config = l.s.mappingConfig(r)
				l.totals[r.spec.Id] = t
				l.order = append(l.order, r.spec.Id)
			} else {
				t.Add(r.counters.Snapshot())
			}
			l.s.addMetrics(t, r)
			t.FailureQueue = l.s.failureQueueCount(r.spec.Function)
		}
	} else if l.rec != nil && phase != "" {
		l.rec.Phase(phase)
	}
	l.runs = runs
}

func (l *live) statuses() []report.MappingStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]report.MappingStatus, len(l.runs))
	failed, applied := l.s.obs.ledger.CountsByFunction()
	for i, r := range l.runs {
		fn := r.spec.Function
		out[i] = report.MappingStatus{Name: r.spec.Id, Function: fn, Snapshot: r.counters.Snapshot(),
			FailureQueue: report.Observed(int64(failed[fn])), Applied: report.Unobservable}
		if applied[fn] > 0 {
			out[i].Applied = report.Observed(int64(applied[fn]))
		}
	}
	return out
}

// partitionLag is the lag of each partition of the running Kafka mappings ("topic-N") and of
// each queue an SQS mapping reads (its name): the records or messages not yet delivered, so
// that the lag chart shows where a fan-out's backlog sits, in its queue, as well as in Kafka.
func (l *live) partitionLag() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int64{}
	for _, r := range l.runs {
		if r.kafka == nil {
			out[r.source()] += r.counters.Snapshot().Lag
			continue
		}
		for p, lag := range r.kafka.PartitionLag() {
			out[fmt.Sprintf("%s-%d", r.spec.Topics[0], p)] += lag
		}
	}
	return out
}

// mappings returns the totals, in the order the mappings first ran.
func (l *live) mappings() []report.Mapping {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []report.Mapping
	for _, id := range l.order {
		out = append(out, *l.totals[id])
	}
	return out
}

// source names what the mapping reads: its topic or queue.
func (r *running) source() string {
	if r.spec.Kind == samspec.KafkaMapping {
		return r.spec.Topics[0]
	}
	return r.spec.Queue
}

// onFailureOf names where mapping m puts what it gives up on: its on-failure destination, or
// its queue's dead-letter queue.
func (s *stack) onFailureOf(m *samspec.MappingSpec) string {
	if m.Kind == samspec.SqsMapping {
		return s.deadLetterQueueOf(m.Queue)
	}
	if t := m.OnFailureTopic(); t != "" {
		return t
	}
	if q, ok := samspec.QueueByARN(s.ls.Resolver, m.OnFailure); ok {
		return q
	}
	return m.OnFailure
}

// pipelineNames names the pipelines by their shape: "direct" for one function, "fan-out" for
// more, and, when two have one shape, with their first function: "direct (ConsumerFunction)".
// A pipeline that starts at a --variant is named by its shape and the parameter it changes:
// "direct, KeyConcurrency=100".
func pipelineNames(ps []*pipeline, variants map[string]Variant) map[*pipeline]string {
	shape := func(p *pipeline) string {
		if len(p.functions) == 1 {
			return "direct"
		}
		return "fan-out"
	}
	n := map[string]int{}
	for _, p := range ps {
		if _, ok := variants[p.functions[0]]; !ok {
			n[shape(p)]++
		}
	}
	out := map[*pipeline]string{}
	for _, p := range ps {
		out[p] = shape(p)
		if v, ok := variants[p.functions[0]]; ok {
			out[p] += ", " + v.Param + "=" + v.Value
		} else if n[shape(p)] > 1 {
			out[p] += " (" + p.functions[0] + ")"
		}
	}
	return out
}

// loadAndReport runs a phase per pipeline with its load, then the fault phase, and reports.
func (s *stack) loadAndReport(ctx context.Context) error {
	if err := s.checkLoads(); err != nil {
		return err
	}
	started := time.Now()
	lv := newLive(s)
	prog, err := report.NewProgress(s.out, lv.statuses)
	if err != nil {
		return err
	}
	rec, err := report.NewRecorder(lv.statuses, report.WithPartitionLag(lv.partitionLag))
	if err != nil {
		return err
	}
	lv.rec = rec
	// While the display runs, klt's own lines go through it, which writes them between two of
	// its blocks: its goroutine and this one share the writer.
	out := s.out
	s.out = prog
	prog.Start()
	rec.Start()
	stopped := false
	stopDisplay := func() {
		if !stopped {
			stopped = true
			prog.Stop()
			rec.Stop()
			s.out = out
		}
	}
	defer stopDisplay()

	names := pipelineNames(s.pipelines, s.variants)
	var phases []*phaseResult
	for _, p := range s.pipelines {
		n := s.loadOf(p)
		if n == 0 {
			continue
		}
		fmt.Fprintf(s.out, "klt local: %s (%s): %d records\n", names[p], p.name, n)
		// The phase is named after its pipeline (names are unique), so that the charts' phase
		// marks say what ran then: "direct", "fan-out", not "p1", "p2".
		res, err := s.phase(ctx, names[p], []*pipeline{p}, n, s.c.FaultLoad == 0 && len(s.c.Faults) > 0, lv)
		if err != nil {
			return s.interrupted(ctx, err, started, phases, names, lv, rec, stopDisplay)
		}
		phases = append(phases, res)
	}
	if s.c.FaultLoad > 0 {
		fmt.Fprintf(s.out, "klt local: every pipeline at once, %d records with the faults %s\n", s.c.FaultLoad, FaultsFlag{&s.c.Faults}.String())
		res, err := s.phase(ctx, "faults", s.pipelines, s.c.FaultLoad, true, lv)
		if err != nil {
			return s.interrupted(ctx, err, started, phases, names, lv, rec, stopDisplay)
		}
		phases = append(phases, res)
	}
	stopDisplay()

	rep := s.report(started, phases, names, lv, rec)
	// A report that contradicts itself is still printed and written, so that what klt saw
	// can be read; the run then fails, saying what does not add up.
	invalid := rep.Validate()
	if err := rep.Text(s.out); err != nil {
		return err
	}
	if s.c.Report != "" {
		if err := rep.Write(s.c.Report); err != nil {
			return err
		}
		fmt.Fprintf(s.out, "klt local: wrote %s/report.json and %s/report.html; function logs in %s\n", s.c.Report, s.c.Report, s.logDir)
	} else {
		fmt.Fprintf(s.out, "klt local: function logs in %s\n", s.logDir)
	}
	if invalid != nil {
		return invalid
	}
	return verdict(s.out, rep)
}

// interrupted ends a load that err stopped: on Ctrl-C (ctx done), with the summary of the
// phases that ended and the mappings' counters.
func (s *stack) interrupted(ctx context.Context, err error, started time.Time, phases []*phaseResult, names map[*pipeline]string, lv *live, rec *report.Recorder, stopDisplay func()) error {
	if ctx.Err() == nil {
		return err
	}
	stopDisplay()
	rep := s.report(started, phases, names, lv, rec)
	rep.Interrupted = true
	if err := rep.Summary(s.out); err != nil {
		return err
	}
	return fmt.Errorf("interrupted: %w", ctx.Err())
}

// verdict fails a run whose report counted a record lost, applied twice or out of order.
func verdict(out interface{ Write([]byte) (int, error) }, rep *report.Report) error {
	var bad []string
	for _, p := range rep.Pipelines {
		lost, _ := p.Lost.Value()
		twice, _ := p.AppliedTwice.Value()
		order, _ := p.OrderViolations.Value()
		if lost > 0 || twice > 0 || order > 0 {
			bad = append(bad, fmt.Sprintf("%s: lost %s, applied twice %s, order violations %s", p.Name, p.Lost, p.AppliedTwice, p.OrderViolations))
		}
	}
	if len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintf(out, "klt local: %s\n", b)
		}
		return fmt.Errorf("the stack lost, duplicated or reordered records (%d pipelines above)", len(bad))
	}
	return nil
}

// checkLoads refuses a --load naming no pipeline, and a load on a stack without one.
func (s *stack) checkLoads() error {
	if len(s.pipelines) == 0 {
		return fmt.Errorf("--records/--generate: %s has no Kafka event source mapping, so no pipeline to load", s.c.Template)
	}
	var firsts []string
	for _, p := range s.pipelines {
		firsts = append(firsts, p.functions[0])
	}
	for name := range s.c.Loads {
		if name != "" && !contains(firsts, name) {
			return fmt.Errorf("--load %s=N: no pipeline starts at %s; pipelines start at %s", name, name, strings.Join(firsts, ", "))
		}
	}
	if len(s.c.Loads) == 0 && s.source.count() == 0 {
		return fmt.Errorf("--load N: say how many records (%s has no end)", s.source.describe())
	}
	return nil
}

// loadOf is how many records pipeline p gets in its own phase: --load, or every record of
// the source. With --load PIPELINE=N for some pipelines only, the others get none.
func (s *stack) loadOf(p *pipeline) int {
	if len(s.c.Loads) == 0 {
		return s.source.count()
	}
	return s.c.Loads.get(p.functions[0], 0)
}

// report assembles the report of a run.
func (s *stack) report(started time.Time, phases []*phaseResult, names map[*pipeline]string, lv *live, rec *report.Recorder) *report.Report {
	rep := &report.Report{
		Tool: "klt local", Version: s.c.Version, Started: started, Template: s.c.Template,
		Machine: report.ThisMachine(),
		Scenario: report.Scenario{
			Source: s.source.describe(), WorkMS: int(s.c.Work.Milliseconds()), Rate: s.c.Rate,
		},
		Series:    rec.Series(),
		Mappings:  lv.mappings(),
		Logs:      s.census.Functions(),
		Functions: s.functionReports(),
	}
	switch src := s.source.(type) {
	case *generator:
		rep.Scenario.Keys = src.keys
	case *fileSource:
		keys := map[string]bool{}
		for _, l := range src.lines {
			keys[string(l.Record.Key)] = true
		}
		rep.Scenario.Keys = len(keys)
	}
	if len(s.pipelines) > 0 {
		rep.Scenario.Partitions = s.c.Partitions.get(s.pipelines[0].topic, 1)
	}
	for _, ph := range phases {
		for i, p := range ph.pipes {
			name := names[p]
			if ph.faulted {
				name += ", with faults"
			}
			s.addPipeline(rep, ph, i, name)
		}
	}
	s.addLoads(rep, phases)
	var direct, fan string
	for _, p := range rep.Pipelines {
		if p.Phase != report.PhaseLoad {
			continue
		}
		if len(p.Functions) == 1 && direct == "" {
			direct = p.Name
		}
		if len(p.Functions) > 1 && fan == "" {
			fan = p.Name
		}
	}
	if direct != "" && fan != "" {
		if sp, err := report.NewSpeedup(rep.Pipelines, fan, direct); err == nil {
			rep.Speedup = sp
		}
	}
	s.predict(rep)
	return rep
}

// addPipeline adds pipeline i of phase ph to the report under name: its figures, its records
// that were not simply applied once (every record of a faulted phase), its faults and what
// reached its failure and dead-letter queues.
func (s *stack) addPipeline(rep *report.Report, ph *phaseResult, i int, name string) {
	p, a := ph.pipes[i], ph.accounts[i]
	lp := report.LedgerPipeline{
		Name: name, Functions: p.functions, Queues: p.queues, Faulted: ph.faulted,
		Seconds: ph.seconds[i], Account: a, Ledger: s.obs.ledger,
	}
	for _, m := range p.specs {
		lp.Mappings = append(lp.Mappings, m.Id)
	}
	for _, r := range ph.runs {
		if p.has(r.spec.Function) {
			lp.FailedInvocations += r.counters.Snapshot().Errors
		}
	}
	rep.AddPipeline(lp)
	for _, f := range ph.faults {
		if f.topic != "" && f.topic != p.topic {
			continue
		}
		rep.Faults = append(rep.Faults, s.faultOutcome(name, p, a, f, ph.faults))
	}
}

// faultOutcome says where one fault's record went in pipeline p, from what klt observed.
func (s *stack) faultOutcome(pipe string, p *pipeline, a ledger.PipelineAccount, f armed, phase []armed) report.Fault {
	out := report.Fault{Pipeline: pipe, Fault: f.spec.Text, Fate: report.FateLost, Applied: report.Unobservable}
	if !f.spec.isRecordFault() {
		// A server fault is no record's: its outcome is that of the phase's records no record
		// fault was armed for (every one applied, or the worst fate among them), and its
		// attempts the most deliveries one of them needed. The records of the phase's record
		// faults have rows of their own: counted here, a poison order's failure queue and the
		// phase's total deliveries read as this fault's ("failure queue, attempts 350" for
		// dynamodb:3:PutItem, whose three failed calls the SDK retried).
		a = withoutRecordFaults(a, phase)
		out.Outcome = fmt.Sprintf("%d calls failed; of the phase's records without a record fault of their own, %s", s.faultsAnswered(f.spec), report.FatesText(a))
		// Its applied: the most times one of them was applied (1 when each was applied once).
		most := int64(0)
		for _, ra := range a.Records {
			out.Attempts = max(out.Attempts, report.Deliveries(ra))
			if n, ok := report.AppliedOf(ra, a, p.applier()).Value(); ok {
				most = max(most, n)
			}
		}
		applied := a.Fates[ledger.FateSucceeded]
		out.Fate = report.FateOf(ledger.FateSucceeded, a)
		if out.Fate == report.FateApplied {
			out.Applied = report.Observed(most)
		}
		for _, bad := range []string{ledger.FateLost, ledger.FateInFlight, ledger.FateDeadLettered, ledger.FateFailureQueue} {
			if a.Fates[bad] > 0 {
				out.Fate = report.FateOf(bad, a)
			}
		}
		if applied == 0 && out.Fate == report.FateApplied {
			out.Fate, out.Applied = report.FateLost, report.Unobservable
		}
		return out
	}
	if !f.found {
		out.Outcome = fmt.Sprintf("no record of the phase matches %s: nothing injected", f.spec.Select)
		out.Fate = report.FateLost
		return out
	}
	out.Record = f.id.String()
	var ra *ledger.RecordAccount
	for i := range a.Records {
		if a.Records[i].ID == f.id {
			ra = &a.Records[i]
		}
	}
	if ra == nil {
		out.Outcome = "the record is not among the pipeline's records"
		return out
	}
	out.Fate, out.Attempts, out.Applied = report.FateOf(ra.Fate, a), report.Deliveries(*ra), report.AppliedOf(*ra, a, p.applier())
	what := ""
	switch f.spec.Kind {
	case faultTimeout, faultCrash:
		var fired []string
		for _, fn := range s.faults.firedIn(f.id, f.spec.Kind) {
			if p.has(fn) {
				fired = append(fired, fn)
			}
		}
		verb := map[string]string{faultTimeout: "timed out", faultCrash: "crashed (kill -9)"}[f.spec.Kind]
		if len(fired) == 0 {
			what = "no invocation carrying it was faulted; "
		} else {
			what = fmt.Sprintf("the invocation of %s carrying it %s and its instance was replaced; ", strings.Join(fired, " and "), verb)
			if f.spec.Kind == faultTimeout && s.allLMI(fired) {
				what = fmt.Sprintf("the invocation of %s carrying it ran past its deadline and timed out; its process, a Lambda Managed Instances one, went on; ", strings.Join(fired, " and "))
			}
		}
	case faultHTTP:
		what = "the HTTP sink answered 503 to its first request; "
	case faultValue:
		what = "produced with the value of --fault; "
	}
	out.Outcome = what + fateText(*ra, p, out)
	return out
}

// withoutRecordFaults is a without the records the record faults of phase were armed for: its
// records, fates and attempts recounted.
func withoutRecordFaults(a ledger.PipelineAccount, phase []armed) ledger.PipelineAccount {
	faulted := map[ledger.RecordID]bool{}
	for _, f := range phase {
		if f.spec.isRecordFault() && f.found {
			faulted[f.id] = true
		}
	}
	out := a
	out.Records, out.Fates, out.Attempts = nil, map[string]int{}, 0
	for f := range a.Fates {
		out.Fates[f] = 0
	}
	for _, ra := range a.Records {
		if faulted[ra.ID] {
			continue
		}
		out.Records = append(out.Records, ra)
		out.Fates[ra.Fate]++
		out.Attempts += report.Deliveries(ra)
	}
	return out
}

// fateText says a record's fate in words.
func fateText(ra ledger.RecordAccount, p *pipeline, f report.Fault) string {
	switch f.Fate {
	case report.FateApplied:
		n, _ := f.Applied.Value()
		return fmt.Sprintf("applied %d time(s) after %d deliveries (%s)", n, f.Attempts, report.WhereOf(ra, p.queues, p.applier()))
	case report.FateSucceeded:
		return fmt.Sprintf("succeeded after %d deliveries (no side effect observable)", f.Attempts)
	case report.FateFailureQueue, report.FateDeadLettered:
		return fmt.Sprintf("%s after %d deliveries (%s)", report.WhereOf(ra, p.queues, p.applier()), f.Attempts, clitext.OneLine(report.WhyOf(ra, p.queues)))
	case report.FateFiltered:
		return "filtered out by the mapping's FilterCriteria"
	}
	return "lost: " + ra.Why
}

// functionReports says how each function ran: its execution environments, the most
// invocations each ran at once, and its Lambda Managed Instances invocations past their
// deadline. The functions come in name order.
func (s *stack) functionReports() []report.Function {
	var out []report.Function
	for _, fn := range keysOf(s.pools) {
		out = append(out, funcrun.FunctionReport(fn, s.pools[fn]))
	}
	return out
}

// allLMI reports whether every function of fns runs as a Lambda Managed Instances function.
func (s *stack) allLMI(fns []string) bool {
	for _, fn := range fns {
		if p := s.pools[fn]; p == nil || p.LMIConcurrency() == 0 {
			return false
		}
	}
	return true
}
