package codec

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/google/uuid"
)

// ErrInflatedTooLarge is wrapped by the [*WireError] of a Glue-framed payload whose zlib stream
// inflates to more than the cap given to [SplitGlue]. The inflation stops at the cap: a zlib
// bomb costs at most the cap in memory and the time to inflate that much.
var ErrInflatedTooLarge = errors.New("codec: inflated payload over the cap")

// WireError is a key or value whose framing is wrong: an unknown magic byte, header version
// or compression byte, a truncated header, a bad message-index list, a corrupt zlib stream or
// one that inflates past the cap. Offset is the position in the bytes given to the Split
// function of the byte at fault (for a truncation, where the missing bytes would start).
type WireError struct {
	Wire   Wire   // WireConfluent or WireGlue
	Offset int    // byte offset of the fault in the framed bytes
	Reason string // what is wrong, in words
	Err    error  // the underlying error (ErrInflatedTooLarge, a zlib error), or nil
}

// Error returns "codec: <wire> framing: offset N: reason[: err]".
func (e *WireError) Error() string {
	s := fmt.Sprintf("codec: %s framing: offset %d: %s", wireName(e.Wire), e.Offset, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error, if any.
func (e *WireError) Unwrap() error { return e.Err }

func wireName(w Wire) string {
	switch w {
	case WireNone:
		return "no"
	case WireConfluent:
		return "Confluent"
	case WireGlue:
		return "Glue"
	}
	return fmt.Sprintf("Wire(%d)", int(w))
}

// Confluent framing.
const (
	confluentMagic     = 0x00
	confluentHeaderLen = 5 // magic + 4-byte schema ID
	maxVarint32Len     = 5 // a 32-bit varint takes at most 5 bytes
)

// SplitConfluent splits a Confluent-framed key or value: the magic byte 0x00, the schema ID
// (4 bytes, big-endian) and, when protobuf is true, the message-index list (see
// [SplitMessageIndexes]); payload is the rest, a sub-slice of data (not a copy). indexes is
// nil when protobuf is false. Whether a value is Protobuf is the caller's knowledge (the codec
// or the registry's schema), never guessed from the bytes. Bad framing is a *[WireError].
func SplitConfluent(data []byte, protobuf bool) (id uint32, indexes []int, payload []byte, err error) {
	id, indexes, payload, err = splitConfluent(data, protobuf)
	if err == nil && protobuf && indexes == nil {
		indexes = []int{0}
	}
	return id, indexes, payload, err
}

// splitConfluent is SplitConfluent without the allocation of the commonest list: for the
// single byte 0 (the first message, as Confluent's serializers write [0]) indexes is nil.
// A Deserializer calls it for every record.
func splitConfluent(data []byte, protobuf bool) (id uint32, indexes []int, payload []byte, err error) {
	if len(data) == 0 {
		return 0, nil, nil, &WireError{Wire: WireConfluent, Offset: 0, Reason: "empty: no magic byte"}
	}
	if data[0] != confluentMagic {
		return 0, nil, nil, &WireError{Wire: WireConfluent, Offset: 0,
			Reason: fmt.Sprintf("unknown magic byte 0x%02x (Confluent framing starts with 0x00)", data[0])}
	}
	if len(data) < confluentHeaderLen {
		return 0, nil, nil, &WireError{Wire: WireConfluent, Offset: len(data),
			Reason: fmt.Sprintf("truncated header: the schema ID needs 4 bytes, %d left", len(data)-1)}
	}
	id = binary.BigEndian.Uint32(data[1:confluentHeaderLen])
	if !protobuf {
		return id, nil, data[confluentHeaderLen:], nil
	}
	indexes, payload, err = splitMessageIndexes(data[confluentHeaderLen:], confluentHeaderLen)
	if err != nil {
		return 0, nil, nil, err
	}
	return id, indexes, payload, nil
}

// AppendConfluent appends to dst the Confluent framing of payload: the magic byte 0x00, id
// (big-endian) and, when indexes is not nil (a Protobuf value), the message-index list
// ([AppendMessageIndexes]; [0] is written as the single byte 0), then payload. It returns an
// error, and dst unchanged, when indexes is an empty non-nil list or holds an index that is
// negative or over math.MaxInt32.
func AppendConfluent(dst []byte, id uint32, indexes []int, payload []byte) ([]byte, error) {
	out := append(dst, confluentMagic)
	out = binary.BigEndian.AppendUint32(out, id)
	if indexes != nil {
		var err error
		if out, err = AppendMessageIndexes(out, indexes); err != nil {
			return dst, err
		}
	}
	return append(out, payload...), nil
}

// SplitMessageIndexes splits a Confluent Protobuf message-index list off the front of data:
// a zig-zag varint count, then that many zig-zag varints, each the index of a message in the
// .proto file (the first is a top-level message, the next ones nested messages); a count of 0
// (the single byte 0) means [0], the first message. payload is the rest of data, a sub-slice.
//
// Use it on a Confluent-framed Protobuf value after its 5-byte header ([SplitConfluent] does),
// and on the value of a record that the event source mapping delivered in SOURCE mode with
// dataFormat PROTOBUF and a Confluent schema ID: the mapping removes the magic byte and the
// schema ID but leaves the message indexes. A Glue schema registry writes a different prefix:
// see [SplitGlueMessageIndex]. Which one applies is decided by the schema ID, never guessed
// from the bytes. A negative count or index, a count larger than the bytes left, or a varint
// longer than 5 bytes or over 32 bits is a *[WireError].
func SplitMessageIndexes(data []byte) (indexes []int, payload []byte, err error) {
	indexes, payload, err = splitMessageIndexes(data, 0)
	if err == nil && indexes == nil {
		indexes = []int{0}
	}
	return indexes, payload, err
}

// splitMessageIndexes is SplitMessageIndexes with offsets in errors counted from base, and
// nil indexes, not a new [0], for a count of 0 (the single byte 0): the list of nearly
// every value, which a Deserializer reads for every record.
func splitMessageIndexes(data []byte, base int) ([]int, []byte, error) {
	count, n, err := zigzagVarint32(data, base, "message-index count")
	if err != nil {
		return nil, nil, err
	}
	off := n
	switch {
	case count == 0:
		return nil, data[off:], nil
	case count < 0:
		return nil, nil, &WireError{Wire: WireConfluent, Offset: base,
			Reason: fmt.Sprintf("negative message-index count %d", count)}
	case int(count) > len(data)-off:
		// Each index takes at least one byte: refuse before allocating.
		return nil, nil, &WireError{Wire: WireConfluent, Offset: base,
			Reason: fmt.Sprintf("message-index count %d is more than the %d bytes left", count, len(data)-off)}
	}
	indexes := make([]int, count)
	for i := range indexes {
		v, n, err := zigzagVarint32(data[off:], base+off, "message index")
		if err != nil {
			return nil, nil, err
		}
		if v < 0 {
			return nil, nil, &WireError{Wire: WireConfluent, Offset: base + off,
				Reason: fmt.Sprintf("negative message index %d", v)}
		}
		indexes[i] = int(v)
		off += n
	}
	return indexes, data[off:], nil
}

// AppendMessageIndexes appends the Confluent Protobuf message-index list of indexes to dst:
// [0] as the single byte 0 (as Confluent's serializers write it), any other list as a zig-zag
// varint count and zig-zag varints. It returns an error, and dst unchanged, for an empty list
// (the path to a message has at least one index) or an index that is negative or over
// math.MaxInt32.
func AppendMessageIndexes(dst []byte, indexes []int) ([]byte, error) {
	if len(indexes) == 0 {
		return dst, errors.New("codec: empty Protobuf message-index list (the first message is [0])")
	}
	if len(indexes) > math.MaxInt32 {
		return dst, fmt.Errorf("codec: %d Protobuf message indexes is too many", len(indexes))
	}
	for i, x := range indexes {
		if x < 0 || x > math.MaxInt32 {
			return dst, fmt.Errorf("codec: Protobuf message index %d (position %d) is out of range 0..%d", x, i, math.MaxInt32)
		}
	}
	if len(indexes) == 1 && indexes[0] == 0 {
		return append(dst, 0), nil
	}
	dst = binary.AppendUvarint(dst, zigzag32(int32(len(indexes))))
	for _, x := range indexes {
		dst = binary.AppendUvarint(dst, zigzag32(int32(x)))
	}
	return dst, nil
}

func zigzag32(v int32) uint64 { return uint64(uint32(v<<1) ^ uint32(v>>31)) }

// zigzagVarint32 reads a zig-zag encoded 32-bit varint from the front of data.
func zigzagVarint32(data []byte, base int, what string) (int32, int, error) {
	u, n, err := uvarint32(data, base, WireConfluent, what)
	if err != nil {
		return 0, 0, err
	}
	return int32(u>>1) ^ -int32(u&1), n, nil
}

// uvarint32 reads an unsigned varint of at most 32 bits (5 bytes) from the front of data.
func uvarint32(data []byte, base int, w Wire, what string) (uint32, int, error) {
	var v uint32
	for i := 0; i < maxVarint32Len; i++ {
		if i == len(data) {
			return 0, 0, &WireError{Wire: w, Offset: base + i, Reason: "truncated varint (" + what + ")"}
		}
		b := data[i]
		if i == maxVarint32Len-1 && b > 0x0f {
			return 0, 0, &WireError{Wire: w, Offset: base + i, Reason: "varint over 32 bits (" + what + ")"}
		}
		v |= uint32(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, i + 1, nil
		}
	}
	// Not reached: the 5th byte either ends the varint or is rejected above.
	return 0, 0, &WireError{Wire: w, Offset: base, Reason: "varint over 32 bits (" + what + ")"}
}

// Glue framing.
const (
	glueHeaderVersion   = 0x03
	glueCompressionNone = 0x00
	glueCompressionZlib = 0x05
	glueHeaderLen       = 18 // version + compression + 16-byte UUID
)

// SplitGlue splits an AWS Glue Schema Registry-framed key or value: the header version byte
// 0x03, the compression byte (0x00 none, 0x05 zlib), the 16-byte schema version UUID, then the
// payload. id is the UUID in its canonical form (36 characters, lower-case hex). An
// uncompressed payload is a sub-slice of data; a zlib payload is inflated into a new slice of
// at most maxInflated bytes: a stream that would inflate to more is stopped there with a
// *[WireError] wrapping [ErrInflatedTooLarge], so memory stays bounded whatever the input (a
// negative maxInflated counts as 0). Any other version or compression byte, a truncated header,
// a corrupt zlib stream or bytes after its end are a *[WireError] too.
//
// A Protobuf payload starts with the Glue serializer's message index: see
// [SplitGlueMessageIndex].
func SplitGlue(data []byte, maxInflated int) (id string, payload []byte, err error) {
	u, payload, err := splitGlue(data, maxInflated)
	if err != nil {
		return "", nil, err
	}
	return uuid.UUID(u).String(), payload, nil
}

// splitGlue is SplitGlue with the schema version UUID as its 16 bytes, not yet a string: a
// Deserializer compares them with the last record's, for every record.
func splitGlue(data []byte, maxInflated int) (id uuid.UUID, payload []byte, err error) {
	switch {
	case len(data) == 0:
		return id, nil, &WireError{Wire: WireGlue, Offset: 0, Reason: "empty: no header version byte"}
	case data[0] != glueHeaderVersion:
		return id, nil, &WireError{Wire: WireGlue, Offset: 0,
			Reason: fmt.Sprintf("unknown header version byte 0x%02x (Glue framing starts with 0x03)", data[0])}
	case len(data) < 2:
		return id, nil, &WireError{Wire: WireGlue, Offset: 1, Reason: "truncated header: no compression byte"}
	case data[1] != glueCompressionNone && data[1] != glueCompressionZlib:
		return id, nil, &WireError{Wire: WireGlue, Offset: 1,
			Reason: fmt.Sprintf("unknown compression byte 0x%02x (0x00 none, 0x05 zlib)", data[1])}
	case len(data) < glueHeaderLen:
		return id, nil, &WireError{Wire: WireGlue, Offset: len(data),
			Reason: fmt.Sprintf("truncated header: the schema version UUID needs 16 bytes, %d left", len(data)-2)}
	}
	id = uuid.UUID(data[2:glueHeaderLen])
	if data[1] == glueCompressionNone {
		return id, data[glueHeaderLen:], nil
	}
	payload, err = inflate(data[glueHeaderLen:], glueHeaderLen, maxInflated)
	if err != nil {
		return uuid.UUID{}, nil, err
	}
	return id, payload, nil
}

// inflate inflates the zlib stream src (found at offset base) into at most limit bytes,
// allocating no more than limit+1 bytes for the result.
func inflate(src []byte, base, limit int) ([]byte, error) {
	br := bytes.NewReader(src)
	zr, err := zlib.NewReader(br)
	if err != nil {
		return nil, &WireError{Wire: WireGlue, Offset: base, Reason: "bad zlib stream", Err: err}
	}
	limit = max(limit, 0)
	limit = min(limit, math.MaxInt-1)
	// A first guess at the size; it grows by doubling, never past limit+1 (one byte over the cap
	// is how a stream that is too large is told from one exactly at the cap).
	buf := make([]byte, 0, min(limit+1, max(512, 4*len(src))))
	for {
		if len(buf) == cap(buf) {
			next := make([]byte, len(buf), min(limit+1, 2*cap(buf)))
			copy(next, buf)
			buf = next
		}
		n, err := zr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, &WireError{Wire: WireGlue, Offset: base,
				Reason: fmt.Sprintf("zlib stream inflates to more than %d bytes", limit), Err: ErrInflatedTooLarge}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &WireError{Wire: WireGlue, Offset: base, Reason: "corrupt zlib stream", Err: err}
		}
	}
	if left := br.Len(); left > 0 {
		return nil, &WireError{Wire: WireGlue, Offset: len(src) - left + base,
			Reason: fmt.Sprintf("%d bytes after the end of the zlib stream", left)}
	}
	return buf, nil
}

// AppendGlue appends to dst the Glue framing of payload: the header version 0x03, the
// compression byte (0x05 and the payload zlib-deflated when compress is true, as the Glue
// serializers' ZLIB compression writes it; 0x00 and the payload as is otherwise), then the
// schema version UUID id (canonical 36-character form, either case). It returns an error, and
// dst unchanged, when id is not a UUID.
func AppendGlue(dst []byte, id string, compress bool, payload []byte) ([]byte, error) {
	u, err := parseUUID(id)
	if err != nil {
		return dst, err
	}
	out := append(dst, glueHeaderVersion, glueCompressionNone)
	out = append(out, u[:]...)
	if !compress {
		return append(out, payload...), nil
	}
	out[len(dst)+1] = glueCompressionZlib
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	if _, err := zw.Write(payload); err != nil {
		return dst, fmt.Errorf("codec: deflating a Glue payload: %w", err)
	}
	if err := zw.Close(); err != nil {
		return dst, fmt.Errorf("codec: deflating a Glue payload: %w", err)
	}
	return append(out, b.Bytes()...), nil
}

// SplitGlueMessageIndex splits the message index off the front of a Protobuf payload written
// by a Glue Schema Registry serializer: a single unsigned varint (the index of the message
// type among those of the schema), then the message. payload is the rest of data, a
// sub-slice.
//
// Use it on the payload [SplitGlue] returns for a Protobuf schema, and on the value of a
// record that the event source mapping delivered in SOURCE mode with dataFormat PROTOBUF and
// a Glue schema version ID (a UUID): the mapping removes the 18-byte header but leaves this
// varint. A Confluent schema writes a list instead: see [SplitMessageIndexes]. A truncated
// varint, or one longer than 5 bytes or over math.MaxInt32, is a *[WireError].
func SplitGlueMessageIndex(data []byte) (index int, payload []byte, err error) {
	v, n, err := uvarint32(data, 0, WireGlue, "Protobuf message index")
	if err != nil {
		return 0, nil, err
	}
	if v > math.MaxInt32 {
		return 0, nil, &WireError{Wire: WireGlue, Offset: 0,
			Reason: fmt.Sprintf("Protobuf message index %d is over %d", v, math.MaxInt32)}
	}
	return int(v), data[n:], nil
}

// AppendGlueMessageIndex appends the Glue serializer's Protobuf message index (an unsigned
// varint) to dst. It returns an error, and dst unchanged, when index is negative or over
// math.MaxInt32.
func AppendGlueMessageIndex(dst []byte, index int) ([]byte, error) {
	if index < 0 || index > math.MaxInt32 {
		return dst, fmt.Errorf("codec: Protobuf message index %d is out of range 0..%d", index, math.MaxInt32)
	}
	return binary.AppendUvarint(dst, uint64(index)), nil
}

// parseUUID parses a UUID in its canonical 8-4-4-4-12 hex form, either case; uuid.Parse alone
// would also take the braced, URN and 32-digit forms, which no registry writes.
func parseUUID(s string) (uuid.UUID, error) {
	u, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return u, fmt.Errorf("codec: %q is not a UUID (8-4-4-4-12 hex digits)", s)
	}
	return u, nil
}
