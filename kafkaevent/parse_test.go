package kafkaevent_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// msk wraps record JSON into an MSK event with one partition "orders-0".
func msk(records ...string) string {
	return `{"eventSource":"aws:kafka","eventSourceArn":"arn:aws:kafka:us-east-1:123456789012:cluster/c/1","bootstrapServers":"b-1:9098,b-2:9098","records":{"orders-0":[` +
		strings.Join(records, ",") + `]}}`
}

func rec(fields string) string {
	return `{"topic":"orders","partition":0,"offset":7,"timestamp":1700000000123,"timestampType":"CREATE_TIME"` + fields + `}`
}

func mustParse(t *testing.T, s string) *kafkaevent.Event {
	t.Helper()
	ev, err := kafkaevent.Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse: %v\ninput: %s", err, s)
	}
	return ev
}

func only(t *testing.T, ev *kafkaevent.Event) *kafkaevent.Record {
	t.Helper()
	if ev.Len() != 1 {
		t.Fatalf("Len() = %d, want 1", ev.Len())
	}
	return &ev.Partitions[0].Records[0]
}

func TestParseEnvelope(t *testing.T) {
	ev := mustParse(t, msk(rec(`,"key":"`+b64("k")+`","value":"`+b64("v")+`","headers":[]`)))
	if ev.Source != kafkaevent.SourceMSK {
		t.Errorf("Source = %q", ev.Source)
	}
	if ev.SourceARN != "arn:aws:kafka:us-east-1:123456789012:cluster/c/1" {
		t.Errorf("SourceARN = %q", ev.SourceARN)
	}
	if !reflect.DeepEqual(ev.BootstrapServers, []string{"b-1:9098", "b-2:9098"}) {
		t.Errorf("BootstrapServers = %q", ev.BootstrapServers)
	}
	r := only(t, ev)
	if r.Topic != "orders" || r.Partition != 0 || r.Offset != 7 || string(r.Key) != "k" || string(r.Value) != "v" {
		t.Errorf("record = %+v", r)
	}
	if want := time.UnixMilli(1700000000123).UTC(); !r.Timestamp.Equal(want) || r.Timestamp.Location() != time.UTC {
		t.Errorf("Timestamp = %v, want %v in UTC", r.Timestamp, want)
	}
	if r.TimestampType != kafkaevent.CreateTime || r.Err != nil {
		t.Errorf("TimestampType = %q, Err = %v", r.TimestampType, r.Err)
	}
}

func TestParseSelfManaged(t *testing.T) {
	ev := mustParse(t, `{"eventSource":"SelfManagedKafka","bootstrapServers":"kafka-1:9092","records":{"t-1":[{"topic":"t","partition":1,"offset":0}]}}`)
	if ev.Source != kafkaevent.SourceSelfManaged || ev.SourceARN != "" {
		t.Errorf("Source = %q, SourceARN = %q", ev.Source, ev.SourceARN)
	}
	if !reflect.DeepEqual(ev.BootstrapServers, []string{"kafka-1:9092"}) {
		t.Errorf("BootstrapServers = %q", ev.BootstrapServers)
	}
}

func TestParseIgnoresUnknownFields(t *testing.T) {
	ev := mustParse(t, `{"eventSource":"aws:kafka","future":{"a":[1,2,{"b":null}],"c":"\u00e9"},"records":{"t-0":[`+
		`{"topic":"t","extra":[true,false,-1.5e3],"partition":0,"offset":1,"value":"`+b64("x")+`","more":{}}]},"last":1}`)
	if r := only(t, ev); string(r.Value) != "x" || r.Err != nil {
		t.Errorf("record = %+v", r)
	}
}

