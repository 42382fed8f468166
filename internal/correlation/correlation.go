// Package correlation carries a correlation ID in a context: the one key that package
// lambdalog reads (its lines' "correlation_id") and package batch writes (per record, from a
// header or message attribute), so that batch sets it without linking the logger.
package correlation

import (
	"context"
	"unicode/utf8"
)

// MaxBytes caps a correlation ID: a longer one is cut at a character boundary, so that a
// header a producer filled cannot make every line of a record large.
const MaxBytes = 256

type key struct{}

// With returns ctx carrying id, cut to MaxBytes.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, Cut(id))
}

// From returns the correlation ID With put in ctx.
func From(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(key{}).(string)
	return id, ok
}

// Cut returns id cut to at most MaxBytes, at the start of a character, so that a valid UTF-8
// ID stays valid. It takes bytes too, so that a long header is cut before it is copied into a
// string.
func Cut[T string | []byte](id T) T {
	if len(id) <= MaxBytes {
		return id
	}
	n := MaxBytes
	for n > 0 && !utf8.RuneStart(id[n]) {
		n--
	}
	return id[:n]
}
