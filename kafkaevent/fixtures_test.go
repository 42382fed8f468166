package kafkaevent_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// fixtureDir holds the fixture events, also meant for `sam local invoke -e`.
const fixtureDir = "../testdata/events"

const (
	fixtureARN = "arn:aws:kafka:us-east-1:123456789012:cluster/demo-cluster/6f0c7d8e-1a2b-4c3d-9e8f-0a1b2c3d4e5f-2"
	fixtureT0  = 1768471200000 // 2026-01-15T10:00:00Z, the first record's timestamp
	glueValue  = "6a3f8e2c-9b1d-4c7e-8f5a-2d4b6c8e0a1f"
	glueKey    = "0e9d7c5b-3a1f-4e2d-b8c6-a4f2e0d8b6c4"
)

// fixtureChecks holds, for every file in fixtureDir, the facts that file exists to show.
var fixtureChecks = map[string]func(t *testing.T, e *kafkaevent.Event){
	"msk.json": func(t *testing.T, e *kafkaevent.Event) {
		wantEnvelope(t, e, kafkaevent.SourceMSK, fixtureARN, 3)
		wantPartitions(t, e, "orders-0")
		rs := e.Partitions[0].Records
		wantOffsets(t, &e.Partitions[0], 15, 16, 17)
		wantKeys(t, rs, "order-1001", "order-1002", "order-1003")
		var order struct {
			OrderID  int     `json:"orderId"`
			Total    float64 `json:"total"`
			Currency string  `json:"currency"`
		}
		if err := json.Unmarshal(rs[2].Value, &order); err != nil || order.OrderID != 1003 || order.Total != 230 || order.Currency != "USD" {
			t.Errorf("record 2 value = %s (%v)", rs[2].Value, err)
		}
		for i, ms := range []int64{0, 7, 19} {
			if want := time.UnixMilli(fixtureT0 + ms).UTC(); rs[i].Timestamp != want {
				t.Errorf("record %d timestamp = %v, want %v", i, rs[i].Timestamp, want)
			}
			if rs[i].TimestampType != kafkaevent.CreateTime {
				t.Errorf("record %d timestampType = %q", i, rs[i].TimestampType)
			}
			if v, ok := rs[i].Header("content-type"); !ok || string(v) != "application/json" {
				t.Errorf("record %d content-type = %q, %v", i, v, ok)
			}
		}
		if len(rs[0].Headers) != 1 || len(rs[2].Headers) != 2 {
			t.Errorf("header counts = %d, %d; want 1, 2", len(rs[0].Headers), len(rs[2].Headers))
		}
		if v, _ := rs[2].Header("source"); string(v) != "checkout-service" {
			t.Errorf("record 2 source header = %q", v)
		}
	},
	"self-managed.json": func(t *testing.T, e *kafkaevent.Event) {
		wantEnvelope(t, e, kafkaevent.SourceSelfManaged, "", 2)
		wantPartitions(t, e, "payments-2")
		wantOffsets(t, &e.Partitions[0], 4711, 4712)
		for i, r := range e.Partitions[0].Records {
			if r.TimestampType != kafkaevent.LogAppendTime || len(r.Headers) != 0 || r.Partition != 2 {
				t.Errorf("record %d = %+v", i, r)
			}
		}
		if e.BootstrapServers[1] != "kafka-2.example.internal:9092" {
			t.Errorf("BootstrapServers = %q", e.BootstrapServers)
		}
	},
	"multi-partition.json": func(t *testing.T, e *kafkaevent.Event) {
		wantEnvelope(t, e, kafkaevent.SourceMSK, fixtureARN, 3)
		// The payload lists orders-3, clicks-1, clicks-0: Parse sorts them.
		wantPartitions(t, e, "clicks-0", "clicks-1", "orders-3")
		if e.Len() != 6 {
			t.Errorf("Len = %d, want 6", e.Len())
		}
		wantOffsets(t, &e.Partitions[0], 88, 89)
		wantOffsets(t, &e.Partitions[1], 200, 201, 205) // a gap, as filtering leaves
		wantOffsets(t, &e.Partitions[2], 9007199254740993)
		var n int
		for r := range e.All() {
			if r.PartitionID() != r.Topic+"-"+strconv.Itoa(int(r.Partition)) {
				t.Errorf("record ID %q for %s/%d", r.PartitionID(), r.Topic, r.Partition)
			}
			n++
		}
		if n != 6 {
			t.Errorf("All yielded %d records", n)
		}
	},
	"tombstones.json": func(t *testing.T, e *kafkaevent.Event) {
		wantPartitions(t, e, "users-0")
		rs := e.Partitions[0].Records
		if len(rs) != 4 {
			t.Fatalf("%d records, want 4", len(rs))
		}
		for i, want := range []bool{true, true, false, false} {
			if rs[i].IsTombstone() != want {
				t.Errorf("record %d (offset %d) IsTombstone = %v, want %v", i, rs[i].Offset, rs[i].IsTombstone(), want)
			}
		}
		if rs[2].Value == nil || len(rs[2].Value) != 0 {
			t.Errorf(`record 2 value = %#v, want empty and non-nil ("")`, rs[2].Value)
		}
		if !bytes.Contains(rs[3].Value, []byte("Zoë")) {
			t.Errorf("record 3 value = %q", rs[3].Value)
		}
		wantKeys(t, rs, "user-1", "user-2", "user-3", "user-4")
	},
	"keys.json": func(t *testing.T, e *kafkaevent.Event) {
		wantEnvelope(t, e, kafkaevent.SourceSelfManaged, "", 2)
		rs := e.Partitions[0].Records
		if len(rs) != 5 {
			t.Fatalf("%d records, want 5", len(rs))
		}
		if rs[0].Key != nil || rs[1].Key != nil {
			t.Errorf("null and absent keys = %#v, %#v; want nil", rs[0].Key, rs[1].Key)
		}
		if rs[2].Key == nil || len(rs[2].Key) != 0 {
			t.Errorf(`key "" = %#v, want empty and non-nil`, rs[2].Key)
		}
		if string(rs[3].Key) != "key" || !bytes.Equal(rs[4].Key, []byte{0x00, 0xff, 0xfe, 0x80}) {
			t.Errorf("keys 3, 4 = %q, %x", rs[3].Key, rs[4].Key)
		}
		for i, r := range rs {
			if r.IsTombstone() || !json.Valid(r.Value) {
				t.Errorf("record %d value = %q", i, r.Value)
			}
		}
	},
	"headers.json": func(t *testing.T, e *kafkaevent.Event) {
		rs := e.Partitions[0].Records
		if len(rs) != 4 {
			t.Fatalf("%d records, want 4", len(rs))
		}
		want := []kafkaevent.Header{
			{Key: "greeting", Value: []byte("ë")}, // sent as [-61, -85]
			{Key: "trace-id", Value: []byte("4bf92f3577b34da6")},
			{Key: "trace-id", Value: []byte("00f067aa0ba902b7")},
			{Key: "nullable", Value: nil},
			{Key: "empty", Value: []byte{}},
			{Key: "binary", Value: []byte{0, 127, 128, 255}},
		}
		if !reflect.DeepEqual(rs[0].Headers, want) {
			t.Errorf("headers =\n%#v\nwant\n%#v", rs[0].Headers, want)
		}
		if v, ok := rs[0].Header("trace-id"); !ok || string(v) != "4bf92f3577b34da6" {
			t.Errorf("Header(trace-id) = %q, %v; want the first one", v, ok)
		}
		if vs := rs[0].HeaderValues("trace-id"); len(vs) != 2 || string(vs[1]) != "00f067aa0ba902b7" {
			t.Errorf("HeaderValues(trace-id) = %q", vs)
		}
		if v, ok := rs[0].Header("nullable"); !ok || v != nil {
			t.Errorf("Header(nullable) = %#v, %v; want nil, true", v, ok)
		}
		// headers [], null and absent.
		for i := 1; i < 4; i++ {
			if len(rs[i].Headers) != 0 || rs[i].Err != nil {
				t.Errorf("record %d headers = %v, err %v", i, rs[i].Headers, rs[i].Err)
			}
		}
	},
	"topics.json": func(t *testing.T, e *kafkaevent.Event) {
		// Sorted by topic, then partition number (10 after 2, not before as strings sort).
		wantPartitions(t, e, "orders.v1-eu-3", "orders.v1-eu-west-0", "orders.v1-eu-west-2", "orders.v1-eu-west-10")
		for _, want := range []struct {
			topic string
			n     int32
		}{{"orders.v1-eu", 3}, {"orders.v1-eu-west", 0}, {"orders.v1-eu-west", 2}, {"orders.v1-eu-west", 10}} {
			i := slices.IndexFunc(e.Partitions, func(p kafkaevent.Partition) bool { return p.Topic == want.topic && p.Number == want.n })
			if i < 0 {
				t.Errorf("no partition %s/%d", want.topic, want.n)
				continue
			}
			for _, r := range e.Partitions[i].Records {
				if r.Topic != want.topic || r.Partition != want.n {
					t.Errorf("record in %s/%d says %s/%d", want.topic, want.n, r.Topic, r.Partition)
				}
			}
		}
		wantOffsets(t, &e.Partitions[1], 3, 4)
	},
	"schema-json.json": func(t *testing.T, e *kafkaevent.Event) {
		rs := e.Partitions[0].Records
		if len(rs) != 3 {
			t.Fatalf("%d records, want 3", len(rs))
		}
		wantSchema(t, "record 0 key", rs[0].KeySchema, "JSON", "1")
		wantSchema(t, "record 0 value", rs[0].ValueSchema, "JSON", "2")
		wantSchema(t, "record 1 key", rs[1].KeySchema, "", "")
		wantSchema(t, "record 1 value", rs[1].ValueSchema, "JSON", glueValue)
		wantSchema(t, "record 2 key", rs[2].KeySchema, "JSON", glueKey)
		wantSchema(t, "record 2 value", rs[2].ValueSchema, "", "")
		if len(rs[1].ValueSchema.SchemaID) != 36 {
			t.Errorf("Glue schema id %q is not 36 characters", rs[1].ValueSchema.SchemaID)
		}
		if rs[1].Key != nil || !rs[2].IsTombstone() {
			t.Errorf("record 1 key %q, record 2 tombstone %v", rs[1].Key, rs[2].IsTombstone())
		}
		for i, b := range [][]byte{rs[0].Key, rs[0].Value, rs[1].Value, rs[2].Key} {
			if !json.Valid(b) {
				t.Errorf("JSON-mode payload %d is not JSON: %q", i, b)
			}
		}
	},
	"schema-source-avro.json": func(t *testing.T, e *kafkaevent.Event) {
		wantPartitions(t, e, "orders-avro-1")
		rs := e.Partitions[0].Records
		if len(rs) != 2 {
			t.Fatalf("%d records, want 2", len(rs))
		}
		wantSchema(t, "record 0 value", rs[0].ValueSchema, "AVRO", glueValue)
		wantSchema(t, "record 1 value", rs[1].ValueSchema, "AVRO", "42")
		wantSchema(t, "record 0 key", rs[0].KeySchema, "", "")
		// Avro binary of Order{id: long, customer: string, amount: double, paid: boolean}.
		for i, want := range []string{"d20f08632d34323333333333f34d4001", "05085a6fc3ab000000000000e03f00"} {
			if got := hex.EncodeToString(rs[i].Value); got != want {
				t.Errorf("record %d value = %s, want %s", i, got, want)
			}
		}
		// The first field is a zigzag varint long: 1001, then -3.
		for i, want := range []int64{1001, -3} {
			if got := zigzag(rs[i].Value); got != want {
				t.Errorf("record %d Avro id = %d, want %d", i, got, want)
			}
		}
	},
}

func TestFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(fixtureDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		name := filepath.Base(f)
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(string(readme), name) {
				t.Errorf("%s is not described in README.md", name)
			}
			check, ok := fixtureChecks[name]
			if !ok {
				t.Fatalf("no checks for fixture %s: add them to fixtureChecks", name)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			e, err := kafkaevent.Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			for r := range e.All() {
				if r.Err != nil {
					t.Errorf("record %s@%d: %v", r.PartitionID(), r.Offset, r.Err)
				}
			}
			check(t, e)
		})
	}
	for name := range fixtureChecks {
		if !seen[name] {
			t.Errorf("fixture %s is missing from %s", name, fixtureDir)
		}
	}
}

func wantEnvelope(t *testing.T, e *kafkaevent.Event, src kafkaevent.Source, arn string, servers int) {
	t.Helper()
	if e.Source != src || e.SourceARN != arn || len(e.BootstrapServers) != servers {
		t.Errorf("envelope = %q, %q, %d servers; want %q, %q, %d", e.Source, e.SourceARN, len(e.BootstrapServers), src, arn, servers)
	}
	for _, s := range e.BootstrapServers {
		if !strings.Contains(s, ":") || strings.Contains(s, ",") {
			t.Errorf("bootstrap server %q is not host:port", s)
		}
	}
}

