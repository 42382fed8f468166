package jsonl

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

func TestDecodeLine(t *testing.T) {
	ts := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UTC()
	}
	tests := []struct {
		name string
		line string
		want Record
	}{
		{"topic only", `{"topic":"orders"}`,
			Record{Record: kafkaevent.Record{Topic: "orders"}}},
		{"text key and value", `{"topic":"orders","partition":3,"key":"k","value":"héllo"}`,
			Record{Record: kafkaevent.Record{Topic: "orders", Partition: 3, Key: []byte("k"), Value: []byte("héllo")}, HasPartition: true}},
		{"empty key and value are not nil", `{"topic":"t","key":"","value":""}`,
			Record{Record: kafkaevent.Record{Topic: "t", Key: []byte{}, Value: []byte{}}}},
		{"null key and tombstone", `{"topic":"t","key":null,"value":null}`,
			Record{Record: kafkaevent.Record{Topic: "t"}}},
		{"base64", `{"topic":"t","keyBase64":"AP8=","valueBase64":""}`,
			Record{Record: kafkaevent.Record{Topic: "t", Key: []byte{0, 0xff}, Value: []byte{}}}},
		{"null base64", `{"topic":"t","keyBase64":null,"valueBase64":null}`,
			Record{Record: kafkaevent.Record{Topic: "t"}}},
		{"JSON object value is compacted, order and numbers kept",
			`{"topic":"t","value":{ "b" : 1.50, "a" : [ 1e3, "x<y" ] }}`,
			Record{Record: kafkaevent.Record{Topic: "t", Value: []byte(`{"b":1.50,"a":[1e3,"x<y"]}`)}}},
		{"JSON array value", `{"topic":"t","value":[]}`,
			Record{Record: kafkaevent.Record{Topic: "t", Value: []byte(`[]`)}}},
		{"offset", `{"topic":"t","offset":9223372036854775807}`,
			Record{Record: kafkaevent.Record{Topic: "t", Offset: 1<<63 - 1}, HasOffset: true}},
		{"null offset is automatic", `{"topic":"t","offset":null}`,
			Record{Record: kafkaevent.Record{Topic: "t"}}},
		{"epoch ms", `{"topic":"t","timestamp":1768471200123}`,
			Record{Record: kafkaevent.Record{Topic: "t", Timestamp: ts("2026-01-15T10:00:00.123Z")}, HasTimestamp: true}},
		{"no timestamp", `{"topic":"t","timestamp":-1,"timestampType":"NO_TIMESTAMP_TYPE"}`,
			Record{Record: kafkaevent.Record{Topic: "t", TimestampType: "NO_TIMESTAMP_TYPE"}, HasTimestamp: true, HasTimestampType: true}},
		{"RFC 3339 in another zone becomes UTC", `{"topic":"t","timestamp":"2026-01-15T11:00:00.5+01:00","timestampType":"LOG_APPEND_TIME"}`,
			Record{Record: kafkaevent.Record{Topic: "t", Timestamp: ts("2026-01-15T10:00:00.500Z"), TimestampType: "LOG_APPEND_TIME"}, HasTimestamp: true, HasTimestampType: true}},
		{"headers array keeps order, repeats and nulls",
			`{"topic":"t","headers":[{"key":"a","value":"1"},{"key":"b","valueBase64":"/w=="},{"key":"a"},{"key":"c","value":null},{"key":"","value":""}]}`,
			Record{Record: kafkaevent.Record{Topic: "t", Headers: []kafkaevent.Header{
				{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte{0xff}}, {Key: "a"}, {Key: "c"}, {Key: "", Value: []byte{}},
			}}}},
		{"headers object keeps order", `{"topic":"t","headers":{"z":"1","a":null,"m":""}}`,
			Record{Record: kafkaevent.Record{Topic: "t", Headers: []kafkaevent.Header{
				{Key: "z", Value: []byte("1")}, {Key: "a"}, {Key: "m", Value: []byte{}},
			}}}},
		{"empty headers", `{"topic":"t","headers":[]}`,
			Record{Record: kafkaevent.Record{Topic: "t", Headers: []kafkaevent.Header{}}}},
		{"schemas", `{"topic":"t","keySchema":{"dataFormat":"AVRO","schemaId":"1"},"valueSchema":{"schemaId":"12345678-1234-1234-1234-123456789012","dataFormat":"PROTOBUF"}}`,
			Record{Record: kafkaevent.Record{Topic: "t",
				KeySchema:   &kafkaevent.SchemaMetadata{DataFormat: "AVRO", SchemaID: "1"},
				ValueSchema: &kafkaevent.SchemaMetadata{DataFormat: "PROTOBUF", SchemaID: "12345678-1234-1234-1234-123456789012"}}}},
		{"null error is no error", `{"topic":"t","error":null,"value":"v"}`,
			Record{Record: kafkaevent.Record{Topic: "t", Value: []byte("v")}}},
		{"whitespace and CRLF", " \t{ \"topic\" : \"a.b_c-D9\" }\r\n",
			Record{Record: kafkaevent.Record{Topic: "a.b_c-D9"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeLine([]byte(tt.line))
			if err != nil {
				t.Fatalf("decodeLine(%s): %v", tt.line, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decodeLine(%s)\n got %+v\nwant %+v", tt.line, got, tt.want)
			}
		})
	}
}

func TestDecodeLineErrors(t *testing.T) {
	tests := []struct{ line, want string }{
		// JSON itself
		{`not json`, "invalid JSON at column 2: " + jsonText(`not json`)},
		{`{"topic":"t"`, "invalid JSON: unexpected end of line"},
		{`{"topic" "t"}`, "invalid JSON at column 10: " + jsonText(`{"topic" "t"}`)},
		{`{"topic":"t"} {"topic":"u"}`, "invalid JSON at column 15: a second object after the record; put one record per line"},
		{`{"topic":"t"}]`, "invalid JSON at column 14: ']' after the record"},
		{`{"topic":"t"},`, "invalid JSON at column 14: ',' after the record"},
		{`["topic","t"]`, "want a JSON object for the record, got an array"},
		{`"topic"`, `want a JSON object for the record, got "topic"`},
		{`null`, "want a JSON object for the record, got null"},
		{"{\"topic\":\"t\",\"value\":\"\xff\"}", "line is not valid UTF-8 (use keyBase64 or valueBase64 for binary data)"},
		// fields
		{`{"topic":"t","Value":"x"}`, `unknown field "Value"; did you mean "value"?`},
		{`{"topic":"t","vlaue":"x"}`, `unknown field "vlaue"; did you mean "value"?`},
		{`{"topic":"t","payload":"x"}`, `unknown field "payload"; known fields: topic, partition, offset, timestamp, timestampType, key, keyBase64, value, valueBase64, headers, keySchema, valueSchema`},
		{`{"topic":"t","topic":"u"}`, `"topic" given twice`},
		// a line decode printed for a malformed record, checked before anything else on it
		{`{"topic":"t","timestampType":"","key":null,"error":"kafkaevent: records[\"t-0\"][0].key: bad base64"}`,
			`record carries a decode error; fix or drop it (kafkaevent: records["t-0"][0].key: bad base64)`},
		{`{"error":true}`, `record carries a decode error; fix or drop it ("error" is not a string: want a string, got true)`},
		{`{"value":"x"}`, `missing "topic"`},
		{`{"topic":null}`, "topic: want a string, got null"},
		{`{"topic":""}`, "topic: must not be empty"},
		{`{"topic":"t","partition":2147483648}`, "partition: want an integer from 0 to 2147483647, got 2147483648"},
		{`{"topic":"t","partition":-1}`, "partition: want an integer from 0 to 2147483647, got -1"},
		{`{"topic":"t","partition":1.0}`, "partition: want an integer from 0 to 2147483647, got 1.0"},
		{`{"topic":"t","partition":"0"}`, `partition: want an integer from 0 to 2147483647, got "0"`},
		{`{"topic":"t","offset":-1}`, "offset: want an integer from 0 to 9223372036854775807, got -1"},
		{`{"topic":"t","offset":9223372036854775808}`, "offset: want an integer from 0 to 9223372036854775807, got 9223372036854775808"},
		{`{"topic":"t","offset":"` + strings.Repeat("9", 50) + `"}`, "offset: want an integer from 0 to 9223372036854775807, got a string"},
		{`{"topic":"t","offset":` + strings.Repeat("9", 50) + `}`, "offset: want an integer from 0 to 9223372036854775807, got a number"},
		{`{"topic":"t","offset":1e3}`, "offset: want an integer from 0 to 9223372036854775807, got 1e3"},
		{`{"topic":"t","timestamp":true}`, "timestamp: want epoch milliseconds (an integer; -1 for none) or an RFC 3339 string, got true"},
		{`{"topic":"t","timestamp":"2026-01-15 10:00:00"}`, `timestamp: want an RFC 3339 time such as 2026-01-15T10:00:00.250Z, got "2026-01-15 10:00:00"`},
		{`{"topic":"t","timestamp":"2026-01-15T10:00:00.0001Z"}`, "timestamp: 2026-01-15T10:00:00.0001Z is more precise than the millisecond Kafka keeps"},
		{`{"topic":"t","timestamp":"1969-12-31T23:59:59.999Z"}`, "timestamp: 1969-12-31T23:59:59.999Z is before 1970, which Kafka cannot represent"},
		{`{"topic":"t","timestamp":"9999-12-31T23:00:00-05:00"}`, "timestamp: 9999-12-31T23:00:00-05:00 is after year 9999 in UTC"},
		{`{"topic":"t","key":"a","keyBase64":"YQ=="}`, `both "key" and "keyBase64" given; use one`},
		{`{"topic":"t","key":null,"keyBase64":null}`, `both "key" and "keyBase64" given; use one`},
		{`{"topic":"t","value":"a","valueBase64":"YQ=="}`, `both "value" and "valueBase64" given; use one`},
		{`{"topic":"t","key":{"id":1}}`, "key: want a string or null, got an object"},
		{`{"topic":"t","key":7}`, `key: want a string or null, got 7; for the text 7 write "7"`},
		{`{"topic":"t","value":true}`, `value: want a string, an object, an array or null, got true; for the text true write "true"`},
		{`{"topic":"t","keyBase64":"YQ"}`, "keyBase64: want standard padded base64: illegal base64 data at input byte 0"},
		{`{"topic":"t","valueBase64":"a-_b"}`, "valueBase64: want standard padded base64: illegal base64 data at input byte 1"},
		{`{"topic":"t","valueBase64":5}`, "valueBase64: want a string, got 5"},
		{`{"topic":"t","headers":"a=1"}`, `headers: want an array of {"key":...,"value":...} objects or an object of names to values, got "a=1"`},
		{`{"topic":"t","headers":{"a":1}}`, `headers: "a": want a string, got 1 (use the array form with valueBase64 for binary values)`},
		{`{"topic":"t","headers":{"a":"1","a":"2"}}`, `headers: "a" given twice; repeated header names need the array form`},
		{`{"topic":"t","headers":["a"]}`, `headers: [0]: want a JSON object for the header, got "a"`},
		{`{"topic":"t","headers":[{"value":"1"}]}`, `headers: [0]: missing "key"`},
		{`{"topic":"t","headers":[{"key":"a"},{"key":"b","val":"1"}]}`, `headers: [1]: unknown field "val" in a header; did you mean "value"?`},
		{`{"topic":"t","headers":[{"key":1}]}`, "headers: [0]: key: want a string, got 1"},
		{`{"topic":"t","headers":[{"key":"a","value":"1","valueBase64":"MQ=="}]}`, `headers: [0]: both "value" and "valueBase64" given; use one`},
		{`{"topic":"t","headers":[{"key":"a","valueBase64":"!"}]}`, "headers: [0]: valueBase64: want standard padded base64: illegal base64 data at input byte 0"},
		{`{"topic":"t","headers":[{"key":"a","value":[1,2]}]}`, "headers: [0]: value: want a string or null, got an array"},
		{`{"topic":"t","keySchema":"AVRO"}`, `keySchema: want a JSON object for the schema, got "AVRO"`},
		{`{"topic":"t","valueSchema":{"dataFormat":"JSON","schemaId":1}}`, "valueSchema: schemaId: want a string, got 1"},
		{`{"topic":"t","valueSchema":{"dataFormat":"JSON","schemaID":"1"}}`, `valueSchema: unknown field "schemaID" in a schema; did you mean "schemaId"?`},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			_, err := DecodeLine([]byte(tt.line))
			if err == nil {
				t.Fatalf("decodeLine(%s) succeeded, want error %q", tt.line, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("decodeLine(%s)\n got error %q\nwant error %q", tt.line, err, tt.want)
			}
		})
	}
}

