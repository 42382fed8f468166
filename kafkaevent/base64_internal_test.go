package kafkaevent

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"testing"
)

// decodeFast decodes a whole padded base64 string the way parseBase64 does, for tests.
func decodeFast(src []byte) ([]byte, bool) {
	dst := make([]byte, len(src)/4*3+3)
	ns, nd := decodeBase64Run(dst, src)
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
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 300; n++ {
		raw := make([]byte, n)
		for i := range raw {
			raw[i] = byte(r.UintN(256))
		}
		enc := []byte(base64.StdEncoding.EncodeToString(raw))
		got, ok := decodeFast(enc)
		if !ok || !bytes.Equal(got, raw) {
			t.Fatalf("len %d: decode(%q) = %x, %v; want %x", n, enc, got, ok, raw)
		}
	}
}

func TestBase64RejectsWhatStdRejects(t *testing.T) {
	for _, s := range []string{"A", "AB", "ABC", "A===", "AB=C", "ABC*", "AB==AB==", "=AAA", "AAAA=", "AA\nA", "AA A", "AAA-", "AAA_"} {
		if _, ok := decodeFast([]byte(s)); ok {
			t.Errorf("decode(%q) accepted", s)
		}
	}
}

func BenchmarkBase64(b *testing.B) {
	raw := make([]byte, 300)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	enc := []byte(base64.StdEncoding.EncodeToString(raw))
	dst := make([]byte, len(raw)+3)
	b.Run("impl=toolkit", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			ns, nd := decodeBase64Run(dst, enc)
			decodeBase64Tail(dst[nd:], enc[ns:])
		}
	})
	b.Run("impl=encoding-base64", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			base64.StdEncoding.Decode(dst, enc)
		}
	})
}
