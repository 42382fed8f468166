package parameters

import (
	"testing"

	"github.com/kafkalambda/toolkit/parameters/internal/cache"
)

// TestDefaultsAreTheEngines: the defaults this package documents are those the cache engine
// applies.
func TestDefaultsAreTheEngines(t *testing.T) {
	if DefaultMaxAge != cache.DefaultMaxAge || DefaultTimeout != cache.DefaultTimeout || EnvMaxAge != cache.EnvMaxAge {
		t.Fatalf("parameters' defaults (%v, %v, %s) are not the engine's (%v, %v, %s)", DefaultMaxAge, DefaultTimeout, EnvMaxAge, cache.DefaultMaxAge, cache.DefaultTimeout, cache.EnvMaxAge)
	}
}
