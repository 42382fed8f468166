package kafkaevent

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// FromAWS converts an aws-lambda-go Kafka event into an Event, as [Parse] would have decoded
// the same payload, as far as aws-lambda-go kept it.
//
// aws-lambda-go loses some of the payload before FromAWS sees it, so FromAWS cannot restore it:
//   - Key and Value are plain strings there: an absent, null and empty ("") key or value all
//     arrive as "". FromAWS makes "" a nil Key or Value, so an empty value becomes a tombstone
//     (tombstones are common, empty payloads rare). Parse keeps the difference.
//   - A null header value arrives as an empty slice; FromAWS keeps it empty. A nil
//     JSONNumberBytes (only in an event built in Go) becomes a nil header value.
//   - There is no schema metadata: KeySchema and ValueSchema stay nil.
//   - A header map with several names (only in an event built in Go) gives one header per name,
//     in name order.
//   - Timestamps are local times: FromAWS returns them in UTC, truncated to the millisecond.
//     The zero time and -1 ms (Kafka's "no timestamp") become the zero time.
//
// Partitions are sorted by topic, then number, like Parse sorts them; records keep their order.
//
// A record whose key or value is not valid standard base64 keeps the field nil and gets Err, an
// *Error with a path such as records["orders-0"][2].value, like Parse sets it; MarshalJSON then
// writes the record as aws-lambda-go would marshal it, bad field included. Errors from FromAWS
// have Offset -1, as there is no payload to point into.
//
// Records are grouped as Parse groups them, one Partition per key of Records, whose ID is that
// key; each record's own Topic and Partition are kept (a Topic of "" is taken as absent, and the
// key's topic stands). See [Partition] for events whose keys do not match their records.
//
// FromAWS fails as a whole, with an *Error, where Parse would fail on the same payload: when ke
// is nil, when eventSource is none of SourceMSK, SourceSelfManaged and "aws:SelfManagedKafka",
// when a record has no topic and its key is not "topic-N", when a partition is outside
// 0..2147483647, or when an offset is negative. Such a record could not be reported as a batch
// item failure.
func FromAWS(ke *events.KafkaEvent) (*Event, error) {
	if ke == nil {
		return nil, &Error{Prefix: prefix, Offset: -1, Msg: "nil events.KafkaEvent"}
	}
	src := Source(ke.EventSource)
	if src == sourceSelfManagedOld {
		src = SourceSelfManaged
	}
	if src != SourceMSK && src != SourceSelfManaged {
		return nil, &Error{Prefix: prefix, Path: "eventSource", Offset: -1, Msg: fmt.Sprintf("unknown event source %s", jsonscan.QuoteText(ke.EventSource))}
	}
	e := &Event{Source: src, SourceARN: ke.EventSourceARN}
	e.BootstrapServers = splitServers(ke.BootstrapServers)

	for _, id := range slices.Sorted(maps.Keys(ke.Records)) {
		path := "records[" + strconv.Quote(id) + "]"
		topic, num, keyOK := splitPartitionKey(id)
		part := Partition{Topic: topic, Number: num, key: id}
		krs := ke.Records[id]
		if len(krs) > 0 {
			part.Records = make([]Record, len(krs))
		}
		for i := range krs {
			kr := &krs[i]
			rpath := path + "[" + strconv.Itoa(i) + "]"
			rtopic := topic
			if kr.Topic != "" {
				rtopic = kr.Topic
			} else if !keyOK {
				return nil, &Error{Prefix: prefix, Path: rpath + ".topic", Offset: -1, Msg: `missing, and the records key is not "topic-N"`}
			}
			if kr.Partition < 0 || kr.Partition > math.MaxInt32 {
				return nil, &Error{Prefix: prefix, Path: rpath + ".partition", Offset: -1,
					Msg: fmt.Sprintf("want partition number 0..%d, got %d", math.MaxInt32, kr.Partition)}
			}
			if kr.Offset < 0 {
				return nil, &Error{Prefix: prefix, Path: rpath + ".offset", Offset: -1,
					Msg: fmt.Sprintf("want non-negative integer, got %d", kr.Offset)}
			}
			part.Records[i] = recordFromAWS(kr, rtopic, int32(kr.Partition), rpath)
		}
		if len(part.Records) > 0 {
			part.Topic, part.Number = part.Records[0].Topic, part.Records[0].Partition
		} else if !keyOK {
			part.Topic, part.Number = id, -1
		}
		if isPartitionID(id, part.Topic, part.Number) {
			part.key = ""
		} else {
			part.keyed = true
		}
		e.Partitions = append(e.Partitions, part)
	}
	sortPartitions(e.Partitions)
	return e, nil
}

