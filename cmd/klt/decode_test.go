package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsonl"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

func TestTextOrBase64(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		text any
		b64  string
	}{
		{"nil", nil, jsonl.JSONNull, ""},
		{"empty", []byte{}, "", ""},
		{"ASCII", []byte("order-1"), "order-1", ""},
		{"JSON text", []byte(`{"a":"<b>"}`), `{"a":"<b>"}`, ""},
		{"multi-byte UTF-8", []byte("Zoë 🦀"), "Zoë 🦀", ""},
		{"control characters are still text", []byte("a\x00b\tc\n"), "a\x00b\tc\n", ""},
		{"invalid UTF-8", []byte{0xff}, nil, "/w=="},
		{"truncated UTF-8", []byte("Zo\xc3"), nil, "Wm/D"},
		{"surrogate half", []byte("\xed\xa0\x80"), nil, "7aCA"},
		{"Avro-like binary", []byte{0x02, 0x06, 'f', 'o', 'o', 0x80}, nil, "AgZmb2+A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, b64 := jsonl.TextOrBase64(tt.in)
			if !reflect.DeepEqual(text, tt.text) || b64 != tt.b64 {
				t.Errorf("textOrBase64(%q) = %#v, %q; want %#v, %q", tt.in, text, b64, tt.text, tt.b64)
			}
		})
	}
}

