//go:build amd64 && !purego

#include "textflag.h"

// The values of cmpImpl (compare_amd64.go).
#define cmpSSE2 0
#define cmpAVX2 1
#define cmpAVX512 2

// The bodies' building blocks. ENDS(d) points R8, R9 and R10 at the
// words' end plus d (d = -8·k: the last k words of a, b and m);
// ADVANCE(d) moves SI, DI and DX on by d bytes.
#define ENDS(d) LEAQ d(SI)(CX*8), R8; LEAQ d(DI)(CX*8), R9; LEAQ d(DX)(CX*8), R10
#define ADVANCE(d) ADDQ $d, SI; ADDQ $d, DI; ADDQ $d, DX

// XAM(load, xor, and, a, b, m, r): r = (a ^ b) & m, one vector.
#define XAM(load, xor, and, a, b, m, r) load a, r; xor b, r, r; and m, r, r

// XAM2: two YMM chunks, ORed into r0 (r1 is clobbered).
#define XAM2(a0, b0, m0, a1, b1, m1, r0, r1) XAM(VMOVDQU, VPXOR, VPAND, a0, b0, m0, r0); XAM(VMOVDQU, VPXOR, VPAND, a1, b1, m1, r1); VPOR r1, r0, r0

// AVX2DONE(r): AL = 1 if r is all zero; VZEROUPPER; return.
#define AVX2DONE(r) VPTEST r, r; VZEROUPPER; SETEQ AL; RET

// LOADS(mov, ds, de, a0, a1, b0, b1, m0, m1): with mov, a0 = the chunk
// of a at byte ds from word AX (r.Start), a1 = the chunk at byte de from
// word BX (r.End), and the same for b (DI) and m (DX). Plain loads:
// an indexed address costs no extra micro-op there.
#define LOADS(mov, ds, de, a0, a1, b0, b1, m0, m1) mov ds(SI)(AX*8), a0; mov de(SI)(BX*8), a1; mov ds(DI)(AX*8), b0; mov de(DI)(BX*8), b1; mov ds(DX)(AX*8), m0; mov de(DX)(BX*8), m1

// CALLBODY(body) is an entry point func(a, b, m *uint64, n int) bool
// that calls body.
#define CALLBODY(body) MOVQ a+0(FP), SI; MOVQ b+8(FP), DI; MOVQ m+16(FP), DX; MOVQ n+24(FP), CX; CALL body(SB); MOVB AL, ret+32(FP); RET

// XT512(a, b, m, k): k's bit i is set where word i of (a ^ b) & m, of
// 8 words, is not zero (Z16 is clobbered). The AVX-512 code uses only
// Z16-Z31, which leave the upper state of Y0-Y15 clean: no VZEROUPPER
// is needed after it (SSE code that follows pays no transition).
#define XT512(a, b, m, k) VMOVDQU64 a, Z16; VPXORQ b, Z16, Z16; VPTESTMQ m, Z16, k

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
// caller checks cpu.X86.HasAVX2) and no loop up to 16 words: the range
// is covered by chunks that start at its first word and end at its last,
// overlapping in the middle (an overlap tests some words twice, which
// does not change the OR). 4-8 words are two YMM chunks, 9-16 words
// four; 1 word is one 8-byte step, 2-3 words two XMM chunks; above 16
// words a loop of 64 bytes, then the last 64 bytes overlapping. One
// VPTEST at the end, then VZEROUPPER. A VEX-encoded XMM operation zeroes
// the upper half of its YMM register, so the XMM path leaves the upper
// state clean.
TEXT avx2Body<>(SB), NOSPLIT|NOFRAME, $0
	CMPQ CX, $4
	JB   avx2small
	CMPQ CX, $8
	JA   avx2over8

	// 4-8 words: [0, 4) and [n-4, n).
	ENDS(-32)
	XAM(VMOVDQU, VPXOR, VPAND, 0(SI), 0(DI), 0(DX), Y0)
	XAM(VMOVDQU, VPXOR, VPAND, 0(R8), 0(R9), 0(R10), Y1)
	VPOR Y1, Y0, Y0
	AVX2DONE(Y0)

