package codec

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testUUID = "12345678-1234-1234-1234-123456789012"

func TestWireConfluentRoundTrip(t *testing.T) {
	payload := []byte("\x0a\x03abc")
	cases := []struct {
		name    string
		indexes []int
		want    []byte // the bytes after the 5-byte header and before the payload
	}{
		{"not protobuf", nil, nil},
		{"first message", []int{0}, []byte{0x00}},
		{"second message", []int{1}, []byte{0x02, 0x02}},
		{"nested", []int{2, 130}, []byte{0x04, 0x04, 0x84, 0x02}},
		{"deep", []int{0, 0, 5}, []byte{0x06, 0x00, 0x00, 0x0a}},
		{"max", []int{math.MaxInt32}, []byte{0x02, 0xfe, 0xff, 0xff, 0xff, 0x0f}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			framed, err := AppendConfluent([]byte("prefix"), 0x01020304, c.indexes, payload)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]byte("prefix\x00\x01\x02\x03\x04"), c.want...)
			want = append(want, payload...)
			if !bytes.Equal(framed, want) {
				t.Fatalf("AppendConfluent = % x, want % x", framed, want)
			}
			id, indexes, got, err := SplitConfluent(framed[len("prefix"):], c.indexes != nil)
			if err != nil {
				t.Fatal(err)
			}
			if id != 0x01020304 || !reflect.DeepEqual(indexes, c.indexes) || !bytes.Equal(got, payload) {
				t.Fatalf("SplitConfluent = %d, %v, %q; want %d, %v, %q", id, indexes, got, 0x01020304, c.indexes, payload)
			}
		})
	}
}

func TestWireMessageIndexes(t *testing.T) {
	cases := []struct {
		name    string
		in      []byte
		indexes []int
		rest    string
	}{
		{"single zero is [0]", []byte{0x00, 'x'}, []int{0}, "x"},
		{"explicit [0]", []byte{0x02, 0x00, 'x'}, []int{0}, "x"},
		// The value of protobuf-complex.confluent.json in Powertools TypeScript's tests starts
		// 02 02 0a: the second message of complex.proto (UserProfile), then field 1.
		{"powertools confluent fixture", []byte{0x02, 0x02, 0x0a, 0x24}, []int{1}, "\x0a\x24"},
		// count 2 (zig-zag 4), 2 (zig-zag 4), 130 (zig-zag 260 = 0x84 0x02)
		{"beyond the first message, past one byte", []byte{0x04, 0x04, 0x84, 0x02}, []int{2, 130}, ""},
		{"overlong varint accepted", []byte{0x82, 0x00, 0x84, 0x80, 0x00}, []int{2}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			indexes, rest, err := SplitMessageIndexes(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(indexes, c.indexes) || string(rest) != c.rest {
				t.Fatalf("SplitMessageIndexes(% x) = %v, %q; want %v, %q", c.in, indexes, rest, c.indexes, c.rest)
			}
		})
	}
}

func TestWireMessageIndexesRejected(t *testing.T) {
	cases := []struct {
		name   string
		in     []byte
		offset int
		reason string
	}{
		{"empty", nil, 0, "truncated varint (message-index count)"},
		{"negative count", []byte{0x01, 0x00}, 0, "negative message-index count -1"},
		{"count beyond the data", []byte{0x0a, 0x00}, 0, "message-index count 5 is more than the 1 bytes left"},
		{"huge count", []byte{0xfe, 0xff, 0xff, 0xff, 0x0f}, 0, "message-index count 2147483647 is more than the 0 bytes left"},
		{"negative index", []byte{0x02, 0x03}, 1, "negative message index -2"},
		{"truncated index", []byte{0x04, 0x02, 0x80}, 3, "truncated varint (message index)"},
		{"varint over 32 bits", []byte{0x02, 0xff, 0xff, 0xff, 0xff, 0x1f}, 5, "varint over 32 bits (message index)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := SplitMessageIndexes(c.in)
			var we *WireError
			if !errors.As(err, &we) {
				t.Fatalf("SplitMessageIndexes(% x) error = %v, want a *WireError", c.in, err)
			}
			if we.Wire != WireConfluent || we.Offset != c.offset || we.Reason != c.reason {
				t.Fatalf("got %+v, want offset %d reason %q", we, c.offset, c.reason)
			}
		})
	}
}

