package idempotencytest_test

import (
	"testing"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
)

func TestMemoryStore(t *testing.T) {
	idempotencytest.TestStore(t, func(*testing.T) idempotency.Store { return idempotencytest.NewStore() })
}

func TestMemoryStoreTypeScript(t *testing.T) {
	shared := idempotencytest.NewStore(idempotencytest.WithFormat(idempotency.FormatTypeScript))
	idempotencytest.TestStore(t, func(*testing.T) idempotency.Store { return shared })
}
