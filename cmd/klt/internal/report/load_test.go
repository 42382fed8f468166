package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// loadReport is sampleReport with the closed loop's figures: each mapping's configuration
// and load, and each load pipeline's prediction.
func loadReport() *Report {
	r := sampleReport()
	for i := range r.Mappings {
		m := &r.Mappings[i]
		switch m.Name {
		case "WorkerMapping":
			m.Config = &MappingConfig{Kind: KindSQS, BatchSize: 10, MaximumConcurrency: 50, Queue: QueueFIFO}
		default:
			m.Config = &MappingConfig{Kind: KindKafka, BatchSize: 100, WindowMS: 1000, Partitions: 5, Pollers: 1}
		}
		n := min(m.Invocations, 1)
		m.Load = &MappingLoad{Seconds: 30, Invocations: n, InvocationMsP50: 900, InvocationMsP99: 950, InvocationMsMean: 910,
			RecordsPerInvocation: 1, PartitionsPerInvocation: 1, RecordMsP50: 900, RecordMsP99: 950, RecordMsMean: 910,
			ConcurrencyMean: 0.5, ConcurrencyMax: 1}
		if n == 0 {
			m.Load = &MappingLoad{Seconds: 30}
		}
	}
	for i := range r.Pipelines {
		p := &r.Pipelines[i]
		if p.Phase != PhaseLoad {
			continue
		}
		p.Predicted = &Predicted{RecordsPerSecond: p.RecordsPerSecond / 1.05, SteadyRecordsPerSecond: p.RecordsPerSecond * 1.2,
			Bound: "5 partitions", Ratio: 1.05, Formula: "N / T", Command: "klt plan --from-report demo/report.json", Notes: []string{"a note"}}
	}
	return r
}

// The closed loop's JSON names are part of report.json's contract, each with its unit.
func TestLoadJSONFieldNames(t *testing.T) {
	js, err := loadReport().JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	m := doc["mappings"].([]any)[0].(map[string]any)
	wantKeys(t, m["config"], "config", "kind", "batch_size", "window_ms", "partitions", "pollers", "one_partition_per_invocation",
		"maximum_concurrency", "queue")
	wantKeys(t, m["load"], "load", "seconds", "invocations", "unfinished_invocations", "invocation_ms_p50", "invocation_ms_p99",
		"invocation_ms_mean", "records_per_invocation", "partitions_per_invocation", "record_ms_p50", "record_ms_p99", "record_ms_mean",
		"concurrency_mean", "concurrency_max", "message_groups", "record_bytes_mean")
	p := doc["pipelines"].([]any)[0].(map[string]any)
	wantKeys(t, p["predicted"], "predicted", "records_per_second", "steady_records_per_second", "bound", "ratio", "formula", "command", "notes", "error")
}

// Validate refuses a closed loop's figures that contradict each other or the counters.
func TestValidateLoad(t *testing.T) {
	if err := loadReport().Validate(); err != nil {
		t.Fatalf("the sample: %v", err)
	}
	for _, tc := range []struct {
		name, want string
		edit       func(r *Report)
	}{
		{"config kind", "config kind", func(r *Report) { r.Mappings[0].Config.Kind = "kinesis" }},
		{"kafka without partitions", "partitions and pollers", func(r *Report) { r.Mappings[0].Config.Partitions = 0 }},
		{"sqs queue", "queue fifo or standard", func(r *Report) { r.Mappings[2].Config.Queue = "" }},
		{"maximum concurrency 1", "maximum_concurrency", func(r *Report) { r.Mappings[2].Config.MaximumConcurrency = 1 }},
		{"negative window", "window_ms", func(r *Report) { r.Mappings[0].Config.WindowMS = -1 }},
		{"p50 above p99", "p50 above its p99", func(r *Report) { r.Mappings[0].Load.InvocationMsP50 = 1000 }},
		{"mean concurrency above max", "above concurrency_max", func(r *Report) { r.Mappings[0].Load.ConcurrencyMean = 1.5 }},
		{"more invocations than the mapping's", "more than the mapping's", func(r *Report) { r.Mappings[0].Load.Invocations = r.Mappings[0].Invocations + 1 }},
		{"fuller than the batch", "above the batch size", func(r *Report) {
			r.Mappings[0].Config.BatchSize = 1
			r.Mappings[0].Load.RecordsPerInvocation = 2
		}},
		{"partitions per invocation", "partitions_per_invocation", func(r *Report) { r.Mappings[0].Load.PartitionsPerInvocation = 6 }},
		{"NaN", "finite", func(r *Report) { r.Mappings[0].Load.RecordMsMean = math.NaN() }},
		{"prediction of a fault phase", "fault phase", func(r *Report) {
			r.Pipelines[1].Phase = PhaseFaults
		}},
		{"ratio", "ratio", func(r *Report) { r.Pipelines[0].Predicted.Ratio = 2 }},
		{"faster than steady", "cannot outrun", func(r *Report) {
			pr := r.Pipelines[0].Predicted
			pr.SteadyRecordsPerSecond = pr.RecordsPerSecond / 2
		}},
		{"no command", "klt plan command", func(r *Report) { r.Pipelines[0].Predicted.Command = "" }},
		{"figures beside an error", "beside the error", func(r *Report) { r.Pipelines[0].Predicted.Error = "no plan" }},
	} {
		r := loadReport()
		tc.edit(r)
		err := r.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// The text and the page show each prediction beside the measurement, and the mappings'
// load figures; the page draws a predicted bar under each measured one.
func TestLoadShown(t *testing.T) {
	r := loadReport()
	var text, page bytes.Buffer
	if err := r.Text(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.HTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"predicted by klt plan", "direct: measured 16.6 records/s, predicted 15.8 for this run (measured/predicted 1.05)",
		"the same plan: klt plan --from-report demo/report.json", "predicted records/s", "what klt plan reads"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{`id="predicted"`, `class="predicted" data-pipeline="direct"`, `class="predicted" data-pipeline="fan-out"`, `id="loads"`} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// A prediction that could not be made says why, in both.
	r.Pipelines[1].Predicted = &Predicted{Error: "capacity: not implemented"}
	text.Reset()
	page.Reset()
	if err := r.Text(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.HTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "fan-out: no prediction: capacity: not implemented") || !strings.Contains(page.String(), "capacity: not implemented") {
		t.Errorf("the error of a prediction is not shown:\n%s", text.String())
	}
	// A report without predictions shows none of it.
	text.Reset()
	if err := sampleReport().Text(&text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "predicted") {
		t.Errorf("a report without predictions mentions one:\n%s", text.String())
	}
}
