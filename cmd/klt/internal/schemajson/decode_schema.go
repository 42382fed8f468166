package schemajson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/internal/avrojson"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// SchemaFlags are the flags that say how keys and values are encoded.
type SchemaFlags struct {
	valueSchema, keySchema string
	message, keyMessage    string
	wire                   string
	registry               string
}

// Register adds the flags that decode and produce share to fs.
func (f *SchemaFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.valueSchema, "value-schema", "", "the values' schema: an Avro `file` (.avsc) or a Protobuf file (.proto, with --message)")
	fs.StringVar(&f.keySchema, "key-schema", "", "the keys' schema, as --value-schema (`file`); keys without one are bytes")
	fs.StringVar(&f.message, "message", "", "the Protobuf message of a .proto schema, by full `name` (package.Message)")
	fs.StringVar(&f.keyMessage, "key-message", "", "the Protobuf message of --key-schema when it differs from --message (`name`)")
	fs.StringVar(&f.wire, "wire", "", "how producers framed keys and values with a schema: confluent, glue or none (`format`);\ndefault: the record's schema metadata says (the mapping took the framing off), else none")
	fs.StringVar(&f.registry, "registry", "", "a Confluent Schema Registry `URL`: the writer's schema of each value by its schema ID\n(values are Avro unless --value-schema says otherwise)")
}

// wireNames are the values of --wire.
var wireNames = map[string]codec.Wire{"none": codec.WireNone, "confluent": codec.WireConfluent, "glue": codec.WireGlue}

// parseWire returns the codec.Wire that name, a value of --wire, names.
func parseWire(name string) (codec.Wire, error) {
	w, ok := wireNames[strings.ToLower(name)]
	if !ok {
		return 0, fmt.Errorf("--wire: want confluent, glue or none, got %q", name)
	}
	return w, nil
}

// sideCodec is the codec of a key or a value as klt prints and reads it: JSON text.
type sideCodec = codec.Codec[json.RawMessage]

// loadCodec returns the codec of the schema file path (an Avro .avsc, or a Protobuf .proto whose
// message is message), or nil when path is "". flagName is the flag that named it, for errors.
func loadCodec(flagName, path, message string) (sideCodec, error) {
	if path == "" {
		return nil, nil
	}
	text, err := input.ReadFileCapped(path, input.SchemaLimit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".avsc", ".json":
		if message != "" {
			return nil, fmt.Errorf("%s %s: --message is for .proto schemas, and this one is Avro", flagName, path)
		}
		// A schema that does not parse is reported now, not once per record.
		sch, err := avro.Parse(string(text))
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flagName, path, err)
		}
		c, err := codec.Avro[any](codec.AvroSchema(string(text)))
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flagName, path, err)
		}
		return avroJSON{c: c, schema: sch, parsed: new(sync.Map)}, nil
	case ".proto":
		// Measured before it is compiled (how deep its declarations nest); what its message
		// expands to is measured by codec.ProtobufDynamic.
		if err := codec.CheckSchema(&codec.Schema{Format: codec.FormatProtobuf, Text: string(text)}); err != nil {
			return nil, fmt.Errorf("%s %s: %w", flagName, path, err)
		}
		md, err := compileProto(path, message)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flagName, path, err)
		}
		return protoJSON{codec.ProtobufDynamic(md), md}, nil
	default:
		return nil, fmt.Errorf("%s %s: want an Avro schema (.avsc) or a Protobuf file (.proto), got %q", flagName, path, ext)
	}
}

// openSchema opens a .proto file for protocompile, the one --value-schema names or one it
// imports, with what it reads capped at schemaLimit.
func openSchema(path string) (io.ReadCloser, error) {
	data, err := input.ReadFileCapped(path, input.SchemaLimit)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// compileProto compiles the .proto file path and returns its message name (the full name, or
// the short name when that is unique in the file).
func compileProto(path, name string) (protoreflect.MessageDescriptor, error) {
	dir, file := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	comp := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{dir}, Accessor: openSchema}),
	}
	files, err := comp.Compile(context.Background(), file)
	if err != nil {
		return nil, err
	}
	fd := files[0]
	var all []protoreflect.MessageDescriptor
	var walk func(protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := range ms.Len() {
			m := ms.Get(i)
			if m.IsMapEntry() {
				continue
			}
			all = append(all, m)
			walk(m.Messages())
		}
	}
	walk(fd.Messages())
	if name == "" {
		if len(all) == 1 {
			return all[0], nil
		}
		return nil, fmt.Errorf("the file has %d messages; say which with --message (%s)", len(all), messageNames(all))
	}
	var found []protoreflect.MessageDescriptor
	for _, m := range all {
		if string(m.FullName()) == name || string(m.Name()) == name {
			found = append(found, m)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("no message %q; the file has %s", name, messageNames(all))
	}
	return nil, fmt.Errorf("message name %q is ambiguous; give the full name (%s)", name, messageNames(found))
}

// messageNames lists the full names of ms.
func messageNames(ms []protoreflect.MessageDescriptor) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = string(m.FullName())
	}
	return strings.Join(names, ", ")
}

// avroJSON decodes Avro into JSON text, and encodes JSON text as Avro, in the form the event
// source mapping's JSON mode delivers (package avrojson, which the mapping emulator shares).
type avroJSON struct {
	c      codec.Codec[any]
	schema avro.Schema // the schema of --value-schema or --key-schema; nil with --registry alone
	parsed *sync.Map   // a registry's schema text -> avro.Schema, parsed once
}

