package idemcore

import (
	"context"
	"crypto/md5"
	"fmt"
	"hash"
	"os"
	"strings"
	"time"
)

// Option is documented as idempotency.Option, the name users see.
type Option func(*config)

type config struct {
	prefix       string
	expiry       time.Duration
	maxLease     time.Duration // 0: no cap beyond the context's deadline
	defaultLease time.Duration
	margin       time.Duration
	newHash      func() hash.Hash
	onReplay     func(ctx context.Context, r *Entry)
	storeResult  bool
	now          func() time.Time
	err          error // the first invalid option
}

func (c *config) invalid(format string, args ...any) {
	if c.err == nil {
		c.err = invalidOption(fmt.Sprintf(format, args...))
	}
}

// optionError is the error of an option given an invalid value, from a message
// "Option(value): why": "idempotency: WithXxx(v): invalid option: why".
type optionError struct{ option, why string }

func invalidOption(msg string) error {
	opt, why, _ := strings.Cut(msg, ": ")
	return &optionError{option: opt, why: why}
}

func (e *optionError) Error() string {
	return "idempotency: " + e.option + ": invalid option: " + e.why
}
func (e *optionError) Is(target error) bool { return target == ErrInvalidOption }

// DisabledEnv is documented as idempotency.DisabledEnv, the name users see.
const DisabledEnv = "POWERTOOLS_IDEMPOTENCY_DISABLED"

// WithKeyPrefix is documented as idempotency.WithKeyPrefix, the name users see.
func WithKeyPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithExpiry is documented as idempotency.WithExpiry, the name users see.
func WithExpiry(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.invalid("WithExpiry(%v): want a positive duration", d)
		}
		c.expiry = d
	}
}

// WithMaxLease is documented as idempotency.WithMaxLease, the name users see.
func WithMaxLease(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.invalid("WithMaxLease(%v): want a positive duration", d)
		}
		c.maxLease = d
	}
}

// WithDefaultLease is documented as idempotency.WithDefaultLease, the name users see.
func WithDefaultLease(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.invalid("WithDefaultLease(%v): want a positive duration", d)
		}
		c.defaultLease = d
	}
}

// WithDeadlineMargin is documented as idempotency.WithDeadlineMargin, the name users see.
func WithDeadlineMargin(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("WithDeadlineMargin(%v): want 0 or more", d)
		}
		c.margin = d
	}
}

// WithHash is documented as idempotency.WithHash, the name users see.
func WithHash(newHash func() hash.Hash) Option {
	return func(c *config) {
		if newHash == nil {
			c.invalid("WithHash(nil): want a hash constructor such as sha256.New")
		}
		c.newHash = newHash
	}
}

// WithReplayHook is documented as idempotency.WithReplayHook, the name users see.
func WithReplayHook(hook func(ctx context.Context, r *Entry)) Option {
	return func(c *config) {
		if hook == nil {
			c.invalid("WithReplayHook(nil): want a function")
		}
		c.onReplay = hook
	}
}

// WithoutResult is documented as idempotency.WithoutResult, the name users see.
func WithoutResult() Option { return func(c *config) { c.storeResult = false } }

// WithClock is documented as idempotency.WithClock, the name users see.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now == nil {
			c.invalid("WithClock(nil): want a function such as time.Now")
		}
		c.now = now
	}
}

func newConfig(opts []Option) config {
	c := config{
		prefix:       defaultPrefix(),
		expiry:       time.Hour,
		defaultLease: 5 * time.Minute,
		margin:       100 * time.Millisecond,
		newHash:      md5.New,
		storeResult:  true,
		now:          time.Now,
	}
	for _, o := range opts {
		if o == nil {
			c.invalid("Option(nil): want an option")
			continue
		}
		o(&c)
	}
	return c
}

// defaultPrefix is the function's name, or "idempotency" outside Lambda.
func defaultPrefix() string {
	if p := os.Getenv("AWS_LAMBDA_FUNCTION_NAME"); p != "" {
		return p
	}
	return "idempotency"
}

// disabled reports whether the kill switch is on. A value that is neither true nor false is
// an error: Do cannot tell whether it should run fn without the store.
func disabled() (bool, error) {
	v, ok := os.LookupEnv(DisabledEnv)
	if !ok {
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "t", "true", "y", "yes", "on":
		return true, nil
	case "", "0", "f", "false", "n", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%w: %s=%q is neither true (1, t, true, y, yes, on) nor false (0, f, false, n, no, off)",
		ErrInvalidOption, DisabledEnv, v)
}
