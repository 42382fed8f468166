package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
)

// Fixtures of the repository, shared with users (see testdata/filters/README.md).
const (
	mskEvent        = "../../testdata/events/msk.json"
	sqsEvent        = "../../testdata/sqs/orders-sqs.json"
	ordersCriteria  = "../../testdata/filters/orders-criteria.json"
	placedPattern   = "../../testdata/filters/placed-orders-pattern.json"
	exampleTemplate = "../../testdata/template-example.yaml"
)

// The SQS fixture's messageIds.
const (
	sqsPlaced    = "059f36b4-87a3-44ab-83d2-661975830a7d"
	sqsCancelled = "2e1424d4-f796-459a-8184-9c92662be6da"
	sqsPing      = "c80e8021-a70a-42c7-a470-796e1186f753"
	sqsSmall     = "4a4b1f0c-5e7d-4b8a-9f2e-3c6d1a0b9e21"
)

// checkLines checks that text has as many lines as want and that each starts with its want.
// The reasons after a path are the engine's words, so tests give only their start.
func checkLines(t *testing.T, text string, want []string) {
	t.Helper()
	got := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(got), len(want), text)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d:\n got %q\nwant %q...", i+1, got[i], want[i])
		}
	}
}

// mskVerdicts are the lines of the MSK fixture against the orders criteria: euro orders of 20
// or more (filter 0), or any order above 100 (filter 1).
var mskVerdicts = []string{
	"PASS #0 orders-0@15  filter 0",
	"DROP #1 orders-0@16  filter 0: value.total: got 12.5, want ",
	"PASS #2 orders-0@17  filter 1",
	"2 of 3 records pass",
}

func TestFilterTestKafka(t *testing.T) {
	// The same filters, from a CloudFormation-shape JSON file and from a SAM template whose
	// second pattern is a YAML mapping, give the same verdicts.
	for _, criteria := range []string{ordersCriteria, exampleTemplate + "#OrdersConsumer.Orders"} {
		t.Run(criteria, func(t *testing.T) {
			r := klt(t, "", "filter", "test", "--criteria", criteria, "--event", mskEvent)
			if r.code != base.ExitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			checkLines(t, r.stdout, mskVerdicts)
			// a dropped record says why for every filter
			if !strings.Contains(r.stdout, "; filter 1: value.total: got 12.5, want ") {
				t.Errorf("filter 1's miss is not given:\n%s", r.stdout)
			}
		})
	}
}

func TestFilterTestSQS(t *testing.T) {
	want := []string{
		"PASS #0 " + sqsPlaced + "  filter 0",
		"DROP #1 " + sqsCancelled + `  filter 0: body.status: got "CANCELLED", want ["PLACED"]`,
		"DROP #2 " + sqsPing + "  filter 0: body: ", // a plain-text body against a JSON pattern
		"PASS #3 " + sqsSmall + "  filter 0",
		"2 of 4 records pass",
	}
	for _, criteria := range []string{placedPattern, exampleTemplate + "#OrdersWorker.PlacedOrders"} {
		t.Run(criteria, func(t *testing.T) {
			r := klt(t, "", "filter", "test", "--criteria", criteria, "--event", sqsEvent)
			if r.code != base.ExitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			checkLines(t, r.stdout, want)
		})
	}
}

func TestFilterTestJSON(t *testing.T) {
	r := klt(t, "", "filter", "test", "--json", "--criteria", ordersCriteria, "--event", mskEvent)
	if r.code != base.ExitOK || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, one per record and no summary:\n%s", r.stdout)
	}
	type miss struct {
		Filter int    `json:"filter"`
		Path   string `json:"path"`
		Reason string `json:"reason"`
	}
	type line struct {
		Index  int    `json:"index"`
		ID     string `json:"id"`
		Pass   bool   `json:"pass"`
		Filter *int   `json:"filter"`
		Misses []miss `json:"misses"`
	}
	var got []line
	for _, l := range lines {
		var v line
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		got = append(got, v)
	}
	zero, one := 0, 1
	if g := got[0]; g.Index != 0 || g.ID != "orders-0@15" || !g.Pass || g.Filter == nil || *g.Filter != zero || g.Misses != nil {
		t.Errorf("record 0: %+v", g)
	}
	if g := got[2]; g.Index != 2 || g.ID != "orders-0@17" || !g.Pass || g.Filter == nil || *g.Filter != one {
		t.Errorf("record 2: %+v", g)
	}
	g := got[1]
	if g.Index != 1 || g.ID != "orders-0@16" || g.Pass || g.Filter != nil || len(g.Misses) != 2 {
		t.Fatalf("record 1: %+v", g)
	}
	for i, m := range g.Misses {
		if m.Filter != i || m.Path != "value.total" || !strings.HasPrefix(m.Reason, "got 12.5, want ") {
			t.Errorf("record 1, miss %d: %+v", i, m)
		}
	}
	if !strings.Contains(lines[1], `"pass":false`) || strings.Contains(lines[1], `"filter":null`) {
		t.Errorf("a dropped record has pass false and no filter: %s", lines[1])
	}
}

