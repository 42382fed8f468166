package parameters

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Errors that a Get's error matches (errors.Is), whichever the provider.
var (
	// ErrNotFound: the parameter, secret or configuration does not exist (or the caller may
	// not know that it does: SSM's ParameterNotFound, Secrets Manager's
	// ResourceNotFoundException, AppConfig's ResourceNotFoundException).
	ErrNotFound = errors.New("parameters: not found")
	// ErrTooLarge: the value is larger than the provider's cap (the service's own limit, in
	// package limits), or a path holds more parameters than paramstore.MaxPathParameters.
	ErrTooLarge = errors.New("parameters: value too large")
	// ErrType: the value is not of the type asked for: a binary secret asked for as a string,
	// a value that is not the JSON of T, a binary value that is not base64.
	ErrType = errors.New("parameters: value of another type")
)

// Error is the error of every Get: which provider, which name, and why. It never holds the
// value, nor any part of it (JSON errors are reduced to their kind and offset, and an answer the
// SDK could not decode to its HTTP status and request ID).
type Error struct {
	Provider string // "ssm", "secretsmanager", "appconfig"
	Name     string // the parameter's name, the path, the secret's ID or the configuration profile
	Err      error
}

func (e *Error) Error() string {
	return "parameters: " + e.Provider + " " + e.Name + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// jsonError says what kind of JSON mistake err is, and where, without quoting the value.
func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%w: not JSON (syntax error at byte %d)", ErrType, se.Offset)
	case errors.As(err, &te):
		// Value is "number 123..." for a number out of range: keep only its kind.
		kind, _, _ := strings.Cut(te.Value, " ")
		return fmt.Errorf("%w: JSON %s at byte %d cannot be the Go %s of field %q", ErrType, kind, te.Offset, te.Type, te.Field)
	case errors.Is(err, errEmpty):
		return fmt.Errorf("%w: empty value is not JSON", ErrType)
	}
	return fmt.Errorf("%w: JSON that does not decode into the type asked for", ErrType)
}

var errEmpty = errors.New("empty")
