package codec_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/codec/internal/testpb"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// Hostile records: each must be a *DecodeError on that record alone, found in bounded time
// and memory, never a crash of the function (a stack overflow is a fatal error no recover
// sees: the batch is redelivered and crashes again, and the partition is stuck).

// nodeSchema is a linked list: each level of nesting costs a payload 2 bytes.
const nodeSchema = `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}`

type avroNode struct {
	V    int32     `avro:"v"`
	Next *avroNode `avro:"next"`
}

// nodes is the payload of a list of n nodes (v = 0): "00 02" n-1 times, then "00 00".
func nodes(n int) []byte {
	return append(bytes.Repeat([]byte{0, 2}, n-1), 0, 0)
}

// allocated returns the bytes the heap allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// hostileValue decodes value as the value of a record with d, and checks that it is a
// permanent *DecodeError whose text has want, decoded allocating at most twice the payload's
// size and 64 KiB (the error; goccy/go-json copies the payload): the stated bound, hostile
// values are refused before they are decoded.
func hostileValue[K, V any](t *testing.T, d *codec.Deserializer[K, V], value []byte, meta *kafkaevent.SchemaMetadata, want string) {
	t.Helper()
	r := record(nil, value)
	r.ValueSchema = meta
	var err error
	n := allocated(func() { _, err = d.Record(r).Value(ctx) })
	var de *codec.DecodeError
	if !errors.As(err, &de) || !permanent(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%d-byte value: error %v, want a permanent *DecodeError saying %q", len(value), err, want)
	}
	if n > 2*uint64(len(value))+64<<10 {
		t.Errorf("%d-byte value: decoding allocated %d bytes, over twice the payload's size and 64 KiB", len(value), n)
	}
}

// TestAvroRecursionBound: a value of a recursive schema nested past 10,000 levels is a
// *DecodeError naming the limit, whether the schema is the codec's own or a registry's, and
// whatever the Go type; up to the limit it decodes.
func TestAvroRecursionBound(t *testing.T) {
	const want = "nested more than 10000 levels"
	typed := mustDeserializer(t, codec.Bytes(), mustAvro[avroNode](t, codec.AvroSchema(nodeSchema)))
	generic := mustDeserializer(t, codec.Bytes(), mustAvro[map[string]any](t, codec.AvroSchema(nodeSchema)))
	reg := &memRegistry{schemas: map[string]*codec.Schema{"7": {ID: "7", Format: codec.FormatAvro, Text: nodeSchema}}}
	registry := mustDeserializer(t, codec.Bytes(), mustAvro[map[string]any](t), codec.WithRegistry(reg))
	meta := &kafkaevent.SchemaMetadata{DataFormat: codec.FormatAvro, SchemaID: "7"}

	// 1 MB: 861 MB and 5 s in hamba/avro; 6 MB: "fatal error: stack overflow".
	for _, size := range []int{1 << 20, 6 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			p := nodes(size / 2)
			hostileValue(t, generic, p, nil, want)
			hostileValue(t, typed, p, nil, want)
			hostileValue(t, registry, p, meta, want)
		})
	}

	t.Run("limit", func(t *testing.T) {
		v, err := typed.Record(record(nil, nodes(10_000))).Value(ctx)
		if err != nil {
			t.Fatalf("10,000 levels: %v", err)
		}
		n := 0
		for p := &v; p != nil; p = p.Next {
			n++
		}
		if n != 10_000 {
			t.Fatalf("10,000 levels decoded as %d", n)
		}
		hostileValue(t, typed, nodes(10_001), nil, want)
	})

	// A record that holds itself with no way out has no finite value: every payload is
	// refused, none recurses without end.
	t.Run("endless", func(t *testing.T) {
		endless := mustDeserializer(t, codec.Bytes(), mustAvro[map[string]any](t, codec.AvroSchema(
			`{"type":"record","name":"Loop","fields":[{"name":"self","type":"Loop"}]}`)))
		hostileValue(t, endless, []byte{}, nil, want)
		hostileValue(t, endless, []byte{0}, nil, want)
	})

	// A tree through an array: each level is a block count.
	t.Run("tree", func(t *testing.T) {
		tree := mustDeserializer(t, codec.Bytes(), mustAvro[map[string]any](t, codec.AvroSchema(
			`{"type":"record","name":"Tree","fields":[{"name":"kids","type":{"type":"array","items":"Tree"}}]}`)))
		if _, err := tree.Record(record(nil, []byte{4, 0, 0, 0})).Value(ctx); err != nil {
			t.Fatalf("a tree of two leaves: %v", err)
		}
		deep := append(bytes.Repeat([]byte{2}, 1<<20), bytes.Repeat([]byte{0}, 1<<20+1)...)
		hostileValue(t, tree, deep, nil, want)
	})
}

