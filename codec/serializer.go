package codec

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A SerializerOption configures a [Serializer].
type SerializerOption func(*serializerConfig)

type serializerConfig struct {
	key, value fieldSchema
	compress   bool
	err        error // the first invalid option, while NewSerializer applies them
}

// fieldSchema is the framing of keys or of values.
type fieldSchema struct {
	wire       Wire
	id         string
	confluent  uint32
	indexes    []int
	hasIndexes bool
}

func (c *serializerConfig) invalid(format string, args ...any) {
	if c.err == nil {
		c.err = invalidOption(fmt.Sprintf(format, args...), nil)
	}
}

func schemaOption(name string, w Wire, id string, indexes []int) func(*serializerConfig) fieldSchema {
	return func(c *serializerConfig) fieldSchema {
		f := fieldSchema{wire: w, id: id, indexes: slices_clone(indexes), hasIndexes: len(indexes) > 0}
		switch w {
		case WireNone:
			if id != "" || len(indexes) > 0 {
				c.invalid("%s(WireNone, %q, %v): no framing has no schema ID or indexes", name, id, indexes)
			}
		case WireConfluent:
			n, err := strconv.ParseUint(id, 10, 32)
			if err != nil {
				c.invalid("%s: Confluent schema ID %q is not a 32-bit decimal number", name, id)
			}
			f.confluent = uint32(n)
			for _, i := range indexes {
				if i < 0 {
					c.invalid("%s: negative message index %d", name, i)
				}
			}
		case WireGlue:
			if !isUUID(id) {
				c.invalid("%s: Glue schema version ID %q is not a UUID", name, id)
			}
			if len(indexes) > 1 || len(indexes) == 1 && indexes[0] < 0 {
				c.invalid("%s: a Glue Protobuf message index is one number ≥ 0, not %v", name, indexes)
			}
		default:
			c.invalid("%s(%d, ...): unknown wire format", name, int(w))
		}
		return f
	}
}

func slices_clone(s []int) []int { return append([]int(nil), s...) }

// WithKeySchema frames keys in wire format w with schema ID id: for [WireConfluent] a decimal
// 32-bit ID, for [WireGlue] a schema version UUID, for [WireNone] "" (no framing). indexes are
// the Protobuf message indexes to write: for Confluent the path to the message in its .proto
// file, for Glue one index among the file's messages sorted by full name; without them, a
// Protobuf codec's message type gives them, as the Confluent and Glue serializers compute them.
// Codecs other than Protobuf write no indexes. By default keys are not framed.
func WithKeySchema(w Wire, id string, indexes ...int) SerializerOption {
	opt := schemaOption("WithKeySchema", w, id, indexes)
	return func(c *serializerConfig) { c.key = opt(c) }
}

// WithValueSchema frames values as [WithKeySchema] frames keys. By default values are not
// framed.
func WithValueSchema(w Wire, id string, indexes ...int) SerializerOption {
	opt := schemaOption("WithValueSchema", w, id, indexes)
	return func(c *serializerConfig) { c.value = opt(c) }
}

// WithCompression zlib-deflates Glue-framed keys and values (compression byte 0x05), as the
// Glue serializers do with compression ZLIB. By default they are not compressed. Confluent
// framing has no compression: the option changes nothing there.
func WithCompression() SerializerOption {
	return func(c *serializerConfig) { c.compress = true }
}

// A Serializer encodes keys and values with a key codec and a value codec and frames them as
// a producer using a schema registry's serializer would (Confluent's KafkaAvroSerializer or
// KafkaProtobufSerializer, the Glue serializers), for package producer, `klt produce` and
// tests. It is safe for concurrent use.
type Serializer[K, V any] struct {
	key   Codec[K]
	value Codec[V]
	cfg   serializerConfig
}

