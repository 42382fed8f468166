package kafkaevent_test

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// A member given twice in the envelope, or a record's topic, partition or offset given twice,
// fails Parse with an *Error naming the member's path: encoding/json would keep the last one
// (and a second records object would drop the first one's records), and no record whose
// identity is in doubt can be reported as a batch item failure.
func TestParseDuplicateEnvelopeMembers(t *testing.T) {
	good := rec(`,"value":"` + b64("ok") + `"`)
	cases := []struct {
		name, in, path string
	}{
		{"records", `{"eventSource":"aws:kafka","records":{"orders-0":[` + good + `]},"records":{"orders-1":[]}}`, `records`},
		{"records, second empty first", `{"eventSource":"aws:kafka","records":{},"records":{"orders-0":[` + good + `]}}`, `records`},
		{"eventSource", `{"eventSource":"aws:kafka","records":{},"eventSource":"SelfManagedKafka"}`, `eventSource`},
		{"eventSource null", `{"eventSource":"aws:kafka","eventSource":null,"records":{}}`, `eventSource`},
		{"eventSourceArn", `{"eventSource":"aws:kafka","eventSourceArn":"arn:a","eventSourceArn":"arn:b","records":{}}`, `eventSourceArn`},
		{"bootstrapServers", `{"eventSource":"aws:kafka","bootstrapServers":"a:9092","records":{},"bootstrapServers":"b:9092"}`, `bootstrapServers`},
		{"escaped name", `{"eventSource":"aws:kafka","records":{},"\u0072ecords":{}}`, `records`},
		// Lambda's own form, which the fast path reads.
		{"offset", msk(good, `{"topic":"orders","partition":0,"offset":7,"offset":8}`), `records["orders-0"][1].offset`},
		{"offset, spaced", msk(`{ "offset" : 7 , "topic":"orders", "offset":7 }`), `records["orders-0"][0].offset`},
		{"offset at the end", msk(rec(`,"value":"` + b64("v") + `","offset":9`)), `records["orders-0"][0].offset`},
		{"partition", msk(`{"topic":"orders","partition":0,"offset":7,"partition":1}`), `records["orders-0"][0].partition`},
		{"partition as string", msk(`{"topic":"orders","partition":"0","offset":7,"partition":0}`), `records["orders-0"][0].partition`},
		{"topic", msk(`{"topic":"orders","partition":0,"topic":"payments","offset":7}`), `records["orders-0"][0].topic`},
		{"topic, same value", msk(`{"topic":"orders","topic":"orders","partition":0,"offset":7}`), `records["orders-0"][0].topic`},
		{"topic empty first", msk(`{"topic":"","partition":0,"offset":7,"topic":"payments"}`), `records["orders-0"][0].topic`},
		{"topic, unkeyed", `{"eventSource":"aws:kafka","records":{"x":[{"topic":"a","partition":0,"offset":1,"topic":"b"}]}}`, `records["x"][0].topic`},
		{"offset escaped", msk(`{"topic":"orders","partition":0,"offset":7,"\u006fffset":8}`), `records["orders-0"][0].offset`},
		{"offset after a record error", msk(`{"topic":"orders","partition":0,"value":"!!","offset":7,"offset":8}`), `records["orders-0"][0].offset`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, parse := range []func([]byte) (*kafkaevent.Event, error){kafkaevent.Parse, kafkaevent.ParseGeneral} {
				ev, err := parse([]byte(c.in))
				var e *kafkaevent.Error
				if !errors.As(err, &e) || ev != nil {
					t.Fatalf("Parse(%s) = %v, %v; want an *Error", c.in, ev, err)
				}
				if e.Path != c.path || !strings.Contains(e.Msg, "member appears twice") {
					t.Errorf("Parse(%s): %v (path %q); want path %q, member appears twice", c.in, err, e.Path, c.path)
				}
				if e.Offset <= 0 || e.Offset >= len(c.in) {
					t.Errorf("Offset = %d, outside the payload", e.Offset)
				}
			}
		})
	}
}

