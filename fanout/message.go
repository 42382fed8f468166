package fanout

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/recovered"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// The message attributes a record travels in. See the package documentation for what each
// holds.
const (
	// RecordAttribute (String) holds the record's identity and metadata as compact JSON:
	// topic, partition, offset, timestamp, timestamp type, key, how the value travels, and
	// the schema metadata.
	RecordAttribute = "kafka.record"
	// HeadersAttribute (Binary) holds the record's headers, in order, repeated names and
	// null values included. It is absent when the record has no headers.
	HeadersAttribute = "kafka.headers"
	// ValueAttribute (Binary) holds the value when it cannot travel in the body as text.
	ValueAttribute = "kafka.value"
	// TraceParentAttribute and TraceStateAttribute (String) copy the record's W3C
	// traceparent and tracestate headers, where OpenTelemetry's SQS propagation looks for
	// them. The headers themselves travel in HeadersAttribute; ReadRecord ignores these copies.
	TraceParentAttribute = "traceparent"
	TraceStateAttribute  = "tracestate"
)

// The ways a value travels, named by the "value" member of RecordAttribute.
const (
	valueText   = "text"   // the body is the value
	valueBinary = "binary" // ValueAttribute is the value; the body is a placeholder
	valueEmpty  = "empty"  // the value is empty (not null); the body is a placeholder
	valueNull   = "null"   // the value is null (a tombstone); the body is a placeholder
)

// Placeholder bodies: SQS refuses an empty body.
const (
	bodyBinary = "(kafka record: binary value in message attribute kafka.value)"
	bodyEmpty  = "(kafka record: empty value)"
	bodyNull   = "(kafka record: null value)"
)

// recordVersion is the version of the RecordAttribute format.
const recordVersion = 1

// awsTraceHeader is the Kafka header whose value travels as the AWSTraceHeader system
// attribute (xraytrace.TraceHeader).
const awsTraceHeader = "X-Amzn-Trace-Id"

// EncodeError is the error of a record that cannot travel in an SQS message: too large, a
// record that did not decode (its Err is set), a string SQS cannot carry, or a FIFO message
// group ID that SQS would refuse. Retrying cannot fix it.
type EncodeError struct {
	Topic     string
	Partition int32
	Offset    int64
	// Field names what cannot travel: "message" (the size), "record", "topic",
	// "timestampType", "keySchemaMetadata", "valueSchemaMetadata", "MessageGroupId".
	Field string
	Err   error
}

func (e *EncodeError) Error() string {
	return fmt.Sprintf("fanout: record %s-%d offset %d: %s: %v", e.Topic, e.Partition, e.Offset, e.Field, e.Err)
}

func (e *EncodeError) Unwrap() error { return e.Err }

