package codec_test

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/kafkalambda/toolkit/codec"
)

// A Protobuf value encodes to the same bytes every time, maps included, so that fixtures and
// tests can compare bytes (proto.Marshal alone orders map entries at random).
func TestProtobufEncodeDeterministic(t *testing.T) {
	st, err := structpb.NewStruct(map[string]any{"a": 1, "b": "x", "c": true, "d": 2.5, "e": "y", "f": "z", "g": nil, "h": "w"})
	if err != nil {
		t.Fatal(err)
	}
	c := codec.Protobuf[*structpb.Struct]()
	first, err := c.Encode(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		b, err := c.Encode(context.Background(), st, nil)
		if err != nil || !bytes.Equal(b, first) {
			t.Fatalf("encoding the same map twice gave different bytes (%v)", err)
		}
	}
}
