package codec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/hamba/avro/v2"
)

// An AvroOption configures an [Avro] codec.
type AvroOption func(*avroConfig)

type avroConfig struct {
	text   string
	schema avro.Schema
	guard  *avroGuard
	err    error // the first invalid option, while Avro applies them
}

// AvroSchema gives the Avro codec the writer's schema (Avro JSON), for records whose schema a
// registry does not give ([WithRegistry] takes precedence when the record carries a schema ID).
// The schema is parsed and measured when the codec is made; a schema that does not parse, or
// is over a limit of [SchemaLimitError], makes [Avro] return a *toolkit.OptionError
// wrapping the parser's error or the *SchemaLimitError. By default the codec has
// no schema of its own and needs a registry.
func AvroSchema(text string) AvroOption {
	return func(c *avroConfig) {
		s, err := parseAvro(text)
		if err != nil {
			if c.err == nil {
				c.err = invalidOption("AvroSchema: the schema does not parse", err)
			}
			return
		}
		if err := measureAvro(s).check(FormatAvro, ""); err != nil {
			if c.err == nil {
				c.err = invalidOption("AvroSchema", err)
			}
			return
		}
		c.text, c.schema, c.guard = text, s, newAvroGuard(s)
	}
}

// Avro returns the codec of Avro binary values ([FormatAvro]) of type T, through
// github.com/hamba/avro/v2: T is filled from the writer's schema by its `avro:"name"` struct
// tags (or is a map[string]any, or a type the schema maps to directly); fields of the writer's
// schema that T lacks are skipped, fields of T the schema lacks are left as they are.
//
// The writer's schema is the registry's for the record's schema ID ([WithRegistry]), else the
// one given with [AvroSchema]; without either, Decode fails with [ErrNoSchema]. Schemas from a
// registry are parsed once per ID. Decoding must use every byte of the payload: a payload that
// ends early (which hamba/avro's Unmarshal would take as a success, zeroing the rest) or has
// bytes left over is an error, and so is a string or bytes field over 8 MiB or an array of
// more than 1,048,576 items (limits that a payload cannot make the decoder allocate past).
// A value of a recursive schema (a record that holds itself, through a union, an array or
// a map) nested more than 10,000 levels deep (records, arrays and maps), and a value with
// more than 65,536 array items that take no bytes (null, a fixed of size 0, a record of
// those), are errors found before any of it is decoded: without these limits a 6 MB value
// of a linked-list schema overflows the stack, a fatal error that no recover sees, and 42
// bytes of nested arrays of nulls are 8 million values. A value decoded into a T that holds
// interfaces or maps (any, map[string]any), where each record, item or entry costs a map or
// a boxed value, may have at most 262,144 of them (about 100 MB decoded). Within these
// limits, what a value makes the decoder allocate is proportional to its size. A schema
// that needs no check (most do not), decoded into a T of structs, slices and scalars, is
// decoded by hamba/avro directly, at no cost.
// Encode writes v with the same schema.
//
// An option given an invalid value (a schema that does not parse) is a *toolkit.OptionError
// (it matches toolkit.ErrInvalidOption), and no codec.
func Avro[T any](opts ...AvroOption) (Codec[T], error) {
	c := &avroCodec[T]{dynamic: holdsDynamic(reflect.TypeFor[T](), map[reflect.Type]bool{})}
	for _, o := range opts {
		if o == nil {
			if c.cfg.err == nil {
				c.cfg.err = invalidOption("AvroOption(nil): want an option", nil)
			}
			continue
		}
		o(&c.cfg)
	}
	if c.cfg.err != nil {
		return nil, c.cfg.err
	}
	if c.cfg.schema != nil {
		c.own = &avroParsed{text: c.cfg.text, done: make(chan struct{}), schema: c.cfg.schema, guard: c.cfg.guard}
	}
	return c, nil
}

type avroCodec[T any] struct {
	cfg     avroConfig
	own     *avroParsed // the AvroSchema's; nil without one
	parsed  sync.Map    // schema ID -> *avroParsed
	dynamic bool        // T holds interfaces or maps: values are counted (avroMaxValues)
}

// avroParsed is a writer's schema made ready for decoding into T: parsed, measured, its
// guard found and hamba/avro's decoder built, once, by the goroutine start starts; done is
// closed when it is ready or has failed (err: why; the error of every record of the schema).
type avroParsed struct {
	text  string
	start sync.Once
	done  chan struct{}

	schema avro.Schema
	guard  *avroGuard
	err    error
}

func (*avroCodec[T]) Format() string { return FormatAvro }

// parseAvro parses text with a cache of its own: hamba/avro's default cache is global, and
// would mix up two versions of a named type.
func parseAvro(text string) (avro.Schema, error) {
	return avro.ParseWithCache(text, "", &avro.SchemaCache{})
}

// schema returns the writer's schema for s, ready (see avroParsed), waiting for it at most
// until ctx ends.
func (c *avroCodec[T]) schema(ctx context.Context, s *Schema) (*avroParsed, error) {
	p, id, err := c.entry(s)
	if err != nil {
		return nil, err
	}
	p.start.Do(func() { go c.prepare(p, id) })
	select {
	case <-p.done:
		return p, p.err
	default:
	}
	select {
	case <-p.done:
		return p, p.err
	case <-ctx.Done():
		return nil, fmt.Errorf("codec: Avro schema %s: its decoder is still being built (the records of this schema wait for the same build): %w", id, context.Cause(ctx))
	}
}

