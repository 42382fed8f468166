package batch

import (
	"context"
	"time"
)

// WithClock replaces the clock of the deadline checks and the sleep between retries.
var WithClock = withClock

// CallHandler runs h as the processors do, turning a panic into a *PanicError.
var CallHandler = call

// Attempt runs h with the retries that opts configure, never sleeping past deadline (zero:
// no deadline), and returns the record's final error, nil on success.
func Attempt(ctx context.Context, deadline time.Time, h func(context.Context) error, opts ...Option) error {
	c := newConfig(opts)
	if f := c.attempt(ctx, deadline, h); f != nil {
		return f.err
	}
	return nil
}
