package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/kafkalambda/toolkit/esm"
)

// Report is what one klt local run found. Its JSON form is report.json; the field names are
// part of the contract (scripts and the demo's checks read them).
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
	// Scenario is the load that was produced.
	Scenario Scenario `json:"scenario"`
	// Pipelines are the measured paths through the stack, in the order they ran.
	Pipelines []Pipeline `json:"pipelines"`
	// Speedup compares two of the pipelines; null when the run had no pair to compare.
	// [NewSpeedup] computes it.
	Speedup *Speedup `json:"speedup"`
	// Faults are the injected faults and where each went.
	Faults []Fault `json:"faults"`
	// Mappings are the event source mappings' totals at the end of the run.
	Mappings []Mapping `json:"mappings"`
	// Series are the time series the [Recorder] took.
	Series Series `json:"series"`
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

// Scenario is the load a run produced.
type Scenario struct {
	Records    int     `json:"records"`    // records produced per pipeline
	Keys       int     `json:"keys"`       // distinct record keys
	WorkMS     int     `json:"work_ms"`    // time the handler spends on each record, in milliseconds
	Partitions int     `json:"partitions"` // partitions of the source topic
	Rate       float64 `json:"rate"`       // records per second produced; 0 means as fast as possible
}

// Pipeline is one measured path through the stack: Kafka -> Lambda ("direct"), or Kafka ->
// Lambda -> SQS FIFO -> Lambda ("fan-out").
type Pipeline struct {
	// Name identifies the pipeline ("direct", "fan-out").
	Name string `json:"name"`
	// Functions are the functions a record goes through, in order.
	Functions []string `json:"functions"`
	// Phase is "load" for a run measured for throughput, "faults" for one with injected
	// faults, whose throughput says little (it waits out a timeout): the report's figures and
	// bars show the "load" pipelines only.
	Phase string `json:"phase"`
	// Records is how many records went in.
	Records int64 `json:"records"`
	// Seconds is the time from the first record produced to the last one applied.
	Seconds float64 `json:"seconds"`
	// RecordsPerSecond is Records / Seconds.
	RecordsPerSecond float64 `json:"records_per_second"`
	// LatencyMsP50 and LatencyMsP99 are percentiles of the time from a record's production to
	// its application, in milliseconds; [Pipeline.SetLatencies] computes them.
	LatencyMsP50 float64 `json:"latency_ms_p50"`
	LatencyMsP99 float64 `json:"latency_ms_p99"`
	// Lost counts records produced and never applied (nor dead-lettered).
	Lost int64 `json:"lost"`
	// AppliedTwice counts records whose side effect was applied more than once.
	AppliedTwice int64 `json:"applied_twice"`
	// OrderViolations counts records applied before an earlier record of the same key.
	OrderViolations int64 `json:"order_violations"`
	// DeadLettered counts records sent to an on-failure destination or dead-letter queue.
	DeadLettered int64 `json:"dead_lettered"`
	// Filtered counts records dropped by FilterCriteria.
	Filtered int64 `json:"filtered"`
	// Retried counts records that took more than one attempt at their side effect.
	Retried int64 `json:"retried"`
	// DuplicateRequests counts requests for a side effect already applied, which the
	// downstream absorbed by its idempotency key (a function died between the side effect and
	// recording it as done, and its record was delivered again).
	DuplicateRequests int64 `json:"duplicate_requests"`
	// FailedInvocations counts invocations that failed (function error, timeout, crash).
	FailedInvocations int64 `json:"failed_invocations"`
}

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
	if len(ms) == 0 {
		return fmt.Errorf("report: pipeline %q: no latencies", p.Name)
	}
	s := slices.Clone(ms)
	for i, v := range s {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("report: pipeline %q: latency %d is %v, want a finite value >= 0", p.Name, i, v)
		}
	}
	slices.Sort(s)
	p50, err := Percentile(s, 50)
	if err != nil {
		return fmt.Errorf("report: pipeline %q: %w", p.Name, err)
	}
	p99, err := Percentile(s, 99)
	if err != nil {
		return fmt.Errorf("report: pipeline %q: %w", p.Name, err)
	}
	p.LatencyMsP50, p.LatencyMsP99 = p50, p99
	return nil
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
	// Outcome says where the record ended up, "sent to ConsumerFailureQueue".
	Outcome string `json:"outcome"`
	// Attempts is how many invocations carried the record.
	Attempts int `json:"attempts"`
	// Applied is how many times its side effect was applied (1 for a record that recovered,
	// 0 for one given up on).
	Applied int `json:"applied"`
}

