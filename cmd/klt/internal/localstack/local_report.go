package localstack

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/internal/report"
	"github.com/kafkalambda/toolkit/internal/samstack"
)

// live is the set of mappings running now, for the progress lines and the recorder, and
// the totals of those that ran before.
type live struct {
	mu     sync.Mutex
	runs   []*running
	totals map[string]*report.Mapping // by mapping id
	order  []string
}

func (l *live) set(runs []*running) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if runs == nil { // the phase ended: add its mappings' counts to the totals
		for _, r := range l.runs {
			s := r.counters.Snapshot()
			t := l.totals[r.spec.Id]
			if t == nil {
				m := report.MappingFromSnapshot(r.spec.Id, r.spec.Function, r.source(), esm.Snapshot{})
				t = &m
				l.totals[r.spec.Id] = t
				l.order = append(l.order, r.spec.Id)
			}
			t.Add(s)
		}
	}
	l.runs = runs
}

func (l *live) statuses() []report.MappingStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]report.MappingStatus, len(l.runs))
	for i, r := range l.runs {
		out[i] = report.MappingStatus{Name: r.spec.Id, Function: r.spec.Function, Snapshot: r.counters.Snapshot()}
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

// source names what the mapping reads: its topic or queue.
func (r *running) source() string {
	if r.spec.Kind == samstack.KafkaMapping {
		return r.spec.Topics[0]
	}
	return r.spec.Queue
}

// pipelineName is the report's name of p: "direct" for one function, "fan-out" for more.
func pipelineName(p *pipeline) string {
	if len(p.functions) == 1 {
		return "direct"
	}
	return "fan-out"
}

// loadAndReport runs a phase per pipeline with its load, then the fault phase, and reports.
func (s *stack) loadAndReport(ctx context.Context) error {
	for name := range s.c.Loads {
		if name == "" {
			continue
		}
		found := false
		for _, p := range s.pipelines {
			found = found || p.functions[0] == name
		}
		if !found {
			var firsts []string
			for _, p := range s.pipelines {
				firsts = append(firsts, p.functions[0])
			}
			return fmt.Errorf("--load %s=N: no pipeline starts at %s; pipelines start at %s", name, name, strings.Join(firsts, ", "))
		}
	}
	if len(s.pipelines) == 0 {
		return fmt.Errorf("--load: %s has no Kafka event source mapping, so no pipeline to load", s.c.Template)
	}
	if s.api == nil {
		return fmt.Errorf("--load needs the template parameter %s: klt local counts what each record applied at the local orders API it serves there", ordersAPIParam)
	}
	started := time.Now()
	lv := &live{totals: map[string]*report.Mapping{}}
	prog, err := report.NewProgress(s.out, lv.statuses)
	if err != nil {
		return err
	}
	rec, err := report.NewRecorder(lv.statuses, report.WithPartitionLag(lv.partitionLag))
	if err != nil {
		return err
	}
	// While the display runs, klt's own lines go through it, which writes them between two of
	// its blocks: its goroutine and this one share the writer.
	out := s.out
	s.out = prog
	prog.Start()
	rec.Start()
	recStart := time.Now()
	stopped := false
	stopDisplay := func() {
		if !stopped {
			stopped = true
			prog.Stop()
			rec.Stop() // a second Stop is a no-op
			s.out = out
		}
	}
	defer stopDisplay()

	var results, faultResults []pipelineResult
	firstID := int64(1)
	for i, p := range s.pipelines {
		n := s.c.Loads.get(p.functions[0], 0)
		if n == 0 {
			continue
		}
		fmt.Fprintf(s.out, "klt local: %s (%s): %d records\n", pipelineName(p), p.name, n)
		res, err := s.phase(ctx, fmt.Sprintf("p%d", i+1), []*pipeline{p}, n, firstID, false, lv.set)
		if err != nil {
			return err
		}
		results = append(results, res...)
		firstID += int64(n)
	}
	// The charts show the load phases: the fault phase mostly waits out a timeout.
	rec.Stop()
	recEnd := time.Now()
	if s.c.Faults > 0 {
		fmt.Fprintf(s.out, "klt local: every pipeline at once, %d records with faults: a poison record, a transient orders API error, a timed-out invocation\n", s.c.Faults)
		res, err := s.phase(ctx, "faults", s.pipelines, s.c.Faults, firstID, true, lv.set)
		if err != nil {
			return err
		}
		faultResults = res
	}
	stopDisplay()

	rep := s.report(started, results, faultResults, lv, rec)
	// A function that applies orders is charted by the orders it applied each second, which
	// the API saw one by one; its mapping counts records only as each batch ends (a batch of
	// the direct pipeline takes 30 s).
	for _, p := range s.pipelines {
		rep.Series.Throughput[p.applier()] = appliedSeries(s.api.applications(), p.applier(), recStart, recEnd)
	}
	if err := rep.Validate(); err != nil {
		return err
	}
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
	var bad []string
	for _, r := range append(append([]pipelineResult(nil), results...), faultResults...) {
		if r.lost > 0 || r.appliedTwice > 0 || r.orderViolations > 0 {
			bad = append(bad, fmt.Sprintf("%s (%s): lost %d %v, applied twice %d, order violations %d",
				pipelineName(r.pipe), r.phase, r.lost, r.lostKeys, r.appliedTwice, r.orderViolations))
		}
	}
	_, _, unreadable := s.drains.snapshot()
	for _, u := range unreadable {
		bad = append(bad, "unreadable dead letter: "+u)
	}
	if len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintf(s.out, "klt local: %s\n", b)
		}
		return fmt.Errorf("the stack lost, duplicated or reordered records (%d problems above)", len(bad))
	}
	return nil
}