func TestFilterTestExpectations(t *testing.T) {
	// The exit status says whether expectations hold; each record that breaks one is named on
	// stderr with the reason. Stdout is the same whether they hold or not.
	tests := []struct {
		name   string
		event  string
		args   []string
		code   int
		stderr []string // the start of each stderr line
	}{
		{"none: dropped records are fine", mskEvent, nil, base.ExitOK, nil},
		{"pass and drop by number", mskEvent, []string{"--expect-pass", "0,2", "--expect-drop", "1"}, base.ExitOK, nil},
		{"by id", mskEvent, []string{"--expect-pass", "orders-0@15, orders-0@17", "--expect-drop", "orders-0@16"}, base.ExitOK, nil},
		{"repeated flag", mskEvent, []string{"--expect-pass", "0", "--expect-pass", "2"}, base.ExitOK, nil},
		{"some records only", mskEvent, []string{"--expect-drop", "1"}, base.ExitOK, nil},
		{"a pass expected", mskEvent, []string{"--expect-pass", "0,1,2"}, base.ExitFail, []string{
			"klt: " + mskEvent + ": #1 orders-0@16 is dropped (filter 0: value.total: got 12.5, want ",
		}},
		{"a drop expected", mskEvent, []string{"--expect-drop", "orders-0@15,2"}, base.ExitFail, []string{
			"klt: " + mskEvent + ": #0 orders-0@15 passes (filter 0); --expect-drop wants it dropped",
			"klt: " + mskEvent + ": #2 orders-0@17 passes (filter 1); --expect-drop wants it dropped",
		}},
		{"all-pass", mskEvent, []string{"--expect", "all-pass"}, base.ExitFail, []string{
			"klt: " + mskEvent + ": #1 orders-0@16 is dropped (",
		}},
		{"all-drop", mskEvent, []string{"--expect", "all-drop"}, base.ExitFail, []string{
			"klt: " + mskEvent + ": #0 orders-0@15 passes (filter 0); --expect all-drop wants it dropped",
			"klt: " + mskEvent + ": #2 orders-0@17 passes (filter 1); --expect all-drop wants it dropped",
		}},
		{"no such record number", mskEvent, []string{"--expect-pass", "0,3"}, base.ExitFail, []string{
			"klt: " + mskEvent + ": --expect-pass: no record 3: the event has 3, numbered from 0",
		}},
		{"no such id", mskEvent, []string{"--expect-drop", "orders-1@16"}, base.ExitFail, []string{
			"klt: " + mskEvent + `: --expect-drop: no record "orders-1@16" in the event; its records are orders-0@15, orders-0@16, orders-0@17`,
		}},
		{"SQS by messageId", sqsEvent, []string{"--expect-pass", sqsPlaced + ",3", "--expect-drop", sqsCancelled + "," + sqsPing}, base.ExitOK, nil},
		{"SQS id list is cut short", sqsEvent, []string{"--expect-pass", "x"}, base.ExitFail, []string{
			"klt: " + sqsEvent + `: --expect-pass: no record "x" in the event; its records are ` + sqsPlaced + ", " + sqsCancelled + ", " + sqsPing + ", ...",
		}},
		{"SQS all-pass", sqsEvent, []string{"--expect", "all-pass"}, base.ExitFail, []string{
			"klt: " + sqsEvent + ": #1 " + sqsCancelled + ` is dropped (filter 0: body.status: got "CANCELLED", want ["PLACED"]); --expect all-pass wants it to pass`,
			"klt: " + sqsEvent + ": #2 " + sqsPing + " is dropped (filter 0: body: ",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			criteria := ordersCriteria
			if tt.event == sqsEvent {
				criteria = placedPattern
			}
			args := append([]string{"filter", "test", "--criteria", criteria, "--event", tt.event}, tt.args...)
			r := klt(t, "", args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tt.code, r.stderr)
			}
			if tt.stderr == nil {
				if r.stderr != "" {
					t.Errorf("stderr %q, want nothing", r.stderr)
				}
			} else {
				checkLines(t, r.stderr, tt.stderr)
			}
			if !strings.Contains(r.stdout, " records pass\n") {
				t.Errorf("the verdicts are not printed:\n%s", r.stdout)
			}
		})
	}
}