func TestWireConfluentRejected(t *testing.T) {
	cases := []struct {
		name     string
		in       []byte
		protobuf bool
		msg      string
	}{
		{"empty", nil, false, "codec: Confluent framing: offset 0: empty: no magic byte"},
		{"glue bytes", []byte{0x03, 0x00, 1, 2, 3}, false, "codec: Confluent framing: offset 0: unknown magic byte 0x03 (Confluent framing starts with 0x00)"},
		{"magic 1", []byte{0x01, 0, 0, 0, 1}, false, "codec: Confluent framing: offset 0: unknown magic byte 0x01 (Confluent framing starts with 0x00)"},
		{"truncated ID", []byte{0x00, 0, 0}, false, "codec: Confluent framing: offset 3: truncated header: the schema ID needs 4 bytes, 2 left"},
		{"no message indexes", []byte{0x00, 0, 0, 0, 1}, true, "codec: Confluent framing: offset 5: truncated varint (message-index count)"},
		{"bad count", []byte{0x00, 0, 0, 0, 1, 0x01}, true, "codec: Confluent framing: offset 5: negative message-index count -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, _, err := SplitConfluent(c.in, c.protobuf)
			var we *WireError
			if !errors.As(err, &we) || err.Error() != c.msg {
				t.Fatalf("SplitConfluent(% x) error = %v, want %q", c.in, err, c.msg)
			}
		})
	}
}

func TestWireAppendRejected(t *testing.T) {
	for _, indexes := range [][]int{{}, {-1}, {0, math.MaxInt32 + 1}} {
		dst := []byte("keep")
		out, err := AppendConfluent(dst, 1, indexes, []byte("p"))
		if err == nil || string(out) != "keep" {
			t.Errorf("AppendConfluent(%v) = %q, %v; want dst unchanged and an error", indexes, out, err)
		}
	}
	for _, index := range []int{-1, math.MaxInt32 + 1} {
		if _, err := AppendGlueMessageIndex(nil, index); err == nil {
			t.Errorf("AppendGlueMessageIndex(%d) gave no error", index)
		}
	}
	for _, id := range []string{"", "12345678123412341234123456789012", "12345678-1234-1234-1234-12345678901g", "123456781-234-1234-1234-123456789012"} {
		out, err := AppendGlue([]byte("keep"), id, false, nil)
		if err == nil || string(out) != "keep" {
			t.Errorf("AppendGlue(id %q) = %q, %v; want dst unchanged and an error", id, out, err)
		}
	}
}

func TestWireGlueRoundTrip(t *testing.T) {
	payload := bytes.Repeat([]byte("glue payload "), 100)
	for _, compress := range []bool{false, true} {
		framed, err := AppendGlue(nil, strings.ToUpper(testUUID), compress, payload)
		if err != nil {
			t.Fatal(err)
		}
		wantHeader := []byte{0x03, 0x00, 0x12, 0x34, 0x56, 0x78, 0x12, 0x34, 0x12, 0x34, 0x12, 0x34, 0x12, 0x34, 0x56, 0x78, 0x90, 0x12}
		if compress {
			wantHeader[1] = 0x05
		}
		if !bytes.Equal(framed[:18], wantHeader) {
			t.Fatalf("compress=%v: header % x, want % x", compress, framed[:18], wantHeader)
		}
		if compress {
			if len(framed) >= 18+len(payload) {
				t.Fatalf("compressed framing is %d bytes for a %d-byte payload", len(framed), len(payload))
			}
			// The body is a zlib stream any zlib reader inflates (as Glue's Java deserializer does).
			zr, err := zlib.NewReader(bytes.NewReader(framed[18:]))
			if err != nil {
				t.Fatal(err)
			}
			if b, err := io.ReadAll(zr); err != nil || !bytes.Equal(b, payload) {
				t.Fatalf("zlib body: %v", err)
			}
		} else if !bytes.Equal(framed[18:], payload) {
			t.Fatal("uncompressed body differs from the payload")
		}
		id, got, err := SplitGlue(framed, len(payload))
		if err != nil {
			t.Fatal(err)
		}
		if id != testUUID || !bytes.Equal(got, payload) {
			t.Fatalf("compress=%v: SplitGlue = %q, %d bytes; want %q, %d bytes", compress, id, len(got), testUUID, len(payload))
		}
		if compress {
			// One byte under the inflated size is over the cap.
			if _, _, err := SplitGlue(framed, len(payload)-1); !errors.Is(err, ErrInflatedTooLarge) {
				t.Fatalf("cap one byte short: err = %v, want ErrInflatedTooLarge", err)
			}
		}
	}
}

