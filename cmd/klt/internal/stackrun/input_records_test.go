package stackrun

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenerator: {{seq}} numbers the records of a phase from 1 and {{key}} draws from K keys
// in turn, zero-padded; a JSON template that would not make JSON is refused before anything
// runs, as is an unknown placeholder.
func TestGenerator(t *testing.T) {
	g, err := newGenerator(`{"id":{{seq}},"customer":"{{ key }}"}`, 12)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := g.records(13)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 13 || recs[0].Seq != 1 || string(recs[0].Key) != "key-00" || string(recs[11].Key) != "key-11" || string(recs[12].Key) != "key-00" {
		t.Fatalf("records: %+v", recs)
	}
	var v struct {
		ID       int    `json:"id"`
		Customer string `json:"customer"`
	}
	if err := json.Unmarshal(recs[12].Value, &v); err != nil || v.ID != 13 || v.Customer != "key-00" {
		t.Errorf("record 13: %s (%v)", recs[12].Value, err)
	}
	for _, bad := range []string{`{"id":{{seq}},"customer":{{key}}}`, `{"id":{{n}}}`} {
		if _, err := newGenerator(bad, 3); err == nil {
			t.Errorf("newGenerator(%s) accepted", bad)
		}
	}
	if _, err := newGenerator("plain text {{seq}}", 3); err != nil {
		t.Errorf("a text template: %v", err)
	}
}

// TestGeneratorHeaders: --header gives every generated record its headers, in order, their
// values expanded as the value's.
func TestGeneratorHeaders(t *testing.T) {
	hs := HeaderFlag{Headers: new([][2]string)}
	for _, h := range []string{"correlation-id=order-{{seq}}", "customer={{key}}"} {
		if err := hs.Set(h); err != nil {
			t.Fatal(err)
		}
	}
	src, err := newRecordSource(t.Context(), Input{Generate: `{"id":{{seq}}}`, Keys: 2, Headers: hs})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := src.records(3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		for _, h := range r.Headers {
			got = append(got, h.Key+"="+string(h.Value))
		}
	}
	if want := "[correlation-id=order-1 customer=key-0 correlation-id=order-2 customer=key-1 correlation-id=order-3 customer=key-0]"; fmt.Sprint(got) != want {
		t.Errorf("headers %v, want %s", got, want)
	}
}

// TestRecordFile: the file's records in order, repeated --repeat times at most (0 cycles);
// a load past them is refused with the figures, and a bad line is reported as FILE:LINE.
func TestRecordFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "r.jsonl")
	os.WriteFile(name, []byte(`{"key":"a","value":{"n":1}}
{"key":"b","value":"two","headers":{"h":"v"}}
`), 0o644)
	src, err := readRecordFile(context.Background(), name, 2)
	if err != nil {
		t.Fatal(err)
	}
	if src.count() != 4 {
		t.Errorf("count %d, want 4", src.count())
	}
	recs, err := src.records(3)
	if err != nil {
		t.Fatal(err)
	}
	if string(recs[2].Key) != "a" || recs[2].Seq != 3 || string(recs[1].Value) != "two" || len(recs[1].Headers) != 1 || recs[1].Line != 2 {
		t.Errorf("records: %+v", recs)
	}
	if _, err := src.records(5); err == nil || !strings.Contains(err.Error(), "2 records and --repeat is 2") {
		t.Errorf("records(5): %v", err)
	}
	cyc, err := readRecordFile(context.Background(), name, 0)
	if err != nil || cyc.count() != 0 {
		t.Fatalf("cycle: %v %d", err, cyc.count())
	}
	if recs, err := cyc.records(7); err != nil || len(recs) != 7 || string(recs[6].Key) != "a" {
		t.Errorf("cycled records: %v", err)
	}
	os.WriteFile(name, []byte("{\"key\":\"a\"}\n{\"value\":1,\"nope\":2}\n"), 0o644)
	if _, err := readRecordFile(context.Background(), name, 1); err == nil || !strings.Contains(err.Error(), "r.jsonl:2:") {
		t.Errorf("bad line: %v", err)
	}
}

// TestParseFault: every kind of fault, its selector or count, and the mistakes a user makes.
func TestParseFault(t *testing.T) {
	for in, want := range map[string]FaultSpec{
		"timeout:seq=5":           {Kind: faultTimeout, Select: selector{Seq: 5}},
		"crash@Worker:key=k-1":    {Kind: faultCrash, Function: "Worker", Select: selector{Key: "k-1"}},
		"http:seq=2":              {Kind: faultHTTP, Select: selector{Seq: 2}},
		`value:seq=3:{"a":"b:c"}`: {Kind: faultValue, Select: selector{Seq: 3}, Value: `{"a":"b:c"}`},
		"dynamodb:2:PutItem":      {Kind: faultDynamoDB, N: 2, Op: "PutItem"},
		"sqs:1":                   {Kind: faultSQS, N: 1},
		"kafka:3":                 {Kind: faultKafka, N: 3},
	} {
		got, err := ParseFault(in)
		want.Text = in
		if err != nil || got != want {
			t.Errorf("ParseFault(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"timeout", "timeout:5", "timeout:seq=0", "poison:seq=1", "kafka:0", "kafka:2:Produce",
		"http@F:seq=1", "value:seq=1", "value:seq=1:{{nope}}", "sqs:x", "key=", "crash:key="} {
		if _, err := ParseFault(bad); err == nil {
			t.Errorf("ParseFault(%q) accepted", bad)
		}
	}
}

// TestSelectorAndValueFault: seq=N is the Nth record of the phase, key=K its first with that
// key; a value fault replaces the value, its placeholders expanded for that record.
func TestSelectorAndValueFault(t *testing.T) {
	g, _ := newGenerator(`{"n":{{seq}}}`, 2)
	recs, _ := g.records(6)
	f1, _ := ParseFault(`value:key=key-1:{"n":{{seq}},"poison":"{{key}}"}`)
	f2, _ := ParseFault("timeout:seq=5")
	f3, _ := ParseFault("crash:seq=9")
	arms := applyValueFaults([]FaultSpec{f1, f2, f3}, recs, "t")
	if len(arms) != 3 || !arms[0].found || arms[0].seq != 2 || !arms[1].found || arms[1].seq != 5 || arms[2].found {
		t.Fatalf("armed: %+v", arms)
	}
	if string(recs[1].Value) != `{"n":2,"poison":"key-1"}` || string(recs[3].Value) != `{"n":4}` {
		t.Errorf("values: %s %s", recs[1].Value, recs[3].Value)
	}
}
