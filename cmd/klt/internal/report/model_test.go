package report

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/esm"
)

// Validate refuses a report that contradicts itself, each way it can.
func TestValidateRefusesContradictions(t *testing.T) {
	for name, c := range map[string]struct {
		mutate func(r *Report)
		want   string
	}{
		"fates do not sum to the records": {func(r *Report) { r.Pipelines[0].Fates[FateApplied] = 400 }, "fates sum to 401 records, but 500 went in"},
		"fates disagree with lost":        {func(r *Report) { r.Pipelines[0].Lost = Observed(2) }, "lost is 2, but 0 records have fate"},
		"fates disagree with failure queue": {func(r *Report) {
			r.Pipelines[0].FailureQueue = Observed(0)
			r.Mappings[0].FailureQueue = Observed(0)
		}, "failure_queue is 0, but 1 records"},
		"lost records, lost unobservable": {func(r *Report) {
			r.Pipelines[0].Lost = Unobservable
			r.Pipelines[0].Unobservable = []string{"x"}
			r.Pipelines[0].Fates = map[string]int64{FateApplied: 498, FateFailureQueue: 1, FateLost: 1}
		}, "but lost is unobservable"},
		"unknown fate": {func(r *Report) { r.Pipelines[0].Fates["gone"] = 0 }, `fate "gone"`},
		"unfinished, not stopped": {func(r *Report) {
			r.Pipelines[0].Fates = map[string]int64{FateApplied: 498, FateFailureQueue: 1, FateUnfinished: 1}
		}, "not interrupted"},
		"more succeeded than in":   {func(r *Report) { r.Mappings[1].Succeeded = 501; r.Mappings[1].Delivered = 501 }, "succeeded 501 + dead-lettered 0 > in 500"},
		"succeeded, not delivered": {func(r *Report) { r.Mappings[1].Delivered = 499 }, "succeeded 500 > delivered 499"},
		"failures beyond deliveries": {func(r *Report) {
			r.Mappings[2].ReportedFailed = 600
		}, "reported failed 600 + error failed 2 + in flight 0 > delivered 503"},
		"first deliveries beyond records": {func(r *Report) { r.Mappings[1].Delivered = 510 }, "510 records delivered at least once"},
		"errors beyond invocations":       {func(r *Report) { r.Mappings[0].Errors = 105 }, "errors 105 > invocations 104"},
		"invocations beyond deliveries":   {func(r *Report) { r.Mappings[1].Invocations = 501 }, "invocations 501 > delivered 500"},
		"in flight at the end":            {func(r *Report) { r.Mappings[1].InFlight = 1 }, "in flight at the end of a run that was not interrupted"},
		"lag at the end":                  {func(r *Report) { r.Mappings[2].Lag = 5777 }, "lag 5777 (records in its source not yet delivered) at the end"},
		"failure queue beyond succeeded":  {func(r *Report) { r.Mappings[2].FailureQueue = Observed(500) }, "failure queue 500"},
		"pipeline and mapping disagree on filtered": {func(r *Report) {
			r.Mappings[0].Filtered = 3
			r.Mappings[0].In = 503
		}, "filtered by mapping"},
		"unknown mapping":             {func(r *Report) { r.Pipelines[0].Mappings = []string{"Nope"} }, `mapping "Nope"`},
		"duplicate mapping":           {func(r *Report) { r.Mappings[1].Name = r.Mappings[0].Name }, "duplicate name"},
		"filtered yet delivered":      {func(r *Report) { r.Records[1].Fate = FateFiltered }, "filtered, yet delivered 2 times"},
		"applied with applied 0":      {func(r *Report) { r.Records[1].Applied = Observed(0) }, "fate applied with applied 0"},
		"applied, unobservable":       {func(r *Report) { r.Records[1].Applied = Unobservable }, "applied, yet its applications are unobservable"},
		"record of no pipeline":       {func(r *Report) { r.Records[0].Pipeline = "nope" }, "record_fates[0] names pipeline"},
		"message of no pipeline":      {func(r *Report) { r.FailedMessages[0].Pipeline = "nope" }, "failed_messages[0] names pipeline"},
		"message of no kind":          {func(r *Report) { r.FailedMessages[0].Kind = "queue" }, "kind \"queue\""},
		"twice beyond applied":        {func(r *Report) { r.Pipelines[0].Resources[0].AppliedTwice = Observed(500) }, "500 records applied twice of 499 applied"},
		"metric without statistic":    {func(r *Report) { r.Mappings[0].Metrics[0].Statistic = "" }, "has no statistic"},
		"metrics without their group": {func(r *Report) { r.Mappings[0].MetricGroups = nil }, "without the MetricsConfig groups"},
		"phase backwards":             {func(r *Report) { r.Series.Phases[1].End = 30 }, "phases run forward"},
		"unknown phase":               {func(r *Report) { r.Pipelines[0].Phase = "warmup" }, `phase "warmup"`},
	} {
		t.Run(name, func(t *testing.T) {
			r := sampleReport()
			c.mutate(r)
			err := r.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate = %v, want an error with %q", err, c.want)
			}
			if _, jerr := r.JSON(); jerr == nil {
				t.Error("JSON: no error")
			}
			if terr := r.Text(&bytes.Buffer{}); terr == nil {
				t.Error("Text: no error")
			}
		})
	}
	// An interrupted run may have records unfinished and in flight.
	r := sampleReport()
	r.Interrupted = true
	r.Mappings[0].InFlight = 1
	r.Mappings[2].Lag = 40
	r.Pipelines[0].Fates = map[string]int64{FateApplied: 498, FateFailureQueue: 1, FateUnfinished: 1}
	if err := r.Validate(); err != nil {
		t.Errorf("interrupted run: %v", err)
	}
}

