package codec_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/codec/internal/testpb"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

const avroOrderSchema = `{
  "type": "record", "name": "Order", "namespace": "com.example",
  "fields": [
    {"name": "id", "type": "string"},
    {"name": "amount_cents", "type": "long"},
    {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item",
      "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
    {"name": "note", "type": ["null", "string"], "default": null}
  ]
}`

type avroItem struct {
	SKU string `avro:"sku"`
	Qty int32  `avro:"qty"`
}

type avroOrder struct {
	ID     string     `avro:"id"`
	Amount int64      `avro:"amount_cents"`
	Items  []avroItem `avro:"items"`
	Note   *string    `avro:"note"`
}

type jsonOrder struct {
	ID     string            `json:"id"`
	Amount int64             `json:"amount_cents"`
	Tags   map[string]string `json:"tags"`
}

const glueID = "b7b4a7f0-9c1e-4a59-a9a5-0123456789ab"

var ctx = context.Background()

// record makes the kafkaevent.Record a consumer would get for r.
func record(key, value []byte) *kafkaevent.Record {
	return &kafkaevent.Record{Topic: "orders", Partition: 3, Offset: 42, Key: key, Value: value}
}

var wires = []struct {
	name     string
	wire     codec.Wire
	id       string
	compress bool
}{
	{"none", codec.WireNone, "", false},
	{"confluent", codec.WireConfluent, "17", false},
	{"glue", codec.WireGlue, glueID, false},
	{"glue-zlib", codec.WireGlue, glueID, true},
}

// roundTrip serializes key and value framed as w, and decodes them back.
func roundTrip[K, V any](t *testing.T, kc codec.Codec[K], vc codec.Codec[V], key K, value V, w codec.Wire, id string, compress bool, indexes ...int) (K, V, []byte) {
	t.Helper()
	sopts := []codec.SerializerOption{codec.WithKeySchema(w, id, indexes...), codec.WithValueSchema(w, id, indexes...)}
	if compress {
		sopts = append(sopts, codec.WithCompression())
	}
	kr, err := mustSerializer(t, kc, vc, sopts...).Record(ctx, "orders", key, value)
	if err != nil {
		t.Fatalf("Serializer.Record: %v", err)
	}
	if kr.Topic != "orders" {
		t.Fatalf("topic %q", kr.Topic)
	}
	switch {
	case w == codec.WireConfluent && kr.Value[0] != 0:
		t.Fatalf("Confluent value starts with %#x", kr.Value[0])
	case w == codec.WireGlue && (kr.Value[0] != 3 || (kr.Value[1] == 5) != compress):
		t.Fatalf("Glue value starts with % x (compress %v)", kr.Value[:2], compress)
	}
	d := mustDeserializer(t, kc, vc, codec.WithWire(w))
	r := d.Record(record(kr.Key, kr.Value))
	k, err := r.Key(ctx)
	if err != nil {
		t.Fatalf("Key: %v", err)
	}
	v, err := r.Value(ctx)
	if err != nil {
		t.Fatalf("Value: %v", err)
	}
	return k, v, kr.Value
}

