package codec

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// DefaultMaxInflated is the default cap on the inflated size of a Glue zlib payload
// ([WithMaxInflated]): 8 MiB, above the largest record a Kafka event can carry (6 MB).
const DefaultMaxInflated = 8 << 20

// ErrInvalidOption is wrapped by the error of [NewDeserializer], [NewSerializer] and [Avro]
// when an option is given an invalid value (or a codec is missing); the error names the
// option and the value: "codec: WithWire(9): invalid option: unknown wire format". Options
// are checked once, by the constructor that takes them, as kgo.NewClient checks its own:
// nothing made with a bad option exists to fail later, record by record.
var ErrInvalidOption = errors.New("codec: invalid option")

// ErrNoSchema is wrapped by the error of an Avro key or value whose writer schema is unknown:
// the codec was given no [AvroSchema], and no [Registry] could be asked ([WithRegistry]) or the
// record names no schema ID. It is a configuration error: it is not marked permanent.
var ErrNoSchema = errors.New("codec: no writer schema")

// An Option configures a [Deserializer].
type Option func(*config)

type config struct {
	keyWire, valueWire Wire
	registry           Registry
	maxInflated        int
	err                error // the first invalid option, while NewDeserializer applies them

	// last is the Schema of the last Confluent-framed record without message indexes, or
	// with [0], shared by the next ones alike: most batches carry one schema.
	last atomic.Pointer[confluentSchema]
}

type confluentSchema struct {
	id uint32
	s  *Schema
}

func (c *config) invalid(format string, args ...any) {
	if c.err == nil {
		c.err = invalidOption(fmt.Sprintf(format, args...))
	}
}

// optionError is the error of an option given an invalid value, from a message
// "Option(value): why": "codec: WithXxx(v): invalid option: why". err, when set, is the
// error the why comes from (a schema parser's), kept for errors.As.
type optionError struct {
	option, why string
	err         error
}

func invalidOption(msg string) error {
	opt, why, _ := strings.Cut(msg, ": ")
	return &optionError{option: opt, why: why}
}

func (e *optionError) Error() string        { return "codec: " + e.option + ": invalid option: " + e.why }
func (e *optionError) Is(target error) bool { return target == ErrInvalidOption }
func (e *optionError) Unwrap() error        { return e.err }

func validWire(w Wire) bool { return w == WireNone || w == WireConfluent || w == WireGlue }

// WithWire sets the wire format of keys and values alike, for records that carry no schema
// metadata (when the event source mapping has a schema registry, the metadata decides and the
// wire format is not used). The default is [WireNone]: the bytes are the payload.
func WithWire(w Wire) Option {
	return func(c *config) {
		if !validWire(w) {
			c.invalid("WithWire(%d): unknown wire format", int(w))
		}
		c.keyWire, c.valueWire = w, w
	}
}

// WithKeyWire sets the wire format of keys only (see [WithWire]); the default is [WireNone].
func WithKeyWire(w Wire) Option {
	return func(c *config) {
		if !validWire(w) {
			c.invalid("WithKeyWire(%d): unknown wire format", int(w))
		}
		c.keyWire = w
	}
}

// WithValueWire sets the wire format of values only (see [WithWire]); the default is
// [WireNone].
func WithValueWire(w Wire) Option {
	return func(c *config) {
		if !validWire(w) {
			c.invalid("WithValueWire(%d): unknown wire format", int(w))
		}
		c.valueWire = w
	}
}

// WithRegistry makes Avro codecs ask r for the writer's schema by the ID the record carries
// (in its schema metadata or in its framing), wrapped in [Cached] so that each ID is fetched
// once for the life of the execution environment. The schema the registry returns takes
// precedence over the codec's [AvroSchema], which then serves records that carry no ID. By
// default there is no registry. Codecs other than Avro never ask it.
func WithRegistry(r Registry) Option {
	return func(c *config) {
		if r == nil {
			c.invalid("WithRegistry(nil): want a registry")
			return
		}
		c.registry = Cached(r)
	}
}

