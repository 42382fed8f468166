package paramstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/paramstore"
)

// BenchmarkGetCached is a read from the cache: what every Get costs between fetches. The
// store is never called (the value is fetched once, before the timer, and the max age is an
// hour). Run:
//
//	go test -run '^$' -bench GetCached -benchmem -benchtime 200000x ./parameters/paramstore
func BenchmarkGetCached(b *testing.B) {
	p, err := paramstore.New(&endlessPages{n: 64}, parameters.WithMaxAge(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.Get(ctx, "/bench/v"); err != nil {
		b.Fatal(err)
	}
	b.Run("string", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Get(ctx, "/bench/v"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		s, _ := paramstore.New(&jsonValue{}, parameters.WithMaxAge(time.Hour))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parameters.GetJSON[dbCreds](ctx, s, "/bench/json"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestCachedGetAllocatesNothing: a Get served from the cache, without options, allocates
// nothing (what BenchmarkGetCached/string measures).
func TestCachedGetAllocatesNothing(t *testing.T) {
	p, err := paramstore.New(&endlessPages{n: 64}, parameters.WithMaxAge(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.Get(ctx, "/alloc/v"); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = p.Get(ctx, "/alloc/v") }); n != 0 {
		t.Fatalf("a cached Get allocates %v times; want 0", n)
	}
}
