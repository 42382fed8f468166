package esm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/internal/avrojson"
)

// protoMessage is what the Protobuf codecs of registry schemas decode into.
type protoMessage = *dynamicpb.Message

// parsedSchema is a registry's schema made ready to check records with, once per schema ID:
// measured (codec.CheckSchema), then parsed or compiled, by the goroutine start starts; done
// is closed when it is ready or has failed.
type parsedSchema struct {
	text  string
	start sync.Once
	done  chan struct{}

	err    error                            // a *codec.SchemaLimitError, or wraps errUnusableSchema
	avro   avro.Schema                      // FormatAvro
	proto  protoreflect.FileDescriptor      // FormatProtobuf
	glue   []protoreflect.MessageDescriptor // FormatProtobuf: the file's messages by full name (Glue's message index)
	js     *jsonschema.Schema               // FormatJSON
	codecs sync.Map                         // FormatProtobuf: protoreflect.FullName -> codec.Codec[protoMessage], made when first used
}

// protoCodec returns the codec of md, a message of p's file, made (and measured) once.
func (p *parsedSchema) protoCodec(md protoreflect.MessageDescriptor) codec.Codec[protoMessage] {
	if c, ok := p.codecs.Load(md.FullName()); ok {
		return c.(codec.Codec[protoMessage])
	}
	c, _ := p.codecs.LoadOrStore(md.FullName(), codec.ProtobufDynamic(md))
	return c.(codec.Codec[protoMessage])
}

// errStillBuilding is wrapped by the error of a record whose schema was still being compiled
// (or its decoder built) when the check's time ran out: the record waits and is checked
// again, and finds the compilation done, or still running (never a second one).
var errStillBuilding = errors.New("the schema is still being compiled")

// schemaBuildHook, when set (by tests), is called when the preparation of a schema starts.
var schemaBuildHook atomic.Pointer[func(id string)]

// parse returns schema made ready, from the cache when its ID was made ready before, waiting
// for it at most until ctx ends.
func (s *schemaRegistry) parse(ctx context.Context, schema *codec.Schema) (*parsedSchema, error) {
	p := s.entry(schema)
	p.start.Do(func() { go p.build(schema) })
	select {
	case <-p.done:
		return p, p.err
	default:
	}
	select {
	case <-p.done:
		return p, p.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%s schema %s: %w: %w", schema.Format, schema.ID, errStillBuilding, context.Cause(ctx))
	}
}

// entry returns the entry of schema, made once per ID and text.
func (s *schemaRegistry) entry(schema *codec.Schema) *parsedSchema {
	if v, ok := s.parsed.Load(schema.ID); ok {
		if p := v.(*parsedSchema); p.text == schema.Text {
			return p
		}
	}
	p := &parsedSchema{text: schema.Text, done: make(chan struct{})}
	if v, loaded := s.parsed.LoadOrStore(schema.ID, p); loaded {
		if q := v.(*parsedSchema); q.text == schema.Text {
			return q
		}
		s.parsed.Store(schema.ID, p) // the registry's schema of this ID changed
	}
	return p
}

// build makes p ready. The schema is measured before anything is compiled from it: one over
// codec's limits (a JSON Schema whose nested anyOfs a validator would try 2^22 times) fails
// every record of it, at once. A panic in a compiler is the schema's error.
func (p *parsedSchema) build(schema *codec.Schema) {
	defer close(p.done)
	defer func() {
		if r := recover(); r != nil {
			p.err = fmt.Errorf("%w: %s schema %s: compiling it panicked: %v", errUnusableSchema, schema.Format, schema.ID, r)
		}
	}()
	if h := schemaBuildHook.Load(); h != nil {
		(*h)(schema.ID)
	}
	err := codec.CheckSchema(schema)
	if _, over := errors.AsType[*codec.SchemaLimitError](err); over {
		p.err = err
		return
	}
	if err == nil {
		switch schema.Format {
		case codec.FormatAvro:
			p.avro, err = avro.ParseWithCache(schema.Text, "", &avro.SchemaCache{})
		case codec.FormatProtobuf:
			err = p.compileProto(schema)
		case codec.FormatJSON:
			err = p.compileJSONSchema(schema)
		}
	}
	if err != nil {
		p.err = fmt.Errorf("%w: %s schema %s: %w", errUnusableSchema, schema.Format, schema.ID, err)
	}
}

