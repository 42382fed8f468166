package esm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/kafkalambda/toolkit/codec"
	codecglue "github.com/kafkalambda/toolkit/codec/glue"
	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// Event record formats of a schema registry (EventRecordFormat).
const (
	// recordFormatJSON delivers keys and values as JSON text: "Choose JSON to have Lambda
	// deliver the record to your function as a standard JSON object."
	recordFormatJSON = "JSON"
	// recordFormatSource delivers them as the producer wrote them, the framing removed:
	// "Lambda removes all schema metadata, such as the schema ID, before sending the record".
	recordFormatSource = "SOURCE"
)

// The attributes a schema registry validates (SchemaValidationConfigs[].Attribute).
const (
	attributeKey   = "KEY"
	attributeValue = "VALUE"
)

// Conditions of the on-failure record of a record that failed schema validation.
const (
	// ConditionSchemaNotFound: the record's key or value names no schema the registry has,
	// or is not framed with a schema ID at all.
	ConditionSchemaNotFound = "SCHEMA_NOT_FOUND"
	// ConditionDeserializationError: the key or value does not decode with its schema.
	ConditionDeserializationError = "DESERIALIZATION_ERROR"
)

// defaultSchemaRegistryTimeout bounds each request to a schema registry, and each check of a
// key or value against its schema: 5 seconds.
const defaultSchemaRegistryTimeout = 5 * time.Second

// SchemaRegistryConfig is a Kafka mapping's SchemaRegistryConfig, for [WithSchemaRegistry].
type SchemaRegistryConfig struct {
	// SchemaRegistryURI is the registry: "For Confluent schema registries, use the URL of the
	// registry" (http or https); "For AWS Glue schema registries, use the ARN of the registry"
	// (arn:aws:glue:region:account:registry/name, which needs GlueEndpoint).
	SchemaRegistryURI string
	// EventRecordFormat is recordFormatJSON or recordFormatSource.
	EventRecordFormat string
	// Attributes are the SchemaValidationConfigs' attributes: attributeKey, attributeValue or
	// both. "If you selected JSON as the EventRecordFormat, Lambda also deserializes the
	// selected message attributes"; the others are delivered as they are.
	Attributes []string
	// confluentOptions configure the Confluent registry's client (sr.BasicAuth for a
	// BASIC_AUTH access configuration, sr.DialTLSConfig for client certificates and a root
	// CA); none by default.
	confluentOptions []sr.ClientOpt
	// glueEndpoint is the endpoint of the AWS Glue API a Glue registry is read from
	// (GetSchemaVersion), such as a local moto_server; requests are signed for the ARN's
	// region with the access key "test". A Glue registry ARN without it is refused: the
	// mapping never reaches AWS itself.
	glueEndpoint string
	// timeout bounds each request to the registry, and then the check of the key or value
	// against its schema (compiling the schema included); defaultSchemaRegistryTimeout when
	// 0.
	timeout time.Duration
	// logger gets one line for each record that fails validation, saying why; slog.Default()
	// when nil.
	logger *slog.Logger
}

// schemaRegistry is a Kafka mapping's SchemaRegistryConfig (WithSchemaRegistry), ready to use.
type schemaRegistry struct {
	uri        string
	registry   codec.Registry // cached
	glue       bool           // a Glue registry: Glue framing and schema version UUIDs
	json       bool           // EventRecordFormat JSON
	key, value bool
	timeout    time.Duration
	log        *slog.Logger

	avro   codec.Codec[any] // decodes Avro with the registry's schemas, parsed once per ID
	parsed sync.Map         // schema ID -> *parsedSchema
}

