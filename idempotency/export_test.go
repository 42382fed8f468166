package idempotency

// Test hooks for the external tests (package idempotency_test).

// WithClock makes Do read the time from now instead of time.Now.
var WithClock = withClock

// MaxData is the largest result, in bytes of JSON, that Do stores.
const MaxData = maxData

// KeyID returns the stored ID Do writes for key under opts (WithKeyPrefix, WithHash).
func KeyID(key string, opts ...Option) (string, error) {
	c := newConfig(opts)
	return c.id(key)
}
