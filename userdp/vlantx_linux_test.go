package userdp

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// TestVLANTxProgramShape checks the assembled egress program, as the
// kernel receives it (encoded, its jumps resolved): every jump lands
// inside it, on the instruction that returns TC_ACT_OK, the length check
// or the push, and it ends with exit.
func TestVLANTxProgramShape(t *testing.T) {
	// cilium/ebpf's encoder takes binary.LittleEndian or BigEndian.
	var order binary.ByteOrder = binary.LittleEndian
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 {
		order = binary.BigEndian
	}
	var raw bytes.Buffer
	if err := vlanTxProgram().Marshal(&raw, order); err != nil {
		t.Fatalf("encoding the program: %v", err)
	}
	p, err := asm.AppendInstructions(nil, bytes.NewReader(raw.Bytes()), order, "linux")
	if err != nil {
		t.Fatalf("decoding the program: %v", err)
	}
	out := len(p) - 2
	if p[out].OpCode != asm.Mov.Op(asm.ImmSource) || p[out].Dst != asm.R0 || p[out].Constant != 0 || p[len(p)-1].OpCode.JumpOp() != asm.Exit {
		t.Fatalf("program does not end with r0 = 0; exit: %v", p[out:])
	}
	jumps := 0
	for i, in := range p {
		op := in.OpCode.JumpOp()
		if in.OpCode.Class() != asm.JumpClass || op == asm.Call || op == asm.Exit {
			continue
		}
		jumps++
		target := i + 1 + int(in.Offset)
		switch {
		case target < 0 || target >= len(p):
			t.Errorf("jump at %d goes to %d, outside the %d instructions", i, target, len(p))
		case target == out:
		case op == asm.JEq && in.OpCode.Source() == asm.ImmSource && p[target].OpCode == asm.LoadMemOp(asm.Word) && p[target].Offset == skbLenOff:
		case op == asm.JEq && in.OpCode.Source() == asm.RegSource && target+3 < len(p) && p[target+3].IsBuiltinCall() && p[target+3].Constant == int64(asm.FnSkbVlanPush):
		default:
			t.Errorf("jump at %d goes to %d, not to the exit (%d), the length check or the push", i, target, out)
		}
	}
	if jumps != 7 {
		t.Errorf("%d jumps, want 7", jumps)
	}
}