// WithSchemaRegistry makes the mapping validate records against a schema registry before it
// delivers them, as AWS does with the SchemaRegistryConfig of
// AmazonManagedKafkaEventSourceConfig or SelfManagedKafkaEventSourceConfig
// (https://docs.aws.amazon.com/lambda/latest/dg/services-consume-kafka-events.html): it checks
// the key, the value or both (cfg.Attributes) of every record against the writer's schema,
// found in the registry by the schema ID the producer framed the bytes with:
//
//   - a key or value that is not framed (no Confluent magic byte 0, no Glue header), or whose
//     schema ID the registry does not have, makes the record fail with [ConditionSchemaNotFound];
//   - one that does not decode with its schema (Avro, Protobuf) or does not validate against it
//     (JSON Schema) fails with [ConditionDeserializationError];
//   - so does one whose schema is over codec's limits (expanded size, depth, alternatives: see
//     codec.SchemaLimitError), measured before anything is compiled from it, once per schema
//     ID: a few kilobytes of JSON Schema whose nested anyOfs a validator would try 2^22 times,
//     or an Avro schema that expands to 2^25 fields, fail each of their records at once;
//   - and so does a JSON value not validated within cfg.timeout.
//
// Such a record is never delivered: the mapping gives up on it alone, at once (a retry cannot
// make it valid), sends it to the on-failure destination (if any) with that condition, and
// commits it; cfg.logger gets one line saying why. A registry that cannot be asked
// (unreachable, HTTP 5xx, no answer within cfg.timeout) or whose schema cannot be used (a
// .proto that does not compile, references to other subjects) fails no record: the record
// waits and is checked again. So does a record whose schema is still being compiled when
// cfg.timeout ends: each schema is compiled once, on a goroutine of its own that the record
// stops waiting for, and the records of that schema wait for the same compilation.
//
// A record that passes is delivered with its key or value as cfg.EventRecordFormat says:
// [recordFormatJSON], the JSON text of the decoded value (base64-encoded, as every key and value
// of the event); [recordFormatSource], the producer's bytes without the registry's framing (for
// Protobuf the message indexes stay, Confluent's list or Glue's single varint, as observed on
// AWS; a zlib-compressed Glue payload is inflated). Either way the record carries
// keySchemaMetadata or valueSchemaMetadata, {"dataFormat":"AVRO"|"PROTOBUF"|"JSON",
// "schemaId":"…"}, the schema ID a Confluent decimal or a Glue schema version UUID. A null key
// or value has no schema: it is delivered as null, without metadata (AWS does not say what it
// does with one). Protobuf schemas are compiled from the registry's .proto source, with the
// well-known types available; JSON as protobuf's canonical JSON mapping.
//
// A configuration the mapping cannot emulate (a Glue ARN without GlueEndpoint, a URI that is
// neither a URL nor a Glue registry ARN, an unknown format or attribute, no attribute) is a
// *toolkit.OptionError of NewKafka. By default records are delivered as they are.
func WithSchemaRegistry(cfg SchemaRegistryConfig) KafkaOption {
	return kafkaOption(func(c *kafkaConfig) {
		s, errs := newSchemaRegistry(cfg)
		for _, e := range errs {
			c.reject("WithSchemaRegistry", "%s", e)
		}
		if len(errs) == 0 {
			c.schema = s
		}
	})
}

