package report

// One test per contradiction a newcomer met in klt local's report (issue 19): each would have
// caught it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/esm"
	"golang.org/x/net/html"
)

// The live table showed `ConsumerSelfManagedMapping 500 483 0 ... records/s 0` for 27 s, then
// jumped: the display must move with each record as its response arrives (esm counts per
// record), and show the side effects klt observed per second.
func TestProgressCountsPerRecord(t *testing.T) {
	clk := newClock()
	var out bytes.Buffer
	var s esm.Snapshot
	var applied int64
	p, err := NewProgress(&out, func() []MappingStatus {
		return []MappingStatus{{Name: "ConsumerSelfManagedMapping", Snapshot: s, Applied: Observed(applied)}}
	}, Terminal(true))
	if err != nil {
		t.Fatal(err)
	}
	p.now = clk.now
	p.started = clk.t
	p.tick(false)
	// A batch of 5 records in one invocation: the function answers for one record every
	// 250 ms (batch.KafkaFunc's per-record progress, as esm counts it).
	s.In, s.Delivered, s.InFlight = 5, 5, 5
	for i := 1; i <= 5; i++ {
		clk.add(250 * time.Millisecond)
		s.Succeeded++
		s.InFlight--
		applied++
		out.Reset()
		p.tick(false)
		got := out.String()
		row := regexp.MustCompile(`ConsumerSelfManagedMapping\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+\s+([\d.]+)\s+([\d.]+)`).FindStringSubmatch(got)
		if row == nil {
			t.Fatalf("record %d: no mapping line in %q", i, got)
		}
		if row[1] != "5" || row[2] != fmt.Sprint(i) || row[3] != fmt.Sprint(5-i) {
			t.Errorf("record %d: delivered %s, succeeded %s, in flight %s; want 5, %d, %d", i, row[1], row[2], row[3], i, 5-i)
		}
		if row[4] == "0" || row[5] == "0" {
			t.Errorf("record %d: succeeded/s %s, applied/s %s; want both moving", i, row[4], row[5])
		}
	}
	if !strings.Contains(out.String(), "applied/s") {
		t.Errorf("no applied/s column although the caller observes side effects:\n%s", out.String())
	}
}

// An idle stack printed a 4-line block every 2 s: a block is printed only when a figure
// changed, at most every 2 s, and nothing at all while the stack is idle.
func TestProgressIdlePrintsNothing(t *testing.T) {
	clk := newClock()
	var out bytes.Buffer
	var s esm.Snapshot
	p, err := NewProgress(&out, func() []MappingStatus {
		return []MappingStatus{{Name: "ConsumerSelfManagedMapping", Snapshot: s}, {Name: "WorkerMapping"}}
	}, Terminal(false))
	if err != nil {
		t.Fatal(err)
	}
	p.now = clk.now
	p.started = clk.t
	tick := func(d time.Duration) int {
		out.Reset()
		for range int(d / sampleEvery) {
			clk.add(sampleEvery)
			p.tick(false)
		}
		return strings.Count(out.String(), "mappings at ")
	}
	p.tick(true) // Start's first block
	if n := tick(time.Minute); n != 0 {
		t.Errorf("idle for a minute: %d blocks, want none:\n%s", n, out.String())
	}
	// Busy for 10 s, one record per sample: a block at most every 2 s.
	out.Reset()
	var blocks int
	for range 40 {
		clk.add(sampleEvery)
		s.In++
		s.Delivered++
		s.Succeeded++
		p.tick(false)
	}
	blocks = strings.Count(out.String(), "mappings at ")
	if blocks < 4 || blocks > 5 {
		t.Errorf("busy for 10 s: %d blocks, want 4 or 5 (every 2 s)", blocks)
	}
	// Idle again: the last counts and the rate falling to 0 (at most two blocks), then silence.
	if n := tick(5 * time.Second); n > 2 {
		t.Errorf("after the load: %d blocks in 5 s, want at most 2 (the last counts, the rate falling to 0)", n)
	}
	if n := tick(time.Minute); n != 0 {
		t.Errorf("idle again: %d blocks, want none", n)
	}
	// Terminal mode: no redraw either while idle.
	var term bytes.Buffer
	q, _ := NewProgress(&term, func() []MappingStatus { return []MappingStatus{{Name: "A"}} }, Terminal(true))
	q.now = clk.now
	q.started = clk.t
	q.tick(true)
	term.Reset()
	for range 40 {
		clk.add(sampleEvery)
		q.tick(false)
	}
	if term.Len() != 0 {
		t.Errorf("terminal, idle: %q, want nothing", term.String())
	}
}

