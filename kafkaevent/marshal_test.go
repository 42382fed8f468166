package kafkaevent_test

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

	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// wire is the ESM payload read with encoding/json, keeping null and absent fields apart.
type wire struct {
	EventSource      string                                  `json:"eventSource"`
	EventSourceARN   *string                                 `json:"eventSourceArn"`
	BootstrapServers *string                                 `json:"bootstrapServers"`
	Records          map[string][]map[string]json.RawMessage `json:"records"`
}

func decodeWire(t *testing.T, data []byte) wire {
	t.Helper()
	if !json.Valid(data) {
		t.Fatalf("MarshalJSON wrote invalid JSON: %s", data)
	}
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return w
}

func marshal(t *testing.T, e *kafkaevent.Event) []byte {
	t.Helper()
	data, err := e.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON: %v", err)
	}
	return data
}

func TestMarshalWireFormat(t *testing.T) {
	e := kafkaeventtest.NewBuilder(kafkaeventtest.WithBootstrapServers("b-1:9098", "b-2:9098")).
		Add("orders", 0, []byte(`{"id":1}`), kafkaeventtest.WithKey([]byte("k1")),
			kafkaeventtest.WithHeader("ë", []byte{0xc3, 0xab}),
			kafkaeventtest.WithHeader("dup", []byte{0, 127, 128, 255}),
			kafkaeventtest.WithHeader("dup", nil),
			kafkaeventtest.WithHeader("empty", []byte{}),
			kafkaeventtest.WithKeySchemaMetadata("AVRO", "1"),
			kafkaeventtest.WithValueSchemaMetadata("JSON", "12345678-1234-1234-1234-123456789012")).
		Add("orders", 0, nil, kafkaeventtest.WithTimestamp(time.Time{}), kafkaeventtest.WithOffset(9007199254740993)).
		Add("orders", 0, []byte{}, kafkaeventtest.WithKey([]byte{})).
		Event()
	data := marshal(t, e)
	w := decodeWire(t, data)

	if w.EventSource != "aws:kafka" || w.EventSourceARN == nil || *w.EventSourceARN != kafkaeventtest.DefaultMSKSourceARN {
		t.Errorf("envelope = %s", data)
	}
	if w.BootstrapServers == nil || *w.BootstrapServers != "b-1:9098,b-2:9098" {
		t.Errorf("bootstrapServers = %v", w.BootstrapServers)
	}
	rs := w.Records["orders-0"]
	if len(w.Records) != 1 || len(rs) != 3 {
		t.Fatalf("records = %s", data)
	}
	want := []map[string]string{{
		"topic":               `"orders"`,
		"partition":           `0`,
		"offset":              `0`,
		"timestamp":           `1768471200000`,
		"timestampType":       `"CREATE_TIME"`,
		"key":                 `"azE="`,
		"value":               `"eyJpZCI6MX0="`,
		"headers":             `[{"ë":[-61,-85]},{"dup":[0,127,-128,-1]},{"dup":null},{"empty":[]}]`,
		"keySchemaMetadata":   `{"dataFormat":"AVRO","schemaId":"1"}`,
		"valueSchemaMetadata": `{"dataFormat":"JSON","schemaId":"12345678-1234-1234-1234-123456789012"}`,
	}, {
		"topic":         `"orders"`,
		"partition":     `0`,
		"offset":        `9007199254740993`,
		"timestamp":     `-1`,
		"timestampType": `"CREATE_TIME"`,
		"key":           `null`,
		"value":         `null`,
		"headers":       `[]`,
	}, {
		"topic":         `"orders"`,
		"partition":     `0`,
		"offset":        `9007199254740994`,
		"timestamp":     `1768471200002`,
		"timestampType": `"CREATE_TIME"`,
		"key":           `""`,
		"value":         `""`,
		"headers":       `[]`,
	}}
	for i := range want {
		got := map[string]string{}
		for k, v := range rs[i] {
			got[k] = string(v)
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("record %d:\n got %v\nwant %v", i, got, want[i])
		}
	}
}

