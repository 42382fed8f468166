package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// keysOf returns the sorted keys of a JSON object.
func keysOf(t *testing.T, v any, where string) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: got %T, want an object", where, v)
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func wantKeys(t *testing.T, v any, where string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := keysOf(t, v, where); !slices.Equal(got, want) {
		t.Errorf("%s keys:\n got %q\nwant %q", where, got, want)
	}
}

// The field names of report.json are fixed by issue 12, and extended by issue 19: a name keeps
// its meaning, a quantity whose meaning changed got a new name (mappings' "done" and
// "failed" became "succeeded", "reported_failed" and "error_failed"; the scenario's single
// "records" gave way to each pipeline's own), by issue 29 ("function_logs": each function's
// log lines against its invocations' request IDs), and by issue 30 ("functions").
func TestJSONFieldNames(t *testing.T) {
	js, err := sampleReport().JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, doc, "report", "tool", "version", "started", "template", "machine", "scenario", "interrupted", "pipelines", "speedup",
		"faults", "record_fates", "failed_messages", "mappings", "series", "function_logs", "functions")
	wantKeys(t, doc["machine"], "machine", "goos", "goarch", "cpus")
	wantKeys(t, doc["scenario"], "scenario", "source", "keys", "work_ms", "partitions", "rate")
	p := doc["pipelines"].([]any)
	if len(p) != 2 {
		t.Fatalf("pipelines: %d, want 2", len(p))
	}
	wantKeys(t, p[0], "pipelines[0]", "name", "functions", "mappings", "phase", "records", "seconds", "records_per_second",
		"latency_ms_p50", "latency_ms_p99", "lost", "applied_twice", "order_violations", "failure_queue", "dead_lettered",
		"failure_queue_messages", "dead_letter_messages", "duplicates", "filtered", "retried", "duplicate_requests", "failed_invocations", "fates", "observed", "unobservable", "resources", "predicted")
	wantKeys(t, p[0].(map[string]any)["resources"].([]any)[0], "resources[0]", "resource", "kind", "via", "applied", "applied_twice",
		"order_violations", "latency_ms_p50", "latency_ms_p99")
	wantKeys(t, doc["speedup"], "speedup", "of", "over", "ratio")
	wantKeys(t, doc["faults"].([]any)[0], "faults[0]", "pipeline", "fault", "record", "fate", "outcome", "attempts", "applied")
	wantKeys(t, doc["record_fates"].([]any)[0], "record_fates[0]", "pipeline", "record", "key", "fate", "attempts", "applied", "where", "why")
	wantKeys(t, doc["failed_messages"].([]any)[0], "failed_messages[0]", "pipeline", "queue", "kind", "record", "why", "at", "body")
	wantKeys(t, doc["mappings"].([]any)[0], "mappings[0]", "name", "function", "source", "on_failure", "in", "filtered", "delivered",
		"succeeded", "reported_failed", "error_failed", "retried", "dead_lettered", "in_flight", "lag", "invocations", "errors",
		"failure_queue", "metric_groups", "metrics", "config", "load")
	wantKeys(t, doc["mappings"].([]any)[0].(map[string]any)["metrics"].([]any)[0], "metrics[0]", "name", "statistic", "value")
	wantKeys(t, doc["series"], "series", "throughput", "applied", "lag", "phases")
	wantKeys(t, doc["series"].(map[string]any)["phases"].([]any)[0], "phases[0]", "name", "start", "end")

	if got := doc["started"]; got != "2025-11-03T14:05:09Z" {
		t.Errorf("started = %v, want RFC 3339 2025-11-03T14:05:09Z", got)
	}
	sp := doc["speedup"].(map[string]any)
	if sp["of"] != "fan-out" || sp["over"] != "direct" || math.Abs(sp["ratio"].(float64)-517/16.6) > 1e-9 {
		t.Errorf("speedup = %v", sp)
	}
	// A point is [t, value].
	pt := doc["series"].(map[string]any)["throughput"].(map[string]any)["ConsumerFunction"].([]any)[2].([]any)
	if len(pt) != 2 || pt[0].(float64) != 1 {
		t.Errorf("throughput point = %v, want [1, v]", pt)
	}
}

