package codec

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"
)

// GlueAPI is the part of the AWS Glue client (*glue.Client of aws-sdk-go-v2) that
// [NewGlueRegistry] uses.
type GlueAPI interface {
	// GetSchemaVersion returns a schema version, here asked by its SchemaVersionId.
	GetSchemaVersion(ctx context.Context, in *glue.GetSchemaVersionInput, opts ...func(*glue.Options)) (*glue.GetSchemaVersionOutput, error)
}

// glueRegistryName names the AWS Glue Schema Registry in errors.
const glueRegistryName = "AWS Glue Schema Registry"

// NewGlueRegistry returns a Registry that reads schemas from the AWS Glue Schema Registry by
// schema version ID (the UUID of Glue framing and of the event source mapping's schema
// metadata), with GetSchemaVersion. client is usually glue.NewFromConfig(cfg); it needs the
// glue:GetSchemaVersion permission. IDs that are not UUIDs are refused without a request. The
// schema's format is the version's DataFormat (AVRO, PROTOBUF or JSON), its text the
// SchemaDefinition; the version's status is not checked (a schema version that records were
// written with stays readable). An answer over 4 MiB is an error, read no further. Wrap the registry in [Cached] (WithRegistry does) so each ID is
// fetched once. A nil client is an error at the first Schema call.
func NewGlueRegistry(client GlueAPI) Registry {
	return &glueRegistry{api: client}
}

type glueRegistry struct {
	api GlueAPI
}

// String names the registry.
func (r *glueRegistry) String() string { return glueRegistryName }

func (r *glueRegistry) Schema(ctx context.Context, id string) (*Schema, error) {
	fail := func(err error) (*Schema, error) {
		return nil, &RegistryError{Registry: glueRegistryName, ID: id, Err: err}
	}
	if r.api == nil {
		return fail(errors.New("NewGlueRegistry was given a nil client"))
	}
	if _, err := parseUUID(id); err != nil {
		return fail(errors.New("not a Glue schema version ID (a UUID, 8-4-4-4-12 hex digits)"))
	}
	out, err := r.api.GetSchemaVersion(ctx, &glue.GetSchemaVersionInput{SchemaVersionId: &id}, capGlueAnswer)
	if err != nil {
		var nf *types.EntityNotFoundException
		if errors.As(err, &nf) {
			return fail(fmt.Errorf("%w: %w", ErrSchemaNotFound, err))
		}
		return fail(err)
	}
	if out == nil || out.SchemaDefinition == nil || *out.SchemaDefinition == "" {
		return fail(errors.New("GetSchemaVersion answered without a SchemaDefinition"))
	}
	var format string
	switch out.DataFormat {
	case types.DataFormatAvro:
		format = FormatAvro
	case types.DataFormatProtobuf:
		format = FormatProtobuf
	case types.DataFormatJson:
		format = FormatJSON
	default:
		return fail(fmt.Errorf("unknown DataFormat %q", out.DataFormat))
	}
	return &Schema{ID: id, Format: format, Text: *out.SchemaDefinition}, nil
}
