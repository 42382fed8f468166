package kafkaeventtest_test

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

func ids(e *kafkaevent.Event) []string {
	var s []string
	for i := range e.Partitions {
		s = append(s, e.Partitions[i].ID())
	}
	return s
}

func offsets(p *kafkaevent.Partition) []int64 {
	var s []int64
	for _, r := range p.Records {
		s = append(s, r.Offset)
	}
	return s
}

func TestBuilderDefaults(t *testing.T) {
	e := kafkaeventtest.NewBuilder().Add("orders", 0, []byte("v")).Event()
	if e.Source != kafkaevent.SourceMSK {
		t.Errorf("Source = %q, want %q", e.Source, kafkaevent.SourceMSK)
	}
	if e.SourceARN != kafkaeventtest.DefaultMSKSourceARN {
		t.Errorf("SourceARN = %q, want the default MSK ARN", e.SourceARN)
	}
	if len(e.BootstrapServers) == 0 {
		t.Error("BootstrapServers empty, want default brokers")
	}
	r := e.Partitions[0].Records[0]
	want := time.Date(2026, time.January, 15, 10, 0, 0, 0, time.UTC)
	if !r.Timestamp.Equal(want) || r.Timestamp.Location() != time.UTC {
		t.Errorf("Timestamp = %v, want %v UTC", r.Timestamp, want)
	}
	if r.TimestampType != kafkaevent.CreateTime {
		t.Errorf("TimestampType = %q, want CREATE_TIME", r.TimestampType)
	}
	if r.Key != nil || r.Headers != nil || r.KeySchema != nil || r.ValueSchema != nil || r.Err != nil {
		t.Errorf("record has unexpected fields set: %+v", r)
	}
	if r.Topic != "orders" || r.Partition != 0 || r.Offset != 0 {
		t.Errorf("record = %s/%d@%d, want orders/0@0", r.Topic, r.Partition, r.Offset)
	}
}

func TestBuilderSelfManaged(t *testing.T) {
	e := kafkaeventtest.NewBuilder(kafkaeventtest.WithEventSource(kafkaevent.SourceSelfManaged)).Event()
	if e.Source != kafkaevent.SourceSelfManaged || e.SourceARN != "" {
		t.Errorf("Source, SourceARN = %q, %q; want SelfManagedKafka and no ARN", e.Source, e.SourceARN)
	}
	if len(e.BootstrapServers) == 0 {
		t.Error("BootstrapServers empty, want default brokers")
	}
	if e.Partitions != nil || e.Len() != 0 {
		t.Errorf("Partitions = %v, want none", e.Partitions)
	}

	e = kafkaeventtest.NewBuilder(
		kafkaeventtest.WithEventSource(kafkaevent.SourceSelfManaged),
		kafkaeventtest.WithEventSourceARN("arn:x"),
		kafkaeventtest.WithBootstrapServers("a:1", "b:2"),
	).Event()
	if e.SourceARN != "arn:x" || !slices.Equal(e.BootstrapServers, []string{"a:1", "b:2"}) {
		t.Errorf("got ARN %q servers %q", e.SourceARN, e.BootstrapServers)
	}

	e = kafkaeventtest.NewBuilder(kafkaeventtest.WithEventSourceARN(""), kafkaeventtest.WithBootstrapServers()).Event()
	if e.SourceARN != "" || e.BootstrapServers != nil {
		t.Errorf("got ARN %q servers %#v, want both unset", e.SourceARN, e.BootstrapServers)
	}
}

func TestBuilderOffsets(t *testing.T) {
	e := kafkaeventtest.NewBuilder().
		Add("t", 0, []byte("a")).
		Add("t", 1, []byte("b")).
		Add("t", 0, []byte("c")).
		Add("t", 0, []byte("d"), kafkaeventtest.WithOffset(100)).
		Add("t", 0, []byte("e")).
		Add("t", 1, []byte("f"), kafkaeventtest.WithOffset(7)).
		Add("t", 1, []byte("g")).
		Add("t", 0, []byte("h"), kafkaeventtest.WithOffset(3)). // offsets may go down; order is kept
		Add("t", 0, []byte("i")).
		Event()
	if got, want := offsets(&e.Partitions[0]), []int64{0, 1, 100, 101, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("t-0 offsets = %v, want %v", got, want)
	}
	if got, want := offsets(&e.Partitions[1]), []int64{0, 7, 8}; !slices.Equal(got, want) {
		t.Errorf("t-1 offsets = %v, want %v", got, want)
	}
	var vals []string
	for _, r := range e.Partitions[0].Records {
		vals = append(vals, string(r.Value))
	}
	if want := []string{"a", "c", "d", "e", "h", "i"}; !slices.Equal(vals, want) {
		t.Errorf("t-0 values = %v, want %v", vals, want)
	}
}

