// Package errs makes the errors of the providers of package parameters: a *parameters.Error
// naming the provider and the name, and an SDK error that never quotes the value.
package errs

import (
	"errors"
	"fmt"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/parameters"
)

// Wrap makes err a *parameters.Error of provider and name, unless it already is one.
func Wrap(provider, name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *parameters.Error
	if errors.As(err, &pe) {
		return err
	}
	return &parameters.Error{Provider: provider, Name: name, Err: err}
}

// SDK keeps an SDK error, except an answer the SDK could not decode: that error quotes the
// token it could not take, which may be the value itself, so it is replaced by one that says
// what kind of failure it was, with the HTTP status and request ID. notFound is the service's
// error code for a missing name, which then matches parameters.ErrNotFound.
func SDK(op string, err error, notFound string) error {
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
		return fmt.Errorf("%s: %w (%w)", op, parameters.ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Option is a provider constructor's invalid argument, as every package reports one: pkg is
// the provider's package ("parameters/secrets"), option the argument's function ("New").
func Option(pkg, option, reason string) error {
	return &toolkit.OptionError{Package: pkg, Option: option, Reason: reason}
}
