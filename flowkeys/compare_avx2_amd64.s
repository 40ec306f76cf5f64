//go:build amd64 && !purego

#include "textflag.h"

// func equalMaskedAVX2(a, b, m *uint64, n int) bool
//
// OR together (a^b)&m over n words, 32 bytes per YMM step, and test the
// result once at the end: no early exit. Requires AVX2 (VPXOR, VPAND and
// VPOR on YMM registers); the caller checks cpu.X86.HasAVX2.
//
// Y0 and Y1 accumulate; Y2-Y5 are scratch; AX accumulates a last odd word.
// A VEX-encoded XMM load zeroes the upper half of its YMM register, so a
// 16-byte step can be ORed into the YMM accumulator.
TEXT ·equalMaskedAVX2(SB), NOSPLIT, $0-33
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ m+16(FP), DX
	MOVQ n+24(FP), CX
	XORQ AX, AX
	CMPQ CX, $16
	JNE  general

	// 16 words (128 bytes), the common range: straight-line code.
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 64(SI), Y2
	VMOVDQU 96(SI), Y3
	VPXOR   0(DI), Y0, Y0
	VPXOR   32(DI), Y1, Y1
	VPXOR   64(DI), Y2, Y2
	VPXOR   96(DI), Y3, Y3
	VPAND   0(DX), Y0, Y0
	VPAND   32(DX), Y1, Y1
	VPAND   64(DX), Y2, Y2
	VPAND   96(DX), Y3, Y3
	VPOR    Y1, Y0, Y0
	VPOR    Y3, Y2, Y2
	VPOR    Y2, Y0, Y0
	VPTEST  Y0, Y0
	VZEROUPPER
	SETEQ   ret+32(FP)
	RET

general:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

loop8:
	CMPQ    CX, $8
	JB      tail4
	VMOVDQU 0(SI), Y2
	VMOVDQU 32(SI), Y3
	VPXOR   0(DI), Y2, Y2
	VPXOR   32(DI), Y3, Y3
	VPAND   0(DX), Y2, Y2
	VPAND   32(DX), Y3, Y3
	VPOR    Y2, Y0, Y0
	VPOR    Y3, Y1, Y1
	ADDQ    $64, SI
	ADDQ    $64, DI
	ADDQ    $64, DX
	SUBQ    $8, CX
	JMP     loop8

tail4:
	CMPQ    CX, $4
	JB      tail2
	VMOVDQU 0(SI), Y2
	VPXOR   0(DI), Y2, Y2
	VPAND   0(DX), Y2, Y2
	VPOR    Y2, Y0, Y0
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, DX
	SUBQ    $4, CX

tail2:
	CMPQ    CX, $2
	JB      tail1
	VMOVDQU 0(SI), X2
	VPXOR   0(DI), X2, X2
	VPAND   0(DX), X2, X2
	VPOR    Y2, Y1, Y1
	ADDQ    $16, SI
	ADDQ    $16, DI
	ADDQ    $16, DX
	SUBQ    $2, CX

tail1:
	TESTQ CX, CX
	JZ    done
	MOVQ  0(SI), AX
	XORQ  0(DI), AX
	ANDQ  0(DX), AX

done:
	VPOR       Y1, Y0, Y0
	VPTEST     Y0, Y0
	VZEROUPPER
	SETEQ      BL
	TESTQ      AX, AX
	SETEQ      CL
	ANDB       CL, BL
	MOVB       BL, ret+32(FP)
	RET

// func equalMasked(a, b, m *uint64, n int) bool
//
// Same arguments as the two comparators, so a tail jump passes them on.
TEXT ·equalMasked(SB), NOSPLIT, $0-33
	CMPB ·useAVX2(SB), $0
	JEQ  sse2
	JMP  ·equalMaskedAVX2(SB)

sse2:
	JMP ·equalMaskedSSE2(SB)