// WithMaxInflated caps the size a zlib-compressed Glue payload may inflate to; a payload that
// inflates to more is a *[WireError] wrapping [ErrInflatedTooLarge], found without inflating
// past the cap. n must be positive; the default is [DefaultMaxInflated] (8 MiB).
func WithMaxInflated(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.invalid("WithMaxInflated(%d): want a positive size", n)
		}
		c.maxInflated = n
	}
}

// A Deserializer decodes the keys and values of Kafka records with a key codec and a value
// codec. It is safe for concurrent use; make one per function (at init) and wrap each record
// with [Deserializer.Record], or adapt a function of typed records with
// [Deserializer.KafkaRecordHandler].
type Deserializer[K, V any] struct {
	key   Codec[K]
	value Codec[V]
	cfg   config
}

// NewDeserializer returns a Deserializer decoding keys with key and values with value. A nil
// codec or an option given an invalid value is an error wrapping [ErrInvalidOption] that
// names it, and no Deserializer.
func NewDeserializer[K, V any](key Codec[K], value Codec[V], opts ...Option) (*Deserializer[K, V], error) {
	d := &Deserializer[K, V]{key: key, value: value, cfg: config{maxInflated: DefaultMaxInflated}}
	if key == nil || value == nil {
		d.cfg.invalid("NewDeserializer(%s, %s): want a key codec and a value codec", nilOr(key == nil), nilOr(value == nil))
	}
	for _, o := range opts {
		if o == nil {
			d.cfg.invalid("Option(nil): want an option")
			continue
		}
		o(&d.cfg)
	}
	if d.cfg.err != nil {
		return nil, d.cfg.err
	}
	return d, nil
}

// nilOr is how an option's error shows a codec argument: "nil" or "codec".
func nilOr(isNil bool) string {
	if isNil {
		return "nil"
	}
	return "codec"
}

// Record wraps r: its Key and Value are decoded on first use, at most once each. Record does
// no work of its own and never fails; r must not be modified while the Record is in use.
func (d *Deserializer[K, V]) Record(r *kafkaevent.Record) *Record[K, V] {
	return &Record[K, V]{Record: r, keyDec: d.key, valueDec: d.value, cfg: &d.cfg}
}

// field names in DecodeError.Field.
const (
	fieldKey   = "key"
	fieldValue = "value"
)

// decode decodes one field of r (data, with its schema metadata meta) with c under cfg into
// dst, left zero on an error. The error is a *DecodeError, marked permanent unless retrying
// may help.
func decode[T any](ctx context.Context, cfg *config, c Codec[T], r *kafkaevent.Record, field string, data []byte, meta *kafkaevent.SchemaMetadata, wire Wire, dst *T) error {
	if data == nil {
		return decodeError(ErrNull, c.Format(), r, field, meta, wire, "")
	}
	payload, s, err := unframe(cfg, c.Format(), data, meta, wire)
	if err != nil {
		return decodeError(err, c.Format(), r, field, meta, wire, s.id())
	}
	if c.Format() == FormatAvro && cfg.registry != nil && s != nil && s.ID != "" {
		rs, err := cfg.registry.Schema(ctx, s.ID)
		if err == nil && rs.Format != "" && rs.Format != FormatAvro {
			err = fmt.Errorf("codec: the registry's schema %s is %s, the codec decodes %s", s.ID, rs.Format, FormatAvro)
		}
		if err != nil {
			return decodeError(err, c.Format(), r, field, meta, wire, s.ID)
		}
		s = rs
	}
	if into, ok := c.(decoderInto[T]); ok {
		err = into.decodeInto(ctx, payload, s, dst)
	} else {
		*dst, err = c.Decode(ctx, payload, s)
	}
	if err != nil {
		var zero T
		*dst = zero
		return decodeError(err, c.Format(), r, field, meta, wire, s.id())
	}
	return nil
}