// newSchemaRegistry checks cfg and makes its registry client; it returns every problem.
func newSchemaRegistry(cfg SchemaRegistryConfig) (*schemaRegistry, []string) {
	var bad []string
	s := &schemaRegistry{uri: cfg.SchemaRegistryURI, timeout: cfg.timeout, log: cfg.logger}
	if s.timeout == 0 {
		s.timeout = defaultSchemaRegistryTimeout
	}
	if s.timeout < 0 {
		bad = append(bad, fmt.Sprintf("Timeout %v is negative", cfg.timeout))
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	switch cfg.EventRecordFormat {
	case recordFormatJSON:
		s.json = true
	case recordFormatSource:
	default:
		bad = append(bad, fmt.Sprintf("EventRecordFormat %q: want JSON or SOURCE", cfg.EventRecordFormat))
	}
	for _, a := range cfg.Attributes {
		switch a {
		case attributeKey:
			s.key = true
		case attributeValue:
			s.value = true
		default:
			bad = append(bad, fmt.Sprintf("SchemaValidationConfigs attribute %q: want KEY or VALUE", a))
		}
	}
	if len(cfg.Attributes) == 0 {
		bad = append(bad, "no SchemaValidationConfigs attribute: want KEY, VALUE or both (the mapping would validate nothing)")
	}
	reg, err := registryFor(cfg)
	if err != nil {
		bad = append(bad, err.Error())
	} else {
		s.registry = codec.Cached(reg)
		s.glue = strings.HasPrefix(cfg.SchemaRegistryURI, "arn:")
	}
	avro, err := codec.Avro[any]()
	if err != nil {
		bad = append(bad, err.Error())
	}
	s.avro = avro
	return s, bad
}

// registryFor returns the registry cfg.SchemaRegistryURI names.
func registryFor(cfg SchemaRegistryConfig) (codec.Registry, error) {
	uri := cfg.SchemaRegistryURI
	if strings.HasPrefix(uri, "arn:") {
		region, err := glueRegistryRegion(uri)
		if err != nil {
			return nil, err
		}
		if cfg.glueEndpoint == "" {
			return nil, fmt.Errorf("SchemaRegistryURI %s is an AWS Glue registry, and no GlueEndpoint was given to read it from (klt does not call AWS itself; give a local Glue endpoint, or use a Confluent registry URL)", uri)
		}
		if u, err := url.Parse(cfg.glueEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("GlueEndpoint %q: want an http or https URL", cfg.glueEndpoint)
		}
		client := glue.New(glue.Options{
			Region:       region,
			BaseEndpoint: aws.String(cfg.glueEndpoint),
			Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		})
		return codecglue.NewRegistry(client), nil
	}
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("SchemaRegistryURI %q: want a Confluent registry URL (http or https) or an AWS Glue registry ARN", uri)
	}
	return codec.NewConfluentRegistry(uri, cfg.confluentOptions...)
}

// glueRegistryRegion checks that arn is a Glue registry ARN and returns its region.
func glueRegistryRegion(arn string) (string, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[2] != "glue" || parts[3] == "" || !strings.HasPrefix(parts[5], "registry/") || len(parts[5]) == len("registry/") {
		return "", fmt.Errorf("SchemaRegistryURI %q: want an AWS Glue registry ARN, arn:aws:glue:region:account:registry/name", arn)
	}
	return parts[3], nil
}

// fieldCheck is the outcome of validating one key or value.
type fieldCheck struct {
	data      []byte // as delivered
	format    string // codec.FormatAvro, FormatProtobuf, FormatJSON
	id        string // schema ID
	condition string // ConditionSchemaNotFound or ConditionDeserializationError; "" when valid
	why       error  // why the condition
}

// encodeRecord returns record r as the event carries it. With a schema registry, the mapping
// validates (and, for EventRecordFormat JSON, converts) the key and value first; a record it
// cannot is returned with the on-failure condition (ConditionSchemaNotFound or
// ConditionDeserializationError) instead, to be given up on alone. err is a failure of the
// registry itself (unreachable), after which the record is tried again.
func (m *Kafka) encodeRecord(ctx context.Context, r *kgo.Record) (json []byte, condition string, err error) {
	s := m.cfg.schema
	if s == nil {
		return appendKafkaRecord(nil, r), "", nil
	}
	out := *r
	var metas []byte
	for _, f := range []struct {
		on   bool
		name string
		data *[]byte
	}{{s.key, "key", &out.Key}, {s.value, "value", &out.Value}} {
		if !f.on || *f.data == nil {
			continue
		}
		c, err := s.check(ctx, *f.data)
		if err != nil {
			return nil, "", fmt.Errorf("esm: mapping %q: schema registry %s: %s of %s offset %d: %w", m.cfg.name, s.uri, f.name, m.partitionID(r.Partition), r.Offset, err)
		}
		if c.condition != "" {
			// AWS: a record that fails the registry's validation goes to the on-failure
			// destination with SCHEMA_NOT_FOUND or DESERIALIZATION_ERROR (field-2026.md:
			// "failures SCHEMA_NOT_FOUND / DESERIALIZATION_ERROR to the destination"); a
			// schema over codec's limits, which the mapping refuses to compile, is a
			// validation the record cannot pass.
			s.log.Warn("esm: record fails schema validation; giving up on it",
				"mapping", m.cfg.name, "partition", m.partitionID(r.Partition), "offset", r.Offset,
				"condition", c.condition, "field", f.name, "schemaId", c.id, "error", c.why.Error())
			return nil, c.condition, nil
		}
		*f.data = c.data
		metas = append(metas, `,"`+f.name+`SchemaMetadata":{"dataFormat":`...)
		metas = jsonscan.AppendString(metas, c.format)
		metas = append(metas, `,"schemaId":`...)
		metas = jsonscan.AppendString(metas, c.id)
		metas = append(metas, '}')
	}
	b := appendKafkaRecord(nil, &out)
	b = append(b[:len(b)-1], metas...) // appendKafkaRecord's last byte closes the record
	return append(b, '}'), "", nil
}

