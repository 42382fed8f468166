package codec

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// field names in DecodeError.Field.
const (
	fieldKey   = "key"
	fieldValue = "value"
)

// fieldDecoder is how a Deserializer decodes one field of its records, the key or the value:
// what it knows of its codec, found once when the Deserializer is made rather than for every
// record (the format, the in-place decoder), and the schemas of the last records, which the
// next records share when they name the same schema: a batch nearly always carries one or two
// schemas, so a record costs no Schema, no message-index list, no schema ID made into a
// string, and no registry lookup of its own.
type fieldDecoder[T any] struct {
	c      Codec[T]
	into   decoderInto[T] // c's in-place decoder, or nil
	name   string         // fieldKey or fieldValue
	format string         // c.Format()
	// raw is that format is FormatJSON or FormatRaw, whose payload is taken as the record
	// has it, whatever its schema metadata; avro and protobuf are the other two formats.
	raw, avro, protobuf bool
	wire                Wire

	// The last schema found in each of the places a schema comes from. Each entry is
	// immutable; entries are replaced, never modified, so goroutines share them freely.
	meta      atomic.Pointer[metaSchema]
	confluent atomic.Pointer[confluentSchema]
	glue      atomic.Pointer[glueSchema]
	registry  atomic.Pointer[registrySchema]
}

// noIndex is the index of a schema entry whose Schema has no MessageIndexes.
const noIndex = -1

// metaSchema is the Schema of the records with this schema metadata and, for Protobuf, this
// message index (0 for the list [0] of a Confluent ID, the index of a Glue one).
type metaSchema struct {
	id, format string
	glue       bool // id is a Glue schema version UUID (else a Confluent ID, for Protobuf)
	index      int
	s          *Schema
}

// confluentSchema is the Schema of the Confluent-framed records with this schema ID and no
// message indexes (index noIndex) or [0] (index 0).
type confluentSchema struct {
	id    uint32
	index int
	s     *Schema
}

// glueSchema is the Schema of the Glue-framed records with this schema version UUID and
// message index (noIndex when the value is not Protobuf).
type glueSchema struct {
	id    uuid.UUID
	index int
	s     *Schema
}

// registrySchema is the registry's Schema of this ID, checked to be Avro.
type registrySchema struct {
	id string
	s  *Schema
}

func (f *fieldDecoder[T]) init(c Codec[T], name string, wire Wire) {
	f.c, f.name, f.format, f.wire = c, name, c.Format(), wire
	f.raw = f.format == FormatJSON || f.format == FormatRaw
	f.avro, f.protobuf = f.format == FormatAvro, f.format == FormatProtobuf
	f.into, _ = c.(decoderInto[T])
}

// decoderInto is implemented by the codecs that can decode into a value in place, which
// saves a Record a copy and an allocation.
type decoderInto[T any] interface {
	decodeInto(ctx context.Context, payload []byte, s *Schema, v *T) error
}

// decode decodes data, the field of r whose schema metadata is meta, under cfg into dst,
// left zero on an error. The error is a *DecodeError, marked permanent unless retrying may
// help.
func (f *fieldDecoder[T]) decode(ctx context.Context, cfg *config, r *kafkaevent.Record, data []byte, meta *kafkaevent.SchemaMetadata, dst *T) error {
	if data == nil {
		return f.decodeError(ErrNull, r, meta, "")
	}
	payload, s, err := f.unframe(cfg, data, meta)
	if err != nil {
		return f.decodeError(err, r, meta, s.id())
	}
	if f.avro && cfg.registry != nil && s != nil && s.ID != "" {
		if s, err = f.registrySchema(ctx, cfg.registry, s.ID); err != nil {
			return f.decodeError(err, r, meta, s.id())
		}
	}
	if f.into != nil {
		err = f.into.decodeInto(ctx, payload, s, dst)
	} else {
		*dst, err = f.c.Decode(ctx, payload, s)
	}
	if err != nil {
		var zero T
		*dst = zero
		return f.decodeError(err, r, meta, s.id())
	}
	return nil
}

// registrySchema returns the registry's schema of id, which must be Avro; on an error, a
// Schema with the ID alone, for the error to name it. The registry is cached (WithRegistry),
// and a schema ID names one schema for ever, so the last answer serves the next records.
func (f *fieldDecoder[T]) registrySchema(ctx context.Context, reg Registry, id string) (*Schema, error) {
	if e := f.registry.Load(); e != nil && e.id == id {
		return e.s, nil
	}
	rs, err := reg.Schema(ctx, id)
	if err == nil && rs.Format != "" && rs.Format != FormatAvro {
		err = fmt.Errorf("codec: the registry's schema %s is %s, the codec decodes %s", id, rs.Format, FormatAvro)
	}
	if err != nil {
		return &Schema{ID: id}, err
	}
	f.registry.Store(&registrySchema{id: id, s: rs})
	return rs, nil
}

// id is s.ID, or "" when s is nil.
func (s *Schema) id() string {
	if s == nil {
		return ""
	}
	return s.ID
}

// decodeError returns the *DecodeError of the field of r.
func (f *fieldDecoder[T]) decodeError(err error, r *kafkaevent.Record, meta *kafkaevent.SchemaMetadata, id string) error {
	de := &DecodeError{Field: f.name, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Format: f.format, SchemaID: id, Wire: f.wire, Err: err}
	if meta != nil {
		de.Wire, de.SchemaID = WireNone, meta.SchemaID
		if meta.DataFormat != "" {
			de.Format = meta.DataFormat
		}
	}
	return de
}

