// Package recovered turns a panic in code of the user's (a hook, a sink, a store, a key
// function, a whole handler) into an error, so that it fails the record or the invocation it
// happened in and never the process. On Lambda Managed Instances one process serves several
// invocations at once, and aws-lambda-go exits the process after a handler panic; a panic
// in a goroutine the toolkit started ends the process at once. Every call of the toolkit into
// code of the user's goes through Call, or recovers with New (AWS: "Understanding the Lambda
// Managed Instances execution environment").
package recovered

import (
	"fmt"
	"runtime/debug"
	"unicode/utf8"
)

// MaxValueBytes caps the panic value as written in an error message and a log line, and
// MaxStackBytes the stack: a panic value of the user's may be anything, and a deep stack is
// long; the top of the stack, where the panic happened, is kept.
const (
	MaxValueBytes = 1024
	MaxStackBytes = 16 << 10
)

// Error is a panic turned into an error: where it happened (In: "OnGroupStart",
// "Sink.Send", "Acquire" ...), the value given to panic, written with %v and cut to
// MaxValueBytes, and the panicking goroutine's stack, cut to MaxStackBytes.
type Error struct {
	In    string
	Value any
	Text  string // Value written with %v, cut to MaxValueBytes
	Stack []byte
}

func (e *Error) Error() string { return e.In + " panicked: " + e.Text }

// Unwrap returns the panic value when it is an error (panic(err)), so that errors.Is sees it.
func (e *Error) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// New is the Error of panic value p recovered in In. Call it in the deferred function that
// recovered, so that the stack is the panicking goroutine's.
func New(in string, p any) *Error {
	return &Error{In: in, Value: p, Text: Cut(fmt.Sprint(p), MaxValueBytes), Stack: Stack()}
}

// Stack is the calling goroutine's stack, cut to MaxStackBytes.
func Stack() []byte {
	s := debug.Stack()
	if len(s) > MaxStackBytes {
		s = append(s[:MaxStackBytes:MaxStackBytes], "\n... (stack cut)"...)
	}
	return s
}

// Cut returns s cut to at most n bytes, at a character boundary, with "..." when cut.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// Call runs fn and returns nil, or the *Error of its panic, recovered in in.
func Call(in string, fn func()) (err *Error) {
	defer func() {
		if p := recover(); p != nil {
			err = New(in, p)
		}
	}()
	fn()
	return nil
}

// CallErr runs fn and returns its error, or the *Error of its panic, recovered in in.
func CallErr(in string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = New(in, p)
		}
	}()
	return fn()
}
