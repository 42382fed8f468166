//go:build !purego

#include "textflag.h"

// Six bits of each character of the standard alphabet, by character code 0..127, 0xFF for a
// character outside it. VTBL over four registers looks up 64 entries: the first 64 (digits,
// '+', '/') with the code itself, the next 64 (letters) with the code minus 64; both give 0 for
// an index past 64, so one lookup of each, VTBL then VTBX, gives the entry of any code.
DATA b64neon<>+0(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA b64neon<>+8(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA b64neon<>+16(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA b64neon<>+24(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA b64neon<>+32(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA b64neon<>+40(SB)/8, $0x3FFFFFFF3EFFFFFF
DATA b64neon<>+48(SB)/8, $0x3B3A393837363534
DATA b64neon<>+56(SB)/8, $0xFFFFFFFFFFFF3D3C
DATA b64neon<>+64(SB)/8, $0x06050403020100FF
DATA b64neon<>+72(SB)/8, $0x0E0D0C0B0A090807
DATA b64neon<>+80(SB)/8, $0x161514131211100F
DATA b64neon<>+88(SB)/8, $0xFFFFFFFFFF191817
DATA b64neon<>+96(SB)/8, $0x201F1E1D1C1B1AFF
DATA b64neon<>+104(SB)/8, $0x2827262524232221
DATA b64neon<>+112(SB)/8, $0x302F2E2D2C2B2A29
DATA b64neon<>+120(SB)/8, $0xFFFFFFFFFF333231
GLOBL b64neon<>(SB), RODATA|NOPTR, $128

// func decodeBase64Blocks(dst, src []byte) (nsrc, ndst int, stop bool)
//
// Blocks of 64 characters, then one of 32 in the low halves of the registers. A block that
// holds a byte outside the alphabet is decoded all the same, and only its groups before the
// first such group are counted (the rest of what it stores is overwritten later or never
// read), so the run ends where it must without the plain Go code.
TEXT ·decodeBase64Blocks(SB), NOSPLIT, $0-65
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R1
	MOVD src_base+24(FP), R2
	MOVD src_len+32(FP), R3
	MOVD $0, R4 // source bytes consumed
	MOVD $0, R5 // bytes written
	MOVD $0, R12 // stop
	CMP  $32, R3
	BLT  done
	CMP  $24, R1
	BLT  done
	MOVD R3, R10 // the lengths, for tail32
	MOVD R1, R11
	SUB  $64, R3, R3 // the last block of 64 may start here (a negative bound stops the loop)
	SUB  $48, R1, R1
	MOVD $b64neon<>(SB), R6
	VLD1.P 64(R6), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1 (R6), [V20.B16, V21.B16, V22.B16, V23.B16]
	VMOVI $64, V24.B16

loop:
	CMP  R3, R4
	BGT  tail32
	CMP  R1, R5
	BGT  tail32
	ADD  R2, R4, R7
	// The first, second, third and fourth characters of 16 groups of four, one register each.
	VLD4 (R7), [V0.B16, V1.B16, V2.B16, V3.B16]
	VSUB V24.B16, V0.B16, V4.B16
	VSUB V24.B16, V1.B16, V5.B16
	VSUB V24.B16, V2.B16, V6.B16
	VSUB V24.B16, V3.B16, V7.B16
	VTBL V0.B16, [V16.B16, V17.B16, V18.B16, V19.B16], V8.B16
	VTBL V1.B16, [V16.B16, V17.B16, V18.B16, V19.B16], V9.B16
	VTBL V2.B16, [V16.B16, V17.B16, V18.B16, V19.B16], V10.B16
	VTBL V3.B16, [V16.B16, V17.B16, V18.B16, V19.B16], V11.B16
	VTBX V4.B16, [V20.B16, V21.B16, V22.B16, V23.B16], V8.B16
	VTBX V5.B16, [V20.B16, V21.B16, V22.B16, V23.B16], V9.B16
	VTBX V6.B16, [V20.B16, V21.B16, V22.B16, V23.B16], V10.B16
	VTBX V7.B16, [V20.B16, V21.B16, V22.B16, V23.B16], V11.B16
	// A character outside the alphabet has 0xFF for its six bits, or (code 128 and up, which
	// both lookups miss) its own top bit set: either way, a top bit in the OR of all, in the
	// lane of its group.
	VORR V0.B16, V1.B16, V12.B16
	VORR V2.B16, V3.B16, V13.B16
	VORR V8.B16, V9.B16, V14.B16
	VORR V10.B16, V11.B16, V15.B16
	VORR V12.B16, V13.B16, V12.B16
	VORR V14.B16, V15.B16, V14.B16
	VORR V12.B16, V14.B16, V12.B16
	VMOV V12.D[0], R8
	VMOV V12.D[1], R9
	AND  $0x8080808080808080, R8, R8
	AND  $0x8080808080808080, R9, R9
	// Four six-bit values a, b, c, d give the bytes a<<2|b>>4, b<<4|c>>2, c<<6|d.
	VSHL  $2, V8.B16, V0.B16
	VUSHR $4, V9.B16, V4.B16
	VORR  V0.B16, V4.B16, V0.B16
	VSHL  $4, V9.B16, V1.B16
	VUSHR $2, V10.B16, V5.B16
	VORR  V1.B16, V5.B16, V1.B16
	VSHL  $6, V10.B16, V2.B16
	VORR  V2.B16, V11.B16, V2.B16
	ADD   R0, R5, R7
	VST3  [V0.B16, V1.B16, V2.B16], (R7)
	ORR   R8, R9, R13
	CBNZ  R13, partial64
	ADD   $64, R4, R4
	ADD   $48, R5, R5
	B     loop

partial64:
	// The groups before the first one with a byte outside the alphabet: the index of the
	// lowest lane with its top bit set, in the low half or else in the high one.
	MOVD  $8, R13
	CBNZ  R8, low
	MOVD  R9, R8
	B     count
low:
	MOVD  $0, R13
count:
	RBIT  R8, R8
	CLZ   R8, R8
	ADD   R8>>3, R13, R13
	ADD   R13<<2, R4, R4
	ADD   R13<<1, R5, R5
	ADD   R13, R5, R5
	MOVD  $1, R12
	B     done

tail32:
	// One block of 32 at most, in the low halves of the registers, when fewer than 64
	// characters or 48 bytes of room are left.
	ADD  $32, R4, R7
	CMP  R10, R7
	BHI  done
	ADD  $24, R5, R8
	CMP  R11, R8
	BHI  done
	ADD  R2, R4, R7
	VLD4 (R7), [V0.B8, V1.B8, V2.B8, V3.B8]
	VSUB V24.B8, V0.B8, V4.B8
	VSUB V24.B8, V1.B8, V5.B8
	VSUB V24.B8, V2.B8, V6.B8
	VSUB V24.B8, V3.B8, V7.B8
	VTBL V0.B8, [V16.B16, V17.B16, V18.B16, V19.B16], V8.B8
	VTBL V1.B8, [V16.B16, V17.B16, V18.B16, V19.B16], V9.B8
	VTBL V2.B8, [V16.B16, V17.B16, V18.B16, V19.B16], V10.B8
	VTBL V3.B8, [V16.B16, V17.B16, V18.B16, V19.B16], V11.B8
	VTBX V4.B8, [V20.B16, V21.B16, V22.B16, V23.B16], V8.B8
	VTBX V5.B8, [V20.B16, V21.B16, V22.B16, V23.B16], V9.B8
	VTBX V6.B8, [V20.B16, V21.B16, V22.B16, V23.B16], V10.B8
	VTBX V7.B8, [V20.B16, V21.B16, V22.B16, V23.B16], V11.B8
	VORR V0.B8, V1.B8, V12.B8
	VORR V2.B8, V3.B8, V13.B8
	VORR V8.B8, V9.B8, V14.B8
	VORR V10.B8, V11.B8, V15.B8
	VORR V12.B8, V13.B8, V12.B8
	VORR V14.B8, V15.B8, V14.B8
	VORR V12.B8, V14.B8, V12.B8
	VMOV V12.D[0], R8
	AND  $0x8080808080808080, R8, R8
	VSHL  $2, V8.B8, V0.B8
	VUSHR $4, V9.B8, V4.B8
	VORR  V0.B8, V4.B8, V0.B8
	VSHL  $4, V9.B8, V1.B8
	VUSHR $2, V10.B8, V5.B8
	VORR  V1.B8, V5.B8, V1.B8
	VSHL  $6, V10.B8, V2.B8
	VORR  V2.B8, V11.B8, V2.B8
	ADD   R0, R5, R7
	VST3  [V0.B8, V1.B8, V2.B8], (R7)
	// The groups before the first with a byte outside the alphabet: 8 when there is none.
	CMP   $0, R8
	CSET  NE, R12
	RBIT  R8, R8
	CLZ   R8, R8
	LSR   $3, R8, R13
	ADD   R13<<2, R4, R4
	ADD   R13<<1, R5, R5
	ADD   R13, R5, R5

done:
	MOVD R4, nsrc+48(FP)
	MOVD R5, ndst+56(FP)
	MOVB R12, stop+64(FP)
	RET