avx2over8:
	CMPQ CX, $16
	JA   avx2large

	// 9-16 words: [0, 8) and [n-8, n).
	ENDS(-64)
	XAM2(0(SI), 0(DI), 0(DX), 32(SI), 32(DI), 32(DX), Y0, Y1)
	XAM2(0(R8), 0(R9), 0(R10), 32(R8), 32(R9), 32(R10), Y2, Y3)
	VPOR Y3, Y2, Y2
	VPOR Y2, Y0, Y0
	AVX2DONE(Y0)

avx2large:
	// More than 16 words: 8 words at a time while more than 8 remain,
	// then the last 8 words of the range (overlapping the previous
	// step), into the accumulator Y4.
	VPXOR Y4, Y4, Y4

avx2loop8:
	XAM2(0(SI), 0(DI), 0(DX), 32(SI), 32(DI), 32(DX), Y0, Y1)
	VPOR  Y0, Y4, Y4
	ADVANCE(64)
	SUBQ  $8, CX
	CMPQ  CX, $8
	JA    avx2loop8
	ENDS(-64)
	XAM2(0(R8), 0(R9), 0(R10), 32(R8), 32(R9), 32(R10), Y0, Y1)
	VPOR  Y0, Y4, Y4
	AVX2DONE(Y4)

avx2small:
	CMPQ CX, $1
	JB   avx2empty
	JA   avx2xmm

	// 1 word.
	MOVQ  0(SI), AX
	XORQ  0(DI), AX
	ANDQ  0(DX), AX
	SETEQ AL
	RET

avx2xmm:
	// 2-3 words: [0, 2) and [n-2, n), in XMM registers (no VZEROUPPER
	// needed).
	ENDS(-16)
	XAM(VMOVDQU, VPXOR, VPAND, 0(SI), 0(DI), 0(DX), X0)
	XAM(VMOVDQU, VPXOR, VPAND, 0(R8), 0(R9), 0(R10), X1)
	VPOR   X1, X0, X0
	VPTEST X0, X0
	SETEQ  AL
	RET

avx2empty:
	MOVB $1, AX
	RET

// avx512Body<>: 64-byte AVX-512 operations (VPXORQ on ZMM, and
// VPTESTMQ, which ANDs with the mask and sets one bit of a mask register
// per word that differs; the caller checks cpu.X86.HasAVX512F). 1-8
// words are one chunk loaded under a mask register of n bits (the
// words past the range are neither compared nor read: a masked-off
// element of an AVX-512 load does not fault); 9-16 words are two
// chunks, [0, 8) and [n-8, n), overlapping in the middle; above 16
// words a loop of 64 bytes, then the last 64 bytes overlapping. One
// KORTESTW at the end; no VZEROUPPER (only Z16-Z31 are used).
TEXT avx512Body<>(SB), NOSPLIT|NOFRAME, $0
	CMPQ CX, $8
	JBE  avx512small
	CMPQ CX, $16
	JA   avx512large

	// 9-16 words.
	ENDS(-64)
	XT512(0(SI), 0(DI), 0(DX), K1)
	XT512(0(R8), 0(R9), 0(R10), K2)
	KORTESTW K1, K2
	SETEQ    AL
	RET

avx512small:
	TESTQ CX, CX
	JZ    avx512empty

	// 1-8 words: the words [n, 8) are masked off.
	MOVL        $1, AX
	SHLL        CX, AX
	DECL        AX
	KMOVW       AX, K1
	VMOVDQU64.Z 0(SI), K1, Z16
	VPXORQ.Z    0(DI), Z16, K1, Z16
	VPTESTMQ    0(DX), Z16, K1, K2
	KORTESTW    K2, K2
	SETEQ       AL
	RET

avx512large:
	// More than 16 words: 8 words at a time while more than 8 remain,
	// then the last 8 words of the range, into K3.
	KXORW K3, K3, K3

