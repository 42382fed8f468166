package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// runDecode runs "klt event decode [flags] [FILE]".
func runDecode(ctx context.Context, cmd *base.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var sf schemaFlags
	fs := newDecodeFlags(&sf)
	args, code, ok := base.ParseFlags(fs, args, cmd.Help(), stdout, stderr)
	if !ok {
		return code
	}
	if len(args) > 1 {
		return base.UsageError(stderr, fs.Name(), fmt.Errorf("want at most one input file, got %d", len(args)))
	}
	keyCodec, valueCodec, opts, err := sf.codecs()
	if err != nil {
		return base.UsageError(stderr, fs.Name(), err)
	}
	des := codec.NewDeserializer(orRaw(keyCodec), orRaw(valueCodec), opts...)
	name := base.InputName(args)
	data, err := base.ReadInput(args, stdin, base.EventLimit)
	if err != nil {
		base.PrintErrors(stderr, err)
		return base.ExitFail
	}
	ev, err := kafkaevent.Parse(data)
	if err != nil {
		base.PrintErrors(stderr, fmt.Errorf("%s: %w", name, err))
		return base.ExitFail
	}

	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	bad, undecoded := 0, 0
	for r := range ev.All() {
		if err := ctx.Err(); err != nil {
			base.Errorf(stderr, "%v", err)
			return base.ExitFail
		}
		if r.Err != nil {
			bad++
		}
		line := decodedRecordOf(r)
		if r.Err == nil && (keyCodec != nil || valueCodec != nil) {
			if !decodeWithSchemas(ctx, des.Record(r), &line, keyCodec != nil, valueCodec != nil) {
				undecoded++
			}
		}
		if err := enc.Encode(line); err != nil {
			base.Errorf(stderr, "%v", err)
			return base.ExitFail
		}
	}
	if err := w.Flush(); err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	if ev.Len() == 0 {
		base.Errorf(stderr, "warning: %s: no records; Lambda never sends an event without one", name)
	}
	if bad > 0 {
		base.Errorf(stderr, "%s: %d of %d records are malformed; see their \"error\"", name, bad, ev.Len())
	}
	if undecoded > 0 {
		base.Errorf(stderr, "%s: %d of %d records could not be decoded with the schemas given; see their \"error\"", name, undecoded, ev.Len())
	}
	if bad > 0 || undecoded > 0 {
		return base.ExitFail
	}
	return base.ExitOK
}

// newDecodeFlags returns the flag set of "klt event decode", storing into sf.
func newDecodeFlags(sf *schemaFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("event decode", flag.ContinueOnError)
	sf.register(fs)
	return fs
}

// decodeWithSchemas decodes the key (when key) and the value (when value) of r into line, as
// JSON in place of their bytes. A key or value that cannot be decoded keeps its bytes in line
// and is described in line.Error; decodeWithSchemas then returns false. A null key or value
// (no key, a tombstone) stays null.
func decodeWithSchemas(ctx context.Context, r *codec.Record[json.RawMessage, json.RawMessage], line *decodedRecord, key, value bool) bool {
	var errs []string
	if key {
		k, err := r.Key(ctx)
		switch {
		case errors.Is(err, codec.ErrNull):
		case err != nil:
			errs = append(errs, err.Error())
		default:
			line.Key, line.KeyBase64 = k, ""
		}
	}
	if value {
		v, err := r.Value(ctx)
		switch {
		case errors.Is(err, codec.ErrNull):
		case err != nil:
			errs = append(errs, err.Error())
		default:
			line.Value, line.ValueBase64 = v, ""
		}
	}
	if len(errs) == 0 {
		return true
	}
	line.Error = strings.Join(errs, "; ")
	return false
}

