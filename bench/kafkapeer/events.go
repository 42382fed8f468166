package main

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/bench/kafkapeer/orderpb"
	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// A format is one of the three events: the value codec's format, and the schema ID its
// records' valueSchemaMetadata name.
type format struct {
	name     string // json, avro, protobuf: the event's file name and the Node side's key
	data     string // codec.FormatJSON, ...: the dataFormat of valueSchemaMetadata
	schemaID string // a Confluent schema ID
	// record returns the i-th order's key and value as the event source mapping delivers them
	// in SOURCE mode with a Confluent Schema Registry.
	record func(ctx context.Context, i int) (key, value []byte, err error)
}

const topic = "orders"

// formats returns the three formats, their values written by the toolkit's Serializer.
//
// Every value is the Confluent framing a producer with a serializer of Confluent's writes
// (magic byte 0, the 4-byte schema ID, for Protobuf the message indexes, then the payload)
// without its first five bytes, as the event source mapping delivers it in SOURCE mode with a
// schema registry, each record with its valueSchemaMetadata ({"dataFormat":"AVRO",
// "schemaId":"2"}): JSON text, plain Avro binary, and for Protobuf the message-index list
// (the single byte 0: the first message of the file) before the message. This is the one
// framing that Powertools' kafkaConsumer (which never reads a Confluent or Glue header,
// reads Protobuf message indexes only when the record has schema metadata, and requires that
// metadata for Protobuf) and the toolkit (which follows the metadata) both decode.
func formats() ([]*format, error) {
	json, err := codec.NewSerializer(codec.String(), codec.JSON[Order](),
		codec.WithValueSchema(codec.WireConfluent, "1"))
	if err != nil {
		return nil, err
	}
	avroCodec, err := codec.Avro[Order](codec.AvroSchema(avroSchema))
	if err != nil {
		return nil, err
	}
	avro, err := codec.NewSerializer(codec.String(), avroCodec, codec.WithValueSchema(codec.WireConfluent, "2"))
	if err != nil {
		return nil, err
	}
	pb, err := codec.NewSerializer(codec.String(), codec.Protobuf[*orderpb.Order](),
		codec.WithValueSchema(codec.WireConfluent, "3", 0))
	if err != nil {
		return nil, err
	}
	return []*format{
		{name: "json", data: codec.FormatJSON, schemaID: "1", record: func(ctx context.Context, i int) ([]byte, []byte, error) {
			o := order(i)
			return sourceMode(json.Record(ctx, topic, o.ID, o))
		}},
		{name: "avro", data: codec.FormatAvro, schemaID: "2", record: func(ctx context.Context, i int) ([]byte, []byte, error) {
			o := order(i)
			return sourceMode(avro.Record(ctx, topic, o.ID, o))
		}},
		{name: "protobuf", data: codec.FormatProtobuf, schemaID: "3", record: func(ctx context.Context, i int) ([]byte, []byte, error) {
			o := order(i)
			return sourceMode(pb.Record(ctx, topic, o.ID, toProto(&o)))
		}},
	}, nil
}

// sourceMode returns the key and value of a record serialized with Confluent framing as the
// event source mapping delivers them in SOURCE mode: the value without its magic byte and
// schema ID.
func sourceMode(r *kgo.Record, err error) (key, value []byte, _ error) {
	if err != nil {
		return nil, nil, err
	}
	if len(r.Value) < 5 || r.Value[0] != 0 {
		return nil, nil, fmt.Errorf("the serializer wrote % x, not Confluent framing", r.Value[:min(len(r.Value), 5)])
	}
	return r.Key, r.Value[5:], nil
}

// event returns the event of f's records, as many as its JSON holds in maxBytes (the orders
// 0, 1, 2, ... spread over four partitions), and how many records it holds.
func (f *format) event(ctx context.Context, maxBytes int) ([]byte, int, error) {
	var keys, values [][]byte
	build := func(n int) ([]byte, error) {
		for i := len(values); i < n; i++ {
			k, v, err := f.record(ctx, i)
			if err != nil {
				return nil, fmt.Errorf("%s record of order %d: %w", f.name, i, err)
			}
			keys, values = append(keys, k), append(values, v)
		}
		b := kafkaeventtest.NewBuilder()
		for i := range n {
			b.Add(topic, int32(i%4), values[i],
				kafkaeventtest.WithKey(keys[i]),
				kafkaeventtest.WithValueSchemaMetadata(f.data, f.schemaID))
		}
		return b.Event().MarshalJSON()
	}
	sample, err := build(1000)
	if err != nil {
		return nil, 0, err
	}
	per := len(sample) / 1000
	n := max(1, maxBytes/per)
	payload, err := build(n)
	for err == nil && len(payload) > maxBytes {
		n -= (len(payload)-maxBytes)/per + 1
		if n < 1 {
			return nil, 0, fmt.Errorf("-size %d is smaller than one record", maxBytes)
		}
		payload, err = build(n)
	}
	for err == nil {
		more, merr := build(n + 1)
		if merr != nil || len(more) > maxBytes {
			err = merr
			break
		}
		n, payload = n+1, more
	}
	if err != nil {
		return nil, 0, err
	}
	return payload, n, nil
}
