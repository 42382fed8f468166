package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/esmevent"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// wire returns the compact wire JSON of ev, followed by a newline, as "build --compact" writes it.
func wire(t *testing.T, ev *kafkaevent.Event) string {
	t.Helper()
	b, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func TestBuild(t *testing.T) {
	// Each line becomes the record a Builder makes from the same fields.
	in := strings.Join([]string{
		`{"topic":"orders","partition":1,"key":"o-1","value":{"id":1,"total":9.50}}`,
		`{"topic":"orders","partition":1,"key":"o-1","value":null,"headers":{"trace":"abc","empty":"","none":null}}`,
		`{"topic":"orders","partition":0,"offset":41,"keyBase64":"AP8=","valueBase64":"gA==","timestamp":1700000000123,"timestampType":"LOG_APPEND_TIME"}`,
		`{"topic":"orders","partition":0,"key":"","value":"","timestamp":"2026-03-01T12:00:00.5+02:00"}`,
		`{"topic":"audit","headers":[{"key":"h","value":"1"},{"key":"h","valueBase64":"/w=="},{"key":"n"}],"keySchema":{"dataFormat":"AVRO","schemaId":"7"},"valueSchema":{"dataFormat":"JSON","schemaId":"12345678-1234-1234-1234-123456789012"}}`,
		`{"topic":"audit","timestamp":-1,"timestampType":"NO_TIMESTAMP_TYPE","value":"v"}`,
	}, "\n") + "\n"
	want := kafkaeventtest.NewBuilder().
		Add("orders", 1, []byte(`{"id":1,"total":9.50}`), kafkaeventtest.WithKey([]byte("o-1")), kafkaeventtest.WithOffset(0)).
		Add("orders", 1, nil, kafkaeventtest.WithKey([]byte("o-1")), kafkaeventtest.WithOffset(1),
			kafkaeventtest.WithHeader("trace", []byte("abc")), kafkaeventtest.WithHeader("empty", []byte{}), kafkaeventtest.WithHeader("none", nil)).
		Add("orders", 0, []byte{0x80}, kafkaeventtest.WithKey([]byte{0, 0xff}), kafkaeventtest.WithOffset(41),
			kafkaeventtest.WithTimestamp(time.UnixMilli(1700000000123)), kafkaeventtest.WithTimestampType(kafkaevent.LogAppendTime)).
		Add("orders", 0, []byte{}, kafkaeventtest.WithKey([]byte{}), kafkaeventtest.WithOffset(42),
			kafkaeventtest.WithTimestamp(time.Date(2026, 3, 1, 10, 0, 0, 500e6, time.UTC))).
		Add("audit", 0, nil, kafkaeventtest.WithOffset(0),
			kafkaeventtest.WithHeader("h", []byte("1")), kafkaeventtest.WithHeader("h", []byte{0xff}), kafkaeventtest.WithHeader("n", nil),
			kafkaeventtest.WithKeySchemaMetadata("AVRO", "7"), kafkaeventtest.WithValueSchemaMetadata("JSON", "12345678-1234-1234-1234-123456789012")).
		Add("audit", 0, []byte("v"), kafkaeventtest.WithOffset(1), kafkaeventtest.WithTimestamp(time.Time{}), kafkaeventtest.WithTimestampType("NO_TIMESTAMP_TYPE")).
		Event()

	r := klt(t, in, "event", "build", "--compact")
	if r.code != base.ExitOK || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if w := wire(t, want); r.stdout != w {
		t.Errorf("build wrote\n%s\nwant\n%s", r.stdout, w)
	}

	// Parse reads it back: partitions sorted, automatic timestamps one millisecond apart
	// counting every record, and a tombstone distinct from an empty value.
	ev, err := kafkaevent.Parse([]byte(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range ev.Partitions {
		ids = append(ids, ev.Partitions[i].ID())
	}
	if strings.Join(ids, " ") != "audit-0 orders-0 orders-1" {
		t.Errorf("partitions %v, want audit-0 orders-0 orders-1", ids)
	}
	audit0 := ev.Partitions[0].Records[0]
	if want := time.Date(2026, 1, 15, 10, 0, 0, 4e6, time.UTC); !audit0.Timestamp.Equal(want) {
		t.Errorf("fifth record's automatic timestamp is %v, want %v", audit0.Timestamp, want)
	}
	orders1 := ev.Partitions[2].Records
	if !orders1[1].IsTombstone() || ev.Partitions[1].Records[1].IsTombstone() {
		t.Error("the null value is not a tombstone, or the empty value is")
	}
}

func TestBuildFlags(t *testing.T) {
	in := `{"topic":"t","value":"v"}` + "\n" + `{"topic":"t","value":"w"}`
	start := time.Date(2025, 6, 1, 8, 30, 0, 250e6, time.UTC)
	tests := []struct {
		name  string
		flags []string
		want  *kafkaevent.Event
	}{
		{"defaults", nil, kafkaeventtest.NewBuilder().
			Add("t", 0, []byte("v")).Add("t", 0, []byte("w")).Event()},
		{"self-managed", []string{"--source", "self-managed"},
			kafkaeventtest.NewBuilder(kafkaeventtest.WithEventSource(kafkaevent.SourceSelfManaged)).
				Add("t", 0, []byte("v")).Add("t", 0, []byte("w")).Event()},
		{"arn, servers and start time", []string{
			"--arn", "arn:aws:kafka:eu-west-1:111122223333:cluster/c/1",
			"--bootstrap-servers", "b1:9092, b2:9092",
			"--start-time", "2025-06-01T10:30:00.250+02:00",
		}, kafkaeventtest.NewBuilder(
			kafkaeventtest.WithEventSourceARN("arn:aws:kafka:eu-west-1:111122223333:cluster/c/1"),
			kafkaeventtest.WithBootstrapServers("b1:9092", "b2:9092"),
			kafkaeventtest.WithStartTime(start),
		).Add("t", 0, []byte("v")).Add("t", 0, []byte("w")).Event()},
		{"no bootstrap servers", []string{"--bootstrap-servers", ""},
			kafkaeventtest.NewBuilder(kafkaeventtest.WithBootstrapServers()).
				Add("t", 0, []byte("v")).Add("t", 0, []byte("w")).Event()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := klt(t, in, append([]string{"event", "build", "--compact"}, tt.flags...)...)
			if r.code != base.ExitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if w := wire(t, tt.want); r.stdout != w {
				t.Errorf("build wrote\n%s\nwant\n%s", r.stdout, w)
			}
		})
	}
}

func TestBuildIndent(t *testing.T) {
	// The default output is indented for people, and it is the compact output plus whitespace.
	in := `{"topic":"t","key":"k","value":{"a":"x, y: [z]"},"headers":{"h":"v"},"keySchema":{"dataFormat":"AVRO","schemaId":"1"}}`
	compact := klt(t, in, "event", "build", "--compact").stdout
	indented := klt(t, in, "event", "build").stdout
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(indented)); err != nil {
		t.Fatalf("indented output is not JSON: %v\n%s", err, indented)
	}
	if buf.String()+"\n" != compact {
		t.Errorf("indented output compacts to\n%s\nnot\n%s", buf.String(), compact)
	}
	for _, line := range []string{
		`  "eventSource": "aws:kafka",`,
		`        "offset": 0,`,
		`        "headers": [{"h":[118]}],`,
		`        "keySchemaMetadata": {"dataFormat":"AVRO","schemaId":"1"}`,
	} {
		if !strings.Contains(indented, "\n"+line+"\n") {
			t.Errorf("indented output has no line %q:\n%s", line, indented)
		}
	}
}

func TestIndentJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{}`, `{}`},
		{`[]`, `[]`},
		{`"a{,:}"`, `"a{,:}"`},
		{`{"a":1,"b":[1,2,3],"c":{}}`, `{"a":1,"b":[1,2,3],"c":{}}`},
		{`{"a":{"b":1}}`, `{"a":{"b":1}}`},
		{`{"a":"` + strings.Repeat("x", 80) + `","b":{"c":1}}`,
			"{\n  \"a\": \"" + strings.Repeat("x", 80) + "\",\n  \"b\": {\"c\":1}\n}"},
		{`[{"k":[` + strings.Repeat("1,", 50) + `1]},{"q\"]":"\\"}]`,
			"[\n  {\n    \"k\": [" + strings.Repeat("1,", 50) + "1]\n  },\n  {\"q\\\"]\":\"\\\\\"}\n]"},
	}
	for _, tt := range tests {
		if got := string(esmevent.IndentJSON([]byte(tt.in))); got != tt.want {
			t.Errorf("indentJSON(%s)\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

func TestBuildOutputFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "event.json")
	in := writeFile(t, "records.jsonl", `{"topic":"t","value":"v"}`+"\n")
	r := klt(t, "", "event", "build", "-o", out, in)
	if r.code != base.ExitOK || r.stdout != "" || r.stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := klt(t, "", "event", "build", in).stdout; string(data) != want {
		t.Errorf("-o wrote\n%s\nstdout gets\n%s", data, want)
	}

	// Bad input writes nothing, not even an empty file.
	bad := filepath.Join(dir, "bad.json")
	if r := klt(t, `{"topic":"t","x":1}`, "event", "build", "-o", bad); r.code != base.ExitFail {
		t.Fatalf("exit %d, want %d", r.code, base.ExitFail)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("bad input left %s behind (stat: %v)", bad, err)
	}

	// A file that cannot be written fails.
	r = klt(t, `{"topic":"t"}`, "event", "build", "-o", filepath.Join(dir, "no", "such", "dir.json"))
	if r.code != base.ExitFail || !strings.HasPrefix(r.stderr, "klt: open ") || !strings.HasSuffix(r.stderr, ": no such file or directory\n") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestBuildInputErrors(t *testing.T) {
	file := writeFile(t, "records.jsonl", "{\"topic\":\"t\"}\n\n{\"topic\":\"t\",\"partition\":3000000000}\n{\"topic\":\"t\",\"key\":\"a\",\"keyBase64\":\"YQ==\"}\n")
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string // all of stderr
	}{
		{"bad lines in a file", "", []string{file}, "" +
			"klt: " + file + ":3: partition: want an integer from 0 to 2147483647, got 3000000000\n" +
			"klt: " + file + `:4: both "key" and "keyBase64" given; use one` + "\n"},
		{"bad JSON on stdin", "{\"topic\":\"t\"}\n{\"topic\":\"t\",}\n", nil,
			"klt: <stdin>:2: invalid JSON at column 14: invalid character '}' looking for beginning of object key string\n"},
		{"stdin named -", "{\"topic\":\"t\",\"valueBase64\":\"%%%\"}", []string{"-"},
			"klt: <stdin>:1: valueBase64: want standard padded base64: illegal base64 data at input byte 0\n"},
		{"unknown field", `{"topic":"t","timestamptype":"CREATE_TIME"}`, nil,
			`klt: <stdin>:1: unknown field "timestamptype"; did you mean "timestampType"?` + "\n"},
		{"no records", "\n  \n", nil, "klt: <stdin>: no records; Lambda never sends an event without one\n"},
		{"missing file", "", []string{filepath.Join(t.TempDir(), "nope.jsonl")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := klt(t, tt.stdin, append([]string{"event", "build"}, tt.args...)...)
			if r.code != base.ExitFail || r.stdout != "" {
				t.Errorf("exit %d, stdout %q; want %d and nothing", r.code, r.stdout, base.ExitFail)
			}
			if tt.want == "" { // a system error; its text is the OS's
				if !strings.HasPrefix(r.stderr, "klt: open ") {
					t.Errorf("stderr %q, want klt: open ...", r.stderr)
				}
				return
			}
			if r.stderr != tt.want {
				t.Errorf("stderr\n%s\nwant\n%s", r.stderr, tt.want)
			}
		})
	}
}

func TestBuildTooLarge(t *testing.T) {
	// An event over Lambda's 6 MB payload limit is written, with a warning.
	in := `{"topic":"t","valueBase64":"` + strings.Repeat("AAAA", 1<<20) + `"}` + "\n" +
		`{"topic":"t","valueBase64":"` + strings.Repeat("AAAA", 1<<20) + `"}` + "\n"
	r := klt(t, in, "event", "build", "--compact")
	if r.code != base.ExitOK || len(r.stdout) <= input.MaxPayload {
		t.Fatalf("exit %d, %d bytes", r.code, len(r.stdout))
	}
	want := "klt: warning: the event is " + strconv.Itoa(len(r.stdout)-1) + " bytes, more than the 6291456 bytes (6 MB) of a Lambda invocation payload\n"
	if r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
}