// Mapping is one event source mapping's totals at the end of a run.
type Mapping struct {
	Name         string `json:"name"`     // the mapping's logical ID in the template
	Function     string `json:"function"` // the function it invokes
	Source       string `json:"source"`   // the topic or queue it reads
	In           int64  `json:"in"`
	Done         int64  `json:"done"`
	Failed       int64  `json:"failed"`
	Filtered     int64  `json:"filtered"`
	DeadLettered int64  `json:"dead_lettered"`
	Invocations  int64  `json:"invocations"`
	Errors       int64  `json:"errors"`
}

// MappingFromSnapshot builds a Mapping from a mapping's final counters.
func MappingFromSnapshot(name, function, source string, s esm.Snapshot) Mapping {
	return Mapping{
		Name: name, Function: function, Source: source,
		In: s.In, Done: s.Succeeded, Failed: s.ReportedFailed + s.ErrorFailed, Filtered: s.Filtered, DeadLettered: s.DeadLettered,
		Invocations: s.Invocations, Errors: s.Errors,
	}
}

// Point is one sample of a time series: seconds since the recording started, and the value.
// It is written as a JSON array [t, value].
type Point [2]float64

// Series are the time series of a run.
type Series struct {
	// Throughput holds, per function, records done per second over the trailing second.
	Throughput map[string][]Point `json:"throughput"`
	// Lag holds, per partition ("topic-partition"), records not yet committed.
	Lag map[string][]Point `json:"lag"`
}

// Validate reports the first thing that makes r unfit to write: a missing tool name, a
// pipeline without a name or a duplicate one, a speedup or fault naming an unknown pipeline,
// or a negative count. NaN and infinite numbers are reported by [Report.JSON].
func (r *Report) Validate() error {
	if r.Tool == "" {
		return errors.New("report: report has no tool name")
	}
	seen := map[string]bool{}
	for i, p := range r.Pipelines {
		if p.Name == "" {
			return fmt.Errorf("report: pipelines[%d] has no name", i)
		}
		if seen[p.Name] {
			return fmt.Errorf("report: pipelines[%d]: duplicate name %q", i, p.Name)
		}
		seen[p.Name] = true
		for _, c := range []struct {
			name string
			v    int64
		}{{"records", p.Records}, {"lost", p.Lost}, {"applied_twice", p.AppliedTwice},
			{"order_violations", p.OrderViolations}, {"dead_lettered", p.DeadLettered},
			{"filtered", p.Filtered}, {"retried", p.Retried}, {"duplicate_requests", p.DuplicateRequests}, {"failed_invocations", p.FailedInvocations}} {
			if c.v < 0 {
				return fmt.Errorf("report: pipeline %q: %s is %d, want >= 0", p.Name, c.name, c.v)
			}
		}
	}
	if s := r.Speedup; s != nil {
		if !seen[s.Of] || !seen[s.Over] {
			return fmt.Errorf("report: speedup of %q over %q names a pipeline the report does not have", s.Of, s.Over)
		}
	}
	for i, f := range r.Faults {
		if !seen[f.Pipeline] {
			return fmt.Errorf("report: faults[%d] names pipeline %q, which the report does not have", i, f.Pipeline)
		}
	}
	return nil
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
	if c.Faults == nil {
		c.Faults = []Fault{}
	}
	if c.Mappings == nil {
		c.Mappings = []Mapping{}
	}
	if c.Series.Throughput == nil {
		c.Series.Throughput = map[string][]Point{}
	}
	if c.Series.Lag == nil {
		c.Series.Lag = map[string][]Point{}
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
