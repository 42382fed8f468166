package kafkaevent

import "encoding/binary"

// Keys and values arrive as standard base64 inside JSON strings, and they are most of the bytes
// of a batch, so decoding them is the hot path of Parse.
//
// decodeBase64Run decodes in two stages. Where the machine has vector instructions, the first
// stage, decodeBase64Blocks, decodes blocks of characters in vector registers: 32 characters
// per step with AVX2 on amd64 (base64_amd64.s), 64 per step with NEON on arm64, which Lambda's
// Graviton functions run (base64_arm64.s). It stops at the first block holding anything but
// alphabet characters (the closing quote, padding, an escape), at the first group of four that
// holds one. Only near the end of src or dst, where a whole block does not fit, does the
// second stage, decodeBase64Generic, go on from there in plain Go, a group of four characters
// at a time, and stop at the first group that is not four alphabet characters. The build tag
// purego, or another architecture, leaves the first stage out.
//
// The generic stage reads four lookup tables that hold each character's six bits already
// shifted into place, so a group of four costs four loads and three ORs. Anything neither stage
// accepts (padding, escapes, bad characters) is left to the caller. Both stages give exactly
// what the other gives on any input (TestBase64Implementations), so which one ran never shows.

// decodeBase64Run decodes whole groups of four alphabet characters from src into dst, stopping
// at the first group that holds anything else (padding, a quote, an escape) or when fewer than
// four bytes are left. It returns the number of source bytes consumed and of bytes written.
// It may write past the bytes it reports, anywhere in dst: the caller keeps nothing there. simd
// false skips the vector stage (tests compare the two).
func decodeBase64Run(dst, src []byte, simd bool) (nsrc, ndst int) {
	if simd && haveSIMD {
		var stop bool
		if nsrc, ndst, stop = decodeBase64Blocks(dst, src); stop {
			return nsrc, ndst
		}
	}
	s, d := decodeBase64Generic(dst[ndst:], src[nsrc:])
	return nsrc + s, ndst + d
}

// b64inv marks a byte that is not in the standard base64 alphabet. Its top byte can never be
// set by a valid group, which holds 24 bits.
const b64inv = 0xFF000000

var b64tab = func() (t [4][256]uint32) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range t {
		for c := range t[i] {
			t[i][c] = b64inv
		}
	}
	for v := 0; v < len(alphabet); v++ {
		c := alphabet[v]
		t[0][c] = uint32(v) << 18
		t[1][c] = uint32(v) << 12
		t[2][c] = uint32(v) << 6
		t[3][c] = uint32(v)
	}
	return t
}()

// decodeBase64Generic is decodeBase64Run in plain Go. It may write up to two bytes past the ones
// it reports, when dst has room for them.
func decodeBase64Generic(dst, src []byte) (nsrc, ndst int) {
	t0, t1, t2, t3 := &b64tab[0], &b64tab[1], &b64tab[2], &b64tab[3]
	// Four groups per step, one test for all four, and two 8-byte stores instead of twelve
	// 1-byte ones: each store writes two bytes past its six, which the next store (or the next
	// step) overwrites, so the loop keeps two bytes of room at the end of dst.
	for nsrc+16 <= len(src) && ndst+14 <= len(dst) {
		s := src[nsrc : nsrc+16 : nsrc+16]
		a := t0[s[0]] | t1[s[1]] | t2[s[2]] | t3[s[3]]
		b := t0[s[4]] | t1[s[5]] | t2[s[6]] | t3[s[7]]
		c := t0[s[8]] | t1[s[9]] | t2[s[10]] | t3[s[11]]
		e := t0[s[12]] | t1[s[13]] | t2[s[14]] | t3[s[15]]
		if (a|b|c|e)&b64inv != 0 {
			break
		}
		d := dst[ndst : ndst+14 : ndst+14]
		binary.BigEndian.PutUint64(d, uint64(a)<<40|uint64(b)<<16)
		binary.BigEndian.PutUint64(d[6:], uint64(c)<<40|uint64(e)<<16)
		nsrc += 16
		ndst += 12
	}
	for nsrc+8 <= len(src) && ndst+6 <= len(dst) {
		s := src[nsrc : nsrc+8 : nsrc+8]
		a := t0[s[0]] | t1[s[1]] | t2[s[2]] | t3[s[3]]
		b := t0[s[4]] | t1[s[5]] | t2[s[6]] | t3[s[7]]
		if (a|b)&b64inv != 0 {
			break
		}
		d := dst[ndst : ndst+6 : ndst+6]
		d[0], d[1], d[2] = byte(a>>16), byte(a>>8), byte(a)
		d[3], d[4], d[5] = byte(b>>16), byte(b>>8), byte(b)
		nsrc += 8
		ndst += 6
	}
	for nsrc+4 <= len(src) && ndst+3 <= len(dst) {
		s := src[nsrc : nsrc+4 : nsrc+4]
		a := t0[s[0]] | t1[s[1]] | t2[s[2]] | t3[s[3]]
		if a&b64inv != 0 {
			break
		}
		d := dst[ndst : ndst+3 : ndst+3]
		d[0], d[1], d[2] = byte(a>>16), byte(a>>8), byte(a)
		nsrc += 4
		ndst += 3
	}
	return nsrc, ndst
}

// decodeBase64Tail decodes a final padded group, "xx==" or "xxx=", and returns the bytes it
// yields and true, or false when src is not such a group. Like encoding/base64's StdEncoding,
// it ignores the unused low bits of the last character.
func decodeBase64Tail(dst []byte, src []byte) (int, bool) {
	if len(src) != 4 || src[3] != '=' {
		return 0, false
	}
	t := &b64tab
	if src[2] == '=' {
		a := t[0][src[0]] | t[1][src[1]]
		if a&b64inv != 0 || len(dst) < 1 {
			return 0, false
		}
		dst[0] = byte(a >> 16)
		return 1, true
	}
	a := t[0][src[0]] | t[1][src[1]] | t[2][src[2]]
	if a&b64inv != 0 || len(dst) < 2 {
		return 0, false
	}
	dst[0], dst[1] = byte(a>>16), byte(a>>8)
	return 2, true
}
