// Package ptest is what the tests of the parameters providers share: a clock that moves only
// when told, and one moto_server (a real local SSM Parameter Store and Secrets Manager) per
// test binary, started on first use.
package ptest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/internal/cache"
)

// Clock is a test's time: it moves only when told.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

func NewClock() *Clock { return &Clock{t: time.Unix(1_800_000_000, 0)} }

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// WithClock is the option that sets a provider's clock to c, so that a test passes a max age
// without sleeping.
func WithClock(c *Clock) parameters.Option { return parameters.Option(cache.WithClock(c.Now)) }

// Ctx10 is a context that ends within 10 seconds, or with t.
func Ctx10(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var (
	motoOnce sync.Once
	motoSrv  *standin.Moto
	motoErr  error
)

// Moto returns the test binary's moto_server (moto 5, `pip install 'moto[server]'`), starting
// it on first use: Python's start costs seconds, so a package's tests share one, each using
// names of its own. A moto_server that is missing or does not start fails t; it never skips.
func Moto(t testing.TB) *standin.Moto {
	t.Helper()
	motoOnce.Do(func() { motoSrv, motoErr = standin.StartMoto(context.Background()) })
	if motoErr != nil {
		t.Fatal(motoErr)
	}
	return motoSrv
}

// Main runs the tests and then stops the moto_server if one was started: a package's
// TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if motoSrv != nil {
		motoSrv.Stop()
	}
	os.Exit(code)
}
