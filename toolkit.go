// Package toolkit holds what every package of the kafkalambda toolkit shares: the error an
// invalid option returns. The packages a function uses are its subdirectories: kafkaevent
// (the event), batch (partial-batch processing), idempotency, codec, filter, fanout and
// producer; limits holds the AWS limits they enforce.
//
// Every constructor and Process function of the toolkit checks its options before it does
// anything and answers a bad one with an *OptionError, which matches ErrInvalidOption:
//
//	if errors.Is(err, toolkit.ErrInvalidOption) { ... }
//	var oe *toolkit.OptionError
//	if errors.As(err, &oe) { log.Print(oe.Option) }
package toolkit

import "errors"

// ErrInvalidOption is matched (errors.Is) by every *OptionError.
var ErrInvalidOption = errors.New("invalid option")

// OptionError is an option, a setting or a combination of them that a package refuses.
type OptionError struct {
	Package string // the package that refused it, "batch"
	Option  string // the option or setting, "WithRetry"
	Reason  string // why, "attempts must be at least 1, not 0"
	Err     error  // the underlying error, when there is one
}

func (e *OptionError) Error() string {
	s := e.Package + ": invalid option " + e.Option
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is reports whether target is ErrInvalidOption.
func (e *OptionError) Is(target error) bool { return target == ErrInvalidOption }

// Unwrap returns the underlying error, if any.
func (e *OptionError) Unwrap() error { return e.Err }