func TestFilterTestCriteriaForms(t *testing.T) {
	// Every SRC form gives the same verdicts on the MSK fixture.
	patterns := []string{
		`{"value":{"currency":["EUR"],"total":[{"numeric":[">=",20]}]}}`,
		`{"value":{"total":[{"numeric":[">",100]}]}}`,
	}
	cfn, _ := json.Marshal(map[string]any{"Filters": []map[string]string{{"Pattern": patterns[0]}, {"Pattern": patterns[1]}}})
	esm := `{"UUID":"a1b2","State":"Enabled","FilterCriteria":` + string(cfn) + `}`
	yamlTemplate := "Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties:\n      Events:\n        Ev:\n" +
		"          Type: MSK\n          Properties:\n            Stream: !Ref Cluster\n            FilterCriteria:\n" +
		"              Filters:\n                - Pattern: '" + patterns[0] + "'\n" +
		"                - Pattern: {value: {total: [{numeric: ['>', 100]}]}}\n"
	jsonTemplate := `{"Resources":{"M":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{` +
		`"FunctionName":{"Ref":"Fn"},"FilterCriteria":` + string(cfn) + `}}}}`
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name, src, stdin string
	}{
		{"CloudFormation JSON", write("cfn.json", string(cfn)), ""},
		{"get-event-source-mapping output", write("esm.json", esm), ""},
		{"template, event named", write("t.yaml", yamlTemplate) + "#Fn.Ev", ""},
		{"template, its only FilterCriteria", filepath.Join(dir, "t.yaml"), ""},
		{"JSON template, mapping named", write("t.json", jsonTemplate) + "#M", ""},
		{"a file name with #", write("a#b.json", string(cfn)), ""},
		{"stdin, CloudFormation JSON", "-", string(cfn)},
		{"stdin, template", "-#Fn.Ev", yamlTemplate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := klt(t, tt.stdin, "filter", "test", "--criteria", tt.src, "--event", mskEvent)
			if r.code != base.ExitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			checkLines(t, r.stdout, mskVerdicts)
		})
	}

	// A lone pattern is one filter.
	r := klt(t, "", "filter", "test", "--criteria", write("p.json", "\n"+patterns[1]+"\n"), "--event", mskEvent)
	if r.code != base.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	checkLines(t, r.stdout, []string{"DROP #0 orders-0@15  filter 0: value.total: got 59.9, want ", "DROP #1", "PASS #2", "1 of 3 records pass"})
}

func TestFilterTestEventFromStdin(t *testing.T) {
	data, err := os.ReadFile(mskEvent)
	if err != nil {
		t.Fatal(err)
	}
	r := klt(t, string(data), "filter", "test", "--criteria", ordersCriteria, "--event", "-", "--expect-drop", "1")
	if r.code != base.ExitOK || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	checkLines(t, r.stdout, mskVerdicts)
}

