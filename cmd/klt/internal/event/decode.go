package event

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsonl"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/schemajson"
	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// runDecode runs "klt event decode [flags] [FILE]".
func runDecode(ctx context.Context, sf *schemajson.SchemaFlags, fs *flag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 1 {
		return base.UsageError(stderr, fs.Name(), fmt.Errorf("want at most one input file, got %d", len(args)))
	}
	keyCodec, valueCodec, opts, err := sf.Codecs()
	if err != nil {
		return base.UsageError(stderr, fs.Name(), err)
	}
	des, err := codec.NewDeserializer(schemajson.OrRaw(keyCodec), schemajson.OrRaw(valueCodec), opts...)
	if err != nil {
		return base.UsageError(stderr, fs.Name(), err)
	}
	name := input.Name(args)
	data, err := input.Read(args, stdin, input.EventLimit)
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
		line := jsonl.DecodedRecordOf(r)
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
func newDecodeFlags(sf *schemajson.SchemaFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("event decode", flag.ContinueOnError)
	sf.Register(fs)
	return fs
}

// decodeWithSchemas decodes the key (when key) and the value (when value) of r into line, as
// JSON in place of their bytes. A key or value that cannot be decoded keeps its bytes in line
// and is described in line.Error; decodeWithSchemas then returns false. A null key or value
// (no key, a tombstone) stays null.
func decodeWithSchemas(ctx context.Context, r *codec.Record[json.RawMessage, json.RawMessage], line *jsonl.DecodedRecord, key, value bool) bool {
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

// usageDecode is the help of "klt event decode".
const usageDecode = `Decode reads an event of Lambda's Kafka event source mapping from FILE, or from standard input
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
  klt event decode --wire confluent \
      --value-schema testdata/events/schema-registry/toolkit/order.avsc \
      testdata/events/schema-registry/toolkit/avro-confluent.json
  klt event decode --wire confluent --message toolkit.fixtures.Order \
      --value-schema testdata/events/schema-registry/toolkit/order.proto \
      testdata/events/schema-registry/toolkit/protobuf-confluent.json
  klt event decode event.json | jq -r 'select(has("value") and .value == null) | .key'
  klt event decode event.json | jq -c 'select(.topic == "orders")' | klt event build > o.json

The first jq line prints the keys of tombstones ("value" is absent, not null, when "valueBase64"
holds the value). The second makes a smaller event; jq -c keeps one record per line.
`

// cmdDecode is the command "klt event decode".
var cmdDecode = base.WithFlags(&base.Command{
	UsageLine: "klt event decode [flags] [FILE]",
	Short:     "print the records of an event as JSON Lines",
	Long:      usageDecode,
	Examples:  usageDecodeExamples,
}, newDecodeFlags, runDecode)
