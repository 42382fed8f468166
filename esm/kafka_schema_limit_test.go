package esm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/internal/registrytest"
)

// expandingJSONSchema is the JSON Schema of issue 27: D_i = anyOf[{$ref D_i+1}, {$ref
// D_i+1}], the last {"type":"string"}: 1.3 KB at 22 levels, 2^22 branches for a validator to
// try on the payload 1.
func expandingJSONSchema(levels int) string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/definitions/D0","definitions":{`)
	for i := range levels {
		fmt.Fprintf(&b, `"D%d":{"anyOf":[{"$ref":"#/definitions/D%d"},{"$ref":"#/definitions/D%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"D%d":{"type":"string"}}}`, levels)
	return b.String()
}

// expandingAvro is the Avro schema of issue 27: Root {x, f0: T1, f1: T1}, each Ti {a: Ti+1,
// b: Ti+1}, the last {n: null}.
func expandingAvro(levels int) string {
	var b strings.Builder
	b.WriteString(`{"type":"record","name":"Root","fields":[{"name":"x","type":"long"},{"name":"f0","type":`)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, `{"type":"record","name":"T%d","fields":[{"name":"a","type":`, i)
	}
	fmt.Fprintf(&b, `{"type":"record","name":"T%d","fields":[{"name":"n","type":"null"}]}`, levels+1)
	for i := levels; i >= 1; i-- {
		fmt.Fprintf(&b, `},{"name":"b","type":"T%d"}]}`, i+1)
	}
	b.WriteString(`},{"name":"f1","type":"T1"}]}`)
	return b.String()
}