func TestRoundTrip(t *testing.T) {
	note := "ring twice ✓"
	ao := avroOrder{ID: "ord-1", Amount: 1299, Items: []avroItem{{"A-1", 2}, {"B-2", 1}}, Note: &note}
	jo := jsonOrder{ID: "ord-1", Amount: 1299, Tags: map[string]string{"é": "\u2028"}}
	po := &testpb.Order{Id: "ord-1", AmountCents: 1299, Items: []*testpb.Order_Item{{Sku: "A-1", Qty: 2}}, Tags: map[string]string{"k": "v"}, Paid: true}
	geo := &testpb.Customer_Address_Geo{Lat: 48.85, Lon: 2.35}
	late := &testpb.Late{Note: "past one byte", N: -7}
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Run("json", func(t *testing.T) {
				k, v, _ := roundTrip(t, codec.String(), codec.JSON[jsonOrder](), "k-1", jo, w.wire, w.id, w.compress)
				if k != "k-1" || !reflect.DeepEqual(v, jo) {
					t.Fatalf("got %q %+v", k, v)
				}
			})
			t.Run("avro", func(t *testing.T) {
				c := mustAvro[avroOrder](t, codec.AvroSchema(avroOrderSchema))
				_, v, _ := roundTrip(t, codec.Bytes(), c, []byte{0, 1, 2}, ao, w.wire, w.id, w.compress)
				if !reflect.DeepEqual(v, ao) {
					t.Fatalf("got %+v", v)
				}
			})
			t.Run("avro-map", func(t *testing.T) {
				c := mustAvro[map[string]any](t, codec.AvroSchema(avroOrderSchema))
				in := map[string]any{"id": "x", "amount_cents": int64(5), "items": []any{}, "note": nil}
				_, v, _ := roundTrip(t, codec.String(), c, "k", in, w.wire, w.id, w.compress)
				if v["id"] != "x" || v["amount_cents"] != int64(5) || v["note"] != nil {
					t.Fatalf("got %#v", v)
				}
			})
			t.Run("protobuf", func(t *testing.T) {
				for _, m := range []proto.Message{po, geo, late} {
					got := protoRoundTrip(t, m, w.wire, w.id, w.compress)
					if !proto.Equal(got, m) {
						t.Fatalf("got %v, want %v", got, m)
					}
				}
			})
			t.Run("raw", func(t *testing.T) {
				k, v, _ := roundTrip(t, codec.String(), codec.Bytes(), "ключ", []byte{0xff, 0, 3}, w.wire, w.id, w.compress)
				if k != "ключ" || string(v) != "\xff\x00\x03" {
					t.Fatalf("got %q %q", k, v)
				}
			})
		})
	}
}

// protoRoundTrip round-trips m through the typed codec of its own type, and checks the
// message indexes written on the wire against those of the descriptor.
func protoRoundTrip(t *testing.T, m proto.Message, w codec.Wire, id string, compress bool) proto.Message {
	t.Helper()
	switch m := m.(type) {
	case *testpb.Order:
		_, v, framed := roundTrip(t, codec.String(), codec.Protobuf[*testpb.Order](), "k", m, w, id, compress)
		checkIndexes(t, framed, w, []int{0}, 4) // after Customer, its two nested messages and Late
		return v
	case *testpb.Customer_Address_Geo:
		_, v, framed := roundTrip(t, codec.String(), codec.Protobuf[*testpb.Customer_Address_Geo](), "k", m, w, id, compress)
		// Geo is Customer(1).Address(0).Geo(0); Glue sorts every message by full name:
		// Customer, Customer.Address, Customer.Address.Geo, ...
		checkIndexes(t, framed, w, []int{1, 0, 0}, 2)
		return v
	case *testpb.Late:
		_, v, framed := roundTrip(t, codec.String(), codec.Protobuf[*testpb.Late](), "k", m, w, id, compress)
		checkIndexes(t, framed, w, []int{66}, 3) // Late sorts before Order and the Pads
		return v
	}
	t.Fatalf("no case for %T", m)
	return nil
}

