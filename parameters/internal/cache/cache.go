// Package cache is the engine every provider of package parameters shares: the settings its
// options set, the cache of values per name with a max age, one fetch at a time per name, and
// each fetch bounded by the caller's deadline (or a timeout without one). It is internal so
// that the providers (parameters/paramstore, parameters/secrets, parameters/appconfig) use it
// without it being public API; the options that set it are defined once, in package
// parameters.
package cache

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

// Defaults of every provider: parameters.DefaultMaxAge, parameters.DefaultTimeout and
// parameters.EnvMaxAge, which are documented there and held equal to these by its tests
// (this package cannot import it: it imports this one).
const (
	DefaultMaxAge  = 5 * time.Second
	DefaultTimeout = 5 * time.Second
	EnvMaxAge      = "POWERTOOLS_PARAMETERS_MAX_AGE"
)

// Config is what a provider's options set (parameters.Option is a func(*Config)).
type Config struct {
	MaxAge    time.Duration
	MaxAgeSet bool // set by an option: $POWERTOOLS_PARAMETERS_MAX_AGE is not read
	Timeout   time.Duration
	Now       func() time.Time
	Errs      []error // an option's mistakes, reported together by NewConfig
}

// NewConfig applies opts over the defaults and $POWERTOOLS_PARAMETERS_MAX_AGE. Its error joins
// every option's *toolkit.OptionError.
func NewConfig[O ~func(*Config)](opts []O) (Config, error) {
	c := Config{MaxAge: DefaultMaxAge, Timeout: DefaultTimeout, Now: time.Now}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if !c.MaxAgeSet {
		if v, ok := os.LookupEnv(EnvMaxAge); ok && v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				c.Errs = append(c.Errs, &toolkit.OptionError{Package: "parameters", Option: EnvMaxAge, Reason: fmt.Sprintf("%q is not a whole number of seconds, 0 or more", v)})
			} else {
				c.MaxAge = time.Duration(n) * time.Second
			}
		}
	}
	return c, errors.Join(c.Errs...)
}

// WithClock sets the cache's clock, so that the providers' tests pass a max age without
// sleeping (they convert it to a parameters.Option).
func WithClock(now func() time.Time) func(*Config) { return func(c *Config) { c.Now = now } }

// GetConfig is what one Get's options set (parameters.GetOption is a func(*GetConfig)).
type GetConfig struct {
	Force bool // fetch now, whatever the cache holds
}

// Gets applies one Get's options. A Get with none allocates nothing: g escapes (an option
// is a function the compiler cannot see into), so it is declared only when there are options.
func Gets[O ~func(*GetConfig)](opts []O) GetConfig {
	if len(opts) == 0 {
		return GetConfig{}
	}
	var g GetConfig
	for _, o := range opts {
		if o != nil {
			o(&g)
		}
	}
	return g
}

// Cache is a provider's values, per name, each kept for the max age; concurrent fetches of
// one name are one fetch. It lives as long as its provider: a provider made once per
// execution environment (in main or init) serves every invocation from it.
type Cache[V any] struct {
	cfg Config
	sf  singleflight.Group

	mu    sync.Mutex
	vals  map[string]entry[V]
	epoch map[string]uint64 // incremented by Invalidate: a fetch begun before it is not kept
}

type entry[V any] struct {
	v  V
	at time.Time
}

// New returns an empty cache with cfg's max age, timeout and clock.
func New[V any](cfg Config) *Cache[V] {
	return &Cache[V]{cfg: cfg, vals: map[string]entry[V]{}, epoch: map[string]uint64{}}
}

// Now is the cache's clock.
func (c *Cache[V]) Now() time.Time { return c.cfg.Now() }

// Cached returns key's value if the cache holds it fresh and g does not force a fetch: the
// path of most Gets, which makes no closure and allocates nothing.
func (c *Cache[V]) Cached(key string, g GetConfig) (V, bool) {
	if !g.Force {
		c.mu.Lock()
		e, ok := c.vals[key]
		c.mu.Unlock()
		if ok && c.cfg.Now().Sub(e.at) < c.cfg.MaxAge {
			return e.v, true
		}
	}
	var zero V
	return zero, false
}

// Get returns key's cached value while fresh, else fetches it once for every concurrent
// caller. Each caller waits no longer than its own context.
func (c *Cache[V]) Get(ctx context.Context, key string, g GetConfig, fetch func(context.Context) (V, error)) (V, error) {
	c.mu.Lock()
	e, ok := c.vals[key]
	ep := c.epoch[key]
	c.mu.Unlock()
	if ok && !g.Force && c.cfg.Now().Sub(e.at) < c.cfg.MaxAge {
		return e.v, nil
	}
	if g.Force {
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
func (c *Cache[V]) flight(ctx context.Context, key string, ep uint64, fetch func(context.Context) (V, error)) (V, error) {
	ch := c.sf.DoChan(key, func() (any, error) {
		fctx, cancel := ctx, context.CancelFunc(func() {})
		if _, has := ctx.Deadline(); !has {
			fctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		}
		defer cancel()
		v, err := fetch(fctx)
		if err != nil {
			return v, err
		}
		c.mu.Lock()
		if c.epoch[key] == ep {
			c.vals[key] = entry[V]{v: v, at: c.cfg.Now()}
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

// Invalidate drops key's value: the next Get fetches at once, and a fetch under way is not
// kept.
func (c *Cache[V]) Invalidate(key string) {
	c.mu.Lock()
	delete(c.vals, key)
	c.epoch[key]++
	c.mu.Unlock()
	c.sf.Forget(key)
}

// Name is a provider's name in its errors ("ssm", "secretsmanager", "appconfig"). A provider
// embeds it under an unexported alias (type named = cache.Name), so that parameters.GetJSON
// finds the name of the provider it was given (NameOf) while the provider's exported API
// gains nothing: the method is unexported, of this package.
type Name string

func (n Name) providerName() string { return string(n) }

type named interface{ providerName() string }

// NameOf returns the name of a provider that embeds a Name, else "source" (a Source of the
// caller's own).
func NameOf(s any) string {
	if n, ok := s.(named); ok {
		return n.providerName()
	}
	return "source"
}
