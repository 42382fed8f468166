package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// planDesign is the part of a design of klt plan --format json that the tests read: the
// names the issue requires.
type planDesign struct {
	MaxRecordsPerSecond float64 `json:"max_records_per_second"`
	Bound               string  `json:"bound"`
	ReachesTarget       bool    `json:"reaches_target"`
	PollersNeeded       int     `json:"pollers_needed"`
	ConcurrencyNeeded   int     `json:"concurrency_needed"`
	PartitionsNeeded    int     `json:"partitions_needed"`
	MonthlyCostUSD      float64 `json:"monthly_cost_usd"`
	CostLines           []struct {
		Item       string  `json:"item"`
		MonthlyUSD float64 `json:"monthly_usd"`
	} `json:"cost_lines"`
	Figures []struct {
		Name  string  `json:"name"`
		Value float64 `json:"value"`
		Unit  string  `json:"unit"`
	} `json:"figures"`
}

type planOutput struct {
	Input struct {
		Rate       float64 `json:"rate"`
		Partitions int     `json:"partitions"`
	} `json:"input"`
	Direct  planDesign `json:"direct"`
	Fanout  planDesign `json:"fanout"`
	Cheaper string     `json:"cheaper"`
	Runs    []struct {
		Pipeline         string  `json:"pipeline"`
		Measured         float64 `json:"measured_records_per_second"`
		RecordsPerSecond float64 `json:"records_per_second"`
		Ratio            float64 `json:"ratio"`
	} `json:"runs"`
}

// planJSON runs klt plan --format json with args and decodes what it prints; want is the exit
// code it must have.
func planJSON(t *testing.T, want int, args ...string) planOutput {
	t.Helper()
	r := klt(t, "", append([]string{"plan", "--format", "json"}, args...)...)
	if r.code != want {
		t.Fatalf("klt plan %s: exit %d, want %d\n%s", strings.Join(args, " "), r.code, want, r.stderr)
	}
	checkPlanJSON(t, []byte(r.stdout))
	var p planOutput
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatalf("klt plan --format json: %v\n%s", err, r.stdout)
	}
	return p
}

// checkPlanJSON checks that js is one JSON document whose numbers are all numbers (JSON has
// no NaN or infinity; a string "NaN" or "Inf" where a figure goes is the same mistake), with
// the objects direct and fanout and in each the fields the issue names.
func checkPlanJSON(t *testing.T, js []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil || dec.More() {
		t.Fatalf("not one JSON document (%v):\n%s", err, js)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(path+"."+k, x)
			}
		case []any:
			for _, x := range v {
				walk(path+"[]", x)
			}
		case json.Number:
			if f, err := v.Float64(); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				t.Errorf("%s: %s is not a finite number", path, v)
			}
		case string:
			if l := strings.ToLower(v); l == "nan" || strings.TrimLeft(l, "+-") == "inf" {
				t.Errorf("%s: %q where a figure goes", path, v)
			}
		}
	}
	walk("", doc)
	for _, name := range []string{"direct", "fanout"} {
		d, ok := doc[name].(map[string]any)
		if !ok {
			t.Fatalf("no object %q in\n%s", name, js)
		}
		for _, field := range []string{"max_records_per_second", "bound", "pollers_needed", "concurrency_needed", "partitions_needed", "monthly_cost_usd", "cost_lines", "recommended"} {
			if _, ok := d[field]; !ok {
				t.Errorf("%s has no %q", name, field)
			}
		}
	}
}

// within reports whether got is want within a relative tolerance tol.
func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

func TestPlanTalkExample(t *testing.T) {
	// The talk's example: 5 partitions, 300 ms per record. "Lambda processes each partition
	// ... one invocation per partition at a time" (with-kafka-scaling), so with batches of
	// 100 records, each invocation takes 30 s: 5 x 100 / 30 s = 16.7 records a second however
	// many arrive. Fanned out through SQS FIFO with the SQS mapping's MaximumConcurrency at
	// 300, the workers take 300 x 10 messages per 3 s batch: 1,000 a second.
	p := planJSON(t, 0, "--rate", "100", "--partitions", "5", "--duration", "300ms", "--maximum-concurrency", "300")
	if got := p.Direct.MaxRecordsPerSecond; math.Round(got*10)/10 != 16.7 {
		t.Errorf("direct: %v records/s, want 16.7 (5 partitions x 100 records / 30 s)", got)
	}
	if p.Direct.ReachesTarget || !strings.Contains(strings.ToLower(p.Direct.Bound), "partition") {
		t.Errorf("direct: reaches %v, bound %q; want false, bound by the partitions", p.Direct.ReachesTarget, p.Direct.Bound)
	}
	if got := p.Fanout.MaxRecordsPerSecond; !within(got, 1000, 0.05) || !p.Fanout.ReachesTarget {
		t.Errorf("fanout: %v records/s (reaches %v), want about 1,000", got, p.Fanout.ReachesTarget)
	}
	if p.Cheaper != "fanout" {
		t.Errorf("cheaper: %q; want fanout, the one design that reaches 100/s", p.Cheaper)
	}
	if p.Input.Partitions != 5 || p.Input.Rate != 100 {
		t.Errorf("input: %+v", p.Input)
	}
}