func TestDecodedRecordOf(t *testing.T) {
	tests := []struct {
		name string
		rec  kafkaevent.Record
		want string
	}{
		{"plain", kafkaevent.Record{
			Topic: "orders", Partition: 2, Offset: 7,
			Timestamp: time.Date(2026, 1, 15, 10, 0, 0, 5e6, time.UTC), TimestampType: "CREATE_TIME",
			Key: []byte("k"), Value: []byte(`{"id":1}`),
		}, `{"topic":"orders","partition":2,"offset":7,"timestamp":"2026-01-15T10:00:00.005Z","timestampType":"CREATE_TIME","key":"k","value":"{\"id\":1}","headers":[]}`},
		{"tombstone without key or timestamp", kafkaevent.Record{
			Topic: "t", TimestampType: "NO_TIMESTAMP_TYPE",
		}, `{"topic":"t","partition":0,"offset":0,"timestamp":-1,"timestampType":"NO_TIMESTAMP_TYPE","key":null,"value":null,"headers":[]}`},
		{"empty key and value", kafkaevent.Record{Topic: "t", Key: []byte{}, Value: []byte{}},
			`{"topic":"t","partition":0,"offset":0,"timestamp":-1,"timestampType":"","key":"","value":"","headers":[]}`},
		{"binary key and value, local time", kafkaevent.Record{
			Topic: "t", Timestamp: time.Date(2026, 1, 15, 11, 0, 0, 0, time.FixedZone("CET", 3600)),
			Key: []byte{0, 0xff}, Value: []byte{0x80},
		}, `{"topic":"t","partition":0,"offset":0,"timestamp":"2026-01-15T10:00:00.000Z","timestampType":"","keyBase64":"AP8=","valueBase64":"gA==","headers":[]}`},
		{"headers and schemas", kafkaevent.Record{
			Topic: "t",
			Headers: []kafkaevent.Header{
				{Key: "trace", Value: []byte("a<b>&")}, {Key: "bin", Value: []byte{0xc3}}, {Key: "null"}, {Key: "trace", Value: []byte{}},
			},
			KeySchema:   &kafkaevent.SchemaMetadata{DataFormat: "AVRO", SchemaID: "1"},
			ValueSchema: &kafkaevent.SchemaMetadata{DataFormat: "PROTOBUF", SchemaID: "2"},
		}, `{"topic":"t","partition":0,"offset":0,"timestamp":-1,"timestampType":"","key":null,"value":null,"headers":[{"key":"trace","value":"a<b>&"},{"key":"bin","valueBase64":"ww=="},{"key":"null","value":null},{"key":"trace","value":""}],"keySchema":{"dataFormat":"AVRO","schemaId":"1"},"valueSchema":{"dataFormat":"PROTOBUF","schemaId":"2"}}`},
		{"malformed", kafkaevent.Record{Topic: "t", Offset: 3, Value: []byte("v"),
			Err: &kafkaevent.Error{Prefix: "kafkaevent", Path: `records["t-0"][0].key`, Msg: "bad base64"}},
			`{"topic":"t","partition":0,"offset":3,"timestamp":-1,"timestampType":"","key":null,"value":"v","headers":[],"error":"kafkaevent: records[\"t-0\"][0].key: bad base64"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(jsonl.DecodedRecordOf(&tt.rec)); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(buf.String(), "\n"); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	ev := kafkaeventtest.NewBuilder(kafkaeventtest.WithEventSource(kafkaevent.SourceSelfManaged)).
		Add("b", 1, []byte("x"), kafkaeventtest.WithKey([]byte("k1"))).
		Add("a", 0, nil, kafkaeventtest.WithKey([]byte{0xfe}), kafkaeventtest.WithOffset(9), kafkaeventtest.WithHeader("h", []byte("v"))).
		Event()
	data := wire(t, ev)
	want := `{"topic":"a","partition":0,"offset":9,"timestamp":"2026-01-15T10:00:00.001Z","timestampType":"CREATE_TIME","keyBase64":"/g==","value":null,"headers":[{"key":"h","value":"v"}]}
{"topic":"b","partition":1,"offset":0,"timestamp":"2026-01-15T10:00:00.000Z","timestampType":"CREATE_TIME","key":"k1","value":"x","headers":[]}
`
	file := writeFile(t, "event.json", data)
	for _, args := range [][]string{{file}, nil, {"-"}} {
		r := klt(t, data, append([]string{"event", "decode"}, args...)...)
		if r.code != base.ExitOK || r.stderr != "" {
			t.Fatalf("decode %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
		if r.stdout != want {
			t.Errorf("decode %v printed\n%s\nwant\n%s", args, r.stdout, want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	// A malformed envelope prints nothing; the message is Parse's, prefixed by the file name.
	bad := `{"eventSource":"aws:kafka","records":{"t-0":[{"topic":"t","partition":0,"offset":"x"}]}}`
	file := writeFile(t, "bad.json", bad)
	_, perr := kafkaevent.Parse([]byte(bad))
	var pe *kafkaevent.Error
	if !errors.As(perr, &pe) || !strings.Contains(pe.Path, "offset") {
		t.Fatalf("Parse(%s) = %v, want a *kafkaevent.Error naming the offset", bad, perr)
	}
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"file", "", []string{file}, "klt: " + file + ": " + perr.Error() + "\n"},
		{"stdin", bad, nil, "klt: <stdin>: " + perr.Error() + "\n"},
		{"empty stdin", "", nil, ""},
		{"not an event", `{"Records":[]}`, nil, ""},
		{"missing file", "", []string{filepath.Join(t.TempDir(), "nope.json")}, "klt: open "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := klt(t, tt.stdin, append([]string{"event", "decode"}, tt.args...)...)
			if r.code != base.ExitFail || r.stdout != "" {
				t.Errorf("exit %d, stdout %q; want %d and nothing", r.code, r.stdout, base.ExitFail)
			}
			if !strings.HasPrefix(r.stderr, "klt: <stdin>: kafkaevent: ") && !strings.HasPrefix(r.stderr, "klt: "+file) &&
				!strings.HasPrefix(r.stderr, "klt: open ") {
				t.Errorf("stderr %q does not name the input", r.stderr)
			}
			if tt.want != "" && !strings.HasPrefix(r.stderr, tt.want) {
				t.Errorf("stderr %q, want %q", r.stderr, tt.want)
			}
			if strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", r.stderr)
			}
		})
	}
}

func TestDecodeMalformedRecord(t *testing.T) {
	// A record Parse cannot decode is printed with its error, the others as usual, and decode
	// exits 1 after printing all of them.
	in := `{"eventSource":"SelfManagedKafka","records":{"t-0":[
		{"topic":"t","partition":0,"offset":1,"timestamp":1,"timestampType":"CREATE_TIME","key":"a$$","value":"dg==","headers":[]},
		{"topic":"t","partition":0,"offset":2,"timestamp":2,"timestampType":"CREATE_TIME","key":null,"value":"dw==","headers":[]}]}}`
	ev, err := kafkaevent.Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	recErr := ev.Partitions[0].Records[0].Err
	if recErr == nil {
		t.Fatal("Parse accepted the bad key")
	}
	r := klt(t, in, "event", "decode")
	if r.code != base.ExitFail {
		t.Errorf("exit %d, want %d", r.code, base.ExitFail)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("printed %d lines, want 2:\n%s", len(lines), r.stdout)
	}
	var first, second map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if first["error"] != recErr.Error() || first["offset"] != 1.0 {
		t.Errorf("first line %s, want offset 1 and error %q", lines[0], recErr)
	}
	if _, ok := second["error"]; ok || second["value"] != "w" {
		t.Errorf("second line %s, want value w and no error", lines[1])
	}
	if want := "klt: <stdin>: 1 of 2 records are malformed; see their \"error\"\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}

	// Build rejects the line that carries the error, and builds the rest once it is dropped.
	b := klt(t, r.stdout, "event", "build")
	want := "klt: <stdin>:1: record carries a decode error; fix or drop it (" + recErr.Error() + ")\n"
	if b.code != base.ExitFail || b.stdout != "" || b.stderr != want {
		t.Errorf("build of decode's output: exit %d, stdout %q, stderr\n%s\nwant exit %d, nothing and\n%s",
			b.code, b.stdout, b.stderr, base.ExitFail, want)
	}
	b = klt(t, lines[1], "event", "build", "--source", "self-managed", "--compact")
	if b.code != base.ExitOK {
		t.Fatalf("build of the good line: exit %d: %s", b.code, b.stderr)
	}
	back, err := kafkaevent.Parse([]byte(b.stdout))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := back.Partitions[0].Records[0], ev.Partitions[0].Records[1]; back.Len() != 1 || !sameRecords(&got, &want) {
		t.Errorf("build of the good line made\n%s\nwant the second record of\n%s", b.stdout, in)
	}
}

func TestDecodeFixtures(t *testing.T) {
	// Every fixture event of the repository decodes, one line per record, and each line holds
	// the bytes of its record.
	for _, file := range fixtureEvents(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := kafkaevent.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			r := klt(t, "", "event", "decode", file)
			if r.code != base.ExitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if len(lines) != ev.Len() {
				t.Fatalf("%d lines for %d records", len(lines), ev.Len())
			}
			i := 0
			for rec := range ev.All() {
				checkDecodedLine(t, lines[i], rec)
				i++
			}
		})
	}
}

// fixtureEvents returns the paths of the fixture events of the repository, testdata/events/*.json.
func fixtureEvents(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "events", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixture events in testdata/events")
	}
	return files
}

// checkDecodedLine checks that line, printed by decode for rec, is a line of build's input
// format that gives every field of rec: build's line reader reads rec itself back from it, with
// its own offset and timestamp. The line of a malformed record carries its error instead, and
// build rejects it.
func checkDecodedLine(t *testing.T, line string, rec *kafkaevent.Record) {
	t.Helper()
	lr, err := jsonl.DecodeLine([]byte(line))
	if rec.Err != nil {
		var d struct{ Error string }
		if jerr := json.Unmarshal([]byte(line), &d); jerr != nil || d.Error != rec.Err.Error() {
			t.Errorf("%s: error %q, want %q", line, d.Error, rec.Err)
		}
		if err == nil || !strings.HasPrefix(err.Error(), "record carries a decode error; fix or drop it") {
			t.Errorf("%s: build's line reader says %v, want that the record carries a decode error", line, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: build rejects the line: %v", line, err)
	}
	if !lr.HasOffset || !lr.HasTimestamp {
		t.Errorf("%s: leaves the offset or the timestamp to build", line)
	}
	if !sameRecords(&lr.Record, rec) {
		t.Errorf("%s: build reads back\n%+v\nwant\n%+v", line, lr.Record, *rec)
	}
}

// sameBytes reports whether a and b are equal, telling nil from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