func TestMarshalOmitsEmptyEnvelopeFields(t *testing.T) {
	e := &kafkaevent.Event{Source: kafkaevent.SourceSelfManaged}
	data := marshal(t, e)
	if want := `{"eventSource":"SelfManagedKafka","records":{}}`; string(data) != want {
		t.Errorf("MarshalJSON = %s, want %s", data, want)
	}
	e.BootstrapServers = []string{}
	if data, want := marshal(t, e), `{"eventSource":"SelfManagedKafka","records":{}}`; string(data) != want {
		t.Errorf("MarshalJSON = %s, want %s", data, want)
	}
	var nilEvent *kafkaevent.Event
	if data := marshal(t, nilEvent); string(data) != "null" {
		t.Errorf("nil MarshalJSON = %s", data)
	}
}

func TestMarshalViaEncodingJSON(t *testing.T) {
	e := kafkaeventtest.NewBuilder().Add("t", 0, []byte("v")).Event()
	direct := marshal(t, e)
	viaJSON, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(direct, viaJSON) {
		t.Errorf("json.Marshal = %s\nMarshalJSON = %s", viaJSON, direct)
	}
}

func TestMarshalEscaping(t *testing.T) {
	weird := "a\"b\\c\nd\te\x01f\u2028g<h>&\xffi ë 😀"
	e := &kafkaevent.Event{
		Source:           kafkaevent.Source(weird),
		SourceARN:        weird,
		BootstrapServers: []string{weird, "x:1"},
		Partitions: []kafkaevent.Partition{{Topic: weird, Number: 3, Records: []kafkaevent.Record{{
			Topic: weird, Partition: 3, TimestampType: weird,
			Headers:     []kafkaevent.Header{{Key: weird, Value: []byte("v")}},
			KeySchema:   &kafkaevent.SchemaMetadata{DataFormat: weird, SchemaID: weird},
			ValueSchema: &kafkaevent.SchemaMetadata{DataFormat: weird, SchemaID: weird},
		}}}},
	}
	data := marshal(t, e)
	w := decodeWire(t, data)
	clean := strings.ToValidUTF8(weird, "\uFFFD")
	if w.EventSource != clean || *w.EventSourceARN != clean || *w.BootstrapServers != clean+",x:1" {
		t.Errorf("envelope strings not kept: %s", data)
	}
	rs, ok := w.Records[clean+"-3"]
	if !ok || len(rs) != 1 {
		t.Fatalf("records = %s", data)
	}
	var topic string
	if err := json.Unmarshal(rs[0]["topic"], &topic); err != nil || topic != clean {
		t.Errorf("topic = %q, %v; want %q", topic, err, clean)
	}
	var hs []map[string][]int8
	if err := json.Unmarshal(rs[0]["headers"], &hs); err != nil || len(hs) != 1 || hs[0][clean] == nil {
		t.Errorf("headers = %s, %v", rs[0]["headers"], err)
	}
}

func TestMarshalMergesRepeatedPartitions(t *testing.T) {
	e := &kafkaevent.Event{Source: kafkaevent.SourceMSK, Partitions: []kafkaevent.Partition{
		{Topic: "t", Number: 0, Records: []kafkaevent.Record{{Topic: "t", Offset: 1}}},
		{Topic: "u", Number: 0, Records: []kafkaevent.Record{{Topic: "u", Offset: 5}}},
		{Topic: "t", Number: 0, Records: []kafkaevent.Record{{Topic: "t", Offset: 2}}},
		{Topic: "v", Number: 1},
	}}
	data := marshal(t, e)
	if strings.Count(string(data), `"t-0"`) != 1 {
		t.Fatalf("key t-0 repeated: %s", data)
	}
	w := decodeWire(t, data)
	if len(w.Records["t-0"]) != 2 || string(w.Records["t-0"][0]["offset"]) != "1" || string(w.Records["t-0"][1]["offset"]) != "2" {
		t.Errorf("t-0 = %v", w.Records["t-0"])
	}
	if rs, ok := w.Records["v-1"]; !ok || len(rs) != 0 {
		t.Errorf("v-1 = %v, %v; want an empty array", rs, ok)
	}
}

