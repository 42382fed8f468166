package parameters

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// Errors that a Get's error matches (errors.Is).
var (
	// ErrNotFound: the parameter, secret or configuration does not exist (or the caller may
	// not know that it does: SSM's ParameterNotFound, Secrets Manager's
	// ResourceNotFoundException, AppConfig's ResourceNotFoundException).
	ErrNotFound = errors.New("parameters: not found")
	// ErrTooLarge: the value is larger than the provider's cap (the service's own limit, in
	// package limits), or a path holds more parameters than [MaxPathParameters].
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

// wrap makes err an *Error of provider and name, unless it already is one.
func wrap(provider, name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *Error
	if errors.As(err, &pe) {
		return err
	}
	return &Error{Provider: provider, Name: name, Err: err}
}

// sdkError keeps an SDK error, except an answer the SDK could not decode: that error quotes
// the token it could not take, which may be the value itself, so it is replaced by one that
// says what kind of failure it was, with the HTTP status and request ID. notFound is the
// service's error code for a missing name.
func sdkError(op string, err error, notFound string) error {
	var de *smithy.DeserializationError
	if errors.As(err, &de) {
		status, id := 0, ""
		var re *awshttp.ResponseError
		if errors.As(err, &re) {
			status, id = re.HTTPStatusCode(), re.ServiceRequestID()
		}
		return fmt.Errorf("%s: a malformed answer (HTTP %d, request ID %q) that the SDK could not decode (its text is not shown: it may hold the value)", op, status, id)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == notFound {
		return fmt.Errorf("%s: %w (%w)", op, ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

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
