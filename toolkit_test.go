package toolkit_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kafkalambda/toolkit"
)

func TestOptionErrorMatches(t *testing.T) {
	cause := errors.New("boom")
	err := fmt.Errorf("wrapped: %w", &toolkit.OptionError{Package: "batch", Option: "WithRetry", Reason: "attempts 0", Err: cause})
	if !errors.Is(err, toolkit.ErrInvalidOption) {
		t.Errorf("errors.Is(%v, ErrInvalidOption) = false", err)
	}
	if !errors.Is(err, cause) {
		t.Errorf("errors.Is(%v, cause) = false", err)
	}
	var oe *toolkit.OptionError
	if !errors.As(err, &oe) || oe.Option != "WithRetry" {
		t.Errorf("errors.As: %v", oe)
	}
	if got, want := oe.Error(), "batch: invalid option WithRetry: attempts 0: boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if errors.Is(errors.New("invalid option"), toolkit.ErrInvalidOption) {
		t.Error("a different error with the same text matches")
	}
}