// compileProto compiles the .proto source of schema, which may import the well-known types
// (google/protobuf/*.proto) and nothing else: imports of other subjects are references, which
// codec's registries refuse.
func (p *parsedSchema) compileProto(schema *codec.Schema) error {
	name := "registry/" + schema.ID + ".proto"
	comp := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(map[string]string{name: schema.Text}),
		}),
		MaxParallelism: 1,
	}
	files, err := comp.Compile(context.Background(), name)
	if err != nil {
		return err
	}
	p.proto = files[0]
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			p.glue = append(p.glue, ms.Get(i))
			walk(ms.Get(i).Messages())
		}
	}
	walk(p.proto.Messages())
	slices.SortFunc(p.glue, func(a, b protoreflect.MessageDescriptor) int {
		return cmp.Compare(a.FullName(), b.FullName())
	})
	if len(p.glue) == 0 {
		return fmt.Errorf("the .proto file defines no message")
	}
	return nil
}

// compileJSONSchema compiles a JSON Schema document. It may refer to itself and to the
// drafts' meta-schemas only: nothing is loaded from files or the network.
func (p *parsedSchema) compileJSONSchema(schema *codec.Schema) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(schema.Text)))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	loc := "urn:klt:registry:" + schema.ID
	if err := c.AddResource(loc, doc); err != nil {
		return err
	}
	p.js, err = c.Compile(loc)
	return err
}

// decodeAvro decodes an Avro binary payload with the writer's schema.
func (s *schemaRegistry) decodeAvro(ctx context.Context, schema *codec.Schema, p *parsedSchema, payload []byte) ([]byte, error) {
	v, err := s.avro.Decode(ctx, payload, schema)
	if err != nil {
		if ctx.Err() != nil {
			// codec builds the decoder once per schema, and was still at it.
			return nil, fmt.Errorf("%w: %w", errStillBuilding, err)
		}
		return nil, err
	}
	if !s.json {
		return payload, nil
	}
	return avrojson.Append(nil, p.avro, v)
}

// decodeProtobuf decodes a Protobuf payload, message indexes first, with the writer's .proto.
func (s *schemaRegistry) decodeProtobuf(ctx context.Context, p *parsedSchema, payload []byte) ([]byte, error) {
	var md protoreflect.MessageDescriptor
	var msg []byte
	if s.glue {
		i, rest, err := codec.SplitGlueMessageIndex(payload)
		if err != nil {
			return nil, err
		}
		if i >= len(p.glue) {
			return nil, fmt.Errorf("protobuf: message index %d, and the schema has %d messages", i, len(p.glue))
		}
		md, msg = p.glue[i], rest
	} else {
		idx, rest, err := codec.SplitMessageIndexes(payload)
		if err != nil {
			return nil, err
		}
		ms := p.proto.Messages()
		for n, i := range idx {
			if i >= ms.Len() {
				return nil, fmt.Errorf("protobuf: message indexes %v: no message %d at level %d (%d there)", idx, i, n, ms.Len())
			}
			md = ms.Get(i)
			ms = md.Messages()
		}
		msg = rest
	}
	m, err := p.protoCodec(md).Decode(ctx, msg, nil)
	if err != nil {
		return nil, err
	}
	if !s.json {
		return payload, nil
	}
	out, err := protojson.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("protobuf: %s to JSON: %w", md.FullName(), err)
	}
	// protojson varies its spacing on purpose; the event's bytes should not vary.
	var b bytes.Buffer
	if err := json.Compact(&b, out); err != nil {
		return nil, fmt.Errorf("protobuf: %s to JSON: %w", md.FullName(), err)
	}
	return b.Bytes(), nil
}

// decodeJSON checks a JSON payload against its JSON Schema. The validator has no context,
// and a value can make it try many branches of a schema within the limits: it runs on a
// goroutine of its own, and a value it has not validated when ctx ends fails validation.
func (s *schemaRegistry) decodeJSON(ctx context.Context, p *parsedSchema, payload []byte) ([]byte, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("json: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("the validator panicked: %v", r)
			}
		}()
		done <- p.js.Validate(inst)
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = fmt.Errorf("not validated within the check's time (the registry's Timeout, %v): %w", s.timeout, context.Cause(ctx))
	}
	if err != nil {
		return nil, fmt.Errorf("json: %w", err)
	}
	return payload, nil
}