// entry returns the entry of s's schema, and the ID errors name it by: the registry's schema
// by its ID, made once per ID and text, else the codec's own.
func (c *avroCodec[T]) entry(s *Schema) (*avroParsed, string, error) {
	if s == nil || s.Text == "" {
		if c.own == nil {
			id := ""
			if s != nil && s.ID != "" {
				id = " for schema " + s.ID
			}
			return nil, "", fmt.Errorf("%w%s: give the codec AvroSchema, or the Deserializer a registry", ErrNoSchema, id)
		}
		return c.own, "(AvroSchema)", nil
	}
	if v, ok := c.parsed.Load(s.ID); ok {
		if p := v.(*avroParsed); p.text == s.Text {
			return p, s.ID, nil
		}
	}
	p := &avroParsed{text: s.Text, done: make(chan struct{})}
	if v, loaded := c.parsed.LoadOrStore(s.ID, p); loaded {
		if q := v.(*avroParsed); q.text == s.Text {
			return q, s.ID, nil // another record of this schema came first
		}
		c.parsed.Store(s.ID, p) // the registry's schema of this ID changed: the newest wins
	}
	return p, s.ID, nil
}

// avroBuildHook, when set (by tests), is called when the preparation of a schema starts.
var avroBuildHook atomic.Pointer[func(id string)]

// prepare makes p ready: parses and measures its text (unless AvroSchema did), finds its
// guard, and has hamba/avro build its decoder into T, which it otherwise does on the first
// ReadVal, all at once, however long that takes. A panic in hamba/avro is p's error.
func (c *avroCodec[T]) prepare(p *avroParsed, id string) {
	defer close(p.done)
	defer func() {
		if r := recover(); r != nil {
			p.err = fmt.Errorf("codec: Avro schema %s: building its decoder panicked: %v", id, r)
		}
	}()
	if h := avroBuildHook.Load(); h != nil {
		(*h)(id)
	}
	if p.schema == nil {
		sch, err := parseAvro(p.text)
		if err != nil {
			p.err = fmt.Errorf("codec: Avro schema %s does not parse: %w", id, err)
			return
		}
		if err := measureAvro(sch).check(FormatAvro, id); err != nil {
			p.err = err
			return
		}
		p.schema, p.guard = sch, newAvroGuard(sch)
	}
	// ReadVal into a nil *T builds the decoder (and caches it in avroAPI, where decodeInto's
	// ReadVal finds it), then refuses the nil pointer without reading anything: decoding
	// even an empty payload could recurse without end (a record that holds itself).
	r := avroReaders.Get().(*avro.Reader)
	defer func() {
		r.Reset(nil)
		avroReaders.Put(r)
	}()
	r.Error = nil
	r.Reset(nil)
	var none *T
	r.ReadVal(p.schema, none)
}

// Limits on what one Avro value may make the decoder allocate, whatever its bytes claim.
const (
	avroMaxBytes = 8 << 20 // a string or bytes field: 8 MiB (hamba/avro's default is 1 MiB)
	avroMaxItems = 1 << 20 // the items of one array field
)

// avroAPI is hamba/avro's configuration with those limits: without avroMaxItems, a 9-byte
// payload whose array block claims 10^12 items makes the decoder allocate them (found by
// FuzzDeserialize).
var avroAPI = avro.Config{MaxByteSliceSize: avroMaxBytes, MaxSliceAllocSize: avroMaxItems}.Freeze()

var avroReaders = sync.Pool{New: func() any { return avro.NewReader(nil, 0, avro.WithReaderConfig(avroAPI)) }}

// errAvroTruncated is the cause of a payload that ends before the schema says it does.
var errAvroTruncated = errors.New("avro: payload ends early")

func (c *avroCodec[T]) Decode(ctx context.Context, payload []byte, s *Schema) (T, error) {
	var v T
	if err := c.decodeInto(ctx, payload, s, &v); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

func (c *avroCodec[T]) decodeInto(ctx context.Context, payload []byte, s *Schema, v *T) error {
	p, err := c.schema(ctx, s)
	if err != nil {
		return err
	}
	sch, guard := p.schema, p.guard
	if guard != nil || c.dynamic {
		if guard == nil {
			guard = noGuard
		}
		if err := guard.check(payload, sch, c.dynamic); err != nil {
			return err
		}
	}
	r := avroReaders.Get().(*avro.Reader)
	defer func() {
		r.Reset(nil)
		avroReaders.Put(r)
	}()
	r.Error = nil
	r.Reset(payload)
	r.ReadVal(sch, v)
	if r.Error != nil {
		if errors.Is(r.Error, io.EOF) {
			return fmt.Errorf("%w (%d bytes)", errAvroTruncated, len(payload))
		}
		return r.Error
	}
	if r.Peek(); r.Error == nil {
		return fmt.Errorf("avro: bytes left over after the value (%d-byte payload)", len(payload))
	}
	return nil
}

func (c *avroCodec[T]) Encode(ctx context.Context, v T, s *Schema) ([]byte, error) {
	p, err := c.schema(ctx, s)
	if err != nil {
		return nil, err
	}
	b, err := avroAPI.Marshal(p.schema, v)
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	return b, nil
}
