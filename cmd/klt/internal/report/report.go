package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kafkalambda/toolkit/esm"
)

// Report is what one klt local run found. Its JSON form is report.json; the field names are
// part of the contract (scripts and the demo's checks read them). A name keeps its meaning
// from one version to the next; a quantity whose meaning changed got a new name.
//
// Every counter the report shows is defined in the report itself (see [Definitions]): the text
// and the page print a legend of one line per counter.
type Report struct {
	// Tool names the program that made the report, "klt local".
	Tool string `json:"tool"`
	// Version is the toolkit's version (a module version or a VCS revision).
	Version string `json:"version"`
	// Started is when the run began. It is written in RFC 3339 form.
	Started time.Time `json:"started"`
	// Template is the path of the SAM template that was run.
	Template string `json:"template"`
	// Machine is where the run happened; [ThisMachine] fills it.
	Machine Machine `json:"machine"`
	// Scenario is the load that was produced. Each pipeline's own record count is its
	// Pipeline.Records: there is no single count for the run.
	Scenario Scenario `json:"scenario"`
	// Interrupted is set when the run was stopped before it ended (Ctrl-C): the figures are
	// those of the moment it stopped, and records may still have been on their way.
	Interrupted bool `json:"interrupted"`
	// Pipelines are the measured paths through the stack, in the order they ran.
	Pipelines []Pipeline `json:"pipelines"`
	// Speedup compares two of the pipelines; null when the run had no pair to compare.
	// [NewSpeedup] computes it.
	Speedup *Speedup `json:"speedup"`
	// Faults are the injected faults and where each went.
	Faults []Fault `json:"faults"`
	// Records follows, one by one, the records of the fault phase and every other record that
	// was not simply succeeded once: its fate, its deliveries, where it went.
	Records []RecordFate `json:"record_fates"`
	// FailedMessages lists each message that reached a failure queue, an on-failure
	// destination or a dead-letter queue during the run, as klt read it there.
	FailedMessages []FailedMessage `json:"failed_messages"`
	// Mappings are the event source mappings' totals at the end of the run (summed over the
	// phases a mapping ran in).
	Mappings []Mapping `json:"mappings"`
	// Functions says how each function ran: its execution environments, the most
	// invocations each ran at once, and, for a Lambda Managed Instances function, the
	// invocations that ran past their deadline.
	Functions []Function `json:"functions"`
	// Series are the time series the [Recorder] took, over every phase.
	Series Series `json:"series"`
	// Logs says, per function, whether its log lines carry the request ID of the invocation
	// they belong to and a correlation ID ([LogCensus]).
	Logs []FunctionLogs `json:"function_logs"`
}

// Machine describes the computer a run happened on.
type Machine struct {
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	CPUs   int    `json:"cpus"` // runtime.NumCPU
}

// ThisMachine describes the machine the program runs on.
func ThisMachine() Machine {
	return Machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU()}
}

// Scenario is the load a run produced. How many records went through each pipeline is that
// pipeline's Records (the field "records" of earlier versions, one number for every
// pipeline, was wrong when they differed, and is gone).
type Scenario struct {
	// Source says where the records came from: "records.jsonl, 3 times", "a generator of
	// 500 records over 50 keys".
	Source     string  `json:"source"`
	Keys       int     `json:"keys"`       // distinct record keys; 0 when not known
	WorkMS     int     `json:"work_ms"`    // time the handler spends on each record, in milliseconds; 0 when not set
	Partitions int     `json:"partitions"` // partitions of the source topic
	Rate       float64 `json:"rate"`       // records per second produced; 0 means as fast as possible
}