func (a avroJSON) Format() string { return a.c.Format() }

func (a avroJSON) Decode(ctx context.Context, payload []byte, s *codec.Schema) (json.RawMessage, error) {
	v, err := a.c.Decode(ctx, payload, s)
	if err != nil {
		return nil, err
	}
	// The writer's schema the value was decoded with: the registry's, which takes precedence
	// (see codec.WithRegistry), else the file's.
	sch := a.schema
	if s != nil && s.Text != "" && a.parsed != nil {
		if x, ok := a.parsed.Load(s.Text); ok {
			sch = x.(avro.Schema)
		} else if sch, err = avro.ParseWithCache(s.Text, "", &avro.SchemaCache{}); err != nil {
			return nil, fmt.Errorf("the registry's schema %s: %w", s.ID, err)
		} else {
			a.parsed.Store(s.Text, sch)
		}
	}
	if sch == nil {
		return nil, errors.New("klt: no Avro schema to print the value with")
	}
	b, err := avrojson.Append(nil, sch, v)
	if err != nil {
		return nil, fmt.Errorf("the decoded value has no JSON form: %w", err)
	}
	return b, nil
}

func (a avroJSON) Encode(ctx context.Context, v json.RawMessage, s *codec.Schema) ([]byte, error) {
	if a.schema == nil {
		return nil, errors.New("klt: no Avro schema to encode with")
	}
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return nil, err
	}
	x, err := avrojson.FromJSON(a.schema, x, "")
	if err != nil {
		return nil, err
	}
	return a.c.Encode(ctx, x, s)
}

// protoJSON decodes Protobuf into JSON text (the proto3 JSON mapping, protojson), and encodes
// such JSON text as Protobuf.
type protoJSON struct {
	c  codec.Codec[*dynamicpb.Message]
	md protoreflect.MessageDescriptor
}

func (p protoJSON) Format() string { return p.c.Format() }

func (p protoJSON) Decode(ctx context.Context, payload []byte, s *codec.Schema) (json.RawMessage, error) {
	m, err := p.c.Decode(ctx, payload, s)
	if err != nil {
		return nil, err
	}
	return protojson.Marshal(m)
}

func (p protoJSON) Encode(ctx context.Context, v json.RawMessage, s *codec.Schema) ([]byte, error) {
	m := dynamicpb.NewMessage(p.md)
	if err := protojson.Unmarshal(v, m); err != nil {
		return nil, fmt.Errorf("not a %s in JSON: %w", p.md.FullName(), err)
	}
	return p.c.Encode(ctx, m, s)
}

// Codecs returns the key and value codecs the flags name (nil for a side without a schema:
// its bytes are printed as they are) and the options of a codec.Deserializer for them.
func (f *SchemaFlags) Codecs() (key, value sideCodec, opts []codec.DeserializerOption, err error) {
	keyMessage := f.keyMessage
	if keyMessage == "" && f.keySchema != "" && strings.EqualFold(filepath.Ext(f.keySchema), ".proto") {
		keyMessage = f.message
	}
	if f.keyMessage != "" && f.keySchema == "" {
		return nil, nil, nil, errors.New("--key-message needs --key-schema")
	}
	valueMessage := f.message
	if valueMessage != "" && !strings.EqualFold(filepath.Ext(f.valueSchema), ".proto") && !strings.EqualFold(filepath.Ext(f.keySchema), ".proto") {
		return nil, nil, nil, errors.New("--message needs a .proto schema (--value-schema or --key-schema)")
	}
	if !strings.EqualFold(filepath.Ext(f.valueSchema), ".proto") {
		valueMessage = ""
	}
	if key, err = loadCodec("--key-schema", f.keySchema, keyMessage); err != nil {
		return nil, nil, nil, err
	}
	if value, err = loadCodec("--value-schema", f.valueSchema, valueMessage); err != nil {
		return nil, nil, nil, err
	}
	if f.registry != "" {
		reg, err := codec.NewConfluentRegistry(f.registry)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--registry: %w", err)
		}
		opts = append(opts, codec.WithRegistry(reg))
		if value == nil {
			// The registry has the writer's schema of every value: Avro.
			c, err := codec.Avro[any]() // decode only: no schema to encode with
			if err != nil {
				return nil, nil, nil, err
			}
			value = avroJSON{c: c, parsed: new(sync.Map)}
		}
	}
	if f.wire != "" {
		w, err := parseWire(f.wire)
		if err != nil {
			return nil, nil, nil, err
		}
		if key != nil {
			opts = append(opts, codec.WithKeyWire(w))
		}
		if value != nil {
			opts = append(opts, codec.WithValueWire(w))
		}
	}
	return key, value, opts, nil
}

// rawSide is the codec of a side that has no schema: decode never asks it for a value, and
// produce sends the line's bytes as they are.
type rawSide struct{}

func (rawSide) Format() string { return codec.FormatRaw }

func (rawSide) Decode(_ context.Context, payload []byte, _ *codec.Schema) (json.RawMessage, error) {
	return nil, errors.New("klt: no schema for this side")
}

func (rawSide) Encode(_ context.Context, v json.RawMessage, _ *codec.Schema) ([]byte, error) {
	return v, nil
}

// OrRaw returns c, or rawSide when c is nil.
func OrRaw(c sideCodec) sideCodec {
	if c == nil {
		return rawSide{}
	}
	return c
}
