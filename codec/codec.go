// Package codec gives Kafka records typed keys and values: JSON, Avro (hamba/avro), Protobuf
// (google.golang.org/protobuf), raw bytes and strings, in the wire formats producers write
// (Confluent Schema Registry, AWS Glue Schema Registry, or none) and as the event source
// mapping delivers them when it has a schema registry of its own (JSON or SOURCE mode).
//
// A [Deserializer] holds a key codec and a value codec, chosen separately. [Deserializer.Record]
// wraps a *kafkaevent.Record in a [Record] whose Key and Value are decoded lazily, at most once
// each; the raw record stays at hand. A value that cannot be decoded is a *[DecodeError] on that
// record alone, permanent for package batch (its Permanent method says so; codec does not
// import batch), so the record is reported or goes to the failure sink while the rest of the
// batch goes on. [Deserializer.Func] adapts a [RecordFunc] of typed records to batch's
// per-record function:
//
//	orders, err := codec.NewDeserializer(codec.String(), codec.JSON[Order]())
//	if err != nil {
//		log.Fatal(err) // an invalid option, found at start-up
//	}
//	lambda.Start(batch.KafkaHandler(orders.Func(func(ctx context.Context, r *codec.Record[string, Order]) error {
//		o, err := r.Value(ctx)
//		if err != nil {
//			return err // a *DecodeError (permanent), or ErrNull for a tombstone
//		}
//		return apply(ctx, o)
//	})))
//
// [NewDeserializer], [NewSerializer] and [Avro] check their options once, when they are
// called, and return a *toolkit.OptionError (it matches toolkit.ErrInvalidOption) that names
// the option and the value ("codec: invalid option WithWire(9): unknown wire format"), as
// kgo.NewClient does: a bad option is found at start-up, never record by record.
//
// A null key or value (a tombstone's value) gives ErrNull, never a zero value that could pass
// for a real one. A decode error is permanent, except when the registry could not be reached
// (the record is retried, not sent to the sink).
//
// # Wire formats, decided, never guessed
//
// When the event source mapping validated the record against a registry, the record carries
// schema metadata (kafkaevent.SchemaMetadata: dataFormat and schemaId) and the mapping has
// already removed the registry's header: in SOURCE mode the value is the producer's bytes
// (for Protobuf still preceded by the message indexes), in JSON mode it is JSON text. Without
// metadata, the wire format is the one the Deserializer is told ([WithWire]): [WireConfluent]
// (magic byte 0, a 4-byte schema ID, and for Protobuf the message-index list), [WireGlue]
// (version byte 3, a compression byte, a 16-byte schema version UUID, then the payload,
// zlib-deflated when the compression byte says so, inflated up to [WithMaxInflated]) or
// [WireNone] (the default: the bytes are the payload). No length is ever taken as a hint.
//
// # Bounds
//
// No record can crash the function or exhaust its memory: every hostile value is a
// *DecodeError on that record alone. JSON nests at most 10,000 levels deep (as encoding/json
// does), Protobuf at most 10,000 (protobuf's default RecursionLimit), and Avro values of a
// recursive schema at most 10,000; an Avro value holds at most 65,536 array items that take
// no bytes, and an array at most 1,048,576 items; Avro strings and bytes are at most 8 MiB;
// a Glue zlib payload inflates to at most [WithMaxInflated]; a schema registry's answer is
// read up to 4 MiB. The limits are named in the errors that report them.
//
// No schema can hold a function past its deadline either. Every schema a codec gets (given
// with [AvroSchema], fetched from a registry, or the descriptor of [ProtobufDynamic]) is
// measured before anything is built from it, in time linear in its text: its expanded size
// (every reference to a named type, message type or $ref replaced by what it names, a
// reference back into itself counted once) at most 65,536 nodes, its depth at most 256
// levels, its alternatives (union, anyOf, oneOf, oneof branches) at most 8,192. A schema over
// a limit is a *[SchemaLimitError] that names the limit and the measure, kept for the schema's
// ID: each record of it fails at once, and the schema is never measured or built again.
// Within the limits, hamba/avro's decoder for a schema (built all at once, with no context)
// is built once per schema on a goroutine of its own: Decode waits for it until its context
// ends, and the records that come meanwhile wait for the same build. [CheckSchema] measures
// a schema for a program that compiles one itself (a JSON Schema validator, a .proto
// compiler).
//
// # Schemas
//
// Avro needs the writer's schema: give it ([AvroSchema]) or let a [Registry] find it by the ID
// the record carries ([WithRegistry]): a Confluent Schema Registry ([NewConfluentRegistry]) or
// the AWS Glue Schema Registry (package codec/glue, apart so that a function that reads no
// schemas from Glue links no Glue client). Registries are cached for the life of the
// execution environment and fetched once per ID even when many records miss at once.
package codec

import (
	"context"
)

// Formats of a codec and of kafkaevent.SchemaMetadata.DataFormat.
const (
	FormatJSON     = "JSON"
	FormatAvro     = "AVRO"
	FormatProtobuf = "PROTOBUF"
	FormatRaw      = "RAW" // bytes or a string: no schema
)

// Wire formats: how a producer framed a key or value ([WithWire]).
type Wire int

const (
	WireNone      Wire = iota // the bytes are the payload
	WireConfluent             // 0x00, schema ID (uint32, big-endian), [Protobuf message indexes], payload
	WireGlue                  // 0x03, compression (0x00 none, 0x05 zlib), schema version UUID (16 bytes), payload
)

// Schema is what a codec knows of the writer's schema of one key or value.
type Schema struct {
	// ID is the schema's ID as the record names it: a Confluent schema ID in decimal, or a
	// Glue schema version UUID in its canonical 36-character form; "" when none is known.
	ID string
	// Format is FormatAvro, FormatProtobuf or FormatJSON ("" when unknown).
	Format string
	// Text is the schema document (Avro JSON, .proto source, JSON Schema); "" when the
	// codec was not given one and no registry was asked.
	Text string
	// MessageIndexes are the Protobuf message indexes of a Confluent-framed value (the path
	// to the message type in the .proto file; [0] is the first message); nil otherwise.
	MessageIndexes []int
}

// Codec decodes and encodes the payload of a key or value of type T, once the wire format's
// header is off. Implementations are safe for concurrent use.
type Codec[T any] interface {
	// Format is the codec's format (FormatJSON, FormatAvro, FormatProtobuf, FormatRaw).
	Format() string
	// Decode decodes payload, written with schema s (nil when unknown). A Deserializer
	// gives the records that name the same schema the same *Schema: Decode must not
	// modify it.
	Decode(ctx context.Context, payload []byte, s *Schema) (T, error)
	// Encode encodes v for schema s (nil when unknown).
	Encode(ctx context.Context, v T, s *Schema) ([]byte, error)
}

// Registry finds schemas by ID. Implementations are safe for concurrent use; see
// NewConfluentRegistry, Cached and the AWS Glue registry of package
// codec/glue.
type Registry interface {
	// Schema returns the schema with this ID, or an error that names the ID (wrapping
	// ErrSchemaNotFound when the registry has no such schema).
	Schema(ctx context.Context, id string) (*Schema, error)
}
