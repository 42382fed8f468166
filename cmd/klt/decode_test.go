package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

func TestTextOrBase64(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want *string
		enc  string
	}{
		{"nil", nil, nil, ""},
		{"empty", []byte{}, ptr(""), ""},
		{"ASCII", []byte("order-1"), ptr("order-1"), ""},
		{"JSON text", []byte(`{"a":"<b>"}`), ptr(`{"a":"<b>"}`), ""},
		{"multi-byte UTF-8", []byte("Zoë 🦀"), ptr("Zoë 🦀"), ""},
		{"control characters are still text", []byte("a\x00b\tc\n"), ptr("a\x00b\tc\n"), ""},
		{"invalid UTF-8", []byte{0xff}, ptr("/w=="), "base64"},
		{"truncated UTF-8", []byte("Zo\xc3"), ptr("Wm/D"), "base64"},
		{"surrogate half", []byte("\xed\xa0\x80"), ptr("7aCA"), "base64"},
		{"Avro-like binary", []byte{0x02, 0x06, 'f', 'o', 'o', 0x80}, ptr("AgZmb2+A"), "base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, enc := textOrBase64(tt.in)
			if !reflect.DeepEqual(got, tt.want) || enc != tt.enc {
				t.Errorf("textOrBase64(%q) = %v, %q; want %v, %q", tt.in, show(got), enc, show(tt.want), tt.enc)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func show(s *string) string {
	if s == nil {
		return "nil"
	}
	return `"` + *s + `"`
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
		}, `{"topic":"t","partition":0,"offset":0,"timestamp":null,"timestampType":"NO_TIMESTAMP_TYPE","key":null,"value":null,"headers":[]}`},
		{"empty key and value", kafkaevent.Record{Topic: "t", Key: []byte{}, Value: []byte{}},
			`{"topic":"t","partition":0,"offset":0,"timestamp":null,"timestampType":"","key":"","value":"","headers":[]}`},
		{"binary key and value, local time", kafkaevent.Record{
			Topic: "t", Timestamp: time.Date(2026, 1, 15, 11, 0, 0, 0, time.FixedZone("CET", 3600)),
			Key: []byte{0, 0xff}, Value: []byte{0x80},
		}, `{"topic":"t","partition":0,"offset":0,"timestamp":"2026-01-15T10:00:00.000Z","timestampType":"","key":"AP8=","keyEncoding":"base64","value":"gA==","valueEncoding":"base64","headers":[]}`},
		{"headers and schemas", kafkaevent.Record{
			Topic: "t",
			Headers: []kafkaevent.Header{
				{Key: "trace", Value: []byte("a<b>&")}, {Key: "bin", Value: []byte{0xc3}}, {Key: "null"}, {Key: "trace", Value: []byte{}},
			},
			KeySchema:   &kafkaevent.SchemaMetadata{DataFormat: "AVRO", SchemaID: "1"},
			ValueSchema: &kafkaevent.SchemaMetadata{DataFormat: "PROTOBUF", SchemaID: "2"},
		}, `{"topic":"t","partition":0,"offset":0,"timestamp":null,"timestampType":"","key":null,"value":null,"headers":[{"key":"trace","value":"a<b>&"},{"key":"bin","value":"ww==","valueEncoding":"base64"},{"key":"null","value":null},{"key":"trace","value":""}],"keySchema":{"dataFormat":"AVRO","schemaId":"1"},"valueSchema":{"dataFormat":"PROTOBUF","schemaId":"2"}}`},
		{"malformed", kafkaevent.Record{Topic: "t", Offset: 3, Value: []byte("v"),
			Err: &kafkaevent.Error{Path: `records["t-0"][0].key`, Msg: "bad base64"}},
			`{"topic":"t","partition":0,"offset":3,"timestamp":null,"timestampType":"","key":null,"value":"v","headers":[],"error":"kafkaevent: records[\"t-0\"][0].key: bad base64"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(decodedRecordOf(&tt.rec)); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(buf.String(), "\n"); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	ev := kafkaevent.NewBuilder(kafkaevent.WithSource(kafkaevent.SourceSelfManaged)).
		Add("b", 1, []byte("x"), kafkaevent.Key([]byte("k1"))).
		Add("a", 0, nil, kafkaevent.Key([]byte{0xfe}), kafkaevent.Offset(9), kafkaevent.AddHeader("h", []byte("v"))).
		Event()
	data := wire(t, ev)
	want := `{"topic":"a","partition":0,"offset":9,"timestamp":"2026-01-15T10:00:00.001Z","timestampType":"CREATE_TIME","key":"/g==","keyEncoding":"base64","value":null,"headers":[{"key":"h","value":"v"}]}
{"topic":"b","partition":1,"offset":0,"timestamp":"2026-01-15T10:00:00.000Z","timestampType":"CREATE_TIME","key":"k1","value":"x","headers":[]}
`
	file := writeFile(t, "event.json", data)
	for _, args := range [][]string{{file}, nil, {"-"}} {
		r := klt(t, data, append([]string{"event", "decode"}, args...)...)
		if r.code != exitOK || r.stderr != "" {
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
			if r.code != exitFail || r.stdout != "" {
				t.Errorf("exit %d, stdout %q; want %d and nothing", r.code, r.stdout, exitFail)
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
	if r.code != exitFail {
		t.Errorf("exit %d, want %d", r.code, exitFail)
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
}

func TestDecodeFixtures(t *testing.T) {
	// Every fixture event of the repository decodes, one line per record, and each line holds
	// the bytes of its record.
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "events", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixture events in testdata/events")
	}
	for _, file := range files {
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
			if r.code != exitOK || r.stderr != "" {
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

// checkDecodedLine checks that line, printed by decode, holds the fields of rec.
func checkDecodedLine(t *testing.T, line string, rec *kafkaevent.Record) {
	t.Helper()
	var d decodedRecord
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if d.Topic != rec.Topic || d.Partition != rec.Partition || d.Offset != rec.Offset || d.TimestampType != rec.TimestampType {
		t.Errorf("%s: position or type differs from %s@%d", line, rec.ID(), rec.Offset)
	}
	if ts := undecodeTime(t, d.Timestamp); !ts.Equal(rec.Timestamp) {
		t.Errorf("%s: timestamp %v, want %v", line, ts, rec.Timestamp)
	}
	if b := undecodeBytes(t, d.Key, d.KeyEncoding); !sameBytes(b, rec.Key) {
		t.Errorf("%s: key %q, want %q", line, b, rec.Key)
	}
	if b := undecodeBytes(t, d.Value, d.ValueEncoding); !sameBytes(b, rec.Value) {
		t.Errorf("%s: value %q, want %q", line, b, rec.Value)
	}
	if len(d.Headers) != len(rec.Headers) {
		t.Fatalf("%s: %d headers, want %d", line, len(d.Headers), len(rec.Headers))
	}
	for i, h := range d.Headers {
		if b := undecodeBytes(t, h.Value, h.ValueEncoding); h.Key != rec.Headers[i].Key || !sameBytes(b, rec.Headers[i].Value) {
			t.Errorf("%s: header %d is %q=%q, want %q=%q", line, i, h.Key, b, rec.Headers[i].Key, rec.Headers[i].Value)
		}
	}
	if !reflect.DeepEqual(d.KeySchema, decodedSchemaOf(rec.KeySchema)) || !reflect.DeepEqual(d.ValueSchema, decodedSchemaOf(rec.ValueSchema)) {
		t.Errorf("%s: schemas differ from %v, %v", line, rec.KeySchema, rec.ValueSchema)
	}
	if (d.Error != "") != (rec.Err != nil) {
		t.Errorf("%s: error %q, record error %v", line, d.Error, rec.Err)
	}
}

func undecodeTime(t *testing.T, s *string) time.Time {
	t.Helper()
	if s == nil {
		return time.Time{}
	}
	ts, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func undecodeBytes(t *testing.T, s *string, enc string) []byte {
	t.Helper()
	switch {
	case s == nil:
		return nil
	case enc == "base64":
		b, err := base64.StdEncoding.DecodeString(*s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	case enc != "":
		t.Fatalf("unknown encoding %q", enc)
	}
	return []byte(*s)
}

// sameBytes reports whether a and b are equal, telling nil from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
