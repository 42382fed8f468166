package schemajson

// This file gives "klt produce" the serialisers of package codec: values and keys written as
// JSON in the record lines are encoded with an Avro or Protobuf schema and framed as a Java or
// Python producer with a schema registry serialiser would frame them.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsonl"
	"github.com/kafkalambda/toolkit/codec"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ProduceSchemaFlags are the serialisation flags of "klt produce".
type ProduceSchemaFlags struct {
	valueSchema, keySchema string
	message, keyMessage    string
	wire                   string
	valueID, keyID         string
	compress               bool
}

func (f *ProduceSchemaFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.valueSchema, "value-schema", "", "encode each line's value (JSON) with this schema: an Avro `file` (.avsc) or a\nProtobuf file (.proto, with --message)")
	fs.StringVar(&f.keySchema, "key-schema", "", "encode each line's key the same way (`file`)")
	fs.StringVar(&f.message, "message", "", "the Protobuf message of a .proto schema (`name`)")
	fs.StringVar(&f.keyMessage, "key-message", "", "the Protobuf message of --key-schema when it differs from --message (`name`)")
	fs.StringVar(&f.wire, "wire", "none", "frame encoded keys and values as a registry serialiser does: confluent, glue or\nnone (`format`)")
	fs.StringVar(&f.valueID, "value-schema-id", "", "the schema `ID` the framing names for values: a Confluent ID, or a Glue schema\nversion UUID")
	fs.StringVar(&f.keyID, "key-schema-id", "", "the schema `ID` for keys, as --value-schema-id")
	fs.BoolVar(&f.compress, "compress", false, "--wire glue: deflate the payloads with zlib (compression byte 5)")
}

// Serializer returns the serialiser the flags describe, or nil when they ask for none.
func (f *ProduceSchemaFlags) Serializer() (*codec.Serializer[json.RawMessage, json.RawMessage], error) {
	if f.valueSchema == "" && f.keySchema == "" {
		for name, set := range map[string]bool{"--value-schema-id": f.valueID != "", "--key-schema-id": f.keyID != "",
			"--message": f.message != "", "--key-message": f.keyMessage != "", "--compress": f.compress, "--wire": f.wire != "none"} {
			if set {
				return nil, fmt.Errorf("%s needs --value-schema or --key-schema", name)
			}
		}
		return nil, nil
	}
	wire, err := parseWire(f.wire)
	if err != nil {
		return nil, err
	}
	if f.compress && wire != codec.WireGlue {
		return nil, errors.New("--compress is for --wire glue")
	}
	keyMessage := f.keyMessage
	if keyMessage == "" {
		keyMessage = f.message
	}
	key, err := loadCodec("--key-schema", f.keySchema, keyMessage)
	if err != nil {
		return nil, err
	}
	value, err := loadCodec("--value-schema", f.valueSchema, f.message)
	if err != nil {
		return nil, err
	}
	var opts []codec.SerializerOption
	for _, side := range []struct {
		name, schema, id string
		set              func(codec.Wire, string, ...int) codec.SerializerOption
	}{{"value", f.valueSchema, f.valueID, codec.WithValueSchema}, {"key", f.keySchema, f.keyID, codec.WithKeySchema}} {
		switch {
		case wire == codec.WireNone && side.id != "":
			return nil, fmt.Errorf("--%s-schema-id: the schema ID goes in a frame; say which with --wire", side.name)
		case wire != codec.WireNone && side.schema != "" && side.id == "":
			return nil, fmt.Errorf("--wire %s: give --%s-schema-id, the ID the frame names", f.wire, side.name)
		case wire != codec.WireNone && side.schema != "":
			c := value
			if side.name == "key" {
				c = key
			}
			var indexes []int
			if p, ok := c.(protoJSON); ok { // the framing names the message, as a serialiser's does
				indexes = codec.MessageIndexesOf(wire, p.md)
			}
			opts = append(opts, side.set(wire, side.id, indexes...))
		}
	}
	if f.compress {
		opts = append(opts, codec.WithCompression())
	}
	return codec.NewSerializer(OrRaw(key), OrRaw(value), opts...)
}

// Serialize encodes the key and value of lr into kr as s says. A null value stays null (a
// tombstone), and so does a null key.
func Serialize(ctx context.Context, s *codec.Serializer[json.RawMessage, json.RawMessage], lr *jsonl.Record, kr *kgo.Record) error {
	var key, value json.RawMessage
	if lr.Record.Key != nil {
		key = lr.Record.Key
	}
	if lr.Record.Value != nil {
		value = lr.Record.Value
	}
	var enc *kgo.Record
	var err error
	if value == nil {
		enc, err = s.Tombstone(ctx, kr.Topic, key)
	} else {
		enc, err = s.Record(ctx, kr.Topic, key, value)
	}
	if err != nil {
		return err
	}
	if lr.Record.Key == nil {
		enc.Key = nil
	}
	kr.Key, kr.Value = enc.Key, enc.Value
	return nil
}