// NewSerializer returns a Serializer encoding keys with key and values with value. A nil
// codec or an option given an invalid value is a *toolkit.OptionError (it matches
// toolkit.ErrInvalidOption) that names it, and no Serializer; so is a Protobuf codec that
// names no message type (one of another package) framed without message indexes, which no
// record could be written with.
func NewSerializer[K, V any](key Codec[K], value Codec[V], opts ...SerializerOption) (*Serializer[K, V], error) {
	s := &Serializer[K, V]{key: key, value: value}
	if key == nil || value == nil {
		s.cfg.invalid("NewSerializer(%s, %s): want a key codec and a value codec", nilOr(key == nil), nilOr(value == nil))
	}
	for _, o := range opts {
		if o == nil {
			s.cfg.invalid("SerializerOption(nil): want an option")
			continue
		}
		o(&s.cfg)
	}
	if s.cfg.err == nil {
		checkIndexes(&s.cfg, "WithKeySchema", key, &s.cfg.key)
		checkIndexes(&s.cfg, "WithValueSchema", value, &s.cfg.value)
	}
	if s.cfg.err != nil {
		return nil, s.cfg.err
	}
	return s, nil
}

// checkIndexes refuses a framed Protobuf field whose message indexes neither the option nor
// the codec's message type gives.
func checkIndexes[T any](cfg *serializerConfig, option string, c Codec[T], f *fieldSchema) {
	if c.Format() != FormatProtobuf || f.wire == WireNone || f.hasIndexes {
		return
	}
	if _, described := c.(protoDescribed); !described {
		cfg.invalid("%s: a Protobuf codec that does not name its message type needs the message indexes (see MessageIndexesOf)", option)
	}
}

// Record returns a record for topic with key and value encoded and framed.
func (s *Serializer[K, V]) Record(ctx context.Context, topic string, key K, value V) (*kgo.Record, error) {
	k, err := encode(ctx, s.key, key, &s.cfg.key, s.cfg.compress)
	if err != nil {
		return nil, fmt.Errorf("codec: key for %s: %w", topic, err)
	}
	v, err := encode(ctx, s.value, value, &s.cfg.value, s.cfg.compress)
	if err != nil {
		return nil, fmt.Errorf("codec: value for %s: %w", topic, err)
	}
	return &kgo.Record{Topic: topic, Key: k, Value: v}, nil
}

// Tombstone returns a record for topic with key encoded and framed and a null value: the
// deletion marker of a compacted topic.
func (s *Serializer[K, V]) Tombstone(ctx context.Context, topic string, key K) (*kgo.Record, error) {
	k, err := encode(ctx, s.key, key, &s.cfg.key, s.cfg.compress)
	if err != nil {
		return nil, fmt.Errorf("codec: key for %s: %w", topic, err)
	}
	return &kgo.Record{Topic: topic, Key: k}, nil
}

func encode[T any](ctx context.Context, c Codec[T], v T, f *fieldSchema, compress bool) ([]byte, error) {
	var schema *Schema
	if f.wire != WireNone {
		schema = &Schema{ID: f.id, Format: c.Format()}
	}
	var indexes []int
	// A Protobuf payload is framed with its message indexes, which the deserializers of
	// every language read: they come from the options, or from the codec's message type. A
	// Protobuf codec of another package that names no type cannot be framed without them.
	isProto := c.Format() == FormatProtobuf
	if isProto && f.wire != WireNone {
		pd, described := c.(protoDescribed)
		switch {
		case f.hasIndexes:
			indexes = f.indexes
		case described:
			indexes = MessageIndexesOf(f.wire, pd.descriptor())
		default:
			return nil, invalidOption("WithKeySchema or WithValueSchema: a Protobuf codec that does not name its message type needs the message indexes (see MessageIndexesOf)", nil)
		}
		schema.MessageIndexes = indexes
	}
	payload, err := c.Encode(ctx, v, schema)
	if err != nil {
		return nil, err
	}
	switch f.wire {
	case WireConfluent:
		return AppendConfluent(nil, f.confluent, indexes, payload)
	case WireGlue:
		if isProto {
			body, err := AppendGlueMessageIndex(make([]byte, 0, len(payload)+5), indexes[0])
			if err != nil {
				return nil, err
			}
			payload = append(body, payload...)
		}
		return AppendGlue(nil, f.id, compress, payload)
	}
	return payload, nil
}
