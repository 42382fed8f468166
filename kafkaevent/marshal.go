package kafkaevent

import (
	"encoding/base64"
	"slices"
	"strconv"
	"unicode/utf8"
)

// MarshalJSON writes the event in the event source mapping's wire format, the payload Lambda
// sends to the function, so that [Parse] reads back an equal event.
//
// The output follows these rules:
//   - "eventSourceArn" is written only when SourceARN is not empty; "bootstrapServers" only when
//     BootstrapServers is not empty, as one comma-joined string.
//   - "records" is an object keyed by [Partition.ID]; partitions that share an ID are merged
//     under one key, in the order of e.Partitions.
//   - "timestamp" is epoch milliseconds, -1 for the zero time.
//   - A nil byte slice is written as null, wherever it is: a nil Key gives "key": null, a nil
//     Value (a tombstone) gives "value": null, a nil header value gives null. An empty non-nil
//     slice gives "" (key, value) or [] (header value). Parse reads null and an absent field
//     alike, so nil survives the round trip, and so does the difference between nil and empty.
//   - "headers" is always an array, [] when there are none; each header is a one-member object
//     whose value is the bytes as signed numbers, -128..127, as Lambda writes Java bytes.
//   - "keySchemaMetadata" and "valueSchemaMetadata" are written only when KeySchema and
//     ValueSchema are not nil.
//   - A record that Parse could not decode (its Err is set) is written as the JSON Parse
//     received for it, verbatim, so the bad field is kept. A record with Err set that did not
//     come from Parse is written from its fields.
//
// Strings are escaped as encoding/json escapes them, except that <, > and & are kept; invalid
// UTF-8 is replaced by U+FFFD. MarshalJSON has a pointer receiver: give encoding/json an *Event.
// It returns "null" for a nil event, and never an error.
func (e *Event) MarshalJSON() ([]byte, error) {
	if e == nil {
		return []byte("null"), nil
	}
	return e.appendJSON(make([]byte, 0, e.sizeHint())), nil
}

// sizeHint estimates the length of the event's JSON, so that appendJSON rarely grows its buffer.
func (e *Event) sizeHint() int {
	n := 128 + len(e.SourceARN)
	for _, s := range e.BootstrapServers {
		n += len(s) + 1
	}
	for i := range e.Partitions {
		p := &e.Partitions[i]
		n += len(p.Topic) + 16
		for j := range p.Records {
			r := &p.Records[j]
			if r.Err != nil && r.raw != nil {
				n += len(r.raw) + 1
				continue
			}
			n += 160 + len(r.Topic) + len(r.TimestampType) +
				base64.StdEncoding.EncodedLen(len(r.Key)) + base64.StdEncoding.EncodedLen(len(r.Value))
			for _, h := range r.Headers {
				n += len(h.Key) + 8 + 5*len(h.Value)
			}
			if r.KeySchema != nil {
				n += 48 + len(r.KeySchema.DataFormat) + len(r.KeySchema.SchemaID)
			}
			if r.ValueSchema != nil {
				n += 48 + len(r.ValueSchema.DataFormat) + len(r.ValueSchema.SchemaID)
			}
		}
	}
	return n
}

func (e *Event) appendJSON(b []byte) []byte {
	b = append(b, `{"eventSource":`...)
	b = appendString(b, string(e.Source))
	if e.SourceARN != "" {
		b = append(b, `,"eventSourceArn":`...)
		b = appendString(b, e.SourceARN)
	}
	if len(e.BootstrapServers) > 0 {
		b = append(b, `,"bootstrapServers":"`...)
		for i, s := range e.BootstrapServers {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendStringContent(b, s)
		}
		b = append(b, '"')
	}
	b = append(b, `,"records":{`...)
	ps := e.Partitions
	ids := make([]string, len(ps))
	for i := range ps {
		ids[i] = ps[i].ID()
	}
	merge := hasDuplicate(ids)
	written := 0
	for i := range ps {
		if merge && slices.Contains(ids[:i], ids[i]) {
			continue // already written with the first partition of that ID
		}
		if written > 0 {
			b = append(b, ',')
		}
		written++
		b = appendString(b, ids[i])
		b = append(b, ":["...)
		n := 0
		last := i
		if merge {
			last = len(ps) - 1
		}
		for j := i; j <= last; j++ {
			if j > i && ids[j] != ids[i] {
				continue
			}
			for k := range ps[j].Records {
				if n > 0 {
					b = append(b, ',')
				}
				n++
				b = ps[j].Records[k].appendJSON(b)
			}
		}
		b = append(b, ']')
	}
	return append(b, "}}"...)
}

// hasDuplicate reports whether ids holds a string twice. Events from Parse and Builder never
// do; a hand-made one might, and a JSON object must not repeat a key.
func hasDuplicate(ids []string) bool {
	if len(ids) < 2 {
		return false
	}
	seen := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		if _, ok := seen[id]; ok {
			return true
		}
		seen[id] = struct{}{}
	}
	return false
}

func (r *Record) appendJSON(b []byte) []byte {
	if r.Err != nil && r.raw != nil {
		return append(b, r.raw...)
	}
	b = append(b, `{"topic":`...)
	b = appendString(b, r.Topic)
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
	b = append(b, `,"timestampType":`...)
	b = appendString(b, r.TimestampType)
	b = append(b, `,"key":`...)
	b = appendBase64(b, r.Key)
	b = append(b, `,"value":`...)
	b = appendBase64(b, r.Value)
	b = append(b, `,"headers":[`...)
	for i, h := range r.Headers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		b = appendString(b, h.Key)
		b = append(b, ':')
		b = appendSignedBytes(b, h.Value)
		b = append(b, '}')
	}
	b = append(b, ']')
	if r.KeySchema != nil {
		b = append(b, `,"keySchemaMetadata":`...)
		b = r.KeySchema.appendJSON(b)
	}
	if r.ValueSchema != nil {
		b = append(b, `,"valueSchemaMetadata":`...)
		b = r.ValueSchema.appendJSON(b)
	}
	return append(b, '}')
}

func (m *SchemaMetadata) appendJSON(b []byte) []byte {
	b = append(b, `{"dataFormat":`...)
	b = appendString(b, m.DataFormat)
	b = append(b, `,"schemaId":`...)
	b = appendString(b, m.SchemaID)
	return append(b, '}')
}

// appendBase64 appends p as a JSON string in standard base64, or null when p is nil.
func appendBase64(b, p []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, p)
	return append(b, '"')
}

// appendSignedBytes appends p as a JSON array of Java bytes (-128..127), or null when p is nil.
func appendSignedBytes(b, p []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, c := range p {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(int8(c)), 10)
	}
	return append(b, ']')
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendStringContent(b, s)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendStringContent appends s escaped for the inside of a JSON string, by encoding/json's
// rules without its HTML escaping: ", \ and control characters are escaped, U+2028 and U+2029
// too, and each byte of invalid UTF-8 becomes U+FFFD.
func appendStringContent(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(b, s[start:]...)
}
