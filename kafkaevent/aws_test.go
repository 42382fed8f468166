package kafkaevent_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// awsLossy returns a copy of e changed the way a trip through aws-lambda-go changes it:
// empty keys and values become nil, nil header values empty, schema metadata is dropped.
func awsLossy(e *kafkaevent.Event) *kafkaevent.Event {
	c := *e
	c.Partitions = make([]kafkaevent.Partition, len(e.Partitions))
	for i, p := range e.Partitions {
		rs := make([]kafkaevent.Record, len(p.Records))
		for j, r := range p.Records {
			if len(r.Key) == 0 {
				r.Key = nil
			}
			if len(r.Value) == 0 {
				r.Value = nil
			}
			if r.Headers != nil {
				hs := make([]kafkaevent.Header, len(r.Headers))
				for k, h := range r.Headers {
					if h.Value == nil {
						h.Value = []byte{}
					}
					hs[k] = h
				}
				r.Headers = hs
			}
			r.KeySchema, r.ValueSchema = nil, nil
			rs[j] = r
		}
		p.Records = rs
		c.Partitions[i] = p
	}
	if len(c.Partitions) == 0 {
		c.Partitions = nil
	}
	return &c
}

func mustFromAWS(t *testing.T, ke *events.KafkaEvent) *kafkaevent.Event {
	t.Helper()
	e, err := kafkaevent.FromAWS(ke)
	if err != nil {
		t.Fatalf("FromAWS: %v", err)
	}
	return e
}

func TestFromAWSFixturesAgreeWithParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var ke events.KafkaEvent
			if err := json.Unmarshal(data, &ke); err != nil {
				t.Fatalf("aws-lambda-go cannot read the fixture: %v", err)
			}
			got := mustFromAWS(t, &ke)
			parsed, err := kafkaevent.Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if want := awsLossy(parsed); !reflect.DeepEqual(got, want) {
				t.Errorf("FromAWS differs from Parse (after aws-lambda-go's losses)\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestFromAWS(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	ke := &events.KafkaEvent{
		EventSource:      "SelfManagedKafka",
		BootstrapServers: "a:9092, b:9092",
		Records: map[string][]events.KafkaRecord{
			"t.x-eu-10": {{
				Topic: "t.x-eu", Partition: 10, Offset: 1 << 60,
				Timestamp:     events.MilliSecondsEpochTime{Time: time.Date(2026, 1, 15, 11, 0, 0, 123_999_999, cet)},
				TimestampType: "LOG_APPEND_TIME",
				Key:           base64.StdEncoding.EncodeToString([]byte("k")),
				Value:         base64.StdEncoding.EncodeToString([]byte{0, 0xff}),
				Headers: []map[string]events.JSONNumberBytes{
					{"b": {0xc3, 0xab}},
					{"z": {1}, "a": nil},
					{"b": {}},
				},
			}},
			"t.x-eu-2": {
				{Topic: "t.x-eu", Partition: 2, Offset: 5, Timestamp: events.MilliSecondsEpochTime{Time: time.UnixMilli(-1)}},
				{Partition: 2, Offset: 6}, // no topic (as a hand-made event might have): taken from the key
			},
			"a-0": {},
		},
	}
	e := mustFromAWS(t, ke)
	if e.Source != kafkaevent.SourceSelfManaged || e.SourceARN != "" {
		t.Errorf("Source, ARN = %q, %q", e.Source, e.SourceARN)
	}
	if want := []string{"a:9092", "b:9092"}; !reflect.DeepEqual(e.BootstrapServers, want) {
		t.Errorf("BootstrapServers = %q, want %q", e.BootstrapServers, want)
	}
	if got, want := ids(e), []string{"a-0", "t.x-eu-2", "t.x-eu-10"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("partitions = %v, want %v", got, want)
	}
	if e.Partitions[0].Records != nil {
		t.Errorf("a-0 records = %v, want none", e.Partitions[0].Records)
	}
	r := e.Partitions[2].Records[0]
	want := kafkaevent.Record{
		Topic: "t.x-eu", Partition: 10, Offset: 1 << 60,
		Timestamp:     time.Date(2026, 1, 15, 10, 0, 0, 123_000_000, time.UTC),
		TimestampType: "LOG_APPEND_TIME",
		Key:           []byte("k"),
		Value:         []byte{0, 0xff},
		Headers: []kafkaevent.Header{
			{Key: "b", Value: []byte{0xc3, 0xab}},
			{Key: "a", Value: nil},
			{Key: "z", Value: []byte{1}},
			{Key: "b", Value: []byte{}},
		},
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("record:\n got %+v\nwant %+v", r, want)
	}
	if r.Timestamp.Location() != time.UTC {
		t.Errorf("Timestamp location = %v, want UTC", r.Timestamp.Location())
	}
	for i, r := range e.Partitions[1].Records {
		if !r.Timestamp.IsZero() {
			t.Errorf("t.x-eu-2[%d].Timestamp = %v, want zero (-1 ms and zero time)", i, r.Timestamp)
		}
		if r.Topic != "t.x-eu" || r.Partition != 2 || r.Key != nil || r.Value != nil || !r.IsTombstone() {
			t.Errorf("t.x-eu-2[%d] = %+v", i, r)
		}
	}
}