// DecodeError is the error of a message ReadRecord cannot rebuild a Kafka record from. Attribute
// names the message attribute at fault (RecordAttribute, HeadersAttribute, ValueAttribute),
// or is "body".
type DecodeError struct {
	MessageID string
	Attribute string
	Err       error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("fanout: message %q: %s: %v", e.MessageID, e.Attribute, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// entry builds the SendMessageBatch entry for r (Id left for the caller to set), with
// MessageGroupId/MessageDeduplicationId when fifo; size is what SQS counts toward its
// 1 MiB limit (body + attribute names, types and values; binary values at their base64
// length, see below), which entry keeps within limits.MaxSQSMessageBytes. group chooses the FIFO message
// group; nil means the default, groupByKey. An error is an *EncodeError. It is
// [encoder.entry] with an encoder of its own; a Dispatcher shares one encoder across a run.
func entry(r *kafkaevent.Record, fifo bool, group func(*kafkaevent.Record) string) (e types.SendMessageBatchRequestEntry, size int, err error) {
	var enc encoder
	enc.grow(textEstimate(r, fifo))
	return enc.entry(r, fifo, group)
}

// An encoder builds the entries of one Dispatch. A message is a handful of strings (the
// body, kafka.record, the group and deduplication IDs) and the SDK wants each behind a
// pointer: built one by one, that is eight or more allocations a record, which a 6 MB batch
// of small records turns into tens of thousands. The encoder writes the strings into chunks
// of text (a strings.Builder never rewrites what it has written, so each string is a
// substring of its chunk); the pointers come from slabs of strings, the headers' bytes from
// a slab of bytes. A record then costs its attributes' map and, now and then, a new chunk or
// slab. The entries share the encoder's memory, which lives as long as any of them; nothing
// in an entry is ever written after entry returns it.
type encoder struct {
	text       strings.Builder // the current chunk
	chunk      int             // the size of the next chunk
	strs       []string        // the slab the entries' *string point into
	bins       []byte          // the slab of binary attribute values
	tmp        []byte          // scratch, copied into text before use
	stringType *string
	binaryType *string
}

// Chunks of text double from the first (see grow) up to maxChunk; a string of more than a
// quarter of it (a large value) gets an allocation of its own rather than a chunk's tail.
const (
	firstChunk = 4 << 10
	maxChunk   = 64 << 10
)

// textEstimate is about how many bytes of strings the encoder writes for r: the value (when
// it is the body), kafka.record with its base64 key, and the FIFO IDs. It need not be exact:
// it sizes the first chunk of an encoder for one record.
func textEstimate(r *kafkaevent.Record, fifo bool) int {
	n := len(r.Value) + 2*len(r.Key) + 2*len(r.Topic) + 160
	if fifo {
		n += 64 + len(r.Key)
	}
	return n
}

// grow sizes the encoder's first chunk of text to n bytes.
func (enc *encoder) grow(n int) { enc.chunk = n }

// str returns a pointer to a copy of b held by the encoder.
func (enc *encoder) str(b []byte) *string {
	if len(b) > maxChunk/4 {
		return enc.ptr(string(b))
	}
	if enc.text.Cap()-enc.text.Len() < len(b) {
		// A new chunk; the strings of the last one stay where they are.
		if enc.chunk == 0 {
			enc.chunk = firstChunk
		}
		enc.text.Reset()
		enc.text.Grow(max(enc.chunk, len(b)))
		enc.chunk = min(2*enc.chunk, maxChunk)
	}
	start := enc.text.Len()
	enc.text.Write(b)
	return enc.ptr(enc.text.String()[start:])
}

// ptr returns a pointer to s from the encoder's slab.
func (enc *encoder) ptr(s string) *string {
	if len(enc.strs) == cap(enc.strs) {
		// Slabs double from 8 strings to 256: an entry alone takes a few, a run many.
		enc.strs = make([]string, 0, min(max(2*cap(enc.strs), 8), 256))
	}
	enc.strs = append(enc.strs, s)
	return &enc.strs[len(enc.strs)-1]
}

// headers returns the HeadersAttribute encoding of hs, in the encoder's slab of bytes.
func (enc *encoder) headers(hs []kafkaevent.Header) []byte {
	n := headersCap(hs)
	if cap(enc.bins)-len(enc.bins) < n {
		// Slabs double up to 16 KiB, and are never smaller than the headers need.
		enc.bins = make([]byte, 0, max(n, min(2*cap(enc.bins), 16<<10)))
	}
	start := len(enc.bins)
	enc.bins = appendHeaders(enc.bins, hs)
	return enc.bins[start:len(enc.bins):len(enc.bins)]
}

// entry builds the SendMessageBatch entry for r: see the function entry.
func (enc *encoder) entry(r *kafkaevent.Record, fifo bool, group func(*kafkaevent.Record) string) (e types.SendMessageBatchRequestEntry, size int, err error) {
	fail := func(field string, err error) (types.SendMessageBatchRequestEntry, int, error) {
		return types.SendMessageBatchRequestEntry{}, 0, &EncodeError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Field: field, Err: err}
	}
	if r.Err != nil {
		return fail("record", fmt.Errorf("the record did not decode: %w", r.Err))
	}
	if enc.stringType == nil {
		enc.stringType, enc.binaryType = enc.ptr("String"), enc.ptr("Binary")
	}
	if n := 160 + len(r.Topic)*6 + base64.StdEncoding.EncodedLen(len(r.Key)); cap(enc.tmp) < n {
		enc.tmp = make([]byte, 0, n)
	}
	meta, field, err := appendRecordJSON(enc.tmp[:0], r)
	if err != nil {
		return fail(field, err)
	}
	// The size SQS counts: the body's and string values' UTF-8 bytes, attribute names and
	// types, and binary values at their base64 length, as the SQS JSON protocol carries them:
	// the API reference does not say whether SQS counts a binary value's bytes or its base64,
	// and local-aws-sqs counts the base64; counting it errs on the side of a message SQS
	// accepts, at the cost of a quarter of the room for binary values.
	n := 1 + min(len(r.Headers), 1)
	tp, tpOK := r.Header(TraceParentAttribute)
	tpOK = tpOK && len(tp) > 0 && textOK(tp)
	ts, tsOK := r.Header(TraceStateAttribute)
	tsOK = tsOK && len(ts) > 0 && textOK(ts)
	how := valueText
	switch {
	case r.Value == nil:
		how, e.MessageBody = valueNull, enc.ptr(bodyNull)
	case len(r.Value) == 0:
		how, e.MessageBody = valueEmpty, enc.ptr(bodyEmpty)
	case textOK(r.Value):
		e.MessageBody = enc.str(r.Value)
	default:
		how, e.MessageBody = valueBinary, enc.ptr(bodyBinary)
		n++
	}
	attrs := make(map[string]types.MessageAttributeValue, n+btoi(tpOK)+btoi(tsOK))
	size = len(*e.MessageBody)
	if how == valueBinary {
		attrs[ValueAttribute] = types.MessageAttributeValue{DataType: enc.binaryType, BinaryValue: r.Value}
		size += len(ValueAttribute) + len("Binary") + base64.StdEncoding.EncodedLen(len(r.Value))
	}
	meta = append(meta, `,"value":"`...)
	meta = append(meta, how...)
	meta = append(meta, `"}`...)
	attrs[RecordAttribute] = types.MessageAttributeValue{DataType: enc.stringType, StringValue: enc.str(meta)}
	size += len(RecordAttribute) + len("String") + len(meta)
	enc.tmp = meta[:0]
	if len(r.Headers) > 0 {
		h := enc.headers(r.Headers)
		attrs[HeadersAttribute] = types.MessageAttributeValue{DataType: enc.binaryType, BinaryValue: h}
		size += len(HeadersAttribute) + len("Binary") + base64.StdEncoding.EncodedLen(len(h))
	}
	if tpOK {
		attrs[TraceParentAttribute] = types.MessageAttributeValue{DataType: enc.stringType, StringValue: enc.str(tp)}
		size += len(TraceParentAttribute) + len("String") + len(tp)
	}
	if tsOK {
		attrs[TraceStateAttribute] = types.MessageAttributeValue{DataType: enc.stringType, StringValue: enc.str(ts)}
		size += len(TraceStateAttribute) + len("String") + len(ts)
	}
	e.MessageAttributes = attrs
	if v, ok := r.Header(awsTraceHeader); ok && xrayHeaderOK(v) {
		// Counted, though SQS may not count system attributes: the estimate errs on the
		// side of a message SQS accepts.
		e.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			"AWSTraceHeader": {DataType: enc.stringType, StringValue: enc.str(v)},
		}
		size += len("AWSTraceHeader") + len("String") + len(v)
	}
	if size > limits.MaxSQSMessageBytes {
		return fail("message", fmt.Errorf("%w: %d bytes with its attributes, the limit is %d", batch.ErrMessageTooLarge, size, limits.MaxSQSMessageBytes))
	}
	if fifo {
		var g *string
		if group != nil {
			// A panic of WithMessageGroup's function fails the record (it is not sent), never
			// the process that serves other invocations (Lambda Managed Instances).
			var id string
			if pe := recovered.Call("fanout: WithMessageGroup's function", func() { id = group(r) }); pe != nil {
				return fail("MessageGroupId", pe)
			}
			g = enc.ptr(id)
		} else {
			enc.tmp = appendGroupByKey(enc.tmp[:0], r)
			g = enc.str(enc.tmp)
		}
		if err := checkGroupID(*g); err != nil {
			return fail("MessageGroupId", err)
		}
		e.MessageGroupId = g
		enc.tmp = appendDeduplicationID(enc.tmp[:0], r)
		e.MessageDeduplicationId = enc.str(enc.tmp)
	}
	return e, size, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// xrayHeaderOK reports whether v looks like an X-Ray trace header, "Root=1-xxxxxxxx-
// xxxxxxxxxxxxxxxxxxxxxxxx;Parent=...;Sampled=1", which SQS may check in AWSTraceHeader: a
// malformed one would make SQS refuse the record, so it travels in the headers only.
func xrayHeaderOK(v []byte) bool {
	if len(v) > 256 {
		return false
	}
	root := false
	for _, field := range bytes.Split(v, []byte{';'}) {
		name, val, ok := bytes.Cut(field, []byte{'='})
		if !ok || len(name) == 0 || !groupChars(field) {
			return false
		}
		if string(name) == "Root" {
			root = len(val) == 35 && val[0] == '1' && val[1] == '-' && val[10] == '-' && isHex(val[2:10]) && isHex(val[11:])
			if !root {
				return false
			}
		}
	}
	return root
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// textOK reports whether b can be an SQS body or string attribute as it is: valid UTF-8 made
// only of the characters SQS allows (#x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD
// #x10000-#x10FFFF).
func textOK(b []byte) bool {
	for i := 0; i < len(b); {
		if i+8 <= len(b) {
			// Eight bytes at once while they are ASCII from #x20 up: a byte below #x20
			// borrows in the subtraction, which sets its top bit, and so does any byte of
			// #x80 or more. A word that trips goes byte by byte.
			if w := binary.LittleEndian.Uint64(b[i:]); (w|(w-0x2020202020202020))&0x8080808080808080 == 0 {
				i += 8
				continue
			}
		}
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return false
		}
		if r == 0xFFFE || r == 0xFFFF {
			return false
		}
		i += n
	}
	return true
}

// appendRecordJSON appends the RecordAttribute JSON up to, not including, the "value" member
// and the closing brace. On error it names the record field at fault.
func appendRecordJSON(b []byte, r *kafkaevent.Record) ([]byte, string, error) {
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, recordVersion, 10)
	var err error
	if b, err = appendStringMember(b, "topic", r.Topic); err != nil {
		return nil, "topic", err
	}
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(r.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, r.Offset, 10)
	b = append(b, `,"timestamp":`...)
	if r.Timestamp.IsZero() {
		b = append(b, "-1"...)
	} else {
		b = strconv.AppendInt(b, r.Timestamp.UnixMilli(), 10)
	}
	if r.TimestampType != "" {
		if b, err = appendStringMember(b, "timestampType", r.TimestampType); err != nil {
			return nil, "timestampType", err
		}
	}
	if r.Key != nil {
		b = append(b, `,"key":"`...)
		b = base64.StdEncoding.AppendEncode(b, r.Key)
		b = append(b, '"')
	}
	for _, s := range [...]struct {
		name string
		m    *kafkaevent.SchemaMetadata
	}{{"keySchema", r.KeySchema}, {"valueSchema", r.ValueSchema}} {
		if s.m == nil {
			continue
		}
		b = append(b, `,"`...)
		b = append(b, s.name...)
		b = append(b, `":{`...)
		if b, err = appendStringMember(b, "dataFormat", s.m.DataFormat); err != nil {
			return nil, s.name + "Metadata", err
		}
		if b, err = appendStringMember(b, "schemaId", s.m.SchemaID); err != nil {
			return nil, s.name + "Metadata", err
		}
		b = append(b, '}')
	}
	return b, "", nil
}