// The SQS lag column was larger than the run (5,777 in a 5,000-record phase): lag is what esm
// defines, records not yet delivered, and the display and the recorder show exactly that, not
// a difference of other counters.
func TestLagIsRecordsNotYetDelivered(t *testing.T) {
	clk := newClock()
	var out bytes.Buffer
	// 5,000 messages in the phase; 4,000 taken in and delivered, 3,200 of them succeeded;
	// 1,000 still visible in the queue.
	s := esm.Snapshot{In: 4000, Delivered: 4000, Succeeded: 3200, InFlight: 800, Lag: 1000}
	p, _ := NewProgress(&out, func() []MappingStatus { return []MappingStatus{{Name: "WorkerMapping", Snapshot: s}} }, Terminal(false))
	p.now = clk.now
	p.started = clk.t
	p.tick(true)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	hdr, row := strings.Fields(strings.ReplaceAll(lines[0], "in flight", "in_flight")), strings.Fields(lines[1])
	lagAt := -1
	for i, h := range hdr {
		if h == "lag" {
			lagAt = i - 2 // "mappings at 0.0s" is three fields, the name one
		}
	}
	if lagAt < 0 || row[lagAt] != "1000" {
		t.Errorf("lag column: header %q, row %q; want 1000 under lag", hdr, row)
	}
	rec, _ := NewRecorder(func() []MappingStatus {
		return []MappingStatus{{Name: "WorkerMapping", Function: "WorkerFunction", Snapshot: s}}
	})
	rec.start = clk.t
	rec.record(clk.t)
	if got := rec.Mappings()["WorkerMapping"].Lag; len(got) != 1 || got[0][1] != 1000 {
		t.Errorf("recorded lag %v, want 1000", got)
	}
	// The report defines it so, and the lag chart's axis says "not yet delivered".
	found := false
	for _, d := range MappingDefinitions {
		found = found || d.Term == "lag" && strings.Contains(d.Meaning, "not yet delivered")
	}
	if !found {
		t.Error("the legend does not define lag as records not yet delivered")
	}
	if !strings.Contains(renderHTML(t, sampleReport()), "records not yet delivered") {
		t.Error("the lag chart's axis does not say records not yet delivered")
	}
	// A run that ended has delivered everything: a lag left at the end is refused.
	r := sampleReport()
	r.Mappings[2].Lag = 5777
	if err := r.Validate(); err == nil {
		t.Error("a mapping with lag 5777 at the end of a finished run: no error")
	}
}

