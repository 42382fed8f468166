package esm

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/internal/registrytest"
)

// FuzzKafkaSchemaEncode feeds producers' bytes, framed for the local registry's schemas (1
// Avro, 2 Protobuf, 3 JSON Schema) or not framed at all, to a mapping validating keys and
// values in JSON and in SOURCE delivery, and for issue 27's schemas that expand past codec's
// limits (4 JSON Schema, 5 Avro, 6 Protobuf), whose every record fails at once. Whatever the
// bytes, encodeRecord returns a record that is valid JSON, or a condition and no record;
// never a panic, never both, never a hang.
func FuzzKafkaSchemaEncode(f *testing.F) {
	cs := registrytest.NewConfluent(f)
	cs.Add(1, registrytest.Schema{Text: orderAvro})
	cs.Add(2, registrytest.Schema{Type: "PROTOBUF", Text: orderProto})
	cs.Add(3, registrytest.Schema{Type: "JSON", Text: orderJSONSchema})
	cs.Add(4, registrytest.Schema{Type: "JSON", Text: expandingJSONSchema(22)})
	cs.Add(5, registrytest.Schema{Text: expandingAvro(24)})
	cs.Add(6, registrytest.Schema{Type: "PROTOBUF", Text: expandingProto(20)})
	frame := func(id uint32, payload []byte) []byte {
		return append(binary.BigEndian.AppendUint32([]byte{0}, id), payload...)
	}
	for id := range uint32(7) {
		for _, p := range [][]byte{nil, {0}, {2, 0, 0}, []byte(`{"orderId":1}`), []byte("1"), []byte(strings.Repeat("[", 100_000)),
			bytes.Repeat([]byte{0xff}, 1<<16), append([]byte{0x80}, bytes.Repeat([]byte{0xff}, 9)...)} {
			f.Add(frame(id, p), frame(id, p))
		}
	}
	f.Add([]byte("not framed"), []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		for _, format := range []string{recordFormatJSON, recordFormatSource} {
			m, err := NewKafka([]string{"127.0.0.1:1"}, "orders", InvokerFunc(func(context.Context, []byte) (Response, error) {
				return Response{}, nil
			}), WithSchemaRegistry(SchemaRegistryConfig{SchemaRegistryURI: cs.URL, EventRecordFormat: format,
				Attributes: []string{attributeKey, attributeValue}}))
			if err != nil {
				t.Fatal(err)
			}
			js, cond, err := m.encodeRecord(context.Background(), &kgo.Record{Topic: "orders", Key: key, Value: value})
			switch {
			case err != nil:
				t.Fatalf("%s: the registry answers, yet: %v", format, err)
			case cond != "" && js != nil:
				t.Fatalf("%s: condition %s with a record", format, cond)
			case cond == "" && !json.Valid(js):
				t.Fatalf("%s: not JSON: %.200s", format, js)
			}
		}
	})
}
