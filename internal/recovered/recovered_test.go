package recovered

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// A panic comes back as an error that names where, with its value and stack, both bounded.
func TestCall(t *testing.T) {
	if err := Call("x", func() {}); err != nil {
		t.Fatalf("no panic: %v", err)
	}
	var deep func(n int)
	deep = func(n int) {
		if n == 0 {
			panic(strings.Repeat("é", MaxValueBytes))
		}
		deep(n - 1)
	}
	err := Call("the hook", func() { deep(2000) })
	if err == nil || !strings.HasPrefix(err.Error(), "the hook panicked: ") {
		t.Fatalf("error %v", err)
	}
	if len(err.Text) > MaxValueBytes+3 || !utf8.ValidString(err.Text) {
		t.Errorf("value text of %d bytes, valid UTF-8 %v", len(err.Text), utf8.ValidString(err.Text))
	}
	if len(err.Stack) > MaxStackBytes+64 || !strings.Contains(string(err.Stack), "goroutine") {
		t.Errorf("stack of %d bytes", len(err.Stack))
	}
	sentinel := errors.New("sentinel")
	if e := CallErr("f", func() error { panic(sentinel) }); !errors.Is(e, sentinel) {
		t.Errorf("panic(err): %v does not wrap it", e)
	}
	if e := CallErr("f", func() error { return sentinel }); e != sentinel {
		t.Errorf("an error returned: %v", e)
	}
}