// TestMarshalRoundTripBuilder checks Parse(MarshalJSON(e)) == e for builder-made events.
func TestMarshalRoundTripBuilder(t *testing.T) {
	e := kafkaeventtest.NewBuilder(kafkaeventtest.WithStartTime(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))).
		Add("orders.v1-eu-west", 10, []byte(`{"id":1}`), kafkaeventtest.WithKey([]byte("k"))).
		Add("orders.v1-eu-west", 2, nil, kafkaeventtest.WithKey(nil)).
		Add("orders.v1-eu-west", 2, []byte{}, kafkaeventtest.WithKey([]byte{})).
		Add("orders", 0, []byte{0, 1, 2, 0xff}, kafkaeventtest.WithOffset(1<<62), kafkaeventtest.WithTimestampType(kafkaevent.LogAppendTime),
			kafkaeventtest.WithHeader("ë", []byte{0xc3, 0xab}),
			kafkaeventtest.WithHeader("dup", []byte{0x80, 0xff}),
			kafkaeventtest.WithHeader("dup", nil),
			kafkaeventtest.WithHeader("empty", []byte{}),
			kafkaeventtest.WithKeySchemaMetadata("AVRO", "1"),
			kafkaeventtest.WithValueSchemaMetadata("PROTOBUF", "12345678-1234-1234-1234-123456789012")).
		Add("orders", 0, []byte("x"), kafkaeventtest.WithTimestamp(time.Time{}), kafkaeventtest.WithTimestampType("NO_TIMESTAMP_TYPE")).
		Event()
	for _, src := range []kafkaevent.Source{kafkaevent.SourceMSK, kafkaevent.SourceSelfManaged} {
		e.Source = src
		if src == kafkaevent.SourceSelfManaged {
			e.SourceARN = ""
		}
		data := marshal(t, e)
		got, err := kafkaevent.Parse(data)
		if err != nil {
			t.Fatalf("Parse(MarshalJSON(e)): %v\n%s", err, data)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("%s: Parse(MarshalJSON(e)) differs from e\n got %+v\nwant %+v\njson %s", src, got, e, data)
		}
	}
}

// TestMarshalRoundTripFixtures checks Parse(MarshalJSON(Parse(f))) == Parse(f) for every fixture.
func TestMarshalRoundTripFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in %s: %v", fixtureDir, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			checkRoundTrip(t, data, true)
		})
	}
}

// checkRoundTrip parses data, marshals the event, parses that again and compares. Records that
// Parse could not decode are compared by error path and message, since Error.Offset points
// into the payload, which MarshalJSON lays out anew.
func checkRoundTrip(t *testing.T, data []byte, mustParse bool) {
	t.Helper()
	e1, err := kafkaevent.Parse(data)
	if err != nil {
		if mustParse {
			t.Fatalf("Parse: %v", err)
		}
		return
	}
	out := marshal(t, e1)
	if !json.Valid(out) {
		t.Fatalf("MarshalJSON wrote invalid JSON: %s", out)
	}
	e2, err := kafkaevent.Parse(out)
	if err != nil {
		t.Fatalf("Parse(MarshalJSON(e)): %v\ninput  %s\noutput %s", err, data, out)
	}
	if e1.Len() != e2.Len() || len(e1.Partitions) != len(e2.Partitions) {
		t.Fatalf("shape changed: %d/%d records, %d/%d partitions", e1.Len(), e2.Len(), len(e1.Partitions), len(e2.Partitions))
	}
	for i := range e1.Partitions {
		for j := range e1.Partitions[i].Records {
			r1, r2 := &e1.Partitions[i].Records[j], &e2.Partitions[i].Records[j]
			var x1, x2 *kafkaevent.Error
			if errors.As(r1.Err, &x1) && errors.As(r2.Err, &x2) {
				if x1.Path != x2.Path || x1.Msg != x2.Msg {
					t.Errorf("record %s[%d] error changed: %v -> %v", r1.PartitionID(), j, x1, x2)
				}
				r1.Err, r2.Err = nil, nil
			}
		}
	}
	if !reflect.DeepEqual(e1, e2) {
		t.Errorf("Parse(MarshalJSON(e)) differs from e\ninput  %s\noutput %s\n e1 %+v\n e2 %+v", data, out, e1, e2)
	}
}

func FuzzMarshalRoundTrip(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"eventSource":"aws:kafka","records":{"t-0":[{"topic":"t","partition":0,"offset":1,"timestamp":-1,"timestampType":"CREATE_TIME","key":"!!","value":"dg==","headers":[]}]}}`))
	f.Add([]byte(`{"eventSource":"SelfManagedKafka","records":{"t-0":[{"topic":"t","partition":0,"offset":1,"timestamp":1,"timestampType":"X","headers":[{"a":[300]}]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRoundTrip(t, data, false)
	})
}