// report assembles the report of a run.
func (s *stack) report(started time.Time, results, faultResults []pipelineResult, lv *live, rec *report.Recorder) *report.Report {
	rep := &report.Report{
		Tool: "klt local", Version: strings.TrimPrefix(base.VersionLine(), "klt "), Started: started, Template: s.c.Template,
		Machine: report.ThisMachine(),
		Scenario: report.Scenario{
			Keys: s.c.Keys, WorkMS: int(s.c.Work.Milliseconds()),
			Rate: s.c.Rate,
		},
		Series: rec.Series(),
	}
	if len(s.pipelines) > 0 {
		rep.Scenario.Partitions = s.c.Partitions.get(s.pipelines[0].topic, 1)
	}
	add := func(r pipelineResult, suffix, phase string) {
		p := report.Pipeline{
			Name: pipelineName(r.pipe) + suffix, Functions: r.pipe.functions, Phase: phase,
			Records: int64(r.records), Seconds: r.seconds,
			Lost: report.Observed(int64(r.lost)), AppliedTwice: report.Observed(int64(r.appliedTwice)), OrderViolations: report.Observed(int64(r.orderViolations)),
			DeadLettered: int64(r.deadLettered), Filtered: int64(r.filtered), Retried: int64(r.retried),
			DuplicateRequests: int64(r.duplicates), FailedInvocations: r.failedInvocations,
		}
		if r.seconds > 0 {
			p.RecordsPerSecond = float64(r.records-r.filtered) / r.seconds
		}
		if len(r.latencies) > 0 {
			p.SetLatencies(r.latencies)
		}
		rep.Pipelines = append(rep.Pipelines, p)
	}
	for _, r := range results {
		add(r, "", report.PhaseLoad)
	}
	for _, r := range faultResults {
		add(r, ", with faults", report.PhaseFaults)
		for _, f := range r.faults {
			rep.Faults = append(rep.Faults, report.Fault{
				Pipeline: pipelineName(r.pipe) + ", with faults", Fault: f.fault, Record: reportRecord(f.record),
				Outcome: f.outcome, Attempts: f.attempts, Applied: report.Observed(int64(f.applied)), Fate: faultFate(f.applied, f.outcome),
			})
		}
	}
	var direct, fan string
	for _, r := range results {
		if len(r.pipe.functions) == 1 && direct == "" {
			direct = pipelineName(r.pipe)
		}
		if len(r.pipe.functions) > 1 && fan == "" {
			fan = pipelineName(r.pipe)
		}
	}
	if direct != "" && fan != "" {
		if sp, err := report.NewSpeedup(rep.Pipelines, fan, direct); err == nil {
			rep.Speedup = sp
		}
	}
	for _, id := range lv.order {
		rep.Mappings = append(rep.Mappings, *lv.totals[id])
	}
	return rep
}

// appliedSeries returns the orders function fn applied per second over the trailing second,
// every half second from start to end, as seconds since start.
func appliedSeries(apps []application, fn string, start, end time.Time) []report.Point {
	var at []time.Time
	for _, a := range apps {
		if a.function == fn {
			at = append(at, a.at)
		}
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	out := []report.Point{}
	lo, hi := 0, 0
	for t := start.Add(500 * time.Millisecond); !t.After(end.Add(500 * time.Millisecond)); t = t.Add(500 * time.Millisecond) {
		for hi < len(at) && !at[hi].After(t) {
			hi++
		}
		for lo < hi && !at[lo].After(t.Add(-time.Second)) {
			lo++
		}
		out = append(out, report.Point{t.Sub(start).Seconds(), float64(hi - lo)})
	}
	return out
}

// reportRecord writes a recordKey (topic-partition-offset) as the report does,
// topic-partition@offset.
func reportRecord(key string) string {
	tp, off, ok := splitKey(key)
	if !ok {
		return key
	}
	return fmt.Sprintf("%s@%d", tp, off)
}

// serve runs every mapping with the template's consumer groups until ctx is done: the stack
// is up for klt produce, klt consume, the AWS CLI.
func (s *stack) serve(ctx context.Context) error {
	lv := &live{totals: map[string]*report.Mapping{}}
	fmt.Fprintf(s.out, "klt local: Kafka at %s (plaintext)", strings.Join(s.brokers, ","))
	for _, k := range []string{"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB"} {
		if v := s.ls.Endpoints[k]; v != "" {
			fmt.Fprintf(s.out, ", %s=%s", k, v)
		}
	}
	topic := "TOPIC"
	if len(s.pipelines) > 0 {
		topic = s.pipelines[0].topic
	}
	fmt.Fprintf(s.out, "\nklt local: function logs in %s\n", s.logDir)
	fmt.Fprintf(s.out, "klt local: produce with: klt produce --brokers %s --no-tls --topic %s < records.jsonl; Ctrl-C stops\n",
		strings.Join(s.brokers, ","), topic)
	runs, err := s.startMappings(ctx, s.specs, "", time.Time{})
	lv.set(runs)
	if err != nil {
		return err
	}
	prog, err := report.NewProgress(s.out, lv.statuses)
	if err != nil {
		return err
	}
	out := s.out
	s.out = prog // klt's own lines go between the display's blocks (see loadAndReport)
	defer func() { s.out = out }()
	prog.Start()
	var runErr error
	for _, r := range runs {
		if err := <-r.done; err != nil && ctx.Err() == nil {
			runErr = fmt.Errorf("mapping %s: %w", r.spec.Id, err)
		}
	}
	prog.Stop()
	return runErr
}

// faultFate is the report's fate of a fault's record (a stopgap until the ledger gives fates).
func faultFate(applied int, outcome string) string {
	switch {
	case applied > 0:
		return report.FateApplied
	case strings.HasPrefix(outcome, "sent to"):
		return report.FateFailureQueue
	}
	return report.FateLost
}
