package odp

import "testing"

// TestTCPState checks the kernel-to-Open vSwitch TCP state mapping.
func TestTCPState(t *testing.T) {
	for k, want := range map[uint8]CTTCPState{
		kTCPNone: CTTCPClosed, kTCPSynSent: CTTCPSynSent, kTCPSynRecv: CTTCPSynRecv,
		kTCPEstablished: CTTCPEstablished, kTCPFinWait: CTTCPFinWait1, kTCPCloseWait: CTTCPCloseWait,
		kTCPLastAck: CTTCPLastAck, kTCPTimeWait: CTTCPTimeWait, kTCPClose: CTTCPClosing,
		kTCPSynSent2: CTTCPSynSent, 10: CTTCPClosed, 255: CTTCPClosed,
	} {
		if got := CTTCPStateOfKernel(k); got != want {
			t.Errorf("kernel state %d: %v, want %v", k, got, want)
		}
	}
}
