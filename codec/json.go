package codec

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	gojson "github.com/goccy/go-json"
)

// JSON returns the codec of JSON values ([FormatJSON]) of type T, with the semantics of
// encoding/json: struct tags, case-insensitive field names, unknown fields ignored, the last of
// duplicate keys wins, numbers in an any are float64, invalid UTF-8 and lone surrogates become
// U+FFFD, and a value that is not one JSON document (or has trailing data) is an error.
//
// Decoding goes through github.com/goccy/go-json, which gives the same results as
// encoding/json (a differential test and a fuzz target in this package hold it to that) several
// times faster; a T whose methods (json.Unmarshaler, encoding.TextUnmarshaler) do the decoding
// is called as encoding/json would. Encode is encoding/json's Marshal.
//
// JSON decodes what the event source mapping delivers in its JSON mode whatever the schema
// metadata's dataFormat (the mapping has converted Avro and Protobuf to JSON), Confluent's JSON
// Schema serializer's values behind [WireConfluent], and plain JSON text.
//
// Values nest at most 10,000 levels deep (arrays and objects), as with encoding/json: a value
// nested deeper is an error that says so.
func JSON[T any]() Codec[T] { return jsonCodec[T]{} }

type jsonCodec[T any] struct{}

func (jsonCodec[T]) Format() string { return FormatJSON }

func (c jsonCodec[T]) Decode(ctx context.Context, payload []byte, s *Schema) (T, error) {
	var v T
	if err := c.decodeInto(ctx, payload, s, &v); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// jsonMaxDepth is how deep goccy/go-json lets JSON nest, as encoding/json does.
const jsonMaxDepth = 10_000

func (jsonCodec[T]) decodeInto(_ context.Context, payload []byte, _ *Schema, v *T) error {
	if err := jsonUnmarshal(payload, v); err != nil {
		// goccy/go-json's error says "exceeded max depth" without the limit, and is no
		// value or type to test for: its words are what there is.
		if strings.Contains(err.Error(), "exceeded max depth") {
			return fmt.Errorf("json: nested more than %d levels deep: %w", jsonMaxDepth, err)
		}
		return fmt.Errorf("json: %w", err)
	}
	return nil
}

func (jsonCodec[T]) Encode(_ context.Context, v T, _ *Schema) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("json: %w", err)
	}
	return b, nil
}

// jsonUnmarshal is the decoder JSON uses; tests compare it with encoding/json.
func jsonUnmarshal(data []byte, v any) error { return gojson.Unmarshal(data, v) }