// TestAvroEmptyItems: items that take no bytes cannot make a few bytes of payload a
// billion values: more than 65,536 of them in one value is a *DecodeError naming the limit.
func TestAvroEmptyItems(t *testing.T) {
	const want = "more than 65536 array items that take no bytes"
	for _, schema := range []string{
		`{"type":"array","items":{"type":"array","items":"null"}}`,
		`{"type":"array","items":{"type":"array","items":{"type":"record","name":"E","fields":[{"name":"n","type":"null"}]}}}`,
		`{"type":"array","items":{"type":"array","items":{"type":"fixed","name":"F","size":0}}}`,
	} {
		d := mustDeserializer(t, codec.Bytes(), mustAvro[any](t, codec.AvroSchema(schema)))
		// 8 inner arrays, each a block of 1,048,576 items: 42 bytes.
		p := []byte{16}
		for range 8 {
			p = append(p, 0x80, 0x80, 0x80, 0x01, 0)
		}
		p = append(p, 0)
		hostileValue(t, d, p, nil, want)
		if _, err := d.Record(record(nil, []byte{2, 0x80, 0x08, 0, 0})).Value(ctx); err != nil {
			t.Fatalf("%s: 512 items: %v", schema, err)
		}
	}
}

// TestAvroDynamicValues: into a map[string]any, each record costs a map: a value may have at
// most 262,144 records, items and entries. Into a struct, the same value decodes, in
// memory of the order of its size.
func TestAvroDynamicValues(t *testing.T) {
	const schema = `{"type":"array","items":{"type":"record","name":"R","fields":[{"name":"a","type":"boolean"}]}}`
	// 1,048,576 one-boolean records: 385 times its size in map[string]any.
	p := append([]byte{0x80, 0x80, 0x80, 0x01}, bytes.Repeat([]byte{1}, 1<<20)...)
	p = append(p, 0)
	hostileValue(t, mustDeserializer(t, codec.Bytes(), mustAvro[any](t, codec.AvroSchema(schema))), p, nil, "more than 262144 values")
	hostileValue(t, mustDeserializer(t, codec.Bytes(), mustAvro[[]map[string]any](t, codec.AvroSchema(schema))), p, nil, "more than 262144 values")

	type rec struct {
		A bool `avro:"a"`
	}
	d := mustDeserializer(t, codec.Bytes(), mustAvro[[]rec](t, codec.AvroSchema(schema)))
	var v []rec
	var err error
	n := allocated(func() { v, err = d.Record(record(nil, p)).Value(ctx) })
	if err != nil || len(v) != 1<<20 || !v[0].A {
		t.Fatalf("into []struct: %d items, %v", len(v), err)
	}
	if n > 4*uint64(len(p)) {
		t.Errorf("into []struct: %d bytes allocated for a %d-byte value, over 4 times its size", n, len(p))
	}
}

// protoChain is a Tree nested n levels deep through next (field 2).
func protoChain(n int) []byte {
	var rev []byte // built from the innermost message out, backwards
	for range n {
		l := binary.AppendUvarint(nil, uint64(len(rev)))
		slices.Reverse(l)
		rev = append(append(rev, l...), 0x12)
	}
	slices.Reverse(rev)
	return rev
}