avx512loop8:
	XT512(0(SI), 0(DI), 0(DX), K1)
	KORW  K1, K3, K3
	ADVANCE(64)
	SUBQ  $8, CX
	CMPQ  CX, $8
	JA    avx512loop8
	ENDS(-64)
	XT512(0(R8), 0(R9), 0(R10), K1)
	KORTESTW K1, K3
	SETEQ    AL
	RET

avx512empty:
	MOVB $1, AX
	RET

// func equalMaskedSSE2(a, b, m *uint64, n int) bool
TEXT ·equalMaskedSSE2(SB), NOSPLIT, $0-33
	CALLBODY(sse2Body<>)

// func equalMaskedAVX2(a, b, m *uint64, n int) bool
TEXT ·equalMaskedAVX2(SB), NOSPLIT, $0-33
	CALLBODY(avx2Body<>)

// func equalMaskedAVX512(a, b, m *uint64, n int) bool
TEXT ·equalMaskedAVX512(SB), NOSPLIT, $0-33
	CALLBODY(avx512Body<>)

// func equalMasked(a, b, m *uint64, n int) bool
TEXT ·equalMasked(SB), NOSPLIT, $0-33
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ m+16(FP), DX
	MOVQ n+24(FP), CX
	CMPB ·cmpImpl(SB), $cmpAVX512
	JEQ  use512
	CMPB ·cmpImpl(SB), $cmpAVX2
	JEQ  use2
	CALL sse2Body<>(SB)
	JMP  done

use512:
	CALL avx512Body<>(SB)
	JMP  done

use2:
	CALL avx2Body<>(SB)

done:
	MOVB AL, ret+32(FP)
	RET

// func equalMaskedRange(a, b, m *Key, r Range) bool
//
// EqualMasked's work once it has checked r. With AVX-512 (1-16 words)
// and AVX2 (4-16 words) the range is compared here, in chunks from
// r.Start and to r.End (overlapping in the middle), with no call and no
// frame; other ranges jump to rangeCall<>, which calls the body cmpImpl
// chooses. Every memory operand is either a plain load with an indexed
// address (one micro-op) or, for the short AVX-512 case, an operand of
// a masked load; the vector operations take registers (an indexed
// memory operand of a three-operand VEX or EVEX instruction costs Intel
// CPUs a second micro-op). The AVX-512 code uses Z16-Z31 only, so it
// needs no VZEROUPPER (the upper state of Y0-Y15 stays clean; glibc's
// EVEX string functions use YMM16-YMM31 for the same reason).
// The size test is one unsigned comparison of n-9 with 7 (9-16 words,
// the common megaflow ranges, fall through). Measured with
// BenchmarkEqualMaskedCPU/aligned (Sapphire Rapids, thread CPU time,
// interleaved with bytes.Equal over 128 bytes, medians of 6-8 runs
// alternating the binaries): AVX-512 1.01x -> 1.07x, AVX2 0.80x ->
// 0.84x of bytes.Equal.
TEXT ·equalMaskedRange(SB), NOSPLIT|NOFRAME, $0-41
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ m+16(FP), DX
	MOVQ r_Start+24(FP), AX
	MOVQ r_End+32(FP), BX
	LEAQ -9(BX), CX
	SUBQ AX, CX // n-9: 9-16 words are 0-7 unsigned
	CMPB ·cmpImpl(SB), $cmpAVX512
	JNE  rnot512
	CMPQ CX, $7
	JA   r512other

	// AVX-512, 9-16 words: [Start, Start+8) and [End-8, End).
	LOADS(VMOVDQU64, 0, -64, Z16, Z17, Z18, Z19, Z20, Z21)
	VPXORQ    Z18, Z16, Z16
	VPXORQ    Z19, Z17, Z17
	VPTESTMQ  Z20, Z16, K1
	VPTESTMQ  Z21, Z17, K2
	KORTESTW  K1, K2
	SETEQ     ret+40(FP)
	RET

