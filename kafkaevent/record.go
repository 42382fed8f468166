package kafkaevent

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

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
	recStart := p.Pos
	if p.Pos >= len(p.Data) || p.Data[p.Pos] != '{' {
		return p.errAt(p.Pos, "want record object, got %s", p.Got(p.Pos))
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
	if !p.noFast && p.keyOK && p.recordFast(r, part) {
		return nil
	}
	p.seen, p.topicSeen = 0, false
	err := p.Object(4, func(n jsonscan.Name) error {
		name := p.NameBytes(n)
		return p.recordField(r, part, fieldKindOf(name), name)
	})
	if err != nil {
		return err
	}
	if p.seen&(1<<fOffset) == 0 {
		p.field = nameOffset
		return p.errAt(recStart, "missing")
	}
	if !p.keyOK {
		// Without a "topic-N" key, the record must say where it comes from.
		if !p.topicSeen {
			p.field = nameTopic
			return p.errAt(recStart, `missing, and the records key is not "topic-N"`)
		}
		if p.seen&(1<<fPartition) == 0 {
			p.field = namePartition
			return p.errAt(recStart, `missing, and the records key is not "topic-N"`)
		}
	}
	if p.recErr != nil {
		r.Err = p.recErr
		r.raw = p.copyBytes(p.Data[recStart:p.Pos])
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
	d := p.Data
	start := p.Pos
	i := start + 1 // past '{'
	headers := len(p.headers)
	var seen uint16 // the members read, one bit per fieldKind, as on the general path
	fail := func() bool {
		*r = Record{Topic: part.Topic, Partition: part.Number}
		p.Pos, p.headers, p.recErr, p.field, p.sub = start, p.headers[:headers], nil, "", ""
		return false
	}
	for {
		if i+16 > len(d) {
			return fail()
		}
		w := binary.LittleEndian.Uint64(d[i:])
		var bit uint16
		// Constant cases: the compiler compares w by binary search, not case by case.
		switch w {
		case wTopic:
			bit = 1 << fTopic
			next, ok := jsonscan.QuotedAt(d, i+8, part.Topic)
			if !ok || !p.topicPlain {
				return fail()
			}
			i = next
		case wPartiti:
			bit = 1 << fPartition
			n, next, ok := jsonscan.UintAt(d, i+12)
			if binary.LittleEndian.Uint32(d[i+8:]) != wOnColon || !ok || n != uint64(part.Number) {
				return fail()
			}
			i = next
		case wOffset:
			bit = 1 << fOffset
			n, next, ok := jsonscan.UintAt(d, i+9)
			if d[i+8] != ':' || !ok || n > math.MaxInt64 {
				return fail()
			}
			r.Offset, i = int64(n), next
		case wTimesta:
			if binary.LittleEndian.Uint32(d[i+8:]) == wMpColon {
				bit = 1 << fTimestamp
				n, next, ok := jsonscan.UintAt(d, i+12) // -1 and other negatives take the general path
				if !ok || n > math.MaxInt64 {
					return fail()
				}
				r.Timestamp, i = time.UnixMilli(int64(n)).UTC(), next
				break
			}
			bit = 1 << fTimestampType
			if binary.LittleEndian.Uint64(d[i+8:]) != wMpType {
				return fail()
			}
			if next, ok := jsonscan.QuotedAt(d, i+16, CreateTime); ok {
				r.TimestampType, i = CreateTime, next
			} else if next, ok := jsonscan.QuotedAt(d, i+16, LogAppendTime); ok {
				r.TimestampType, i = LogAppendTime, next
			} else {
				return fail()
			}
		case wValue:
			bit = 1 << fValue
			v, next, ok := p.base64At(i + 8)
			if !ok {
				return fail()
			}
			r.Value, i = v, next
		case wHeaders:
			bit = 1 << fHeaders
			if binary.LittleEndian.Uint16(d[i+8:]) != wQuoteColon || d[i+10] != '[' {
				return fail()
			}
			p.Pos, p.field = i+10, nameHeaders
			hs, err := p.headerList(i + 10)
			p.field = ""
			if err != nil || p.recErr != nil {
				return fail()
			}
			r.Headers, i = hs, p.Pos
		case wValueSc, wKeySche:
			var ok bool
			if bit, i, ok = p.schemaMember(r, w == wKeySche, i); !ok {
				return fail()
			}
		default:
			if w&0xFFFFFFFFFFFF != wKey { // "key": and two bytes of its value
				return fail()
			}
			bit = 1 << fKey
			v, next, ok := p.base64At(i + 6)
			if !ok {
				return fail()
			}
			r.Key, i = v, next
		}
		if seen&bit != 0 {
			return fail() // a member given twice: the general path reports it
		}
		seen |= bit
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
	if seen&(1<<fOffset) == 0 {
		return fail()
	}
	p.Pos = i
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
	n := (len(p.Data)-p.firstRec)/size + 16
	// Decoded bytes in proportion to the first record's, with a margin; the arena is zeroed
	// on allocation, so sizing it for what the batch needs rather than for the worst case
	// (arenaBound) saves a pass over a quarter of the payload's size. If the guess falls
	// short, reserve falls back to the bound for the rest.
	est := len(p.arena)*(len(p.Data)-recStart)/size*11/10 + 4096
	if rest := arenaBound(len(p.Data) - recStart); est > rest {
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
	off := p.Pos
	if kind != fUnknown {
		bit := uint16(1) << kind
		if p.seen&bit != 0 {
			return p.duplicate(r, kind, off)
		}
		p.seen |= bit
	}
	switch kind {
	case fTopic:
		p.field = nameTopic
		if err := p.topicField(r, part, off); err != nil {
			return err
		}
	case fPartition:
		p.field = namePartition
		n, err := p.partitionNumber()
		if err != nil {
			return err
		}
		r.Partition = n
	case fOffset:
		p.field = nameOffset
		n, ok := p.Integer()
		if !ok {
			if err := p.checkValue(off, 4); err != nil {
				return err
			}
			return p.errAt(off, "want integer, got %s", p.Got(off))
		}
		if n < 0 {
			return p.errAt(off, "want non-negative integer, got %d", n)
		}
		r.Offset = n
	case fTimestamp:
		p.field = nameTimestamp
		if err := p.timestampField(r, off); err != nil {
			return err
		}
	case fTimestampType:
		p.field = nameTimestampType
		if err := p.timestampTypeField(r, off); err != nil {
			return err
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
		if err := p.SkipValue(4); err != nil {
			return err
		}
		p.unknown = nil
	}
	p.field = ""
	return nil
}

// duplicate handles a member of a record given a second time, whose value is at off. Where
// encoding/json would keep the last value, Parse keeps neither. A second topic, partition or
// offset leaves no record that a batch item failure could name, so it fails the event, as a
// missing offset does; any other member makes it a record error, and the field is left zero.
func (p *parser) duplicate(r *Record, kind fieldKind, off int) error {
	p.field = fieldNames[kind]
	const msg = "member appears twice in the record"
	switch kind {
	case fTopic, fPartition, fOffset:
		return p.errAt(off, msg)
	case fTimestamp:
		r.Timestamp = time.Time{}
	case fTimestampType:
		r.TimestampType = ""
	case fKey:
		r.Key = nil
	case fValue:
		r.Value = nil
	case fHeaders:
		r.Headers = nil
	case fKeySchema:
		r.KeySchema = nil
	case fValueSchema:
		r.ValueSchema = nil
	}
	err := p.fieldErr(off, 4, nil, msg)
	p.field = ""
	return err
}

// fieldKind names the members of a record that Parse reads. Each has a bit in parser.seen, so
// it must stay below 16.
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

// fieldNames are the member names of the fieldKinds, for error paths.
var fieldNames = [...]string{
	fTopic:         nameTopic,
	fPartition:     namePartition,
	fOffset:        nameOffset,
	fTimestamp:     nameTimestamp,
	fTimestampType: nameTimestampType,
	fKey:           nameKey,
	fValue:         nameValue,
	fHeaders:       nameHeaders,
	fKeySchema:     nameKeySchema,
	fValueSchema:   nameValueSchema,
}

// fieldKindOf says which field of a record a member name stands for. It is the general path:
// recordFast reads the names Lambda writes without it.
func fieldKindOf(name []byte) fieldKind {
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
	return kind
}

// The schema metadata members with their quotes and colon, as recordFast compares them.
var (
	memberValueSchema = []byte(`"` + nameValueSchema + `":`)
	memberKeySchema   = []byte(`"` + nameKeySchema + `":`)
)

// Record member names with their quotes and colon, as little-endian words for recordFast:
// constants, so that its switch compares with immediates (TestRecordWords checks each against
// its text).
const (
	wTopic             = 0x3A226369706F7422 // "topic":
	wPartiti           = 0x6974697472617022 // "partiti
	wOnColon    uint32 = 0x3A226E6F         // on":
	wOffset            = 0x2274657366666F22 // "offset"
	wTimesta           = 0x617473656D697422 // "timesta
	wMpColon    uint32 = 0x3A22706D         // mp":
	wMpType            = 0x3A2265707954706D // mpType":
	wKey               = 0x00003A2279656B22 // "key":
	wValue             = 0x3A2265756C617622 // "value":
	wHeaders           = 0x7372656461656822 // "headers
	wValueSc           = 0x635365756C617622 // "valueSc
	wKeySche           = 0x6568635379656B22 // "keySche
	wQuoteColon uint16 = 0x3A22             // ":
)

// partitionNumber reads a partition as a JSON number or, as hand-written fixtures do, a
// numeric string.
func (p *parser) partitionNumber() (int32, error) {
	off := p.Pos
	if p.Pos < len(p.Data) && p.Data[p.Pos] == '"' {
		raw, flags, err := p.RawString()
		if err != nil {
			return 0, err
		}
		s := p.Text(raw, flags)
		n, ok := parseUint(s, math.MaxInt32)
		if !ok {
			return 0, p.errAt(off, "want partition number 0..%d, got %s", math.MaxInt32, p.Got(off))
		}
		return int32(n), nil
	}
	n, ok := p.Integer()
	if !ok {
		if err := p.checkValue(off, 4); err != nil {
			return 0, err
		}
		return 0, p.errAt(off, "want partition number 0..%d, got %s", math.MaxInt32, p.Got(off))
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, p.errAt(off, "want partition number 0..%d, got %d", math.MaxInt32, n)
	}
	return int32(n), nil
}

// base64Field reads a key or value: null gives nil, a string its decoded bytes (empty but not
// nil for ""). A string that is not valid base64 sets the record's error.
func (p *parser) base64Field(off int) ([]byte, error) {
	if p.Null() {
		return nil, nil
	}
	if p.Pos >= len(p.Data) || p.Data[p.Pos] != '"' {
		if err := p.checkValue(off, 4); err != nil {
			return nil, err
		}
		return nil, p.fieldErr(off, 4, nil, "want base64 string or null, got %s", p.Got(off))
	}
	if v, next, ok := p.base64At(p.Pos); ok {
		p.Pos = next
		return v, nil
	}
	// Slow path: escapes, or not base64 at all.
	raw, flags, err := p.RawString()
	if err != nil {
		return nil, err
	}
	text := raw
	if flags.NeedsDecoding() {
		text = p.Unescape(raw, flags)
	}
	for i, c := range text {
		if c == '\r' || c == '\n' {
			return nil, p.fieldErr(off, 4, base64.CorruptInputError(i), "invalid base64: line break at byte %d", i)
		}
	}
	p.reserve(base64.StdEncoding.DecodedLen(len(text)))
	n, derr := base64.StdEncoding.Decode(p.arena[len(p.arena):cap(p.arena)], text)
	if derr != nil {
		return nil, p.fieldErr(off, 4, derr, "invalid base64: %v", derr)
	}
	return p.takeArena(n), nil
}

// base64At decodes the JSON string at d[i] when it is plain base64, which needs no JSON
// unescaping (the fast path), and returns the bytes and the position after the string. It
// returns false for anything else, with nothing consumed.
func (p *parser) base64At(i int) (v []byte, next int, ok bool) {
	d := p.Data
	if i >= len(d) || d[i] != '"' {
		return nil, 0, false
	}
	start := i + 1
	src := d[start:]
	for try := 0; try < 2; try++ {
		dst := p.arena[len(p.arena):cap(p.arena)]
		ns, nd := decodeBase64Run(dst, src, !p.noSIMD)
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
func (p *parser) schema(off int) (*SchemaMetadata, error) {
	if p.Null() {
		return nil, nil
	}
	if p.Pos >= len(p.Data) || p.Data[p.Pos] != '{' {
		if err := p.checkValue(off, 4); err != nil {
			return nil, err
		}
		return nil, p.fieldErr(off, 4, nil, "want schema metadata object, got %s", p.Got(off))
	}
	var s SchemaMetadata
	var seen uint8 // dataFormat and schemaId, as read
	err := p.Object(5, func(n jsonscan.Name) error {
		name := p.NameBytes(n)
		foff := p.Pos
		var dst *string
		var bit uint8
		switch string(name) {
		case "dataFormat":
			dst, p.sub, bit = &s.DataFormat, "dataFormat", 1
		case "schemaId":
			dst, p.sub, bit = &s.SchemaID, "schemaId", 2
		default:
			return p.SkipValue(5)
		}
		if seen&bit != 0 {
			*dst = "" // neither value is kept: the record carries the error
			err := p.fieldErr(foff, 5, nil, "member appears twice in the schema metadata")
			p.sub = ""
			return err
		}
		seen |= bit
		if p.Null() {
			p.sub = ""
			return nil
		}
		if p.Data[foff] == '"' {
			raw, flags, err := p.RawString()
			if err != nil {
				return err
			}
			if flags.NeedsDecoding() {
				*dst = p.intern(p.Unescape(raw, flags))
			} else {
				*dst = p.intern(raw)
			}
			p.sub = ""
			return nil
		}
		if n, ok := p.Integer(); ok && dst == &s.SchemaID {
			*dst = strconv.FormatInt(n, 10) // Confluent ids are numbers; accept one as written
			p.sub = ""
			return nil
		}
		if err := p.checkValue(foff, 5); err != nil {
			return err
		}
		err := p.fieldErr(foff, 5, nil, "want string, got %s", p.Got(foff))
		p.sub = ""
		return err
	})
	if err != nil {
		return nil, err
	}
	return p.addSchema(s), nil
}

// addSchema keeps s in the schema slab and returns where.
func (p *parser) addSchema(s SchemaMetadata) *SchemaMetadata {
	p.schemas = append(p.schemas, s)
	if len(p.schemas) == cap(p.schemas) {
		// Keep returned pointers stable: start a new slab rather than let append move this one.
		p.schemas = make([]SchemaMetadata, 0, max(64, 2*cap(p.schemas)))
		p.schemas = append(p.schemas, s)
		return &p.schemas[0]
	}
	return &p.schemas[len(p.schemas)-1]
}

// schemaMember reads, for recordFast, the member at i that starts as the key's (key) or the
// value's schema metadata does, which a mapping with a schema registry writes on every record:
// it returns the member's bit and the offset after it, or not ok for the general path.
func (p *parser) schemaMember(r *Record, key bool, i int) (bit uint16, next int, ok bool) {
	name, dst := memberValueSchema, &r.ValueSchema
	bit = 1 << fValueSchema
	if key {
		bit, name, dst = 1<<fKeySchema, memberKeySchema, &r.KeySchema
	}
	if !bytes.HasPrefix(p.Data[i:], name) {
		return 0, 0, false
	}
	if s, next, ok := p.schemaFast(i + len(name)); ok {
		*dst = s
		return bit, next, true
	}
	p.Pos = i + len(name)
	s, err := p.schema(p.Pos)
	if err != nil || p.recErr != nil {
		return 0, 0, false
	}
	*dst = s
	return bit, p.Pos, true
}

// schemaFast reads, at i, schema metadata in the form Lambda writes it,
// {"dataFormat":"AVRO","schemaId":"42"} with plain ASCII strings, and returns it and the
// offset after it; anything else is not ok, for schema to read. The strings of the record
// before are reused when they are the same, as they are for most records of a batch.
func (p *parser) schemaFast(i int) (*SchemaMetadata, int, bool) {
	const format, id = `{"dataFormat":"`, `,"schemaId":"`
	d := p.Data
	if !bytes.HasPrefix(d[i:], []byte(format)) {
		return nil, 0, false
	}
	f, i, ok := plainASCII(d, i+len(format))
	if !ok || !bytes.HasPrefix(d[i:], []byte(id)) {
		return nil, 0, false
	}
	sid, i, ok := plainASCII(d, i+len(id))
	if !ok || i >= len(d) || d[i] != '}' {
		return nil, 0, false
	}
	last := &p.lastSchema
	if string(f) != last.DataFormat {
		last.DataFormat = p.intern(f)
	}
	if string(sid) != last.SchemaID {
		last.SchemaID = p.intern(sid)
	}
	return p.addSchema(*last), i + 1, true
}

// plainASCII returns the JSON string's text that starts at i, past its opening quote, and the
// offset after its closing quote, if it holds only printable ASCII and no escape.
func plainASCII(d []byte, i int) ([]byte, int, bool) {
	for j := i; j < len(d); j++ {
		switch c := d[j]; {
		case c == '"':
			return d[i:j], j + 1, true
		case c < 0x20 || c >= 0x7F || c == '\\':
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// topicField reads a record's topic at off.
func (p *parser) topicField(r *Record, part *Partition, off int) error {
	if p.topicPlain && p.Quoted(part.Topic) {
		p.topicSeen = true
		return nil // the usual case: the records key's topic, unescaped
	}
	raw, flags, err := p.RawString()
	if err != nil {
		if p.Data[off] != '"' {
			return p.errAt(off, "want string, got %s", p.Got(off))
		}
		return err
	}
	if len(raw) == 0 {
		return nil // "" names no topic: the key's stands, as FromAWS takes it
	}
	p.topicSeen = true
	if flags.NeedsDecoding() {
		r.Topic = p.intern(p.Unescape(raw, flags))
	} else if string(raw) != part.Topic {
		r.Topic = p.intern(raw)
	}
	return nil
}

// timestampField reads a record's timestamp at off: epoch milliseconds, or -1 or null for none.
func (p *parser) timestampField(r *Record, off int) error {
	if p.Null() {
		r.Timestamp = time.Time{}
		return nil
	}
	n, ok := p.Integer()
	if !ok {
		if err := p.checkValue(off, 4); err != nil {
			return err
		}
		return p.fieldErr(off, 4, nil, "want integer epoch milliseconds, got %s", p.Got(off))
	}
	if n == -1 {
		r.Timestamp = time.Time{}
	} else {
		r.Timestamp = time.UnixMilli(n).UTC()
	}
	return nil
}

// timestampTypeField reads a record's timestamp type at off.
func (p *parser) timestampTypeField(r *Record, off int) error {
	if p.Quoted(CreateTime) {
		r.TimestampType = CreateTime
		return nil
	}
	if p.Null() {
		r.TimestampType = ""
		return nil
	}
	if p.Data[off] != '"' {
		return p.fieldErr(off, 4, nil, "want string, got %s", p.Got(off))
	}
	raw, flags, err := p.RawString()
	if err != nil {
		return err
	}
	switch {
	case flags.NeedsDecoding():
		r.TimestampType = p.intern(p.Unescape(raw, flags))
	case string(raw) == CreateTime:
		r.TimestampType = CreateTime
	case string(raw) == LogAppendTime:
		r.TimestampType = LogAppendTime
	default:
		r.TimestampType = p.intern(raw)
	}
	return nil
}
