package codec_test

import (
	"errors"
	"testing"

	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/codec/internal/testpb"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// FuzzDeserialize: whatever the bytes, every codec under every wire format and in SOURCE mode
// returns a value or a *DecodeError, never panics.
func FuzzDeserialize(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 17, 0, 10, 1, 'x'}, false)
	f.Add([]byte{3, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 120, 156}, true)
	f.Add([]byte(`{"id":"a"}`), false)
	f.Add([]byte{2, 0x84, 1, 0x0a, 0}, true)
	avroC := codec.Avro[avroOrder](codec.AvroSchema(avroOrderSchema))
	f.Fuzz(func(t *testing.T, data []byte, glue bool) {
		for _, w := range []codec.Wire{codec.WireNone, codec.WireConfluent, codec.WireGlue} {
			opts := []codec.Option{codec.WithWire(w), codec.WithMaxInflated(1 << 16)}
			check(t, codec.NewDeserializer(codec.String(), codec.JSON[jsonOrder](), opts...), data, glue)
			check(t, codec.NewDeserializer(codec.String(), avroC, opts...), data, glue)
			check(t, codec.NewDeserializer(codec.Bytes(), codec.Protobuf[*testpb.Order](), opts...), data, glue)
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
			case *codec.Deserializer[string, avroOrder]:
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