// appendStringMember appends `,"name":"s"` (no comma right after '{'), s escaped so that the
// JSON is plain ASCII: every string SQS can carry and JSON can hold goes through. A string
// that is not valid UTF-8 cannot be a JSON string and fails.
func appendStringMember(b []byte, name, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, errors.New("not valid UTF-8")
	}
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, `":"`...)
	const hexDigits = "0123456789abcdef"
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r >= 0x20 && r < 0x7f:
			b = append(b, byte(r))
		case r < 0x10000:
			b = append(b, '\\', 'u', hexDigits[r>>12], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
		default:
			r1, r2 := utf16Pair(r)
			b = append(b, '\\', 'u', hexDigits[r1>>12], hexDigits[r1>>8&0xF], hexDigits[r1>>4&0xF], hexDigits[r1&0xF])
			b = append(b, '\\', 'u', hexDigits[r2>>12], hexDigits[r2>>8&0xF], hexDigits[r2>>4&0xF], hexDigits[r2&0xF])
		}
	}
	return append(b, '"'), nil
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}

// appendHeaders appends the HeadersAttribute encoding of hs: for each header, in order, the
// name's length (uvarint) and bytes, then 0 for a null value or the value's length plus one
// (uvarint) and its bytes.
func appendHeaders(b []byte, hs []kafkaevent.Header) []byte {
	if b == nil {
		b = make([]byte, 0, headersCap(hs))
	}
	for _, h := range hs {
		b = binary.AppendUvarint(b, uint64(len(h.Key)))
		b = append(b, h.Key...)
		if h.Value == nil {
			b = append(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(h.Value))+1)
		b = append(b, h.Value...)
	}
	return b
}

