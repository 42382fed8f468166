package esm

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// kafkaEnvelope writes the parts of a Kafka event that are the same for every invocation:
// everything before the "records" object's first key, and everything after it. An event
// holds one array per partition, keyed "topic-N", in ascending partition order.
type kafkaEnvelope struct {
	head []byte // {"eventSource":...,"records":{
	tail []byte // }}
}

func newKafkaEnvelope(source kafkaevent.Source, arn string, bootstrap []string) kafkaEnvelope {
	b := []byte(`{"eventSource":`)
	b = jsonscan.AppendString(b, string(source))
	if arn != "" {
		b = append(b, `,"eventSourceArn":`...)
		b = jsonscan.AppendString(b, arn)
	}
	if len(bootstrap) > 0 {
		b = append(b, `,"bootstrapServers":`...)
		b = jsonscan.AppendString(b, strings.Join(bootstrap, ","))
	}
	b = append(b, `,"records":{`...)
	return kafkaEnvelope{head: b, tail: []byte(`}}`)}
}

// partitionKey is the "records" key of a partition with what follows it: "topic-N":[
func partitionKey(topic string, partition int32) []byte {
	b := jsonscan.AppendString(nil, topic+"-"+strconv.FormatInt(int64(partition), 10))
	return append(b, `:[`...)
}

// kafkaSizer adds up the length of an event as records join it. The length does not depend
// on the order in which they join: each partition adds its key, its brackets and a comma
// between arrays, each record its JSON and a comma between records.
type kafkaSizer struct {
	bytes int // the event's length so far, head and tail included
	parts int // partitions with records
}

func newKafkaSizer(env *kafkaEnvelope) kafkaSizer {
	return kafkaSizer{bytes: len(env.head) + len(env.tail)}
}

// with returns the event's length once a record of part with JSON length n joins it; first
// says that it is part's first record in the event.
func (s kafkaSizer) with(part *kafkaPart, first bool, n int) int {
	if !first {
		return s.bytes + 1 + n // comma
	}
	b := s.bytes + len(part.key) + 1 + n // "topic-N":[ … ]
	if s.parts > 0 {
		b++ // comma between arrays
	}
	return b
}

func (s *kafkaSizer) add(part *kafkaPart, first bool, n int) {
	s.bytes = s.with(part, first, n)
	if first {
		s.parts++
	}
}

// build writes the event holding entries, which are grouped by partition in ascending
// partition order and in offset order within each.
func (e *kafkaEnvelope) build(entries []*kafkaEntry) []byte {
	sz := newKafkaSizer(e)
	var prev *kafkaPart
	for _, en := range entries {
		sz.add(en.part, en.part != prev, len(en.json))
		prev = en.part
	}
	b := make([]byte, 0, sz.bytes)
	b = append(b, e.head...)
	var last *kafkaPart
	for _, en := range entries {
		switch {
		case en.part != last && last != nil:
			b = append(b, "],"...)
			fallthrough
		case en.part != last:
			b = append(b, en.part.key...)
			last = en.part
		default:
			b = append(b, ',')
		}
		b = append(b, en.json...)
	}
	if last != nil {
		b = append(b, ']')
	}
	return append(b, e.tail...)
}

// appendKafkaRecord writes r as one element of the event's records array, in the shape the
// event source mapping writes (esm-contract.md §1.2): key and value in standard base64, null
// when Kafka's is null; headers as an array of one-member objects whose values are Java's
// signed bytes; timestamp in epoch milliseconds and timestampType CREATE_TIME or
// LOG_APPEND_TIME.
func appendKafkaRecord(b []byte, r *kgo.Record) []byte {
	b = append(b, `{"topic":`...)
	b = jsonscan.AppendString(b, r.Topic)
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(r.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, r.Offset, 10)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, r.Timestamp.UnixMilli(), 10)
	b = append(b, `,"timestampType":`...)
	b = jsonscan.AppendString(b, timestampType(r))
	b = append(b, `,"key":`...)
	b = appendBase64OrNull(b, r.Key)
	b = append(b, `,"value":`...)
	b = appendBase64OrNull(b, r.Value)
	b = append(b, `,"headers":[`...)
	for i, h := range r.Headers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		b = jsonscan.AppendString(b, h.Key)
		b = append(b, ':')
		if h.Value == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for j, c := range h.Value {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(int8(c)), 10)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// timestampType names the record's timestamp type as Lambda does.
func timestampType(r *kgo.Record) string {
	if r.Attrs.TimestampType() == 1 {
		return kafkaevent.LogAppendTime
	}
	return kafkaevent.CreateTime
}

// kafkaRecord is r as package kafkaevent sees it, for FilterCriteria.
func kafkaRecord(r *kgo.Record) *kafkaevent.Record {
	kr := &kafkaevent.Record{
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		Timestamp: r.Timestamp.UTC().Truncate(time.Millisecond), TimestampType: timestampType(r),
		Key: r.Key, Value: r.Value,
	}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kafkaevent.Header{Key: h.Key, Value: h.Value})
	}
	return kr
}

func appendBase64OrNull(b, v []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}