func TestFromAWSBadBase64(t *testing.T) {
	ke := &events.KafkaEvent{
		EventSource: "aws:kafka",
		Records: map[string][]events.KafkaRecord{"t-0": {
			{Topic: "t", Offset: 1, Value: "dg=="},
			{Topic: "t", Offset: 2, Key: "a2V5", Value: "not base64!"},
			{Topic: "t", Offset: 3, Key: "%%", Value: "also bad"},
			{Topic: "t", Offset: 4, Value: "dg==\n"},
		}},
	}
	e := mustFromAWS(t, ke)
	rs := e.Partitions[0].Records
	if rs[0].Err != nil || string(rs[0].Value) != "v" {
		t.Errorf("record 0: %+v", rs[0])
	}
	for i, c := range []struct{ path, key string }{
		{`records["t-0"][1].value`, "key"},
		{`records["t-0"][2].key`, ""},
		{`records["t-0"][3].value`, ""},
	} {
		r := rs[i+1]
		var xe *kafkaevent.Error
		if !errors.As(r.Err, &xe) || xe.Path != c.path || xe.Offset != -1 || !strings.Contains(xe.Msg, "invalid base64") {
			t.Errorf("record %d Err = %#v, want *Error at %s", i+1, r.Err, c.path)
			continue
		}
		var ce base64.CorruptInputError
		if !errors.As(r.Err, &ce) {
			t.Errorf("record %d Err does not wrap base64.CorruptInputError: %v", i+1, r.Err)
		}
		if string(r.Key) != c.key || r.Value != nil {
			t.Errorf("record %d key, value = %q, %q", i+1, r.Key, r.Value)
		}
	}

	// The bad field survives MarshalJSON and ToAWS.
	data, err := e.MarshalJSON()
	if err != nil || !json.Valid(data) {
		t.Fatalf("MarshalJSON = %s, %v", data, err)
	}
	for _, s := range []string{`"not base64!"`, `"%%"`, `"also bad"`, `"dg==\n"`} {
		if !strings.Contains(string(data), s) {
			t.Errorf("MarshalJSON lost %s:\n%s", s, data)
		}
	}
	back := kafkaevent.ToAWS(e).Records["t-0"]
	if back[1].Value != "not base64!" || back[1].Key != "a2V5" || back[2].Key != "%%" || back[2].Offset != 3 {
		t.Errorf("ToAWS lost the bad fields: %+v", back)
	}
}

