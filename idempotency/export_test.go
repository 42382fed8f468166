package idempotency

// Test hooks for the external tests (package idempotency_test).

// MaxData is the largest result, in bytes of JSON, that Do stores.
const MaxData = maxData

// KeyID returns the stored ID Do writes for key in format under opts (WithKeyPrefix,
// WithHash).
func KeyID(format Format, key string, opts ...Option) (string, error) {
	c := newConfig(opts)
	return c.id(format, key)
}

// JSJSON is the text FormatTypeScript hashes for v.
var JSJSON = jsJSON

// JSNumber formats a number as JavaScript's Number.prototype.toString.
var JSNumber = jsNumber
