// Package glue reads schemas from the AWS Glue Schema Registry for package codec: a
// [codec.Registry] over the AWS SDK's Glue client. It is a package of its own so that a
// function whose records need no Glue registry links no Glue client: importing it costs a
// function about 1 MB, and at each cold start some 6 million instructions and 2.3 MB
// allocated by package initialisation (docs/codec.md has the measure). Glue framing itself
// ([codec.WireGlue], codec.SplitGlue and codec.AppendGlue) needs no client and stays in
// codec.
//
//	reg := glue.NewRegistry(awsglue.NewFromConfig(cfg)) // awsglue: the SDK's service/glue
//	orders, err := codec.Avro[Order]() // the writer's schema from reg, by each record's UUID
//	...
//	d, err := codec.NewDeserializer(codec.String(), orders,
//		codec.WithValueWire(codec.WireGlue), codec.WithRegistry(reg))
package glue

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	awsglue "github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"
	"github.com/google/uuid"

	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/codec/internal/answercap"
)

// API is the part of the AWS Glue client (*glue.Client of aws-sdk-go-v2) that [NewRegistry]
// uses.
type API interface {
	// GetSchemaVersion returns a schema version, here asked by its SchemaVersionId.
	GetSchemaVersion(ctx context.Context, in *awsglue.GetSchemaVersionInput, opts ...func(*awsglue.Options)) (*awsglue.GetSchemaVersionOutput, error)
}

// registryName names the AWS Glue Schema Registry in errors.
const registryName = "AWS Glue Schema Registry"

// NewRegistry returns a codec.Registry that reads schemas from the AWS Glue Schema Registry
// by schema version ID (the UUID of Glue framing and of the event source mapping's schema
// metadata), with GetSchemaVersion. client is usually glue.NewFromConfig(cfg) of the AWS SDK;
// it needs the glue:GetSchemaVersion permission. IDs that are not UUIDs are refused without a
// request. The schema's format is the version's DataFormat (AVRO, PROTOBUF or JSON), its text
// the SchemaDefinition; the version's status is not checked (a schema version that records
// were written with stays readable). An answer over 4 MiB is an error, read no further. Wrap
// the registry in codec.Cached (codec.WithRegistry does) so each ID is fetched once. A nil
// client is an error at the first Schema call. Errors are *codec.RegistryError, wrapping
// codec.ErrSchemaNotFound for a schema version Glue does not have.
func NewRegistry(client API) codec.Registry {
	return &registry{api: client}
}

type registry struct {
	api API
}

// String names the registry.
func (r *registry) String() string { return registryName }

func (r *registry) Schema(ctx context.Context, id string) (*codec.Schema, error) {
	fail := func(err error) (*codec.Schema, error) {
		return nil, &codec.RegistryError{Registry: registryName, ID: id, Err: err}
	}
	if r.api == nil {
		return fail(errors.New("glue.NewRegistry was given a nil client"))
	}
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		// uuid.Parse alone would also take the braced, URN and 32-digit forms, which no
		// registry writes.
		return fail(errors.New("not a Glue schema version ID (a UUID, 8-4-4-4-12 hex digits)"))
	}
	out, err := r.api.GetSchemaVersion(ctx, &awsglue.GetSchemaVersionInput{SchemaVersionId: &id}, capAnswer)
	if err != nil {
		var nf *types.EntityNotFoundException
		if errors.As(err, &nf) {
			return fail(fmt.Errorf("%w: %w", codec.ErrSchemaNotFound, err))
		}
		return fail(err)
	}
	if out == nil || out.SchemaDefinition == nil || *out.SchemaDefinition == "" {
		return fail(errors.New("GetSchemaVersion answered without a SchemaDefinition"))
	}
	var format string
	switch out.DataFormat {
	case types.DataFormatAvro:
		format = codec.FormatAvro
	case types.DataFormatProtobuf:
		format = codec.FormatProtobuf
	case types.DataFormatJson:
		format = codec.FormatJSON
	default:
		return fail(fmt.Errorf("unknown DataFormat %q", out.DataFormat))
	}
	return &codec.Schema{ID: id, Format: format, Text: *out.SchemaDefinition}, nil
}

// capAnswer is the option of a GetSchemaVersion call that caps its response at 4 MiB.
func capAnswer(o *awsglue.Options) {
	if o.HTTPClient != nil {
		o.HTTPClient = capClient{o.HTTPClient}
	}
}

// capClient caps the bodies of the responses of the Glue client, for one call.
type capClient struct{ base awsglue.HTTPClient }

func (c capClient) Do(req *http.Request) (*http.Response, error) {
	return answercap.Response(c.base.Do(req))
}
