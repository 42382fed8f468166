package jsonl

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// DecodedRecord is one output line of "klt event decode". It is a line of "klt event build"'s
// input format that gives every field of the record, so that decode's output builds the same
// records again; see lines.go.
type DecodedRecord struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Timestamp is an RFC 3339 string, or the number -1 for a record without a timestamp.
	Timestamp     any    `json:"timestamp"`
	TimestampType string `json:"timestampType"`
	// Key is the key as a string when it is text, or null when there is none; it is left out
	// (nil) when the key is binary and KeyBase64 holds it instead. Value likewise.
	Key         any             `json:"key,omitempty"`
	KeyBase64   string          `json:"keyBase64,omitempty"`
	Value       any             `json:"value,omitempty"`
	ValueBase64 string          `json:"valueBase64,omitempty"`
	Headers     []decodedHeader `json:"headers"`
	KeySchema   *decodedSchema  `json:"keySchema,omitempty"`
	ValueSchema *decodedSchema  `json:"valueSchema,omitempty"`
	// Error is set for a record whose own fields are malformed; build rejects such a line.
	Error string `json:"error,omitempty"`
}

// decodedHeader is one header of a decodedRecord, in the array form of build's "headers":
// Value and ValueBase64 as Key and KeyBase64 of decodedRecord.
type decodedHeader struct {
	Key         string `json:"key"`
	Value       any    `json:"value,omitempty"`
	ValueBase64 string `json:"valueBase64,omitempty"`
}

// decodedSchema is the keySchema or valueSchema of a decodedRecord.
type decodedSchema struct {
	DataFormat string `json:"dataFormat"`
	SchemaID   string `json:"schemaId"`
}

// timeLayout is RFC 3339 with milliseconds, the precision of Kafka timestamps.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// noTimestamp is the "timestamp" of a record without one: Kafka's -1, which build reads back
// as "no timestamp" (null would make build assign one).
const noTimestamp = -1

// JSONNull is a JSON null, for a decodedRecord field that must print as null rather than be
// left out.
var JSONNull = json.RawMessage("null")

// DecodedRecordOf returns the output line of r.
func DecodedRecordOf(r *kafkaevent.Record) DecodedRecord {
	d := DecodedRecord{
		Topic:         r.Topic,
		Partition:     r.Partition,
		Offset:        r.Offset,
		Timestamp:     noTimestamp,
		TimestampType: r.TimestampType,
		Headers:       make([]decodedHeader, 0, len(r.Headers)),
		KeySchema:     decodedSchemaOf(r.KeySchema),
		ValueSchema:   decodedSchemaOf(r.ValueSchema),
	}
	switch ms := r.Timestamp.UnixMilli(); {
	case r.Timestamp.IsZero():
	case ms < 0 || ms > maxMillis:
		d.Timestamp = ms // no RFC 3339 time that build reads: before 1970 or after year 9999
	default:
		d.Timestamp = r.Timestamp.UTC().Format(timeLayout)
	}
	d.Key, d.KeyBase64 = TextOrBase64(r.Key)
	d.Value, d.ValueBase64 = TextOrBase64(r.Value)
	for _, h := range r.Headers {
		v, b64 := TextOrBase64(h.Value)
		d.Headers = append(d.Headers, decodedHeader{Key: h.Key, Value: v, ValueBase64: b64})
	}
	if r.Err != nil {
		d.Error = r.Err.Error()
	}
	return d
}

// TextOrBase64 returns how decode prints b, as build reads it back: text is b as a string
// when b is valid UTF-8, and jsonNull when b is nil, so that "no key" and a tombstone print
// null; otherwise text is nil and b64 is b in standard base64.
func TextOrBase64(b []byte) (text any, b64 string) {
	switch {
	case b == nil:
		return JSONNull, ""
	case utf8.Valid(b):
		return string(b), ""
	}
	return nil, base64.StdEncoding.EncodeToString(b)
}

// decodedSchemaOf returns m for output, or nil.
func decodedSchemaOf(m *kafkaevent.SchemaMetadata) *decodedSchema {
	if m == nil {
		return nil
	}
	return &decodedSchema{DataFormat: m.DataFormat, SchemaID: m.SchemaID}
}