func TestPlanPollerExample(t *testing.T) {
	// AWS's example (with-kafka-scaling, provisioned mode): "if your batch size is 20 and
	// your function takes 50 ms to process each batch, each poller can handle 2,000 records
	// per second ... to process 20,000 records per second, you need at least 10 event
	// pollers."
	p := planJSON(t, 0, "--rate", "20000", "--batch-size", "20", "--batch-duration", "50ms")
	if p.Direct.PollersNeeded != 10 || !p.Direct.ReachesTarget {
		t.Errorf("direct: %d pollers needed (reaches %v), want 10", p.Direct.PollersNeeded, p.Direct.ReachesTarget)
	}
	found := false
	for _, f := range p.Direct.Figures {
		found = found || f.Value == 2000
	}
	if !found {
		t.Errorf("direct: no figure of 2,000 (records a second per poller) among %+v", p.Direct.Figures)
	}
	for _, d := range []planDesign{p.Direct, p.Fanout} {
		sum := 0.0
		for _, c := range d.CostLines {
			sum += c.MonthlyUSD
		}
		if !within(sum, d.MonthlyCostUSD, 1e-9) {
			t.Errorf("cost lines sum to %v, monthly_cost_usd is %v", sum, d.MonthlyCostUSD)
		}
	}
}

func TestPlanConfig(t *testing.T) {
	// --config takes YAML and JSON keyed by the input's JSON names, read by the flags'
	// parsers (a size as 1KB); flags given win over it.
	flags := planJSON(t, 0, "--rate", "100", "--partitions", "5", "--duration", "300ms", "--maximum-concurrency", "300", "--record-size", "2KB")
	yaml := writeFile(t, "plan.yaml", "rate: 100\npartitions: 5\nduration: 300ms\nrecord_size: 2KB\nfanout:\n  maximum_concurrency: 300\nprices:\n  lambda_gb_second: 0.0000133334\n")
	js := writeFile(t, "plan.json", `{"rate": 100, "partitions": 5, "duration": "300ms", "record_size": 2048, "fanout": {"maximum_concurrency": 300}}`)
	for _, file := range []string{yaml, js} {
		p := planJSON(t, 0, "--config", file)
		if p.Direct.MaxRecordsPerSecond != flags.Direct.MaxRecordsPerSecond || p.Fanout.MaxRecordsPerSecond != flags.Fanout.MaxRecordsPerSecond {
			t.Errorf("%s: direct %v, fanout %v; the same flags give %v, %v", filepath.Base(file),
				p.Direct.MaxRecordsPerSecond, p.Fanout.MaxRecordsPerSecond, flags.Direct.MaxRecordsPerSecond, flags.Fanout.MaxRecordsPerSecond)
		}
	}
	// A flag given wins: 10 partitions instead of the file's 5 double the direct design.
	p := planJSON(t, 0, "--config", yaml, "--partitions", "10")
	if p.Input.Partitions != 10 || !within(p.Direct.MaxRecordsPerSecond, 2*flags.Direct.MaxRecordsPerSecond, 1e-9) {
		t.Errorf("--partitions 10 over the file's 5: partitions %d, direct %v", p.Input.Partitions, p.Direct.MaxRecordsPerSecond)
	}
	// The "input" of a plan's JSON, durations in milliseconds, is a --config file: the same
	// plan again.
	r := klt(t, "", "plan", "--format", "json", "--config", yaml)
	var doc struct{ Input json.RawMessage }
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	again := klt(t, "", "plan", "--format", "json", "--config", writeFile(t, "input.json", string(doc.Input)))
	if again.code != 0 || again.stdout != r.stdout {
		t.Errorf("the plan's input as --config: exit %d, %s; the plan differs:\n%s\nfrom\n%s", again.code, again.stderr, again.stdout, r.stdout)
	}
	// --batch-duration given replaces the file's duration, its alternative.
	p = planJSON(t, 0, "--config", yaml, "--batch-duration", "3s")
	if !within(p.Direct.MaxRecordsPerSecond, 10*flags.Direct.MaxRecordsPerSecond, 1e-9) {
		t.Errorf("--batch-duration 3s over the file's duration: direct %v", p.Direct.MaxRecordsPerSecond)
	}
}