r512other:
	ADDQ $9, CX // n
	CMPQ CX, $16
	JA   rcall512
	TESTQ CX, CX
	JZ    rempty

	// AVX-512, 1-8 words: one chunk under a mask of n bits.
	MOVL        $1, R8
	SHLL        CX, R8
	DECL        R8
	KMOVW       R8, K1
	VMOVDQU64.Z (SI)(AX*8), K1, Z16
	VPXORQ.Z    (DI)(AX*8), Z16, K1, Z16
	VPTESTMQ    (DX)(AX*8), Z16, K1, K2
	KORTESTW    K2, K2
	SETEQ       ret+40(FP)
	RET

rcall512:
	LEAQ (SI)(AX*8), SI
	LEAQ (DI)(AX*8), DI
	LEAQ (DX)(AX*8), DX
	JMP  rangeCall<>(SB)

rnot512:
	// CX is n-9.
	CMPB ·cmpImpl(SB), $cmpAVX2
	JNE  rsse2
	CMPQ CX, $7
	JA   r2other

	// AVX2, 9-16 words: [Start, Start+8) and [End-8, End), the common
	// megaflow ranges. Every memory operand is a plain load (a load
	// with an indexed address is one micro-op; an indexed memory
	// operand of a three-operand VEX instruction costs Intel CPUs a
	// second one), and no addresses are computed first.
	LOADS(VMOVDQU, 0, -64, Y0, Y1, Y4, Y5, Y8, Y9)
	LOADS(VMOVDQU, 32, -32, Y2, Y3, Y6, Y7, Y10, Y11)
	VPXOR   Y4, Y0, Y0
	VPXOR   Y5, Y1, Y1
	VPXOR   Y6, Y2, Y2
	VPXOR   Y7, Y3, Y3
	VPAND   Y8, Y0, Y0
	VPAND   Y9, Y1, Y1
	VPAND   Y10, Y2, Y2
	VPAND   Y11, Y3, Y3
	VPOR    Y1, Y0, Y0
	VPOR    Y3, Y2, Y2
	VPOR    Y2, Y0, Y0
	VPTEST  Y0, Y0
	VZEROUPPER
	SETEQ   ret+40(FP)
	RET

r2other:
	ADDQ $9, CX // n
	CMPQ CX, $4
	JB   rcall2 // 0-3 words
	CMPQ CX, $8
	JA   rcall2 // more than 16 words

	// AVX2, 4-8 words: [Start, Start+4) and [End-4, End), loaded as
	// above.
	LOADS(VMOVDQU, 0, -32, Y0, Y1, Y2, Y3, Y4, Y5)
	VPXOR   Y2, Y0, Y0
	VPXOR   Y3, Y1, Y1
	VPAND   Y4, Y0, Y0
	VPAND   Y5, Y1, Y1
	VPOR    Y1, Y0, Y0
	VPTEST  Y0, Y0
	VZEROUPPER
	SETEQ   ret+40(FP)
	RET

rsse2:
	ADDQ $9, CX // n

rcall2:
	LEAQ (SI)(AX*8), SI
	LEAQ (DI)(AX*8), DI
	LEAQ (DX)(AX*8), DX
	JMP  rangeCall<>(SB)

rempty:
	MOVB $1, ret+40(FP)
	RET

// rangeCall<> is equalMaskedRange's way to the bodies, for the ranges
// it does not compare in line: equalMaskedRange jumps here (a tail
// call: it has no frame, so its arguments are this function's) with
// SI, DI, DX and CX set for a body, and this calls the body cmpImpl
// chooses. equalMaskedRange itself makes no call, so it needs no frame
// (no frame pointer saved and restored on the common path).
TEXT rangeCall<>(SB), NOSPLIT, $0-41
	CMPB ·cmpImpl(SB), $cmpAVX512
	JEQ  rc512
	CMPB ·cmpImpl(SB), $cmpAVX2
	JEQ  rc2
	CALL sse2Body<>(SB)
	MOVB AL, ret+40(FP)
	RET

rc512:
	CALL avx512Body<>(SB)
	MOVB AL, ret+40(FP)
	RET

rc2:
	CALL avx2Body<>(SB)
	MOVB AL, ret+40(FP)
	RET
