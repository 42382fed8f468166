package parameters

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/kafkalambda/toolkit"
)

// Defaults of every provider.
const (
	// DefaultMaxAge is how long a value is served from the cache before the next Get fetches
	// it again: 5 seconds, Powertools' default (POWERTOOLS_PARAMETERS_MAX_AGE sets it for the
	// process, in seconds; [WithMaxAge] for one provider).
	DefaultMaxAge = 5 * time.Second
	// DefaultTimeout bounds a fetch (the SDK's retries included) whose context has no
	// deadline. With a deadline, the deadline alone bounds it.
	DefaultTimeout = 5 * time.Second
)

// EnvMaxAge is Powertools' variable for the cache's max age, in whole seconds.
const EnvMaxAge = "POWERTOOLS_PARAMETERS_MAX_AGE"

// Option configures a provider. Each is defined once and applies to [NewSSM], [NewSecrets]
// and [NewAppConfig] alike.
type Option func(*config)

type config struct {
	maxAge    time.Duration
	maxAgeSet bool
	timeout   time.Duration
	now       func() time.Time
	errs      []error
}

// WithMaxAge is how long a fetched value is served from the cache; after it the next Get
// fetches again. Zero fetches on every Get (concurrent Gets of one name still share one
// fetch); negative is an error. Default: $POWERTOOLS_PARAMETERS_MAX_AGE seconds, else
// [DefaultMaxAge].
func WithMaxAge(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.errs = append(c.errs, &toolkit.OptionError{Package: "parameters", Option: "WithMaxAge", Reason: fmt.Sprintf("negative max age %v", d)})
			return
		}
		c.maxAge, c.maxAgeSet = d, true
	}
}

// WithTimeout bounds a fetch whose context has no deadline (the SDK's retries included); it
// must be positive. A context with a deadline is bounded by it alone. Default:
// [DefaultTimeout].
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs = append(c.errs, &toolkit.OptionError{Package: "parameters", Option: "WithTimeout", Reason: fmt.Sprintf("timeout %v: must be positive", d)})
			return
		}
		c.timeout = d
	}
}

// withClock sets the cache's clock (tests).
func withClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

func newConfig(opts []Option) (config, error) {
	c := config{maxAge: DefaultMaxAge, timeout: DefaultTimeout, now: time.Now}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if !c.maxAgeSet {
		if v, ok := os.LookupEnv(EnvMaxAge); ok && v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				c.errs = append(c.errs, &toolkit.OptionError{Package: "parameters", Option: EnvMaxAge, Reason: fmt.Sprintf("%q is not a whole number of seconds, 0 or more", v)})
			} else {
				c.maxAge = time.Duration(n) * time.Second
			}
		}
	}
	return c, errors.Join(c.errs...)
}

// GetOption changes one Get.
type GetOption func(*getConfig)

type getConfig struct{ force bool }

// Force fetches the value now, whatever the cache holds, and caches what it fetched: a
// refresh on demand. To make the next Get fetch instead, wherever it is, call the provider's
// Invalidate.
func Force() GetOption { return func(g *getConfig) { g.force = true } }

// cache is a provider's values, per name, each kept for maxAge; concurrent fetches of one
// name are one fetch. It lives as long as its provider: make the provider once per execution
// environment (in main or init), and the cache serves every invocation.
type cache[V any] struct {
	cfg config
	sf  singleflight.Group

	mu    sync.Mutex
	vals  map[string]entry[V]
	epoch map[string]uint64 // incremented by Invalidate: a fetch begun before it is not kept
}

type entry[V any] struct {
	v  V
	at time.Time
}

func newCache[V any](cfg config) *cache[V] {
	return &cache[V]{cfg: cfg, vals: map[string]entry[V]{}, epoch: map[string]uint64{}}
}

// get returns key's cached value while fresh, else fetches it once for every concurrent caller.
// Each caller waits no longer than its own context.
func (c *cache[V]) get(ctx context.Context, key string, opts []GetOption, fetch func(context.Context) (V, error)) (V, error) {
	var g getConfig
	for _, o := range opts {
		if o != nil {
			o(&g)
		}
	}
	c.mu.Lock()
	e, ok := c.vals[key]
	ep := c.epoch[key]
	c.mu.Unlock()
	if ok && !g.force && c.cfg.now().Sub(e.at) < c.cfg.maxAge {
		return e.v, nil
	}
	if g.force {
		c.sf.Forget(key) // a fetch already under way may have begun before the caller's reason to force
	}
	for try := 0; ; try++ {
		v, err := c.flight(ctx, key, ep, fetch)
		// A caller that joined the flight of another whose context ended gets that context's
		// error: it fetches again, with its own, once.
		if err != nil && try == 0 && ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
			c.sf.Forget(key)
			continue
		}
		return v, err
	}
}

// flight runs fetch once for every caller of key at the moment, and waits for it no longer
// than ctx.
func (c *cache[V]) flight(ctx context.Context, key string, ep uint64, fetch func(context.Context) (V, error)) (V, error) {
	ch := c.sf.DoChan(key, func() (any, error) {
		fctx, cancel := ctx, context.CancelFunc(func() {})
		if _, has := ctx.Deadline(); !has {
			fctx, cancel = context.WithTimeout(ctx, c.cfg.timeout)
		}
		defer cancel()
		v, err := fetch(fctx)
		if err != nil {
			return v, err
		}
		c.mu.Lock()
		if c.epoch[key] == ep {
			c.vals[key] = entry[V]{v: v, at: c.cfg.now()}
		}
		c.mu.Unlock()
		return v, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			var zero V
			return zero, r.Err
		}
		return r.Val.(V), nil
	case <-ctx.Done():
		var zero V
		return zero, context.Cause(ctx)
	}
}

// cached returns key's value if the cache holds it fresh and opts do not force a fetch: the
// path of most Gets, which makes no closure and allocates nothing.
func (c *cache[V]) cached(key string, opts []GetOption) (V, bool) {
	var g getConfig
	for _, o := range opts {
		if o != nil {
			o(&g)
		}
	}
	if !g.force {
		c.mu.Lock()
		e, ok := c.vals[key]
		c.mu.Unlock()
		if ok && c.cfg.now().Sub(e.at) < c.cfg.maxAge {
			return e.v, true
		}
	}
	var zero V
	return zero, false
}

// invalidate drops key's value: the next get fetches at once.
func (c *cache[V]) invalidate(key string) {
	c.mu.Lock()
	delete(c.vals, key)
	c.epoch[key]++
	c.mu.Unlock()
	c.sf.Forget(key)
}
