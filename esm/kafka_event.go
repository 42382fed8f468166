package esm

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// MaxPayloadBytes is the largest event a Kafka mapping sends in one invocation: Lambda's
// limit for a synchronous invocation payload, 6 MB (6,291,456 bytes). A batch stops growing
// before its JSON would exceed it; a record whose JSON alone exceeds it is never delivered
// (see [OnFailureSQS]).
const MaxPayloadBytes = 6 << 20

// kafkaEnvelope writes the parts of a Kafka event that are the same for every invocation of
// one partition: everything before the first record, and everything after the last.
type kafkaEnvelope struct {
	head []byte // {"eventSource":...,"records":{"topic-N":[
	tail []byte // ]}}
}

func newKafkaEnvelope(source kafkaevent.Source, arn string, bootstrap []string, topic string, partition int32) kafkaEnvelope {
	b := []byte(`{"eventSource":`)
	b = appendJSONString(b, string(source))
	if arn != "" {
		b = append(b, `,"eventSourceArn":`...)
		b = appendJSONString(b, arn)
	}
	if len(bootstrap) > 0 {
		b = append(b, `,"bootstrapServers":`...)
		b = appendJSONString(b, strings.Join(bootstrap, ","))
	}
	b = append(b, `,"records":{`...)
	b = appendJSONString(b, topic+"-"+strconv.FormatInt(int64(partition), 10))
	b = append(b, `:[`...)
	return kafkaEnvelope{head: b, tail: []byte(`]}}`)}
}

// size is the length of the event holding records whose JSON lengths add up to recordBytes.
func (e kafkaEnvelope) size(n, recordBytes int) int {
	commas := 0
	if n > 0 {
		commas = n - 1
	}
	return len(e.head) + recordBytes + commas + len(e.tail)
}

// build writes the event holding the records, each already encoded by appendKafkaRecord.
func (e kafkaEnvelope) build(records [][]byte) []byte {
	n := 0
	for _, r := range records {
		n += len(r)
	}
	b := make([]byte, 0, e.size(len(records), n))
	b = append(b, e.head...)
	for i, r := range records {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
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
	b = appendJSONString(b, r.Topic)
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(r.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, r.Offset, 10)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, r.Timestamp.UnixMilli(), 10)
	b = append(b, `,"timestampType":`...)
	b = appendJSONString(b, timestampType(r))
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
		b = appendJSONString(b, h.Key)
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

// appendJSONString writes s as a JSON string, escaped as encoding/json escapes it except that
// <, > and & are kept; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