// Any other member of a record given twice makes that record's Err, naming the member, and
// leaves the field zero (neither value is kept); the record keeps its topic, partition and
// offset, and the other records of the batch are read as usual.
func TestParseDuplicateRecordMembers(t *testing.T) {
	cases := []struct {
		name, fields, path string
	}{
		{"value", `,"value":"` + b64("a") + `","value":"` + b64("b") + `"`, `records["orders-0"][1].value`},
		{"value null first", `,"value":null,"value":"` + b64("b") + `"`, `records["orders-0"][1].value`},
		{"value three times", `,"value":"` + b64("a") + `","value":"` + b64("b") + `","value":"` + b64("c") + `"`, `records["orders-0"][1].value`},
		{"value, second bad base64", `,"value":"` + b64("a") + `","value":"!!"`, `records["orders-0"][1].value`},
		{"key", `,"key":"` + b64("a") + `","key":""`, `records["orders-0"][1].key`},
		{"timestamp", `,"timestamp":1700000000000,"timestamp":-1`, `records["orders-0"][1].timestamp`},
		{"timestampType", `,"timestampType":"CREATE_TIME","timestampType":"LOG_APPEND_TIME"`, `records["orders-0"][1].timestampType`},
		{"headers", `,"headers":[{"a":[1]}],"headers":[]`, `records["orders-0"][1].headers`},
		{"keySchemaMetadata", `,"keySchemaMetadata":{"dataFormat":"AVRO","schemaId":"1"},"keySchemaMetadata":null`, `records["orders-0"][1].keySchemaMetadata`},
		{"valueSchemaMetadata", `,"valueSchemaMetadata":null,"valueSchemaMetadata":{"dataFormat":"AVRO","schemaId":"1"}`, `records["orders-0"][1].valueSchemaMetadata`},
		{"schemaId", `,"valueSchemaMetadata":{"dataFormat":"AVRO","schemaId":"1","schemaId":"2"}`, `records["orders-0"][1].valueSchemaMetadata.schemaId`},
		{"dataFormat", `,"keySchemaMetadata":{"dataFormat":"AVRO","schemaId":7,"dataFormat":null}`, `records["orders-0"][1].keySchemaMetadata.dataFormat`},
		{"after another error", `,"key":"!!","value":"` + b64("a") + `","value":"` + b64("b") + `"`, `records["orders-0"][1].key`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			good := `{"topic":"orders","partition":0,"offset":1,"value":"` + b64("ok") + `"}`
			// The duplicate comes first and last, so that the fast path meets it too.
			for _, bad := range []string{
				`{"topic":"orders","partition":0,"offset":2` + c.fields + `}`,
				`{` + c.fields[1:] + `,"topic":"orders","partition":0,"offset":2}`,
			} {
				in := msk(good, bad, strings.Replace(good, `"offset":1`, `"offset":3`, 1))
				ev := mustParse(t, in)
				agree(t, []byte(in))
				rs := ev.Partitions[0].Records
				if len(rs) != 3 || rs[0].Err != nil || rs[2].Err != nil || string(rs[2].Value) != "ok" {
					t.Fatalf("neighbours disturbed: %+v", rs)
				}
				r := &rs[1]
				var e *kafkaevent.Error
				if !errors.As(r.Err, &e) {
					t.Fatalf("%s: Err = %v, want *Error", bad, r.Err)
				}
				wantMsg := "member appears twice"
				if c.name == "after another error" {
					wantMsg = "invalid base64" // the first error of the record stands
				}
				if e.Path != c.path || !strings.Contains(e.Msg, wantMsg) {
					t.Errorf("%s: Err = %q (path %q), want path %q and %q", bad, e, e.Path, c.path, wantMsg)
				}
				if r.Topic != "orders" || r.Partition != 0 || r.Offset != 2 {
					t.Errorf("failed record lost its identity: %+v", r)
				}
				switch c.name {
				case "value", "value null first", "value three times", "value, second bad base64", "after another error":
					if r.Value != nil {
						t.Errorf("Value = %q, want nil: neither value is kept", r.Value)
					}
				case "key":
					if r.Key != nil {
						t.Errorf("Key = %q, want nil", r.Key)
					}
				case "timestamp":
					if !r.Timestamp.IsZero() {
						t.Errorf("Timestamp = %v, want zero", r.Timestamp)
					}
				case "timestampType":
					if r.TimestampType != "" {
						t.Errorf("TimestampType = %q, want empty", r.TimestampType)
					}
				case "headers":
					if r.Headers != nil {
						t.Errorf("Headers = %v, want nil", r.Headers)
					}
				case "keySchemaMetadata":
					if r.KeySchema != nil {
						t.Errorf("KeySchema = %+v, want nil", r.KeySchema)
					}
				case "valueSchemaMetadata":
					if r.ValueSchema != nil {
						t.Errorf("ValueSchema = %+v, want nil", r.ValueSchema)
					}
				case "schemaId":
					if r.ValueSchema == nil || r.ValueSchema.SchemaID != "" || r.ValueSchema.DataFormat != "AVRO" {
						t.Errorf("ValueSchema = %+v, want AVRO and no schema id", r.ValueSchema)
					}
				case "dataFormat":
					if r.KeySchema == nil || r.KeySchema.DataFormat != "" {
						t.Errorf("KeySchema = %+v, want no data format", r.KeySchema)
					}
				}
				// MarshalJSON writes the record back as it came, and it fails the same way.
				out, err := ev.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				again := mustParse(t, string(out))
				if e2 := again.Partitions[0].Records[1].Err; e2 == nil || !strings.Contains(e2.Error(), c.path) {
					t.Errorf("after MarshalJSON: Err = %v", e2)
				}
			}
		})
	}
}

