//go:build !purego

#include "textflag.h"

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

// func decodeBase64Blocks(dst, src []byte) (nsrc, ndst int, stop bool)
//
// One block of 16 characters, then three loops, widest first: two blocks of 32 per step (two
// independent chains keep both vector units busy), then one block of 32, then one of 16 in the
// low halves of the same registers. A block that holds a byte outside the alphabet is decoded all the same, and only
// its groups before that byte are counted (the rest of what it stores is overwritten later or
// never read), so the run ends where it must without the plain Go code.
TEXT ·decodeBase64Blocks(SB), NOSPLIT, $0-65
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), DX
	XORQ AX, AX // source bytes consumed
	XORQ BX, BX // bytes written
	MOVB $0, stop+64(FP)
	CMPQ DX, $16
	JB   short
	CMPQ CX, $16
	JB   short
	VMOVDQU b64lo<>(SB), Y8
	VMOVDQU b64hi<>(SB), Y9
	VMOVDQU b64roll<>(SB), Y10
	VMOVDQU b64nib<>(SB), Y11
	VMOVDQU b64slash<>(SB), Y12
	VMOVDQU b64merge1<>(SB), Y13
	VMOVDQU b64merge2<>(SB), Y14
	VMOVDQU b64perm<>(SB), Y15
	// Keys are often short: one block of 16 first, which holds all of a key of up to 16
	// characters, spares it the wide loads, and leads into the loops when it is whole.
	MOVQ $1, R11
	JMP  block16

loop64:
	LEAQ 64(AX), R8
	CMPQ R8, DX
	JA   loop32
	LEAQ 56(BX), R9 // the second store writes 32 bytes from 24 on
	CMPQ R9, CX
	JA   loop32
	VMOVDQU (SI)(AX*1), Y0
	VMOVDQU 32(SI)(AX*1), Y4
	VPSRLD  $4, Y0, Y1
	VPSRLD  $4, Y4, Y5
	VPAND   Y11, Y1, Y1 // high nibbles
	VPAND   Y11, Y5, Y5
	VPAND   Y11, Y0, Y2 // low nibbles
	VPAND   Y11, Y4, Y6
	VPSHUFB Y2, Y8, Y2
	VPSHUFB Y6, Y8, Y6
	VPSHUFB Y1, Y9, Y3
	VPSHUFB Y5, Y9, Y7
	VPAND   Y2, Y3, Y3
	VPAND   Y6, Y7, Y7
	VPOR    Y3, Y7, Y7
	VPTEST  Y7, Y7
	JNZ     loop32 // a byte outside the alphabet in one of the two: one block at a time
	VPCMPEQB Y12, Y0, Y2
	VPCMPEQB Y12, Y4, Y6
	VPADDB  Y2, Y1, Y1 // '/' to entry 1
	VPADDB  Y6, Y5, Y5
	VPSHUFB Y1, Y10, Y1
	VPSHUFB Y5, Y10, Y5
	VPADDB  Y1, Y0, Y0 // six bits per byte
	VPADDB  Y5, Y4, Y4
	VPMADDUBSW Y13, Y0, Y0
	VPMADDUBSW Y13, Y4, Y4
	VPMADDWD Y14, Y0, Y0
	VPMADDWD Y14, Y4, Y4
	VPSHUFB b64pack<>(SB), Y0, Y0
	VPSHUFB b64pack<>(SB), Y4, Y4
	VPERMD  Y0, Y15, Y0
	VPERMD  Y4, Y15, Y4
	VMOVDQU Y0, (DI)(BX*1)
	VMOVDQU Y4, 24(DI)(BX*1)
	MOVQ    R8, AX
	ADDQ    $48, BX
	JMP     loop64

loop32:
	LEAQ 32(AX), R8
	CMPQ R8, DX
	JA   tail16
	LEAQ 32(BX), R9
	CMPQ R9, CX
	JA   tail16
	VMOVDQU (SI)(AX*1), Y0
	VPSRLD  $4, Y0, Y1
	VPAND   Y11, Y1, Y1
	VPAND   Y11, Y0, Y2
	VPSHUFB Y2, Y8, Y2
	VPSHUFB Y1, Y9, Y3
	VPAND   Y2, Y3, Y3 // nonzero where a byte is outside the alphabet
	VPTEST  Y3, Y3
	JNZ     partial32
	VPCMPEQB Y12, Y0, Y2
	VPADDB  Y2, Y1, Y1
	VPSHUFB Y1, Y10, Y1
	VPADDB  Y1, Y0, Y0
	VPMADDUBSW Y13, Y0, Y0
	VPMADDWD Y14, Y0, Y0
	VPSHUFB b64pack<>(SB), Y0, Y0
	VPERMD  Y0, Y15, Y0
	VMOVDQU Y0, (DI)(BX*1)
	MOVQ    R8, AX
	ADDQ    $24, BX
	JMP     loop32

partial32:
	// The whole groups before the first byte outside the alphabet.
	VPXOR    Y4, Y4, Y4
	VPCMPEQB Y4, Y3, Y3
	VPMOVMSKB Y3, R10
	NOTL     R10
	BSFL     R10, R10
	SHRL     $2, R10
	JZ       stopped
	VPCMPEQB Y12, Y0, Y2
	VPADDB  Y2, Y1, Y1
	VPSHUFB Y1, Y10, Y1
	VPADDB  Y1, Y0, Y0
	VPMADDUBSW Y13, Y0, Y0
	VPMADDWD Y14, Y0, Y0
	VPSHUFB b64pack<>(SB), Y0, Y0
	VPERMD  Y0, Y15, Y0
	VMOVDQU Y0, (DI)(BX*1)
	LEAQ    (AX)(R10*4), AX
	LEAQ    (R10)(R10*2), R10
	ADDQ    R10, BX
	JMP     stopped

tail16:
	// Fewer than 32 characters or bytes of room left: one block of 16 if they allow it.
	XORQ R11, R11

block16:
	// One block of 16 (R11 set: the first, R11 clear: the last). The tables' low lanes are
	// what the 128-bit forms read.
	LEAQ 16(AX), R8
	CMPQ R8, DX
	JA   done
	LEAQ 16(BX), R9
	CMPQ R9, CX
	JA   done
	VMOVDQU (SI)(AX*1), X0
	VPSRLD  $4, X0, X1
	VPAND   X11, X1, X1
	VPAND   X11, X0, X2
	VPSHUFB X2, X8, X2
	VPSHUFB X1, X9, X3
	VPAND   X2, X3, X3
	VPXOR   X4, X4, X4
	VPCMPEQB X4, X3, X3
	VPMOVMSKB X3, R10
	NOTL    R10 // bits 16 and up set: 16 when the whole block is in the alphabet
	BSFL    R10, R10
	SHRL    $2, R10 // whole groups: 0 to 4
	VPCMPEQB X12, X0, X2
	VPADDB  X2, X1, X1
	VPSHUFB X1, X10, X1
	VPADDB  X1, X0, X0
	VPMADDUBSW X13, X0, X0
	VPMADDWD X14, X0, X0
	VPSHUFB b64pack<>(SB), X0, X0
	VMOVDQU X0, (DI)(BX*1)
	LEAQ    (AX)(R10*4), AX
	CMPQ    R10, $4
	LEAQ    (R10)(R10*2), R10
	LEAQ    (BX)(R10*1), BX
	JNE     stopped
	TESTQ   R11, R11
	JNZ     loop64
	JMP     done

stopped:
	MOVB $1, stop+64(FP)

done:
	VZEROUPPER

short:
	MOVQ AX, nsrc+48(FP)
	MOVQ BX, ndst+56(FP)
	RET