func TestPlanConfigRefused(t *testing.T) {
	// A --config file that is not what klt plan reads fails (exit 1), naming the place and
	// the key: a key that is no input, a key given twice, a figure of the wrong kind.
	for _, c := range []struct{ name, content, want string }{
		{"unknown.yaml", "rate: 100\nduration: 300ms\npartitons: 5\n", `unknown.yaml:3:1: unknown key "partitons" (did you mean "partitions"?)`},
		{"nested.yaml", "rate: 100\nduration: 300ms\nqueue: fifo\n", `unknown key "queue" (did you mean "queue", under fanout?)`},
		{"twice.yaml", "rate: 100\nduration: 300ms\nrate: 200\n", `twice.yaml:3:1: `},
		{"twice.json", `{"rate": 100, "duration": "300ms", "fanout": {"queue": "fifo", "queue": "standard"}}`, `twice.json:1:`},
		{"kind.yaml", "rate: 100\nduration: true\n", `kind.yaml:2:11: duration: want a string, not the bool true`},
		{"ms.yaml", "rate: 100\nduration: -300\n", `ms.yaml:2:11: duration: -300: want a duration (300ms) or a number of milliseconds`},
		{"rate.json", `{"rate": "100", "duration": "1s"}`, `rate.json:1:10: rate: want a number, not "100"`},
		{"null.json", `{"rate": null, "duration": "300ms"}`, `null.json:1:10: rate: want a value, not null`},
		{"size.yaml", "rate: 100\nduration: 1s\nrecord_size: 1e309\n", `size.yaml:3:14: record_size: `},
		{"list.yaml", "- rate\n", `list.yaml:1:1: want a mapping`},
		{"price.yaml", "rate: 100\nduration: 1s\nprices:\n  lambda_gb_secnd: 1\n", `no price "lambda_gb_secnd"`},
	} {
		r := klt(t, "", "plan", "--config", writeFile(t, c.name, c.content))
		if r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", c.name, r.code, r.stderr, c.want)
		}
	}
	if r := klt(t, "", "plan", "--config", filepath.Join(t.TempDir(), "none.yaml")); r.code != 1 || !strings.Contains(r.stderr, "none.yaml") {
		t.Errorf("a missing --config file: exit %d, %q", r.code, r.stderr)
	}
	big := writeFile(t, "big.yaml", "rate: 100\n"+strings.Repeat("# padding\n", 7000))
	if r := klt(t, "", "plan", "--config", big); r.code != 1 || !strings.Contains(r.stderr, "more than 65536 bytes") {
		t.Errorf("a --config file past the cap: exit %d, %q", r.code, r.stderr)
	}
}

