//go:build arm64 && !purego

#include "textflag.h"

// func crc32cWordsARM64(crc uint32, p *uint64, n int) uint32
TEXT ·crc32cWordsARM64(SB), NOSPLIT, $0-28
	MOVWU crc+0(FP), R0
	MOVD  p+8(FP), R1
	MOVD  n+16(FP), R2

loop:
	CBZ     R2, done
	MOVD.P  8(R1), R3
	CRC32CX R3, R0
	SUB     $1, R2, R2
	B       loop

done:
	MOVW R0, ret+24(FP)
	RET
