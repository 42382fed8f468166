package ledger

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kafkalambda/toolkit/esm"
)

// Accounting turns the ledger's facts into what the report says of each pipeline: for every
// input record its fate, and for each resource where the pipeline's last function's side
// effects are observed, what was applied, applied twice and out of order. Nothing is
// assumed: where no side effect of the last function can be observed, lost, applied twice
// and order violations are unobservable, never 0.

// Fates of an input record (RecordAccount.Fate).
const (
	FateFiltered     = "filtered"                // a mapping's FilterCriteria dropped it
	FateSucceeded    = "succeeded"               // applied (an effect observed), or succeeded at the last mapping when nothing is observable
	FateFailureQueue = "sent to a failure queue" // a function's batch sink sent it to a failure queue (its envelope was seen)
	FateDeadLettered = "dead-lettered"           // seen at an on-failure destination or a dead-letter queue
	FateInFlight     = "in flight"               // none of the above yet: still on its way, as far as klt saw
	FateLost         = "lost"                    // its way ended without an effect, a failure queue or a dead-letter queue
)

// Resource is a place where side effects are observed: effect.Kind and effect.Resource.
type Resource struct {
	Kind, Name string
}

func (r Resource) String() string { return r.Kind + " " + r.Name }

// Spec is what accounting needs to know of a pipeline (see pipelinesOf): its mappings
// in order, their functions, and where the last function's side effects can be observed.
type Spec struct {
	Name      string   // the pipeline's name, for the report
	Topic     string   // the topic its Kafka mapping reads: its input records are those klt produced there
	Mappings  []string // the mappings' names (esm.WithName), the Kafka mapping first
	Functions []string // the function of each mapping, in the same order
	// Destinations names, per mapping, the resource of its on-failure destination or, for an
	// SQS mapping, its queue's dead-letter queue ("" or absent: none). A record given up on
	// by a mapping with none is lost; with one, it is dead-lettered once seen there.
	Destinations map[string]Resource
	// Resources are where the last function's side effects are observed (the tables, queues
	// and topics of its environment that klt watches, the HTTP sink when its parameter is
	// given to it). Resources at which the ledger holds an effect of that function are added.
	Resources []Resource
}

// Measure is a count that is either observed or not: an unobservable count is never 0.
type Measure struct {
	N        int
	Observed bool
}

func Observed(n int) Measure { return Measure{N: n, Observed: true} }

// Unobservable is the measure of what klt cannot see.
var Unobservable = Measure{}

func (m Measure) String() string {
	if !m.Observed {
		return "unobservable"
	}
	return strconv.Itoa(m.N)
}

// RecordAccount is what happened to one input record in one pipeline.
type RecordAccount struct {
	ID   RecordID
	Key  []byte
	Fate string // one of the fate constants
	Why  string // how the fate was told: "applied at http OrdersApiUrl", "given up by M (RetryAttemptsExhausted), no destination"
	// Deliveries counts the invocations that carried the record, per mapping (by name): its
	// attempts, as the mappings' Delivered events say.
	Deliveries map[string]int
	Effects    []Effect // its effects at the pipeline's resources, failure and dead-letter queues
	// Latency is from the record's production to its first effect at a resource of the last
	// function (0 without one).
	Latency time.Duration
}

// ResourceAccount is what the last function applied at one resource.
type ResourceAccount struct {
	Resource        Resource
	Applied         int // records with at least one effect there that is not a Repeat
	AppliedTwice    int // records with two effects there of the same Target, neither a Repeat
	Repeats         int // effects the resource absorbed as repeats (Idempotency-Key, a failed conditional write)
	OrderViolations int // records applied there before an earlier-produced record of the same key

	twice, late map[RecordID]bool // the records counted in AppliedTwice and OrderViolations
}

