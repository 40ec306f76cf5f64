package userdp

import (
	"testing"
)

// TestTruncCutlen checks trunc as the kernel does it: the action records
// how many bytes to cut (cutlen = skb->len - max_len, only when the
// packet is longer), the output cuts that many from the packet as it is
// then (no less than the Ethernet header), and cutlen survives a shorter
// trunc and a recirculation.
func TestTruncCutlen(t *testing.T) {
	h := newHarness(t, 3)
	f := udpFrame(1, 2, 1000) // 60 bytes
	// A later, longer trunc does not undo the first.
	h.mustExecute(f, "trunc(30),trunc(2000),2")
	h.expectFrame(2, f[:30])
	// A push after the trunc: the label's 4 bytes stay (cutlen is 30).
	h.mustExecute(f, "trunc(30),push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2")
	got := h.expect(2)
	if len(got) != 34 {
		t.Errorf("trunc(30),push_mpls: %d bytes, want 34 (cutlen 30 of 64)", len(got))
	}
	// A pop after the trunc: cut to no less than the Ethernet header.
	tagged := vlanFrame(f, [2]uint16{EthTypeVLAN, 5}, [2]uint16{EthTypeVLAN, 6})
	h.mustExecute(tagged, "trunc(14),pop_vlan,pop_vlan,2")
	if got := h.expect(2); len(got) != 14 {
		t.Errorf("trunc(14) then two pops: %d bytes, want 14 (cutlen 50 of 60)", len(got))
	}
	// cutlen crosses a recirculation.
	h.put("recirc_id(1),in_port(1),"+anyEth+"eth_type(0x0800),ipv4(frag=no)", "3")
	h.mustExecute(f, "trunc(40),recirc(1)")
	h.expectFrame(3, f[:40])
	// cutlen applies to the next output only.
	h.mustExecute(f, "trunc(40),2,3")
	h.expectFrame(2, f[:40])
	h.expectFrame(3, f)
}
