// Package kafkaeventtest builds Kafka event source mapping events for tests and fixtures, as
// net/http/httptest builds requests: records added one by one, offsets and timestamps filled
// in, and an event that kafkaevent.Parse would have returned for the same JSON.
package kafkaeventtest

import (
	"bytes"
	"cmp"
	"slices"
	"time"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// Defaults of a [Builder]. They are plausible values, not real resources.
const (
	// DefaultMSKSourceARN is the eventSourceArn a Builder gives MSK events.
	DefaultMSKSourceARN = "arn:aws:kafka:us-east-1:123456789012:cluster/demo-cluster/6f0c7d8e-1a2b-4c3d-9e8f-0a1b2c3d4e5f-2"
)

var (
	defaultMSKBootstrap         = []string{"b-1.demo-cluster.a1bcde.c2.kafka.us-east-1.amazonaws.com:9098", "b-2.demo-cluster.a1bcde.c2.kafka.us-east-1.amazonaws.com:9098"}
	defaultSelfManagedBootstrap = []string{"kafka-1.example.internal:9092", "kafka-2.example.internal:9092"}
	// defaultStart is the time of a Builder's first record: fixed, so fixtures are reproducible.
	defaultStart = time.Date(2026, time.January, 15, 10, 0, 0, 0, time.UTC)
)

// Builder makes events for tests and fixtures. Add records to it, then call Event:
//
//	ev := kafkaeventtest.NewBuilder().
//		Add("orders", 0, []byte(`{"id":1}`), kafkaeventtest.WithKey([]byte("o-1"))).
//		Add("orders", 0, nil). // a tombstone
//		Event()
//
// Unless told otherwise, a record's offset is the next one of its partition (0 first), its
// timestamp is the builder's start time plus one millisecond per record added before it, and
// its timestamp type is kafkaevent.CreateTime. A Builder is not safe for concurrent use.
type Builder struct {
	source  kafkaevent.Source
	arn     string
	servers []string
	start   time.Time

	added int64                  // records added, for automatic timestamps
	parts []kafkaevent.Partition // in order of first use; sorted by Event
	next  []int64                // next automatic offset of parts[i]
	index map[pkey]int           // position of a topic partition in parts
}

type pkey struct {
	topic string
	n     int32
}

type builderConfig struct {
	source     kafkaevent.Source
	arn        string
	arnSet     bool
	servers    []string
	serversSet bool
	start      time.Time
}

// BuilderOption configures a [Builder]; pass it to [NewBuilder].
type BuilderOption func(*builderConfig)

// WithEventSource sets the eventSource; the default is kafkaevent.SourceMSK.
func WithEventSource(s kafkaevent.Source) BuilderOption {
	return func(c *builderConfig) { c.source = s }
}

// WithEventSourceARN sets the eventSourceArn. The default is [DefaultMSKSourceARN] for
// kafkaevent.SourceMSK and none for other sources; WithEventSourceARN("") leaves it out.
func WithEventSourceARN(arn string) BuilderOption {
	return func(c *builderConfig) { c.arn, c.arnSet = arn, true }
}

// WithBootstrapServers sets the bootstrap servers, host:port each. The default is two plausible
// brokers of the source's kind; WithBootstrapServers() with no servers leaves the field out.
func WithBootstrapServers(servers ...string) BuilderOption {
	return func(c *builderConfig) { c.servers, c.serversSet = slices.Clone(servers), true }
}

// WithStartTime sets the timestamp of the first record added; each later one is a millisecond
// later. The time is kept in UTC, to the millisecond. The default is 2026-01-15T10:00:00Z, so
// that events are the same on every run. The zero time gives records no timestamp (-1 on the
// wire) unless they have a Timestamp option.
func WithStartTime(t time.Time) BuilderOption {
	return func(c *builderConfig) { c.start = t }
}

// NewBuilder returns an empty Builder configured by opts.
func NewBuilder(opts ...BuilderOption) *Builder {
	c := builderConfig{source: kafkaevent.SourceMSK, start: defaultStart}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	b := &Builder{source: c.source, arn: c.arn, servers: c.servers, start: millisUTC(c.start)}
	if !c.arnSet && c.source == kafkaevent.SourceMSK {
		b.arn = DefaultMSKSourceARN
	}
	if !c.serversSet {
		if c.source == kafkaevent.SourceMSK {
			b.servers = slices.Clone(defaultMSKBootstrap)
		} else {
			b.servers = slices.Clone(defaultSelfManagedBootstrap)
		}
	} else if len(b.servers) == 0 {
		b.servers = nil
	}
	return b
}

type recordConfig struct {
	key         []byte
	offset      int64
	offsetSet   bool
	ts          time.Time
	tsSet       bool
	tsType      string
	headers     []kafkaevent.Header
	keySchema   *kafkaevent.SchemaMetadata
	valueSchema *kafkaevent.SchemaMetadata
}

// RecordOption sets a field of a record added with [Builder.Add].
type RecordOption func(*recordConfig)

// WithKey sets the record key; nil (the default) means no key, and []byte{} an empty one.
func WithKey(k []byte) RecordOption {
	return func(c *recordConfig) { c.key = bytes.Clone(k) }
}

// WithOffset sets the record offset. The default is the offset after the previous record of the
// same partition, 0 for its first. Later records of the same partition without an Offset
// option follow it: n+1, n+2 and so on. Records stay in the order added, even if offsets go down.
// Kafka offsets are never negative, and Parse rejects a negative one.
func WithOffset(n int64) RecordOption {
	return func(c *recordConfig) { c.offset, c.offsetSet = n, true }
}

// WithTimestamp sets the record time, kept in UTC to the millisecond. The default is the builder's
// start time plus one millisecond per record added before this one (see [WithStartTime]). The
// zero time means that the record has no timestamp, which the wire format writes as -1.
func WithTimestamp(t time.Time) RecordOption {
	return func(c *recordConfig) { c.ts, c.tsSet = millisUTC(t), true }
}

// WithTimestampType sets the record's timestamp type; the default is kafkaevent.CreateTime.
func WithTimestampType(t string) RecordOption {
	return func(c *recordConfig) { c.tsType = t }
}

// WithHeader adds a header to the record; by default a record has none. Headers keep the
// order of their options, and a name may repeat. A nil value is a null header value.
func WithHeader(name string, value []byte) RecordOption {
	return func(c *recordConfig) {
		c.headers = append(c.headers, kafkaevent.Header{Key: name, Value: bytes.Clone(value)})
	}
}

// WithKeySchemaMetadata sets the record's keySchemaMetadata (Record.KeySchema), as an event
// source mapping with a schema registry adds it: format is "AVRO", "PROTOBUF" or "JSON", id a
// Confluent schema id or a Glue schema version UUID. By default a record has no schema
// metadata. (codec.WithKeySchema is another thing: it frames serialized bytes in a wire
// format.)
func WithKeySchemaMetadata(format, id string) RecordOption {
	return func(c *recordConfig) { c.keySchema = &kafkaevent.SchemaMetadata{DataFormat: format, SchemaID: id} }
}

// WithValueSchemaMetadata sets the record's valueSchemaMetadata (Record.ValueSchema); see
// [WithKeySchemaMetadata]. By default a record has no schema metadata.
func WithValueSchemaMetadata(format, id string) RecordOption {
	return func(c *recordConfig) { c.valueSchema = &kafkaevent.SchemaMetadata{DataFormat: format, SchemaID: id} }
}

// Add appends a record with the given value to partition number partition of topic, and
// returns b. A nil value makes a tombstone; []byte{} an empty value. Add copies value and
// every byte slice given in opts.
func (b *Builder) Add(topic string, partition int32, value []byte, opts ...RecordOption) *Builder {
	c := recordConfig{tsType: kafkaevent.CreateTime}
	if !b.start.IsZero() {
		c.ts = millisUTC(b.start.Add(time.Duration(b.added) * time.Millisecond))
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	b.added++

	k := pkey{topic, partition}
	i, ok := b.index[k]
	if !ok {
		if b.index == nil {
			b.index = make(map[pkey]int)
		}
		i = len(b.parts)
		b.index[k] = i
		b.parts = append(b.parts, kafkaevent.Partition{Topic: topic, Number: partition})
		b.next = append(b.next, 0)
	}
	off := b.next[i]
	if c.offsetSet {
		off = c.offset
	}
	b.next[i] = off + 1
	b.parts[i].Records = append(b.parts[i].Records, kafkaevent.Record{
		Topic:         topic,
		Partition:     partition,
		Offset:        off,
		Timestamp:     c.ts,
		TimestampType: c.tsType,
		Key:           c.key,
		Value:         bytes.Clone(value),
		Headers:       c.headers,
		KeySchema:     c.keySchema,
		ValueSchema:   c.valueSchema,
	})
	return b
}

// Event returns the records added so far as an event, its partitions sorted by topic, then
// number, and each partition's records in the order added. The event is a copy: changing it
// does not change the builder, which may go on adding records and make more events.
func (b *Builder) Event() *kafkaevent.Event {
	e := &kafkaevent.Event{
		Source:           b.source,
		SourceARN:        b.arn,
		BootstrapServers: slices.Clone(b.servers),
	}
	if len(b.parts) == 0 {
		return e
	}
	e.Partitions = make([]kafkaevent.Partition, len(b.parts))
	for i := range b.parts {
		p := &b.parts[i]
		rs := make([]kafkaevent.Record, len(p.Records))
		for j := range p.Records {
			rs[j] = clone(&p.Records[j])
		}
		e.Partitions[i] = kafkaevent.Partition{Topic: p.Topic, Number: p.Number, Records: rs}
	}
	sortPartitions(e.Partitions)
	return e
}

// clone returns a copy of r that shares no memory with it (Err excepted).
func clone(r *kafkaevent.Record) kafkaevent.Record {
	c := *r
	c.Key = bytes.Clone(r.Key)
	c.Value = bytes.Clone(r.Value)
	if r.Headers != nil {
		c.Headers = make([]kafkaevent.Header, len(r.Headers))
		for i, h := range r.Headers {
			c.Headers[i] = kafkaevent.Header{Key: h.Key, Value: bytes.Clone(h.Value)}
		}
	}
	if r.KeySchema != nil {
		m := *r.KeySchema
		c.KeySchema = &m
	}
	if r.ValueSchema != nil {
		m := *r.ValueSchema
		c.ValueSchema = &m
	}
	return c
}

// sortPartitions sorts ps by topic, then partition number, keeping the order of equal ones.
func sortPartitions(ps []kafkaevent.Partition) {
	slices.SortStableFunc(ps, func(a, b kafkaevent.Partition) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Number, b.Number)
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
