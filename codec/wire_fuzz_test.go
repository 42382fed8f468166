package codec

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// The seed corpora are in testdata/fuzz/FuzzSplit*: valid framings (Powertools fixtures'
// prefixes, indexes past one byte, compressed and not) and each kind of bad framing.

func FuzzSplitConfluent(f *testing.F) {
	f.Add([]byte{0x00, 0, 0, 0, 1, 0x02, 0x02, 0x0a, 0x00}, true)
	f.Add([]byte{0x00, 0, 0, 0, 1, 'a', 'v', 'r', 'o'}, false)
	f.Fuzz(func(t *testing.T, data []byte, protobuf bool) {
		id, indexes, payload, err := SplitConfluent(data, protobuf)
		if err != nil {
			var we *WireError
			if !errors.As(err, &we) || we.Wire != WireConfluent || we.Offset < 0 || we.Offset > len(data) {
				t.Fatalf("error %v is not a Confluent *WireError with an offset in 0..%d", err, len(data))
			}
			return
		}
		if protobuf != (indexes != nil) {
			t.Fatalf("protobuf %v but indexes %v", protobuf, indexes)
		}
		framed, err := AppendConfluent(nil, id, indexes, payload)
		if err != nil {
			t.Fatalf("AppendConfluent of what SplitConfluent accepted: %v", err)
		}
		id2, indexes2, payload2, err := SplitConfluent(framed, protobuf)
		if err != nil || id2 != id || !reflect.DeepEqual(indexes2, indexes) || !bytes.Equal(payload2, payload) {
			t.Fatalf("round trip: %d %v %q %v; want %d %v %q", id2, indexes2, payload2, err, id, indexes, payload)
		}
		if !protobuf && !bytes.Equal(framed, data) {
			t.Fatalf("round trip changed the bytes: % x, want % x", framed, data)
		}
	})
}

func FuzzSplitMessageIndexes(f *testing.F) {
	f.Add([]byte{0x00})
	f.Add([]byte{0x04, 0x04, 0x84, 0x02, 0x0a})
	f.Fuzz(func(t *testing.T, data []byte) {
		indexes, payload, err := SplitMessageIndexes(data)
		if err != nil {
			var we *WireError
			if !errors.As(err, &we) || we.Offset < 0 || we.Offset > len(data) {
				t.Fatalf("error %v is not a *WireError with an offset in 0..%d", err, len(data))
			}
			return
		}
		if len(indexes) == 0 || len(payload) > len(data) {
			t.Fatalf("indexes %v, payload %d of %d bytes", indexes, len(payload), len(data))
		}
		b, err := AppendMessageIndexes(nil, indexes)
		if err != nil {
			t.Fatalf("AppendMessageIndexes of what SplitMessageIndexes accepted: %v", err)
		}
		indexes2, payload2, err := SplitMessageIndexes(append(b, payload...))
		if err != nil || !reflect.DeepEqual(indexes2, indexes) || !bytes.Equal(payload2, payload) {
			t.Fatalf("round trip: %v %q %v; want %v %q", indexes2, payload2, err, indexes, payload)
		}
	})
}

func FuzzSplitGlueMessageIndex(f *testing.F) {
	f.Add([]byte{0x01, 0x0a, 0x03})
	f.Fuzz(func(t *testing.T, data []byte) {
		index, payload, err := SplitGlueMessageIndex(data)
		if err != nil {
			var we *WireError
			if !errors.As(err, &we) || we.Wire != WireGlue {
				t.Fatalf("error %v is not a Glue *WireError", err)
			}
			return
		}
		b, err := AppendGlueMessageIndex(nil, index)
		if err != nil {
			t.Fatalf("AppendGlueMessageIndex of what SplitGlueMessageIndex accepted: %v", err)
		}
		index2, payload2, err := SplitGlueMessageIndex(append(b, payload...))
		if err != nil || index2 != index || !bytes.Equal(payload2, payload) {
			t.Fatalf("round trip: %d %q %v; want %d %q", index2, payload2, err, index, payload)
		}
	})
}

func FuzzSplitGlue(f *testing.F) {
	uuid := []byte{0x12, 0x34, 0x56, 0x78, 0x12, 0x34, 0x12, 0x34, 0x12, 0x34, 0x12, 0x34, 0x56, 0x78, 0x90, 0x12}
	f.Add(append([]byte{0x03, 0x00}, append(uuid, "plain"...)...), uint16(64))
	if framed, err := AppendGlue(nil, testUUID, true, bytes.Repeat([]byte("abc"), 100)); err == nil {
		f.Add(framed, uint16(299)) // one byte short of the inflated size
	}
	f.Fuzz(func(t *testing.T, data []byte, maxInflated uint16) {
		limit := int(maxInflated)
		id, payload, err := SplitGlue(data, limit)
		if err != nil {
			var we *WireError
			if !errors.As(err, &we) || we.Wire != WireGlue || we.Offset < 0 || we.Offset > len(data) {
				t.Fatalf("error %v is not a Glue *WireError with an offset in 0..%d", err, len(data))
			}
			return
		}
		compressed := data[1] == 0x05
		if compressed && len(payload) > limit {
			t.Fatalf("inflated %d bytes past the cap %d", len(payload), limit)
		}
		framed, err := AppendGlue(nil, id, compressed, payload)
		if err != nil {
			t.Fatalf("AppendGlue of what SplitGlue accepted: %v", err)
		}
		if !compressed && !bytes.Equal(framed, data) {
			t.Fatalf("round trip changed the bytes: % x, want % x", framed, data)
		}
		id2, payload2, err := SplitGlue(framed, len(payload))
		if err != nil || id2 != id || !bytes.Equal(payload2, payload) {
			t.Fatalf("round trip: %q %q %v; want %q %q", id2, payload2, err, id, payload)
		}
	})
}