// "done" included records sent to a failure queue and "failed" stayed 0; the pipeline table
// said dead-lettered 1 where the mappings table said 0 for the same mapping. Every column of
// every table is defined in the report's legend, one name means one thing across the tables,
// and a report whose tables disagree is refused.
func TestNamesConsistentAndDefined(t *testing.T) {
	r := sampleReport()
	var b bytes.Buffer
	if err := r.Text(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	defined := func(defs []Definition, term string) bool {
		for _, d := range defs {
			if d.Term == term {
				return true
			}
		}
		return false
	}
	for _, term := range []string{"delivered", "succeeded", "failure queue", "reported failed", "error failed", "retried",
		"dead-lettered", "filtered", "in flight", "lag", "invocations", "failed invocations"} {
		if !defined(MappingDefinitions, term) {
			t.Errorf("mapping counter %q has no definition", term)
		}
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(term) + `\s{2,}\S`).MatchString(text[strings.Index(text, "legend of the mappings"):]) {
			t.Errorf("the text's legend does not define %q", term)
		}
	}
	for _, c := range columns {
		if !defined(MappingDefinitions, c.name) {
			t.Errorf("live display column %q is not in the report's legend", c.name)
		}
	}
	// The pipeline's count of records delivered more than once is not the mappings'
	// deliveries after the first: two names.
	if strings.Contains(text, "\nretried ") || !strings.Contains(text, "\nrecords retried ") {
		t.Error("the pipelines table calls its records retried by the mappings' name for deliveries, \"retried\"")
	}
	// The old names that meant more than one thing are gone.
	if regexp.MustCompile(`\bdone\b|\s{2,}failed\s{2,}`).MatchString(text[strings.Index(text, "mappings:"):strings.Index(text, "legend")]) {
		t.Errorf("the mappings table still has a \"done\" or bare \"failed\" column:\n%s", text)
	}
	// The HTML page carries the same legend.
	page := renderHTML(t, r)
	for _, d := range append(append([]Definition{}, PipelineDefinitions...), MappingDefinitions...) {
		if !strings.Contains(page, "<dt>"+html.EscapeString(d.Term)+"</dt>") {
			t.Errorf("report.html's legend lacks %q", d.Term)
		}
	}
	// The demo's contradiction: the pipeline says 1 dead-lettered, its only mapping 0.
	r.Pipelines[0].DeadLettered = 1
	r.Pipelines[0].Fates = map[string]int64{FateApplied: 498, FateFailureQueue: 1, FateDeadLettered: 1}
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "dead-lettered by mapping") {
		t.Errorf("Validate = %v, want the pipelines and the mappings table disagreeing refused", err)
	}
}

// `attempts` was never defined and said 0 for a poison record whose log said attempts 1: it is
// defined (deliveries), and a record that reached a failure queue with no delivery is refused.
func TestAttemptsDefinedAndObserved(t *testing.T) {
	found := false
	for _, d := range PipelineDefinitions {
		found = found || d.Term == "attempts" && strings.Contains(d.Meaning, "invocations that carried it")
	}
	if !found {
		t.Error("attempts is not defined as the invocations that carried the record")
	}
	r := sampleReport()
	r.Faults[0].Attempts = 0 // the poison record, sent to ConsumerFailureQueue
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "attempts 0") {
		t.Errorf("a poison record in a failure queue with attempts 0: Validate = %v", err)
	}
	r = sampleReport()
	r.Records[0].Attempts = 0
	if err := r.Validate(); err == nil {
		t.Error("a record in a failure queue with attempts 0: no error")
	}
	var b bytes.Buffer
	if err := sampleReport().Text(&b); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`poison\s+orders-2@17\s+failure queue\s+1\s+0\s+sent to ConsumerFailureQueue`).MatchString(b.String()) {
		t.Errorf("the poison record's row does not show 1 attempt:\n%s", b.String())
	}
}