func TestFromAWSBadBase64ParsesBack(t *testing.T) {
	ke := &events.KafkaEvent{
		EventSource: "aws:kafka",
		Records:     map[string][]events.KafkaRecord{"t-0": {{Topic: "t", Offset: 2, Key: "a2V5", Value: "not base64!"}}},
	}
	e := mustFromAWS(t, ke)
	data, _ := e.MarshalJSON()
	p, err := kafkaevent.Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, data)
	}
	r := p.Partitions[0].Records[0]
	var xe *kafkaevent.Error
	if !errors.As(r.Err, &xe) || xe.Path != `records["t-0"][0].value` {
		t.Errorf("Parse Err = %v, want an *Error at records[\"t-0\"][0].value", r.Err)
	}
	if string(r.Key) != "key" || r.Offset != 2 {
		t.Errorf("record = %+v", r)
	}
}

func TestFromAWSEnvelopeErrors(t *testing.T) {
	rec := func(r events.KafkaRecord) map[string][]events.KafkaRecord {
		return map[string][]events.KafkaRecord{"t-1": {r}}
	}
	for _, c := range []struct {
		name string
		ke   *events.KafkaEvent
		path string
	}{
		{"nil", nil, ""},
		{"source", &events.KafkaEvent{EventSource: "aws:sqs"}, "eventSource"},
		{"empty source", &events.KafkaEvent{}, "eventSource"},
		{"no topic under a key without one", &events.KafkaEvent{EventSource: "aws:kafka", Records: map[string][]events.KafkaRecord{"t": {{Partition: 1}}}}, `records["t"][0].topic`},
		{"partition out of range", &events.KafkaEvent{EventSource: "aws:kafka", Records: rec(events.KafkaRecord{Topic: "t", Partition: 1 << 31})}, `records["t-1"][0].partition`},
		{"negative partition", &events.KafkaEvent{EventSource: "aws:kafka", Records: rec(events.KafkaRecord{Topic: "t", Partition: -1})}, `records["t-1"][0].partition`},
		{"negative offset", &events.KafkaEvent{EventSource: "aws:kafka", Records: rec(events.KafkaRecord{Topic: "t", Partition: 1, Offset: -1})}, `records["t-1"][0].offset`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := kafkaevent.FromAWS(c.ke)
			var xe *kafkaevent.Error
			if e != nil || !errors.As(err, &xe) || xe.Path != c.path {
				t.Errorf("FromAWS = %v, %v; want an *Error at %q", e, err, c.path)
			}
		})
	}
}

