#include "textflag.h"

// func prefetch(addr uintptr)
TEXT ·prefetch(SB), NOSPLIT, $0-8
	MOVQ	addr+0(FP), AX
	PREFETCHT0	(AX)
	RET

// func prefetchLines(addrs []uintptr)
TEXT ·prefetchLines(SB), NOSPLIT, $0-24
	MOVQ	addrs_base+0(FP), SI
	MOVQ	addrs_len+8(FP), CX
	TESTQ	CX, CX
	JLE	done
loop:
	MOVQ	(SI), AX
	PREFETCHT0	(AX)
	ADDQ	$8, SI
	DECQ	CX
	JNZ	loop
done:
	RET
