package idempotency

import (
	"context"
	"crypto/md5"
	"fmt"
	"hash"
	"os"
	"strings"
	"time"

	"github.com/kafkalambda/toolkit"
)

// Option configures one call of [Do]. An invalid option (a duration of zero or less, a nil
// function) makes Do fail with a *toolkit.OptionError (matching toolkit.ErrInvalidOption)
// before it touches the store or runs fn.
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

// invalid records the first invalid option: option is its name, reason says what is wrong
// with the value it was given.
func (c *config) invalid(option, reason string, args ...any) {
	if c.err == nil {
		c.err = optionError(option, fmt.Sprintf(reason, args...))
	}
}

// optionError is the error of an option, or a setting, given a value Do cannot use:
// "idempotency: invalid option WithExpiry: want a positive duration, not 0s".
func optionError(option, reason string) error {
	return &toolkit.OptionError{Package: "idempotency", Option: option, Reason: reason}
}

// DisabledEnv is the environment variable that turns idempotency off, as in Powertools: when
// it is set to a true value (1, t, true, y, yes, on, in any case), Do just calls fn; a false
// value (0, f, false, n, no, off) or no value leaves it on, and anything else makes Do fail
// (it cannot tell which was meant).
const DisabledEnv = "POWERTOOLS_IDEMPOTENCY_DISABLED"

// WithKeyPrefix sets the prefix of stored IDs, "<prefix>#<hash of the key>". The default is
// the function's name (AWS_LAMBDA_FUNCTION_NAME), or "idempotency" outside Lambda. Entries
// are found again only under the same prefix: to share entries with a Powertools function,
// use the prefix it uses (Python: its key_prefix, or "<function name>.<module>.<function>"
// for a decorated function other than the handler; TypeScript: its keyPrefix, or the
// function name for a handler). The empty prefix is allowed and gives "#<hash>".
func WithKeyPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithExpiry sets how long a completed entry is replayed, counted from the completion (as
// Powertools sets it when it saves the success); d must be positive. The default is 1 hour,
// as in Powertools. It does not shorten a lease: an in-progress entry expires no earlier
// than its lease ends.
func WithExpiry(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.invalid("WithExpiry", "want a positive duration, not %v", d)
		}
		c.expiry = d
	}
}

// WithMaxLease caps how long an in-progress entry blocks other callers past the last sign of
// life of the call that holds it; d must be positive. The lease written at the claim ends at
// the context's deadline (the Lambda timeout), or d after the claim if that is earlier, so
// that a function that crashes or times out frees the key. While fn runs past half its lease
// (or half of d before its end), and while a completion that could not be stored is retried,
// Do renews the lease (Store.Renew) to d from then (without WithMaxLease, to as long as the
// claim's lease was, between 1 and 30 s), as long as the process runs: a handler that
// ignores its context keeps its key after the deadline, so a redelivery waits for it rather
// than running fn beside it. When a renewal fails until the lease ends, fn's context ends
// (cause ErrLeaseLost), and a result that then cannot be stored is ErrLeaseLost, not a
// success. A frozen process renews nothing: its key is free d after its last renewal
// (docs/idempotency.md, "Leases").
func WithMaxLease(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.invalid("WithMaxLease", "want a positive duration, not %v", d)
		}
		c.maxLease = d
	}
}

// WithDefaultLease sets the lease when the context has no deadline; d must be positive. The
// default is 5 minutes. Do then treats the lease's end as the invocation's deadline: its store
// calls end by then (less WithStoreDeadlineMargin), however long fn takes.
func WithDefaultLease(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.invalid("WithDefaultLease", "want a positive duration, not %v", d)
		}
		c.defaultLease = d
	}
}

// WithStoreDeadlineMargin sets how long before the context's deadline Do's store calls end,
// so that its caller has time to report what happened before the function times out; d must
// not be negative. The default is 100 ms. A store call still running then is abandoned: an
// acquire fails (fn does not run), a completion is ErrNotRecorded. Without a deadline the
// calls end the margin before the default lease does (WithDefaultLease). It bounds the store
// calls only, not fn; package batch's WithDeadlineMargin is when a batch stops processing.
func WithStoreDeadlineMargin(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("WithStoreDeadlineMargin", "want 0 or more, not %v", d)
		}
		c.margin = d
	}
}

// WithHash sets the hash of keys and payloads. The default is MD5, as in both Powertools
// editions; any other breaks compatibility with functions that use the default.
func WithHash(newHash func() hash.Hash) Option {
	return func(c *config) {
		if newHash == nil {
			c.invalid("WithHash", "nil: want a hash constructor such as sha256.New")
		}
		c.newHash = newHash
	}
}

// WithReplayHook calls hook each time Do returns a stored result instead of calling fn. By
// default nothing is called. Given twice, the last one counts.
func WithReplayHook(hook func(ctx context.Context, r *Entry)) Option {
	return func(c *config) {
		if hook == nil {
			c.invalid("WithReplayHook", "nil: want a function")
		}
		c.onReplay = hook
	}
}

// WithoutResult stores no result: a replay returns the zero value of T. Use it when the side
// effect matters and the result does not, or when results may exceed an item's size. By
// default the result is stored, as JSON.
func WithoutResult() Option { return func(c *config) { c.storeResult = false } }

// WithClock makes Do read the time from now. The default is time.Now. Tests use it to move
// past an expiry or a lease without waiting (see idempotencytest).
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now == nil {
			c.invalid("WithClock", "nil: want a function such as time.Now")
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
			c.invalid("Option", "nil: want an option")
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
	return false, optionError(DisabledEnv, fmt.Sprintf("%q is neither true (1, t, true, y, yes, on) nor false (0, f, false, n, no, off)", v))
}
