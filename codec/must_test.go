package codec_test

import (
	"testing"

	"github.com/kafkalambda/toolkit/codec"
)

// The constructors of codec return an error for an invalid option; these are them for
// options a test knows to be valid: an error fails the test.

func mustAvro[T any](tb testing.TB, opts ...codec.AvroOption) codec.Codec[T] {
	tb.Helper()
	c, err := codec.Avro[T](opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func mustDeserializer[K, V any](tb testing.TB, key codec.Codec[K], value codec.Codec[V], opts ...codec.DeserializerOption) *codec.Deserializer[K, V] {
	tb.Helper()
	d, err := codec.NewDeserializer(key, value, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func mustSerializer[K, V any](tb testing.TB, key codec.Codec[K], value codec.Codec[V], opts ...codec.SerializerOption) *codec.Serializer[K, V] {
	tb.Helper()
	s, err := codec.NewSerializer(key, value, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