// Pipeline is one measured path through the stack: Kafka -> Lambda ("direct"), or Kafka ->
// Lambda -> SQS FIFO -> Lambda ("fan-out"), in one phase of the run.
type Pipeline struct {
	// Name identifies the pipeline ("direct", "fan-out", "direct, with faults").
	Name string `json:"name"`
	// Functions are the functions a record goes through, in order.
	Functions []string `json:"functions"`
	// Mappings are the event source mappings a record goes through, in order (their names
	// in Report.Mappings).
	Mappings []string `json:"mappings"`
	// Phase is "load" for a run measured for throughput, "faults" for one with injected
	// faults, whose throughput says little (it waits out a timeout): the report's figures and
	// bars show the "load" pipelines only.
	Phase string `json:"phase"`
	// Records is how many records went in.
	Records int64 `json:"records"`
	// Seconds is the time from the first record produced to the last one's fate.
	Seconds float64 `json:"seconds"`
	// RecordsPerSecond is the records that were not filtered, divided by Seconds.
	RecordsPerSecond float64 `json:"records_per_second"`
	// LatencyMsP50 and LatencyMsP99 are percentiles of the time from a record's production to
	// its application, in milliseconds; [Pipeline.SetLatencies] computes them.
	LatencyMsP50 float64 `json:"latency_ms_p50"`
	LatencyMsP99 float64 `json:"latency_ms_p99"`
	// Lost counts records produced whose fate klt did not observe: not applied, not
	// filtered, not in a failure queue, not dead-lettered. Null when klt could not observe
	// the pipeline's side effects (Unobservable says why).
	Lost Count `json:"lost"`
	// AppliedTwice counts records whose side effect was applied more than once, on any
	// resource. Null when not observable.
	AppliedTwice Count `json:"applied_twice"`
	// OrderViolations counts records applied before an earlier record of the same key, on
	// any resource. Null when not observable.
	OrderViolations Count `json:"order_violations"`
	// FailureQueue counts records a function of the pipeline sent to its own failure queue
	// (a batch handler's sink: the mapping saw a success), as klt read them on that queue.
	// Null when the pipeline has no failure queue klt can read.
	FailureQueue Count `json:"failure_queue"`
	// DeadLettered counts records a mapping of the pipeline gave up on: sent to its
	// on-failure destination (Kafka) or moved to its queue's dead-letter queue (SQS).
	DeadLettered int64 `json:"dead_lettered"`
	// FailureQueueMessages counts the messages klt read on the pipeline's failure queues,
	// every one: a record there twice (its batch delivered again after the function had sent
	// it) counts twice, where FailureQueue counts it once. Null when FailureQueue is, and in
	// reports of earlier versions. [Pipeline.SetFailedMessages] sets it.
	FailureQueueMessages Count `json:"failure_queue_messages"`
	// DeadLetterMessages counts the messages klt read on the pipeline's on-failure
	// destinations and dead-letter queues, every one (an on-failure record counts once per
	// record it names). Null in reports of earlier versions.
	DeadLetterMessages Count `json:"dead_letter_messages"`
	// Duplicates names each record that reached one queue of the pipeline (failure queue,
	// on-failure destination, dead-letter queue) more than once.
	Duplicates []Duplicate `json:"duplicates"`
	// Filtered counts records dropped by FilterCriteria.
	Filtered int64 `json:"filtered"`
	// Retried counts records delivered more than once (by any mapping of the pipeline).
	Retried int64 `json:"retried"`
	// DuplicateRequests counts requests for a side effect already applied, which the
	// downstream absorbed by its idempotency key (a function died between the side effect and
	// recording it as done, and its record was delivered again).
	DuplicateRequests int64 `json:"duplicate_requests"`
	// FailedInvocations counts invocations that failed as a whole (function error, timeout,
	// crash).
	FailedInvocations int64 `json:"failed_invocations"`
	// Fates counts the records by fate (the Fate constants): each record has exactly one, so
	// they sum to Records. Empty when the caller did not follow records one by one.
	Fates map[string]int64 `json:"fates"`
	// Observed says what klt could observe of this pipeline, one statement each: "items
	// written to OrdersTable, by the record attribute".
	Observed []string `json:"observed"`
	// Unobservable says what klt could not observe, one statement each: "calls to
	// https://api.example.com leave the stack". A null count needs one.
	Unobservable []string `json:"unobservable"`
	// Resources are the pipeline's side effects, per resource klt observed.
	Resources []Resource `json:"resources"`
	// Predicted is the throughput `klt plan` predicts for this pipeline from the run's
	// measurements, beside RecordsPerSecond; null for a fault phase, and when klt did not
	// predict (Predicted.Error says when it could not).
	Predicted *Predicted `json:"predicted"`
}

