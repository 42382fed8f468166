//go:build !purego

#include "textflag.h"

// func cpuHasAVX2() bool
TEXT ·cpuHasAVX2(SB), NOSPLIT, $0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	// OSXSAVE (bit 27) and AVX (bit 28) of ECX.
	ANDL $0x18000000, CX
	CMPL CX, $0x18000000
	JNE  no
	// The operating system saves the XMM and YMM state: XCR0 bits 1 and 2.
	XORL CX, CX
	XGETBV
	ANDL $6, AX
	CMPL AX, $6
	JNE  no
	// AVX2: CPUID leaf 7, EBX bit 5.
	MOVL $7, AX
	XORL CX, CX
	CPUID
	BTL  $5, BX
	JCC  no
	MOVB $1, ret+0(FP)
	RET
no:
	MOVB $0, ret+0(FP)
	RET

// The tables below are indexed by one nibble of a character with VPSHUFB, which looks up
// within each 128-bit lane, so each holds its 16 entries twice.
//
// Validity: a character is in the alphabet when lo[its low nibble] AND hi[its high nibble] is
// zero. hi gives each high nibble one bit of its own (0x2_: 01, 0x3_: 02, 0x4_ and 0x6_: 04,
// 0x5_ and 0x7_: 08, any other: 10); lo sets, for each low nibble, the bits of the high nibbles
// it is not a character of the alphabet with: 01 unless it is B or F ('+', '/'), 02 above 9
// (past '9'), 04 for 0 ('@', '`'), 08 above A (past 'Z', 'z'), and 10 always.
DATA b64lo<>+0(SB)/8, $0x1111111111111115
DATA b64lo<>+8(SB)/8, $0x1A1B1B1B1A131111
DATA b64lo<>+16(SB)/8, $0x1111111111111115
DATA b64lo<>+24(SB)/8, $0x1A1B1B1B1A131111
GLOBL b64lo<>(SB), RODATA|NOPTR, $32

DATA b64hi<>+0(SB)/8, $0x0804080402011010
DATA b64hi<>+8(SB)/8, $0x1010101010101010
DATA b64hi<>+16(SB)/8, $0x0804080402011010
DATA b64hi<>+24(SB)/8, $0x1010101010101010
GLOBL b64hi<>(SB), RODATA|NOPTR, $32

// What to add to a valid character to get its six bits, by high nibble, with '/' moved to
// entry 1 (its high nibble minus one) to tell it from '+': '/' +16, '+' +19, digits +4,
// 'A'-'Z' -65, 'a'-'z' -71.
DATA b64roll<>+0(SB)/8, $0xB9B9BFBF04131000
DATA b64roll<>+8(SB)/8, $0x0000000000000000
DATA b64roll<>+16(SB)/8, $0xB9B9BFBF04131000
DATA b64roll<>+24(SB)/8, $0x0000000000000000
GLOBL b64roll<>(SB), RODATA|NOPTR, $32

DATA b64nib<>+0(SB)/8, $0x0F0F0F0F0F0F0F0F
DATA b64nib<>+8(SB)/8, $0x0F0F0F0F0F0F0F0F
DATA b64nib<>+16(SB)/8, $0x0F0F0F0F0F0F0F0F
DATA b64nib<>+24(SB)/8, $0x0F0F0F0F0F0F0F0F
GLOBL b64nib<>(SB), RODATA|NOPTR, $32

DATA b64slash<>+0(SB)/8, $0x2F2F2F2F2F2F2F2F
DATA b64slash<>+8(SB)/8, $0x2F2F2F2F2F2F2F2F
DATA b64slash<>+16(SB)/8, $0x2F2F2F2F2F2F2F2F
DATA b64slash<>+24(SB)/8, $0x2F2F2F2F2F2F2F2F
GLOBL b64slash<>(SB), RODATA|NOPTR, $32

