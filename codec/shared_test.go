package codec_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// fullSpy is a spy that keeps the whole Schema it is given, and the payload.
type fullSpy struct {
	format string
	mu     sync.Mutex
	seen   []string
}

func (c *fullSpy) Format() string { return c.format }
func (c *fullSpy) Decode(_ context.Context, p []byte, s *codec.Schema) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, fmt.Sprintf("%s %s %v %q", s.ID, s.Format, s.MessageIndexes, p))
	return string(p), nil
}
func (c *fullSpy) Encode(_ context.Context, v string, _ *codec.Schema) ([]byte, error) {
	return []byte(v), nil
}

// TestSchemaPerRecordSource: in SOURCE mode, each record's codec sees the schema of its own
// metadata and the message indexes of its own bytes, however the Deserializer shares Schema
// values between records that name the same one (the last record's schema serves the next
// ones alike, and only them).
func TestSchemaPerRecordSource(t *testing.T) {
	const glueID = "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"
	c := &fullSpy{format: codec.FormatProtobuf}
	d := mustDeserializer(t, codec.String(), codec.Codec[string](c))
	type in struct {
		id, format string
		value      string
	}
	ins := []in{
		{"17", "PROTOBUF", "\x00a"},             // [0]
		{"17", "PROTOBUF", "\x00b"},             // [0] again: the shared schema
		{"17", "PROTOBUF", "\x04\x02\x00c"},     // [1, 0]: count 2, then 1 and 0, zig-zag
		{"17", "PROTOBUF", "\x02\x00d"},         // [0] written as a list of one
		{"18", "PROTOBUF", "\x00e"},             // another ID
		{"17", "PROTOBUF", "\x00f"},             // back to 17
		{glueID, "PROTOBUF", "\x00g"},           // a Glue ID: one unsigned varint, 0
		{glueID, "PROTOBUF", "\x03h"},           // index 3
		{glueID, "PROTOBUF", "\x03i"},           // index 3 again
		{glueID, "PROTOBUF", "\x00j"},           // index 0
		{"17", "PROTOBUF", "\x00k"},             //
		{"19", "PROTOBUF", "\x00l"},             //
		{"19", "PROTOBUF", "\x06\x02\x04\x06m"}, // [1, 2, 3]
	}
	want := []string{
		`17 PROTOBUF [0] "a"`, `17 PROTOBUF [0] "b"`, `17 PROTOBUF [1 0] "c"`, `17 PROTOBUF [0] "d"`,
		`18 PROTOBUF [0] "e"`, `17 PROTOBUF [0] "f"`,
		glueID + ` PROTOBUF [0] "g"`, glueID + ` PROTOBUF [3] "h"`, glueID + ` PROTOBUF [3] "i"`, glueID + ` PROTOBUF [0] "j"`,
		`17 PROTOBUF [0] "k"`, `19 PROTOBUF [0] "l"`, `19 PROTOBUF [1 2 3] "m"`,
	}
	for _, x := range ins {
		r := record(nil, []byte(x.value))
		r.ValueSchema = &kafkaevent.SchemaMetadata{DataFormat: x.format, SchemaID: x.id}
		if _, err := d.Record(r).Value(ctx); err != nil {
			t.Fatalf("%q: %v", x.value, err)
		}
	}
	if !reflect.DeepEqual(c.seen, want) {
		t.Fatalf("codec saw\n%q\nwant\n%q", c.seen, want)
	}

	// A bad ID is an error however many good ones came before it.
	r := record(nil, []byte("\x00x"))
	r.ValueSchema = &kafkaevent.SchemaMetadata{DataFormat: "PROTOBUF", SchemaID: "seventeen"}
	if _, err := d.Record(r).Value(ctx); err == nil {
		t.Fatal(`schema ID "seventeen" decoded without an error`)
	}
}

// TestSchemaPerRecordGlue: the same with Glue framing, which the Deserializer reads the
// schema version UUID of as 16 bytes, compared with the last record's.
func TestSchemaPerRecordGlue(t *testing.T) {
	ids := []string{
		"0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9", "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9",
		"ffffffff-4e5f-6071-8293-a4b5c6d7e8f9", "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9",
	}
	for _, format := range []string{codec.FormatProtobuf, codec.FormatAvro} {
		c := &fullSpy{format: format}
		d := mustDeserializer(t, codec.String(), codec.Codec[string](c), codec.WithValueWire(codec.WireGlue))
		var want []string
		for i, id := range ids {
			payload := []byte{'a' + byte(i)}
			idx := ""
			if format == codec.FormatProtobuf {
				n := i % 2 // indexes 0, 1, 0, 1
				payload = append([]byte{byte(n)}, payload...)
				idx = fmt.Sprint([]int{n})
			} else {
				idx = fmt.Sprint([]int(nil))
			}
			b, err := codec.AppendGlue(nil, id, i == 3, payload)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.Record(record(nil, b)).Value(ctx); err != nil {
				t.Fatal(err)
			}
			want = append(want, fmt.Sprintf("%s  %s %q", id, idx, string(rune('a'+i))))
		}
		if !reflect.DeepEqual(c.seen, want) {
			t.Errorf("%s: codec saw\n%q\nwant\n%q", format, c.seen, want)
		}
	}
}

// TestRecordsOwnTheirFields: Records are handed out from blocks that a Deserializer shares
// between goroutines; each is a record of its own, whichever goroutine took it, and keeps
// its decoded value (run with -race).
func TestRecordsOwnTheirFields(t *testing.T) {
	d := mustDeserializer(t, codec.String(), codec.String())
	const goroutines, each = 8, 200 // several blocks of 32 each
	recs := make([][]*codec.Record[string, string], goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				r := d.Record(record(nil, fmt.Appendf(nil, "%d/%d", g, i)))
				if _, err := r.Value(ctx); err != nil {
					t.Error(err)
					return
				}
				recs[g] = append(recs[g], r)
			}
		})
	}
	wg.Wait()
	seen := map[*codec.Record[string, string]]bool{}
	for g := range goroutines {
		for i, r := range recs[g] {
			if seen[r] {
				t.Fatalf("record %d/%d handed out twice", g, i)
			}
			seen[r] = true
			if v, err := r.Value(ctx); v != fmt.Sprintf("%d/%d", g, i) || err != nil {
				t.Fatalf("record %d/%d: Value = %q, %v", g, i, v, err)
			}
		}
	}
}