func TestPlanUsageErrors(t *testing.T) {
	// A wrong command line exits 2 and names the flag.
	base := []string{"--rate", "100", "--duration", "300ms"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "abc", "--duration", "1s"}, "-rate"},
		{[]string{"--rate", "1e309", "--duration", "1s"}, "-rate"},
		{[]string{"--rate", "NaN", "--duration", "1s"}, "-rate"},
		{[]string{"--rate", "-5", "--duration", "1s"}, "-rate"},
		{append([]string{"--record-size", "1e309"}, base...), "-record-size"},
		{append([]string{"--record-size", "-1KB"}, base...), "-record-size"},
		{append([]string{"--record-size", "2TB"}, base...), "-record-size"},
		{append([]string{"--duration", "300"}, base[:2]...), "-duration"},
		{append([]string{"--window", "-1s"}, base...), "-window"},
		{append([]string{"--partitions", "2.5"}, base...), "-partitions"},
		{append([]string{"--queue", "lifo"}, base...), "-queue"},
		{append([]string{"--mode", "eventual"}, base...), "-mode"},
		{append([]string{"--architecture", "riscv"}, base...), "-architecture"},
		{append([]string{"--price", "lambda_gb_secnd=1"}, base...), "-price"},
		{append([]string{"--price", "lambda_gb_second=0"}, base...), "-price"},
		{append([]string{"--price", "lambda_gb_second"}, base...), "-price"},
		{append([]string{"--format", "yaml"}, base...), "-format"},
		{append([]string{"--from-report-stat", "p99"}, base...), "--from-report-stat"},
		{append([]string{"--batch-duration", "1s"}, base...), "--duration and --batch-duration"},
		{append([]string{"--burst", "50", "--burst-for", "1m"}, base...), "--burst"},
		{append([]string{"--burst-for", "1m"}, base...), "--burst-for"},
		{[]string{"--duration", "300ms"}, "--rate"},
		{[]string{"--rate", "100"}, "--duration"},
		{append([]string{"extra"}, base...), `unexpected argument "extra"`},
		{append([]string{"--nope"}, base...), "-nope"},
		// the model's bounds, named by the flag
		{append([]string{"--batch-size", "20000"}, base...), "klt plan: --batch-size 20000: "},
		{append([]string{"--maximum-concurrency", "1"}, base...), "klt plan: --maximum-concurrency 1: "},
	} {
		r := klt(t, "", append([]string{"plan"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, `Run "klt help plan"`) {
			t.Errorf("klt plan %s: exit %d, stderr %q; want 2 naming %s", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
}

func TestPlanUnreachable(t *testing.T) {
	// A million records a second over 5 partitions at 300 ms each: no design reaches it.
	// The plan is printed all the same (JSON too), and klt says why, exiting 1.
	p := planJSON(t, 1, "--rate", "1000000", "--partitions", "5", "--duration", "300ms")
	if p.Direct.ReachesTarget || p.Fanout.ReachesTarget || p.Cheaper != "" {
		t.Errorf("direct reaches %v, fanout %v, cheaper %q", p.Direct.ReachesTarget, p.Fanout.ReachesTarget, p.Cheaper)
	}
	r := klt(t, "", "plan", "--rate", "1000000", "--partitions", "5", "--duration", "300ms")
	if r.code != 1 || !strings.Contains(r.stderr, "no design reaches 1,000,000 records/s") || !strings.Contains(r.stdout, "cheaper: no design reaches") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

func TestPlanText(t *testing.T) {
	// The text gives each design's figures, the cost by line with a total, the cheaper design
	// and numbered sources; defaults the model filled in are marked.
	r := klt(t, "", "plan", "--rate", "100", "--partitions", "5", "--duration", "300ms", "--maximum-concurrency", "300")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"  --rate ", "100 records/s", "  --batch-size ", "100 *",
		"\ndirect: ", "\nfanout: ", "  max records/s ", "16.7 (", "  reaches 100/s ", "  pollers needed ",
		"  monthly cost: $", "\ncheaper: fanout, $", "\nSources:\n  [1] https://",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the text has no %q:\n%s", want, r.stdout)
		}
	}
}

func TestPlanReport(t *testing.T) {
	// --report DIR writes plan.json (the JSON of --format json) and plan.html: one page that
	// parses, loads nothing (no script, no stylesheet or image from anywhere), and has the four
	// charts, each with a curve per design.
	dir := filepath.Join(t.TempDir(), "plan")
	r := klt(t, "", "plan", "--rate", "500", "--burst", "2000", "--burst-for", "5m", "--duration", "20ms", "--partitions", "12", "--report", dir)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	js, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkPlanJSON(t, js)
	page, err := os.ReadFile(filepath.Join(dir, "plan.html"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	curves := map[string]map[string]bool{} // chart id -> series with a polyline
	var walk func(n *html.Node, chart string)
	walk = func(n *html.Node, chart string) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "link", "img", "iframe", "object":
				t.Errorf("the page has a <%s>", n.Data)
			case "svg":
				chart = htmlAttr(n, "id")
				curves[chart] = map[string]bool{}
			case "polyline":
				if pts := htmlAttr(n, "points"); pts != "" && strings.Contains(htmlAttr(n, "class"), "series") {
					curves[chart][htmlAttr(n, "data-series")] = true
				}
			}
			for _, a := range n.Attr {
				if a.Key == "src" || a.Key == "href" && n.Data != "a" {
					t.Errorf("<%s %s=%q> loads from elsewhere", n.Data, a.Key, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, chart)
		}
	}
	walk(doc, "")
	for _, id := range []string{"throughput-partitions", "throughput-concurrency", "cost-throughput", "burst-lag"} {
		if !curves[id]["direct"] || !curves[id]["fanout"] {
			t.Errorf("chart %s: curves %v; want direct and fanout", id, curves[id])
		}
	}
	for _, want := range []string{`id="design-direct"`, `id="design-fanout"`, `id="sources"`, "Monthly cost: $"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the page has no %s", want)
		}
	}
}

// htmlAttr returns the attribute key of n, or "".
func htmlAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func TestPlanFromReportRefused(t *testing.T) {
	// --from-report reads a klt local report.json; a file that is not one fails (exit 1),
	// named.
	for name, content := range map[string]string{
		"notjson.json": "rate: 100",
		"twice.json":   `{"tool": "klt local", "tool": "x"}`,
	} {
		r := klt(t, "", "plan", "--from-report", writeFile(t, name, content))
		if r.code != 1 || !strings.Contains(r.stderr, name) {
			t.Errorf("%s: exit %d, %q", name, r.code, r.stderr)
		}
	}
	if r := klt(t, "", "plan", "--from-report", filepath.Join(t.TempDir(), "report.json")); r.code != 1 {
		t.Errorf("a missing report: exit %d, %q", r.code, r.stderr)
	}
}

func TestPlanFromReport(t *testing.T) {
	// --from-report plans from a klt local run (testdata/plan/report.json: klt local on the
	// template, 5 partitions, a 100 ms HTTP sink): the stack's configuration and measured
	// times, and the measured records a second as the rate; flags given win over them.
	const rep = "testdata/plan/report.json"
	p := planJSON(t, 0, "--from-report", rep)
	if p.Input.Partitions != 5 || p.Input.Rate <= 0 {
		t.Errorf("input from the report: %+v; want its 5 partitions and its measured rate", p.Input)
	}
	over := planJSON(t, 0, "--from-report", rep, "--partitions", "10", "--rate", "20")
	if over.Input.Partitions != 10 || over.Input.Rate != 20 {
		t.Errorf("--partitions 10 --rate 20 over the report: %+v", over.Input)
	}
	p99 := planJSON(t, 0, "--from-report", rep, "--from-report-stat", "p99")
	if p99.Direct.MaxRecordsPerSecond > p.Direct.MaxRecordsPerSecond {
		t.Errorf("direct from the p99 times: %v records/s, more than from the mean ones, %v", p99.Direct.MaxRecordsPerSecond, p.Direct.MaxRecordsPerSecond)
	}
	r := klt(t, "", "plan", "--from-report", rep)
	if r.code != 0 || !strings.Contains(r.stdout, "\nNotes:\n  - from "+rep+": ") {
		t.Errorf("exit %d; the notes do not say what was read from the report:\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Each load pipeline of the run, measured beside what the plan predicts for it; none
	// without --from-report.
	if len(p.Runs) != 2 || p.Runs[0].Pipeline != "direct" || p.Runs[1].Pipeline != "fan-out" {
		t.Fatalf("runs %+v, want direct and fan-out", p.Runs)
	}
	for _, run := range p.Runs {
		if !(run.Measured > 0) || !(run.RecordsPerSecond > 0) || math.Abs(run.Ratio-run.Measured/run.RecordsPerSecond) > 1e-9 {
			t.Errorf("run %+v: want measured and predicted > 0, ratio their quotient", run)
		}
	}
	if !strings.Contains(r.stdout, "The run the plan was made from, measured beside predicted:\n  direct: measured ") {
		t.Errorf("the text does not set the run's measured beside predicted:\n%s", r.stdout)
	}
	if plain := planJSON(t, 1, "--rate", "100", "--partitions", "5", "--duration", "300ms", "--queue", "fifo", "--message-groups", "1"); plain.Runs != nil {
		t.Errorf("runs without --from-report: %+v", plain.Runs)
	}
}

func TestPlanPrices(t *testing.T) {
	// --price NAME=USD replaces one unit price (its JSON name in the plan's input): twice the
	// EPU-hour price, twice the event poller units' line, and nothing else changes. (30
	// partitions: the direct design reaches the target, so it has a cost.)
	args := []string{"--rate", "100", "--partitions", "30", "--duration", "300ms"}
	base := planJSON(t, 0, args...)
	double := planJSON(t, 0, append(args, "--price", "event_poller_unit_hour=0.37")...)
	lines := func(d planDesign) map[string]float64 {
		m := map[string]float64{}
		for _, c := range d.CostLines {
			m[c.Item] = c.MonthlyUSD
		}
		return m
	}
	b, d := lines(base.Direct), lines(double.Direct)
	epu := false
	for item, usd := range b {
		switch {
		case strings.Contains(strings.ToLower(item), "event poller unit"):
			epu = true
			if !within(d[item], 2*usd, 1e-9) {
				t.Errorf("%s: $%v at $0.37 an EPU-hour, $%v at the default", item, d[item], usd)
			}
		case d[item] != usd:
			t.Errorf("%s: $%v, was $%v: only the EPU line may change", item, d[item], usd)
		}
	}
	if !epu {
		t.Errorf("no event poller units line among %v", b)
	}
}