// decodedRecord is one output line of "klt event decode". It is a line of "klt event build"'s
// input format that gives every field of the record, so that decode's output builds the same
// records again; see lines.go.
type decodedRecord struct {
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

// jsonNull is a JSON null, for a decodedRecord field that must print as null rather than be
// left out.
var jsonNull = json.RawMessage("null")

// decodedRecordOf returns the output line of r.
func decodedRecordOf(r *kafkaevent.Record) decodedRecord {
	d := decodedRecord{
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
	d.Key, d.KeyBase64 = textOrBase64(r.Key)
	d.Value, d.ValueBase64 = textOrBase64(r.Value)
	for _, h := range r.Headers {
		v, b64 := textOrBase64(h.Value)
		d.Headers = append(d.Headers, decodedHeader{Key: h.Key, Value: v, ValueBase64: b64})
	}
	if r.Err != nil {
		d.Error = r.Err.Error()
	}
	return d
}

// textOrBase64 returns how decode prints b, as build reads it back: text is b as a string
// when b is valid UTF-8, and jsonNull when b is nil, so that "no key" and a tombstone print
// null; otherwise text is nil and b64 is b in standard base64.
func textOrBase64(b []byte) (text any, b64 string) {
	switch {
	case b == nil:
		return jsonNull, ""
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

// usageDecode is the help of "klt event decode".
const usageDecode = `Usage: klt event decode [flags] [FILE]

Decode reads an event of Lambda's Kafka event source mapping from FILE, or from standard input
when FILE is absent or "-", and prints its records as JSON Lines, one record per line, in the
order a function sees them: partitions sorted by topic, then number, records in offset order.

  {"topic":"orders","partition":0,"offset":0,"timestamp":"2026-01-15T10:00:00.000Z",
   "timestampType":"CREATE_TIME","key":"order-1","value":"{\"id\":1}","headers":[]}

(shown on two lines here). Each line is a record line of "klt event build" that gives every
field, so "klt event decode event.json | klt event build" makes the same records again (the
envelope comes from build's flags: --source, --arn, --bootstrap-servers). The fields:

  topic, partition, offset, timestampType   as in the event ("" for no timestampType)
  timestamp      RFC 3339 in UTC with milliseconds; -1 when the record has none; epoch
                 milliseconds for a time RFC 3339 cannot write (before 1970, after 9999)
  key, value     the bytes as text when they are valid UTF-8; null for no key and for a
                 tombstone; "" for empty bytes. A JSON value stays a string of JSON text.
  keyBase64, valueBase64   instead of "key" or "value" when the bytes are not valid UTF-8:
                 standard base64
  headers        [{"key":"trace","value":"abc"}, ...] in event order, each value under the
                 same rule: "value" as text or null, or "valueBase64"
  keySchema, valueSchema   {"dataFormat":"AVRO","schemaId":"1"}, only when the event has them
  error          only for a record whose own fields are malformed (bad base64, say): what is
                 wrong and where. The fields that could be decoded are still printed; build
                 rejects the line until the error is fixed or the line is dropped.

With a schema, keys or values are decoded and printed as JSON documents in place of their
bytes: --value-schema and --key-schema take an Avro schema (.avsc) or a Protobuf file (.proto,
compiled as klt runs; --message names the message), and --registry a Confluent Schema Registry
whose schemas decode Avro values by the schema ID each carries. Protobuf prints in the proto3
JSON mapping. The framing comes from the record's schema metadata when it has some (the
mapping took the registry's header off; Protobuf message indexes are read), else from --wire:
confluent, glue (zlib too) or none (the default). Such a line builds an event of JSON values,
as the mapping sends in JSON mode. A key or value that does not decode keeps its bytes and
gets an "error"; the other records are still printed, and decode exits with status 1.

A malformed event prints nothing and exits with status 1, with the parser's message, which
names the JSON path: "klt: FILE: kafkaevent: records[\"orders-0\"][3].offset: ...".
Malformed records are all printed, then decode exits with status 1.
`

// usageDecodeExamples ends the help of "klt event decode".
const usageDecodeExamples = `
Examples:

  klt event build < records.jsonl > event.json && klt event decode event.json
  klt event decode --value-schema order.avsc --wire confluent event.json
  klt event decode --value-schema order.proto --message shop.Order event.json
  klt event decode event.json | jq -r 'select(has("value") and .value == null) | .key'
  klt event decode event.json | jq -c 'select(.topic == "orders")' | klt event build > o.json

The first jq line prints the keys of tombstones ("value" is absent, not null, when "valueBase64"
holds the value). The second makes a smaller event; jq -c keeps one record per line.
`

// decodeFlags returns the flags of "klt event decode", for its help.
func decodeFlags() *flag.FlagSet { return newDecodeFlags(new(schemaFlags)) }
