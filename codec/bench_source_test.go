package codec_test

import (
	"context"
	"fmt"
	"testing"

	gojson "github.com/goccy/go-json"
	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/proto"

	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/codec/internal/testpb"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// sourceBatch is benchBatch's records as the event source mapping delivers them in SOURCE
// mode with a Confluent schema registry: the magic byte and the schema ID taken off (a
// Protobuf value keeps its message indexes), and each record with its own
// valueSchemaMetadata, as kafkaevent.Parse gives them.
func sourceBatch[V any](b *testing.B, c codec.Codec[V], format string, mk func(i int) V) []kafkaevent.Record {
	b.Helper()
	recs := benchBatch(b, mustSerializer(b, codec.String(), c, codec.WithValueSchema(codec.WireConfluent, "17")), mk)
	for i := range recs {
		recs[i].Value = recs[i].Value[5:]
		recs[i].ValueSchema = &kafkaevent.SchemaMetadata{DataFormat: format, SchemaID: "17"}
	}
	return recs
}

// BenchmarkSourceBatch is what bench/kafkapeer measures, in one process and without
// kafkaevent.Parse: a 10,000-record batch in SOURCE mode (see sourceBatch), each value read
// by a handler through the toolkit (Deserializer, Record.Value), beside the library that
// codec decodes with called directly on each value (lib=plain). The difference is the cost
// of the codec layer: the Record, the schema and the message indexes, the framing checks.
func BenchmarkSourceBatch(b *testing.B) {
	b.Run("format=avro", benchSourceAvro)
	b.Run("format=protobuf", benchSourceProtobuf)
	b.Run("format=json", benchSourceJSON)
}

func benchSourceAvro(b *testing.B) {
	c := mustAvro[avroOrder](b, codec.AvroSchema(avroOrderSchema))
	recs := sourceBatch(b, c, codec.FormatAvro, avroValue)
	b.Run("lib=toolkit", func(b *testing.B) {
		d := mustDeserializer(b, codec.String(), c)
		runToolkit(b, recs, d.Func(func(ctx context.Context, r *codec.Record[string, avroOrder]) error {
			v, err := r.Value(ctx)
			sinkInt += int64(len(v.Items))
			return err
		}))
	})
	b.Run("lib=plain", func(b *testing.B) {
		schema := avro.MustParse(avroOrderSchema)
		runToolkit(b, recs, func(_ context.Context, r *kafkaevent.Record) error {
			var v avroOrder
			err := avro.Unmarshal(schema, r.Value, &v)
			sinkInt += int64(len(v.Items))
			return err
		})
	})
}

func benchSourceProtobuf(b *testing.B) {
	c := codec.Protobuf[*testpb.Order]()
	recs := sourceBatch(b, c, codec.FormatProtobuf, func(i int) *testpb.Order {
		o := &testpb.Order{Id: fmt.Sprintf("ord-%08d", i), Customer: "cust-42", AmountCents: int64(i) * 137, Tags: map[string]string{"channel": "web"}}
		for j := range 5 {
			o.Items = append(o.Items, &testpb.Order_Item{Sku: fmt.Sprintf("SKU-%06d-%d", i, j), Qty: int32(j + 1)})
		}
		return o
	})
	b.Run("lib=toolkit", func(b *testing.B) {
		d := mustDeserializer(b, codec.String(), c)
		runToolkit(b, recs, d.Func(func(ctx context.Context, r *codec.Record[string, *testpb.Order]) error {
			v, err := r.Value(ctx)
			if err == nil {
				sinkInt += int64(len(v.Items))
			}
			return err
		}))
	})
	b.Run("lib=plain", func(b *testing.B) {
		runToolkit(b, recs, func(_ context.Context, r *kafkaevent.Record) error {
			v := &testpb.Order{}
			err := proto.Unmarshal(r.Value[1:], v) // after the message indexes [0]
			sinkInt += int64(len(v.Items))
			return err
		})
	})
}

func benchSourceJSON(b *testing.B) {
	c := codec.JSON[benchJSONOrder]()
	recs := sourceBatch(b, c, codec.FormatJSON, func(i int) benchJSONOrder {
		o := benchJSONOrder{ID: fmt.Sprintf("ord-%08d", i), Customer: "cust-42", Amount: float64(i) * 1.37, Currency: "EUR",
			Address: map[string]string{"city": "Zürich", "zip": "8001", "street": "Bahnhofstrasse 1"}, Note: "leave it with the neighbour \u263a"}
		for j := range 4 {
			o.Items = append(o.Items, benchJSONItem{SKU: fmt.Sprintf("SKU-%06d-%d", i, j), Qty: j + 1, Price: 9.99})
		}
		return o
	})
	b.Run("lib=toolkit", func(b *testing.B) {
		d := mustDeserializer(b, codec.String(), c)
		runToolkit(b, recs, d.Func(func(ctx context.Context, r *codec.Record[string, benchJSONOrder]) error {
			v, err := r.Value(ctx)
			sinkInt += int64(len(v.Items))
			return err
		}))
	})
	b.Run("lib=plain", func(b *testing.B) {
		runToolkit(b, recs, func(_ context.Context, r *kafkaevent.Record) error {
			var v benchJSONOrder
			err := gojson.Unmarshal(r.Value, &v)
			sinkInt += int64(len(v.Items))
			return err
		})
	})
}
