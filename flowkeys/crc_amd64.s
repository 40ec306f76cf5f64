//go:build amd64 && !purego

#include "textflag.h"

// func crc32cWordsSSE42(crc uint32, p *uint64, n int) uint32
TEXT ·crc32cWordsSSE42(SB), NOSPLIT, $0-28
	MOVL crc+0(FP), AX
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), CX

loop4:
	CMPQ CX, $4
	JB   loop1
	CRC32Q 0(SI), AX
	CRC32Q 8(SI), AX
	CRC32Q 16(SI), AX
	CRC32Q 24(SI), AX
	ADDQ $32, SI
	SUBQ $4, CX
	JMP  loop4

loop1:
	TESTQ CX, CX
	JZ    done
	CRC32Q 0(SI), AX
	ADDQ $8, SI
	DECQ CX
	JMP  loop1

done:
	MOVL AX, ret+24(FP)
	RET