// unframe finds the payload and what is known of its schema: from the schema metadata when the
// record has some, from the wire format otherwise. On an error, the schema is what was known
// (its ID), or nil.
func (f *fieldDecoder[T]) unframe(cfg *config, data []byte, meta *kafkaevent.SchemaMetadata) ([]byte, *Schema, error) {
	if meta != nil {
		return f.unframeMeta(data, meta)
	}
	switch f.wire {
	case WireConfluent:
		return f.unframeConfluent(data)
	case WireGlue:
		return f.unframeGlue(cfg, data)
	}
	return data, nil, nil
}

// unframeMeta is unframe for a record with schema metadata: the event source mapping has
// taken the registry's header off.
func (f *fieldDecoder[T]) unframeMeta(data []byte, meta *kafkaevent.SchemaMetadata) ([]byte, *Schema, error) {
	switch {
	case f.raw:
		// JSON mode (the mapping converted the value to JSON whatever its dataFormat),
		// a JSON Schema value in SOURCE mode, or bytes the caller wants as they are.
		return data, f.metaSchema(meta, false, noIndex), nil
	case f.format != meta.DataFormat:
		return nil, nil, fmt.Errorf("codec: the record's schema metadata says dataFormat %q, the codec decodes %s (a mapping in JSON mode needs the JSON codec)", meta.DataFormat, f.format)
	case !f.protobuf:
		return data, f.metaSchema(meta, false, noIndex), nil // SOURCE mode Avro: plain Avro binary
	}
	// SOURCE mode Protobuf: the registry's header is gone, its Protobuf message index is not.
	// Which list it is follows from the schema ID, checked once per ID.
	var glue bool
	if e := f.meta.Load(); e != nil && e.id == meta.SchemaID && e.format == meta.DataFormat {
		if !e.glue && e.index == 0 && len(data) > 0 && data[0] == 0 {
			return data[1:], e.s, nil // the list [0] of the last record, as nearly every value has it
		}
		glue = e.glue
	} else if glue = isUUID(meta.SchemaID); !glue && !isDecimal(meta.SchemaID) {
		return nil, nil, fmt.Errorf("codec: the record's schema ID %q is neither a Confluent ID nor a Glue schema version UUID", meta.SchemaID)
	}
	if glue {
		i, payload, err := SplitGlueMessageIndex(data)
		if err != nil {
			return nil, nil, err
		}
		return payload, f.metaSchema(meta, true, i), nil
	}
	idx, payload, err := splitMessageIndexes(data, 0)
	if err != nil {
		return nil, nil, err
	}
	if idx != nil && !(len(idx) == 1 && idx[0] == 0) {
		return payload, &Schema{ID: meta.SchemaID, Format: meta.DataFormat, MessageIndexes: idx}, nil
	}
	return payload, f.metaSchema(meta, false, 0), nil
}

// metaSchema returns the Schema of meta with the message indexes [index] (none for noIndex),
// the last record's when it is the same.
func (f *fieldDecoder[T]) metaSchema(meta *kafkaevent.SchemaMetadata, glue bool, index int) *Schema {
	if e := f.meta.Load(); e != nil && e.id == meta.SchemaID && e.format == meta.DataFormat && e.index == index {
		return e.s
	}
	s := &Schema{ID: meta.SchemaID, Format: meta.DataFormat, MessageIndexes: indexList(index)}
	f.meta.Store(&metaSchema{id: meta.SchemaID, format: meta.DataFormat, glue: glue, index: index, s: s})
	return s
}

// indexList is the message-index list [index], or nil for noIndex.
func indexList(index int) []int {
	if index == noIndex {
		return nil
	}
	return []int{index}
}

// unframeConfluent is unframe for a Confluent-framed record without schema metadata.
func (f *fieldDecoder[T]) unframeConfluent(data []byte) ([]byte, *Schema, error) {
	id, idx, payload, err := splitConfluent(data, f.protobuf)
	if err != nil {
		return nil, nil, err
	}
	index := noIndex
	if f.protobuf {
		if idx != nil && !(len(idx) == 1 && idx[0] == 0) {
			return payload, &Schema{ID: strconv.FormatUint(uint64(id), 10), MessageIndexes: idx}, nil
		}
		index = 0
	}
	if e := f.confluent.Load(); e != nil && e.id == id && e.index == index {
		return payload, e.s, nil
	}
	s := &Schema{ID: strconv.FormatUint(uint64(id), 10), MessageIndexes: indexList(index)}
	f.confluent.Store(&confluentSchema{id: id, index: index, s: s})
	return payload, s, nil
}

// unframeGlue is unframe for a Glue-framed record without schema metadata.
func (f *fieldDecoder[T]) unframeGlue(cfg *config, data []byte) ([]byte, *Schema, error) {
	id, payload, err := splitGlue(data, cfg.maxInflated)
	if err != nil {
		return nil, nil, err
	}
	index := noIndex
	if f.protobuf {
		i, p, err := SplitGlueMessageIndex(payload)
		if err != nil {
			return nil, &Schema{ID: id.String()}, err
		}
		index, payload = i, p
	}
	if e := f.glue.Load(); e != nil && e.id == id && e.index == index {
		return payload, e.s, nil
	}
	s := &Schema{ID: id.String(), MessageIndexes: indexList(index)}
	f.glue.Store(&glueSchema{id: id, index: index, s: s})
	return payload, s, nil
}
