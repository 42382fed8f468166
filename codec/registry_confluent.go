package codec

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/kafkalambda/toolkit/codec/internal/answercap"
)

// NewConfluentRegistry returns a Registry that reads schemas from the Confluent Schema
// Registry (or any registry speaking its REST API) at url, by ID: GET /schemas/ids/{id}, with
// franz-go's pkg/sr client. opts configure that client (authentication with sr.BasicAuth or
// sr.BearerToken, TLS with sr.DialTLSConfig, an *http.Client with sr.HTTPClient; its default
// has a 5-second timeout); a URL in opts (sr.URLs) replaces url. IDs are decimal numbers, as
// Confluent framing and the event source mapping's schema metadata carry them. The schema's
// format is its schemaType (AVRO when absent, as the API documents).
//
// A schema with references (Avro named types or Protobuf imports registered as other subjects)
// is refused with an error wrapping errors.ErrUnsupported: a [Schema] carries one document
// only. An answer over 4 MiB is an error, read no further. Wrap the registry in [Cached]
// (WithRegistry does) so each ID is fetched once.
func NewConfluentRegistry(url string, opts ...sr.ClientOpt) (Registry, error) {
	if url == "" {
		return nil, errors.New("codec: NewConfluentRegistry: empty URL")
	}
	cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(url)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("codec: NewConfluentRegistry(%q): %w", url, err)
	}
	// The same client, its answers capped: a copy of its *http.Client (the caller's is not
	// changed) whose transport, TLS already set up by NewClient, caps response bodies.
	hc, ok := cl.OptValue(sr.HTTPClient).(*http.Client)
	if !ok || hc == nil {
		return nil, fmt.Errorf("codec: NewConfluentRegistry(%q): the client has no *http.Client", url)
	}
	capped, base := *hc, hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	capped.Transport = answercap.Transport{Base: base}
	cl, err = sr.NewClient(append(cl.Opts(), sr.HTTPClient(&capped), sr.DialTLSConfig(nil))...)
	if err != nil {
		return nil, fmt.Errorf("codec: NewConfluentRegistry(%q): %w", url, err)
	}
	return &confluentRegistry{cl: cl, url: url}, nil
}

type confluentRegistry struct {
	cl  *sr.Client
	url string
}

// String returns the registry's URL.
func (r *confluentRegistry) String() string { return r.url }

func (r *confluentRegistry) Schema(ctx context.Context, id string) (*Schema, error) {
	fail := func(err error) (*Schema, error) {
		return nil, &RegistryError{Registry: r.url, ID: id, Err: err}
	}
	n, err := strconv.ParseUint(id, 10, 31) // Confluent IDs are non-negative Java ints
	if err != nil {
		return fail(errors.New("not a Confluent schema ID (a decimal number up to 2147483647)"))
	}
	s, err := r.cl.SchemaByID(ctx, int(n))
	if err != nil {
		var re *sr.ResponseError
		if errors.As(err, &re) && re.ErrorCode == sr.ErrSchemaNotFound.Code {
			return fail(fmt.Errorf("%w (HTTP %d, error code %d: %s)", ErrSchemaNotFound, re.StatusCode, re.ErrorCode, re.Message))
		}
		if errors.As(err, &re) {
			return fail(fmt.Errorf("HTTP %d from GET %s: %w", re.StatusCode, re.URL, err))
		}
		return fail(err)
	}
	if len(s.References) > 0 {
		names := make([]string, len(s.References))
		for i, ref := range s.References {
			names[i] = fmt.Sprintf("%s (subject %s version %d)", ref.Name, ref.Subject, ref.Version)
		}
		return fail(fmt.Errorf("the schema has references, which this toolkit does not resolve: %s: %w", strings.Join(names, ", "), errors.ErrUnsupported))
	}
	var format string
	switch s.Type {
	case sr.TypeAvro:
		format = FormatAvro
	case sr.TypeProtobuf:
		format = FormatProtobuf
	case sr.TypeJSON:
		format = FormatJSON
	default:
		return fail(fmt.Errorf("unknown schemaType %q", s.Type))
	}
	if s.Schema == "" {
		return fail(errors.New("the registry answered with an empty schema"))
	}
	return &Schema{ID: id, Format: format, Text: s.Schema}, nil
}