func recordFromAWS(kr *events.KafkaRecord, topic string, partition int32, path string) Record {
	r := Record{
		Topic:         topic,
		Partition:     partition,
		Offset:        kr.Offset,
		TimestampType: kr.TimestampType,
	}
	if t := kr.Timestamp.Time; !t.IsZero() && t.UnixMilli() != -1 {
		r.Timestamp = millisUTC(t)
	}
	var err error
	if r.Key, err = decodeBase64(kr.Key, path+".key"); err != nil {
		r.Err = err
	}
	if r.Value, err = decodeBase64(kr.Value, path+".value"); err != nil && r.Err == nil {
		r.Err = err
	}
	for _, h := range kr.Headers {
		names := slices.Sorted(maps.Keys(h))
		for _, name := range names {
			var v []byte
			if h[name] != nil {
				v = bytes.Clone(h[name])
			}
			r.Headers = append(r.Headers, Header{Key: name, Value: v})
		}
	}
	if r.Err != nil {
		r.raw = awsRecordJSON(kr, topic)
	}
	return r
}

// decodeBase64 decodes s as standard base64, as Parse decodes a key or value: "" gives nil,
// and so does invalid base64, with an *Error at path. Like Parse, and unlike
// encoding/base64, it rejects line breaks.
func decodeBase64(s, path string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return nil, &Error{Prefix: prefix, Path: path, Offset: -1, Msg: fmt.Sprintf("invalid base64: line break at byte %d", i),
			Err: base64.CorruptInputError(i)}
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, &Error{Prefix: prefix, Path: path, Offset: -1, Msg: "invalid base64: " + err.Error(), Err: err}
	}
	return b, nil
}

// awsRecordJSON returns kr as aws-lambda-go marshals it, with its topic set and a zero
// timestamp written as -1, or nil if it cannot be marshalled.
func awsRecordJSON(kr *events.KafkaRecord, topic string) []byte {
	c := *kr
	c.Topic = topic
	if c.Timestamp.IsZero() {
		c.Timestamp.Time = time.UnixMilli(-1)
	}
	if c.Headers == nil {
		c.Headers = []map[string]events.JSONNumberBytes{}
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return nil
	}
	return b
}

// ToAWS converts e into an aws-lambda-go Kafka event, for handlers written against
// events.KafkaEvent. It returns nil for a nil event.
//
// The conversion loses what aws-lambda-go cannot hold: nil and empty keys and values both
// become "" (which it leaves out of its JSON), nil and empty header values both become an empty
// JSONNumberBytes (written as []), and KeySchema and ValueSchema are dropped. A zero Timestamp
// becomes -1 ms, the time aws-lambda-go decodes Kafka's "no timestamp" to; timestamps are in
// UTC. Headers is an empty, non-nil slice when a record has none, so that it marshals as []. A
// record with Err that came from Parse or FromAWS is converted from the JSON it was read from,
// when aws-lambda-go can decode that JSON, so a bad base64 field is kept as it was.
func ToAWS(e *Event) *events.KafkaEvent {
	if e == nil {
		return nil
	}
	ke := &events.KafkaEvent{
		EventSource:      string(e.Source),
		EventSourceARN:   e.SourceARN,
		BootstrapServers: strings.Join(e.BootstrapServers, ","),
		Records:          make(map[string][]events.KafkaRecord, len(e.Partitions)),
	}
	for i := range e.Partitions {
		p := &e.Partitions[i]
		id := p.ID()
		rs := ke.Records[id]
		if rs == nil {
			rs = make([]events.KafkaRecord, 0, len(p.Records))
		}
		for j := range p.Records {
			rs = append(rs, recordToAWS(&p.Records[j]))
		}
		ke.Records[id] = rs
	}
	return ke
}

func recordToAWS(r *Record) events.KafkaRecord {
	if r.Err != nil && r.raw != nil {
		var kr events.KafkaRecord
		if json.Unmarshal(r.raw, &kr) == nil {
			kr.Timestamp.Time = kr.Timestamp.UTC()
			if kr.Headers == nil {
				kr.Headers = []map[string]events.JSONNumberBytes{}
			}
			return kr
		}
	}
	kr := events.KafkaRecord{
		Topic:         r.Topic,
		Partition:     int64(r.Partition),
		Offset:        r.Offset,
		TimestampType: r.TimestampType,
		Headers:       make([]map[string]events.JSONNumberBytes, len(r.Headers)),
	}
	if r.Timestamp.IsZero() {
		kr.Timestamp.Time = time.UnixMilli(-1).UTC()
	} else {
		kr.Timestamp.Time = r.Timestamp.UTC()
	}
	if len(r.Key) > 0 {
		kr.Key = base64.StdEncoding.EncodeToString(r.Key)
	}
	if len(r.Value) > 0 {
		kr.Value = base64.StdEncoding.EncodeToString(r.Value)
	}
	for i, h := range r.Headers {
		v := make(events.JSONNumberBytes, len(h.Value))
		copy(v, h.Value)
		kr.Headers[i] = map[string]events.JSONNumberBytes{h.Key: v}
	}
	return kr
}
