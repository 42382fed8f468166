package report

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Validate reports the first thing that makes r unfit to write, and in particular the first
// place where the report contradicts itself:
//
//   - a missing tool name, a pipeline without a name or a duplicate one, a speedup, fault,
//     record or failed message naming an unknown pipeline, a pipeline naming an unknown
//     mapping, a negative count;
//   - a count left unobservable in a pipeline that does not say what it could not observe;
//   - a pipeline whose fates do not sum to its records, or disagree with its own lost,
//     filtered, failure queue or dead-lettered counts;
//   - a record or fault with no delivery although it was not filtered (attempts 0 for a
//     poison record), or a filtered one that was delivered;
//   - a mapping whose counters do not add up (more succeeded, filtered and dead-lettered than
//     taken in; more succeeded than delivered; failures or records in flight beyond the
//     deliveries; more errors than invocations; a failure queue beyond what succeeded), or
//     records still in flight or not yet delivered (lag) at the end of a run that was not
//     interrupted;
//   - a metric without a statistic, or phases that overlap or run backwards;
//   - a mapping's configuration or load figures that are out of range or disagree with each
//     other or with its counters (a p50 above its p99, a mean concurrency above the most
//     that ran at once, fuller batches than its batch size), a prediction for a fault phase,
//     one whose ratio is not measured over predicted, or a finite run predicted faster than
//     the steady rate.
//
// NaN and infinite numbers in the pipelines are reported by [Report.JSON].
func (r *Report) Validate() error {
	if r.Tool == "" {
		return errors.New("report: report has no tool name")
	}
	for _, l := range r.Logs {
		if err := l.validate(); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	mappings := map[string]bool{}
	for i := range r.Mappings {
		m := &r.Mappings[i]
		if m.Name == "" {
			return fmt.Errorf("report: mappings[%d] has no name", i)
		}
		if mappings[m.Name] {
			return fmt.Errorf("report: mappings[%d]: duplicate name %q", i, m.Name)
		}
		mappings[m.Name] = true
		if err := m.validate(r.Interrupted); err != nil {
			return err
		}
	}
	pipes := map[string]bool{}
	for i := range r.Pipelines {
		p := &r.Pipelines[i]
		if p.Name == "" {
			return fmt.Errorf("report: pipelines[%d] has no name", i)
		}
		if pipes[p.Name] {
			return fmt.Errorf("report: pipelines[%d]: duplicate name %q", i, p.Name)
		}
		pipes[p.Name] = true
		if err := p.validate(r.Interrupted); err != nil {
			return err
		}
		for _, m := range p.Mappings {
			if len(r.Mappings) > 0 && !mappings[m] {
				return fmt.Errorf("report: pipeline %q names mapping %q, which the report does not have", p.Name, m)
			}
		}
	}
	if s := r.Speedup; s != nil {
		if !pipes[s.Of] || !pipes[s.Over] {
			return fmt.Errorf("report: speedup of %q over %q names a pipeline the report does not have", s.Of, s.Over)
		}
	}
	if err := r.validateFunctions(); err != nil {
		return err
	}
	if err := r.validateRecords(pipes); err != nil {
		return err
	}
	if err := r.crossCheck(); err != nil {
		return err
	}
	return r.Series.validate()
}

// crossCheck compares the pipelines' counts with their mappings' where they count the same
// records: when every pipeline that names a mapping goes through that mapping alone, the
// mapping's dead-lettered, filtered and failure-queue counts are the sums of theirs (what
// the pipelines table says of a mapping's records, the mappings table says too).
func (r *Report) crossCheck() error {
	for i := range r.Mappings {
		m := &r.Mappings[i]
		var names []string
		var dead, filtered, fq int64
		fqSeen, alone := false, true
		for _, p := range r.Pipelines {
			if !slices.Contains(p.Mappings, m.Name) {
				continue
			}
			names = append(names, p.Name)
			alone = alone && len(p.Mappings) == 1
			dead += p.DeadLettered
			filtered += p.Filtered
			if n, ok := p.FailureQueue.Value(); ok {
				fq += n
				fqSeen = true
			}
		}
		if len(names) == 0 || !alone {
			continue
		}
		if dead != m.DeadLettered {
			return fmt.Errorf("report: pipelines %q say %d records dead-lettered by mapping %q, which says %d", names, dead, m.Name, m.DeadLettered)
		}
		if filtered != m.Filtered {
			return fmt.Errorf("report: pipelines %q say %d records filtered by mapping %q, which says %d", names, filtered, m.Name, m.Filtered)
		}
		if n, ok := m.FailureQueue.Value(); ok && fqSeen && n != fq {
			return fmt.Errorf("report: pipelines %q say %d records in %s's failure queue, mapping %q says %d", names, fq, m.Function, m.Name, n)
		}
	}
	return nil
}

// validateRecords checks the faults, the per-record fates and the failed messages.
func (r *Report) validateRecords(pipes map[string]bool) error {
	for i, f := range r.Faults {
		if !pipes[f.Pipeline] {
			return fmt.Errorf("report: faults[%d] names pipeline %q, which the report does not have", i, f.Pipeline)
		}
		if err := checkFate(fmt.Sprintf("faults[%d] (%s of %s)", i, f.Fault, f.Record), f.Fate, f.Attempts, f.Applied, r.Interrupted); err != nil {
			return err
		}
	}
	for i, rf := range r.Records {
		if !pipes[rf.Pipeline] {
			return fmt.Errorf("report: record_fates[%d] names pipeline %q, which the report does not have", i, rf.Pipeline)
		}
		if rf.Record == "" {
			return fmt.Errorf("report: record_fates[%d] has no record", i)
		}
		if err := checkFate(fmt.Sprintf("record_fates[%d] (%s)", i, rf.Record), rf.Fate, rf.Attempts, rf.Applied, r.Interrupted); err != nil {
			return err
		}
	}
	for i, m := range r.FailedMessages {
		if m.Pipeline != "" && !pipes[m.Pipeline] {
			return fmt.Errorf("report: failed_messages[%d] names pipeline %q, which the report does not have", i, m.Pipeline)
		}
		if m.Queue == "" {
			return fmt.Errorf("report: failed_messages[%d] has no queue", i)
		}
		if !slices.Contains([]string{FailureQueueKind, OnFailureDestinationKind, DeadLetterQueueKind}, m.Kind) {
			return fmt.Errorf("report: failed_messages[%d]: kind %q, want %q, %q or %q", i, m.Kind, FailureQueueKind, OnFailureDestinationKind, DeadLetterQueueKind)
		}
	}
	for i := range r.Pipelines {
		if err := r.Pipelines[i].validateMessages(r.FailedMessages); err != nil {
			return err
		}
	}
	return nil
}

// checkFate checks one record's fate against its deliveries.
func checkFate(what, fate string, attempts int, applied Count, interrupted bool) error {
	if !slices.Contains(Fates, fate) {
		return fmt.Errorf("report: %s: fate %q, want one of %q", what, fate, Fates)
	}
	if n, ok := applied.Value(); ok && n < 0 {
		return fmt.Errorf("report: %s: applied %d, want >= 0", what, n)
	}
	switch {
	case attempts < 0:
		return fmt.Errorf("report: %s: attempts %d, want >= 0", what, attempts)
	case fate == FateFiltered && attempts != 0:
		return fmt.Errorf("report: %s: filtered, yet delivered %d times (a filtered record is never delivered)", what, attempts)
	case fate == FateUnfinished && !interrupted:
		return fmt.Errorf("report: %s: unfinished in a run that was not interrupted", what)
	case fate != FateFiltered && fate != FateUnfinished && fate != FateLost && attempts == 0:
		return fmt.Errorf("report: %s: %s with no delivery (attempts 0): a record reaches that fate only through an invocation", what, fate)
	case fate == FateApplied && !applied.IsObserved():
		return fmt.Errorf("report: %s: applied, yet its applications are unobservable (fate %q says so)", what, FateSucceeded)
	case fate == FateApplied && applied.Is(0):
		return fmt.Errorf("report: %s: fate applied with applied 0", what)
	}
	return nil
}

func (p *Pipeline) validate(interrupted bool) error {
	for _, c := range []struct {
		name string
		v    int64
	}{{"records", p.Records}, {"dead_lettered", p.DeadLettered}, {"filtered", p.Filtered}, {"retried", p.Retried},
		{"duplicate_requests", p.DuplicateRequests}, {"failed_invocations", p.FailedInvocations}} {
		if c.v < 0 {
			return fmt.Errorf("report: pipeline %q: %s is %d, want >= 0", p.Name, c.name, c.v)
		}
	}
	if p.Phase != "" && p.Phase != PhaseLoad && p.Phase != PhaseFaults {
		return fmt.Errorf("report: pipeline %q: phase %q, want %q or %q", p.Name, p.Phase, PhaseLoad, PhaseFaults)
	}
	counts := []struct {
		name string
		c    Count
	}{{"lost", p.Lost}, {"applied_twice", p.AppliedTwice}, {"order_violations", p.OrderViolations}, {"failure_queue", p.FailureQueue}}
	for _, c := range counts {
		n, ok := c.c.Value()
		if ok && n < 0 {
			return fmt.Errorf("report: pipeline %q: %s is %d, want >= 0", p.Name, c.name, n)
		}
		if !ok && c.name != "failure_queue" && len(p.Unobservable) == 0 {
			return fmt.Errorf("report: pipeline %q: %s is unobservable, but the pipeline says nothing it could not observe", p.Name, c.name)
		}
	}
	if err := p.validateFates(interrupted); err != nil {
		return err
	}
	if p.Predicted != nil {
		if err := p.Predicted.validate(p); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for i, res := range p.Resources {
		if res.Resource == "" || seen[res.Kind+"/"+res.Resource] {
			return fmt.Errorf("report: pipeline %q: resources[%d]: no name or a duplicate (%q)", p.Name, i, res.Resource)
		}
		seen[res.Kind+"/"+res.Resource] = true
		for _, c := range []Count{res.Applied, res.AppliedTwice, res.OrderViolations} {
			if n, ok := c.Value(); ok && n < 0 {
				return fmt.Errorf("report: pipeline %q: resource %q: a count is %d, want >= 0", p.Name, res.Resource, n)
			}
		}
		a, aok := res.Applied.Value()
		t, tok := res.AppliedTwice.Value()
		if aok && tok && t > a {
			return fmt.Errorf("report: pipeline %q: resource %q: %d records applied twice of %d applied", p.Name, res.Resource, t, a)
		}
		if (res.LatencyMsP50 == nil) != (res.LatencyMsP99 == nil) {
			return fmt.Errorf("report: pipeline %q: resource %q: one latency percentile without the other", p.Name, res.Resource)
		}
	}
	return nil
}

// validateFates checks that the fates sum to the records and agree with the pipeline's counts.
func (p *Pipeline) validateFates(interrupted bool) error {
	if len(p.Fates) == 0 {
		return nil
	}
	var sum int64
	for f, n := range p.Fates {
		if !slices.Contains(Fates, f) {
			return fmt.Errorf("report: pipeline %q: fate %q, want one of %q", p.Name, f, Fates)
		}
		if n < 0 {
			return fmt.Errorf("report: pipeline %q: fate %q counts %d, want >= 0", p.Name, f, n)
		}
		sum += n
	}
	if sum != p.Records {
		return fmt.Errorf("report: pipeline %q: its fates sum to %d records, but %d went in", p.Name, sum, p.Records)
	}
	if p.Fates[FateUnfinished] > 0 && !interrupted {
		return fmt.Errorf("report: pipeline %q: %d records unfinished in a run that was not interrupted", p.Name, p.Fates[FateUnfinished])
	}
	agree := []struct {
		fate, field string
		c           Count
	}{{FateLost, "lost", p.Lost}, {FateFailureQueue, "failure_queue", p.FailureQueue},
		{FateDeadLettered, "dead_lettered", Observed(p.DeadLettered)}, {FateFiltered, "filtered", Observed(p.Filtered)}}
	for _, a := range agree {
		n, ok := a.c.Value()
		if !ok && p.Fates[a.fate] > 0 {
			return fmt.Errorf("report: pipeline %q: %d records of fate %q, but %s is unobservable", p.Name, p.Fates[a.fate], a.fate, a.field)
		}
		if ok && n != p.Fates[a.fate] {
			return fmt.Errorf("report: pipeline %q: %s is %d, but %d records have fate %q", p.Name, a.field, n, p.Fates[a.fate], a.fate)
		}
	}
	return nil
}

func (m *Mapping) validate(interrupted bool) error {
	for _, c := range []struct {
		name string
		v    int64
	}{{"in", m.In}, {"filtered", m.Filtered}, {"delivered", m.Delivered}, {"succeeded", m.Succeeded},
		{"reported_failed", m.ReportedFailed}, {"error_failed", m.ErrorFailed}, {"retried", m.Retried},
		{"dead_lettered", m.DeadLettered}, {"in_flight", m.InFlight}, {"lag", m.Lag}, {"invocations", m.Invocations}, {"errors", m.Errors}} {
		if c.v < 0 {
			return fmt.Errorf("report: mapping %q: %s is %d, want >= 0", m.Name, c.name, c.v)
		}
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("report: mapping %q: the counters do not add up: "+format, append([]any{m.Name}, args...)...)
	}
	switch {
	case m.Filtered+m.Succeeded+m.DeadLettered > m.In:
		return bad("filtered %d + succeeded %d + dead-lettered %d > in %d (each record taken in ends as one of them, or is still on its way)",
			m.Filtered, m.Succeeded, m.DeadLettered, m.In)
	case m.Succeeded > m.Delivered:
		return bad("succeeded %d > delivered %d (a record succeeds through a delivery)", m.Succeeded, m.Delivered)
	case m.ReportedFailed+m.ErrorFailed+m.InFlight > m.Delivered:
		return bad("reported failed %d + error failed %d + in flight %d > delivered %d (each is a delivery)",
			m.ReportedFailed, m.ErrorFailed, m.InFlight, m.Delivered)
	case m.Retried > m.Delivered:
		return bad("retried %d > delivered %d", m.Retried, m.Delivered)
	case m.Delivered-m.Retried > m.In-m.Filtered:
		return bad("%d records delivered at least once (delivered %d - retried %d), but only %d taken in and not filtered",
			m.Delivered-m.Retried, m.Delivered, m.Retried, m.In-m.Filtered)
	case m.Errors > m.Invocations:
		return bad("errors %d > invocations %d", m.Errors, m.Invocations)
	case m.Invocations > m.Delivered:
		return bad("invocations %d > delivered %d (an invocation carries at least one record)", m.Invocations, m.Delivered)
	case m.InFlight > 0 && !interrupted:
		return fmt.Errorf("report: mapping %q: %d records in flight at the end of a run that was not interrupted", m.Name, m.InFlight)
	case m.Lag > 0 && !interrupted:
		return fmt.Errorf("report: mapping %q: lag %d (records in its source not yet delivered) at the end of a run that was not interrupted", m.Name, m.Lag)
	}
	if n, ok := m.FailureQueue.Value(); ok && (n < 0 || n > m.Succeeded) {
		return bad("failure queue %d, want between 0 and succeeded %d (the function reported success for what it sent there)", n, m.Succeeded)
	}
	seen := map[string]bool{}
	for _, x := range m.Metrics {
		if x.Name == "" || seen[x.Name] {
			return fmt.Errorf("report: mapping %q: a metric without a name or twice (%q)", m.Name, x.Name)
		}
		seen[x.Name] = true
		if x.Statistic == "" {
			return fmt.Errorf("report: mapping %q: metric %s has no statistic", m.Name, x.Name)
		}
		if math.IsNaN(x.Value) || math.IsInf(x.Value, 0) || x.Value < 0 {
			return fmt.Errorf("report: mapping %q: metric %s is %v, want a finite value >= 0", m.Name, x.Name, x.Value)
		}
	}
	if len(m.Metrics) > 0 && len(m.MetricGroups) == 0 {
		return fmt.Errorf("report: mapping %q: metrics without the MetricsConfig groups that enable them", m.Name)
	}
	if m.Config != nil {
		if err := m.Config.validate(m.Name); err != nil {
			return err
		}
	}
	if m.Load != nil {
		return m.Load.validate(m)
	}
	return nil
}

func (s *Series) validate() error {
	last := math.Inf(-1)
	for i, ph := range s.Phases {
		if ph.Name == "" {
			return fmt.Errorf("report: series.phases[%d] has no name", i)
		}
		if math.IsNaN(ph.Start) || math.IsNaN(ph.End) || ph.Start > ph.End || ph.Start < last {
			return fmt.Errorf("report: series.phases[%d] (%s): from %v to %v, after a phase ending at %v: phases run forward, one after another", i, ph.Name, ph.Start, ph.End, last)
		}
		last = ph.End
	}
	return nil
}