func TestParseSortsPartitions(t *testing.T) {
	ev := mustParse(t, `{"eventSource":"aws:kafka","records":{`+
		`"b-10":[{"topic":"b","partition":10,"offset":3}],`+
		`"b-2":[{"topic":"b","partition":2,"offset":5},{"topic":"b","partition":2,"offset":4}],`+
		`"a.x-y-0":[{"topic":"a.x-y","partition":0,"offset":9}],`+
		`"b-1":[]}}`)
	var got []string
	for _, p := range ev.Partitions {
		got = append(got, p.ID())
	}
	if want := []string{"a.x-y-0", "b-1", "b-2", "b-10"}; !reflect.DeepEqual(got, want) {
		t.Errorf("partitions = %q, want %q", got, want)
	}
	// Records keep the delivered order, even when offsets go down (Parse does not reorder).
	if rs := ev.Partitions[2].Records; rs[0].Offset != 5 || rs[1].Offset != 4 {
		t.Errorf("records of b-2 reordered: %d, %d", rs[0].Offset, rs[1].Offset)
	}
	if ev.Partitions[0].Topic != "a.x-y" || ev.Partitions[0].Records[0].Topic != "a.x-y" {
		t.Errorf("topic with dashes and dots: %q", ev.Partitions[0].Topic)
	}
	var offsets []int64
	for r := range ev.All() {
		offsets = append(offsets, r.Offset)
	}
	if want := []int64{9, 5, 4, 3}; !reflect.DeepEqual(offsets, want) {
		t.Errorf("All() offsets = %v, want %v", offsets, want)
	}
	if ev.Len() != 4 {
		t.Errorf("Len() = %d", ev.Len())
	}
}

func TestParseKeyValuePresence(t *testing.T) {
	cases := []struct {
		name    string
		fields  string
		key     []byte
		value   []byte
		tomb    bool
		wantNil [2]bool
	}{
		{"absent", ``, nil, nil, true, [2]bool{true, true}},
		{"null", `,"key":null,"value":null`, nil, nil, true, [2]bool{true, true}},
		{"empty", `,"key":"","value":""`, []byte{}, []byte{}, false, [2]bool{false, false}},
		{"set", `,"key":"` + b64("id-1") + `","value":"` + b64(`{"a":1}`) + `"`, []byte("id-1"), []byte(`{"a":1}`), false, [2]bool{false, false}},
		{"padding1", `,"value":"` + b64("ab") + `"`, nil, []byte("ab"), false, [2]bool{true, false}},
		{"padding2", `,"value":"` + b64("a") + `"`, nil, []byte("a"), false, [2]bool{true, false}},
		{"escaped slash", `,"value":"` + strings.ReplaceAll(b64("\xff\xff\xff"), "/", `\/`) + `"`, nil, []byte("\xff\xff\xff"), false, [2]bool{true, false}},
		{"unicode escape", `,"value":"\u0059\u0051=="`, nil, []byte("a"), false, [2]bool{true, false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := only(t, mustParse(t, msk(rec(c.fields))))
			if r.Err != nil {
				t.Fatalf("Err = %v", r.Err)
			}
			if (r.Key == nil) != c.wantNil[0] || string(r.Key) != string(c.key) {
				t.Errorf("Key = %#v, want %#v", r.Key, c.key)
			}
			if (r.Value == nil) != c.wantNil[1] || string(r.Value) != string(c.value) {
				t.Errorf("Value = %#v, want %#v", r.Value, c.value)
			}
			if r.IsTombstone() != c.tomb {
				t.Errorf("IsTombstone() = %v", r.IsTombstone())
			}
		})
	}
}

// Slices handed out share one buffer; appending to one must not overwrite the next.
func TestParseValuesDoNotAlias(t *testing.T) {
	ev := mustParse(t, msk(rec(`,"key":"`+b64("k1")+`","value":"`+b64("v1")+`"`), strings.Replace(rec(`,"value":"`+b64("v2")+`"`), `"offset":7`, `"offset":8`, 1)))
	r0, r1 := &ev.Partitions[0].Records[0], &ev.Partitions[0].Records[1]
	_ = append(r0.Value, "XXXXXXXX"...)
	_ = append(r0.Key, "YYYYYYYY"...)
	if string(r1.Value) != "v2" || string(r0.Value) != "v1" {
		t.Errorf("append to one value changed another: %q %q", r0.Value, r1.Value)
	}
}