func TestWireGlueMessageIndex(t *testing.T) {
	// The value of protobuf-complex.glue.json in Powertools TypeScript's tests (SOURCE mode,
	// the Glue header removed by the mapping) starts 01 0a 03: message index 1 (UserProfile),
	// then field 1.
	index, rest, err := SplitGlueMessageIndex([]byte{0x01, 0x0a, 0x03})
	if err != nil || index != 1 || !bytes.Equal(rest, []byte{0x0a, 0x03}) {
		t.Fatalf("SplitGlueMessageIndex = %d, % x, %v", index, rest, err)
	}
	b, err := AppendGlueMessageIndex(nil, 300)
	if err != nil {
		t.Fatal(err)
	}
	if index, rest, err := SplitGlueMessageIndex(append(b, 'm')); err != nil || index != 300 || string(rest) != "m" {
		t.Fatalf("round trip of 300: %d, %q, %v", index, rest, err)
	}
	for _, bad := range [][]byte{nil, {0x80}, {0xff, 0xff, 0xff, 0xff, 0x0f}, {0xff, 0xff, 0xff, 0xff, 0x10}} {
		var we *WireError
		if _, _, err := SplitGlueMessageIndex(bad); !errors.As(err, &we) || we.Wire != WireGlue {
			t.Errorf("SplitGlueMessageIndex(% x) error = %v, want a Glue *WireError", bad, err)
		}
	}
}