// jsonText returns encoding/json's own words for the syntax error in data, which klt passes on
// but never reads: they differ between Go versions.
func jsonText(data string) string {
	return json.Unmarshal([]byte(data), new(any)).Error()
}

func TestDecodeLineSyntaxErrorsAreTyped(t *testing.T) {
	// What klt says about a line that is not JSON comes from the decoder's typed results
	// (*json.SyntaxError, io.ErrUnexpectedEOF, the offset after one value), not from the text
	// of encoding/json's messages, and the error keeps the *json.SyntaxError for errors.As.
	for _, line := range []string{`not json`, `{"topic" "t"}`, `{"topic":"t",}`, "{\"topic\":\"t\"\x00}"} {
		_, err := DecodeLine([]byte(line))
		var se *json.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("decodeLine(%q) = %v; want an error that wraps a *json.SyntaxError", line, err)
		}
	}
	for line, want := range map[string]string{
		`{"topic":"t"`:               "invalid JSON: unexpected end of line",
		`{"topic":"t","value":[1,`:   "invalid JSON: unexpected end of line",
		`{"topic":"t"}{"topic":"u"}`: "invalid JSON at column 14: a second object after the record; put one record per line",
		"{\"topic\":\"t\"}\t\"x\"":   `invalid JSON at column 15: '"' after the record`,
		"{\"topic\":\"t\"} \x01":     `invalid JSON at column 15: '\x01' after the record`,
	} {
		if _, err := DecodeLine([]byte(line)); err == nil || err.Error() != want {
			t.Errorf("decodeLine(%q) = %v, want %q", line, err, want)
		}
	}
}