func TestToAWS(t *testing.T) {
	e := kafkaeventtest.NewBuilder(kafkaeventtest.WithBootstrapServers("a:1", "b:2")).
		Add("orders", 3, []byte("v1"), kafkaeventtest.WithKey([]byte("k1")),
			kafkaeventtest.WithHeader("ë", []byte{0xc3, 0xab}),
			kafkaeventtest.WithHeader("dup", []byte{0x80}),
			kafkaeventtest.WithHeader("dup", nil),
			kafkaeventtest.WithValueSchemaMetadata("JSON", "1")).
		Add("orders", 3, nil, kafkaeventtest.WithTimestamp(time.Time{})).
		Add("orders", 3, []byte{}, kafkaeventtest.WithKey([]byte{})).
		Add("clicks", 0, []byte("c")).
		Event()
	ke := kafkaevent.ToAWS(e)
	if ke.EventSource != "aws:kafka" || ke.EventSourceARN != kafkaeventtest.DefaultMSKSourceARN || ke.BootstrapServers != "a:1,b:2" {
		t.Errorf("envelope = %+v", ke)
	}
	if len(ke.Records) != 2 || len(ke.Records["orders-3"]) != 3 || len(ke.Records["clicks-0"]) != 1 {
		t.Fatalf("records = %+v", ke.Records)
	}
	rs := ke.Records["orders-3"]
	want := events.KafkaRecord{
		Topic: "orders", Partition: 3, Offset: 0,
		Timestamp:     events.MilliSecondsEpochTime{Time: time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)},
		TimestampType: "CREATE_TIME",
		Key:           "azE=",
		Value:         "djE=",
		Headers: []map[string]events.JSONNumberBytes{
			{"ë": {0xc3, 0xab}}, {"dup": {0x80}}, {"dup": {}},
		},
	}
	if !reflect.DeepEqual(rs[0], want) {
		t.Errorf("record 0:\n got %+v\nwant %+v", rs[0], want)
	}
	if rs[1].Key != "" || rs[1].Value != "" || rs[1].Timestamp.UnixMilli() != -1 || rs[1].Headers == nil {
		t.Errorf("record 1 = %+v", rs[1])
	}
	if rs[2].Key != "" || rs[2].Value != "" {
		t.Errorf("record 2 = %+v", rs[2])
	}

	// What aws-lambda-go writes reads back with Parse and FromAWS, minus its losses.
	data, err := json.Marshal(ke)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"headers":[{"ë":[-61,-85]},{"dup":[-128]},{"dup":[]}]`) ||
		!strings.Contains(string(data), `"timestamp":-1`) || strings.Contains(string(data), `"headers":null`) {
		t.Errorf("aws-lambda-go JSON = %s", data)
	}
	var ke2 events.KafkaEvent
	if err := json.Unmarshal(data, &ke2); err != nil {
		t.Fatal(err)
	}
	if got, want := mustFromAWS(t, &ke2), awsLossy(e); !reflect.DeepEqual(got, want) {
		t.Errorf("FromAWS(ToAWS(e)) after JSON:\n got %+v\nwant %+v", got, want)
	}
	if got, want := mustFromAWS(t, ke), awsLossy(e); !reflect.DeepEqual(got, want) {
		t.Errorf("FromAWS(ToAWS(e)):\n got %+v\nwant %+v", got, want)
	}

	if kafkaevent.ToAWS(nil) != nil {
		t.Error("ToAWS(nil) != nil")
	}
	if ke := kafkaevent.ToAWS(&kafkaevent.Event{Source: kafkaevent.SourceMSK}); ke.Records == nil {
		t.Error("ToAWS of an empty event has nil Records")
	}
}

func TestToAWSParsesBack(t *testing.T) {
	e := kafkaeventtest.NewBuilder().
		Add("orders", 3, []byte("v1"), kafkaeventtest.WithKey([]byte("k1")), kafkaeventtest.WithHeader("h", []byte{0xff})).
		Add("orders", 3, nil).
		Event()
	data, err := json.Marshal(kafkaevent.ToAWS(e))
	if err != nil {
		t.Fatal(err)
	}
	got, err := kafkaevent.Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, data)
	}
	if want := awsLossy(e); !reflect.DeepEqual(got, want) {
		t.Errorf("Parse(json(ToAWS(e))):\n got %+v\nwant %+v", got, want)
	}
}

func FuzzFromAWS(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"eventSource":"aws:kafka","records":{"t-0":[{"topic":"t","offset":1,"key":"!","value":"dg==\r\n","headers":[{"a":[1],"b":null}]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ke events.KafkaEvent
		if json.Unmarshal(data, &ke) != nil {
			return
		}
		e, err := kafkaevent.FromAWS(&ke)
		if err != nil {
			var xe *kafkaevent.Error
			if !errors.As(err, &xe) {
				t.Fatalf("FromAWS error is not an *Error: %v", err)
			}
			oneLine(t, err)
			return
		}
		// Where Parse reads the same payload, it groups the records under the same keys.
		if pe, err := kafkaevent.Parse(data); err == nil && !slices.Equal(ids(pe), ids(e)) {
			t.Fatalf("partition IDs: FromAWS %q, Parse %q", ids(e), ids(pe))
		}
		out, err := e.MarshalJSON()
		if err != nil || !json.Valid(out) {
			t.Fatalf("MarshalJSON = %s, %v", out, err)
		}
		if kafkaevent.ToAWS(e) == nil {
			t.Fatal("ToAWS returned nil")
		}
	})
}

func ids(e *kafkaevent.Event) []string {
	var s []string
	for i := range e.Partitions {
		s = append(s, e.Partitions[i].ID())
	}
	return s
}