// decoderInto is implemented by the codecs that can decode into a value in place, which
// saves a Record a copy and an allocation.
type decoderInto[T any] interface {
	decodeInto(ctx context.Context, payload []byte, s *Schema, v *T) error
}

// id is s.ID, or "" when s is nil.
func (s *Schema) id() string {
	if s == nil {
		return ""
	}
	return s.ID
}

// decodeError returns the *DecodeError of field of r, marked as it should be.
func decodeError(err error, format string, r *kafkaevent.Record, field string, meta *kafkaevent.SchemaMetadata, wire Wire, id string) error {
	de := &DecodeError{Field: field, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Format: format, SchemaID: id, Wire: wire, Err: err}
	if meta != nil {
		de.Wire, de.SchemaID = WireNone, meta.SchemaID
		if meta.DataFormat != "" {
			de.Format = meta.DataFormat
		}
	}
	return de.mark()
}

// unframe finds the payload and what is known of its schema: from the schema metadata when the
// record has some, from the wire format otherwise. On an error, the schema is what was known
// (its ID), or nil.
func unframe(cfg *config, format string, data []byte, meta *kafkaevent.SchemaMetadata, wire Wire) ([]byte, *Schema, error) {
	if meta != nil {
		s := &Schema{ID: meta.SchemaID, Format: meta.DataFormat}
		switch {
		case format == FormatJSON || format == FormatRaw:
			// JSON mode (the mapping converted the value to JSON whatever its dataFormat),
			// a JSON Schema value in SOURCE mode, or bytes the caller wants as they are.
			return data, s, nil
		case format != meta.DataFormat:
			return nil, nil, fmt.Errorf("codec: the record's schema metadata says dataFormat %q, the codec decodes %s (a mapping in JSON mode needs the JSON codec)", meta.DataFormat, format)
		case format == FormatProtobuf:
			// SOURCE mode: the registry's header is gone, its Protobuf message index is not.
			if isUUID(meta.SchemaID) {
				i, payload, err := SplitGlueMessageIndex(data)
				if err != nil {
					return nil, nil, err
				}
				s.MessageIndexes = []int{i}
				return payload, s, nil
			}
			if !isDecimal(meta.SchemaID) {
				return nil, nil, fmt.Errorf("codec: the record's schema ID %q is neither a Confluent ID nor a Glue schema version UUID", meta.SchemaID)
			}
			idx, payload, err := SplitMessageIndexes(data)
			if err != nil {
				return nil, nil, err
			}
			s.MessageIndexes = idx
			return payload, s, nil
		}
		return data, s, nil // SOURCE mode Avro: plain Avro binary
	}
	switch wire {
	case WireConfluent:
		id, idx, payload, err := SplitConfluent(data, format == FormatProtobuf)
		if err != nil {
			return nil, nil, err
		}
		first := len(idx) == 1 && idx[0] == 0
		if idx != nil && !first {
			return payload, &Schema{ID: strconv.FormatUint(uint64(id), 10), MessageIndexes: idx}, nil
		}
		if last := cfg.last.Load(); last != nil && last.id == id && (last.s.MessageIndexes != nil) == first {
			return payload, last.s, nil
		}
		s := &Schema{ID: strconv.FormatUint(uint64(id), 10), MessageIndexes: idx}
		cfg.last.Store(&confluentSchema{id, s})
		return payload, s, nil
	case WireGlue:
		id, payload, err := SplitGlue(data, cfg.maxInflated)
		if err != nil {
			return nil, nil, err
		}
		s := &Schema{ID: id}
		if format == FormatProtobuf {
			i, p, err := SplitGlueMessageIndex(payload)
			if err != nil {
				return nil, s, err
			}
			s.MessageIndexes, payload = []int{i}, p
		}
		return payload, s, nil
	}
	return data, nil, nil
}

// isDecimal reports whether s is a Confluent schema ID: decimal digits that fit 32 bits.
func isDecimal(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

// isUUID reports whether s is a Glue schema version ID: a UUID in canonical form.
func isUUID(s string) bool {
	_, err := parseUUID(s)
	return err == nil
}
