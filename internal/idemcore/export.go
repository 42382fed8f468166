package idemcore

import "time"

// What package idempotency's DynamoDB store uses of the engine, as functions rather than
// exported methods, so that the types idempotency names (Entry, Format) gain no methods.

// InvalidOption is the error of a store option given an invalid value, from a message
// "Option(value): why"; it matches ErrInvalidOption.
func InvalidOption(msg string) error { return invalidOption(msg) }

// ValidFormat reports whether f is one of the formats.
func ValidFormat(f Format) bool { return f.valid() }

// DefaultPrefix is the default prefix of stored IDs: the function's name, or "idempotency"
// outside Lambda.
func DefaultPrefix() string { return defaultPrefix() }

// Live reports whether r still holds its key at now, by the store's own condition.
func Live(r *Entry, now time.Time) bool { return r.live(now) }

// MaxData is the largest result, in bytes of JSON, that Do stores.
const MaxData = maxData

// KeyID returns the stored ID Do writes for key in format under opts (WithKeyPrefix,
// WithHash), for the tests of package idempotency.
func KeyID(format Format, key string, opts ...Option) (string, error) {
	c := newConfig(opts)
	return c.id(format, key)
}

// JSJSON is the text FormatTypeScript hashes for v, for the tests of package idempotency.
func JSJSON(v any) ([]byte, error) { return jsJSON(v) }

// JSNumber formats a number as JavaScript's Number.prototype.toString, for the tests of
// package idempotency.
func JSNumber(f float64) string { return jsNumber(f) }

// Settle waits up to d for the completions that Do calls on store could not store before
// they returned, and retries since, to be stored or given up; it reports whether they were.
// For tests, which wait on it rather than on a clock.
func Settle(store Store, d time.Duration) bool { return settle(store, time.Now().Add(d)) }