func TestBuilderSorting(t *testing.T) {
	e := kafkaeventtest.NewBuilder().
		Add("orders", 10, []byte("1")).
		Add("orders", 2, []byte("2")).
		Add("clicks", 1, []byte("3")).
		Add("orders.v1-eu", 0, []byte("4")).
		Add("orders", 2, []byte("5")).
		Add("clicks", 0, []byte("6")).
		Event()
	want := []string{"clicks-0", "clicks-1", "orders-2", "orders-10", "orders.v1-eu-0"}
	if got := ids(e); !slices.Equal(got, want) {
		t.Errorf("partitions = %v, want %v", got, want)
	}
	if e.Len() != 6 {
		t.Errorf("Len = %d, want 6", e.Len())
	}
	if got := e.Partitions[2].Records; len(got) != 2 || string(got[0].Value) != "2" || string(got[1].Value) != "5" {
		t.Errorf("orders-2 records = %+v", got)
	}
}

func TestBuilderTimestamps(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 30, 0, 123456789, time.FixedZone("CET", 3600))
	explicit := time.Date(2024, 1, 2, 3, 4, 5, 999999999, time.FixedZone("X", -7200))
	e := kafkaeventtest.NewBuilder(kafkaeventtest.WithStartTime(start)).
		Add("a", 0, nil).
		Add("b", 0, nil, kafkaeventtest.WithTimestamp(explicit), kafkaeventtest.WithTimestampType(kafkaevent.LogAppendTime)).
		Add("a", 0, nil).
		Add("a", 0, nil, kafkaeventtest.WithTimestamp(time.Time{})).
		Event()
	base := time.UnixMilli(start.UnixMilli()).UTC()
	a := e.Partitions[0].Records
	for i, want := range []time.Time{base, base.Add(2 * time.Millisecond), {}} {
		if a[i].Timestamp != want {
			t.Errorf("a[%d].Timestamp = %v, want %v", i, a[i].Timestamp, want)
		}
	}
	b := e.Partitions[1].Records[0]
	if want := time.UnixMilli(explicit.UnixMilli()).UTC(); b.Timestamp != want {
		t.Errorf("b.Timestamp = %v, want %v", b.Timestamp, want)
	}
	if b.TimestampType != kafkaevent.LogAppendTime {
		t.Errorf("b.TimestampType = %q", b.TimestampType)
	}

	e = kafkaeventtest.NewBuilder(kafkaeventtest.WithStartTime(time.Time{})).Add("a", 0, nil).Add("a", 0, nil).Event()
	for _, r := range e.Partitions[0].Records {
		if !r.Timestamp.IsZero() {
			t.Errorf("Timestamp = %v, want zero with a zero start time", r.Timestamp)
		}
	}
}