func checkIndexes(t *testing.T, framed []byte, w codec.Wire, confluent []int, glue int) {
	t.Helper()
	switch w {
	case codec.WireConfluent:
		_, idx, _, err := codec.SplitConfluent(framed, true)
		if err != nil || !reflect.DeepEqual(idx, confluent) {
			t.Fatalf("Confluent indexes %v (%v), want %v", idx, err, confluent)
		}
	case codec.WireGlue:
		_, p, err := codec.SplitGlue(framed, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		i, _, err := codec.SplitGlueMessageIndex(p)
		if err != nil || i != glue {
			t.Fatalf("Glue index %d (%v), want %d", i, err, glue)
		}
	}
}

// TestProtobufDynamic decodes with a descriptor known at run time what the generated type
// wrote, behind Confluent framing with indexes past one byte.
func TestProtobufDynamic(t *testing.T) {
	late := &testpb.Late{Note: "dyn", N: 1 << 40}
	kr, err := mustSerializer(t, codec.String(), codec.Protobuf[*testpb.Late](), codec.WithValueSchema(codec.WireConfluent, "9")).Record(ctx, "t", "k", late)
	if err != nil {
		t.Fatal(err)
	}
	d := mustDeserializer(t, codec.String(), codec.ProtobufDynamic(late.ProtoReflect().Descriptor()), codec.WithValueWire(codec.WireConfluent))
	v, err := d.Record(record(kr.Key, kr.Value)).Value(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var _ *dynamicpb.Message = v
	if !proto.Equal(v, late) {
		got := &testpb.Late{}
		b, _ := proto.Marshal(v)
		_ = proto.Unmarshal(b, got)
		if !proto.Equal(got, late) {
			t.Fatalf("got %v", v)
		}
	}
}

// metaRecord is a record as the event source mapping delivers it with a schema registry.
func metaRecord(value []byte, format, id string) *kafkaevent.Record {
	r := record([]byte("k"), value)
	r.ValueSchema = &kafkaevent.SchemaMetadata{DataFormat: format, SchemaID: id}
	return r
}

// TestSchemaMetadata: the mapping's SOURCE mode (header gone, Protobuf indexes kept, Confluent
// list or Glue varint by the schema ID) and JSON mode decide over the configured wire format.
func TestSchemaMetadata(t *testing.T) {
	geo := &testpb.Customer_Address_Geo{Lat: 1, Lon: 2}
	body, _ := proto.Marshal(geo)
	confluentSource, _ := codec.AppendMessageIndexes(nil, []int{1, 0, 0})
	confluentSource = append(confluentSource, body...)
	glueSource, _ := codec.AppendGlueMessageIndex(nil, 2)
	glueSource = append(glueSource, body...)

	// WithWire(Confluent) is ignored: the metadata says the header is gone.
	pd := mustDeserializer(t, codec.String(), codec.Protobuf[*testpb.Customer_Address_Geo](), codec.WithWire(codec.WireConfluent))
	for name, r := range map[string]*kafkaevent.Record{
		"confluent": metaRecord(confluentSource, codec.FormatProtobuf, "17"),
		"glue":      metaRecord(glueSource, codec.FormatProtobuf, glueID),
	} {
		v, err := pd.Record(r).Value(ctx)
		if err != nil || !proto.Equal(v, geo) {
			t.Errorf("%s SOURCE mode: %v, %v", name, v, err)
		}
	}
	// An ID that is neither decimal nor a UUID is not guessed at.
	if _, err := pd.Record(metaRecord(confluentSource, codec.FormatProtobuf, "abc")).Value(ctx); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("schema ID abc: %v", err)
	}

	// JSON mode: the mapping converted an Avro value to JSON.
	jd := mustDeserializer(t, codec.String(), codec.JSON[jsonOrder](), codec.WithWire(codec.WireGlue))
	v, err := jd.Record(metaRecord([]byte(`{"id":"j","amount_cents":3}`), codec.FormatAvro, glueID)).Value(ctx)
	if err != nil || v.ID != "j" || v.Amount != 3 {
		t.Errorf("JSON mode: %+v, %v", v, err)
	}

	// An Avro codec given a PROTOBUF record: a DecodeError that says so, permanent.
	ad := mustDeserializer(t, codec.String(), mustAvro[avroOrder](t, codec.AvroSchema(avroOrderSchema)))
	_, err = ad.Record(metaRecord(confluentSource, codec.FormatProtobuf, "17")).Value(ctx)
	var de *codec.DecodeError
	if !errors.As(err, &de) || !permanent(err) || !strings.Contains(err.Error(), `dataFormat "PROTOBUF"`) || de.SchemaID != "17" || de.Format != codec.FormatProtobuf {
		t.Errorf("format mismatch: %v", err)
	}
}

// memRegistry is an in-memory Registry that counts its lookups.
type memRegistry struct {
	schemas map[string]*codec.Schema
	err     error
	calls   atomic.Int64
}

func (m *memRegistry) Schema(_ context.Context, id string) (*codec.Schema, error) {
	m.calls.Add(1)
	if m.err != nil {
		return nil, &codec.RegistryError{Registry: "mem", ID: id, Err: m.err}
	}
	s, ok := m.schemas[id]
	if !ok {
		return nil, &codec.RegistryError{Registry: "mem", ID: id, Err: codec.ErrSchemaNotFound}
	}
	return s, nil
}

// TestAvroRegistry: the writer's schema comes from the registry by the record's ID, once per
// ID; a reader type with fewer fields skips the others; registry errors are permanent only when
// the schema does not exist.
func TestAvroRegistry(t *testing.T) {
	enc := mustAvro[avroOrder](t, codec.AvroSchema(avroOrderSchema))
	in := avroOrder{ID: "reg", Amount: 7, Items: []avroItem{{"s", 1}}}
	kr, err := mustSerializer(t, codec.String(), enc, codec.WithValueSchema(codec.WireConfluent, "17")).Record(ctx, "t", "k", in)
	if err != nil {
		t.Fatal(err)
	}
	reg := &memRegistry{schemas: map[string]*codec.Schema{"17": {ID: "17", Format: codec.FormatAvro, Text: avroOrderSchema}}}
	type slim struct {
		ID   string  `avro:"id"`
		Note *string `avro:"note"`
	}
	d := mustDeserializer(t, codec.String(), mustAvro[slim](t), codec.WithValueWire(codec.WireConfluent), codec.WithRegistry(reg))
	for range 100 {
		v, err := d.Record(record(kr.Key, kr.Value)).Value(ctx)
		if err != nil || v.ID != "reg" || v.Note != nil {
			t.Fatalf("got %+v, %v", v, err)
		}
	}
	if n := reg.calls.Load(); n != 1 {
		t.Errorf("registry asked %d times for one ID, want 1", n)
	}
	// SOURCE mode with metadata: plain Avro binary, ID from the metadata.
	plain, _ := enc.Encode(ctx, in, nil)
	v, err := d.Record(metaRecord(plain, codec.FormatAvro, "17")).Value(ctx)
	if err != nil || v.ID != "reg" {
		t.Fatalf("SOURCE mode: %+v, %v", v, err)
	}

	missing, _ := codec.AppendConfluent(nil, 99, nil, plain)
	_, err = d.Record(record(nil, missing)).Value(ctx)
	if !errors.Is(err, codec.ErrSchemaNotFound) || !permanent(err) || !strings.Contains(err.Error(), "99") {
		t.Errorf("unknown ID: %v (permanent %v)", err, permanent(err))
	}
	down := &memRegistry{err: errors.New("503 Service Unavailable")}
	d2 := mustDeserializer(t, codec.String(), mustAvro[slim](t), codec.WithValueWire(codec.WireConfluent), codec.WithRegistry(down))
	_, err = d2.Record(record(nil, kr.Value)).Value(ctx)
	var de *codec.DecodeError
	if !errors.As(err, &de) || permanent(err) {
		t.Errorf("registry down: %v, permanent %v; want a DecodeError to retry", err, permanent(err))
	}
	// No schema at all: a configuration error, not sunk.
	d3 := mustDeserializer(t, codec.String(), mustAvro[slim](t), codec.WithValueWire(codec.WireConfluent))
	_, err = d3.Record(record(nil, kr.Value)).Value(ctx)
	if !errors.Is(err, codec.ErrNoSchema) || permanent(err) {
		t.Errorf("no schema: %v", err)
	}
}

// TestAvroBadPayload: hamba/avro's Unmarshal takes a short payload as a success; the codec
// does not, nor bytes left over.
func TestAvroBadPayload(t *testing.T) {
	c := mustAvro[avroOrder](t, codec.AvroSchema(avroOrderSchema))
	good, err := c.Encode(ctx, avroOrder{ID: "abcdef", Amount: 1 << 40, Items: []avroItem{{"x", 1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(good) {
		if v, err := c.Decode(ctx, good[:i], nil); err == nil {
			t.Fatalf("payload cut to %d of %d bytes decoded: %+v", i, len(good), v)
		}
	}
	if _, err := c.Decode(ctx, append(good, 0), nil); err == nil || !strings.Contains(err.Error(), "left over") {
		t.Fatalf("trailing byte: %v", err)
	}
	// A schema that does not parse is an error of Avro, naming the option; before, the
	// codec was made and every Decode failed with ErrNoSchema.
	bad, err := codec.Avro[avroOrder](codec.AvroSchema(`{"type":"record"`))
	if !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), "codec: invalid option AvroSchema: ") || bad != nil {
		t.Fatalf("bad AvroSchema: %v, %v", bad, err)
	}
}

// TestTombstones: a null value or key is ErrNull, in a permanent DecodeError, never a zero
// value; an empty value is not null.
func TestTombstones(t *testing.T) {
	d := mustDeserializer(t, codec.String(), codec.JSON[jsonOrder]())
	r := d.Record(record(nil, nil))
	if _, err := r.Value(ctx); !errors.Is(err, codec.ErrNull) || !permanent(err) {
		t.Errorf("tombstone value: %v", err)
	}
	if _, err := r.Key(ctx); !errors.Is(err, codec.ErrNull) {
		t.Errorf("null key: %v", err)
	}
	var de *codec.DecodeError
	if _, err := r.Key(ctx); !errors.As(err, &de) || de.Field != "key" || de.Offset != 42 {
		t.Errorf("null key: %#v", de)
	}
	sd := mustDeserializer(t, codec.Bytes(), codec.String())
	v, err := sd.Record(record([]byte{}, []byte{})).Value(ctx)
	if err != nil || v != "" {
		t.Errorf("empty value: %q, %v", v, err)
	}
	for _, w := range []codec.Wire{codec.WireConfluent, codec.WireGlue} {
		sd := mustDeserializer(t, codec.String(), codec.String(), codec.WithWire(w))
		if _, err := sd.Record(record(nil, nil)).Value(ctx); !errors.Is(err, codec.ErrNull) {
			t.Errorf("%v tombstone: %v", w, err)
		}
	}
	// The producer side writes a tombstone as a null value.
	kr, err := mustSerializer(t, codec.String(), codec.JSON[jsonOrder](), codec.WithKeySchema(codec.WireConfluent, "1")).Tombstone(ctx, "t", "k")
	if err != nil || kr.Value != nil || kr.Key[0] != 0 {
		t.Errorf("Tombstone: %+v, %v", kr, err)
	}
}

// counting is a codec that counts its decodes.
type counting struct {
	n atomic.Int64
}

func (c *counting) Format() string { return codec.FormatRaw }
func (c *counting) Decode(_ context.Context, p []byte, _ *codec.Schema) (string, error) {
	c.n.Add(1)
	return string(p), nil
}
func (c *counting) Encode(_ context.Context, v string, _ *codec.Schema) ([]byte, error) {
	return []byte(v), nil
}

// TestLazyOnce: nothing is decoded until asked, and each field at most once, however many
// goroutines ask at once (run with -race).
func TestLazyOnce(t *testing.T) {
	kc, vc := &counting{}, &counting{}
	d := mustDeserializer[string, string](t, kc, vc)
	r := d.Record(record([]byte("k"), []byte("v")))
	if kc.n.Load() != 0 || vc.n.Load() != 0 {
		t.Fatal("Record decoded eagerly")
	}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if v, err := r.Value(ctx); v != "v" || err != nil {
				t.Errorf("Value: %q, %v", v, err)
			}
		})
	}
	wg.Wait()
	if n := vc.n.Load(); n != 1 {
		t.Errorf("value decoded %d times, want 1", n)
	}
	if n := kc.n.Load(); n != 0 {
		t.Errorf("key decoded %d times without being asked", n)
	}
	for range 3 {
		_, _ = r.Key(ctx)
	}
	if n := kc.n.Load(); n != 1 {
		t.Errorf("key decoded %d times, want 1", n)
	}
	if r.Offset != 42 || string(r.Record.Value) != "v" {
		t.Errorf("raw record not at hand: %+v", r.Record)
	}
}