// check validates one framed key or value. err is the registry's failure, never the data's.
func (s *schemaRegistry) check(ctx context.Context, data []byte) (fieldCheck, error) {
	id, payload, err := s.unframe(data)
	if err != nil {
		var we *codec.WireError
		if errors.As(err, &we) && we.Offset >= s.headerLen() {
			return fieldCheck{id: id, condition: ConditionDeserializationError, why: err}, nil
		}
		return fieldCheck{id: id, condition: ConditionSchemaNotFound, why: err}, nil
	}
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	schema, err := s.registry.Schema(rctx, id)
	cancel()
	if errors.Is(err, codec.ErrSchemaNotFound) {
		return fieldCheck{id: id, condition: ConditionSchemaNotFound, why: err}, nil
	}
	if err != nil {
		return fieldCheck{}, err
	}
	// The check of the key or value has the registry's timeout too: a schema that takes
	// longer to compile makes the record wait and be checked again (the compilation goes on,
	// once), one that takes longer to validate fails it.
	vctx, cancel := context.WithTimeout(ctx, s.timeout)
	out, err := s.decode(vctx, schema, payload)
	cancel()
	if errors.Is(err, errUnusableSchema) || errors.Is(err, errStillBuilding) || ctx.Err() != nil {
		return fieldCheck{}, err
	}
	if err != nil {
		return fieldCheck{id: id, format: schema.Format, condition: ConditionDeserializationError, why: err}, nil
	}
	return fieldCheck{data: out, format: schema.Format, id: id}, nil
}

// headerLen is the length of the registry's framing header.
func (s *schemaRegistry) headerLen() int {
	if s.glue {
		return 18
	}
	return 5
}

// unframe takes the registry's header off data: the schema ID, and the payload with the
// Protobuf message indexes still on.
func (s *schemaRegistry) unframe(data []byte) (id string, payload []byte, err error) {
	if s.glue {
		return codec.SplitGlue(data, codec.DefaultMaxInflated)
	}
	n, _, payload, err := codec.SplitConfluent(data, false)
	if err != nil {
		return "", nil, err
	}
	id = strconv.FormatUint(uint64(n), 10)
	if n > math.MaxInt32 {
		// Confluent IDs are Java ints: no registry has this one.
		return id, nil, fmt.Errorf("schema ID %d is over %d, the largest Confluent ID", n, math.MaxInt32)
	}
	return id, payload, nil
}

// errUnusableSchema is wrapped by the error of a schema the mapping cannot use (a .proto that
// does not compile, an Avro or JSON Schema that does not parse): the registry's fault, not
// the record's, so the record is not given up on.
var errUnusableSchema = errors.New("the registry's schema cannot be used")

// decode checks payload against schema and returns the key or value as delivered.
func (s *schemaRegistry) decode(ctx context.Context, schema *codec.Schema, payload []byte) ([]byte, error) {
	p, err := s.parse(ctx, schema)
	if err != nil {
		return nil, err
	}
	switch schema.Format {
	case codec.FormatAvro:
		return s.decodeAvro(ctx, schema, p, payload)
	case codec.FormatProtobuf:
		return s.decodeProtobuf(ctx, p, payload)
	case codec.FormatJSON:
		return s.decodeJSON(ctx, p, payload)
	}
	return nil, fmt.Errorf("%w: schema %s has format %q", errUnusableSchema, schema.ID, schema.Format)
}
