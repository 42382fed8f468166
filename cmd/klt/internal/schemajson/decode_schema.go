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
	"reflect"
	"slices"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/clitext"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/codec"
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
		return avroJSON{c, sch}, nil
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

// avroJSON decodes Avro into JSON text, and encodes JSON text as Avro.
type avroJSON struct {
	c      codec.Codec[any]
	schema avro.Schema // to give JSON numbers the Avro types they are written as
}

func (a avroJSON) Format() string { return a.c.Format() }

func (a avroJSON) Decode(ctx context.Context, payload []byte, s *codec.Schema) (json.RawMessage, error) {
	v, err := a.c.Decode(ctx, payload, s)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
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
	x, err := AvroFromJSON(a.schema, x, "")
	if err != nil {
		return nil, err
	}
	return a.c.Encode(ctx, x, s)
}

// AvroFromJSON gives the JSON value v (numbers as json.Number) the Go types the Avro schema s
// is written from: int32 and int64 for int and long, float32 and float64 for float and double,
// []byte for bytes and fixed (from a string of code points 0 to 255, Avro's JSON encoding).
// path names the place for errors.
func AvroFromJSON(s avro.Schema, v any, path string) (any, error) {
	fail := func() (any, error) {
		return nil, fmt.Errorf("%s: %s is not an Avro %s", clitext.OrDefault(path, "value"), describeJSON(v), s.Type())
	}
	switch s := s.(type) {
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return fail()
		}
		out := make(map[string]any, len(s.Fields()))
		for _, f := range s.Fields() {
			fv, present := m[f.Name()]
			if !present {
				if f.HasDefault() {
					continue
				}
				fv = nil
			}
			x, err := AvroFromJSON(f.Type(), fv, path+"."+f.Name())
			if err != nil {
				return nil, err
			}
			out[f.Name()] = x
		}
		return out, nil
	case *avro.ArraySchema:
		l, ok := v.([]any)
		if !ok {
			return fail()
		}
		out := make([]any, len(l))
		for i, e := range l {
			x, err := AvroFromJSON(s.Items(), e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return fail()
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			x, err := AvroFromJSON(s.Values(), e, path+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	case *avro.UnionSchema:
		if v == nil && s.Nullable() {
			return nil, nil
		}
		for _, t := range s.Types() {
			if t.Type() == avro.Null {
				continue
			}
			if x, err := AvroFromJSON(t, v, path); err == nil {
				return x, nil
			}
		}
		return fail()
	case *avro.FixedSchema:
		b, err := avroBytes(v, fail)
		if err != nil || len(b.([]byte)) != s.Size() {
			return fail()
		}
		// hamba/avro takes a fixed as a byte array of exactly its size.
		arr := reflect.New(reflect.ArrayOf(s.Size(), reflect.TypeFor[byte]())).Elem()
		reflect.Copy(arr, reflect.ValueOf(b))
		return arr.Interface(), nil
	case *avro.EnumSchema:
		sym, ok := v.(string)
		if !ok || !slices.Contains(s.Symbols(), sym) {
			return fail()
		}
		return sym, nil
	}
	return avroPrimitiveFromJSON(s, v, fail)
}

// avroPrimitiveFromJSON is AvroFromJSON for a schema of a primitive type; fail returns its
// error.
func avroPrimitiveFromJSON(s avro.Schema, v any, fail func() (any, error)) (any, error) {
	switch s.Type() {
	case avro.Null:
		if v != nil {
			return fail()
		}
		return nil, nil
	case avro.Boolean:
		if _, ok := v.(bool); !ok {
			return fail()
		}
		return v, nil
	case avro.String:
		if _, ok := v.(string); !ok {
			return fail()
		}
		return v, nil
	case avro.Bytes:
		return avroBytes(v, fail)
	case avro.Int, avro.Long:
		n, ok := v.(json.Number)
		if !ok {
			return fail()
		}
		i, err := n.Int64()
		if err != nil || s.Type() == avro.Int && int64(int32(i)) != i {
			return fail()
		}
		if s.Type() == avro.Int {
			return int32(i), nil
		}
		return i, nil
	case avro.Float, avro.Double:
		n, ok := v.(json.Number)
		if !ok {
			return fail()
		}
		f, err := n.Float64()
		if err != nil {
			return fail()
		}
		if s.Type() == avro.Float {
			return float32(f), nil
		}
		return f, nil
	}
	return v, nil
}

// avroBytes reads Avro's JSON encoding of bytes: a string whose code points are the bytes.
func avroBytes(v any, fail func() (any, error)) (any, error) {
	str, ok := v.(string)
	if !ok {
		return fail()
	}
	b := make([]byte, 0, len(str))
	for _, r := range str {
		if r > 255 {
			return fail()
		}
		b = append(b, byte(r))
	}
	return b, nil
}

// describeJSON names a JSON value for errors.
func describeJSON(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case json.Number:
		return "the number " + v.String()
	case string:
		return fmt.Sprintf("the string %q", v)
	case bool:
		return fmt.Sprint(v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
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
func (f *SchemaFlags) Codecs() (key, value sideCodec, opts []codec.Option, err error) {
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
			value = avroJSON{c: c}
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