// memSink keeps what it is sent.
type memSink struct {
	mu   sync.Mutex
	envs []*batch.Envelope
}

func (s *memSink) Send(_ context.Context, e *batch.Envelope) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.envs = append(s.envs, e)
	return nil
}

// TestProcessKafka: one record that does not decode fails alone; the others are handled.
func TestProcessKafka(t *testing.T) {
	ser := mustSerializer(t, codec.String(), codec.JSON[jsonOrder](), codec.WithValueSchema(codec.WireConfluent, "5"))
	var recs []kafkaevent.Record
	for i := range 6 {
		kr, err := ser.Record(ctx, "orders", fmt.Sprint("k", i), jsonOrder{ID: fmt.Sprint("o", i)})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, kafkaevent.Record{Topic: "orders", Partition: 0, Offset: int64(i), Key: kr.Key, Value: kr.Value})
	}
	recs[2].Value = []byte{0, 0, 0, 0, 5, '{', '"', 'i', 'd'} // truncated JSON
	ev := &kafkaevent.Event{Partitions: []kafkaevent.Partition{{Topic: "orders", Number: 0, Records: recs}}}

	d := mustDeserializer(t, codec.String(), codec.JSON[jsonOrder](), codec.WithValueWire(codec.WireConfluent))
	var mu sync.Mutex
	var handled []string
	h := d.Func(func(ctx context.Context, r *codec.Record[string, jsonOrder]) error {
		v, err := r.Value(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		handled = append(handled, v.ID)
		mu.Unlock()
		return nil
	})
	sink := &memSink{}
	resp, err := batch.ProcessKafka(ctx, ev, h, batch.WithSink(sink, batch.SinkPermanent), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("failures %+v, want none (the bad record goes to the sink)", resp.BatchItemFailures)
	}
	if want := []string{"o0", "o1", "o3", "o4", "o5"}; !reflect.DeepEqual(handled, want) {
		t.Errorf("handled %v, want %v", handled, want)
	}
	if len(sink.envs) != 1 || sink.envs[0].Offset != 2 || !sink.envs[0].Permanent ||
		!strings.Contains(sink.envs[0].Error, "codec: value of orders-0@2 (JSON, schema 5, Confluent framing)") {
		t.Fatalf("sink got %+v", sink.envs)
	}

	// Without a sink, the record is reported; in its own partition nothing else is.
	ev2 := &kafkaevent.Event{Partitions: []kafkaevent.Partition{
		{Topic: "orders", Number: 0, Records: []kafkaevent.Record{recs[0], recs[1]}},
		{Topic: "orders", Number: 1, Records: []kafkaevent.Record{withPartition(recs[2], 1)}},
		{Topic: "orders", Number: 2, Records: []kafkaevent.Record{withPartition(recs[3], 2)}},
	}}
	resp, err = batch.ProcessKafka(ctx, ev2, h, quiet)
	if err != nil {
		t.Fatal(err)
	}
	want := []batch.KafkaItemFailure{{ItemIdentifier: batch.KafkaItemIdentifier{Partition: "orders-1", Offset: 2}}}
	if !reflect.DeepEqual(resp.BatchItemFailures, want) {
		t.Errorf("failures %+v, want %+v", resp.BatchItemFailures, want)
	}

	// The same handler is a fanout worker's.
	_ = fanout.WorkerHandler(h)
}

