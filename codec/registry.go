package codec

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/kafkalambda/toolkit/internal/recovered"
)

// ErrSchemaNotFound is wrapped by the error of a [Registry] that has no schema with the ID
// asked for (Confluent error code 40403, Glue EntityNotFoundException).
var ErrSchemaNotFound = errors.New("codec: schema not found")

// RegistryError is the error of a [Registry] asked for a schema: it names the registry and the
// ID, and wraps the cause ([ErrSchemaNotFound], the registry's or the transport's error, a
// context error, or a schema the toolkit cannot use).
type RegistryError struct {
	Registry string // the registry: a Confluent URL, "AWS Glue Schema Registry"
	ID       string // the schema ID as asked for
	Err      error  // the cause
}

// Error returns "codec: schema <ID> from <Registry>: <cause>".
func (e *RegistryError) Error() string {
	return fmt.Sprintf("codec: schema %s from %s: %v", e.ID, e.Registry, e.Err)
}

// Unwrap returns the cause.
func (e *RegistryError) Unwrap() error { return e.Err }

// Cached returns a Registry that asks r for each ID once and keeps the schema for its own
// lifetime (a schema ID names an immutable schema in both Confluent and Glue registries), so a
// Registry made once at init serves the whole life of the execution environment. Concurrent
// misses on one ID make a single request, whose result they all share; a caller whose context
// ends first stops waiting and returns its context's error. Errors are not cached: the next
// call for that ID asks again. Cached of a Registry that Cached returned is that Registry.
//
// Callers share the cached schema's contents: the *Schema returned is a copy of the cached one,
// but its MessageIndexes (nil for schemas from NewConfluentRegistry and codec/glue) are
// not copied.
func Cached(r Registry) Registry {
	if c, ok := r.(*cachedRegistry); ok {
		return c
	}
	return &cachedRegistry{r: r, schemas: make(map[string]*Schema)}
}

type cachedRegistry struct {
	r       Registry
	group   singleflight.Group
	mu      sync.RWMutex
	schemas map[string]*Schema
}

func (c *cachedRegistry) Schema(ctx context.Context, id string) (*Schema, error) {
	for {
		c.mu.RLock()
		s, ok := c.schemas[id]
		c.mu.RUnlock()
		if ok {
			cp := *s
			return &cp, nil
		}
		ch := c.group.DoChan(id, func() (any, error) {
			// DoChan runs this on a goroutine of its own, where a panic of the registry (a
			// Registry of the caller's) would end the process, and with it every invocation
			// it serves on Lambda Managed Instances: it is the request's error instead.
			var s *Schema
			var err error
			if pe := recovered.Call("the registry's Schema", func() { s, err = c.r.Schema(ctx, id) }); pe != nil {
				return false, &RegistryError{Registry: registryName(c.r), ID: id, Err: pe}
			}
			if err != nil {
				// Tell the callers that shared this request whether it failed because the
				// context of the caller that made it ended.
				return ctx.Err() != nil, err
			}
			if s == nil {
				return false, &RegistryError{Registry: registryName(c.r), ID: id, Err: errors.New("the registry returned no schema and no error")}
			}
			cp := *s
			c.mu.Lock()
			c.schemas[id] = &cp
			c.mu.Unlock()
			return false, nil
		})
		select {
		case res := <-ch:
			if res.Err == nil {
				continue // now in the cache
			}
			// The request was made with the context of whichever caller came first: if that
			// context ended, but this caller's has not, ask again rather than fail.
			if leaderGone, _ := res.Val.(bool); leaderGone && ctx.Err() == nil {
				continue
			}
			return nil, res.Err
		case <-ctx.Done():
			return nil, &RegistryError{Registry: registryName(c.r), ID: id, Err: fmt.Errorf("waiting for the registry: %w", context.Cause(ctx))}
		}
	}
}

// String names the registry it caches.
func (c *cachedRegistry) String() string { return registryName(c.r) }

// registryName is r's String(), or its type.
func registryName(r Registry) string {
	if s, ok := r.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", r)
}