// The header said "5000 records" for a 500-record run: the scenario states each pipeline's
// own count, and no single count for the run.
func TestScenarioStatesEachPipelinesRecords(t *testing.T) {
	r := sampleReport()
	r.Pipelines[1].Records = 5000
	r.Pipelines[1].Fates = map[string]int64{FateApplied: 4999, FateDeadLettered: 1}
	var b bytes.Buffer
	if err := r.Text(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "records: direct 500; fan-out 5000\n") {
		t.Errorf("text does not state each pipeline's records:\n%s", b.String())
	}
	if strings.Contains(scenarioText(r.Scenario), "records,") {
		t.Errorf("the scenario line states one record count for the run: %q", scenarioText(r.Scenario))
	}
	if page := renderHTML(t, r); !strings.Contains(page, "records: direct 500; fan-out 5000") {
		t.Error("report.html does not state each pipeline's records")
	}
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Scenario map[string]any `json:"scenario"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Scenario["records"]; ok {
		t.Errorf("report.json's scenario has one records count for the run: %v", doc.Scenario)
	}
}

// Lost, applied twice and order violations are never 0 by default: a Count nobody set is
// unobservable, printed UNOBSERVABLE in the text, null in report.json, marked on the page and
// the picture, and a pipeline with such a count must say what klt could not observe.
func TestUnobservableNeverPrintedAsZero(t *testing.T) {
	r := sampleReport()
	p := &r.Pipelines[1]
	p.Lost, p.AppliedTwice, p.OrderViolations = Count{}, Count{}, Count{}
	p.Fates = map[string]int64{FateSucceeded: 499, FateDeadLettered: 1}
	p.Resources = nil
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "says nothing it could not observe") {
		t.Errorf("unobservable counts without a statement: Validate = %v", err)
	}
	p.Unobservable = []string{"the worker's calls to the payments API leave the stack"}
	var b bytes.Buffer
	if err := r.Text(&b); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"lost", "applied twice", "order violations"} {
		if !regexp.MustCompile(`(?m)^` + row + `\s+0\s+UNOBSERVABLE$`).MatchString(b.String()) {
			t.Errorf("text row %q does not say UNOBSERVABLE for fan-out:\n%s", row, b.String())
		}
	}
	if !strings.Contains(b.String(), "fan-out: NOT observable: the worker's calls to the payments API leave the stack") {
		t.Error("the text does not say what klt could not observe")
	}
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Pipelines []map[string]any `json:"pipelines"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"lost", "applied_twice", "order_violations"} {
		if v, ok := doc.Pipelines[1][k]; !ok || v != nil {
			t.Errorf("report.json: fan-out's %s = %v (present %v), want null", k, v, ok)
		}
		if v := doc.Pipelines[0][k]; v != float64(0) {
			t.Errorf("report.json: direct's %s = %v, want 0 (observed)", k, v)
		}
	}
	var back Report
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.Pipelines[1].Lost.IsObserved() || !back.Pipelines[0].Lost.Is(0) {
		t.Errorf("report.json does not read back: lost %v and %v", back.Pipelines[0].Lost, back.Pipelines[1].Lost)
	}
	if page := renderHTML(t, r); strings.Count(page, `class="unobservable">UNOBSERVABLE</td>`) != 3 {
		t.Error("report.html does not mark the three unobservable counts")
	}
	var svg bytes.Buffer
	if err := r.SVG(&svg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), "lost UNOBSERVABLE") || strings.Contains(svg.String(), "lost 0</text><text") && strings.Count(svg.String(), "lost 0") > 1 {
		t.Error("report.svg does not mark fan-out's lost as UNOBSERVABLE")
	}
}