var quiet = batch.WithLogger(slog.New(slog.DiscardHandler))

func withPartition(r kafkaevent.Record, p int32) kafkaevent.Record {
	r.Partition = p
	return r
}

// TestInvalidOptions: a bad option is an error of the constructor that takes it, a
// *toolkit.OptionError, unmarked, and naming the option; nothing is made. Before, the
// Deserializer or Serializer was made and every decode and every Record failed.
func TestInvalidOptions(t *testing.T) {
	for want, opt := range map[string]codec.DeserializerOption{
		"codec: invalid option WithWire(7): unknown wire format": codec.WithWire(7),
		"WithKeyWire(-1)":         codec.WithKeyWire(-1),
		"WithValueWire(3)":        codec.WithValueWire(3),
		"WithMaxInflated(0)":      codec.WithMaxInflated(0),
		"WithRegistry(nil)":       codec.WithRegistry(nil),
		"DeserializerOption(nil)": nil,
	} {
		d, err := codec.NewDeserializer(codec.String(), codec.String(), opt)
		if !errors.Is(err, toolkit.ErrInvalidOption) || permanent(err) || !strings.Contains(err.Error(), want) || d != nil {
			t.Errorf("NewDeserializer with %s: %v, %v", want, d, err)
		}
	}
	if _, err := codec.NewDeserializer[string](nil, codec.String()); !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), "NewDeserializer(nil, codec)") {
		t.Errorf("NewDeserializer with a nil codec: %v", err)
	}
	for _, opt := range []codec.SerializerOption{
		codec.WithValueSchema(codec.WireConfluent, "x"), codec.WithValueSchema(codec.WireConfluent, "4294967296"),
		codec.WithKeySchema(codec.WireGlue, "17"), codec.WithKeySchema(codec.WireGlue, glueID, 1, 2),
		codec.WithValueSchema(codec.WireNone, "17"), codec.WithValueSchema(9, "1"), codec.WithValueSchema(codec.WireConfluent, "1", -1),
		nil,
	} {
		s, err := codec.NewSerializer(codec.String(), codec.String(), opt)
		if !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), "codec: invalid option ") || s != nil {
			t.Errorf("NewSerializer: %v, %v", s, err)
		}
	}
	if _, err := codec.NewSerializer[string, string](codec.String(), nil); !errors.Is(err, toolkit.ErrInvalidOption) {
		t.Errorf("NewSerializer with a nil codec: %v", err)
	}
	c, err := codec.Avro[avroOrder](nil)
	if !errors.Is(err, toolkit.ErrInvalidOption) || c != nil {
		t.Errorf("Avro(nil): %v, %v", c, err)
	}
}

