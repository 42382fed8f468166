package parameters

import (
	"fmt"
	"time"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/parameters/internal/cache"
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

// Option configures a provider. Each is defined once, here, and every provider's New takes
// it: paramstore.New, secrets.New and appconfig.New alike.
type Option func(*cache.Config)

// WithMaxAge is how long a fetched value is served from the cache; after it the next Get
// fetches again. Zero fetches on every Get (concurrent Gets of one name still share one
// fetch); negative is an error. Default: $POWERTOOLS_PARAMETERS_MAX_AGE seconds, else
// [DefaultMaxAge].
func WithMaxAge(d time.Duration) Option {
	return func(c *cache.Config) {
		if d < 0 {
			c.Errs = append(c.Errs, &toolkit.OptionError{Package: "parameters", Option: "WithMaxAge", Reason: fmt.Sprintf("negative max age %v", d)})
			return
		}
		c.MaxAge, c.MaxAgeSet = d, true
	}
}

// WithTimeout bounds a fetch whose context has no deadline (the SDK's retries included); it
// must be positive. A context with a deadline is bounded by it alone. Default:
// [DefaultTimeout].
func WithTimeout(d time.Duration) Option {
	return func(c *cache.Config) {
		if d <= 0 {
			c.Errs = append(c.Errs, &toolkit.OptionError{Package: "parameters", Option: "WithTimeout", Reason: fmt.Sprintf("timeout %v: must be positive", d)})
			return
		}
		c.Timeout = d
	}
}

// GetOption changes one Get, of any provider.
type GetOption func(*cache.GetConfig)

// Force fetches the value now, whatever the cache holds, and caches what it fetched: a
// refresh on demand. To make the next Get fetch instead, wherever it is, call the provider's
// Invalidate.
func Force() GetOption { return func(g *cache.GetConfig) { g.Force = true } }
