package kafkaevent

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/internal/jsonstr"
)

// maxDepth bounds the nesting of unknown fields that Parse skips, so that hostile input
// cannot exhaust the stack.
const maxDepth = 1000

// Parse decodes the payload Lambda sends to a function behind a Kafka event source mapping,
// from Amazon MSK or from self-managed Kafka.
//
// It reads the payload in a single pass and decodes every key and value into one buffer, so
// the cost is a small number of allocations per event rather than several per record.
// Partitions come out sorted by topic, then number; records keep their delivered order.
//
// A malformed envelope (invalid JSON, an unknown eventSource, a records key that is not
// "topic-N", a record whose topic, partition or offset is missing or wrong) makes Parse fail
// with an *Error that names the JSON path. A record whose own fields are malformed (bad base64,
// a header byte out of range) does not: Parse returns the event and sets that record's Err, so
// one bad record can be reported as a batch item failure without losing the rest.
//
// Parse does not keep data: the event owns copies of everything it holds.
func Parse(data []byte) (*Event, error) {
	return parse(data, false)
}

func parse(data []byte, noFast bool) (*Event, error) {
	p := parser{data: data, noFast: noFast}
	// The arena starts small; presize sizes it for the whole batch from the first record.
	p.arena = make([]byte, 0, min(arenaBound(len(data)), 16<<10))
	ev, err := p.event()
	if err != nil {
		return nil, err
	}
	return ev, nil
}

type parser struct {
	data []byte
	i    int

	arena   []byte
	records []Record
	headers []Header
	schemas []SchemaMetadata
	strs    map[string]string
	scratch []byte
	hbuf    []byte
	hcache  [4]struct {
		name       string
		raw, value []byte
	}

	// Where the parser is, for error paths.
	partKey  string
	recIndex int
	field    string
	sub      string // a member of field: "dataFormat" in keySchemaMetadata.dataFormat
	unknown  []byte // the name of an unknown member being skipped, when field is ""

	noFast     bool  // tests only: read every record on the general path
	recErr     error // first error of the current record
	offsetSeen bool  // whether the current record has an offset
	topicPlain bool  // whether the current partition's topic needs no escapes in JSON
	firstRec   int   // where the first record starts
}

// ---- errors and paths ----

func (p *parser) path() string {
	if p.partKey == "" {
		if p.field == "" {
			return "$"
		}
		return p.field
	}
	var b strings.Builder
	b.WriteString("records[")
	b.WriteString(strconv.Quote(p.partKey))
	b.WriteByte(']')
	if p.recIndex >= 0 {
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(p.recIndex))
		b.WriteByte(']')
		switch {
		case p.field != "":
			b.WriteByte('.')
			b.WriteString(p.field)
			if p.sub != "" {
				b.WriteByte('.')
				b.WriteString(p.sub)
			}
		case p.unknown != nil:
			b.WriteByte('.')
			b.WriteString(string(p.unknown))
		}
	}
	return b.String()
}