// headersCap is the most bytes appendHeaders appends for hs.
func headersCap(hs []kafkaevent.Header) int {
	n := 0
	for _, h := range hs {
		n += 2*binary.MaxVarintLen64 + len(h.Key) + len(h.Value)
	}
	return n
}

// readHeaders decodes the HeadersAttribute encoding. It allocates what the headers need and
// no more, whatever their number (a 1 MiB attribute can hold 524,288 of them): the headers'
// slice at its exact length, after a first pass counts them, and one copy of the attribute
// (as a string for the names, as bytes for the values) that they share, so that the record
// shares no memory with the message.
func readHeaders(b []byte) ([]kafkaevent.Header, error) {
	if len(b) == 0 {
		return nil, errors.New("empty (a record without headers has no headers attribute)")
	}
	n := 0
	for i := 0; i < len(b); n++ {
		h, err := nextHeader(b, i, n)
		if err != nil {
			return nil, err
		}
		i = h.end
	}
	hs := make([]kafkaevent.Header, n)
	names, values := string(b), bytes.Clone(b)
	for k, i := 0, 0; i < len(b); k++ {
		h, _ := nextHeader(b, i, k)
		hs[k].Key = names[h.name:h.nameEnd]
		if !h.null {
			hs[k].Value = values[h.value:h.end:h.end]
		}
		i = h.end
	}
	return hs, nil
}