// Fates of a record (Pipeline.Fates, RecordFate.Fate).
const (
	FateApplied      = "applied"       // its side effect was observed (once or more: see applied twice)
	FateSucceeded    = "succeeded"     // the mappings report it succeeded; klt could not observe a side effect
	FateFiltered     = "filtered"      // dropped by FilterCriteria, never delivered
	FateFailureQueue = "failure queue" // a function sent it to its own failure queue
	FateDeadLettered = "dead-lettered" // a mapping gave up on it: on-failure destination or dead-letter queue
	FateUnfinished   = "unfinished"    // still on its way when the run stopped (interrupted)
	FateLost         = "lost"          // none of the above was observed
)

// Fates lists the fates in the order the report prints them.
var Fates = []string{FateApplied, FateSucceeded, FateFiltered, FateFailureQueue, FateDeadLettered, FateUnfinished, FateLost}

// Resource is what one pipeline did to one resource of the stack (a table, a queue, a topic,
// the HTTP sink), as klt observed it there.
type Resource struct {
	// Resource names it: the table's or queue's logical ID, the topic, the sink's parameter.
	Resource string `json:"resource"`
	// Kind is "table", "queue", "topic" or "http".
	Kind string `json:"kind"`
	// Via says how klt told the input record of each side effect: "record attribute",
	// "source header", "Idempotency-Key".
	Via string `json:"via"`
	// Applied counts the input records whose side effect klt saw there, each once.
	Applied Count `json:"applied"`
	// AppliedTwice counts the records whose side effect klt saw there more than once.
	AppliedTwice Count `json:"applied_twice"`
	// OrderViolations counts the records applied there before an earlier record of their key.
	OrderViolations Count `json:"order_violations"`
	// LatencyMsP50 and LatencyMsP99 are percentiles of the time from a record's production to
	// its first side effect there; null when there was none.
	LatencyMsP50 *float64 `json:"latency_ms_p50"`
	LatencyMsP99 *float64 `json:"latency_ms_p99"`
}

// SetLatencies sets the resource's latency percentiles from per-record latencies in
// milliseconds, as [Pipeline.SetLatencies] does.
func (r *Resource) SetLatencies(ms []float64) error {
	p := Pipeline{Name: r.Resource}
	if err := p.SetLatencies(ms); err != nil {
		return err
	}
	r.LatencyMsP50, r.LatencyMsP99 = &p.LatencyMsP50, &p.LatencyMsP99
	return nil
}

// RecordFate is what happened to one input record.
type RecordFate struct {
	// Pipeline is the pipeline (Pipeline.Name) the record went into.
	Pipeline string `json:"pipeline"`
	// Record identifies it, "topic-partition@offset".
	Record string `json:"record"`
	// Key is the record's key, as text (shortened).
	Key string `json:"key"`
	// Fate is one of the Fate constants.
	Fate string `json:"fate"`
	// Attempts is how many invocations carried the record (its deliveries, by every mapping
	// of the pipeline), as klt observed them. 0 only for a record never delivered (filtered,
	// or unfinished).
	Attempts int `json:"attempts"`
	// Applied is how many times its side effect was seen, on the resource that saw it most
	// often: 1 for a record applied once on each of its resources, 2 or more for one applied
	// twice (null when not observable).
	Applied Count `json:"applied"`
	// Where says where it went: "OrdersTable", "sent to ConsumerFailureQueue".
	Where string `json:"where"`
	// Why is the reason the last failing delivery gave, or the fault injected; empty for a
	// record that never failed.
	Why string `json:"why"`
}