func TestJSONEmptyCollectionsAreNotNull(t *testing.T) {
	r := &Report{Tool: "klt local", Pipelines: []Pipeline{{Name: "direct", Lost: Observed(0), AppliedTwice: Observed(0), OrderViolations: Observed(0)}}}
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"faults": []`, `"mappings": []`, `"throughput": {}`, `"lag": {}`, `"functions": []`, `"speedup": null`,
		`"record_fates": []`, `"failed_messages": []`, `"applied": {}`, `"phases": []`, `"fates": {}`, `"resources": []`, `"observed": []`} {
		if !bytes.Contains(js, []byte(want)) {
			t.Errorf("report.json lacks %s:\n%s", want, js)
		}
	}
}

func TestValidate(t *testing.T) {
	for name, mutate := range map[string]func(r *Report){
		"no tool":           func(r *Report) { r.Tool = "" },
		"unnamed pipeline":  func(r *Report) { r.Pipelines[0].Name = "" },
		"duplicate":         func(r *Report) { r.Pipelines[1].Name = "direct" },
		"negative lost":     func(r *Report) { r.Pipelines[0].Lost = Observed(-1) },
		"speedup unknown":   func(r *Report) { r.Speedup.Over = "nope" },
		"fault unknown":     func(r *Report) { r.Faults[0].Pipeline = "nope" },
		"NaN in a pipeline": func(r *Report) { r.Pipelines[0].Seconds = math.NaN() },
	} {
		t.Run(name, func(t *testing.T) {
			r := sampleReport()
			mutate(r)
			if _, err := r.JSON(); err == nil {
				t.Error("JSON: no error")
			}
			if err := r.Write(t.TempDir()); err == nil {
				t.Error("Write: no error")
			}
		})
	}
}

func TestNewSpeedup(t *testing.T) {
	ps := []Pipeline{{Name: "direct", RecordsPerSecond: 16}, {Name: "fan-out", RecordsPerSecond: 512}, {Name: "idle"}}
	s, err := NewSpeedup(ps, "fan-out", "direct")
	if err != nil || s.Ratio != 32 {
		t.Fatalf("NewSpeedup = %+v, %v; want ratio 32", s, err)
	}
	for _, c := range [][2]string{{"fan-out", "idle"}, {"nope", "direct"}, {"fan-out", "nope"}} {
		if _, err := NewSpeedup(ps, c[0], c[1]); err == nil {
			t.Errorf("NewSpeedup(%q over %q): no error", c[0], c[1])
		}
	}
}

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	for _, c := range []struct {
		values []float64
		p      float64
		want   float64
	}{
		{hundred, 50, 50},
		{hundred, 99, 99},
		{hundred, 99.5, 100},
		{hundred, 100, 100},
		{hundred, 0, 1},
		{hundred, 1, 1},
		{hundred, 1.1, 2},
		{[]float64{7}, 50, 7},
		{[]float64{7}, 99, 7},
		{[]float64{1, 2, 3, 4}, 50, 2},
		{[]float64{1, 2, 3, 4}, 51, 3},
		{[]float64{1, 2, 3, 4}, 75, 3},
		{[]float64{1, 2, 3, 4}, 76, 4},
		{[]float64{10, 20, 30, 40, 50}, 40, 20}, // ceil(0.4*5) = 2
		{[]float64{10, 20, 30, 40, 50}, 41, 30},
	} {
		got, err := Percentile(c.values, c.p)
		if err != nil || got != c.want {
			t.Errorf("Percentile(%d values, %v) = %v, %v; want %v", len(c.values), c.p, got, err, c.want)
		}
	}
	for name, c := range map[string]struct {
		values []float64
		p      float64
	}{
		"empty":    {nil, 50},
		"unsorted": {[]float64{1, 3, 2}, 50},
		"NaN":      {[]float64{1, math.NaN()}, 50},
		"p < 0":    {hundred, -1},
		"p > 100":  {hundred, 100.1},
		"p NaN":    {hundred, math.NaN()},
	} {
		if v, err := Percentile(c.values, c.p); err == nil {
			t.Errorf("%s: Percentile = %v, no error", name, v)
		}
	}
}

func TestSetLatencies(t *testing.T) {
	ms := []float64{900, 100, 300, 200, 500, 400, 800, 700, 600, 1000}
	orig := slices.Clone(ms)
	p := Pipeline{Name: "direct"}
	if err := p.SetLatencies(ms); err != nil {
		t.Fatal(err)
	}
	if p.LatencyMsP50 != 500 || p.LatencyMsP99 != 1000 {
		t.Errorf("p50, p99 = %v, %v; want 500, 1000", p.LatencyMsP50, p.LatencyMsP99)
	}
	if !slices.Equal(ms, orig) {
		t.Error("SetLatencies reordered its argument")
	}
	for _, bad := range [][]float64{nil, {1, -1}, {math.Inf(1)}, {math.NaN()}} {
		if err := p.SetLatencies(bad); err == nil {
			t.Errorf("SetLatencies(%v): no error", bad)
		}
	}
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	if err := sampleReport().Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.json", "report.html", "report.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	js, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	var back Report
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("report.json does not read back: %v", err)
	}
	if back.Pipelines[1].RecordsPerSecond != 517 || back.Series.Lag["orders-3"][4] != sampleReport().Series.Lag["orders-3"][4] {
		t.Error("report.json does not round-trip")
	}
}

func TestWriteFailsOnUnwritableDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sampleReport().Write(filepath.Join(file, "sub")); err == nil {
		t.Error("Write under a regular file: no error")
	}
}

func renderHTML(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.HTML(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// voidElements have no end tag in HTML.
var voidElements = map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true,
	"img": true, "input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true}

// checkBalanced tokenizes page and fails unless every element that is opened is closed, in
// order (SVG elements written as <x/> count as closed).
func checkBalanced(t *testing.T, page string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	var stack []string
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatalf("tokenizer: %v", z.Err())
			}
			if len(stack) != 0 {
				t.Fatalf("unclosed elements at end: %v", stack)
			}
			return
		case html.StartTagToken:
			name, _ := z.TagName()
			if !voidElements[string(name)] {
				stack = append(stack, string(name))
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if len(stack) == 0 || stack[len(stack)-1] != string(name) {
				t.Fatalf("</%s> closes %v", name, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
}

func TestHTMLWellFormed(t *testing.T) {
	page := renderHTML(t, sampleReport())
	checkBalanced(t, page)
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	// Each chart is also well-formed XML, as a standalone SVG must be.
	svgs := 0
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == "svg" {
			svgs++
			var b bytes.Buffer
			if err := html.Render(&b, n); err != nil {
				t.Fatal(err)
			}
			if err := xmlWellFormed(b.Bytes()); err != nil {
				t.Errorf("svg %d is not well-formed XML: %v", svgs, err)
			}
		}
	}
	if svgs != 4 {
		t.Errorf("%d svg elements, want 4 (figures, bars, throughput, lag)", svgs)
	}
	for _, want := range []string{"fan-out is 31.1x direct", "sent to ConsumerFailureQueue", "orders-2@17", "ConsumerSelfManagedMapping"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

func xmlWellFormed(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func TestSVGWellFormed(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().SVG(&b); err != nil {
		t.Fatal(err)
	}
	if err := xmlWellFormed(b.Bytes()); err != nil {
		t.Fatalf("report.svg: %v", err)
	}
	if n := strings.Count(b.String(), "<polyline"); n != 9 {
		t.Errorf("report.svg has %d polylines, want 9 (3 functions, 6 lag series)", n)
	}
	for _, want := range []string{"fan-out over direct", "31.1", "orders-2@17", "sent to ConsumerFailureQueue"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.svg lacks %q", want)
		}
	}
}

// Text from the report (names, outcomes) is escaped wherever it lands.
func TestHostileNamesAreEscaped(t *testing.T) {
	r := sampleReport()
	evil := `<script>alert("x")</script>&`
	r.Pipelines[0].Name = evil
	r.Speedup.Over = evil
	r.Faults[0].Pipeline = evil
	r.Faults[1].Pipeline = evil
	r.Faults[0].Outcome = evil
	for i := range r.Records {
		if r.Records[i].Pipeline == "direct" {
			r.Records[i].Pipeline = evil
		}
		r.Records[i].Why = evil
	}
	for i := range r.FailedMessages {
		if r.FailedMessages[i].Pipeline == "direct" {
			r.FailedMessages[i].Pipeline = evil
		}
		r.FailedMessages[i].Body = evil
	}
	r.Series.Phases[0].Name = evil
	r.Mappings[0].Metrics[0].Name = evil
	r.Series.Throughput[evil] = []Point{{0, 1}}
	page := renderHTML(t, r)
	if strings.Contains(page, "<script") {
		t.Error("report.html has a <script> element")
	}
	checkBalanced(t, page)
	var b bytes.Buffer
	if err := r.SVG(&b); err != nil {
		t.Fatal(err)
	}
	if err := xmlWellFormed(b.Bytes()); err != nil {
		t.Fatalf("report.svg: %v", err)
	}
}

func TestNoExternalReferences(t *testing.T) {
	page := renderHTML(t, sampleReport())
	lower := strings.ToLower(page)
	for _, bad := range []string{"http://", "https://", "//cdn", " src=", " href=", "url(", "@import", "<link", "<script", "<img", "<iframe"} {
		if strings.Contains(lower, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	var b bytes.Buffer
	if err := sampleReport().SVG(&b); err != nil {
		t.Fatal(err)
	}
	svg := strings.Replace(b.String(), `xmlns="http://www.w3.org/2000/svg"`, "", 1)
	for _, bad := range []string{"http://", "https://", "href=", "url(", "<image", "<script"} {
		if strings.Contains(strings.ToLower(svg), bad) {
			t.Errorf("report.svg contains %q beyond its namespace", bad)
		}
	}
}

// polylines returns the data-series of the polylines in the svg element with the given id.
func polylines(t *testing.T, page, id string) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == "svg" && attr(n, "id") == id {
			var names []string
			for c := range n.Descendants() {
				if c.Type == html.ElementNode && c.Data == "polyline" {
					names = append(names, attr(c, "data-series"))
				}
			}
			return names
		}
	}
	t.Fatalf("no svg#%s", id)
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func TestChartsOnePolylinePerSeries(t *testing.T) {
	r := sampleReport()
	page := renderHTML(t, r)
	got := polylines(t, page, "throughput")
	if want := []string{"ConsumerFunction", "DispatcherFunction", "WorkerFunction"}; !slices.Equal(got, want) {
		t.Errorf("throughput polylines %q, want %q", got, want)
	}
	got = polylines(t, page, "lag")
	if want := []string{"WorkQueue.fifo", "orders-0", "orders-1", "orders-2", "orders-3", "orders-4"}; !slices.Equal(got, want) {
		t.Errorf("lag polylines %q, want %q", got, want)
	}
	// Each polyline has one coordinate pair per point.
	doc, _ := html.Parse(strings.NewReader(page))
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == "polyline" && attr(n, "data-series") == "orders-2" {
			if pts := strings.Fields(attr(n, "points")); len(pts) != len(r.Series.Lag["orders-2"]) {
				t.Errorf("orders-2 polyline has %d points, want %d", len(pts), len(r.Series.Lag["orders-2"]))
			}
		}
	}

	r.Series = Series{}
	page = renderHTML(t, r)
	if got := polylines(t, page, "throughput"); len(got) != 0 {
		t.Errorf("no series, yet polylines %q", got)
	}
	if !strings.Contains(page, "no samples") {
		t.Error("an empty chart does not say so")
	}
}

func TestPipelineCountsColoured(t *testing.T) {
	r := sampleReport()
	r.Pipelines[1].Lost = Observed(3)
	r.Pipelines[1].Fates = map[string]int64{FateApplied: 496, FateDeadLettered: 1, FateLost: 3}
	r.Pipelines[0].OrderViolations = Unobservable
	r.Pipelines[0].Unobservable = []string{"the order of applications: the orders API is called from outside the stack"}
	doc, err := html.Parse(strings.NewReader(renderHTML(t, r)))
	if err != nil {
		t.Fatal(err)
	}
	var classes []string
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == "td" && attr(n.Parent.Parent.Parent, "id") == "pipeline-table" &&
			slices.Contains([]string{"ok", "bad", "unobservable"}, attr(n, "class")) {
			classes = append(classes, attr(n, "class")+":"+n.FirstChild.Data)
		}
	}
	want := []string{"ok:0", "ok:0", "unobservable:UNOBSERVABLE", "bad:3", "ok:0", "ok:0"}
	if !slices.Equal(classes, want) {
		t.Errorf("lost / applied twice / order violations cells %q, want %q", classes, want)
	}
}

func TestBarsScale(t *testing.T) {
	c := barChart(sampleReport().Pipelines, sampleReport().Speedup, chartWidth)
	var widths []string
	d := xml.NewDecoder(strings.NewReader(c.element("")))
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			for _, a := range se.Attr {
				if a.Name.Local == "class" && a.Value == "bar" {
					for _, a := range se.Attr {
						if a.Name.Local == "width" {
							widths = append(widths, a.Value)
						}
					}
				}
			}
		}
	}
	// fan-out's bar is the full plot width (470), direct's 16.6/517 of it.
	if want := []string{"15.1", "470"}; !slices.Equal(widths, want) {
		t.Errorf("bar widths %q, want %q", widths, want)
	}
}

func TestText(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().Text(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"fan-out is 31.1x direct: 517 records/s against 16.6",
		"DispatcherFunction -> WorkerFunction",
		"poison",
		"sent to ConsumerFailureQueue",
		"ConsumerSelfManagedMapping",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Text lacks %q:\n%s", want, out)
		}
	}
	// The pipelines are side by side: one "records/s" row with both figures.
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "records/s") && !(strings.Contains(l, "16.6") && strings.Contains(l, "517")) {
			t.Errorf("records/s row %q lacks a pipeline", l)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Error("Text has escape codes")
	}
}

// A pipeline run with faults is in the table, but not among the headline figures and bars: its
// throughput waits out a timeout and says nothing about the pipeline.
func TestFaultPhaseNotInFigures(t *testing.T) {
	r := sampleReport()
	f := r.Pipelines[1]
	f.Name, f.Phase, f.RecordsPerSecond = "fan-out, with faults", PhaseFaults, 0.5
	r.Pipelines = append(r.Pipelines, f)
	var b strings.Builder
	if err := r.HTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	start := strings.Index(page, `id="figures"`)
	end := strings.Index(page, `<table`)
	if start < 0 || end < start {
		t.Fatal("no figures before the pipelines table")
	}
	head := page[start:end]
	if strings.Contains(head, "with faults") || !strings.Contains(head, "fan-out") {
		t.Errorf("figures and bars: the faults pipeline is there, or the load one is not")
	}
	if !strings.Contains(page[end:], "fan-out, with faults") {
		t.Error("the faults pipeline is not in the table")
	}
}