// headerSpan is where one header of the HeadersAttribute encoding lies: its name is
// [name, nameEnd), its value [value, end), and the next header starts at end.
type headerSpan struct {
	name, nameEnd, value, end int
	null                      bool
}

// nextHeader reads the k-th header, starting at i.
func nextHeader(b []byte, i, k int) (headerSpan, error) {
	at := i
	n, w := binary.Uvarint(b[i:])
	if w <= 0 {
		return headerSpan{}, fmt.Errorf("header %d at byte %d: bad name length", k, at)
	}
	i += w
	if n > uint64(len(b)-i) {
		return headerSpan{}, fmt.Errorf("header %d at byte %d: name of %d bytes, %d left", k, at, n, len(b)-i)
	}
	h := headerSpan{name: i, nameEnd: i + int(n)}
	i = h.nameEnd
	n, w = binary.Uvarint(b[i:])
	if w <= 0 {
		return headerSpan{}, fmt.Errorf("header %d (%q) at byte %d: bad value length", k, b[h.name:h.nameEnd], i)
	}
	i += w
	h.value = i
	if n == 0 {
		h.null, h.end = true, i
		return h, nil
	}
	n--
	if n > uint64(len(b)-i) {
		return headerSpan{}, fmt.Errorf("header %d (%q) at byte %d: value of %d bytes, %d left", k, b[h.name:h.nameEnd], i, n, len(b)-i)
	}
	h.end = i + int(n)
	return h, nil
}

// groupByKey is the default FIFO message group: the record's key, as it is when SQS allows
// it as a group ID (1 to 128 characters among letters, digits and punctuation), otherwise
// the hex SHA-256 of the key; for a record with a null key, its partition ("topic-N", or its
// hash when that is not a valid group ID). Records with the same key keep their order;
// records with a null key keep the order of their partition.
func groupByKey(r *kafkaevent.Record) string { return string(appendGroupByKey(nil, r)) }

