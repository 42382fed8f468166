package codec_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/codec/internal/testpb"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// FuzzDeserialize: whatever the bytes, every codec under every wire format and in SOURCE mode
// returns a value or a *DecodeError, never panics nor overflows the stack: JSON into a struct
// and into any, Avro of a flat, a linked-list, a tree and an endless schema, into structs and
// into any, Protobuf of a flat and a recursive message. The seeds include values nested past
// every limit, plain and in compressed Glue frames.
func FuzzDeserialize(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 17, 0, 10, 1, 'x'}, false)
	f.Add([]byte{3, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 120, 156}, true)
	f.Add([]byte(`{"id":"a"}`), false)
	f.Add([]byte{2, 0x84, 1, 0x0a, 0}, true)
	deep := [][]byte{
		nodes(10_001), // Avro list
		append(bytes.Repeat([]byte{2}, 10_001), bytes.Repeat([]byte{0}, 10_002)...), // Avro tree
		{16, 0x80, 0x80, 0x80, 0x01, 0x80, 0x80, 0x80, 0x01, 0},                     // Avro arrays of nulls
		protoChain(10_001), // Protobuf Tree.next
		bytes.Repeat([]byte{0x1a, 0x02, 0x1a}, 8_000), // Protobuf Tree.kids, cut short
		bytes.Repeat([]byte("["), 10_001),             // JSON
		append(bytes.Repeat([]byte(`{"id":`), 10_001), '1'),
	}
	for _, p := range deep {
		f.Add(p, false)
		if framed, err := codec.AppendGlue(nil, glueID, true, p); err == nil {
			f.Add(framed, true)
		}
		if framed, err := codec.AppendConfluent(nil, 17, nil, p); err == nil {
			f.Add(framed, false)
		}
	}
	avroC := mustAvro[avroOrder](f, codec.AvroSchema(avroOrderSchema))
	avroAny := mustAvro[any](f, codec.AvroSchema(avroOrderSchema))
	list := mustAvro[avroNode](f, codec.AvroSchema(nodeSchema))
	listAny := mustAvro[map[string]any](f, codec.AvroSchema(nodeSchema))
	tree := mustAvro[any](f, codec.AvroSchema(`{"type":"record","name":"Tree","fields":[{"name":"kids","type":{"type":"array","items":"Tree"}},{"name":"m","type":{"type":"map","values":["null","Tree"]}}]}`))
	nulls := mustAvro[any](f, codec.AvroSchema(`{"type":"array","items":{"type":"array","items":"null"}}`))
	endless := mustAvro[any](f, codec.AvroSchema(`{"type":"record","name":"Loop","fields":[{"name":"self","type":"Loop"}]}`))
	f.Fuzz(func(t *testing.T, data []byte, glue bool) {
		for _, w := range []codec.Wire{codec.WireNone, codec.WireConfluent, codec.WireGlue} {
			opts := []codec.DeserializerOption{codec.WithWire(w), codec.WithMaxInflated(1 << 16)}
			check(t, mustDeserializer(t, codec.String(), codec.JSON[jsonOrder](), opts...), data, glue)
			check(t, mustDeserializer(t, codec.String(), codec.JSON[any](), opts...), data, glue)
			for _, c := range []codec.Codec[any]{avroAny, tree, nulls, endless} {
				check(t, mustDeserializer(t, codec.String(), c, opts...), data, glue)
			}
			check(t, mustDeserializer(t, codec.String(), avroC, opts...), data, glue)
			check(t, mustDeserializer(t, codec.String(), list, opts...), data, glue)
			check(t, mustDeserializer(t, codec.String(), listAny, opts...), data, glue)
			check(t, mustDeserializer(t, codec.Bytes(), codec.Protobuf[*testpb.Order](), opts...), data, glue)
			check(t, mustDeserializer(t, codec.Bytes(), codec.Protobuf[*testpb.Tree](), opts...), data, glue)
		}
	})
}

func check[K, V any](t *testing.T, d *codec.Deserializer[K, V], data []byte, glue bool) {
	id, format := "17", ""
	if glue {
		id = glueID
	}
	for _, meta := range []bool{false, true} {
		r := record(data, data)
		if meta {
			switch any(d).(type) {
			case *codec.Deserializer[string, avroOrder], *codec.Deserializer[string, any],
				*codec.Deserializer[string, avroNode], *codec.Deserializer[string, map[string]any]:
				format = codec.FormatAvro
			default:
				format = codec.FormatProtobuf
			}
			r.ValueSchema = &kafkaevent.SchemaMetadata{DataFormat: format, SchemaID: id}
		}
		rec := d.Record(r)
		for _, err := range []error{second(rec.Key(ctx)), second(rec.Value(ctx))} {
			var de *codec.DecodeError
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("error %v is not a *DecodeError", err)
			}
		}
	}
}

func second[T any](_ T, err error) error { return err }