func TestDecodeLineWarnings(t *testing.T) {
	// What kafkaevent.Parse accepts but Kafka or Lambda never produce is built with a warning,
	// not refused: "klt event decode" prints such records, and build takes back whatever
	// decode prints.
	tests := []struct {
		line string
		want []string
	}{
		{`{"topic":"a b"}`, []string{`topic: "a b" has ' '; Kafka topic names use only letters, digits, '.', '_' and '-'`}},
		{`{"topic":".."}`, []string{`topic: ".." is not a topic name Kafka accepts`}},
		{`{"topic":"` + strings.Repeat("x", 250) + `"}`, []string{"topic: 250 characters is longer than Kafka's limit of 249"}},
		{`{"topic":"t","timestamp":-2}`, []string{"timestamp: -2 is before 1970, which Kafka cannot represent"}},
		{`{"topic":"t","timestamp":253402300800000}`, []string{"timestamp: 253402300800000 is after year 9999"}},
		{`{"topic":"t","timestampType":"create_time"}`, []string{`timestampType: "create_time" is not one of CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE, the types Kafka has; did you mean "CREATE_TIME"?`}},
		{`{"topic":"t","valueSchema":{"dataFormat":"XML","schemaId":"1"}}`, []string{`valueSchema.dataFormat: "XML" is not one of AVRO, PROTOBUF, JSON, the formats Lambda writes`}},
		// what events in the wild have, without a warning
		{`{"topic":"t","timestampType":""}`, nil},
		{`{"topic":"t","keySchema":{"dataFormat":"AVRO"}}`, nil},
		{`{"topic":"t","valueSchema":{"dataFormat":"JSON","schemaId":""}}`, nil},
		{`{"topic":"t","valueSchema":{"dataFormat":"","schemaId":null}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			rec, err := DecodeLine([]byte(tt.line))
			if err != nil {
				t.Fatalf("decodeLine(%s): %v", tt.line, err)
			}
			if !reflect.DeepEqual(rec.Warnings, tt.want) {
				t.Errorf("decodeLine(%s) warnings\n got %q\nwant %q", tt.line, rec.Warnings, tt.want)
			}
		})
	}
}

func TestReadRecordsOffsetWarnings(t *testing.T) {
	// Offsets that do not increase are kept, with a warning: fixtures repeat them.
	in := "{\"topic\":\"a\",\"offset\":5}\n{\"topic\":\"a\",\"offset\":5}\n{\"topic\":\"a\",\"offset\":2}\n{\"topic\":\"a\"}\n"
	recs, err := ReadRecords(context.Background(), "f.jsonl", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var offsets []int64
	var warnings []string
	for _, r := range recs {
		offsets = append(offsets, r.Record.Offset)
		warnings = append(warnings, r.Warnings...)
	}
	if !reflect.DeepEqual(offsets, []int64{5, 5, 2, 3}) {
		t.Errorf("offsets %v, want [5 5 2 3]", offsets)
	}
	want := []string{
		"offset 5 is not after 5, the previous record of a-0; Lambda delivers a partition's records in increasing offset order",
		"offset 2 is not after 5, the previous record of a-0; Lambda delivers a partition's records in increasing offset order",
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings\n got %q\nwant %q", warnings, want)
	}
}

func TestReadRecordsOffsets(t *testing.T) {
	// Offsets are automatic per partition, follow an explicit offset, and must increase.
	in := strings.Join([]string{
		`{"topic":"a"}`,
		`{"topic":"a","partition":1}`,
		``,
		`{"topic":"a","offset":10}`,
		`   `,
		`{"topic":"a"}`,
		`{"topic":"b"}`,
		`{"topic":"a","partition":1,"offset":5}`,
		`{"topic":"a","offset":20}`,
	}, "\n")
	recs, err := ReadRecords(context.Background(), "in.jsonl", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	type pos struct {
		line      int
		id        string
		offset    int64
		hasOffset bool
	}
	var got []pos
	for _, r := range recs {
		got = append(got, pos{r.Line, r.Record.PartitionID(), r.Record.Offset, r.HasOffset})
	}
	want := []pos{
		{1, "a-0", 0, false}, {2, "a-1", 0, false}, {4, "a-0", 10, true}, {6, "a-0", 11, false},
		{7, "b-0", 0, false}, {8, "a-1", 5, true}, {9, "a-0", 20, true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

func TestReadRecordsErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"automatic offset after the last one", "{\"topic\":\"a\",\"offset\":9223372036854775807}\n{\"topic\":\"a\"}",
			[]string{"f.jsonl:2: no offset comes after 9223372036854775807, the previous record of a-0; give this one its offset"}},
		{"every bad line is reported", "{\"topic\":\"a\"}\n{}\n\n{\"topic\":\"a\",\"key\":1}\n{\"topic\":\"a\"}\n[",
			[]string{
				`f.jsonl:2: missing "topic"`,
				`f.jsonl:4: key: want a string or null, got 1; for the text 1 write "1"`,
				"f.jsonl:6: invalid JSON: unexpected end of line",
			}},
		{"a bad line does not move its partition on", "{\"topic\":\"a\",\"offset\":1,\"key\":1}\n{\"topic\":\"a\",\"offset\":0}\n",
			[]string{`f.jsonl:1: key: want a string or null, got 1; for the text 1 write "1"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadRecords(context.Background(), "f.jsonl", strings.NewReader(tt.in))
			if err == nil {
				t.Fatal("readRecords succeeded")
			}
			var got []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				got = append(got, e.Error())
				var le *LineError
				if !errors.As(e, &le) || le.File != "f.jsonl" {
					t.Errorf("%v is not a *lineError for f.jsonl", e)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestReadRecordsTooManyErrors(t *testing.T) {
	in := strings.Repeat("{}\n", MaxLineErrors+5)
	_, err := ReadRecords(context.Background(), "f.jsonl", strings.NewReader(in))
	errs := err.(interface{ Unwrap() []error }).Unwrap()
	if len(errs) != MaxLineErrors+1 {
		t.Fatalf("got %d errors, want %d", len(errs), MaxLineErrors+1)
	}
	if got, want := errs[MaxLineErrors].Error(), "f.jsonl: too many errors; stopped at line 11"; got != want {
		t.Errorf("last error %q, want %q", got, want)
	}
	if !errors.Is(err, ErrTooManyErrors) {
		t.Error("errors.Is(err, errTooManyErrors) is false")
	}

	// Exactly maxLineErrors bad lines are all reported, without "too many".
	_, err = ReadRecords(context.Background(), "f.jsonl", strings.NewReader(strings.Repeat("{}\n", MaxLineErrors)))
	if errors.Is(err, ErrTooManyErrors) {
		t.Errorf("%d bad lines reported as too many", MaxLineErrors)
	}
}

func TestReadRecordsLongLine(t *testing.T) {
	// Lines have no length limit: a value of several megabytes is one line.
	big := strings.Repeat("x", 3<<20)
	recs, err := ReadRecords(context.Background(), "f", strings.NewReader(`{"topic":"t","value":"`+big+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || string(recs[0].Record.Value) != big {
		t.Errorf("the long value did not survive")
	}
}

func TestReadRecordsCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ReadRecords(ctx, "f", strings.NewReader(`{"topic":"t"}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestReadRecordsReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ReadRecords(context.Background(), "f", &failingReader{data: "{\"topic\":\"t\"}\n", err: boom})
	if !errors.Is(err, boom) || err.Error() != "f: boom" {
		t.Errorf("got %v, want f: boom", err)
	}
}

// failingReader returns data, then err.
type failingReader struct {
	data string
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestNearest(t *testing.T) {
	tests := []struct{ name, want string }{
		{"VALUE", "value"}, {"keybase64", "keyBase64"}, {"partiton", "partition"},
		{"headrs", "headers"}, {"x", ""}, {"payload", ""}, {strings.Repeat("k", 100), ""},
	}
	for _, tt := range tests {
		if got := nearest(tt.name, lineFields); got != tt.want {
			t.Errorf("nearest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestReadRecordsByteOrderMark(t *testing.T) {
	// Editors on Windows may start a file with a byte order mark; it is not part of line 1.
	recs, err := ReadRecords(context.Background(), "f", strings.NewReader("\uFEFF{\"topic\":\"t\"}\n"))
	if err != nil || len(recs) != 1 || recs[0].Record.Topic != "t" {
		t.Errorf("got %v, %v", recs, err)
	}
}