// FailedMessage is one message klt read on a failure queue, an on-failure destination or a
// dead-letter queue.
type FailedMessage struct {
	// Pipeline is the pipeline (Pipeline.Name) whose record it carries; empty when klt could
	// not tell.
	Pipeline string `json:"pipeline"`
	// Queue names where it was read: the queue's logical ID or the topic.
	Queue string `json:"queue"`
	// Kind is "failure queue" (a function's own), "on-failure destination" (a Kafka mapping's)
	// or "dead-letter queue" (an SQS queue's redrive).
	Kind string `json:"kind"`
	// Record is the input record it carries, "topic-partition@offset"; empty when unknown.
	Record string `json:"record"`
	// Why is the error or condition the message gives.
	Why string `json:"why"`
	// At is when klt read it.
	At time.Time `json:"at"`
	// Body is the message's body, shortened to at most 1,024 characters in report.json (and
	// 120 in the text and the page).
	Body string `json:"body"`
}

// Kinds of failed message (FailedMessage.Kind).
const (
	FailureQueueKind         = "failure queue"
	OnFailureDestinationKind = "on-failure destination"
	DeadLetterQueueKind      = "dead-letter queue"
)

// loadPipelines returns the pipelines whose Phase is not "faults".
func loadPipelines(ps []Pipeline) []Pipeline {
	var out []Pipeline
	for _, p := range ps {
		if p.Phase != PhaseFaults {
			out = append(out, p)
		}
	}
	return out
}

// Phases of a pipeline's run (Pipeline.Phase).
const (
	PhaseLoad   = "load"
	PhaseFaults = "faults"
)

// SetLatencies sets LatencyMsP50 and LatencyMsP99 from per-record latencies in milliseconds,
// in any order (ms is not modified). It fails on an empty slice or a value that is negative or
// not a number.
func (p *Pipeline) SetLatencies(ms []float64) error {
	p50, p99, err := P50P99(ms)
	if err != nil {
		return fmt.Errorf("report: pipeline %q: %w", p.Name, err)
	}
	p.LatencyMsP50, p.LatencyMsP99 = p50, p99
	return nil
}

// P50P99 returns the 50th and 99th percentiles ([Percentile]) of vs, in any order (vs is not
// modified). It fails on an empty slice or a value that is negative or not a finite number.
func P50P99(vs []float64) (p50, p99 float64, err error) {
	if len(vs) == 0 {
		return 0, 0, errors.New("no values")
	}
	s := slices.Clone(vs)
	for i, v := range s {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, 0, fmt.Errorf("value %d is %v, want a finite value >= 0", i, v)
		}
	}
	slices.Sort(s)
	if p50, err = Percentile(s, 50); err != nil {
		return 0, 0, err
	}
	if p99, err = Percentile(s, 99); err != nil {
		return 0, 0, err
	}
	return p50, p99, nil
}

// Percentile returns the p-th percentile (0 <= p <= 100) of sorted, an ascending slice, by the
// nearest-rank method: the smallest value such that at least p percent of the values are less
// than or equal to it. The result is always one of the values (no interpolation), so the p99
// of 100 latencies is the 99th smallest and the p100 the largest; p 0 gives the smallest.
// It fails on an empty or unsorted slice, a NaN in it, or p out of range.
func Percentile(sorted []float64, p float64) (float64, error) {
	if len(sorted) == 0 {
		return 0, errors.New("report: percentile of no values")
	}
	if math.IsNaN(p) || p < 0 || p > 100 {
		return 0, fmt.Errorf("report: percentile %v out of range [0, 100]", p)
	}
	for i, v := range sorted {
		if math.IsNaN(v) {
			return 0, fmt.Errorf("report: percentile: value %d is NaN", i)
		}
		if i > 0 && v < sorted[i-1] {
			return 0, fmt.Errorf("report: percentile: values not sorted at index %d (%v after %v)", i, v, sorted[i-1])
		}
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1], nil
}

