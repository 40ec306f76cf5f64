//go:build amd64 && !purego

#include "textflag.h"

// func equalMaskedSSE2(a, b, m *uint64, n int) bool
TEXT ·equalMaskedSSE2(SB), NOSPLIT, $0-33
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ m+16(FP), DX
	MOVQ n+24(FP), CX
	PXOR X0, X0
	PXOR X4, X4
	XORQ AX, AX

loop4:
	CMPQ CX, $4
	JB   loop1
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
	JMP   loop4

loop1:
	TESTQ CX, CX
	JZ    done
	MOVQ  0(SI), BX
	XORQ  0(DI), BX
	ANDQ  0(DX), BX
	ORQ   BX, AX
	ADDQ  $8, SI
	ADDQ  $8, DI
	ADDQ  $8, DX
	DECQ  CX
	JMP   loop1

done:
	POR    X4, X0
	MOVQ   X0, BX
	ORQ    BX, AX
	PSRLDQ $8, X0
	MOVQ   X0, BX
	ORQ    BX, AX
	TESTQ  AX, AX
	SETEQ  ret+32(FP)
	RET