func TestWireGlueRejected(t *testing.T) {
	uuid := []byte{0x12, 0x34, 0x56, 0x78, 0x12, 0x34, 0x12, 0x34, 0x12, 0x34, 0x12, 0x34, 0x56, 0x78, 0x90, 0x12}
	header := func(version, compression byte) []byte { return append([]byte{version, compression}, uuid...) }
	cases := []struct {
		name string
		in   []byte
		msg  string
	}{
		{"empty", nil, "codec: Glue framing: offset 0: empty: no header version byte"},
		{"confluent bytes", []byte{0x00, 0, 0, 0, 1, 'x'}, "codec: Glue framing: offset 0: unknown header version byte 0x00 (Glue framing starts with 0x03)"},
		{"version 2", header(0x02, 0), "codec: Glue framing: offset 0: unknown header version byte 0x02 (Glue framing starts with 0x03)"},
		{"no compression byte", []byte{0x03}, "codec: Glue framing: offset 1: truncated header: no compression byte"},
		{"compression 1", header(0x03, 0x01), "codec: Glue framing: offset 1: unknown compression byte 0x01 (0x00 none, 0x05 zlib)"},
		{"truncated UUID", header(0x03, 0)[:10], "codec: Glue framing: offset 10: truncated header: the schema version UUID needs 16 bytes, 8 left"},
		{"zlib header missing", header(0x03, 0x05), "codec: Glue framing: offset 18: bad zlib stream: unexpected EOF"},
		{"not zlib", append(header(0x03, 0x05), "plain text"...), "codec: Glue framing: offset 18: bad zlib stream: zlib: invalid header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := SplitGlue(c.in, 1<<20)
			var we *WireError
			if !errors.As(err, &we) || err.Error() != c.msg {
				t.Fatalf("SplitGlue(% x) error = %v, want %q", c.in, err, c.msg)
			}
		})
	}

	framed, err := AppendGlue(nil, testUUID, true, []byte("some payload"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("truncated zlib stream", func(t *testing.T) {
		_, _, err := SplitGlue(framed[:len(framed)-3], 1<<20)
		var we *WireError
		if !errors.As(err, &we) || !errors.Is(err, io.ErrUnexpectedEOF) || we.Offset != 18 {
			t.Fatalf("error = %v, want a *WireError at offset 18 wrapping io.ErrUnexpectedEOF", err)
		}
	})
	t.Run("bad checksum", func(t *testing.T) {
		bad := bytes.Clone(framed)
		bad[len(bad)-1] ^= 0xff
		if _, _, err := SplitGlue(bad, 1<<20); !errors.Is(err, zlib.ErrChecksum) {
			t.Fatalf("error = %v, want zlib.ErrChecksum", err)
		}
	})
	t.Run("trailing bytes", func(t *testing.T) {
		_, _, err := SplitGlue(append(bytes.Clone(framed), "junk"...), 1<<20)
		want := "codec: Glue framing: offset " + strconv.Itoa(len(framed)) + ": 4 bytes after the end of the zlib stream"
		if err == nil || err.Error() != want {
			t.Fatalf("error = %v, want %q", err, want)
		}
	})
}

// zlibZeros returns a zlib stream of mib MiB of zeros, built in milliseconds: deflate gives
// every MiB of zeros after the first the same bytes (after a sync flush), so the stream is the
// first MiB's bytes, the second's repeated, the final block and the Adler-32 of the zeros
// (a = 1, b = the length mod 65521).
func zlibZeros(t testing.TB, mib int) []byte {
	t.Helper()
	var b bytes.Buffer
	fw, err := flate.NewWriter(&b, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	chunk := func() []byte {
		b.Reset()
		if _, err := fw.Write(zeros); err != nil {
			t.Fatal(err)
		}
		if err := fw.Flush(); err != nil {
			t.Fatal(err)
		}
		return bytes.Clone(b.Bytes())
	}
	first, second, third := chunk(), chunk(), chunk()
	if !bytes.Equal(second, third) {
		t.Fatal("deflate gave two MiBs of zeros different bytes: zlibZeros needs another construction")
	}
	b.Reset()
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	out := []byte{0x78, 0xda} // zlib header: deflate, 32 KiB window, best compression
	out = append(out, first...)
	for range mib - 1 {
		out = append(out, second...)
	}
	out = append(out, b.Bytes()...)
	return binary.BigEndian.AppendUint32(out, uint32((uint64(mib)<<20)%65521)<<16|1)
}

func TestWireGlueZlibZerosIsValid(t *testing.T) {
	// The construction of the bomb below, checked on 5 MiB by a plain zlib reader (which
	// verifies the checksum).
	zr, err := zlib.NewReader(bytes.NewReader(zlibZeros(t, 5)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 5<<20 || bytes.ContainsFunc(b, func(r rune) bool { return r != 0 }) {
		t.Fatalf("inflated %d bytes, want %d zeros", len(b), 5<<20)
	}
	// And at the cap exactly it is accepted.
	framed := append([]byte{0x03, 0x05}, make([]byte, 16)...)
	framed = append(framed, zlibZeros(t, 5)...)
	if _, p, err := SplitGlue(framed, 5<<20); err != nil || len(p) != 5<<20 {
		t.Fatalf("SplitGlue at the cap: %d bytes, %v", len(p), err)
	}
}

func TestWireGlueZlibBomb(t *testing.T) {
	bomb := zlibZeros(t, 1024) // 1 GiB of zeros
	framed := append([]byte{0x03, 0x05}, make([]byte, 16)...)
	framed = append(framed, bomb...)
	t.Logf("1 GiB of zeros deflated to %d bytes", len(bomb))
	const limit = 8 << 20

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, payload, err := SplitGlue(framed, limit)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)

	var we *WireError
	if !errors.Is(err, ErrInflatedTooLarge) || !errors.As(err, &we) || we.Offset != 18 || payload != nil {
		t.Fatalf("SplitGlue(bomb) = %d bytes, %v; want a *WireError at offset 18 wrapping ErrInflatedTooLarge", len(payload), err)
	}
	const want = "codec: Glue framing: offset 18: zlib stream inflates to more than 8388608 bytes: codec: inflated payload over the cap"
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	// The result buffer doubles up to cap+1: all buffers together stay under twice the cap,
	// plus the inflater's own state. Inflating the whole GiB would allocate far more.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2*limit+1<<20 {
		t.Errorf("SplitGlue allocated %d bytes for a cap of %d", alloc, limit)
	}
	// Inflating 8 MiB takes milliseconds; the whole GiB would take seconds.
	if elapsed > time.Second {
		t.Errorf("SplitGlue took %v to stop a bomb at %d bytes", elapsed, limit)
	}
	t.Logf("stopped at the cap in %v", elapsed)
}