// Speedup is how much faster one pipeline ran than another, in records per second.
type Speedup struct {
	Of    string  `json:"of"`    // the faster pipeline's name, "fan-out"
	Over  string  `json:"over"`  // the pipeline it is compared with, "direct"
	Ratio float64 `json:"ratio"` // Of's records_per_second / Over's
}

// NewSpeedup compares pipeline of with pipeline over, both named in pipelines. It fails when
// either is missing or over's records_per_second is not positive.
func NewSpeedup(pipelines []Pipeline, of, over string) (*Speedup, error) {
	a, b := findPipeline(pipelines, of), findPipeline(pipelines, over)
	if a == nil {
		return nil, fmt.Errorf("report: speedup: no pipeline named %q", of)
	}
	if b == nil {
		return nil, fmt.Errorf("report: speedup: no pipeline named %q", over)
	}
	if !(b.RecordsPerSecond > 0) || math.IsInf(b.RecordsPerSecond, 0) {
		return nil, fmt.Errorf("report: speedup: pipeline %q has records_per_second %v, want > 0", over, b.RecordsPerSecond)
	}
	return &Speedup{Of: of, Over: over, Ratio: a.RecordsPerSecond / b.RecordsPerSecond}, nil
}

func findPipeline(ps []Pipeline, name string) *Pipeline {
	for i := range ps {
		if ps[i].Name == name {
			return &ps[i]
		}
	}
	return nil
}

// Fault is one injected fault and where it went.
type Fault struct {
	// Pipeline is the pipeline the fault was injected into.
	Pipeline string `json:"pipeline"`
	// Fault names the kind: "poison", "transient", "timeout".
	Fault string `json:"fault"`
	// Record identifies the record, "topic-partition@offset".
	Record string `json:"record"`
	// Fate is the record's fate, one of the Fate constants.
	Fate string `json:"fate"`
	// Outcome says where the record ended up, "sent to ConsumerFailureQueue".
	Outcome string `json:"outcome"`
	// Attempts is how many invocations carried the record (its deliveries), as klt observed
	// them: at least 1 for a record that was not filtered.
	Attempts int `json:"attempts"`
	// Applied is how many times its side effect was applied, on the resource that saw it most
	// often (1 for a record that recovered, 0 for one given up on); null when not observable.
	Applied Count `json:"applied"`
}

// Mapping is one event source mapping's totals at the end of a run. Its counters are the
// mapping's own ([esm.Counters], of records for Kafka and of messages for SQS), except
// FailureQueue, which klt observed on the function's failure queue.
type Mapping struct {
	Name     string `json:"name"`     // the mapping's logical ID in the template
	Function string `json:"function"` // the function it invokes
	Source   string `json:"source"`   // the topic or queue it reads
	// OnFailure names where the mapping puts what it gives up on: its on-failure
	// destination (Kafka) or its queue's dead-letter queue (SQS); empty when none.
	OnFailure string `json:"on_failure"`
	// The counters, defined as in [esm.Counters] (and in the report's legend).
	In             int64 `json:"in"`
	Filtered       int64 `json:"filtered"`
	Delivered      int64 `json:"delivered"`
	Succeeded      int64 `json:"succeeded"`
	ReportedFailed int64 `json:"reported_failed"`
	ErrorFailed    int64 `json:"error_failed"`
	Retried        int64 `json:"retried"`
	DeadLettered   int64 `json:"dead_lettered"`
	InFlight       int64 `json:"in_flight"`
	Lag            int64 `json:"lag"`
	Invocations    int64 `json:"invocations"`
	Errors         int64 `json:"errors"`
	// FailureQueue counts what the function sent to its own failure queue while this mapping
	// ran it (counted among Succeeded: the function reported success for them), observed by
	// klt; null when the function has no failure queue klt reads.
	FailureQueue Count `json:"failure_queue"`
	// MetricGroups are the MetricsConfig groups the mapping enables ("EventCount",
	// "ErrorCount", "KafkaMetrics").
	MetricGroups []string `json:"metric_groups"`
	// Metrics are the figures of those groups as CloudWatch would show them for the run,
	// sorted by name; [NewMetrics] builds them.
	Metrics []Metric `json:"metrics"`
	// Config is the configuration the mapping ran with; null when not known.
	Config *MappingConfig `json:"config"`
	// Load is what its invocations measured in the run's load phases; null when it ran in
	// none.
	Load *MappingLoad `json:"load"`
}