func TestCountJSON(t *testing.T) {
	var v struct {
		A, B Count
		C    Count `json:"c"`
	}
	v.A = Observed(0)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"A":0,"B":null,"c":null}` {
		t.Errorf("marshal: %s", b)
	}
	if err := json.Unmarshal([]byte(`{"A":null,"B":7,"c":0}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.A.IsObserved() || !v.B.Is(7) || !v.C.Is(0) {
		t.Errorf("unmarshal: %v %v %v", v.A, v.B, v.C)
	}
	if err := json.Unmarshal([]byte(`{"A":"x"}`), &v); err == nil {
		t.Error("a string as a count: no error")
	}
	if n, ok := (Count{}).Value(); ok || n != 0 || (Count{}).String() != "UNOBSERVABLE" {
		t.Error("the zero Count is not unobservable")
	}
}

func TestNewMetrics(t *testing.T) {
	ms, err := NewMetrics(map[string]float64{"PolledEventCount": 500, "MaxOffsetLag": 12},
		map[string]string{"PolledEventCount": "Sum", "MaxOffsetLag": "Maximum"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0] != (Metric{"MaxOffsetLag", "Maximum", 12}) || ms[1] != (Metric{"PolledEventCount", "Sum", 500}) {
		t.Errorf("metrics %v", ms)
	}
	// esm's Metrics: int64 values, the statistics CloudWatch reads them with.
	ms, err = NewMetrics(map[string]int64{"InvokedEventCount": 7, "MaxOffsetLag": 3, "SumOffsetLag": 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Metric{{"InvokedEventCount", "Sum", 7}, {"MaxOffsetLag", "Maximum", 3}, {"SumOffsetLag", "Sum", 5}}; !slices.Equal(ms, want) {
		t.Errorf("metrics %v, want %v", ms, want)
	}
	if _, err := NewMetrics(map[string]int64{"Throttles": 1}, nil); err == nil {
		t.Error("a metric of unknown statistic: no error")
	}
	if _, err := NewMetrics(map[string]float64{"X": math.NaN()}, map[string]string{"X": "Sum"}); err == nil {
		t.Error("NaN: no error")
	}
}

func TestMappingAddsPhases(t *testing.T) {
	m := MappingFromSnapshot("M", "F", "orders", esm.Snapshot{In: 10, Delivered: 12, Succeeded: 9, Retried: 2, DeadLettered: 1, Invocations: 3, Errors: 1, ErrorFailed: 2})
	m.Add(esm.Snapshot{In: 5, Delivered: 5, Succeeded: 5, Invocations: 1, Filtered: 0, Lag: 0})
	if m.In != 15 || m.Delivered != 17 || m.Succeeded != 14 || m.Retried != 2 || m.DeadLettered != 1 || m.Invocations != 4 || m.ErrorFailed != 2 {
		t.Errorf("mapping %+v", m)
	}
	if m.FailureQueue.IsObserved() {
		t.Error("a mapping's failure queue is observed by default")
	}
	r := &Report{Tool: "klt local", Mappings: []Mapping{m}}
	if err := r.Validate(); err != nil {
		t.Errorf("the sum of two consistent phases: %v", err)
	}
}

// What reached a failure or dead-letter queue is listed in the report, message by message,
// its body shortened; the records not simply succeeded once are followed one by one; the
// MetricsConfig figures are shown as CloudWatch would.
func TestListingsInTextAndHTML(t *testing.T) {
	r := sampleReport()
	long := strings.Repeat("x", 5000)
	r.FailedMessages[1].Body = long
	var b bytes.Buffer
	if err := r.Text(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	page := renderHTML(t, r)
	for _, want := range []string{"WorkDeadLetterQueue.fifo", "maxReceiveCount 3 reached", "14:05:44.000", "orders-1@5",
		"moved to WorkDeadLetterQueue.fifo", "customer-7", "OnFailureDestinationDeliveredEventCount", "KafkaMetrics", "Maximum",
		"OrdersApiUrl", "Idempotency-Key"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q", want)
		}
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	short := strings.Repeat("x", textBodyMax-1) + "…"
	if !strings.Contains(text, short) || strings.Contains(text, short[:len(short)-len("…")]+"x") {
		t.Error("text: the long body is not shortened to 120 characters")
	}
	if !strings.Contains(page, short) {
		t.Error("report.html: the long body is not shortened to 120 characters")
	}
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if n := len([]rune(back.FailedMessages[1].Body)); n != jsonBodyMax {
		t.Errorf("report.json keeps %d characters of the body, want %d", n, jsonBodyMax)
	}
	if r.FailedMessages[1].Body != long {
		t.Error("JSON shortened the caller's report")
	}
}

// The text lists the first 50 records and messages and says how many more the page has.
func TestTextListsAreBounded(t *testing.T) {
	r := sampleReport()
	for range 60 {
		r.Records = append(r.Records, r.Records[1])
		r.FailedMessages = append(r.FailedMessages, r.FailedMessages[0])
	}
	var b bytes.Buffer
	if err := r.Text(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Count(b.String(), "... and 14 more (report.html and report.json list them all)") != 1 ||
		strings.Count(b.String(), "... and 12 more (report.html and report.json list them all)") != 1 {
		t.Errorf("the text does not bound its listings:\n%s", b.String())
	}
	if n := strings.Count(renderHTML(t, r), "<code>orders-0@40</code>"); n != 62 {
		t.Errorf("report.html lists the record %d times, want 62 (61 records, 1 fault)", n)
	}
}

// TestScenarioTextCounts checks the scenario line's counts read as English: one partition,
// several keys, the records' source once.
func TestScenarioTextCounts(t *testing.T) {
	got := scenarioText(Scenario{Source: "r.jsonl (2 records)", Keys: 2, Partitions: 1})
	if want := "r.jsonl (2 records); 2 keys; 1 partition; produced as fast as possible"; got != want {
		t.Errorf("scenario %q, want %q", got, want)
	}
	if got := scenarioText(Scenario{Keys: 1, Partitions: 5}); !strings.HasPrefix(got, "1 key; 5 partitions;") {
		t.Errorf("scenario %q", got)
	}
}