// expandingProto is a .proto file whose message M0 holds two M1, each Mi two Mi+1.
func expandingProto(levels int) string {
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\npackage x;\n")
	for i := range levels {
		fmt.Fprintf(&b, "message M%d { M%d a = 1; M%d b = 2; }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "message M%d { string s = 1; }\n", levels)
	return b.String()
}

// countSchemaBuilds counts the schemas the mapping prepares while the test runs; when gate is
// not nil, each preparation waits for it to close.
func countSchemaBuilds(t *testing.T, gate chan struct{}) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	h := func(string) {
		n.Add(1)
		if gate != nil {
			<-gate
		}
	}
	schemaBuildHook.Store(&h)
	t.Cleanup(func() { schemaBuildHook.Store(nil) })
	return &n
}

// TestKafkaSchemaOverLimits is issue 27's second attack, and the first one in the mapping: a
// registry's schema that expands past codec's limits fails its records with
// DESERIALIZATION_ERROR at once, without compiling it, and the next record of that schema
// gets the same failure from the cache. On main the JSON Schema's validation took 17 s at 20
// levels and did not end at 22: the poller hung on the record.
//
// AWS: records that fail the registry's validation go to the on-failure destination with
// DESERIALIZATION_ERROR (field-2026.md, "failures SCHEMA_NOT_FOUND / DESERIALIZATION_ERROR to
// the destination"); a schema the mapping refuses to compile is a validation it cannot pass.
func TestKafkaSchemaOverLimits(t *testing.T) {
	f := newSchemaFixture(t)
	f.cs.Add(4, registrytest.Schema{Type: "JSON", Text: expandingJSONSchema(22)})
	f.cs.Add(5, registrytest.Schema{Text: expandingAvro(24)})
	f.cs.Add(6, registrytest.Schema{Type: "PROTOBUF", Text: expandingProto(20)})
	builds := countSchemaBuilds(t, nil)
	var logged bytes.Buffer
	m := schemaMapping(t, SchemaRegistryConfig{SchemaRegistryURI: f.cs.URL, EventRecordFormat: recordFormatJSON, Attributes: []string{attributeValue},
		logger: slog.New(slog.NewTextHandler(&logged, nil))})
	for _, c := range []struct {
		name  string
		value []byte
	}{
		{"JSON Schema, 22 levels of anyOf", f.confluent(4, nil, []byte("1"))},
		{"Avro, 24 levels", f.confluent(5, nil, []byte{0})},
		{"Protobuf, 20 levels", f.confluent(6, []int{0}, nil)},
	} {
		for i := range 2 {
			logged.Reset()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			b, cond, err := m.encodeRecord(ctx, &kgo.Record{Topic: "orders", Value: c.value, Offset: 3})
			cancel()
			if err != nil || cond != ConditionDeserializationError || b != nil {
				t.Errorf("%s, record %d: condition %q, error %v; want DESERIALIZATION_ERROR", c.name, i, cond, err)
			}
			if line := logged.String(); strings.Count(line, "\n") != 1 || !strings.Contains(line, "over the limit") {
				t.Errorf("%s, record %d: log %q, want one line naming the limit", c.name, i, line)
			}
		}
	}
	if n := builds.Load(); n != 3 {
		t.Errorf("%d schema preparations for 3 schemas and 6 records, want 3", n)
	}
}

// TestKafkaSchemaMappingOverLimits runs the mapping on kfake with issue 27's JSON Schema (22
// levels) behind the first record: the mapping moves on, the record goes alone to the
// on-failure destination with DESERIALIZATION_ERROR, the next one is delivered, both are
// committed. On main the poller hung on the first record.
func TestKafkaSchemaMappingOverLimits(t *testing.T) {
	sf := newSchemaFixture(t)
	sf.cs.Add(4, registrytest.Schema{Type: "JSON", Text: expandingJSONSchema(22)})
	f := newKafkaFixture(t, "orders", 1, "orders-dlt")
	bad := sf.confluent(4, nil, []byte("1"))
	f.produce(&kgo.Record{Key: []byte("k0"), Value: bad}, &kgo.Record{Key: []byte("k1"), Value: sf.confluent(1, nil, sf.avro(newTestOrder()))})
	fn := newKafkaFunction(t, nil)
	m := newKafkaMapping(t, f, fn, WithGroupID("g"), WithOnFailure(OnFailureKafkaTopic("orders-dlt")),
		WithSchemaRegistry(SchemaRegistryConfig{SchemaRegistryURI: sf.cs.URL, EventRecordFormat: recordFormatJSON, Attributes: []string{attributeValue}}))
	runKafka(t, m)
	kafkaWaitFor(t, 15*time.Second, "offset 2 committed", func() bool { return f.committed("g", 1)[0] == 2 })
	if got := fn.delivered(); len(got) != 1 || got[0] != testOrderJSON {
		t.Errorf("delivered %q, want the valid record alone", got)
	}
	msgs := readTopic(t, f, "orders-dlt", 1)
	rec := decodeOFD(t, msgs[0])
	if c := path(rec, "requestContext", "condition"); c != ConditionDeserializationError || string(msgs[0].Key) != "k0" {
		t.Errorf("on-failure record: key %q condition %v, want k0 %s", msgs[0].Key, c, ConditionDeserializationError)
	}
}

// TestKafkaSchemaCompileAbandoned: a schema whose compilation is still running when the
// check's time (the registry's Timeout) ends makes the record wait and be checked again, as a
// registry that does not answer does; the records that come meanwhile wait for the same
// compilation, never start another, and pass once it is done.
func TestKafkaSchemaCompileAbandoned(t *testing.T) {
	f := newSchemaFixture(t)
	gate := make(chan struct{})
	builds := countSchemaBuilds(t, gate)
	m := schemaMapping(t, SchemaRegistryConfig{SchemaRegistryURI: f.cs.URL, EventRecordFormat: recordFormatSource, Attributes: []string{attributeValue},
		timeout: 100 * time.Millisecond})
	value := f.confluent(3, nil, []byte(`{"id":"o-1"}`))
	for i := range 2 {
		_, cond, err := m.encodeRecord(context.Background(), &kgo.Record{Topic: "orders", Value: value})
		if !errors.Is(err, errStillBuilding) || cond != "" {
			t.Errorf("record %d while the schema compiles: condition %q, error %v; want errStillBuilding", i, cond, err)
		}
	}
	close(gate)
	if _, cond := encoded(t, m, &kgo.Record{Value: value}); cond != "" {
		t.Errorf("once compiled: condition %q, want the record delivered", cond)
	}
	if n := builds.Load(); n != 1 {
		t.Errorf("schema compiled %d times, want once", n)
	}
}