func TestParseHeaders(t *testing.T) {
	r := only(t, mustParse(t, msk(rec(`,"headers":[`+
		`{"name":[-61,-85]},`+ // "ë" as Java signed bytes
		`{"trace":[118,-36,0,127,-128]},`+
		`{"name":[195, 171 ]},`+ // the same bytes written unsigned, with spaces
		`{"nothing":null},`+
		`{"empty":[]},`+
		`{"a":[1],"b":[2]}]`))))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	want := []kafkaevent.Header{
		{Key: "name", Value: []byte("ë")},
		{Key: "trace", Value: []byte{118, 0xdc, 0, 127, 0x80}},
		{Key: "name", Value: []byte("ë")},
		{Key: "nothing", Value: nil},
		{Key: "empty", Value: []byte{}},
		{Key: "a", Value: []byte{1}},
		{Key: "b", Value: []byte{2}},
	}
	if !reflect.DeepEqual(r.Headers, want) {
		t.Errorf("Headers =\n%#v\nwant\n%#v", r.Headers, want)
	}
	if v, ok := r.Header("name"); !ok || string(v) != "ë" {
		t.Errorf("Header(name) = %q, %v", v, ok)
	}
	if v, ok := r.Header("nothing"); !ok || v != nil {
		t.Errorf("Header(nothing) = %#v, %v", v, ok)
	}
	if _, ok := r.Header("missing"); ok {
		t.Error("Header(missing) found")
	}
	if vs := r.HeaderValues("name"); len(vs) != 2 || string(vs[0]) != "ë" || string(vs[1]) != "ë" {
		t.Errorf("HeaderValues(name) = %q", vs)
	}
	for _, h := range []string{``, `,"headers":null`, `,"headers":[]`} {
		if r := only(t, mustParse(t, msk(rec(h)))); r.Headers != nil || r.Err != nil {
			t.Errorf("%s: Headers = %#v, Err = %v", h, r.Headers, r.Err)
		}
	}
}

func TestParseTimestamps(t *testing.T) {
	for _, c := range []struct {
		field string
		want  time.Time
		typ   string
	}{
		{`"timestamp":-1,"timestampType":"NO_TIMESTAMP_TYPE"`, time.Time{}, "NO_TIMESTAMP_TYPE"},
		{`"timestamp":null`, time.Time{}, ""},
		{`"timestamp":0,"timestampType":"LOG_APPEND_TIME"`, time.UnixMilli(0).UTC(), kafkaevent.LogAppendTime},
		{`"timestamp":1545084650987`, time.Date(2018, 12, 17, 22, 10, 50, 987e6, time.UTC), ""},
	} {
		r := only(t, mustParse(t, `{"eventSource":"aws:kafka","records":{"t-0":[{"topic":"t","partition":0,"offset":0,`+c.field+`}]}}`))
		if !r.Timestamp.Equal(c.want) || r.Timestamp.IsZero() != c.want.IsZero() || r.TimestampType != c.typ {
			t.Errorf("%s: Timestamp = %v, type %q; want %v, %q", c.field, r.Timestamp, r.TimestampType, c.want, c.typ)
		}
		if r.Timestamp.Year() == 1969 {
			t.Errorf("%s: became 1969", c.field)
		}
	}
}

func TestParseNumbers(t *testing.T) {
	ev := mustParse(t, `{"eventSource":"aws:kafka","records":{"t-2147483647":[`+
		`{"topic":"t","partition":"2147483647","offset":9223372036854775807},`+
		`{"topic":"t","partition":2147483647,"offset":9007199254740993}]}}`)
	rs := ev.Partitions[0].Records
	if rs[0].Offset != math.MaxInt64 || rs[0].Partition != math.MaxInt32 {
		t.Errorf("offset %d partition %d", rs[0].Offset, rs[0].Partition)
	}
	if rs[1].Offset != 9007199254740993 { // not representable as float64
		t.Errorf("offset went through float64: %d", rs[1].Offset)
	}
}

func TestParseSchemaMetadata(t *testing.T) {
	r := only(t, mustParse(t, msk(rec(`,"keySchemaMetadata":{"dataFormat":"AVRO","schemaId":"1234"},`+
		`"valueSchemaMetadata":{"dataFormat":"PROTOBUF","schemaId":"12345678-1234-1234-1234-123456789012","other":1}`))))
	if r.KeySchema == nil || *r.KeySchema != (kafkaevent.SchemaMetadata{DataFormat: "AVRO", SchemaID: "1234"}) {
		t.Errorf("KeySchema = %+v", r.KeySchema)
	}
	if r.ValueSchema == nil || *r.ValueSchema != (kafkaevent.SchemaMetadata{DataFormat: "PROTOBUF", SchemaID: "12345678-1234-1234-1234-123456789012"}) {
		t.Errorf("ValueSchema = %+v", r.ValueSchema)
	}
	r = only(t, mustParse(t, msk(rec(`,"valueSchemaMetadata":{"dataFormat":"JSON","schemaId":7},"keySchemaMetadata":null`))))
	if r.KeySchema != nil || r.ValueSchema == nil || r.ValueSchema.SchemaID != "7" {
		t.Errorf("KeySchema = %+v, ValueSchema = %+v", r.KeySchema, r.ValueSchema)
	}
}

