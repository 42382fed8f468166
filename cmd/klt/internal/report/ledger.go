package report

// This file is where the report reads klt local's ledger: a pipeline's figures, the records
// that were not simply applied once, and the messages of its failure and dead-letter queues
// come from the ledger's account of the pipeline (package ledger), here, in one place.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
)

// LedgerPipeline is one pipeline of one phase of klt local as its ledger accounted for it
// (Account), with what the ledger does not hold: the pipeline's name in the report, its
// functions and mappings, its queues, the phase's time and the mappings' error counts.
type LedgerPipeline struct {
	Name      string   // the report's name: "direct", "fan-out, with faults"
	Functions []string // in the order records go through them
	Mappings  []string // their names in Report.Mappings, in the same order
	// Queues are the logical IDs of the failure and dead-letter queues its records can reach.
	Queues map[string]bool
	// Faulted is set for the phase with injected faults.
	Faulted bool
	// Seconds is from the first record produced to the last fate.
	Seconds float64
	// FailedInvocations counts the invocations of its functions that failed with an error.
	FailedInvocations int64
	Account           ledger.PipelineAccount
	// Ledger is where the account came from: the records' production times.
	Ledger *ledger.Ledger
}

// last is the pipeline's last function, whose side effects apply its records.
func (lp *LedgerPipeline) last() string { return lp.Functions[len(lp.Functions)-1] }

// AddPipeline adds lp to r: its figures, its records that were not simply applied once
// (every record of a faulted phase) and the messages read on its failure and dead-letter
// queues, every one counted and duplicates named.
func (r *Report) AddPipeline(lp LedgerPipeline) {
	a := lp.Account
	rp := Pipeline{
		Name: lp.Name, Functions: lp.Functions, Mappings: lp.Mappings, Phase: PhaseLoad,
		Records: int64(len(a.Records)), Seconds: lp.Seconds,
		Lost: CountOf(a.Lost), AppliedTwice: CountOf(a.AppliedTwice), OrderViolations: CountOf(a.OrderViolations),
		DeadLettered: int64(a.Fates[ledger.FateDeadLettered]), Filtered: int64(a.Fates[ledger.FateFiltered]),
		Observed: a.Observed, Unobservable: a.Unobserved, Fates: map[string]int64{},
		FailedInvocations: lp.FailedInvocations,
	}
	if lp.Faulted {
		rp.Phase = PhaseFaults
	}
	rp.FailureQueue = Observed(int64(a.Fates[ledger.FateFailureQueue]))
	for _, ra := range a.Records {
		rp.Fates[FateOf(ra.Fate, a)]++
		for _, n := range ra.Deliveries {
			if n > 1 { // delivered again by one mapping (each of a fan-out's mappings delivers it once)
				rp.Retried++
				break
			}
		}
	}
	for _, res := range a.Resources {
		rp.DuplicateRequests += int64(res.Repeats)
		rp.Resources = append(rp.Resources, resourceOf(lp.Ledger, a, res, lp.last()))
	}
	if rp.Seconds > 0 {
		rp.RecordsPerSecond = float64(rp.Records-rp.Filtered) / rp.Seconds
	}
	if len(a.Latencies) > 0 {
		rp.SetLatencies(a.Latencies)
	}
	r.Pipelines = append(r.Pipelines, rp)
	for _, ra := range a.Records {
		fate := FateOf(ra.Fate, a)
		applied := AppliedOf(ra, a, lp.last())
		if lp.Faulted || fate != FateApplied || !applied.Is(1) || Deliveries(ra) > len(lp.Mappings) {
			r.Records = append(r.Records, RecordFate{
				Pipeline: lp.Name, Record: ra.ID.String(), Key: shortKey(ra.Key), Fate: fate,
				Attempts: Deliveries(ra), Applied: applied, Where: WhereOf(ra, lp.Queues, lp.last()), Why: WhyOf(ra, lp.Queues),
			})
		}
		// A message the lister read belongs to the pipeline whose function sent it (the send
		// and the listing share its MessageId): two pipelines whose functions share a failure
		// queue (a --variant and its function) each list their own message, not the other's
		// as a duplicate. A message whose send klt did not see stays with every pipeline of
		// its queue.
		sender := map[string]string{}
		all := ra.Effects // the account's: of the pipeline's functions; the ledger's: every send
		if lp.Ledger != nil {
			_, _, all = lp.Ledger.History(ra.ID)
		}
		for _, e := range all {
			if e.Op != ledger.OpListed && e.ID != "" && e.Function != "" {
				sender[e.ID] = e.Function
			}
		}
		for _, e := range ra.Effects {
			if fn := sender[e.ID]; fn != "" && !slices.Contains(lp.Functions, fn) {
				continue
			}
			if e.Failure != "" && e.Op == ledger.OpListed && lp.Queues[e.Resource] {
				r.FailedMessages = append(r.FailedMessages, FailedMessage{
					Pipeline: lp.Name, Queue: e.Resource, Kind: failedKind(e), Record: ra.ID.String(), Why: e.Failure, At: e.At, Body: e.Body,
				})
			}
		}
	}
	// Every message on its queues counted, duplicates named, from the messages just listed.
	r.Pipelines[len(r.Pipelines)-1].SetFailedMessages(r.FailedMessages)
}

