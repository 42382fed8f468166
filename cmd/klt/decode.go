package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// runDecode runs "klt event decode [FILE]".
func runDecode(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("event decode", flag.ContinueOnError)
	args, code, ok := parseFlags(fs, args, usageDecode, stdout, stderr)
	if !ok {
		return code
	}
	if len(args) > 1 {
		return usageError(stderr, fs.Name(), fmt.Errorf("want at most one input file, got %d", len(args)))
	}
	name := inputName(args)
	in, err := openInput(args, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "klt: %v\n", err)
		return exitFail
	}
	data, err := io.ReadAll(in)
	in.Close()
	if err != nil {
		fmt.Fprintf(stderr, "klt: %s: %v\n", name, err)
		return exitFail
	}
	ev, err := kafkaevent.Parse(data)
	if err != nil {
		fmt.Fprintf(stderr, "klt: %s: %v\n", name, err)
		return exitFail
	}

	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	bad := 0
	for r := range ev.All() {
		if err := ctx.Err(); err != nil {
			fmt.Fprintf(stderr, "klt: %v\n", err)
			return exitFail
		}
		if r.Err != nil {
			bad++
		}
		if err := enc.Encode(decodedRecordOf(r)); err != nil {
			fmt.Fprintf(stderr, "klt: %v\n", err)
			return exitFail
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "klt: %v\n", err)
		return exitFail
	}
	if bad > 0 {
		fmt.Fprintf(stderr, "klt: %s: %d of %d records are malformed; see their \"error\"\n", name, bad, ev.Len())
		return exitFail
	}
	return exitOK
}

// decodedRecord is one output line of "klt event decode".
type decodedRecord struct {
	Topic         string          `json:"topic"`
	Partition     int32           `json:"partition"`
	Offset        int64           `json:"offset"`
	Timestamp     *string         `json:"timestamp"`
	TimestampType string          `json:"timestampType"`
	Key           *string         `json:"key"`
	KeyEncoding   string          `json:"keyEncoding,omitempty"`
	Value         *string         `json:"value"`
	ValueEncoding string          `json:"valueEncoding,omitempty"`
	Headers       []decodedHeader `json:"headers"`
	KeySchema     *decodedSchema  `json:"keySchema,omitempty"`
	ValueSchema   *decodedSchema  `json:"valueSchema,omitempty"`
	Error         string          `json:"error,omitempty"`
}

// decodedHeader is one header of a decodedRecord.
type decodedHeader struct {
	Key           string  `json:"key"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"valueEncoding,omitempty"`
}

// decodedSchema is the keySchema or valueSchema of a decodedRecord.
type decodedSchema struct {
	DataFormat string `json:"dataFormat"`
	SchemaID   string `json:"schemaId"`
}

// timeLayout is RFC 3339 with milliseconds, the precision of Kafka timestamps.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// decodedRecordOf returns the output line of r.
func decodedRecordOf(r *kafkaevent.Record) decodedRecord {
	d := decodedRecord{
		Topic:         r.Topic,
		Partition:     r.Partition,
		Offset:        r.Offset,
		TimestampType: r.TimestampType,
		Headers:       make([]decodedHeader, 0, len(r.Headers)),
		KeySchema:     decodedSchemaOf(r.KeySchema),
		ValueSchema:   decodedSchemaOf(r.ValueSchema),
	}
	if !r.Timestamp.IsZero() {
		s := r.Timestamp.UTC().Format(timeLayout)
		d.Timestamp = &s
	}
	d.Key, d.KeyEncoding = textOrBase64(r.Key)
	d.Value, d.ValueEncoding = textOrBase64(r.Value)
	for _, h := range r.Headers {
		v, enc := textOrBase64(h.Value)
		d.Headers = append(d.Headers, decodedHeader{Key: h.Key, Value: v, ValueEncoding: enc})
	}
	if r.Err != nil {
		d.Error = r.Err.Error()
	}
	return d
}

// textOrBase64 returns b as text when it is valid UTF-8, and otherwise as standard base64 with
// the encoding "base64". It returns nil for nil b, so that "no key" and a tombstone print null.
func textOrBase64(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, "base64"
}

// decodedSchemaOf returns m for output, or nil.
func decodedSchemaOf(m *kafkaevent.SchemaMetadata) *decodedSchema {
	if m == nil {
		return nil
	}
	return &decodedSchema{DataFormat: m.DataFormat, SchemaID: m.SchemaID}
}

// usageDecode is the help of "klt event decode".
const usageDecode = `Usage: klt event decode [FILE]

Decode reads an event of Lambda's Kafka event source mapping from FILE, or from standard input
when FILE is absent or "-", and prints its records as JSON Lines, one record per line, in the
order a function sees them: partitions sorted by topic, then number, records in offset order.

  {"topic":"orders","partition":0,"offset":0,"timestamp":"2026-01-15T10:00:00.000Z",
   "timestampType":"CREATE_TIME","key":"order-1","value":"{\"id\":1}","headers":[]}

(shown on two lines here). The fields:

  topic, partition, offset, timestampType   as in the event
  timestamp      RFC 3339 in UTC with milliseconds; null when the record has none (-1)
  key, value     the bytes as text when they are valid UTF-8; otherwise standard base64,
                 and "keyEncoding" or "valueEncoding" is "base64". null for no key and for a
                 tombstone; "" for empty bytes. A JSON value stays a string of JSON text.
  headers        [{"key":"trace","value":"abc"}, ...] in event order, each value under the
                 same text or base64 rule ("valueEncoding"), null for a null value
  keySchema, valueSchema   {"dataFormat":"AVRO","schemaId":"1"}, only when the event has them
  error          only for a record whose own fields are malformed (bad base64, say): what is
                 wrong and where. The fields that could be decoded are still printed.

A malformed event prints nothing and exits with status 1, with the parser's message, which
names the JSON path: "klt: FILE: kafkaevent: records[\"orders-0\"][3].offset: ...".
Malformed records are all printed, then decode exits with status 1.

Example:

  klt event build < records.jsonl > event.json && klt event decode event.json
  klt event decode event.json | jq -r 'select(.value == null) | .key'   # tombstoned keys
`
