package kafkaevent

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"testing"
)

// base64Impl is one way decodeBase64Run can run on this machine.
type base64Impl struct {
	name string
	simd bool
}

// base64Impls lists the implementations this build and machine have: the plain Go one always,
// the vector one (AVX2 on amd64, NEON on arm64) where it runs. Every base64 test runs on each.
func base64Impls(t testing.TB) []base64Impl {
	impls := []base64Impl{{"generic", false}}
	if haveSIMD {
		impls = append(impls, base64Impl{"simd", true})
	} else {
		t.Logf("no vector base64 in this build or on this machine: the plain Go one alone is tested")
	}
	return impls
}

// decodeFast decodes a whole padded base64 string the way parseBase64 does, for tests.
func decodeFast(src []byte, simd bool) ([]byte, bool) {
	dst := make([]byte, len(src)/4*3+3)
	ns, nd := decodeBase64Run(dst, src, simd)
	if ns == len(src) {
		return dst[:nd], true
	}
	if len(src)-ns != 4 {
		return nil, false
	}
	n, ok := decodeBase64Tail(dst[nd:], src[ns:])
	return dst[:nd+n], ok
}

func TestBase64MatchesStd(t *testing.T) {
	for _, impl := range base64Impls(t) {
		r := rand.New(rand.NewPCG(1, 2))
		for n := 0; n < 300; n++ {
			raw := make([]byte, n)
			for i := range raw {
				raw[i] = byte(r.UintN(256))
			}
			enc := []byte(base64.StdEncoding.EncodeToString(raw))
			got, ok := decodeFast(enc, impl.simd)
			if !ok || !bytes.Equal(got, raw) {
				t.Fatalf("%s: len %d: decode(%q) = %x, %v; want %x", impl.name, n, enc, got, ok, raw)
			}
		}
	}
}

func TestBase64RejectsWhatStdRejects(t *testing.T) {
	long := "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODkrLw" // 86 characters
	for _, impl := range base64Impls(t) {
		for _, s := range []string{"A", "AB", "ABC", "A===", "AB=C", "ABC*", "AB==AB==", "=AAA", "AAAA=", "AA\nA", "AA A", "AAA-", "AAA_",
			long + "A", long + "==A", long[:64] + "\\u002b" + long[64:], long[:40] + "\\/" + long[40:], long[:33] + " " + long[33:], long[:63] + "\r\n" + long[63:]} {
			if _, ok := decodeFast([]byte(s), impl.simd); ok {
				t.Errorf("%s: decode(%q) accepted", impl.name, s)
			}
		}
	}
}

// base64Alphabet is the standard alphabet, whose characters are the only ones
// decodeBase64Run consumes.
const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// wantRun is what decodeBase64Run must return on src with dst of room bytes, worked out
// without any of its code: the whole groups of four before the first byte outside the
// alphabet, as many as fit in room, decoded by encoding/base64.
func wantRun(t *testing.T, src []byte, room int) (int, []byte) {
	t.Helper()
	n := bytes.IndexFunc(src, func(c rune) bool { return !bytes.ContainsRune([]byte(base64Alphabet), c) })
	if n < 0 {
		n = len(src)
	}
	n = min(n/4, room/3) * 4
	out, err := base64.StdEncoding.DecodeString(string(src[:n]))
	if err != nil {
		t.Fatalf("encoding/base64 on %q: %v", src[:n], err)
	}
	return n, out
}

