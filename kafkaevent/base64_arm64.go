//go:build !purego

package kafkaevent

// haveSIMD is true: every arm64 processor has NEON (Advanced SIMD is part of Armv8-A), Lambda's
// Graviton ones included.
const haveSIMD = true

// decodeBase64Blocks decodes blocks of 64 standard base64 characters from src into dst with
// NEON, 48 bytes from each, while a whole block is alphabet characters and dst has 48 bytes of
// room, then at most one block of 32 (24 bytes). It returns the source bytes consumed and the
// bytes written; decodeBase64Generic goes on from there. It writes nothing past the bytes it
// reports.
//
//go:noescape
func decodeBase64Blocks(dst, src []byte) (nsrc, ndst int)