// VPMADDUBSW by 0x40, 0x01: each pair of six-bit values a, b becomes the word a<<6 | b.
DATA b64merge1<>+0(SB)/8, $0x0140014001400140
DATA b64merge1<>+8(SB)/8, $0x0140014001400140
DATA b64merge1<>+16(SB)/8, $0x0140014001400140
DATA b64merge1<>+24(SB)/8, $0x0140014001400140
GLOBL b64merge1<>(SB), RODATA|NOPTR, $32

// VPMADDWD by 0x1000, 0x0001: each pair of those words ab, cd becomes the 24-bit ab<<12 | cd.
DATA b64merge2<>+0(SB)/8, $0x0001100000011000
DATA b64merge2<>+8(SB)/8, $0x0001100000011000
DATA b64merge2<>+16(SB)/8, $0x0001100000011000
DATA b64merge2<>+24(SB)/8, $0x0001100000011000
GLOBL b64merge2<>(SB), RODATA|NOPTR, $32

// VPSHUFB: the three low bytes of each 32-bit group, most significant first, packed into the
// first 12 bytes of each lane.
DATA b64pack<>+0(SB)/8, $0x090A040506000102
DATA b64pack<>+8(SB)/8, $0xFFFFFFFF0C0D0E08
DATA b64pack<>+16(SB)/8, $0x090A040506000102
DATA b64pack<>+24(SB)/8, $0xFFFFFFFF0C0D0E08
GLOBL b64pack<>(SB), RODATA|NOPTR, $32

// VPERMD: the 12 bytes of the high lane moved up against the 12 of the low one.
DATA b64perm<>+0(SB)/8, $0x0000000100000000
DATA b64perm<>+8(SB)/8, $0x0000000400000002
DATA b64perm<>+16(SB)/8, $0x0000000600000005
DATA b64perm<>+24(SB)/8, $0x0000000700000003
GLOBL b64perm<>(SB), RODATA|NOPTR, $32

// func decodeBase64Blocks(dst, src []byte) (nsrc, ndst int)
TEXT ·decodeBase64Blocks(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), DX
	XORQ AX, AX // source bytes consumed
	XORQ BX, BX // bytes written
	CMPQ DX, $32
	JB   short
	CMPQ CX, $32
	JB   short
	SUBQ $32, DX // the last block may start here
	SUBQ $32, CX
	VMOVDQU b64lo<>(SB), Y8
	VMOVDQU b64hi<>(SB), Y9
	VMOVDQU b64roll<>(SB), Y10
	VMOVDQU b64nib<>(SB), Y11
	VMOVDQU b64slash<>(SB), Y12
	VMOVDQU b64merge1<>(SB), Y13
	VMOVDQU b64merge2<>(SB), Y14
	VMOVDQU b64pack<>(SB), Y15
	VMOVDQU b64perm<>(SB), Y7

loop:
	CMPQ AX, DX
	JA   done
	CMPQ BX, CX
	JA   done
	VMOVDQU (SI)(AX*1), Y0
	VPSRLD  $4, Y0, Y1
	VPAND   Y11, Y1, Y1 // high nibbles
	VPAND   Y11, Y0, Y2 // low nibbles
	VPSHUFB Y2, Y8, Y3
	VPSHUFB Y1, Y9, Y4
	VPTEST  Y3, Y4
	JNZ     done        // a byte outside the alphabet: the generic stage finds which
	VPCMPEQB Y12, Y0, Y5
	VPADDB  Y5, Y1, Y1  // '/' to entry 1
	VPSHUFB Y1, Y10, Y1
	VPADDB  Y1, Y0, Y0  // six bits per byte
	VPMADDUBSW Y13, Y0, Y0
	VPMADDWD Y14, Y0, Y0
	VPSHUFB Y15, Y0, Y0
	VPERMD  Y0, Y7, Y0
	VMOVDQU Y0, (DI)(BX*1)
	ADDQ    $32, AX
	ADDQ    $24, BX
	JMP     loop

done:
	VZEROUPPER

short:
	MOVQ AX, nsrc+48(FP)
	MOVQ BX, ndst+56(FP)
	RET