// checkRun runs decodeBase64Run on src with room bytes of dst and holds it to wantRun. A run
// may stop short of what fits when dst has no slack for its wide stores; it must then have
// left no more than a group's worth of room, or fewer than four characters of src.
func checkRun(t *testing.T, impl base64Impl, src []byte, room int) {
	t.Helper()
	dst := make([]byte, room)
	ns, nd := decodeBase64Run(dst, src, impl.simd)
	wn, wout := wantRun(t, src, room)
	if ns%4 != 0 || nd != ns/4*3 || ns > wn || !bytes.Equal(dst[:nd], wout[:nd]) {
		t.Fatalf("%s: decodeBase64Run(room %d, %q) = %d, %d, %x; want %d, %x", impl.name, room, src, ns, nd, dst[:nd], wn, wout)
	}
	if ns < wn && room-nd >= 16 {
		t.Fatalf("%s: decodeBase64Run(room %d, %q) stopped at %d of %d with %d bytes of room", impl.name, room, src, ns, wn, room-nd)
	}
	if !impl.simd {
		return
	}
	// The vector stage alone: where it says it stopped at a group outside the alphabet, the
	// plain Go stage is not run after it, so it must have stopped exactly there.
	bs, bd, stop := decodeBase64Blocks(make([]byte, room), src)
	if bs%4 != 0 || bd != bs/4*3 || bs > wn || stop && (bs != wn || bs+4 > len(src) || bd+3 > room) {
		t.Fatalf("%s: decodeBase64Blocks(room %d, %q) = %d, %d, %v; want at most %d, and %d when it stops", impl.name, room, src, bs, bd, stop, wn, wn)
	}
}

// TestBase64Implementations holds every implementation to encoding/base64 on the inputs a
// vector decoder gets wrong: any byte that is not in the alphabet (each of the 192, padding,
// quotes, the backslash of an escape such as \u002b or \/, whitespace, bytes of 0x80 and up)
// at every position of the first blocks, and destinations too small by every amount.
func TestBase64Implementations(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	alpha := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = base64Alphabet[r.IntN(64)]
		}
		return b
	}
	var bad []byte
	for c := 0; c < 256; c++ {
		if !bytes.ContainsRune([]byte(base64Alphabet), rune(c)) {
			bad = append(bad, byte(c))
		}
	}
	if haveSIMD {
		// The vector stage runs at all: a valid block of 64 characters is its to decode.
		if ns, nd, _ := decodeBase64Blocks(make([]byte, 80), alpha(64)); ns != 64 || nd != 48 {
			t.Fatalf("decodeBase64Blocks on 64 alphabet characters = %d, %d; want 64, 48", ns, nd)
		}
	}
	for _, impl := range base64Impls(t) {
		t.Run(impl.name, func(t *testing.T) {
			// Each alphabet character at each position: every table entry is used.
			for pos := 0; pos < 64; pos++ {
				for c := 0; c < 64; c++ {
					src := bytes.Repeat([]byte("QUJD"), 40)
					src[pos] = base64Alphabet[c]
					checkRun(t, impl, src, 200)
				}
			}
			// Each byte outside the alphabet at each position of the first 130.
			for pos := 0; pos < 130; pos++ {
				for _, c := range bad {
					src := alpha(160)
					src[pos] = c
					checkRun(t, impl, src, 200)
				}
			}
			// Every length, and every room from none to enough.
			for n := 0; n < 200; n++ {
				src := alpha(n)
				for _, room := range []int{0, 1, 2, 3, n/4*3 - 9, n/4*3 - 3, n/4*3 - 1, n / 4 * 3, n/4*3 + 2, n/4*3 + 8, n + 40} {
					if room >= 0 {
						checkRun(t, impl, src, room)
					}
				}
			}
			// JSON strings as Parse meets them: base64, an escape or the closing quote, more JSON.
			for n := 0; n < 200; n++ {
				enc := base64.StdEncoding.EncodeToString(alpha(n))
				for _, s := range []string{enc + `","headers":[]}`, enc[:len(enc)/2] + `\u002b` + enc[len(enc)/2:] + `"`, enc[:len(enc)/2] + `\/` + enc[len(enc)/2:] + `"`} {
					checkRun(t, impl, []byte(s), len(s))
				}
			}
		})
	}
}

func BenchmarkBase64(b *testing.B) {
	raw := make([]byte, 300)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	enc := []byte(base64.StdEncoding.EncodeToString(raw))
	dst := make([]byte, len(raw)+3)
	for _, impl := range base64Impls(b) {
		name := "toolkit"
		if !impl.simd {
			name = "toolkit-generic"
		}
		b.Run(fmt.Sprintf("impl=%s", name), func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				ns, nd := decodeBase64Run(dst, enc, impl.simd)
				decodeBase64Tail(dst[nd:], enc[ns:])
			}
		})
	}
	b.Run("impl=encoding-base64", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			base64.StdEncoding.Decode(dst, enc)
		}
	})
}