// TestProtobufBounds: messages and groups nest at most 10,000 levels (protobuf's limit, named
// in the error); a value of a million empty messages costs at most 64 times its size.
func TestProtobufBounds(t *testing.T) {
	const want = "nested more than 10000 levels deep"
	d := mustDeserializer(t, codec.Bytes(), codec.Protobuf[*testpb.Tree]())
	dyn := mustDeserializer(t, codec.Bytes(), codec.ProtobufDynamic((&testpb.Tree{}).ProtoReflect().Descriptor()))
	chain := protoChain(1 << 20) // 4.7 MB
	hostileValue(t, d, chain, nil, want)
	hostileValue(t, dyn, chain, nil, want)
	// 6 MB of groups of an unknown field 99, start-group tags then as many end-group tags:
	// protobuf skips unknown fields within the same limit, but its error does not say so.
	groups := append(bytes.Repeat([]byte{0x9b, 0x06}, 3<<19), bytes.Repeat([]byte{0x9c, 0x06}, 3<<19)...)
	hostileValue(t, d, groups, nil, "invalid wire-format data")
	hostileValue(t, dyn, groups, nil, "invalid wire-format data")
	if v, err := d.Record(record(nil, protoChain(9_999))).Value(ctx); err != nil || v.Next == nil {
		t.Fatalf("9,999 levels: %v", err)
	}

	kids := bytes.Repeat([]byte{0x1a, 0}, 3<<20) // 6 MB: 3,145,728 empty kids
	var v *testpb.Tree
	var err error
	n := allocated(func() { v, err = d.Record(record(nil, kids)).Value(ctx) })
	if err != nil || len(v.Kids) != 3<<20 {
		t.Fatalf("empty kids: %v", err)
	}
	if n > 64*uint64(len(kids)) {
		t.Errorf("%d bytes allocated for a %d-byte value, over 64 times its size", n, len(kids))
	}
}

// TestJSONBounds: JSON nests at most 10,000 levels, named in the error, into any type; a value
// of a million empty objects costs at most 64 times its size.
func TestJSONBounds(t *testing.T) {
	const want = "nested more than 10000 levels deep"
	type shallow struct {
		A int `json:"a"`
	}
	generic := mustDeserializer(t, codec.Bytes(), codec.JSON[any]())
	typed := mustDeserializer(t, codec.Bytes(), codec.JSON[shallow]())
	open := bytes.Repeat([]byte("["), 6<<20)
	balanced := append(bytes.Repeat([]byte(`{"a":`), 10_001), append([]byte("1"), bytes.Repeat([]byte("}"), 10_001)...)...)
	for _, p := range [][]byte{open, balanced, append([]byte(`{"x":`), open...)} {
		hostileValue(t, generic, p, nil, want)
		hostileValue(t, typed, p, nil, want)
	}
	ok := append(bytes.Repeat([]byte("["), 9_999), bytes.Repeat([]byte("]"), 9_999)...)
	if _, err := generic.Record(record(nil, ok)).Value(ctx); err != nil {
		t.Fatalf("9,999 levels: %v", err)
	}

	objs := append(append([]byte("["), bytes.Repeat([]byte("{},"), 2<<20)...), "{}]"...) // 6 MB
	var err error
	n := allocated(func() { _, err = generic.Record(record(nil, objs)).Value(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	if n > 64*uint64(len(objs)) {
		t.Errorf("%d bytes allocated for a %d-byte value, over 64 times its size", n, len(objs))
	}
}

// TestGlueBomb: a Glue zlib payload of 64 KiB that inflates to 64 MiB is a *DecodeError
// wrapping ErrInflatedTooLarge, found allocating at most three times the cap (8 MiB; the
// buffer doubles up to it).
func TestGlueBomb(t *testing.T) {
	framed, err := codec.AppendGlue(nil, glueID, true, make([]byte, 64<<20))
	if err != nil {
		t.Fatal(err)
	}
	d := mustDeserializer(t, codec.Bytes(), codec.Bytes(), codec.WithWire(codec.WireGlue))
	var v []byte
	n := allocated(func() { v, err = d.Record(record(nil, framed)).Value(ctx) })
	var de *codec.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, codec.ErrInflatedTooLarge) || v != nil {
		t.Fatalf("%d-byte bomb: %d bytes, %v", len(framed), len(v), err)
	}
	if n > 3*codec.DefaultMaxInflated+1<<20 {
		t.Errorf("%d-byte bomb: %d bytes allocated, over three times the cap", len(framed), n)
	}
}