// PipelineAccount is the accounting of one pipeline in one phase.
type PipelineAccount struct {
	Pipeline string
	Phase    string
	Records  []RecordAccount // in produce order
	// Totals per fate (every fate constant is present, 0 or more).
	Fates map[string]int
	// Attempts is the total of every record's deliveries.
	Attempts int
	// Resources are the last function's observed resources, sorted by kind and name.
	Resources []ResourceAccount
	// Lost, AppliedTwice and OrderViolations count records (one applied twice at two
	// resources counts once); they are observed only where some side effect of the last
	// function is (Resources is not empty), unobservable otherwise.
	Lost, AppliedTwice, OrderViolations Measure
	// Latencies are the records' latencies in milliseconds, sorted.
	Latencies []float64
	// Observed and Unobserved say, in words, what klt could see of the pipeline and what not:
	// "applied: observed at topic out (source header); order: observed".
	Observed, Unobserved []string
	// Unattributed counts the side effects at the pipeline's resources whose input record klt
	// could not tell (they are in the ledger, never dropped).
	Unattributed int
}

// Account accounts for the input records of phase ("" for all) in the pipeline spec.
func Account(l *Ledger, spec Spec, phase string) PipelineAccount {
	a := PipelineAccount{Pipeline: spec.Name, Phase: phase, Fates: map[string]int{}}
	for _, f := range []string{FateFiltered, FateSucceeded, FateFailureQueue, FateDeadLettered, FateInFlight, FateLost} {
		a.Fates[f] = 0
	}
	last := ""
	if n := len(spec.Functions); n > 0 {
		last = spec.Functions[n-1]
	}
	res := resourcesOf(l, spec, last)
	isRes := map[Resource]bool{}
	for _, r := range res {
		isRes[r] = true
	}
	for _, in := range l.InputsOf(phase) {
		if in.ID.Topic != spec.Topic {
			continue
		}
		ra := accountRecord(l, spec, in, last, isRes)
		a.Records = append(a.Records, ra)
		a.Fates[ra.Fate]++
		for _, n := range ra.Deliveries {
			a.Attempts += n
		}
		if ra.Latency > 0 {
			a.Latencies = append(a.Latencies, float64(ra.Latency.Microseconds())/1000)
		}
	}
	sort.Float64s(a.Latencies)
	for _, r := range res {
		a.Resources = append(a.Resources, accountResource(r, a.Records, last))
	}
	for _, u := range l.UnattributedEffects() {
		if isRes[Resource{u.Kind, u.Resource}] {
			a.Unattributed++
		}
	}
	a.say(res, spec)
	return a
}

// say fills the totals that depend on observability, and the sentences about it.
func (a *PipelineAccount) say(res []Resource, spec Spec) {
	steps := 0
	for _, r := range a.Records {
		for _, n := range r.Deliveries {
			steps += n
		}
	}
	if len(a.Records) > 0 && steps == 0 && a.Fates[FateFiltered] == 0 {
		a.Unobserved = append(a.Unobserved, "deliveries: no event of the mappings seen")
	}
	var dests []string
	for _, m := range spec.Mappings {
		if d, ok := spec.Destinations[m]; ok && d.Name != "" {
			dests = append(dests, d.String())
		}
	}
	if len(dests) > 0 {
		a.Observed = append(a.Observed, "dead-lettered: observed at "+strings.Join(dests, ", "))
	}
	if len(res) == 0 {
		a.Lost, a.AppliedTwice, a.OrderViolations = Unobservable, Unobservable, Unobservable
		last := ""
		if n := len(spec.Functions); n > 0 {
			last = spec.Functions[n-1]
		}
		a.Unobserved = append(a.Unobserved, "no side effect of "+last+" observable: lost, applied twice and order unobservable")
		return
	}
	// A record applied twice, or out of order, at two resources is one record of the total.
	twice, late := map[RecordID]bool{}, map[RecordID]bool{}
	var where []string
	for _, r := range a.Resources {
		for id := range r.twice {
			twice[id] = true
		}
		for id := range r.late {
			late[id] = true
		}
		where = append(where, r.Resource.String()+" ("+strings.Join(viasAt(a.Records, r.Resource), ", ")+")")
	}
	a.Lost, a.AppliedTwice, a.OrderViolations = Observed(a.Fates[FateLost]), Observed(len(twice)), Observed(len(late))
	a.Observed = append(a.Observed, "applied: observed at "+strings.Join(where, "; "), "order: observed per record key")
	if a.Unattributed > 0 {
		a.Unobserved = append(a.Unobserved, fmt.Sprintf("%d side effects whose input record could not be told", a.Unattributed))
	}
}