// The charts stopped before the fault run: the recorder covers every phase, each is marked on
// the charts, and the time axis reaches the end of the last.
func TestChartsSpanEveryPhase(t *testing.T) {
	var s esm.Snapshot
	rec, err := NewRecorder(func() []MappingStatus {
		return []MappingStatus{{Name: "ConsumerSelfManagedMapping", Function: "ConsumerFunction", Snapshot: s, Applied: Observed(s.Succeeded)}}
	})
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	rec.start = clk.t
	phase := func(name string, seconds int, perSample int64) {
		rec.phaseAt(name, clk.t)
		for range seconds * 2 {
			clk.add(500 * time.Millisecond)
			s.Succeeded += perSample
			rec.record(clk.t)
		}
	}
	phase("direct", 10, 8)
	s = esm.Snapshot{} // the next phase starts the mapping again
	phase("faults", 20, 1)
	sr := rec.Series()
	if len(sr.Phases) != 2 || sr.Phases[1].Name != "faults" || sr.Phases[1].Start != 10 || sr.Phases[1].End != 30 {
		t.Fatalf("phases %+v, want direct 0-10 and faults 10-30", sr.Phases)
	}
	th := sr.Throughput["ConsumerFunction"]
	if last := th[len(th)-1]; last[0] != 30 || last[1] != 2 {
		t.Errorf("throughput ends at %v, want [30 2]: the fault phase recorded", last)
	}
	if ap := sr.Applied["ConsumerFunction"]; len(ap) != len(th) || ap[len(ap)-1][1] != 2 {
		t.Errorf("applied series %v", ap)
	}
	r := sampleReport()
	r.Series = sr
	page := renderHTML(t, r)
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"throughput", "applied", "lag"} {
		var marks []string
		for n := range doc.Descendants() {
			if n.Type == html.ElementNode && n.Data == "svg" && attr(n, "id") == id {
				for c := range n.Descendants() {
					if c.Type == html.ElementNode && c.Data == "g" && attr(c, "class") == "phase" {
						marks = append(marks, attr(c, "data-phase")+":"+attr(c, "data-start")+"-"+attr(c, "data-end"))
					}
				}
			}
		}
		if strings.Join(marks, ",") != "direct:0-10,faults:10-30" {
			t.Errorf("chart %s marks phases %q, want direct 0-10 and faults 10-30", id, marks)
		}
	}
	r.Series.Phases = []PhaseSpan{{Name: "a", Start: 0, End: 10}, {Name: "b", Start: 5, End: 12}}
	if err := r.Validate(); err == nil {
		t.Error("overlapping phases: no error")
	}

	// In real time: Phase marks, Stop ends the last phase at the last sample.
	rt, _ := NewRecorder(func() []MappingStatus { return nil }, WithInterval(250*time.Millisecond))
	rt.Phase("load")
	rt.Start()
	time.Sleep(300 * time.Millisecond)
	rt.Phase("faults")
	time.Sleep(300 * time.Millisecond)
	rt.Stop()
	ph := rt.Series().Phases
	if len(ph) != 2 || ph[0].Start != 0 || ph[0].End != ph[1].Start || ph[1].Start < 0.25 || ph[1].End < ph[1].Start+0.25 {
		t.Errorf("phases in real time: %+v", ph)
	}
}

// Ctrl-C printed no summary: Summary says what ran, every mapping's counters and what reached
// the failure and dead-letter queues, even when the counters were read mid-flight.
func TestSummaryOnInterrupt(t *testing.T) {
	r := sampleReport()
	r.Interrupted = true
	r.Mappings[0].InFlight = 5
	r.Mappings[0].Delivered = 505
	r.Pipelines[0].Fates = map[string]int64{FateApplied: 494, FateFailureQueue: 1, FateUnfinished: 5}
	var b bytes.Buffer
	if err := r.Summary(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"klt local: the run was interrupted; summary:",
		"ran: direct (ConsumerFunction), 500 records: applied 494, failure queue 1, unfinished 5; lost 0",
		"ran: fan-out (DispatcherFunction -> WorkerFunction), 500 records",
		"ConsumerSelfManagedMapping", "WorkerMapping",
		"legend of the mappings' counters",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, re := range []string{`ConsumerFailureQueue\s+failure queue\s+direct\s+orders-2@17\s.*invalid order: negative total`,
		`WorkDeadLetterQueue.fifo\s+dead-letter queue\s+fan-out\s+orders-1@5\s`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("summary does not list the message %s:\n%s", re, out)
		}
	}
	// Counters read while records moved may not add up: the summary still prints, and says so.
	r.Mappings[1].InFlight = 900
	b.Reset()
	if err := r.Summary(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "note: report: mapping \"DispatcherMapping\": the counters do not add up") {
		t.Errorf("summary does not say the counters did not add up:\n%s", b.String())
	}
	// A stack served by hand, without load: the mappings and the queues.
	served := &Report{Tool: "klt local", Interrupted: true, Mappings: r.Mappings[:1]}
	b.Reset()
	if err := served.Summary(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "ran: no load") || !strings.Contains(b.String(), "no message was read on a failure queue") {
		t.Errorf("summary of a served stack:\n%s", b.String())
	}
}