// appendGroupByKey appends groupByKey(r) to b.
func appendGroupByKey(b []byte, r *kafkaevent.Record) []byte {
	if r.Key == nil {
		start := len(b)
		b = append(b, r.Topic...)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(r.Partition), 10)
		if checkGroupID(string(b[start:])) == nil {
			return b
		}
		sum := sha256.Sum256(b[start:])
		return hex.AppendEncode(b[:start], sum[:])
	}
	if len(r.Key) > 0 && len(r.Key) <= 128 && groupChars(r.Key) {
		return append(b, r.Key...)
	}
	sum := sha256.Sum256(r.Key)
	return hex.AppendEncode(b, sum[:])
}

// groupByPartition is the FIFO message group of a record's partition, "topic-N", or its
// hash when that is not a valid group ID.
func groupByPartition(r *kafkaevent.Record) string {
	id := r.PartitionID()
	if checkGroupID(id) == nil {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// groupChars reports whether b is made of the characters SQS allows in a message group or
// deduplication ID: ASCII letters, digits and punctuation.
func groupChars[T string | []byte](b T) bool {
	for i := 0; i < len(b); i++ {
		if c := b[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// checkGroupID returns why SQS would refuse id as a MessageGroupId, or nil.
func checkGroupID(id string) error {
	switch {
	case id == "":
		return errors.New("empty")
	case len(id) > 128:
		return fmt.Errorf("%d characters, SQS allows 128", len(id))
	case !groupChars(id):
		return fmt.Errorf("%q: SQS allows only ASCII letters, digits and punctuation", id)
	}
	return nil
}

// appendDeduplicationID appends the FIFO MessageDeduplicationId of a record to b: the hex
// SHA-256 (64 characters) of its topic, partition and offset, so that the same record sent
// twice within SQS's five-minute window is enqueued once, whatever the topic name's length.
// The hash is of the topic's length (8 bytes, big-endian), the topic, the partition (4
// bytes) and the offset (8 bytes); it must never change, or a record replayed across a
// deployment would be enqueued twice.
func appendDeduplicationID(b []byte, r *kafkaevent.Record) []byte {
	var stack [8 + 249 + 4 + 8]byte // Kafka topic names are at most 249 characters
	in := stack[:0]
	if len(r.Topic) > 249 {
		in = make([]byte, 0, 8+len(r.Topic)+4+8)
	}
	in = binary.BigEndian.AppendUint64(in, uint64(len(r.Topic)))
	in = append(in, r.Topic...)
	in = binary.BigEndian.AppendUint32(in, uint32(r.Partition))
	in = binary.BigEndian.AppendUint64(in, uint64(r.Offset))
	sum := sha256.Sum256(in)
	return hex.AppendEncode(b, sum[:])
}

// recordJSON is RecordAttribute as read.
type recordJSON struct {
	V             *int        `json:"v"`
	Topic         *string     `json:"topic"`
	Partition     *int64      `json:"partition"`
	Offset        *int64      `json:"offset"`
	Timestamp     *int64      `json:"timestamp"`
	TimestampType string      `json:"timestampType"`
	Key           *string     `json:"key"`
	Value         *string     `json:"value"`
	KeySchema     *schemaJSON `json:"keySchema"`
	ValueSchema   *schemaJSON `json:"valueSchema"`
}

type schemaJSON struct {
	DataFormat string `json:"dataFormat"`
	SchemaID   string `json:"schemaId"`
}

// recordFields is RecordAttribute, read and checked.
type recordFields struct {
	topic                        string
	partition, offset, timestamp int64
	timestampType                string
	key                          string // base64
	hasKey                       bool
	value                        string // how the value travels
	keySchema, valueSchema       *schemaJSON
}

// readRecordAttribute reads RecordAttribute: on the fast path when it is in the form entry
// writes (no escapes, no schema metadata), otherwise with encoding/json. The two agree on
// every input the fast path takes (FuzzRecord checks).
func readRecordAttribute(s string) (recordFields, error) {
	if f, ok := readRecordFast(s); ok {
		return f, nil
	}
	return readRecordJSON(s)
}

// readRecordJSON reads RecordAttribute with encoding/json.
func readRecordJSON(s string) (recordFields, error) {
	var j recordJSON
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return recordFields{}, fmt.Errorf("not the JSON of a record: %w", err)
	}
	switch {
	case j.V == nil:
		return recordFields{}, errors.New(`no "v" (format version)`)
	case *j.V != recordVersion:
		return recordFields{}, fmt.Errorf("format version %d, this package reads version %d", *j.V, recordVersion)
	case j.Topic == nil:
		return recordFields{}, errors.New(`no "topic"`)
	case j.Partition == nil:
		return recordFields{}, errors.New(`no "partition"`)
	case *j.Partition < math.MinInt32 || *j.Partition > math.MaxInt32:
		return recordFields{}, fmt.Errorf(`"partition" %d out of range`, *j.Partition)
	case j.Offset == nil:
		return recordFields{}, errors.New(`no "offset"`)
	case j.Timestamp == nil:
		return recordFields{}, errors.New(`no "timestamp"`)
	case j.Value == nil:
		return recordFields{}, errors.New(`no "value"`)
	}
	f := recordFields{topic: *j.Topic, partition: *j.Partition, offset: *j.Offset, timestamp: *j.Timestamp,
		timestampType: j.TimestampType, value: *j.Value, keySchema: j.KeySchema, valueSchema: j.ValueSchema}
	if j.Key != nil {
		f.key, f.hasKey = *j.Key, true
	}
	return f, nil
}

// readRecordFast reads RecordAttribute in exactly the form entry writes for a record without
// schema metadata whose strings need no escapes; ok is false for anything else, which
// readRecordJSON then reads (or refuses).
func readRecordFast(s string) (f recordFields, ok bool) {
	const start = `{"v":1,"topic":"`
	if len(s) < len(start) || s[:len(start)] != start {
		return f, false
	}
	i := len(start)
	if f.topic, i, ok = plainString(s, i); !ok {
		return f, false
	}
	if f.partition, i, ok = intMember(s, i, `,"partition":`); !ok || f.partition < math.MinInt32 || f.partition > math.MaxInt32 {
		return f, false
	}
	if f.offset, i, ok = intMember(s, i, `,"offset":`); !ok {
		return f, false
	}
	if f.timestamp, i, ok = intMember(s, i, `,"timestamp":`); !ok {
		return f, false
	}
	if j, found := prefixAt(s, i, `,"timestampType":"`); found {
		if f.timestampType, i, ok = plainString(s, j); !ok {
			return f, false
		}
	}
	if j, found := prefixAt(s, i, `,"key":"`); found {
		k := j
		for k < len(s) && s[k] != '"' {
			if c := s[k]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
				return f, false
			}
			k++
		}
		if k == len(s) {
			return f, false
		}
		f.key, f.hasKey, i = s[j:k], true, k+1
	}
	j, found := prefixAt(s, i, `,"value":"`)
	if !found {
		return f, false
	}
	if f.value, i, ok = plainString(s, j); !ok || i != len(s)-1 || s[i] != '}' {
		return f, false
	}
	return f, true
}

// prefixAt reports whether s has p at i, and the index after it.
func prefixAt(s string, i int, p string) (int, bool) {
	if len(s)-i < len(p) || s[i:i+len(p)] != p {
		return i, false
	}
	return i + len(p), true
}

// plainString reads a JSON string's contents from i (past the opening quote) to the closing
// quote, when they are printable ASCII without escapes.
func plainString(s string, i int) (string, int, bool) {
	for j := i; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			return s[i:j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", i, false
		}
	}
	return "", i, false
}

// intMember reads `name` then a JSON integer that fits an int64, from i.
func intMember(s string, i int, name string) (int64, int, bool) {
	i, ok := prefixAt(s, i, name)
	if !ok {
		return 0, i, false
	}
	j := i
	if j < len(s) && s[j] == '-' {
		j++
	}
	d := j
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == d || s[d] == '0' && j-d > 1 { // no digits, or a leading zero: not JSON
		return 0, i, false
	}
	n, err := strconv.ParseInt(s[i:j], 10, 64)
	if err != nil {
		return 0, i, false
	}
	return n, j, true
}

// ReadRecord rebuilds the Kafka record that message m carries, byte for byte: value, key and
// headers (order, repeated names, null values, bytes that are not UTF-8), topic, partition,
// offset, timestamp and its type, and schema metadata. m is a message of an SQS event as the
// event source mapping delivers it (events.SQSEvent's Records), sent by a Dispatcher.
//
// A message that does not carry a record in this package's format fails with a
// *DecodeError naming the attribute at fault; ReadRecord never panics on any input. The record
// returned shares no memory with m. A nil m is a message without attributes.
//
// ReadRecord is the decode function of batch.WithSQSKafkaRecord, for a handler of the queue's
// messages written on batch.ProcessSQS rather than WorkerHandler.
func ReadRecord(m *events.SQSMessage) (*kafkaevent.Record, error) {
	if m == nil {
		m = &events.SQSMessage{}
	}
	fail := func(attr string, format string, args ...any) (*kafkaevent.Record, error) {
		return nil, &DecodeError{MessageID: m.MessageId, Attribute: attr, Err: fmt.Errorf(format, args...)}
	}
	a, ok := m.MessageAttributes[RecordAttribute]
	if !ok {
		return fail(RecordAttribute, "missing: the message was not sent by a fanout Dispatcher")
	}
	if a.DataType != "String" || a.StringValue == nil {
		return fail(RecordAttribute, "want a String attribute, got data type %q", a.DataType)
	}
	j, err := readRecordAttribute(*a.StringValue)
	if err != nil {
		return nil, &DecodeError{MessageID: m.MessageId, Attribute: RecordAttribute, Err: err}
	}
	r := &kafkaevent.Record{Topic: j.topic, Partition: int32(j.partition), Offset: j.offset, TimestampType: j.timestampType}
	if j.timestamp != -1 {
		r.Timestamp = time.UnixMilli(j.timestamp).UTC()
	}
	if j.hasKey {
		k, err := base64.StdEncoding.DecodeString(j.key)
		if err != nil {
			return fail(RecordAttribute, `"key": %w`, err)
		}
		if k == nil {
			k = []byte{}
		}
		r.Key = k
	}
	if j.keySchema != nil {
		r.KeySchema = &kafkaevent.SchemaMetadata{DataFormat: j.keySchema.DataFormat, SchemaID: j.keySchema.SchemaID}
	}
	if j.valueSchema != nil {
		r.ValueSchema = &kafkaevent.SchemaMetadata{DataFormat: j.valueSchema.DataFormat, SchemaID: j.valueSchema.SchemaID}
	}
	v, hasValue := m.MessageAttributes[ValueAttribute]
	if hasValue && j.value != valueBinary {
		return fail(ValueAttribute, "present, but %s says the value is %q", RecordAttribute, j.value)
	}
	switch j.value {
	case valueText:
		if m.Body == "" {
			return fail("body", "empty, but %s says it is the value", RecordAttribute)
		}
		r.Value = []byte(m.Body)
	case valueBinary:
		if !hasValue {
			return fail(ValueAttribute, "missing, and %s says the value is in it", RecordAttribute)
		}
		if v.DataType != "Binary" || len(v.BinaryValue) == 0 {
			return fail(ValueAttribute, "want a non-empty Binary attribute, got data type %q", v.DataType)
		}
		r.Value = append(make([]byte, 0, len(v.BinaryValue)), v.BinaryValue...)
	case valueEmpty:
		r.Value = []byte{}
	case valueNull:
	default:
		return fail(RecordAttribute, `"value" is %q: want "text", "binary", "empty" or "null"`, j.value)
	}
	if h, ok := m.MessageAttributes[HeadersAttribute]; ok {
		if h.DataType != "Binary" {
			return fail(HeadersAttribute, "want a Binary attribute, got data type %q", h.DataType)
		}
		hs, err := readHeaders(h.BinaryValue)
		if err != nil {
			return fail(HeadersAttribute, "%w", err)
		}
		r.Headers = hs
	}
	return r, nil
}
