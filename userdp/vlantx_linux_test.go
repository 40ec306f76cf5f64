package userdp

import "testing"

// TestVLANTxProgramShape checks the hand-assembled egress program: every
// jump lands inside it, on the instruction that returns TC_ACT_OK, the
// length check or the push, and it ends with exit.
func TestVLANTxProgramShape(t *testing.T) {
	p := vlanTxProgram()
	out := len(p) - 2
	if p[out].code != bpfMov64Imm || p[out].imm != 0 || p[len(p)-1].code != bpfExit {
		t.Fatalf("program does not end with r0 = 0; exit: %+v", p[out:])
	}
	jumps := 0
	for i, in := range p {
		switch in.code {
		case bpfJeqImm, bpfJneImm, bpfJneReg, bpfJeqReg, bpfJltImm:
			jumps++
			target := i + 1 + int(in.off)
			switch {
			case target == out:
			case in.code == bpfJeqImm && p[target].code == bpfLdxW && p[target].off == skbLenOff:
			case in.code == bpfJeqReg && p[target+3].code == bpfCall && p[target+3].imm == bpfFuncSkbVLANPush:
			default:
				t.Errorf("jump at %d goes to %d, not to the exit (%d), the length check or the push", i, target, out)
			}
		}
	}
	if jumps != 7 {
		t.Errorf("%d jumps, want 7", jumps)
	}
}