func TestFilterTestBadInput(t *testing.T) {
	// Input that cannot be used exits 1 with "klt: FILE...: what is wrong" and no verdicts.
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	missing := filepath.Join(dir, "missing.json")
	badCriteria := write("bad.json", `{"Filters":[{"Pattern":"{\"value\":{\"a\":[]}}"},{"Pattern":"{\"value\":5}"}]}`)
	badJSON := write("c.json", "{\n  \"Filters\": [\n    {\"Pattern\": \"x\"},,\n")
	badPattern := write("p.json", `{"value":{"x":[{"wildcard":"a*"}]}}`)
	twoCriteria := write("two.yaml", "Resources:\n  A:\n    Type: AWS::Lambda::EventSourceMapping\n"+
		"    Properties: {FilterCriteria: {Filters: [{Pattern: '{}'}]}}\n  B:\n    Type: AWS::Lambda::EventSourceMapping\n"+
		"    Properties: {FilterCriteria: {Filters: [{Pattern: '{}'}]}}\n")
	notJSON := write("e1.json", "{\n  \"Records\": [\n    x\n")
	notObject := write("e2.json", "[1]")
	kinesis := write("e3.json", `{"eventSource":"aws:kinesis","records":{}}`)
	emptyKafka := write("e4.json", `{"eventSource":"SelfManagedKafka","records":{}}`)
	emptySQS := write("e5.json", `{"Records":[]}`)
	sns := write("e6.json", `{"Records":[{"EventSource":"aws:sns","Sns":{"Message":"x"}}]}`)
	sqsWrongType := write("e7.json", `{"Records":[{"messageId":5}]}`)
	tests := []struct {
		name            string
		criteria, event string
		stderr          []string
	}{
		{"criteria file missing", missing, mskEvent, []string{"klt: open " + missing + ": no such file or directory"}},
		{"template file missing", missing + "#Fn.Ev", mskEvent, []string{"klt: open " + missing + ": no such file or directory"}},
		{"event file missing", ordersCriteria, missing, []string{"klt: open " + missing + ": no such file or directory"}},
		{"invalid criteria JSON", badJSON, mskEvent, []string{
			"klt: " + badJSON + ":3:22: invalid JSON: invalid character ',' looking for beginning of value"}},
		{"invalid criteria", badCriteria, mskEvent, []string{
			"klt: " + badCriteria + ": Filters[0]: value.a: ",
			"klt: " + badCriteria + ": Filters[1]: value: ",
		}},
		{"invalid lone pattern", badPattern, mskEvent, []string{
			"klt: " + badPattern + ": value.x: wildcard is an EventBridge operator that Lambda's FilterCriteria do not support (--eventbridge accepts it)",
		}},
		{"template with two FilterCriteria", twoCriteria, mskEvent, []string{
			"klt: " + twoCriteria + " has 2 FilterCriteria; name one: " + twoCriteria + "#A, " + twoCriteria + "#B",
		}},
		{"template event missing", exampleTemplate + "#OrdersConsumer.Nope", mskEvent, []string{
			"klt: " + exampleTemplate + `:61:7: function OrdersConsumer has no event "Nope"; events of OrdersConsumer: Orders`,
		}},
		{"template function missing", exampleTemplate + "#Nope.Orders", mskEvent, []string{
			"klt: " + exampleTemplate + `: no resource "Nope" in Resources; functions in template: OrdersConsumer, OrdersWorker`,
		}},
		{"not an event", ordersCriteria, placedPattern, []string{
			"klt: " + placedPattern + ": neither a Kafka event (with eventSource aws:kafka or SelfManagedKafka and records) nor an SQS event (with Records)",
		}},
		{"event not JSON", ordersCriteria, notJSON, []string{"klt: " + notJSON + ":3:5: invalid JSON: invalid character 'x'"}},
		{"event not an object", ordersCriteria, notObject, []string{"klt: " + notObject + ": want a Kafka or an SQS event, a JSON object"}},
		{"bad Kafka event", ordersCriteria, kinesis, []string{"klt: " + kinesis + ": kafkaevent: eventSource: "}},
		{"empty Kafka event", ordersCriteria, emptyKafka, []string{"klt: " + emptyKafka + ": no records; Lambda never sends an event without one"}},
		{"empty SQS event", placedPattern, emptySQS, []string{"klt: " + emptySQS + ": no records; Lambda never sends an event without one"}},
		{"SNS event", placedPattern, sns, []string{"klt: " + sns + `: Records[0].eventSource is "aws:sns"; an SQS event has aws:sqs`}},
		{"SQS record of the wrong type", placedPattern, sqsWrongType, []string{
			"klt: " + sqsWrongType + ": not an SQS event: json: cannot unmarshal number into Go struct field "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := klt(t, "", "filter", "test", "--criteria", tt.criteria, "--event", tt.event, "--expect", "all-pass")
			if r.code != base.ExitFail {
				t.Errorf("exit %d, want %d", r.code, base.ExitFail)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			checkLines(t, r.stderr, tt.stderr)
		})
	}
}

func TestFilterTestMalformedRecord(t *testing.T) {
	// A Kafka record whose own fields are malformed still gets its line, ERROR, since Lambda's
	// verdict on it is not known; the run fails.
	ev := writeFile(t, "e.json", `{"eventSource":"SelfManagedKafka","records":{"orders-0":[
		{"topic":"orders","partition":0,"offset":1,"timestamp":1768471200000,"timestampType":"CREATE_TIME","value":"eyJ0b3RhbCI6MTAxfQ==","headers":[]},
		{"topic":"orders","partition":0,"offset":2,"timestamp":1768471200000,"timestampType":"CREATE_TIME","value":"!!","headers":[]}]}}`)
	r := klt(t, "", "filter", "test", "--criteria", ordersCriteria, "--event", ev)
	if r.code != base.ExitFail {
		t.Errorf("exit %d, want %d", r.code, base.ExitFail)
	}
	checkLines(t, r.stdout, []string{"PASS  #0 orders-0@1  filter 1", "ERROR #1 orders-0@2  verdict unknown: ", "1 of 2 records pass; 1 unknown"})
	checkLines(t, r.stderr, []string{"klt: " + ev + ": #1 orders-0@2 is malformed, so Lambda's verdict is not known: kafkaevent: "})

	r = klt(t, "", "filter", "test", "--json", "--criteria", ordersCriteria, "--event", ev)
	if !strings.Contains(r.stdout, `"id":"orders-0@2","pass":null,`) || !strings.Contains(r.stdout, `"error":"kafkaevent: `) {
		t.Errorf("the JSON line of the malformed record has no error:\n%s", r.stdout)
	}
}

func TestFilterTestSourceMismatch(t *testing.T) {
	// FilterCriteria of an SQS event source tried on a Kafka event is allowed, with a warning.
	r := klt(t, "", "filter", "test", "--criteria", exampleTemplate+"#OrdersWorker.PlacedOrders", "--event", mskEvent)
	if r.code != base.ExitOK {
		t.Errorf("exit %d, want 0", r.code)
	}
	want := "klt: warning: " + exampleTemplate + "#OrdersWorker.PlacedOrders is an event of Type SQS, but " + mskEvent + " is a Kafka event\n" +
		"klt: warning: " + exampleTemplate + `#OrdersWorker.PlacedOrders: filter 0 names "body", an SQS message's field: Lambda filters Kafka records on "value" only, so to it "body" is always missing` + "\n"
	if r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
}

func TestFilterEngineFlags(t *testing.T) {
	// --eventbridge, --legacy-numbers and --max-filters reach the engine, in both commands.
	wildcard := writeFile(t, "w.json", `{"value":{"customer":[{"wildcard":"c-4*"}]}}`)
	big := writeFile(t, "big.json", `{"value":{"total":[{"numeric":["<",6e9]}]}}`)
	var six []map[string]string
	for range 6 {
		six = append(six, map[string]string{"Pattern": `{"value":{"currency":["EUR"]}}`})
	}
	sixJSON, _ := json.Marshal(map[string]any{"Filters": six})
	sixFilters := writeFile(t, "six.json", string(sixJSON))
	tests := []struct {
		src  string
		args []string
		code int
	}{
		{wildcard, nil, base.ExitFail},
		{wildcard, []string{"--eventbridge"}, base.ExitOK},
		{big, nil, base.ExitOK},
		{big, []string{"--legacy-numbers"}, base.ExitFail},
		{sixFilters, nil, base.ExitFail},
		{sixFilters, []string{"--max-filters", "10"}, base.ExitOK},
		{sixFilters, []string{"--max-filters=5"}, base.ExitFail},
	}
	for _, tt := range tests {
		name := filepath.Base(tt.src) + " " + strings.Join(tt.args, " ")
		t.Run(name, func(t *testing.T) {
			r := klt(t, "", append([]string{"filter", "lint", tt.src}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("lint: exit %d, want %d: %s", r.code, tt.code, r.stderr)
			}
			r = klt(t, "", append([]string{"filter", "test", "--criteria", tt.src, "--event", mskEvent}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("test: exit %d, want %d: %s", r.code, tt.code, r.stderr)
			}
		})
	}
	// wildcard matches with --eventbridge: c-42 is the customer of records 0 and 2
	r := klt(t, "", "filter", "test", "--eventbridge", "--criteria", wildcard, "--event", mskEvent, "--expect-pass", "0,2", "--expect-drop", "1")
	if r.code != base.ExitOK {
		t.Errorf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}

func TestFilterLint(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string
		stderr []string
	}{
		{"CloudFormation JSON", []string{ordersCriteria}, "", base.ExitOK, "ok: 2 filters\n", nil},
		{"a pattern", []string{placedPattern}, "", base.ExitOK, "ok: 1 filter\n", nil},
		{"a whole template", []string{exampleTemplate}, "", base.ExitOK, "ok: 3 filters in 2 FilterCriteria\n", nil},
		{"one event of a template", []string{exampleTemplate + "#OrdersWorker.PlacedOrders"}, "", base.ExitOK, "ok: 1 filter\n", nil},
		{"several", []string{ordersCriteria, placedPattern, "testdata/filter/intrinsics.yaml"}, "", base.ExitOK, "ok: 8 filters in 5 FilterCriteria\n", nil},
		{"stdin", []string{"-"}, `{"body":{"a":["x"]}}`, base.ExitOK, "ok: 1 filter\n", nil},
		{"every problem of every SRC", []string{"testdata/filter/intrinsics.yaml", "BAD", "MISSING#Fn.Ev", exampleTemplate + "#OrdersWorker"}, "", base.ExitFail, "", []string{
			"klt: BAD: Filters[0]: body.a: ",
			"klt: BAD: Filters[2]: body.b.c: ",
			"klt: open MISSING: no such file or directory",
			"klt: " + exampleTemplate + ": OrdersWorker is a function: name one of its events, as " + exampleTemplate + "#OrdersWorker.EVENT; events of OrdersWorker: PlacedOrders",
		}},
	}
	bad := writeFile(t, "bad.json", `{"Filters":[{"Pattern":"{\"body\":{\"a\":[]}}"},{"Pattern":"{\"body\":{\"b\":[\"ok\"]}}"},{"Pattern":"{\"body\":{\"b\":{\"c\":5}}}"}]}`)
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"filter", "lint"}
			for _, a := range tt.args {
				a = strings.Replace(a, "BAD", bad, 1)
				args = append(args, strings.Replace(a, "MISSING", missing, 1))
			}
			for i := range tt.stderr {
				tt.stderr[i] = strings.Replace(strings.Replace(tt.stderr[i], "BAD", bad, 1), "MISSING", missing, 1)
			}
			r := klt(t, tt.stdin, args...)
			if r.code != tt.code || r.stdout != tt.stdout {
				t.Errorf("exit %d, stdout %q; want %d, %q", r.code, r.stdout, tt.code, tt.stdout)
			}
			if tt.stderr == nil {
				if r.stderr != "" {
					t.Errorf("stderr %q, want nothing", r.stderr)
				}
			} else {
				checkLines(t, r.stderr, tt.stderr)
			}
		})
	}
}

