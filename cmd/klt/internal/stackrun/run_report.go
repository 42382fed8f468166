package stackrun

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/clitext"
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

func (l *live) partitionLag() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int64{}
	for _, r := range l.runs {
		if r.kafka == nil {
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
func pipelineNames(ps []*pipeline) map[*pipeline]string {
	shape := func(p *pipeline) string {
		if len(p.functions) == 1 {
			return "direct"
		}
		return "fan-out"
	}
	n := map[string]int{}
	for _, p := range ps {
		n[shape(p)]++
	}
	out := map[*pipeline]string{}
	for _, p := range ps {
		out[p] = shape(p)
		if n[shape(p)] > 1 {
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

	names := pipelineNames(s.pipelines)
	var phases []*phaseResult
	for i, p := range s.pipelines {
		n := s.loadOf(p)
		if n == 0 {
			continue
		}
		fmt.Fprintf(s.out, "klt local: %s (%s): %d records\n", names[p], p.name, n)
		res, err := s.phase(ctx, fmt.Sprintf("p%d", i+1), []*pipeline{p}, n, s.c.FaultLoad == 0 && len(s.c.Faults) > 0, lv)
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
		Series:   rec.Series(),
		Mappings: lv.mappings(),
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
	rp := report.Pipeline{
		Name: name, Functions: p.functions, Phase: report.PhaseLoad,
		Records: int64(len(a.Records)), Seconds: ph.seconds[i],
		Lost: countOf(a.Lost), AppliedTwice: countOf(a.AppliedTwice), OrderViolations: countOf(a.OrderViolations),
		DeadLettered: int64(a.Fates[ledger.FateDeadLettered]), Filtered: int64(a.Fates[ledger.FateFiltered]),
		Observed: a.Observed, Unobservable: a.Unobserved, Fates: map[string]int64{},
	}
	if ph.faulted {
		rp.Phase = report.PhaseFaults
	}
	for _, m := range p.specs {
		rp.Mappings = append(rp.Mappings, m.Id)
	}
	rp.FailureQueue = report.Observed(int64(a.Fates[ledger.FateFailureQueue]))
	for _, ra := range a.Records {
		rp.Fates[reportFate(ra.Fate, a)]++
		for _, n := range ra.Deliveries {
			if n > 1 { // delivered again by one mapping (each of a fan-out's mappings delivers it once)
				rp.Retried++
				break
			}
		}
	}
	for _, res := range a.Resources {
		rp.DuplicateRequests += int64(res.Repeats)
		rp.Resources = append(rp.Resources, s.reportResource(a, res, p.applier()))
	}
	for _, r := range ph.runs {
		if p.has(r.spec.Function) {
			rp.FailedInvocations += r.counters.Snapshot().Errors
		}
	}
	if rp.Seconds > 0 {
		rp.RecordsPerSecond = float64(rp.Records-rp.Filtered) / rp.Seconds
	}
	if len(a.Latencies) > 0 {
		rp.SetLatencies(a.Latencies)
	}
	rep.Pipelines = append(rep.Pipelines, rp)
	faulted := map[ledger.RecordID]armed{}
	for _, f := range ph.faults {
		if f.found && f.topic == p.topic {
			faulted[f.id] = f
		}
	}
	for _, ra := range a.Records {
		fate := reportFate(ra.Fate, a)
		applied := appliedOf(ra, a, p.applier())
		if ph.faulted || fate != report.FateApplied || !applied.Is(1) || deliveries(ra) > len(p.specs) {
			rep.Records = append(rep.Records, report.RecordFate{
				Pipeline: name, Record: ra.ID.String(), Key: shortKey(ra.Key), Fate: fate,
				Attempts: deliveries(ra), Applied: applied, Where: whereOf(ra, p), Why: whyOf(ra, p),
			})
		}
		for _, e := range ra.Effects {
			if e.Failure != "" && e.Op == ledger.OpListed && p.queues[e.Resource] {
				rep.FailedMessages = append(rep.FailedMessages, report.FailedMessage{
					Pipeline: name, Queue: e.Resource, Kind: failedKind(e), Record: ra.ID.String(), Why: e.Failure, At: e.At, Body: e.Body,
				})
			}
		}
	}
	// Every message on its queues counted, duplicates named, from the messages just listed.
	rep.Pipelines[len(rep.Pipelines)-1].SetFailedMessages(rep.FailedMessages)
	for _, f := range ph.faults {
		if f.topic != "" && f.topic != p.topic {
			continue
		}
		rep.Faults = append(rep.Faults, s.faultOutcome(name, p, a, f))
	}
}

// deliveries is how many invocations carried the record, by every mapping of the pipeline.
func deliveries(ra ledger.RecordAccount) int {
	n := 0
	for _, d := range ra.Deliveries {
		n += d
	}
	return n
}

// reportFate is the report's name of an accounting fate.
func reportFate(fate string, a ledger.PipelineAccount) string {
	switch fate {
	case ledger.FateSucceeded:
		if a.Lost.Observed {
			return report.FateApplied
		}
		return report.FateSucceeded
	case ledger.FateFiltered:
		return report.FateFiltered
	case ledger.FateFailureQueue:
		return report.FateFailureQueue
	case ledger.FateDeadLettered:
		return report.FateDeadLettered
	case ledger.FateInFlight:
		return report.FateUnfinished
	}
	return report.FateLost
}

// countOf is the report's Count of an accounting measure.
func countOf(m ledger.Measure) report.Count {
	if !m.Observed {
		return report.Unobservable
	}
	return report.Observed(int64(m.N))
}

// appliedOf counts the record's applications by the pipeline's last function: at the
// resource where it was applied most often, so that a record applied once at each of two
// resources (an idempotency table and a sink) counts once.
func appliedOf(ra ledger.RecordAccount, a ledger.PipelineAccount, last string) report.Count {
	if !a.Lost.Observed {
		return report.Unobservable
	}
	res := map[ledger.Resource]bool{}
	for _, r := range a.Resources {
		res[r.Resource] = true
	}
	per := map[ledger.Resource]int{}
	n := 0
	for _, e := range ra.Effects {
		r := ledger.Resource{Kind: e.Kind, Name: e.Resource}
		if res[r] && ledger.ByLast(e, last) && ledger.Applies(e) && !e.Repeat {
			per[r]++
			n = max(n, per[r])
		}
	}
	return report.Observed(int64(n))
}

// whereOf says where a record went in pipeline p: the resources of its last function's
// effects, and the queues its failures reached.
func whereOf(ra ledger.RecordAccount, p *pipeline) string {
	var out []string
	for _, e := range ra.Effects {
		w := e.Resource
		switch {
		case e.Failure != "" && !p.queues[e.Resource]:
			continue // a queue of another pipeline's functions, which read the same record
		case e.Failure != "":
			w = "sent to " + e.Resource
		case !ledger.ByLast(e, p.applier()) || !ledger.Applies(e):
			continue
		}
		if !contains(out, w) {
			out = append(out, w)
		}
	}
	return strings.Join(out, ", ")
}

// whyOf says why a record reached a failure or dead-letter queue of pipeline p, as the
// message there says, or how the accounting told its fate.
func whyOf(ra ledger.RecordAccount, p *pipeline) string {
	for _, e := range ra.Effects {
		if e.Failure != "" && p.queues[e.Resource] {
			return "at " + e.Resource + ": " + e.Failure
		}
	}
	return ra.Why
}

// failedKind is the report's kind of a failure effect.
func failedKind(e ledger.Effect) string {
	switch e.Via {
	case ledger.ViaEnvelope:
		return report.FailureQueueKind
	case ledger.ViaOnFailure:
		return report.OnFailureDestinationKind
	}
	return report.DeadLetterQueueKind
}

// shortKey is a record key as the report shows it.
func shortKey(k []byte) string {
	s := string(k)
	if len(s) > 64 {
		s = s[:61] + "..."
	}
	return s
}

// reportResource is the report's account of one resource.
func (s *stack) reportResource(a ledger.PipelineAccount, res ledger.ResourceAccount, last string) report.Resource {
	r := report.Resource{
		Resource: res.Resource.Name, Kind: res.Resource.Kind,
		Applied: report.Observed(int64(res.Applied)), AppliedTwice: report.Observed(int64(res.AppliedTwice)),
		OrderViolations: report.Observed(int64(res.OrderViolations)),
	}
	var ms []float64
	for _, ra := range a.Records {
		in, ok := s.obs.ledger.Input(ra.ID)
		for _, e := range ra.Effects {
			if e.Kind != res.Resource.Kind || e.Resource != res.Resource.Name || e.Repeat || !ledger.Applies(e) || !ledger.ByLast(e, last) {
				continue
			}
			if r.Via == "" {
				r.Via = e.Via
			}
			if ok {
				ms = append(ms, float64(e.At.Sub(in.At).Microseconds())/1000)
			}
			break
		}
	}
	if len(ms) > 0 {
		sort.Float64s(ms)
		r.SetLatencies(ms)
	}
	return r
}

// faultOutcome says where one fault's record went in pipeline p, from what klt observed.
func (s *stack) faultOutcome(pipe string, p *pipeline, a ledger.PipelineAccount, f armed) report.Fault {
	out := report.Fault{Pipeline: pipe, Fault: f.spec.Text, Fate: report.FateLost, Applied: report.Unobservable}
	if !f.spec.isRecordFault() {
		// A server fault is no record's: its outcome is the phase's records' (every one
		// applied, or the first fate that is not).
		out.Outcome = fmt.Sprintf("%d calls failed; %s", s.faultsAnswered(f.spec), fatesText(a))
		out.Attempts = a.Attempts
		applied := a.Fates[ledger.FateSucceeded]
		out.Fate = reportFate(ledger.FateSucceeded, a)
		if out.Fate == report.FateApplied {
			out.Applied = report.Observed(int64(applied))
		}
		for _, bad := range []string{ledger.FateLost, ledger.FateInFlight, ledger.FateDeadLettered, ledger.FateFailureQueue} {
			if a.Fates[bad] > 0 {
				out.Fate = reportFate(bad, a)
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
	out.Fate, out.Attempts, out.Applied = reportFate(ra.Fate, a), deliveries(*ra), appliedOf(*ra, a, p.applier())
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
		}
	case faultHTTP:
		what = "the HTTP sink answered 503 to its first request; "
	case faultValue:
		what = "produced with the value of --fault; "
	}
	out.Outcome = what + fateText(*ra, p, out)
	return out
}

// fateText says a record's fate in words.
func fateText(ra ledger.RecordAccount, p *pipeline, f report.Fault) string {
	switch f.Fate {
	case report.FateApplied:
		n, _ := f.Applied.Value()
		return fmt.Sprintf("applied %d time(s) after %d deliveries (%s)", n, f.Attempts, whereOf(ra, p))
	case report.FateSucceeded:
		return fmt.Sprintf("succeeded after %d deliveries (no side effect observable)", f.Attempts)
	case report.FateFailureQueue, report.FateDeadLettered:
		return fmt.Sprintf("%s after %d deliveries (%s)", whereOf(ra, p), f.Attempts, clitext.OneLine(whyOf(ra, p)))
	case report.FateFiltered:
		return "filtered out by the mapping's FilterCriteria"
	}
	return "lost: " + ra.Why
}

// fatesText sums up a pipeline's fates, for a server fault's outcome.
func fatesText(a ledger.PipelineAccount) string {
	var parts []string
	for _, f := range []string{ledger.FateSucceeded, ledger.FateFiltered, ledger.FateFailureQueue, ledger.FateDeadLettered, ledger.FateInFlight, ledger.FateLost} {
		if n := a.Fates[f]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, reportFate(f, a)))
		}
	}
	return "the phase's records: " + strings.Join(parts, ", ")
}