func wantPartitions(t *testing.T, e *kafkaevent.Event, want ...string) {
	t.Helper()
	if got := ids(e); !slices.Equal(got, want) {
		t.Fatalf("partitions = %q, want %q", got, want)
	}
}

func wantOffsets(t *testing.T, p *kafkaevent.Partition, want ...int64) {
	t.Helper()
	if got := offsets(p); !slices.Equal(got, want) {
		t.Errorf("%s offsets = %v, want %v", p.ID(), got, want)
	}
}

func wantKeys(t *testing.T, rs []kafkaevent.Record, want ...string) {
	t.Helper()
	var got []string
	for _, r := range rs {
		got = append(got, string(r.Key))
	}
	if !slices.Equal(got, want) {
		t.Errorf("keys = %q, want %q", got, want)
	}
}

// wantSchema checks m; format "" means m must be nil.
func wantSchema(t *testing.T, what string, m *kafkaevent.SchemaMetadata, format, id string) {
	t.Helper()
	switch {
	case format == "" && m != nil:
		t.Errorf("%s schema = %+v, want none", what, *m)
	case format != "" && m == nil:
		t.Errorf("%s schema missing, want %s %s", what, format, id)
	case format != "" && (m.DataFormat != format || m.SchemaID != id):
		t.Errorf("%s schema = %+v, want %s %s", what, *m, format, id)
	}
}

// zigzag decodes the Avro long at the start of b.
func zigzag(b []byte) int64 {
	var u uint64
	for i, c := range b {
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			break
		}
	}
	return int64(u>>1) ^ -int64(u&1)
}

func offsets(p *kafkaevent.Partition) []int64 {
	var s []int64
	for _, r := range p.Records {
		s = append(s, r.Offset)
	}
	return s
}