func TestFilterUsageErrors(t *testing.T) {
	// Command-line mistakes exit 2 before reading anything, with a pointer to the help.
	tests := []struct {
		args []string
		want string // first line of stderr
	}{
		{[]string{"filter"}, "Usage: klt filter <command> [arguments]"},
		{[]string{"filter", "run"}, `klt filter: unknown command "run"`},
		{[]string{"filter", "test"}, "klt filter test: --criteria is required"},
		{[]string{"filter", "test", "--criteria", "c.json"}, "klt filter test: --event is required"},
		{[]string{"filter", "test", "--event", "e.json"}, "klt filter test: --criteria is required"},
		{[]string{"filter", "test", "--criteria", "c.json", "e.json"}, `klt filter test: unexpected argument "e.json"; give the event with --event FILE`},
		{[]string{"filter", "test", "--criteria", "-", "--event", "-"}, "klt filter test: --criteria and --event cannot both read standard input"},
		{[]string{"filter", "test", "--criteria", "c", "--event", "e", "--expect", "some-pass"}, `klt filter test: --expect: want all-pass or all-drop, got "some-pass"`},
		{[]string{"filter", "test", "--criteria", "c", "--event", "e", "--expect", "all-pass", "--expect-drop", "1"}, "klt filter test: --expect cannot be combined with --expect-pass or --expect-drop"},
		{[]string{"filter", "test", "--criteria", "c", "--event", "e", "--expect-pass", "1,2", "--expect-drop", "2"}, "klt filter test: record 2 is in both --expect-pass and --expect-drop"},
		{[]string{"filter", "test", "--criteria", "c", "--event", "e", "--expect-pass", "1,,2"}, `klt filter test: invalid value "1,,2" for flag -expect-pass: empty entry; want record numbers or ids separated by commas`},
		{[]string{"filter", "test", "--criteria", "c", "--event", "e", "--max-filters", "7"}, "klt filter test: --max-filters: want 5 (the default quota) or 10 (after a quota increase), got 7"},
		{[]string{"filter", "test", "--criteria", "c", "--event", "e", "--max-filters", "ten"}, `klt filter test: invalid value "ten" for flag -max-filters: parse error`},
		{[]string{"filter", "test", "--verbose"}, "klt filter test: flag provided but not defined: -verbose"},
		{[]string{"filter", "lint"}, "klt filter lint: want at least one SRC: a FilterCriteria or pattern JSON file, or a template"},
		{[]string{"filter", "lint", "-", "--", "-#Fn.Ev"}, `klt filter lint: standard input ("-") can be read only once`},
		{[]string{"filter", "lint", "--max-filters", "20", "c.json"}, "klt filter lint: --max-filters: want 5 (the default quota) or 10 (after a quota increase), got 20"},
		{[]string{"filter", "lint", "--json", "c.json"}, "klt filter lint: flag provided but not defined: -json"},
		{[]string{"help", "filter", "nope"}, `klt help: unknown command "filter nope"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := klt(t, "", tt.args...)
			if r.code != base.ExitUsage {
				t.Errorf("exit %d, want %d", r.code, base.ExitUsage)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			first, rest, _ := strings.Cut(r.stderr, "\n")
			if first != tt.want {
				t.Errorf("stderr starts\n %q\nwant\n %q", first, tt.want)
			}
			if rest == "" {
				t.Errorf("stderr has no usage or pointer to help after the error: %q", r.stderr)
			}
		})
	}
}

func TestFilterHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"filter test", "filter lint"}},
		{[]string{"filter", "--help"}, []string{"klt filter <command>", "test --criteria SRC --event FILE", "lint [flags] SRC...", "TEMPLATE#FUNC.EVENT"}},
		{[]string{"filter", "help"}, []string{"klt filter <command>"}},
		{[]string{"help", "filter"}, []string{"klt filter <command>"}},
		{[]string{"filter", "help", "test"}, []string{"klt filter test --criteria SRC --event FILE"}},
		{[]string{"filter", "test", "-h"}, []string{
			"klt filter test --criteria SRC --event FILE",
			"PASS #0 orders-0@15  filter 0", "2 of 3 records pass", "TOPIC-PARTITION@OFFSET", "messageId",
			"-criteria SRC", "-event FILE", "-json", "-expect-pass LIST", "-expect-drop LIST", "-expect WHAT",
			"-eventbridge", "-legacy-numbers", "-max-filters N",
			"Exit status: 0", "In CI", "--expect-pass 0,2 --expect-drop orders-0@16",
		}},
		{[]string{"filter", "lint", "--help"}, []string{
			"klt filter lint [flags] SRC...", "ok: N filters", "-eventbridge", "-legacy-numbers", "-max-filters N",
			"klt filter lint template.yaml",
		}},
		{[]string{"help", "filter", "lint"}, []string{"klt filter lint [flags] SRC..."}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := klt(t, "", tt.args...)
			if r.code != base.ExitOK || r.stderr != "" {
				t.Errorf("exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("help does not contain %q:\n%s", w, r.stdout)
				}
			}
		})
	}
}

func TestFilterHelpExamplesRun(t *testing.T) {
	// The "klt filter test" examples of the help hold on the repository's fixtures.
	t.Chdir("../..")
	var cmds [][]string
	text := strings.ReplaceAll(helpTopics()["filter test"]+helpTopics()[""], "\\\n", "")
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "klt filter test --") || strings.Contains(line, "|") {
			continue
		}
		line = strings.ReplaceAll(line, " event.json", " testdata/events/msk.json")
		cmds = append(cmds, strings.Fields(line)[1:])
	}
	if len(cmds) < 4 {
		t.Fatalf("found %d examples: %q", len(cmds), cmds)
	}
	for _, args := range cmds {
		if r := klt(t, "", args...); r.code != base.ExitOK {
			t.Errorf("klt %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
}