// Many records with schema metadata: the pointers must stay distinct and correct across slab
// boundaries.
func TestParseSchemaMetadataMany(t *testing.T) {
	var recs []string
	for i := 0; i < 300; i++ {
		recs = append(recs, `{"topic":"orders","partition":0,"offset":`+strconv.Itoa(i)+`,"valueSchemaMetadata":{"dataFormat":"AVRO","schemaId":"`+strconv.Itoa(i)+`"}}`)
	}
	ev := mustParse(t, msk(recs...))
	for i, r := range ev.Partitions[0].Records {
		if r.ValueSchema == nil || r.ValueSchema.SchemaID != strconv.Itoa(i) {
			t.Fatalf("record %d: ValueSchema = %+v", i, r.ValueSchema)
		}
	}
}

// Malformed fields of a record do not fail Parse: the record carries Err and its neighbours
// are intact.
func TestParseRecordErrors(t *testing.T) {
	cases := []struct {
		fields string
		path   string
		msg    string
	}{
		{`,"value":"not base64!"`, `records["orders-0"][1].value`, "invalid base64"},
		{`,"value":"QQ="`, `records["orders-0"][1].value`, "invalid base64"},
		{`,"key":"QUJD\nRA=="`, `records["orders-0"][1].key`, "line break"},
		{`,"value":12`, `records["orders-0"][1].value`, "want base64 string or null, got 12"},
		{`,"headers":[{"h":[1,256]}]`, `records["orders-0"][1].headers[0].h`, "-128..255"},
		{`,"headers":[{"h":[-129]}]`, `records["orders-0"][1].headers[0].h`, "-128..255"},
		{`,"headers":[{"h":[1.5]}]`, `records["orders-0"][1].headers[0].h`, "-128..255"},
		{`,"headers":[{"h":"YQ=="}]`, `records["orders-0"][1].headers[0].h`, `got "YQ=="`},
		{`,"headers":[{"h":1}]`, `records["orders-0"][1].headers[0].h`, "want array of byte numbers -128..255, got 1"},
		{`,"headers":["h"]`, `records["orders-0"][1].headers[0]`, "want header object"},
		{`,"headers":{"h":[1]}`, `records["orders-0"][1].headers`, "want array of header objects"},
		{`,"timestamp":"yesterday"`, `records["orders-0"][1].timestamp`, `want integer epoch milliseconds, got "yesterday"`},
		{`,"timestamp":1.5`, `records["orders-0"][1].timestamp`, "want integer"},
		{`,"timestampType":5`, `records["orders-0"][1].timestampType`, "want string"},
		{`,"valueSchemaMetadata":{"dataFormat":["AVRO"]}`, `records["orders-0"][1].valueSchemaMetadata.dataFormat`, "want string"},
		{`,"keySchemaMetadata":"AVRO"`, `records["orders-0"][1].keySchemaMetadata`, "want schema metadata object"},
	}
	for _, c := range cases {
		t.Run(c.fields, func(t *testing.T) {
			good := `{"topic":"orders","partition":0,"offset":1,"value":"` + b64("ok") + `"}`
			bad := `{"topic":"orders","partition":0,"offset":2` + c.fields + `}`
			ev := mustParse(t, msk(good, bad, strings.Replace(good, `"offset":1`, `"offset":3`, 1)))
			rs := ev.Partitions[0].Records
			if len(rs) != 3 || rs[0].Err != nil || rs[2].Err != nil || string(rs[2].Value) != "ok" {
				t.Fatalf("neighbours disturbed: %+v", rs)
			}
			var e *kafkaevent.Error
			if !errors.As(rs[1].Err, &e) {
				t.Fatalf("Err = %v, want *Error", rs[1].Err)
			}
			if e.Path != c.path || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("Err = %q (path %q), want path %q and message containing %q", e, e.Path, c.path, c.msg)
			}
			if rs[1].Offset != 2 || rs[1].Topic != "orders" {
				t.Errorf("failed record lost its identity: %+v", rs[1])
			}
		})
	}
}