// viasAt returns how the records' identities were read at resource r ("nothing seen yet"
// when no effect is there).
func viasAt(records []RecordAccount, r Resource) []string {
	seen := map[string]bool{}
	var out []string
	for _, rec := range records {
		for _, e := range rec.Effects {
			if e.Kind == r.Kind && e.Resource == r.Name && !seen[e.Via] {
				seen[e.Via] = true
				out = append(out, e.Via)
			}
		}
	}
	if len(out) == 0 {
		return []string{"nothing seen yet"}
	}
	sort.Strings(out)
	return out
}

// resourcesOf returns the resources of spec, and those where the ledger holds an effect of
// function fn, sorted.
func resourcesOf(l *Ledger, spec Spec, fn string) []Resource {
	seen := map[Resource]bool{}
	var out []Resource
	add := func(r Resource) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, r := range spec.Resources {
		add(r)
	}
	dest := map[Resource]bool{}
	for _, d := range spec.Destinations {
		dest[d] = true
	}
	for _, r := range l.ResourcesOf(fn) {
		if !dest[r] {
			add(r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Applies reports whether e counts as an application at its resource: not a failure, and
// not the bookkeeping of an idempotency entry (its claim, or its release when the handler
// failed); its completion is the application.
func Applies(e Effect) bool {
	return e.Failure == "" && e.Op != OpClaim && e.Op != OpRelease && e.Op != OpSunk
}

// ByLast reports whether e is an effect of function last, or of no function klt could
// name (a record on an output topic whose producer the caller did not say).
func ByLast(e Effect, last string) bool { return e.Function == last || e.Function == "" }

// accountRecord tells the fate of input record in in pipeline spec.
func accountRecord(l *Ledger, spec Spec, in Input, last string, isRes map[Resource]bool) RecordAccount {
	_, steps, effects := l.History(in.ID)
	ra := RecordAccount{ID: in.ID, Key: in.Key, Deliveries: map[string]int{}}
	inPipe, fnInPipe, isDest := map[string]bool{}, map[string]bool{}, map[Resource]bool{}
	for _, m := range spec.Mappings {
		inPipe[m] = true
	}
	for _, f := range spec.Functions {
		fnInPipe[f] = true
	}
	for _, d := range spec.Destinations {
		isDest[d] = true
	}
	lastStep := map[string]Step{}
	filteredBy := ""
	for _, s := range steps {
		if !inPipe[s.Mapping] {
			continue
		}
		switch s.Kind {
		case esm.Delivered:
			ra.Deliveries[s.Mapping]++
		case esm.Filtered:
			filteredBy = s.Mapping
		}
		lastStep[s.Mapping] = s
	}
	var applied, failed, dead *Effect
	for i := range effects {
		e := &effects[i]
		r := Resource{e.Kind, e.Resource}
		switch {
		case e.Failure != "" && e.Via == ViaEnvelope && (e.Function == "" || fnInPipe[e.Function]):
			if failed == nil {
				failed = e
			}
		case e.Failure != "" && isDest[r]:
			if dead == nil {
				dead = e
			}
		case isRes[r] && ByLast(*e, last) && Applies(*e) && !e.Repeat:
			if applied == nil || e.At.Before(applied.At) {
				applied = e
			}
		case !isRes[r]:
			continue
		}
		ra.Effects = append(ra.Effects, *e)
	}
	if applied != nil {
		ra.Latency = applied.At.Sub(in.At)
	}
	ra.Fate, ra.Why = fateOf(spec, filteredBy, failed, dead, applied, lastStep, len(isRes) > 0)
	return ra
}

// fateOf tells a record's fate from what was seen of it.
func fateOf(spec Spec, filteredBy string, failed, dead, applied *Effect, lastStep map[string]Step, observable bool) (string, string) {
	switch {
	case filteredBy != "":
		return FateFiltered, "filtered by " + filteredBy
	case failed != nil:
		return FateFailureQueue, fmt.Sprintf("at %s: %s", failed.Resource, failed.Failure)
	case dead != nil:
		return FateDeadLettered, fmt.Sprintf("at %s: %s", dead.Resource, dead.Failure)
	case applied != nil:
		return FateSucceeded, fmt.Sprintf("applied at %s %s (%s)", applied.Kind, applied.Resource, applied.Via)
	}
	if len(spec.Mappings) == 0 {
		return FateInFlight, "the pipeline has no mapping"
	}
	lastMapping := spec.Mappings[len(spec.Mappings)-1]
	if s, ok := lastStep[lastMapping]; ok && s.Kind == esm.Succeeded {
		if observable {
			return FateLost, "succeeded at " + lastMapping + " with no side effect observed"
		}
		return FateSucceeded, "succeeded at " + lastMapping + " (no side effect observable)"
	}
	for _, m := range spec.Mappings {
		s, ok := lastStep[m]
		if !ok || s.Kind != esm.GaveUp {
			continue
		}
		if d, ok := spec.Destinations[m]; ok && d.Name != "" {
			return FateInFlight, fmt.Sprintf("given up by %s (%s), not yet seen at %s", m, s.Reason, d)
		}
		return FateLost, fmt.Sprintf("given up by %s (%s) with no destination", m, s.Reason)
	}
	for i := len(spec.Mappings) - 1; i >= 0; i-- {
		if s, ok := lastStep[spec.Mappings[i]]; ok {
			return FateInFlight, fmt.Sprintf("last seen %s at %s", s.Kind, spec.Mappings[i])
		}
	}
	return FateInFlight, "not yet delivered"
}

// accountResource counts what the last function applied at r, from the records' effects.
func accountResource(r Resource, records []RecordAccount, last string) ResourceAccount {
	ra := ResourceAccount{Resource: r, twice: map[RecordID]bool{}, late: map[RecordID]bool{}}
	type firstApplied struct {
		at time.Time
		ok bool
	}
	first := make([]firstApplied, len(records))
	for i, rec := range records {
		n, twice := 0, false
		targets := map[string]bool{}
		for _, e := range rec.Effects {
			if e.Kind != r.Kind || e.Resource != r.Name || !ByLast(e, last) {
				continue
			}
			if e.Repeat {
				ra.Repeats++
				continue
			}
			if !Applies(e) {
				continue
			}
			n++
			twice = twice || targets[e.Target]
			targets[e.Target] = true
			if !first[i].ok || e.At.Before(first[i].at) {
				first[i] = firstApplied{e.At, true}
			}
		}
		if n > 0 {
			ra.Applied++
		}
		if twice {
			ra.AppliedTwice++
			ra.twice[rec.ID] = true
		}
	}
	// Order per key: records are in produce order; one applied before the latest first
	// application of the earlier records of its key overtook one of them.
	latest := map[string]time.Time{}
	for i, rec := range records {
		if rec.Key == nil || !first[i].ok {
			continue
		}
		k := string(rec.Key)
		if t, ok := latest[k]; ok && first[i].at.Before(t) {
			ra.OrderViolations++
			ra.late[rec.ID] = true
		}
		if first[i].at.After(latest[k]) {
			latest[k] = first[i].at
		}
	}
	return ra
}

// TimedOutAsLost makes the records still in flight when a phase timed out lost: the mappings
// never reported them done.
func (a *PipelineAccount) TimedOutAsLost() {
	for i := range a.Records {
		if a.Records[i].Fate == FateInFlight {
			a.Records[i].Fate = FateLost
			a.Records[i].Why = "still on its way when the phase timed out (--phase-timeout)"
			a.Fates[FateInFlight]--
			a.Fates[FateLost]++
		}
	}
	a.Lost = Observed(a.Fates[FateLost])
}
