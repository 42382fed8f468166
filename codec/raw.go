package codec

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrInvalidUTF8 is the error of the [String] codec on bytes that are not valid UTF-8.
var ErrInvalidUTF8 = errors.New("codec: invalid UTF-8")

// Bytes returns the codec of raw bytes ([FormatRaw]): Decode returns the payload itself, not a
// copy (it shares the record's memory, which lives as long as the event), and Encode returns v.
func Bytes() Codec[[]byte] { return bytesCodec{} }

type bytesCodec struct{}

func (bytesCodec) Format() string { return FormatRaw }

func (bytesCodec) Decode(_ context.Context, payload []byte, _ *Schema) ([]byte, error) {
	return payload, nil
}

func (bytesCodec) Encode(_ context.Context, v []byte, _ *Schema) ([]byte, error) { return v, nil }

// String returns the codec of UTF-8 text ([FormatRaw]). Bytes that are not valid UTF-8 are
// an error wrapping [ErrInvalidUTF8] that gives the offset of the first bad byte, both ways:
// a string is never silently given replacement characters (Java's StringDeserializer would).
// Use [Bytes] for keys and values that are not text.
func String() Codec[string] { return stringCodec{} }

type stringCodec struct{}

func (stringCodec) Format() string { return FormatRaw }

func (stringCodec) Decode(_ context.Context, payload []byte, _ *Schema) (string, error) {
	if err := checkUTF8(payload); err != nil {
		return "", err
	}
	return string(payload), nil
}

func (stringCodec) Encode(_ context.Context, v string, _ *Schema) ([]byte, error) {
	b := []byte(v)
	if err := checkUTF8(b); err != nil {
		return nil, err
	}
	return b, nil
}

func checkUTF8(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return fmt.Errorf("%w at byte %d of %d", ErrInvalidUTF8, i, len(b))
		}
		i += n
	}
	return ErrInvalidUTF8
}
