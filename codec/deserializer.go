package codec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/kafkalambda/toolkit"
)

// DefaultMaxInflated is the default cap on the inflated size of a Glue zlib payload
// ([WithMaxInflated]): 8 MiB, above the largest record a Kafka event can carry (6 MB).
const DefaultMaxInflated = 8 << 20

// ErrNoSchema is wrapped by the error of an Avro key or value whose writer schema is unknown:
// the codec was given no [AvroSchema], and no [Registry] could be asked ([WithRegistry]) or the
// record names no schema ID. It is a configuration error: it is not marked permanent.
var ErrNoSchema = errors.New("codec: no writer schema")

// A DeserializerOption configures a [Deserializer], as a [SerializerOption] does a
// [Serializer] and an [AvroOption] an [Avro] codec.
type DeserializerOption func(*config)

type config struct {
	keyWire, valueWire Wire
	registry           Registry
	maxInflated        int
	err                error // the first invalid option, while NewDeserializer applies them
}

func (c *config) invalid(format string, args ...any) {
	if c.err == nil {
		c.err = invalidOption(fmt.Sprintf(format, args...), nil)
	}
}

// invalidOption is the error of an option given an invalid value, from a message
// "Option(value): why": a *toolkit.OptionError, "codec: invalid option Option(value): why".
// err, when set, is the error the why comes from (a schema parser's), kept for errors.As.
func invalidOption(msg string, err error) error {
	opt, why, _ := strings.Cut(msg, ": ")
	return &toolkit.OptionError{Package: "codec", Option: opt, Reason: why, Err: err}
}

func validWire(w Wire) bool { return w == WireNone || w == WireConfluent || w == WireGlue }

// WithWire sets the wire format of keys and values alike, for records that carry no schema
// metadata (when the event source mapping has a schema registry, the metadata decides and the
// wire format is not used). The default is [WireNone]: the bytes are the payload.
func WithWire(w Wire) DeserializerOption {
	return func(c *config) {
		if !validWire(w) {
			c.invalid("WithWire(%d): unknown wire format", int(w))
		}
		c.keyWire, c.valueWire = w, w
	}
}

// WithKeyWire sets the wire format of keys only (see [WithWire]); the default is [WireNone].
func WithKeyWire(w Wire) DeserializerOption {
	return func(c *config) {
		if !validWire(w) {
			c.invalid("WithKeyWire(%d): unknown wire format", int(w))
		}
		c.keyWire = w
	}
}

// WithValueWire sets the wire format of values only (see [WithWire]); the default is
// [WireNone].
func WithValueWire(w Wire) DeserializerOption {
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
func WithRegistry(r Registry) DeserializerOption {
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
func WithMaxInflated(n int) DeserializerOption {
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
// [Deserializer.Func].
type Deserializer[K, V any] struct {
	cfg   config
	key   fieldDecoder[K]
	value fieldDecoder[V]

	// block is where Record takes its Records from (see recordBlock).
	block atomic.Pointer[recordBlock[K, V]]
}

// NewDeserializer returns a Deserializer decoding keys with key and values with value. A nil
// codec or an option given an invalid value is a *toolkit.OptionError (it matches
// toolkit.ErrInvalidOption) that names it, and no Deserializer.
func NewDeserializer[K, V any](key Codec[K], value Codec[V], opts ...DeserializerOption) (*Deserializer[K, V], error) {
	d := &Deserializer[K, V]{cfg: config{maxInflated: DefaultMaxInflated}}
	if key == nil || value == nil {
		d.cfg.invalid("NewDeserializer(%s, %s): want a key codec and a value codec", nilOr(key == nil), nilOr(value == nil))
	}
	for _, o := range opts {
		if o == nil {
			d.cfg.invalid("DeserializerOption(nil): want an option")
			continue
		}
		o(&d.cfg)
	}
	if d.cfg.err != nil {
		return nil, d.cfg.err
	}
	d.key.init(key, fieldKey, d.cfg.keyWire)
	d.value.init(value, fieldValue, d.cfg.valueWire)
	return d, nil
}

// nilOr is how an option's error shows a codec argument: "nil" or "codec".
func nilOr(isNil bool) string {
	if isNil {
		return "nil"
	}
	return "codec"
}

// isDecimal reports whether s is a Confluent schema ID: decimal digits that fit 32 bits.
func isDecimal(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

// isUUID reports whether s is a Glue schema version ID: a UUID in canonical form.
func isUUID(s string) bool {
	if len(s) != 36 { // before parseUUID, whose error for a Confluent ID costs a message
		return false
	}
	_, err := parseUUID(s)
	return err == nil
}