// MappingFromSnapshot builds a Mapping from a mapping's final counters (FailureQueue is
// left unobservable, OnFailure and the metrics empty: the caller sets them).
func MappingFromSnapshot(name, function, source string, s esm.Snapshot) Mapping {
	m := Mapping{Name: name, Function: function, Source: source}
	m.Add(s)
	return m
}

// Add adds the counters of s (a phase's) to m's.
func (m *Mapping) Add(s esm.Snapshot) {
	m.In += s.In
	m.Filtered += s.Filtered
	m.Delivered += s.Delivered
	m.Succeeded += s.Succeeded
	m.ReportedFailed += s.ReportedFailed
	m.ErrorFailed += s.ErrorFailed
	m.Retried += s.Retried
	m.DeadLettered += s.DeadLettered
	m.InFlight += s.InFlight
	m.Lag += s.Lag
	m.Invocations += s.Invocations
	m.Errors += s.Errors
}

// Metric is one CloudWatch metric of a mapping's MetricsConfig, over the run.
type Metric struct {
	Name      string  `json:"name"`      // "PolledEventCount", "MaxOffsetLag"...
	Statistic string  `json:"statistic"` // the CloudWatch statistic it is read with: "Sum", "Maximum"
	Value     float64 `json:"value"`
}

// NewMetrics builds a mapping's metrics from values (name -> value, as the emulated mapping's
// Metrics returns them), sorted by name. Each metric's statistic is statistics[name], or,
// when statistics does not name it, [CloudWatchStatistic]'s. It fails on a metric without a
// statistic, or a value that is negative or not a finite number.
func NewMetrics[V int64 | float64](values map[string]V, statistics map[string]string) ([]Metric, error) {
	var out []Metric
	for _, name := range slices.Sorted(maps.Keys(values)) {
		v := float64(values[name])
		st := statistics[name]
		if st == "" {
			st = CloudWatchStatistic(name)
		}
		if st == "" {
			return nil, fmt.Errorf("report: metric %s has no statistic", name)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("report: metric %s is %v, want a finite value >= 0", name, v)
		}
		out = append(out, Metric{Name: name, Statistic: st, Value: v})
	}
	return out, nil
}

// CloudWatchStatistic is the statistic a mapping's metric is read with in CloudWatch, as the
// emulated mappings compute them: "Sum" for the counts (names ending in "Count") and for
// SumOffsetLag (OffsetLag summed over the partitions), "Maximum" for MaxOffsetLag (OffsetLag
// at its largest partition); "" for a name it does not know.
func CloudWatchStatistic(name string) string {
	switch {
	case name == "MaxOffsetLag":
		return "Maximum"
	case name == "SumOffsetLag", strings.HasSuffix(name, "Count"):
		return "Sum"
	}
	return ""
}

// Point is one sample of a time series: seconds since the recording started, and the value.
// It is written as a JSON array [t, value].
type Point [2]float64

