//go:build !purego

package kafkaevent

import "golang.org/x/sys/cpu"

// haveSIMD is whether decodeBase64Blocks runs: AVX2, with the operating system saving the
// 256-bit registers (x/sys/cpu checks both, and honours GODEBUG=cpu.avx2=off). Lambda's x86_64
// machines have it; a machine without it decodes in plain Go.
var haveSIMD = cpu.X86.HasAVX2

// decodeBase64Blocks decodes one block of 16 standard base64 characters, then blocks of 32,
// from src into dst with AVX2, 24 bytes from each, while src and dst have 32 bytes left (each block stores 32 bytes,
// the last 8 of which the next block overwrites), then one block of 16 if 16 are left. It
// returns the source bytes consumed and the bytes written, and stop true when it ended at a
// group holding a byte outside the alphabet; otherwise decodeBase64Generic goes on from there.
//
//go:noescape
func decodeBase64Blocks(dst, src []byte) (nsrc, ndst int, stop bool)