func TestBuilderRecordFields(t *testing.T) {
	e := kafkaeventtest.NewBuilder().
		Add("t", 0, nil, kafkaeventtest.WithKey([]byte("k"))).
		Add("t", 0, []byte{}, kafkaeventtest.WithKey([]byte{})).
		Add("t", 0, []byte("v"),
			kafkaeventtest.WithHeader("trace", []byte("1")),
			kafkaeventtest.WithHeader("ë", []byte{0xc3, 0xab}),
			kafkaeventtest.WithHeader("trace", []byte("2")),
			kafkaeventtest.WithHeader("null", nil),
			kafkaeventtest.WithHeader("empty", []byte{}),
			kafkaeventtest.WithKeySchemaMetadata("AVRO", "1"),
			kafkaeventtest.WithValueSchemaMetadata("PROTOBUF", "12345678-1234-1234-1234-123456789012"),
		).
		Event()
	rs := e.Partitions[0].Records
	if !rs[0].IsTombstone() || string(rs[0].Key) != "k" {
		t.Errorf("record 0: tombstone %v key %q", rs[0].IsTombstone(), rs[0].Key)
	}
	if rs[1].IsTombstone() || rs[1].Value == nil || len(rs[1].Value) != 0 || rs[1].Key == nil || len(rs[1].Key) != 0 {
		t.Errorf("record 1: want empty non-nil key and value, got %#v %#v", rs[1].Key, rs[1].Value)
	}
	want := []kafkaevent.Header{
		{Key: "trace", Value: []byte("1")},
		{Key: "ë", Value: []byte{0xc3, 0xab}},
		{Key: "trace", Value: []byte("2")},
		{Key: "null", Value: nil},
		{Key: "empty", Value: []byte{}},
	}
	if !reflect.DeepEqual(rs[2].Headers, want) {
		t.Errorf("headers = %#v, want %#v", rs[2].Headers, want)
	}
	if got := rs[2].HeaderValues("trace"); len(got) != 2 || string(got[0]) != "1" || string(got[1]) != "2" {
		t.Errorf("HeaderValues(trace) = %q", got)
	}
	if *rs[2].KeySchema != (kafkaevent.SchemaMetadata{DataFormat: "AVRO", SchemaID: "1"}) {
		t.Errorf("KeySchema = %+v", *rs[2].KeySchema)
	}
	if *rs[2].ValueSchema != (kafkaevent.SchemaMetadata{DataFormat: "PROTOBUF", SchemaID: "12345678-1234-1234-1234-123456789012"}) {
		t.Errorf("ValueSchema = %+v", *rs[2].ValueSchema)
	}
	if rs[0].KeySchema != nil || rs[0].ValueSchema != nil {
		t.Error("record 0 has schema metadata")
	}
}

func TestBuilderCopies(t *testing.T) {
	val := []byte("value")
	key := []byte("key")
	hv := []byte("hv")
	b := kafkaeventtest.NewBuilder().Add("t", 0, val, kafkaeventtest.WithKey(key), kafkaeventtest.WithHeader("h", hv), kafkaeventtest.WithValueSchemaMetadata("JSON", "1"))
	val[0], key[0], hv[0] = 'X', 'X', 'X' // the builder copied them

	e1 := b.Event()
	r := &e1.Partitions[0].Records[0]
	if string(r.Value) != "value" || string(r.Key) != "key" || string(r.Headers[0].Value) != "hv" {
		t.Fatalf("builder kept the caller's slices: %q %q %q", r.Value, r.Key, r.Headers[0].Value)
	}
	// Changing an event changes neither the builder nor later events.
	r.Value[0], r.Key[0], r.Headers[0].Value[0] = 'Y', 'Y', 'Y'
	r.Headers[0].Key = "changed"
	r.ValueSchema.SchemaID = "changed"
	e1.Partitions[0].Records = append(e1.Partitions[0].Records, kafkaevent.Record{})
	e1.BootstrapServers[0] = "changed"

	e2 := b.Add("t", 0, []byte("second")).Event()
	r = &e2.Partitions[0].Records[0]
	if string(r.Value) != "value" || string(r.Key) != "key" || r.Headers[0].Key != "h" || string(r.Headers[0].Value) != "hv" ||
		r.ValueSchema.SchemaID != "1" || e2.BootstrapServers[0] == "changed" {
		t.Errorf("builder state changed through an event: %+v", r)
	}
	if got := offsets(&e2.Partitions[0]); !slices.Equal(got, []int64{0, 1}) {
		t.Errorf("offsets after reuse = %v, want [0 1]", got)
	}
	if !bytes.Equal(e2.Partitions[0].Records[1].Value, []byte("second")) {
		t.Error("second record missing")
	}
}

func TestBuilderNilOptions(t *testing.T) {
	e := kafkaeventtest.NewBuilder(nil).Add("t", 0, nil, nil).Event()
	if e.Len() != 1 {
		t.Errorf("Len = %d, want 1", e.Len())
	}
}
