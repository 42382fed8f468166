package schemajson

import (
	"context"
	"flag"
	"testing"

	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/internal/registrytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// TestDecodeAvroFromRegistry: with --registry and no --value-schema, a value is printed with
// the registry's schema of its ID, in the form the mapping delivers in JSON mode (fields in
// the schema's order, a union as its branch's value, bytes as code points).
func TestDecodeAvroFromRegistry(t *testing.T) {
	const schema = `{"type":"record","name":"R","fields":[{"name":"z","type":"string"},{"name":"a","type":["null","long"]},{"name":"b","type":"bytes"}]}`
	cs := registrytest.NewConfluent(t)
	cs.Add(3, registrytest.Schema{Text: schema})
	enc, err := codec.Avro[map[string]any](codec.AvroSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	payload, err := enc.Encode(context.Background(), map[string]any{"z": "x", "a": map[string]any{"long": int64(7)}, "b": []byte{0xe9}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	framed, err := codec.AppendConfluent(nil, 3, nil, payload)
	if err != nil {
		t.Fatal(err)
	}

	var f SchemaFlags
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	f.Register(fs)
	if err := fs.Parse([]string{"--registry", cs.URL, "--wire", "confluent"}); err != nil {
		t.Fatal(err)
	}
	key, value, opts, err := f.Codecs()
	if err != nil {
		t.Fatal(err)
	}
	d, err := codec.NewDeserializer(OrRaw(key), OrRaw(value), opts...)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second time, the registry's schema is parsed already
		v, err := d.Record(&kafkaevent.Record{Topic: "t", Value: framed}).Value(context.Background())
		if want := `{"z":"x","a":7,"b":"é"}`; err != nil || string(v) != want {
			t.Fatalf("decoded %s, %v; want %s", v, err, want)
		}
	}
}