func (p *parser) errAt(off int, format string, args ...any) *Error {
	return &Error{Path: p.path(), Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// syntaxErr reports invalid JSON at the current position.
func (p *parser) syntaxErr(what string) *Error {
	if p.i >= len(p.data) {
		return p.errAt(p.i, "unexpected end of input %s", what)
	}
	return p.errAt(p.i, "invalid character %s %s", quoteChar(p.data[p.i]), what)
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.QuoteRune(rune(c))
	if c >= utf8.RuneSelf {
		s = fmt.Sprintf("byte 0x%02x", c)
	}
	return s
}

// got describes the JSON value at off for an error message, shortened.
func (p *parser) got(off int) string {
	end := off
	for end < len(p.data) && end-off < 40 {
		c := p.data[end]
		if c == ',' || c == '}' || c == ']' {
			break
		}
		end++
	}
	s := strings.TrimSpace(string(p.data[off:end]))
	if end-off >= 40 {
		s += "..."
	}
	if s == "" {
		return "nothing"
	}
	return s
}

// fieldErr records a malformed record field: the record keeps its place in the batch and
// carries the error. The value at off is skipped (it must still be valid JSON).
func (p *parser) fieldErr(off int, cause error, format string, args ...any) error {
	if p.recErr == nil {
		e := p.errAt(off, format, args...)
		e.Err = cause
		p.recErr = e
	}
	p.i = off
	return p.skipValue(0)
}

// ---- the envelope ----

func (p *parser) event() (*Event, error) {
	p.recIndex = -1
	p.skipWS()
	if p.i >= len(p.data) || p.data[p.i] != '{' {
		if p.i >= len(p.data) {
			return nil, p.errAt(p.i, "want a JSON object, got nothing")
		}
		return nil, p.errAt(p.i, "want a JSON object, got %s", p.got(p.i))
	}
	ev := &Event{}
	var (
		source     string
		sourceSeen bool
		sourceOff  int
		recordsOK  bool
		parts      []Partition
	)
	err := p.object(func(name []byte) error {
		off := p.i
		switch string(name) {
		case "eventSource":
			p.field = "eventSource"
			s, ok, err := p.stringOrNull()
			if err != nil {
				return err
			}
			if !ok {
				return p.errAt(off, "want string, got %s", p.got(off))
			}
			source, sourceSeen, sourceOff = s, true, off
		case "eventSourceArn":
			p.field = "eventSourceArn"
			s, ok, err := p.stringOrNull()
			if err != nil {
				return err
			}
			if !ok && p.data[off] != 'n' {
				return p.errAt(off, "want string, got %s", p.got(off))
			}
			ev.SourceARN = s
		case "bootstrapServers":
			p.field = "bootstrapServers"
			s, ok, err := p.stringOrNull()
			if err != nil {
				return err
			}
			if !ok && p.data[off] != 'n' {
				return p.errAt(off, "want comma-separated string, got %s", p.got(off))
			}
			ev.BootstrapServers = splitServers(s)
		case "records":
			p.field = "records"
			if p.i >= len(p.data) || p.data[p.i] != '{' {
				return p.errAt(off, "want object keyed \"topic-partition\", got %s", p.got(off))
			}
			ps, err := p.partitions()
			if err != nil {
				return err
			}
			parts, recordsOK = ps, true
		default:
			p.field = string(name)
			if err := p.skipValue(0); err != nil {
				return err
			}
		}
		p.field = ""
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.skipWS()
	if p.i != len(p.data) {
		p.field = ""
		return nil, p.errAt(p.i, "unexpected data after the event object: %s", p.got(p.i))
	}
	switch {
	case !sourceSeen:
		p.field = "eventSource"
		return nil, p.errAt(0, "missing (want %q or %q)", SourceMSK, SourceSelfManaged)
	case source == string(SourceMSK):
		ev.Source = SourceMSK
	case source == string(SourceSelfManaged):
		ev.Source = SourceSelfManaged
	default:
		p.field = "eventSource"
		return nil, p.errAt(sourceOff, "unknown event source %q (want %q or %q)", source, SourceMSK, SourceSelfManaged)
	}
	if !recordsOK {
		p.field = "records"
		return nil, p.errAt(0, "missing")
	}
	ev.Partitions = parts
	return ev, nil
}

func splitServers(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	out := strings.Split(s, ",")
	n := 0
	for _, v := range out {
		if v = strings.TrimSpace(v); v != "" {
			out[n] = v
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return out[:n]
}

// partitions reads the records object.
func (p *parser) partitions() ([]Partition, error) {
	var parts []Partition
	err := p.object(func(name []byte) error {
		key := string(name)
		p.partKey = key
		p.recIndex = -1
		p.field = ""
		topic, num, ok := splitPartitionKey(key)
		if !ok {
			return p.errAt(p.i, `key is not "topic-partition" (want a topic, "-", and a partition number)`)
		}
		part := Partition{Topic: topic, Number: num}
		p.topicPlain = plainJSON(topic)
		off := p.i
		if p.i >= len(p.data) || p.data[p.i] != '[' {
			return p.errAt(off, "want array of records, got %s", p.got(off))
		}
		p.i++
		start := len(p.records)
		p.skipWS()
		if p.i < len(p.data) && p.data[p.i] == ']' {
			p.i++
		} else {
			for idx := 0; ; idx++ {
				p.recIndex = idx
				p.field = ""
				if err := p.record(&part); err != nil {
					return err
				}
				p.skipWS()
				if p.i >= len(p.data) {
					return p.syntaxErr("after record")
				}
				if p.data[p.i] == ',' {
					p.i++
					p.skipWS()
					continue
				}
				if p.data[p.i] == ']' {
					p.i++
					break
				}
				return p.syntaxErr("after record (want ',' or ']')")
			}
		}
		end := len(p.records)
		part.Records = p.records[start:end:end]
		if end == start {
			part.Records = nil
		}
		parts = append(parts, part)
		p.partKey = ""
		p.recIndex = -1
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(parts, func(a, b Partition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Number) - int(b.Number)
	})
	for i := 1; i < len(parts); i++ {
		if parts[i].Topic == parts[i-1].Topic && parts[i].Number == parts[i-1].Number {
			p.partKey, p.recIndex, p.field = parts[i].ID(), -1, ""
			return nil, p.errAt(0, "partition appears twice in records")
		}
	}
	return parts, nil
}

// splitPartitionKey splits "topic-N" at its last dash. N must be a canonical non-negative
// int32, so that the key equals Partition.ID().
func splitPartitionKey(key string) (string, int32, bool) {
	dash := strings.LastIndexByte(key, '-')
	if dash <= 0 || dash == len(key)-1 {
		return "", 0, false
	}
	n, ok := parseUint(key[dash+1:], math.MaxInt32)
	if !ok {
		return "", 0, false
	}
	return key[:dash], int32(n), true
}

// parseUint reads a canonical decimal (no sign, no leading zeros) no greater than max.
func parseUint[S string | []byte](s S, max uint64) (uint64, bool) {
	if len(s) == 0 || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (max-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// ---- records ----

const (
	nameTopic         = "topic"
	namePartition     = "partition"
	nameOffset        = "offset"
	nameTimestamp     = "timestamp"
	nameTimestampType = "timestampType"
	nameKey           = "key"
	nameValue         = "value"
	nameHeaders       = "headers"
	nameKeySchema     = "keySchemaMetadata"
	nameValueSchema   = "valueSchemaMetadata"
)

func (p *parser) record(part *Partition) error {
	recStart := p.i
	if p.i >= len(p.data) || p.data[p.i] != '{' {
		return p.errAt(p.i, "want record object, got %s", p.got(p.i))
	}
	if len(p.records) == cap(p.records) && len(p.records) <= 1 {
		p.presize(recStart)
	}
	// Fill the record in place: the slab is zeroed already, and writing a whole Record value
	// would copy 200 bytes per record for nothing.
	var r *Record
	if n := len(p.records); n < cap(p.records) {
		p.records = p.records[:n+1]
		r = &p.records[n]
		r.Topic, r.Partition = part.Topic, part.Number
	} else {
		p.records = append(p.records, Record{Topic: part.Topic, Partition: part.Number})
		r = &p.records[n]
	}
	p.recErr = nil
	if !p.noFast && p.recordFast(r, part) {
		return nil
	}
	p.offsetSeen = false
	p.i++
	p.skipWS()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
	} else {
		for {
			kind, name, err := p.recordMember()
			if err != nil {
				return err
			}
			if err := p.recordField(r, part, kind, name); err != nil {
				return err
			}
			// Compact JSON, as Lambda sends it, goes straight on to the next name.
			if i := p.i; i+1 < len(p.data) && p.data[i] == ',' && p.data[i+1] == '"' {
				p.i = i + 1
				continue
			}
			p.skipWS()
			if p.i >= len(p.data) {
				return p.syntaxErr("after object key:value pair")
			}
			if c := p.data[p.i]; c == ',' {
				p.i++
				p.skipWS()
				continue
			} else if c == '}' {
				p.i++
				break
			}
			return p.syntaxErr("after object key:value pair")
		}
	}
	if !p.offsetSeen {
		p.field = nameOffset
		return p.errAt(recStart, "missing")
	}
	if p.recErr != nil {
		r.Err = p.recErr
		r.raw = p.copyBytes(p.data[recStart:p.i])
		p.recErr = nil
	}
	return nil
}

// recordFast reads a record in the form Lambda writes, all in local variables: compact JSON,
// the known member names, the partition's own topic, integers, plain base64 strings. At the
// first thing it does not expect, it undoes what it did and returns false, and record reads the
// record again on the general path, which handles every form and every error. The two paths
// must agree on everything; TestRecordFastAgrees checks that they do.
func (p *parser) recordFast(r *Record, part *Partition) bool {
	d := p.data
	start := p.i
	i := start + 1 // past '{'
	headers := len(p.headers)
	offsetSeen := false
	fail := func() bool {
		*r = Record{Topic: part.Topic, Partition: part.Number}
		p.i, p.headers, p.recErr, p.field = start, p.headers[:headers], nil, ""
		return false
	}
	for {
		if i+16 > len(d) {
			return fail()
		}
		w := binary.LittleEndian.Uint64(d[i:])
		switch {
		case w == wTopic:
			next, ok := quotedAt(d, i+8, part.Topic)
			if !ok || !p.topicPlain {
				return fail()
			}
			i = next
		case w == wPartiti && binary.LittleEndian.Uint32(d[i+8:]) == wOnColon:
			n, next, ok := uintAt(d, i+12)
			if !ok || n != uint64(part.Number) {
				return fail()
			}
			i = next
		case w == wOffset && d[i+8] == ':':
			n, next, ok := uintAt(d, i+9)
			if !ok || n > math.MaxInt64 {
				return fail()
			}
			r.Offset, offsetSeen, i = int64(n), true, next
		case w == wTimesta && binary.LittleEndian.Uint32(d[i+8:]) == wMpColon:
			n, next, ok := uintAt(d, i+12) // -1 and other negatives take the general path
			if !ok || n > math.MaxInt64 {
				return fail()
			}
			r.Timestamp, i = time.UnixMilli(int64(n)).UTC(), next
		case w == wTimesta && binary.LittleEndian.Uint64(d[i+8:]) == wMpType:
			if next, ok := quotedAt(d, i+16, CreateTime); ok {
				r.TimestampType, i = CreateTime, next
			} else if next, ok := quotedAt(d, i+16, LogAppendTime); ok {
				r.TimestampType, i = LogAppendTime, next
			} else {
				return fail()
			}
		case w&0xFFFFFFFFFFFF == wKey:
			v, next, ok := p.base64At(i + 6)
			if !ok {
				return fail()
			}
			r.Key, i = v, next
		case w == wValue:
			v, next, ok := p.base64At(i + 8)
			if !ok {
				return fail()
			}
			r.Value, i = v, next
		case w == wHeaders && binary.LittleEndian.Uint16(d[i+8:]) == wQuoteColon && d[i+10] == '[':
			p.i, p.field = i+10, nameHeaders
			hs, err := p.headerList(i + 10)
			p.field = ""
			if err != nil || p.recErr != nil {
				return fail()
			}
			r.Headers, i = hs, p.i
		default:
			return fail()
		}
		if i+1 < len(d) && d[i] == ',' && d[i+1] == '"' {
			i++
			continue
		}
		if i < len(d) && d[i] == '}' {
			i++
			break
		}
		return fail()
	}
	if !offsetSeen {
		return fail()
	}
	p.i = i
	return true
}

// presize sizes the record and header slabs from the first record's length, so that a large
// batch does not copy its records over and over as the slabs grow: at the second record, the
// first one's size tells roughly how many the payload holds.
func (p *parser) presize(recStart int) {
	if len(p.records) == 0 {
		p.records = make([]Record, 0, 1)
		p.firstRec = recStart
		return
	}
	size := recStart - p.firstRec
	if size < 64 {
		size = 64
	}
	n := (len(p.data)-p.firstRec)/size + 16
	// Decoded bytes in proportion to the first record's, with a margin; the arena is zeroed
	// on allocation, so sizing it for what the batch needs rather than for the worst case
	// (arenaBound) saves a pass over a quarter of the payload's size. If the guess falls
	// short, reserve falls back to the bound for the rest.
	est := len(p.arena)*(len(p.data)-recStart)/size*11/10 + 4096
	if rest := arenaBound(len(p.data) - recStart); est > rest {
		est = rest
	}
	if est > cap(p.arena)-len(p.arena) {
		p.arena = make([]byte, 0, est)
	}
	recs := make([]Record, len(p.records), n)
	copy(recs, p.records)
	p.records = recs
	if len(p.headers) > 0 {
		hs := make([]Header, len(p.headers), len(p.headers)*n+16)
		copy(hs, p.headers)
		p.headers = hs
	}
}

// recordField reads the value of one member of a record.
func (p *parser) recordField(r *Record, part *Partition, kind fieldKind, name []byte) error {
	off := p.i
	switch kind {
	case fTopic:
		p.field = nameTopic
		if p.topicPlain && p.quoted(part.Topic) {
			break // the usual case: the partition key's topic, unescaped
		}
		raw, esc, err := p.rawString()
		if err != nil {
			if p.data[off] != '"' {
				return p.errAt(off, "want string, got %s", p.got(off))
			}
			return err
		}
		if esc || string(raw) != part.Topic {
			if t := p.text(raw, esc); t != part.Topic {
				return p.errAt(off, "record topic %q does not match its partition key %q", t, part.ID())
			}
		}
	case fPartition:
		p.field = namePartition
		n, err := p.partitionNumber()
		if err != nil {
			return err
		}
		if n != part.Number {
			return p.errAt(off, "record partition %d does not match its partition key %q", n, part.ID())
		}
	case fOffset:
		p.field = nameOffset
		n, ok := p.integer()
		if !ok {
			if err := p.checkValue(off); err != nil {
				return err
			}
			return p.errAt(off, "want integer, got %s", p.got(off))
		}
		if n < 0 {
			return p.errAt(off, "want non-negative integer, got %d", n)
		}
		r.Offset, p.offsetSeen = n, true
	case fTimestamp:
		p.field = nameTimestamp
		if p.null() {
			r.Timestamp = time.Time{}
			break
		}
		n, ok := p.integer()
		if !ok {
			if err := p.checkValue(off); err != nil {
				return err
			}
			return p.fieldErr(off, nil, "want integer epoch milliseconds, got %s", p.got(off))
		}
		if n == -1 {
			r.Timestamp = time.Time{}
		} else {
			r.Timestamp = time.UnixMilli(n).UTC()
		}
	case fTimestampType:
		p.field = nameTimestampType
		if p.quoted(CreateTime) {
			r.TimestampType = CreateTime
			break
		}
		raw, esc, err := p.rawString()
		if err != nil {
			if p.null() {
				r.TimestampType = ""
				break
			}
			if p.data[off] == '"' {
				return err
			}
			return p.fieldErr(off, nil, "want string, got %s", p.got(off))
		}
		switch {
		case esc:
			r.TimestampType = p.intern(p.unescape(raw))
		case string(raw) == CreateTime:
			r.TimestampType = CreateTime
		case string(raw) == LogAppendTime:
			r.TimestampType = LogAppendTime
		default:
			r.TimestampType = p.intern(raw)
		}
	case fKey, fValue:
		dst := &r.Key
		p.field = nameKey
		if kind == fValue {
			dst, p.field = &r.Value, nameValue
		}
		b, err := p.base64Field(off)
		if err != nil {
			return err
		}
		*dst = b
	case fHeaders:
		p.field = nameHeaders
		hs, err := p.headerList(off)
		if err != nil {
			return err
		}
		r.Headers = hs
	case fKeySchema, fValueSchema:
		dst := &r.KeySchema
		p.field = nameKeySchema
		if kind == fValueSchema {
			dst, p.field = &r.ValueSchema, nameValueSchema
		}
		s, err := p.schema(off)
		if err != nil {
			return err
		}
		*dst = s
	default:
		p.field, p.unknown = "", name
		if err := p.skipValue(0); err != nil {
			return err
		}
		p.unknown = nil
	}
	p.field = ""
	return nil
}

// fieldKind names the members of a record that Parse reads.
type fieldKind uint8

const (
	fUnknown fieldKind = iota
	fTopic
	fPartition
	fOffset
	fTimestamp
	fTimestampType
	fKey
	fValue
	fHeaders
	fKeySchema
	fValueSchema
)

// recordMember reads a member name of a record and the colon after it, and says which field it
// is. It is the general path: recordFast reads the names Lambda writes without it.
func (p *parser) recordMember() (fieldKind, []byte, error) {
	d := p.data
	i := p.i
	if i >= len(d) || d[i] != '"' {
		return 0, nil, p.syntaxErr("looking for beginning of object key string")
	}
	raw, esc, err := p.rawString()
	if err != nil {
		return 0, nil, err
	}
	name := raw
	if esc {
		name = p.unescape(raw)
	}
	kind := fUnknown
	switch string(name) {
	case nameTopic:
		kind = fTopic
	case namePartition:
		kind = fPartition
	case nameOffset:
		kind = fOffset
	case nameTimestamp:
		kind = fTimestamp
	case nameTimestampType:
		kind = fTimestampType
	case nameKey:
		kind = fKey
	case nameValue:
		kind = fValue
	case nameHeaders:
		kind = fHeaders
	case nameKeySchema:
		kind = fKeySchema
	case nameValueSchema:
		kind = fValueSchema
	}
	if i := p.i; i+1 < len(d) && d[i] == ':' && d[i+1] > ' ' {
		p.i = i + 1 // compact JSON
		return kind, name, nil
	}
	p.skipWS()
	if p.i >= len(d) || d[p.i] != ':' {
		return 0, nil, p.syntaxErr("after object key")
	}
	p.i++
	p.skipWS()
	if p.i >= len(d) {
		return 0, nil, p.syntaxErr("looking for beginning of value")
	}
	return kind, name, nil
}

// Record member names with their quotes and colon, as little-endian words for recordFast.
var (
	wTopic      = word8(`"topic":`)
	wPartiti    = word8(`"partiti`)
	wOnColon    = uint32(word8(`on":`))
	wOffset     = word8(`"offset"`)
	wTimesta    = word8(`"timesta`)
	wMpColon    = uint32(word8(`mp":`))
	wMpType     = word8(`mpType":`)
	wKey        = word8(`"key":`)
	wValue      = word8(`"value":`)
	wHeaders    = word8(`"headers`)
	wQuoteColon = uint16(word8(`":`))
)

// word8 returns up to eight bytes of s as a little-endian word.
func word8(s string) uint64 {
	var b [8]byte
	copy(b[:], s)
	return binary.LittleEndian.Uint64(b[:])
}

// partitionNumber reads a partition as a JSON number or, as hand-written fixtures do, a
// numeric string.
func (p *parser) partitionNumber() (int32, error) {
	off := p.i
	if p.i < len(p.data) && p.data[p.i] == '"' {
		raw, esc, err := p.rawString()
		if err != nil {
			return 0, err
		}
		s := p.text(raw, esc)
		n, ok := parseUint(s, math.MaxInt32)
		if !ok {
			return 0, p.errAt(off, "want partition number 0..%d, got %s", math.MaxInt32, p.got(off))
		}
		return int32(n), nil
	}
	n, ok := p.integer()
	if !ok {
		if err := p.checkValue(off); err != nil {
			return 0, err
		}
		return 0, p.errAt(off, "want partition number 0..%d, got %s", math.MaxInt32, p.got(off))
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, p.errAt(off, "want partition number 0..%d, got %d", math.MaxInt32, n)
	}
	return int32(n), nil
}

// base64Field reads a key or value: null gives nil, a string its decoded bytes (empty but not
// nil for ""). A string that is not valid base64 sets the record's error.
func (p *parser) base64Field(off int) ([]byte, error) {
	if p.null() {
		return nil, nil
	}
	if p.i >= len(p.data) || p.data[p.i] != '"' {
		if err := p.checkValue(off); err != nil {
			return nil, err
		}
		return nil, p.fieldErr(off, nil, "want base64 string or null, got %s", p.got(off))
	}
	if v, next, ok := p.base64At(p.i); ok {
		p.i = next
		return v, nil
	}
	// Slow path: escapes, or not base64 at all.
	raw, esc, err := p.rawString()
	if err != nil {
		return nil, err
	}
	text := raw
	if esc {
		text = p.unescape(raw)
	}
	for i, c := range text {
		if c == '\r' || c == '\n' {
			return nil, p.fieldErr(off, base64.CorruptInputError(i), "invalid base64: line break at byte %d", i)
		}
	}
	p.reserve(base64.StdEncoding.DecodedLen(len(text)))
	n, derr := base64.StdEncoding.Decode(p.arena[len(p.arena):cap(p.arena)], text)
	if derr != nil {
		return nil, p.fieldErr(off, derr, "invalid base64: %v", derr)
	}
	return p.takeArena(n), nil
}

// base64At decodes the JSON string at d[i] when it is plain base64, which needs no JSON
// unescaping (the fast path), and returns the bytes and the position after the string. It
// returns false for anything else, with nothing consumed.
func (p *parser) base64At(i int) (v []byte, next int, ok bool) {
	d := p.data
	if i >= len(d) || d[i] != '"' {
		return nil, 0, false
	}
	start := i + 1
	src := d[start:]
	for try := 0; try < 2; try++ {
		dst := p.arena[len(p.arena):cap(p.arena)]
		ns, nd := decodeBase64Run(dst, src)
		if ns < len(src) && src[ns] == '"' {
			return p.takeArena(nd), start + ns + 1, true
		}
		if ns+4 < len(src) && src[ns+4] == '"' {
			if n, ok := decodeBase64Tail(dst[nd:], src[ns:ns+4]); ok {
				return p.takeArena(nd + n), start + ns + 5, true
			}
		}
		if len(dst)-nd >= 16 {
			break // not plain base64
		}
		// The arena ran out of room: start the next one and decode again.
		p.reserveAt(len(dst)+16, i)
	}
	return nil, 0, false
}

// takeArena returns the next n bytes of the arena, already written, as a slice with no spare
// capacity, and moves the arena past them.
func (p *parser) takeArena(n int) []byte {
	l := len(p.arena)
	p.arena = p.arena[:l+n]
	return p.arena[l : l+n : l+n]
}

// arenaBound is the most bytes that n bytes of payload can decode to: base64 gives three bytes
// for four characters, a header byte list at most one for two.
func arenaBound(n int) int { return n/4*3 + 64 }

// reserve makes room for n more bytes in the arena. When the arena is full, a new one is
// started, big enough for everything the rest of the payload can decode to, so this happens at
// most once per batch after presize; the old arena stays alive through the slices already taken
// from it.
func (p *parser) reserve(n int) { p.reserveAt(n, p.i) }

// reserveAt is reserve for a parser reading at pos.
func (p *parser) reserveAt(n, pos int) {
	if cap(p.arena)-len(p.arena) >= n {
		return
	}
	p.arena = make([]byte, 0, max(n, arenaBound(len(p.data)-pos)))
}

func (p *parser) copyBytes(b []byte) []byte {
	p.reserve(len(b))
	l := len(p.arena)
	p.arena = append(p.arena, b...)
	return p.arena[l : l+len(b) : l+len(b)]
}

// headerList reads headers: null, or an array of single-name objects whose values are arrays
// of byte numbers or null. Java bytes are signed, so -128..127 is what Lambda sends; 128..255
// is accepted too, for producers that wrote unsigned bytes.
func (p *parser) headerList(off int) ([]Header, error) {
	if p.null() {
		return nil, nil
	}
	if p.i >= len(p.data) || p.data[p.i] != '[' {
		if err := p.checkValue(off); err != nil {
			return nil, err
		}
		return nil, p.fieldErr(off, nil, "want array of header objects, got %s", p.got(off))
	}
	start := len(p.headers)
	p.i++
	p.skipWS()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return nil, nil
	}
	for idx := 0; ; idx++ {
		hoff := p.i
		if p.i >= len(p.data) || p.data[p.i] != '{' {
			if err := p.checkValue(hoff); err != nil {
				return nil, err
			}
			p.field = nameHeaders + "[" + strconv.Itoa(idx) + "]"
			if err := p.fieldErr(hoff, nil, "want header object, got %s", p.got(hoff)); err != nil {
				return nil, err
			}
		} else {
			// Headers repeat from record to record (a content type, a schema version):
			// remember the text of the element seen at this position and the header it gave,
			// and when the next record has the same text, copy the header instead of decoding.
			slot := &p.hcache[idx%len(p.hcache)]
			if n := len(slot.raw); n > 0 && hoff+n <= len(p.data) && string(p.data[hoff:hoff+n]) == string(slot.raw) {
				h := Header{Key: slot.name}
				if slot.value != nil {
					h.Value = p.copyBytes(slot.value)
				}
				p.headers = append(p.headers, h)
				p.i = hoff + n
			} else {
				before, hadErr := len(p.headers), p.recErr != nil
				err := p.object(func(name []byte) error {
					voff := p.i
					h := Header{Key: p.intern(name)}
					if !p.null() {
						v, ok := p.byteList()
						if !ok {
							p.field = nameHeaders + "[" + strconv.Itoa(idx) + "]." + h.Key
							if err := p.checkValue(voff); err != nil {
								return err
							}
							if err := p.fieldErr(voff, nil, "want array of byte numbers -128..255, got %s", p.got(voff)); err != nil {
								return err
							}
							p.field = nameHeaders
							return nil
						}
						h.Value = v
					}
					p.headers = append(p.headers, h)
					return nil
				})
				if err != nil {
					return nil, err
				}
				slot.raw = nil
				if len(p.headers) == before+1 && !hadErr && p.recErr == nil {
					slot.raw, slot.name, slot.value = p.data[hoff:p.i], p.headers[before].Key, p.headers[before].Value
				}
			}
		}
		p.skipWS()
		if p.i >= len(p.data) {
			return nil, p.syntaxErr("in headers")
		}
		if p.data[p.i] == ',' {
			p.i++
			p.skipWS()
			continue
		}
		if p.data[p.i] == ']' {
			p.i++
			break
		}
		return nil, p.syntaxErr("in headers (want ',' or ']')")
	}
	end := len(p.headers)
	if end == start {
		return nil, nil
	}
	return p.headers[start:end:end], nil
}

// byteList reads [n, n, ...] with each n in -128..255 into the arena. On anything else it
// returns false and leaves the position to the caller.
//
// Header values are lists of small numbers on every record, so the common form, numbers of one
// to three digits separated by commas without spaces, is read with few branches; anything else
// goes through byteListSlow.
func (p *parser) byteList() ([]byte, bool) {
	d := p.data
	if p.i >= len(d) || d[p.i] != '[' {
		return nil, false
	}
	i := p.i + 1
	if i+1 < len(d) && d[i] == ']' {
		p.i = i + 1
		return p.takeArena(0), true
	}
	l := len(p.arena)
	for {
		if i+4 > len(d) || cap(p.arena)-len(p.arena) < 1 {
			p.arena = p.arena[:l]
			return p.byteListSlow()
		}
		neg := d[i] == '-'
		if neg {
			i++
			if i+4 > len(d) {
				p.arena = p.arena[:l]
				return p.byteListSlow()
			}
		}
		s := d[i : i+4 : i+4]
		v0, v1, v2 := uint(s[0])-'0', uint(s[1])-'0', uint(s[2])-'0'
		if v0 > 9 || v0 == 0 && v1 <= 9 {
			p.arena = p.arena[:l]
			return p.byteListSlow()
		}
		n, w := v0, 1
		if v1 <= 9 {
			n, w = n*10+v1, 2
			if v2 <= 9 {
				n, w = n*10+v2, 3
			}
		}
		next := s[w]
		if next <= '9' && next >= '0' || next == '.' || next == 'e' || next == 'E' || n > 255 || neg && n > 128 {
			p.arena = p.arena[:l]
			return p.byteListSlow()
		}
		b := byte(n)
		if neg {
			b = -b
		}
		p.arena = append(p.arena, b)
		i += w + 1
		if next == ',' {
			continue
		}
		if next == ']' {
			break
		}
		p.arena = p.arena[:l]
		return p.byteListSlow()
	}
	p.i = i
	n := len(p.arena) - l
	return p.arena[l : l+n : l+n], true
}

// byteListSlow is byteList for any valid form: spaces, numbers near the end of the input, and
// the checks that make a value out of range an error.
func (p *parser) byteListSlow() ([]byte, bool) {
	d := p.data
	i := p.i
	if i >= len(d) || d[i] != '[' {
		return nil, false
	}
	i++
	buf := p.hbuf[:0]
	for {
		for i < len(d) && isSpace(d[i]) {
			i++
		}
		if i < len(d) && d[i] == ']' && len(buf) == 0 {
			i++
			break
		}
		neg := false
		if i < len(d) && d[i] == '-' {
			neg = true
			i++
		}
		j := i
		n := 0
		for j < len(d) && d[j] >= '0' && d[j] <= '9' && j-i < 4 {
			n = n*10 + int(d[j]-'0')
			j++
		}
		if j == i || j-i > 3 || (d[i] == '0' && j-i > 1) || j < len(d) && (d[j] == '.' || d[j] == 'e' || d[j] == 'E') {
			return nil, false
		}
		if neg {
			n = -n
		}
		if n < -128 || n > 255 {
			return nil, false
		}
		buf = append(buf, byte(n))
		i = j
		for i < len(d) && isSpace(d[i]) {
			i++
		}
		if i < len(d) && d[i] == ',' {
			i++
			continue
		}
		if i < len(d) && d[i] == ']' {
			i++
			break
		}
		return nil, false
	}
	p.hbuf = buf
	p.i = i
	return p.copyBytes(buf), true
}

func (p *parser) schema(off int) (*SchemaMetadata, error) {
	if p.null() {
		return nil, nil
	}
	if p.i >= len(p.data) || p.data[p.i] != '{' {
		if err := p.checkValue(off); err != nil {
			return nil, err
		}
		return nil, p.fieldErr(off, nil, "want schema metadata object, got %s", p.got(off))
	}
	var s SchemaMetadata
	err := p.object(func(name []byte) error {
		foff := p.i
		var dst *string
		switch string(name) {
		case "dataFormat":
			dst, p.sub = &s.DataFormat, "dataFormat"
		case "schemaId":
			dst, p.sub = &s.SchemaID, "schemaId"
		default:
			return p.skipValue(1)
		}
		if p.null() {
			p.sub = ""
			return nil
		}
		if p.data[foff] == '"' {
			raw, esc, err := p.rawString()
			if err != nil {
				return err
			}
			if esc {
				*dst = p.intern(p.unescape(raw))
			} else {
				*dst = p.intern(raw)
			}
			p.sub = ""
			return nil
		}
		if n, ok := p.integer(); ok && dst == &s.SchemaID {
			*dst = strconv.FormatInt(n, 10) // Confluent ids are numbers; accept one as written
			p.sub = ""
			return nil
		}
		if err := p.checkValue(foff); err != nil {
			return err
		}
		err := p.fieldErr(foff, nil, "want string, got %s", p.got(foff))
		p.sub = ""
		return err
	})
	if err != nil {
		return nil, err
	}
	p.schemas = append(p.schemas, s)
	if len(p.schemas) == cap(p.schemas) {
		// Keep returned pointers stable: start a new slab rather than let append move this one.
		p.schemas = make([]SchemaMetadata, 0, max(64, 2*cap(p.schemas)))
		p.schemas = append(p.schemas, s)
		return &p.schemas[0], nil
	}
	return &p.schemas[len(p.schemas)-1], nil
}

// ---- JSON scanning ----

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func (p *parser) skipWS() {
	// Every byte that starts a JSON token is above ' ', and Lambda's payloads are compact, so
	// one comparison usually settles it.
	for p.i < len(p.data) && p.data[p.i] <= ' ' && isSpace(p.data[p.i]) {
		p.i++
	}
}

// plainJSON reports whether s is written in JSON as itself between quotes, with no escapes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// quoted consumes the JSON string "s" at p.i when it is exactly s with nothing escaped. s must
// be plainJSON.
func (p *parser) quoted(s string) bool {
	if next, ok := quotedAt(p.data, p.i, s); ok {
		p.i = next
		return true
	}
	return false
}

// quotedAt is quoted for d[i:]: it returns the position after "s".
func quotedAt(d []byte, i int, s string) (int, bool) {
	if i+len(s)+2 <= len(d) && d[i] == '"' && string(d[i+1:i+1+len(s)]) == s && d[i+1+len(s)] == '"' {
		return i + len(s) + 2, true
	}
	return 0, false
}

// object reads an object at p.i, calling fn for each member with the position at the member's
// value (whitespace skipped). fn must consume the value. Member names are unescaped.
func (p *parser) object(fn func(name []byte) error) error {
	if p.i >= len(p.data) || p.data[p.i] != '{' {
		return p.syntaxErr("looking for beginning of object")
	}
	p.i++
	p.skipWS()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return nil
	}
	for {
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return p.syntaxErr("looking for beginning of object key string")
		}
		raw, esc, err := p.rawString()
		if err != nil {
			return err
		}
		name := raw
		if esc {
			name = p.unescape(raw)
		}
		p.skipWS()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return p.syntaxErr("after object key")
		}
		p.i++
		p.skipWS()
		if p.i >= len(p.data) {
			return p.syntaxErr("looking for beginning of value")
		}
		if err := fn(name); err != nil {
			return err
		}
		p.skipWS()
		if p.i >= len(p.data) {
			return p.syntaxErr("after object key:value pair")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
			p.skipWS()
		case '}':
			p.i++
			return nil
		default:
			return p.syntaxErr("after object key:value pair")
		}
	}
}

// strPlain marks the ASCII bytes that may appear in a JSON string without ending it or
// starting an escape. Bytes from 0x80 up are not marked, so that rawString notices them and
// checks the UTF-8 only when there is some.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// rawString reads the string at p.i and returns its bytes between the quotes, unescaped only
// when esc is false. It validates the escapes. Invalid UTF-8 is let through here and replaced
// by unescape, as encoding/json does.
func (p *parser) rawString() (raw []byte, esc bool, err error) {
	d := p.data
	if p.i >= len(d) || d[p.i] != '"' {
		return nil, false, p.syntaxErr("looking for beginning of string")
	}
	start := p.i + 1
	i := start
	nonASCII := false
	for {
		for i < len(d) && strPlain[d[i]] {
			i++
		}
		if i >= len(d) {
			p.i = i
			return nil, false, p.syntaxErr("in string literal")
		}
		switch c := d[i]; {
		case c >= utf8.RuneSelf:
			nonASCII = true
			i++
		case c == '"':
			p.i = i + 1
			raw = d[start:i]
			if nonASCII && !esc && !utf8.Valid(raw) {
				esc = true // route through unescape to replace invalid bytes
			}
			return raw, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(d) {
				p.i = i + 1
				return nil, false, p.syntaxErr("in string escape code")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := 2; k < 6; k++ {
					if i+k >= len(d) || !isHex(d[i+k]) {
						p.i = min(i+k, len(d))
						return nil, false, p.syntaxErr("in \\u hexadecimal character escape")
					}
				}
				i += 6
			default:
				p.i = i + 1
				return nil, false, p.syntaxErr("in string escape code")
			}
		default:
			p.i = i
			return nil, false, p.syntaxErr("in string literal")
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// unescape decodes a string body validated by rawString the way encoding/json does: invalid
// UTF-8 and lone surrogates become U+FFFD. The result lives in a scratch buffer that the next
// call reuses.
func (p *parser) unescape(raw []byte) []byte {
	p.scratch = jsonstr.AppendUnescaped(p.scratch[:0], raw)
	return p.scratch
}

// text returns a string body as a Go string.
func (p *parser) text(raw []byte, esc bool) string {
	if esc {
		return string(p.unescape(raw))
	}
	return string(raw)
}

// intern returns b as a string, allocating once per distinct value in the event: header names,
// timestamp types and schema ids repeat on every record.
func (p *parser) intern(b []byte) string {
	if s, ok := p.strs[string(b)]; ok {
		return s
	}
	if p.strs == nil {
		p.strs = make(map[string]string)
	}
	s := string(b)
	if len(p.strs) < 4096 {
		p.strs[s] = s
	}
	return s
}

// null consumes a JSON null at p.i.
func (p *parser) null() bool {
	if p.i+4 <= len(p.data) && string(p.data[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

// stringOrNull reads a string (ok) or null (not ok); anything else is left unread.
func (p *parser) stringOrNull() (string, bool, error) {
	if p.null() {
		return "", false, nil
	}
	if p.i < len(p.data) && p.data[p.i] == '"' {
		raw, esc, err := p.rawString()
		if err != nil {
			return "", false, err
		}
		return p.text(raw, esc), true, nil
	}
	if err := p.checkValue(p.i); err != nil {
		return "", false, err
	}
	return "", false, nil
}

// integer reads a JSON number that is an integer within int64. On anything else it returns
// false with the position unchanged.
func (p *parser) integer() (int64, bool) {
	i := p.i
	neg := i < len(p.data) && p.data[i] == '-'
	if neg {
		i++
	}
	n, next, ok := uintAt(p.data, i)
	switch {
	case !ok:
		return 0, false
	case neg && n <= 1<<63:
		p.i = next
		return -int64(n), true
	case !neg && n <= math.MaxInt64:
		p.i = next
		return int64(n), true
	}
	return 0, false
}

// uintAt reads the JSON number at d[i:] when it is a non-negative integer below 2^64, and
// returns it with the position after it.
func uintAt(d []byte, i int) (n uint64, next int, ok bool) {
	start := i
	// Offsets and epoch-millisecond timestamps run to 13 digits and more on every record:
	// take up to eight digits per step (see digits8). Sixteen digits cannot overflow.
	for i+8 <= len(d) && i-start < 16 {
		k, v := digits8(binary.LittleEndian.Uint64(d[i:]))
		n = n*pow10[k] + v
		i += k
		if k < 8 {
			break
		}
	}
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		if n > (math.MaxUint64-9)/10 {
			return 0, 0, false
		}
		n = n*10 + uint64(d[i]-'0')
		i++
	}
	if i == start || i-start > 1 && d[start] == '0' {
		return 0, 0, false
	}
	if i < len(d) && (d[i] == '.' || d[i] == 'e' || d[i] == 'E') {
		return 0, 0, false
	}
	return n, i, true
}

var pow10 = [9]uint64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000}

// digits8 reads the ASCII digits at the start of x, eight bytes loaded little-endian: it
// returns how many there are (0 to 8) and their value. Branch-free: the digits are found with
// byte-wise arithmetic and combined with three multiplications (pairs, then quads, then the
// two quads), as in Lemire's "parse eight digits".
func digits8(x uint64) (int, uint64) {
	const (
		ones   = 0x0101010101010101
		zeros  = 0x30 * ones
		highs  = 0xF0 * ones
		lows   = 0x0F * ones
		plus6s = 0x06 * ones
	)
	// A byte is a digit when its high nibble is 3 and its low nibble plus 6 stays below 16.
	notDigit := (x&highs ^ zeros) | ((x&lows + plus6s) & highs)
	k := bits.TrailingZeros64(notDigit) / 8 // 8 when every byte is a digit
	if k == 0 {
		return 0, 0
	}
	// Shift the k digits to the top, so that the bytes below are zeros: leading zero digits.
	v := (x - zeros) << (64 - 8*uint(k))
	v = v*10 + v>>8
	v = ((v&0x000000FF000000FF)*(100+1000000<<32) + (v>>16&0x000000FF000000FF)*(1+10000<<32)) >> 32
	return k, v
}

// checkValue validates the JSON value at off without consuming it, so that a type error on a
// value that is not even JSON is reported as the syntax error it is.
func (p *parser) checkValue(off int) error {
	save := p.i
	p.i = off
	err := p.skipValue(0)
	p.i = save
	return err
}

// skipValue consumes one JSON value, validating it.
func (p *parser) skipValue(depth int) error {
	if depth > maxDepth {
		return p.errAt(p.i, "exceeded max depth %d", maxDepth)
	}
	p.skipWS()
	if p.i >= len(p.data) {
		return p.syntaxErr("looking for beginning of value")
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object(func([]byte) error { return p.skipValue(depth + 1) })
	case c == '[':
		p.i++
		p.skipWS()
		if p.i < len(p.data) && p.data[p.i] == ']' {
			p.i++
			return nil
		}
		for {
			if err := p.skipValue(depth + 1); err != nil {
				return err
			}
			p.skipWS()
			if p.i >= len(p.data) {
				return p.syntaxErr("after array element")
			}
			switch p.data[p.i] {
			case ',':
				p.i++
			case ']':
				p.i++
				return nil
			default:
				return p.syntaxErr("after array element")
			}
		}
	case c == '"':
		_, _, err := p.rawString()
		return err
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		return p.syntaxErr("looking for beginning of value")
	}
}

func (p *parser) literal(lit string) error {
	for k := 0; k < len(lit); k++ {
		if p.i >= len(p.data) || p.data[p.i] != lit[k] {
			return p.syntaxErr("in literal " + lit)
		}
		p.i++
	}
	return nil
}

// number consumes a JSON number per RFC 8259.
func (p *parser) number() error {
	d := p.data
	if p.i < len(d) && d[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		s := p.i
		for p.i < len(d) && d[p.i] >= '0' && d[p.i] <= '9' {
			p.i++
		}
		return p.i - s
	}
	if p.i < len(d) && d[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return p.syntaxErr("in numeric literal")
	}
	if p.i < len(d) && d[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return p.syntaxErr("after decimal point in numeric literal")
		}
	}
	if p.i < len(d) && (d[p.i] == 'e' || d[p.i] == 'E') {
		p.i++
		if p.i < len(d) && (d[p.i] == '+' || d[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return p.syntaxErr("in exponent of numeric literal")
		}
	}
	return nil
}

// UnmarshalJSON implements json.Unmarshaler with Parse, so that an Event can be a handler's
// input type: lambda.Start(func(ctx context.Context, ev *kafkaevent.Event) error {...}).
// encoding/json checks the whole payload before it calls UnmarshalJSON, which costs more than
// Parse itself on a large batch; a lambda.Handler whose Invoke passes the payload bytes to Parse
// avoids that.
func (e *Event) UnmarshalJSON(data []byte) error {
	ev, err := Parse(data)
	if err != nil {
		return err
	}
	*e = *ev
	return nil
}
