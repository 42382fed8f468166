package idempotency

import (
	"time"

	"github.com/kafkalambda/toolkit/internal/completion"
)

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
func JSJSON(v any) ([]byte, error) { return jsJSON(v) }

// JSNumber formats a number as JavaScript's Number.prototype.toString.
func JSNumber(f float64) string { return jsNumber(f) }

// Settle waits up to d for the completions Do could not store before it returned, retried
// since on store, to be stored or given up; it reports whether they were.
func Settle(store Store, d time.Duration) bool { return completion.Settle(store, d) }
