//go:build !purego

package kafkaevent

// haveSIMD is true: every arm64 processor has NEON (Advanced SIMD is part of Armv8-A), Lambda's
// Graviton ones included.
const haveSIMD = true

// decodeBase64Blocks decodes blocks of 64 standard base64 characters from src into dst with
// NEON, 48 bytes from each, while src and dst have that much left, then one block of 32 (24
// bytes) if that much is left. It returns the source bytes consumed and the bytes written, and
// stop true when it ended at a group holding a byte outside the alphabet; otherwise
// decodeBase64Generic goes on from there.
//
//go:noescape
func decodeBase64Blocks(dst, src []byte) (nsrc, ndst int, stop bool)