// What is not a duplicate member stays accepted: a header name repeated, in separate header
// objects or in one (each member of a header object is a header, so none is lost); unknown
// members given twice, which Parse does not read (see the package doc).
func TestParseRepeatsThatAreNotDuplicates(t *testing.T) {
	r := only(t, mustParse(t, msk(rec(`,"headers":[{"h":[1]},{"h":[2]},{"h":[3],"h":[4]}]`))))
	want := []kafkaevent.Header{{Key: "h", Value: []byte{1}}, {Key: "h", Value: []byte{2}}, {Key: "h", Value: []byte{3}}, {Key: "h", Value: []byte{4}}}
	if r.Err != nil || !reflect.DeepEqual(r.Headers, want) {
		t.Errorf("Headers = %v, Err = %v; want %v", r.Headers, r.Err, want)
	}
	in := `{"eventSource":"aws:kafka","x":1,"x":2,"records":{"orders-0":[` +
		rec(`,"future":1,"future":{"a":2},"valueSchemaMetadata":{"dataFormat":"AVRO","v":1,"v":2}`) + `]},"x":3}`
	if r := only(t, mustParse(t, in)); r.Err != nil || r.ValueSchema == nil || r.ValueSchema.DataFormat != "AVRO" {
		t.Errorf("record = %+v", r)
	}
	agree(t, []byte(in))
}

// duplicate is a member that a payload gives twice where Parse reads it, found by
// duplicates, which walks the payload with encoding/json's tokenizer, apart from Parse.
type duplicate struct {
	path   string // the member's path, as Parse's errors write it
	fatal  bool   // whether Parse must fail: an envelope member, or a record's identity
	key    string // the records key of the record, for a record member
	record int    // the index of the record under key, for a record member
}

// duplicates lists the known members that data gives twice, in document order, as far as data
// is valid JSON. jsonscan.FindDuplicates finds them, with encoding/json's tokenizer, apart from
// Parse.
func duplicates(data []byte) []duplicate {
	var out []duplicate
	_ = jsonscan.FindDuplicates(data, kafkaField, func(d jsonscan.Duplicate) bool {
		if len(d.Object) == 0 {
			out = append(out, duplicate{path: d.Name, fatal: true})
			return true
		}
		key, idx := d.Object[1].Name, d.Object[2].Index
		path := "records[" + strconv.Quote(key) + "][" + strconv.Itoa(idx) + "]"
		if len(d.Object) == 4 {
			path += "." + d.Object[3].Name
		}
		out = append(out, duplicate{path: path + "." + d.Name, fatal: len(d.Object) == 3 && identity[d.Name], key: key, record: idx})
		return true
	})
	return out
}

var (
	envelope = map[string]bool{"eventSource": true, "eventSourceArn": true, "bootstrapServers": true, "records": true}
	identity = map[string]bool{"topic": true, "partition": true, "offset": true}
	other    = map[string]bool{"timestamp": true, "timestampType": true, "key": true, "value": true, "headers": true,
		"keySchemaMetadata": true, "valueSchemaMetadata": true}
)

