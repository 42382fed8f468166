package template

import "errors"

// Sentinel errors; errors.Is finds them in the errors of Read and of an Evaluator.
var (
	// ErrUnknown is a value that cannot be known from the template alone: an intrinsic
	// function the evaluator does not evaluate (Fn::ImportValue, Fn::GetAZs, Fn::Cidr...), a
	// parameter without a value, a resource the caller's Resources hook cannot say. A checker
	// says "cannot check" for it, neither passing nor failing the value.
	ErrUnknown = errors.New("cannot be known from the template")
	// ErrTooLarge is a template over MaxSize bytes, or one whose aliases expand it past
	// MaxNodes nodes or MaxText bytes of text, or nest it past MaxDepth.
	ErrTooLarge = errors.New("template too large")
)

// Error is an error about one place of a template. Its message is "FILE:LINE:COL: MSG"; Err,
// when set, is what errors.Is and errors.As find (ErrUnknown, a hook's error).
type Error struct {
	Pos Pos
	Msg string
	Err error
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// errorAt returns an *Error at pos.
func errorAt(pos Pos, msg string) *Error { return &Error{Pos: pos, Msg: msg} }

// unknownAt returns an *Error at pos that errors.Is finds ErrUnknown in.
func unknownAt(pos Pos, msg string) *Error { return &Error{Pos: pos, Msg: msg, Err: ErrUnknown} }