// Series are the time series of a run, over every phase.
type Series struct {
	// Throughput holds, per function, records succeeded per second over the trailing second.
	Throughput map[string][]Point `json:"throughput"`
	// Applied holds, per function, side effects klt observed per second over the trailing
	// second (for the functions whose side effects it observes).
	Applied map[string][]Point `json:"applied"`
	// Lag holds, per partition ("topic-partition") or queue, records not yet delivered.
	Lag map[string][]Point `json:"lag"`
	// Phases mark the phases of the run on the same time axis, in order.
	Phases []PhaseSpan `json:"phases"`
}

// PhaseSpan is one phase of a run on the series' time axis (seconds since the recording
// started).
type PhaseSpan struct {
	Name  string  `json:"name"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// JSON returns r as indented JSON, the content of report.json. Nil slices and maps are written
// as [] and {} so that readers need not handle null for them.
func (r *Report) JSON() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	c := *r
	if c.Pipelines == nil {
		c.Pipelines = []Pipeline{}
	}
	c.Pipelines = slices.Clone(c.Pipelines)
	for i := range c.Pipelines {
		if c.Pipelines[i].Functions == nil {
			c.Pipelines[i].Functions = []string{}
		}
	}
	for i := range c.Pipelines {
		q := &c.Pipelines[i]
		q.Mappings = orEmpty(q.Mappings)
		q.Observed = orEmpty(q.Observed)
		q.Unobservable = orEmpty(q.Unobservable)
		q.Resources = orEmpty(q.Resources)
		q.Duplicates = orEmpty(q.Duplicates)
		if q.Fates == nil {
			q.Fates = map[string]int64{}
		}
		if q.Predicted != nil {
			pr := *q.Predicted
			pr.Notes = orEmpty(pr.Notes)
			q.Predicted = &pr
		}
	}
	c.Faults = orEmpty(c.Faults)
	c.Records = orEmpty(c.Records)
	c.FailedMessages = slices.Clone(orEmpty(c.FailedMessages))
	for i := range c.FailedMessages {
		c.FailedMessages[i].Body = shorten(c.FailedMessages[i].Body, jsonBodyMax)
	}
	c.Mappings = slices.Clone(orEmpty(c.Mappings))
	for i := range c.Mappings {
		c.Mappings[i].MetricGroups = orEmpty(c.Mappings[i].MetricGroups)
		c.Mappings[i].Metrics = orEmpty(c.Mappings[i].Metrics)
	}
	if c.Series.Applied == nil {
		c.Series.Applied = map[string][]Point{}
	}
	c.Series.Phases = orEmpty(c.Series.Phases)
	if c.Series.Throughput == nil {
		c.Series.Throughput = map[string][]Point{}
	}
	if c.Series.Lag == nil {
		c.Series.Lag = map[string][]Point{}
	}
	c.Logs = slices.Clone(orEmpty(c.Logs))
	for i := range c.Logs {
		c.Logs[i].Detail = orEmpty(c.Logs[i].Detail)
	}
	c.Started = c.Started.Truncate(time.Second)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&c); err != nil {
		return nil, fmt.Errorf("report: report.json: %w", err)
	}
	return buf.Bytes(), nil
}

// Write writes report.json, report.html and report.svg into dir, creating it if needed.
func (r *Report) Write(dir string) error {
	js, err := r.JSON()
	if err != nil {
		return err
	}
	var page, pic bytes.Buffer
	if err := r.HTML(&page); err != nil {
		return err
	}
	if err := r.SVG(&pic); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: report directory: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"report.json", js}, {"report.html", page.Bytes()}, {"report.svg", pic.Bytes()}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}

// orEmpty returns s, or an empty slice for nil: report.json writes [] rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// jsonBodyMax and textBodyMax are the characters of a failed message's body that report.json
// and the text and page keep.
const (
	jsonBodyMax = 1024
	textBodyMax = 120
)

// shorten returns s cut to at most n characters (runes), ending in "…" when cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