// kafkaField says whether Parse reads the member name of the object at obj as a field that may
// not repeat: a member of the envelope, of a record (records["t-0"][3]) or of its schema
// metadata. Names match exactly.
func kafkaField(obj jsonscan.Path, name string) (string, bool) {
	if len(obj) == 0 {
		return name, envelope[name]
	}
	if obj[0].Name != "records" || len(obj) < 3 || obj[1].Index >= 0 || obj[2].Index < 0 {
		return "", false
	}
	switch {
	case len(obj) == 3:
		return name, identity[name] || other[name]
	case len(obj) == 4 && (obj[3].Name == "keySchemaMetadata" || obj[3].Name == "valueSchemaMetadata"):
		return name, name == "dataFormat" || name == "schemaId"
	}
	return "", false
}

// checkDuplicates fails t unless Parse's answer on data agrees with duplicates: Parse fails
// wherever an envelope member or a record's identity is given twice, and a record with any
// other member twice carries Err; an error that says a member appears twice names a member
// that does.
func checkDuplicates(t *testing.T, data []byte, ev *kafkaevent.Event, err error) {
	t.Helper()
	dups := duplicates(data)
	found := map[string]bool{}
	for _, d := range dups {
		found[d.path] = true
	}
	check := func(err error) {
		var e *kafkaevent.Error
		if errors.As(err, &e) && strings.HasPrefix(e.Msg, "member appears twice") && !found[e.Path] {
			t.Fatalf("%v: no such duplicate (found %v)\ninput: %.300q", err, dups, data)
		}
	}
	if err != nil {
		check(err)
		return
	}
	for _, d := range dups {
		if d.fatal {
			t.Fatalf("%s given twice, and Parse accepts the event\ninput: %.300q", d.path, data)
		}
		if r := recordAt(t, ev, d.key, d.record); r.Err == nil {
			t.Fatalf("%s given twice, and the record has no Err\ninput: %.300q", d.path, data)
		}
	}
	for r := range ev.All() {
		check(r.Err)
	}
}

// duplicateSeeds are payloads with members given twice, for FuzzParse's corpus: in the envelope,
// in records on the fast and general paths, in schema metadata; nested deep in an unknown
// member next to a duplicate; and one record with a member given thousands of times.
func duplicateSeeds() [][]byte {
	ok := rec(`,"value":"` + b64("ok") + `"`)
	seeds := []string{
		`{"eventSource":"aws:kafka","records":{"orders-0":[` + ok + `]},"records":{"orders-1":[]}}`,
		`{"eventSource":"aws:kafka","eventSource":"SelfManagedKafka","eventSourceArn":"a","eventSourceArn":"b","bootstrapServers":"x","bootstrapServers":"y","records":{}}`,
		msk(ok, `{"topic":"orders","partition":0,"offset":7,"offset":8}`),
		msk(`{"topic":"orders","partition":0,"partition":"0","offset":7}`),
		msk(`{"topic":"orders","topic":"","partition":0,"offset":7}`),
		msk(rec(`,"value":"` + b64("a") + `","value":"` + b64("b") + `"`)),
		msk(rec(`,"key":null,"key":"","headers":[],"headers":null,"timestampType":"CREATE_TIME"`)),
		msk(rec(`,"keySchemaMetadata":{"dataFormat":"AVRO","dataFormat":"JSON"},"valueSchemaMetadata":{"schemaId":1,"schemaId":"1"}`)),
		msk(rec(`,"keySchemaMetadata":null,"keySchemaMetadata":{},"valueSchemaMetadata":[],"valueSchemaMetadata":1`)),
		msk(`{"x":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `,"topic":"orders","partition":0,"offset":1,"offset":1}`),
		msk(rec(`,"x":` + strings.Repeat(`{"value":`, 900) + "1" + strings.Repeat("}", 900) + `,"value":null,"value":null`)),
		msk(rec(strings.Repeat(`,"timestamp":1`, 5000))),
		msk(`{"topic":"orders","partition":0` + strings.Repeat(`,"offset":1`, 5000) + `}`),
	}
	out := make([][]byte, len(seeds))
	for i, s := range seeds {
		out[i] = []byte(s)
	}
	return out
}

// The fuzz target's check of duplicates finds each seed's, and Parse answers as it expects.
func TestDuplicateSeeds(t *testing.T) {
	for _, data := range duplicateSeeds() {
		if len(duplicates(data)) == 0 {
			t.Errorf("no duplicate found in %.80s...%s", data, data[max(0, len(data)-120):])
		}
		ev, err := kafkaevent.Parse(data)
		checkDuplicates(t, data, ev, err)
		agree(t, data)
	}
}