func TestParseBase64ErrorUnwraps(t *testing.T) {
	r := only(t, mustParse(t, msk(rec(`,"value":"QQ=A"`))))
	var ce base64.CorruptInputError
	if !errors.As(r.Err, &ce) {
		t.Errorf("Err = %v does not wrap base64.CorruptInputError", r.Err)
	}
}

// A malformed envelope fails Parse with an error that names the JSON path.
func TestParseEnvelopeErrors(t *testing.T) {
	cases := []struct {
		in   string
		want string
	}{
		{``, `$: want a JSON object, got nothing`},
		{`[]`, `$: want a JSON object, got [`},
		{`{"eventSource":"aws:kafka","records":{}} x`, `$: unexpected data after the event object`},
		{`{"records":{}}`, `eventSource: missing`},
		{`{"eventSource":"aws:sqs","records":{}}`, `eventSource: unknown event source "aws:sqs"`},
		{`{"eventSource":7,"records":{}}`, `eventSource: want string, got 7`},
		{`{"eventSource":"aws:kafka"}`, `records: missing`},
		{`{"eventSource":"aws:kafka","records":[]}`, `records: want object keyed "topic-partition", got [`},
		{`{"eventSource":"aws:kafka","records":null}`, `records: want object keyed`},
		{`{"eventSource":"aws:kafka","bootstrapServers":["a"],"records":{}}`, `bootstrapServers: want comma-separated string`},
		{`{"eventSource":"aws:kafka","records":{"orders-0":{}}}`, `records["orders-0"]: want array of records, got {`},
		{`{"eventSource":"aws:kafka","records":{"orders-0":[],"orders-0":[]}}`, `records["orders-0"]: key appears twice in records`},
		{`{"eventSource":"aws:kafka","records":{"orders":[{"partition":0,"offset":1}]}}`, `records["orders"][0].topic: missing, and the records key is not "topic-N"`},
		{`{"eventSource":"aws:kafka","records":{"orders":[{"topic":"orders","offset":1}]}}`, `records["orders"][0].partition: missing, and the records key is not "topic-N"`},
		{`{"eventSource":"aws:kafka","records":{"orders":[{"topic":"","partition":0,"offset":1}]}}`, `records["orders"][0].topic: missing`},
		{"\xef\xbb\xbf" + `{"eventSource":"aws:kafka","records":{}}`, `$: the payload starts with a UTF-8 byte order mark (EF BB BF)`},
		{"{\"eventSource\":\"aws:kafka\",\"records\":{\"t-0\":[{\"offset\":[\n1]}]}}", `records["t-0"][0].offset: want integer, got "[\n1]"`},
		{"{\"eventSource\":\"aws:kafka\",\"records\":{\"t-0\":[{\"offset\":\"a\x7fb\u2028\"}]}}", `records["t-0"][0].offset: want integer, got "\"a\x7fb\u2028\""`},
		{`{"eventSource":"aws:kafka","records":{"t-0":[{"offset":1,"a\nb":[1,}]}}`, `records["t-0"][0]["a\nb"]: invalid character '}'`},

		{msk(`{"topic":"orders","partition":0,"offset":"x"}`), `records["orders-0"][0].offset: want integer, got "x"`},
		{msk(rec(``), rec(``), rec(``), `{"topic":"orders","partition":0,"offset":"x"}`), `records["orders-0"][3].offset: want integer, got "x"`},
		{msk(`{"topic":"orders","partition":0,"offset":1.0}`), `records["orders-0"][0].offset: want integer, got 1.0`},
		{msk(`{"topic":"orders","partition":0,"offset":-2}`), `records["orders-0"][0].offset: want non-negative integer, got -2`},
		{msk(`{"topic":"orders","partition":0,"offset":92233720368547758070}`), `offset: want integer`},
		{msk(`{"topic":"orders","partition":0}`), `records["orders-0"][0].offset: missing`},
		{`{"eventSource":"aws:kafka","records":{"":[{"topic":"t","partition":0}]}}`, `records[""][0].offset: missing`},
		{`{"eventSource":"aws:kafka","records":{"":[],"":[]}}`, `records[""]: key appears twice in records`},
		{msk(`{"topic":"orders","partition":"x","offset":1}`), `records["orders-0"][0].partition: want partition number`},
		{msk(`{"topic":"orders","partition":-1,"offset":1}`), `records["orders-0"][0].partition: want partition number`},
		{msk(`{"topic":9,"partition":0,"offset":1}`), `records["orders-0"][0].topic: want string, got 9`},
		{msk(`7`), `records["orders-0"][0]: want record object, got 7`},
		{msk(`{"topic":"orders","partition":0,"offset":1,"value":"QQ==`), `records["orders-0"][0].value: unexpected end of JSON input`},
		{msk(`{"topic":"orders","partition":0,"offset":1,"value":"a` + "\x01" + `"}`), `records["orders-0"][0].value: invalid character`},
		{msk(`{"topic":"orders","partition":0,"offset":1,"x":[1,}`), `records["orders-0"][0].x: invalid character '}'`},
		{msk(`{"topic":"orders","partition":0,"offset":1,"x":tru}`), `records["orders-0"][0].x: invalid character '}' in literal true`},
		{msk(`{"topic":"orders","partition":0,"offset":1,"x":01}`), `records["orders-0"][0]: invalid character '1' after object key:value pair`},
		{msk(`{"topic":"orders","partition":0,"offset":1,"x":"\q"}`), `records["orders-0"][0].x: invalid character 'q' in string escape code`},
		{msk(`{"topic":"orders","partition":0,"offset":1,"headers":[{"h":[1,]}]}`), `records["orders-0"][0].headers[0].h: invalid character ']'`},
		{msk(`{"topic":"orders","partition":0,"offset":1,"timestamp":1e}`), `records["orders-0"][0].timestamp: invalid character '}' in exponent`},
		{msk(`{"topic":"orders","partition":0,"offset":1}`)[:60], `unexpected end of JSON input`},
		{msk(`{"topic":"orders","partition":0,"offset":1,"headers":[{"h":00]}]}`), `records["orders-0"][0].headers: invalid character '0' after object key:value pair`},
		{strings.Repeat("[", 5000), `$: want a JSON object, got [`},
		{`{"eventSource":"aws:kafka","records":{` + strings.Repeat(`"a-1":[],`, 1) + func() string {
			var b strings.Builder
			for i := range 40 {
				fmt.Fprintf(&b, `"t-%d":[],`, i)
			}
			return b.String()
		}() + `"a-1":[]}}`, `records["a-1"]: key appears twice in records`},
		{`{"eventSource":"aws:kafka","x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `,"records":{}}`, `x: nesting exceeds 10000 levels`},
	}
	for _, c := range cases {
		_, err := kafkaevent.Parse([]byte(c.in))
		var e *kafkaevent.Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%.80q) = %v, want *Error", c.in, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%.80q) error\n  %q\nwant it to contain\n  %q", c.in, err, c.want)
		}
		if e.Path == "" {
			t.Errorf("Parse(%.80q): error without a path: %v", c.in, err)
		}
		if e.Offset < 0 || e.Offset > len(c.in) {
			t.Errorf("Parse(%.80q): offset %d out of range", c.in, e.Offset)
		}
	}
}

// Strings decode as encoding/json decodes them: escapes, surrogate pairs, invalid UTF-8.
func TestParseStrings(t *testing.T) {
	ev := mustParse(t, `{"eventSource":"aws:kafka","records":{"caf\u00e9-0":[{"topic":"café","partition":0,"offset":0,`+
		`"headers":[{"\ud83d\ude00 \"q\" \ud800":[1]},{"bad`+"\xff"+`":[2]}]}]}}`)
	if ev.Partitions[0].Topic != "café" {
		t.Errorf("topic = %q", ev.Partitions[0].Topic)
	}
	hs := ev.Partitions[0].Records[0].Headers
	if hs[0].Key != "😀 \"q\" \uFFFD" || hs[1].Key != "bad\uFFFD" {
		t.Errorf("header keys = %q, %q", hs[0].Key, hs[1].Key)
	}
}

// Parse must not keep the caller's buffer: Lambda runtimes reuse it.
func TestParseCopiesInput(t *testing.T) {
	in := []byte(msk(rec(`,"key":"` + b64("key") + `","value":"` + b64("value") + `","headers":[{"h":[104]}]`)))
	ev, err := kafkaevent.Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 'X'
	}
	r := only(t, ev)
	if string(r.Key) != "key" || string(r.Value) != "value" || r.Topic != "orders" || r.Headers[0].Key != "h" || string(r.Headers[0].Value) != "h" {
		t.Errorf("record changed with the input buffer: %+v", r)
	}
}

func TestParseLargeGeneratedEvent(t *testing.T) {
	data := largeEvent()
	ev, err := kafkaevent.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Len() != 10000 || len(ev.Partitions) != 4 {
		t.Fatalf("Len() = %d, partitions = %d", ev.Len(), len(ev.Partitions))
	}
	for r := range ev.All() {
		if r.Err != nil || len(r.Value) < 200 || r.Value[0] != '{' || r.Value[len(r.Value)-1] != '}' {
			t.Fatalf("record %s@%d: err %v, value %q", r.PartitionID(), r.Offset, r.Err, r.Value)
		}
		if v, ok := r.Header("content-type"); !ok || string(v) != "application/json" {
			t.Fatalf("record %s@%d: content-type %q", r.PartitionID(), r.Offset, v)
		}
	}
}

func TestEventUnmarshalJSON(t *testing.T) {
	var ev kafkaevent.Event
	if err := json.Unmarshal([]byte(msk(rec(`,"value":"`+b64("v")+`"`))), &ev); err != nil {
		t.Fatal(err)
	}
	if r := only(t, &ev); string(r.Value) != "v" || ev.Source != kafkaevent.SourceMSK {
		t.Errorf("record = %+v", r)
	}
	err := json.Unmarshal([]byte(`{"eventSource":"aws:kafka","records":{"x":{}}}`), &ev)
	var e *kafkaevent.Error
	if !errors.As(err, &e) || e.Path != `records["x"]` {
		t.Errorf("err = %v, want *Error at records[\"x\"]", err)
	}
}

// A topic that JSON must escape is compared as text, never matched as raw bytes.
func TestParseTopicNeedingEscapes(t *testing.T) {
	ev := mustParse(t, `{"eventSource":"aws:kafka","records":{"a\"b-0":[{"topic":"a\"b","partition":0,"offset":1}]}}`)
	if ev.Partitions[0].Topic != `a"b` {
		t.Errorf("topic = %q", ev.Partitions[0].Topic)
	}
	_, err := kafkaevent.Parse([]byte(`{"eventSource":"aws:kafka","records":{"a\"b-0":[{"topic":"a"b","partition":0,"offset":1}]}}`))
	if err == nil {
		t.Error("invalid JSON accepted")
	}
}

// The arena is sized from the first record; a batch whose later records are far larger must
// still decode exactly, with a bounded number of allocations.
func TestParseOutgrowsArenaEstimate(t *testing.T) {
	recs := []string{`{"topic":"orders","partition":0,"offset":0,"value":"` + b64("x") + `"}`}
	var want []string
	want = append(want, "x")
	for i := 1; i <= 60; i++ {
		v := strings.Repeat(string(rune('a'+i%26)), 1000*i)
		want = append(want, v)
		recs = append(recs, `{"topic":"orders","partition":0,"offset":`+strconv.Itoa(i)+`,"key":"`+b64(v[:3])+`","value":"`+b64(v)+`","headers":[{"h":[1,2,3]}]}`)
	}
	data := []byte(msk(recs...))
	ev := mustParse(t, string(data))
	for i, r := range ev.Partitions[0].Records {
		if string(r.Value) != want[i] || r.Err != nil {
			t.Fatalf("record %d: value of %d bytes, want %d; err %v", i, len(r.Value), len(want[i]), r.Err)
		}
	}
	allocs := testing.AllocsPerRun(5, func() { _, _ = kafkaevent.Parse(data) })
	if allocs > 30 {
		t.Errorf("%v allocations for 61 records", allocs)
	}
}
