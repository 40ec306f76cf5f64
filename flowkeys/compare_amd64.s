//go:build amd64 && !purego

#include "textflag.h"

// The comparators OR together (a^b)&m over n words and test the result
// once at the end: no early exit (after a hash hit the keys are almost
// always equal). Their bodies take SI = a, DI = b, DX = m, CX = n and
// return AL = 1 if the words agree under the mask, else 0; they clobber
// AX, BX, CX, SI, DI, DX and vector registers. The entry points below
// load the arguments and CALL a body.

// sse2Body<>: 16-byte SSE2 operations (SSE2 is part of every amd64
// CPU), two accumulators, and a word-sized tail.
TEXT sse2Body<>(SB), NOSPLIT|NOFRAME, $0
	PXOR X0, X0
	PXOR X4, X4
	XORQ BX, BX

sse2loop4:
	CMPQ  CX, $4
	JB    sse2loop1
	MOVOU 0(SI), X1
	MOVOU 0(DI), X2
	MOVOU 0(DX), X3
	MOVOU 16(SI), X5
	MOVOU 16(DI), X6
	MOVOU 16(DX), X7
	PXOR  X2, X1
	PAND  X3, X1
	POR   X1, X0
	PXOR  X6, X5
	PAND  X7, X5
	POR   X5, X4
	ADDQ  $32, SI
	ADDQ  $32, DI
	ADDQ  $32, DX
	SUBQ  $4, CX
	JMP   sse2loop4

sse2loop1:
	TESTQ CX, CX
	JZ    sse2done
	MOVQ  0(SI), AX
	XORQ  0(DI), AX
	ANDQ  0(DX), AX
	ORQ   AX, BX
	ADDQ  $8, SI
	ADDQ  $8, DI
	ADDQ  $8, DX
	DECQ  CX
	JMP   sse2loop1

sse2done:
	POR    X4, X0
	MOVQ   X0, AX
	ORQ    AX, BX
	PSRLDQ $8, X0
	MOVQ   X0, AX
	ORQ    AX, BX
	SETEQ  AL
	RET

// avx2Body<>: 32-byte AVX2 operations (VPXOR, VPAND, VPOR on YMM; the
// caller checks cpu.X86.HasAVX2), straight-line code for 16 words (128
// bytes), otherwise 64 bytes per iteration with two accumulators and
// 32-, 16- and 8-byte tails; one VPTEST at the end, then VZEROUPPER.
// A VEX-encoded XMM load zeroes the upper half of its YMM register, so
// the 16-byte step can be ORed into a YMM accumulator.
TEXT avx2Body<>(SB), NOSPLIT|NOFRAME, $0
	CMPQ CX, $16
	JNE  avx2general
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
	SETEQ   AL
	RET

avx2general:
	XORQ  BX, BX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

avx2loop8:
	CMPQ    CX, $8
	JB      avx2tail4
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
	JMP     avx2loop8

avx2tail4:
	CMPQ    CX, $4
	JB      avx2tail2
	VMOVDQU 0(SI), Y2
	VPXOR   0(DI), Y2, Y2
	VPAND   0(DX), Y2, Y2
	VPOR    Y2, Y0, Y0
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, DX
	SUBQ    $4, CX

avx2tail2:
	CMPQ    CX, $2
	JB      avx2tail1
	VMOVDQU 0(SI), X2
	VPXOR   0(DI), X2, X2
	VPAND   0(DX), X2, X2
	VPOR    Y2, Y1, Y1
	ADDQ    $16, SI
	ADDQ    $16, DI
	ADDQ    $16, DX
	SUBQ    $2, CX

avx2tail1:
	TESTQ CX, CX
	JZ    avx2done
	MOVQ  0(SI), BX
	XORQ  0(DI), BX
	ANDQ  0(DX), BX

avx2done:
	VPOR   Y1, Y0, Y0
	VPTEST Y0, Y0
	VZEROUPPER
	SETEQ  AL
	TESTQ  BX, BX
	SETEQ  CL
	ANDB   CL, AL
	RET

// func equalMaskedSSE2(a, b, m *uint64, n int) bool
TEXT ·equalMaskedSSE2(SB), NOSPLIT, $0-33
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ m+16(FP), DX
	MOVQ n+24(FP), CX
	CALL sse2Body<>(SB)
	MOVB AL, ret+32(FP)
	RET

// func equalMaskedAVX2(a, b, m *uint64, n int) bool
TEXT ·equalMaskedAVX2(SB), NOSPLIT, $0-33
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ m+16(FP), DX
	MOVQ n+24(FP), CX
	CALL avx2Body<>(SB)
	MOVB AL, ret+32(FP)
	RET

// func equalMasked(a, b, m *uint64, n int) bool
TEXT ·equalMasked(SB), NOSPLIT, $0-33
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ m+16(FP), DX
	MOVQ n+24(FP), CX
	CMPB ·useAVX2(SB), $0
	JEQ  sse2
	CALL avx2Body<>(SB)
	MOVB AL, ret+32(FP)
	RET

sse2:
	CALL sse2Body<>(SB)
	MOVB AL, ret+32(FP)
	RET

// func equalMaskedRange(a, b, m *Key, r Range) bool
//
// EqualMasked's work once it has checked r: compute the words'
// addresses and CALL the body useAVX2 chooses.
TEXT ·equalMaskedRange(SB), NOSPLIT, $0-41
	MOVQ r_Start+24(FP), AX
	MOVQ r_End+32(FP), CX
	SUBQ AX, CX
	JLE  empty
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ m+16(FP), DX
	LEAQ (SI)(AX*8), SI
	LEAQ (DI)(AX*8), DI
	LEAQ (DX)(AX*8), DX
	CMPB ·useAVX2(SB), $0
	JEQ  rsse2
	CALL avx2Body<>(SB)
	MOVB AL, ret+40(FP)
	RET

rsse2:
	CALL sse2Body<>(SB)
	MOVB AL, ret+40(FP)
	RET

empty:
	MOVB $1, ret+40(FP)
	RET
