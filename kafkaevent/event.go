package kafkaevent

import (
	"cmp"
	"iter"
	"slices"
	"strconv"
	"time"
)

// Source tells which kind of event source mapping delivered an event.
type Source string

// The two Kafka event sources. [Parse] also reads "aws:SelfManagedKafka", an older spelling
// found in the fixtures of Powertools for AWS Lambda, as SourceSelfManaged; any other
// eventSource value is an error.
const (
	// SourceMSK is an Amazon MSK event source mapping; its events carry an eventSourceArn.
	SourceMSK Source = "aws:kafka"
	// SourceSelfManaged is a self-managed Apache Kafka event source mapping; its events carry
	// no eventSourceArn.
	SourceSelfManaged Source = "SelfManagedKafka"
)

// sourceSelfManagedOld is a spelling of SourceSelfManaged found in the fixtures of Powertools
// for AWS Lambda (TypeScript); Parse and FromAWS read it as SourceSelfManaged.
const sourceSelfManagedOld = "aws:SelfManagedKafka"

// Timestamp types Kafka assigns to records. [Record.TimestampType] is an open string: these
// are the values Lambda is known to send, not the only ones Parse accepts.
const (
	CreateTime    = "CREATE_TIME"
	LogAppendTime = "LOG_APPEND_TIME"
)

// Event is one invocation payload of a Kafka event source mapping.
type Event struct {
	// Source is SourceMSK or SourceSelfManaged.
	Source Source
	// SourceARN is the MSK cluster ARN; empty for self-managed Kafka.
	SourceARN string
	// BootstrapServers is the comma-separated bootstrapServers string, split into host:port
	// entries. Nil when the payload has none.
	BootstrapServers []string
	// Partitions holds the batch, sorted by topic, then partition number.
	Partitions []Partition
}

// Partition is the run of records Lambda delivered under one key of the event's records object,
// in delivered order.
//
// Lambda keys records "topic-N", and every record under a key comes from that topic partition.
// Hand-written events do not always agree: keys such as "mytopic-01" or "topic1", or records of
// partition 12 under "mytopic-0", are found in the fixtures of well-known projects. Parse and
// [FromAWS] accept them and keep one Partition per key, so that [Partition.ID] names it exactly
// as the event did and a partial-batch response built from it reaches Lambda under the key Lambda
// used. Each record keeps its own topic and partition ([Record.Topic], [Record.Partition]); Topic
// and Number here are those of the first record (or, for a key with no records, what the key
// says: Topic is the whole key and Number -1 when it is not "topic-N").
type Partition struct {
	Topic   string
	Number  int32
	Records []Record

	// key is the records key as it appeared in the event, when keyed is set: when it is not
	// the "topic-N" that ID would make from Topic and Number.
	key   string
	keyed bool
}

// ID returns the key of this partition in the event's records object, the one a partial-batch
// response must give as itemIdentifier.partition. For a Partition from [Parse] or [FromAWS] it
// is the key exactly as the event had it; for one built in code it is "topic-N" from Topic and
// Number. It differs from [Record.PartitionID], which is made from the record's own fields,
// only in events whose keys do not match their records (see [Partition]).
func (p *Partition) ID() string {
	if p.keyed {
		return p.key
	}
	return partitionID(p.Topic, p.Number)
}

func partitionID(topic string, n int32) string {
	return topic + "-" + strconv.FormatInt(int64(n), 10)
}

// Record is one Kafka record.
//
// Key and Value are nil when the field is absent or null, and empty but non-nil when it is the
// empty string: a nil Value is a tombstone, an empty Value is an empty payload. Byte slices
// returned by Parse share one backing array per event; they have no spare capacity, so
// appending to one copies it instead of overwriting its neighbour.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	// Timestamp is the record time in UTC, to the millisecond. It is the zero time when the
	// record has no timestamp (Kafka's -1).
	Timestamp time.Time
	// TimestampType is CreateTime, LogAppendTime or whatever else the payload says.
	TimestampType string
	Key           []byte
	Value         []byte
	// Headers keeps the order of the payload, and repeated names.
	Headers []Header
	// KeySchema and ValueSchema are set when the event source mapping has a schema registry.
	KeySchema   *SchemaMetadata
	ValueSchema *SchemaMetadata
	// Err is set when the record's own fields are malformed (bad base64, a header byte out of
	// range, a timestamp that is not an integer). Topic, Partition and Offset are always valid,
	// so the record can still be reported as a batch item failure; the other fields hold what
	// could be decoded. Err is an *Error naming the field.
	Err error

	// raw is the record's JSON as received when Err is set, so that MarshalJSON writes back
	// exactly what could not be decoded.
	raw []byte
}

// PartitionID returns "topic-N" made from the record's own Topic and Partition: the Kafka topic
// partition the record comes from. Lambda keys its records the same way, so in the events it
// sends this equals the [Partition.ID] of the record's partition; in a hand-written event whose
// keys do not match their records it may not. A partial-batch response must name the partition
// as the event keyed it, by Partition.ID, which package batch does.
func (r *Record) PartitionID() string { return partitionID(r.Topic, r.Partition) }

// IsTombstone reports whether the record is a deletion marker: its value is absent or null.
func (r *Record) IsTombstone() bool { return r.Value == nil }

// Header returns the value of the first header named name, and whether there is one.
// A header whose value is null has a nil value.
func (r *Record) Header(name string) ([]byte, bool) {
	for i := range r.Headers {
		if r.Headers[i].Key == name {
			return r.Headers[i].Value, true
		}
	}
	return nil, false
}

// HeaderValues returns the values of every header named name, in order.
func (r *Record) HeaderValues(name string) [][]byte {
	var vs [][]byte
	for i := range r.Headers {
		if r.Headers[i].Key == name {
			vs = append(vs, r.Headers[i].Value)
		}
	}
	return vs
}

// Header is one Kafka record header. Value is nil when the payload's value is null.
type Header struct {
	Key   string
	Value []byte
}

// SchemaMetadata is the keySchemaMetadata or valueSchemaMetadata Lambda adds to a record when
// the event source mapping uses a schema registry.
type SchemaMetadata struct {
	// DataFormat is "AVRO", "PROTOBUF" or "JSON".
	DataFormat string
	// SchemaID is a Glue schema version UUID or a Confluent schema id in decimal.
	SchemaID string
}

// Len returns the number of records in the event.
func (e *Event) Len() int {
	n := 0
	for i := range e.Partitions {
		n += len(e.Partitions[i].Records)
	}
	return n
}

// All returns an iterator over the event's records, partition after partition in the order of
// e.Partitions, and within a partition in delivered order. It yields pointers into the event, so
// a handler may keep them as long as it keeps the event.
func (e *Event) All() iter.Seq[*Record] {
	return func(yield func(*Record) bool) {
		for i := range e.Partitions {
			rs := e.Partitions[i].Records
			for j := range rs {
				if !yield(&rs[j]) {
					return
				}
			}
		}
	}
}

// sortPartitions sorts ps by topic, then partition number, then records key, keeping the order
// of equal ones.
func sortPartitions(ps []Partition) {
	slices.SortStableFunc(ps, func(a, b Partition) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Number, b.Number); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
}

// millisUTC returns t in UTC, truncated to the millisecond, as Parse makes timestamps; the zero
// time stays zero.
func millisUTC(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}