// TestBadInput: framing and payload errors are permanent DecodeErrors naming the record.
func TestBadInput(t *testing.T) {
	d := mustDeserializer(t, codec.String(), codec.String(), codec.WithWire(codec.WireGlue), codec.WithMaxInflated(1024))
	big, _ := codec.AppendGlue(nil, glueID, true, make([]byte, 4096))
	for name, c := range map[string]struct {
		value []byte
		want  error
	}{
		"unknown version": {[]byte{4, 0, 1}, nil},
		"zlib bomb":       {big, codec.ErrInflatedTooLarge},
		"invalid UTF-8":   {mustGlue(t, []byte("ok \xff")), codec.ErrInvalidUTF8},
	} {
		_, err := d.Record(record(nil, c.value)).Value(ctx)
		var de *codec.DecodeError
		if !errors.As(err, &de) || !permanent(err) || de.Wire != codec.WireGlue || de.Topic != "orders" || de.Partition != 3 {
			t.Errorf("%s: %v", name, err)
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

func mustGlue(t *testing.T, p []byte) []byte {
	b, err := codec.AppendGlue(nil, glueID, false, p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// spy is a codec that keeps the schema IDs it is given.
type spy struct {
	mu  sync.Mutex
	ids []string
	idx [][]int
}

func (c *spy) Format() string { return codec.FormatProtobuf }
func (c *spy) Decode(_ context.Context, p []byte, s *codec.Schema) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids = append(c.ids, s.ID)
	c.idx = append(c.idx, s.MessageIndexes)
	return string(p), nil
}
func (c *spy) Encode(_ context.Context, v string, _ *codec.Schema) ([]byte, error) {
	return []byte(v), nil
}

// TestSchemaPerRecord: each record's codec sees its own schema ID and indexes, however the
// Deserializer shares Schema values between records.
func TestSchemaPerRecord(t *testing.T) {
	c := &spy{}
	d := mustDeserializer(t, codec.String(), codec.Codec[string](c), codec.WithValueWire(codec.WireConfluent))
	var want []string
	var wantIdx [][]int
	for i, id := range []uint32{1, 1, 200, 1, 200, 200, 7} {
		idx := []int{0}
		if i%3 == 2 {
			idx = []int{2, 1}
		}
		b, err := codec.AppendConfluent(nil, id, idx, []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Record(record(nil, b)).Value(ctx); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprint(id))
		wantIdx = append(wantIdx, idx)
	}
	if !reflect.DeepEqual(c.ids, want) || !reflect.DeepEqual(c.idx, wantIdx) {
		t.Fatalf("codec saw %v %v, want %v %v", c.ids, c.idx, want, wantIdx)
	}
}

// permanent is what package batch asks of a record's error (batch.IsPermanent): whether an
// error in its chain says, with a Permanent method, that retrying cannot help.
func permanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

// TestPermanent: codec's errors say whether they are permanent through a method, which
// package batch honours; codec imports no batch.
func TestPermanent(t *testing.T) {
	var p interface{ Permanent() bool } = &codec.DecodeError{Err: codec.ErrNull}
	if !p.Permanent() {
		t.Error("a DecodeError of a null value is not permanent")
	}
	for _, err := range []error{codec.ErrNoSchema, context.Canceled, &codec.RegistryError{Err: errors.New("503")}, &toolkit.OptionError{Package: "x"}} {
		if (&codec.DecodeError{Err: err}).Permanent() {
			t.Errorf("a DecodeError of %v is permanent, want it retried", err)
		}
	}
	if !(&codec.DecodeError{Err: &codec.RegistryError{Err: codec.ErrSchemaNotFound}}).Permanent() {
		t.Error("a DecodeError of a schema the registry does not have is not permanent")
	}
	var oe *toolkit.OptionError
	if _, err := codec.NewDeserializer(codec.String(), codec.String(), codec.WithWire(9)); !errors.As(err, &oe) || oe.Package != "codec" || oe.Option != "WithWire(9)" {
		t.Errorf("WithWire(9): %v, want a *toolkit.OptionError", err)
	}
}