// AddFailedMessages adds to r every message the ledger l holds as read on a failure queue,
// an on-failure destination or a dead-letter queue, of no pipeline in particular: the
// summary of a served stack.
func (r *Report) AddFailedMessages(l *ledger.Ledger) {
	for _, e := range l.FailureEffects() {
		if e.Op != ledger.OpListed {
			continue // the function's SendMessage: the lister's reading of it is listed
		}
		r.FailedMessages = append(r.FailedMessages, FailedMessage{
			Queue: e.Resource, Kind: failedKind(e), Record: e.Record.String(), Why: e.Failure, At: e.At, Body: e.Body,
		})
	}
}

// Deliveries is how many invocations carried the record, by every mapping of the pipeline.
func Deliveries(ra ledger.RecordAccount) int {
	n := 0
	for _, d := range ra.Deliveries {
		n += d
	}
	return n
}

// FateOf is the report's name of a ledger fate in the account a: a record that succeeded is
// applied where its side effects are observable.
func FateOf(fate string, a ledger.PipelineAccount) string {
	switch fate {
	case ledger.FateSucceeded:
		if a.Lost.Observed {
			return FateApplied
		}
		return FateSucceeded
	case ledger.FateFiltered:
		return FateFiltered
	case ledger.FateFailureQueue:
		return FateFailureQueue
	case ledger.FateDeadLettered:
		return FateDeadLettered
	case ledger.FateInFlight:
		return FateUnfinished
	}
	return FateLost
}

// CountOf is the report's Count of a ledger measure.
func CountOf(m ledger.Measure) Count {
	if !m.Observed {
		return Unobservable
	}
	return Observed(int64(m.N))
}

// AppliedOf counts the record's applications by the pipeline's last function: at the
// resource where it was applied most often, so that a record applied once at each of two
// resources (an idempotency table and a sink) counts once.
func AppliedOf(ra ledger.RecordAccount, a ledger.PipelineAccount, last string) Count {
	if !a.Lost.Observed {
		return Unobservable
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
	return Observed(int64(n))
}

// WhereOf says where a record went in a pipeline whose last function is last and whose
// failure and dead-letter queues are queues: the resources of its last function's effects,
// and the queues its failures reached.
func WhereOf(ra ledger.RecordAccount, queues map[string]bool, last string) string {
	var out []string
	for _, e := range ra.Effects {
		w := e.Resource
		switch {
		case e.Failure != "" && !queues[e.Resource]:
			continue // a queue of another pipeline's functions, which read the same record
		case e.Failure != "":
			w = "sent to " + e.Resource
		case !ledger.ByLast(e, last) || !ledger.Applies(e):
			continue
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return strings.Join(out, ", ")
}

// WhyOf says why a record reached one of the failure or dead-letter queues, as the message
// there says, or how the accounting told its fate.
func WhyOf(ra ledger.RecordAccount, queues map[string]bool) string {
	for _, e := range ra.Effects {
		if e.Failure != "" && queues[e.Resource] {
			return "at " + e.Resource + ": " + e.Failure
		}
	}
	return ra.Why
}

// failedKind is the report's kind of a failure effect.
func failedKind(e ledger.Effect) string {
	switch e.Via {
	case ledger.ViaEnvelope:
		return FailureQueueKind
	case ledger.ViaOnFailure:
		return OnFailureDestinationKind
	}
	return DeadLetterQueueKind
}

// shortKey is a record key as the report shows it.
func shortKey(k []byte) string {
	s := string(k)
	if len(s) > 64 {
		s = s[:61] + "..."
	}
	return s
}

// resourceOf is the report's account of one resource.
func resourceOf(l *ledger.Ledger, a ledger.PipelineAccount, res ledger.ResourceAccount, last string) Resource {
	r := Resource{
		Resource: res.Resource.Name, Kind: res.Resource.Kind,
		Applied: Observed(int64(res.Applied)), AppliedTwice: Observed(int64(res.AppliedTwice)),
		OrderViolations: Observed(int64(res.OrderViolations)),
	}
	var ms []float64
	for _, ra := range a.Records {
		in, ok := l.Input(ra.ID)
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

// FatesText sums up a pipeline's fates, for a server fault's outcome.
func FatesText(a ledger.PipelineAccount) string {
	var parts []string
	for _, f := range []string{ledger.FateSucceeded, ledger.FateFiltered, ledger.FateFailureQueue, ledger.FateDeadLettered, ledger.FateInFlight, ledger.FateLost} {
		if n := a.Fates[f]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, FateOf(f, a)))
		}
	}
	return fmt.Sprintf("%d records: ", len(a.Records)) + strings.Join(parts, ", ")
}
