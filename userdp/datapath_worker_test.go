package userdp

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// tcpFrame is testIPv4 with a TCP header carrying flags (the low 12
// bits of the offset/flags word) and the MAC addresses 00:..:src and
// 00:..:dst.
func tcpFrame(t *testing.T, src, dst byte, flags uint16, fragOff uint16) []byte {
	t.Helper()
	f := testIPv4(newRand(t), header.IPProtoTCP, 6, fragOff)
	copy(f[0:6], []byte{0, 0, 0, 0, 0, dst})
	copy(f[6:12], []byte{0, 0, 0, 0, 0, src})
	ip := f[14:]
	binary.BigEndian.PutUint16(ip[20:], 1234)
	binary.BigEndian.PutUint16(ip[22:], 80)
	binary.BigEndian.PutUint16(ip[20+12:], 5<<12|flags&0x0fff)
	fixIPv4(f, 14)
	return f
}

// flowStats dumps the datapath's single flow with key text containing
// want and returns its statistics.
func (h *harness) flowStats(want string) odp.FlowStats {
	h.t.Helper()
	var found []odp.FlowStats
	err := h.dp.DumpFlows(context.Background(), odp.DumpOptions{}, func(f *odp.Flow) error {
		if containsAll(odp.FormatKey(f.Key, f.Mask, false), want) {
			found = append(found, f.Stats)
		}
		return nil
	})
	if err != nil {
		h.t.Fatalf("dump: %v", err)
	}
	if len(found) != 1 {
		h.t.Fatalf("%d flows match %q, want 1", len(found), want)
	}
	return found[0]
}

// TestFlowStatsTCPFlags checks the kernel's rule (ovs_flow_stats_update
// with the packet's key->tp.flags): a flow collects the TCP flags of
// every TCP packet it matches, even when its mask does not mention TCP
// or IP; later fragments and non-TCP packets add nothing; and only the
// low 8 bits are reported, as the kernel's u8 OVS_FLOW_ATTR_TCP_FLAGS.
func TestFlowStatsTCPFlags(t *testing.T) {
	h := newHarness(t, 3)
	// A learning-switch flow: Ethernet addresses only.
	h.put("in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02)", "2")
	// A flow with a TCP mask that covers one bit of the destination port.
	h.put("in_port(3),"+anyEth+"eth_type(0x0800),ipv4(proto=6,frag=no),tcp(dst=0/0x8000),tcp_flags(0/0)", "2")
	// A flow that sees only fragments and UDP.
	h.put("in_port(2),"+anyEth+"eth_type(0x0800),ipv4(src=0.0.0.0/0.0.0.0)", "1")

	const syn, ack, psh, fin = 0x002, 0x010, 0x008, 0x001
	h.send(1, tcpFrame(t, 1, 2, syn, 0), tcpFrame(t, 1, 2, ack|psh, 0), tcpFrame(t, 1, 2, fin|ack, 0))
	// NS and the reserved bits: counted, but not reported (8 bits).
	h.send(3, tcpFrame(t, 1, 2, 0xfff, 0))
	// A later fragment's payload is no TCP header (flags 0xff where the
	// header would be); a UDP packet has no flags.
	later := tcpFrame(t, 5, 6, 0xff, 0x0010)
	h.send(2, later, udpFrame(5, 6, 99))
	for i := 0; i < 4; i++ {
		h.expect(2)
	}
	h.expect(1)
	h.expect(1)
	h.waitStats(6)

	if st := h.flowStats("in_port(1)"); st.Packets != 3 || st.TCPFlags != syn|ack|psh|fin {
		t.Errorf("learning-switch flow: %d packets, tcp_flags %#x, want 3 and %#x", st.Packets, st.TCPFlags, syn|ack|psh|fin)
	}
	if st := h.flowStats("in_port(3)"); st.Packets != 1 || st.TCPFlags != 0xff {
		t.Errorf("tcp flow: %d packets, tcp_flags %#x, want 1 and 0xff (the kernel reports 8 bits)", st.Packets, st.TCPFlags)
	}
	if st := h.flowStats("in_port(2)"); st.Packets != 2 || st.TCPFlags != 0 {
		t.Errorf("fragment/UDP flow: %d packets, tcp_flags %#x, want 2 and 0", st.Packets, st.TCPFlags)
	}

	// A first fragment carries the TCP header: its flags count.
	h.send(2, tcpFrame(t, 5, 6, syn, 0x2000))
	h.expect(1)
	h.waitStats(7)
	if st := h.flowStats("in_port(2)"); st.Packets != 3 || st.TCPFlags != syn {
		t.Errorf("after a first fragment: %d packets, tcp_flags %#x, want 3 and %#x", st.Packets, st.TCPFlags, syn)
	}
}

// vlanFrame inserts VLAN tags (TPID, TCI pairs, outermost first) after
// the Ethernet addresses of f.
func vlanFrame(f []byte, tags ...[2]uint16) []byte {
	out := append([]byte(nil), f[:12]...)
	for _, tg := range tags {
		out = binary.BigEndian.AppendUint16(out, tg[0])
		out = binary.BigEndian.AppendUint16(out, tg[1])
	}
	return append(out, f[12:]...)
}

// TestFlowStatsVLANBytes checks that a flow counts the whole frame,
// VLAN tags included, as the kernel does (skb->len plus VLAN_HLEN for
// the tag it holds out of band; a second tag is in skb->len).
func TestFlowStatsVLANBytes(t *testing.T) {
	h := newHarness(t, 2)
	h.put("in_port(1),"+anyEth+"eth_type(0x8100),vlan(vid=20),encap(eth_type(0x0800),ipv4(frag=no))", "2")
	h.put("in_port(1),"+anyEth+"eth_type(0x88a8),vlan(vid=40),encap(eth_type(0x8100),vlan(vid=41),encap(eth_type(0x0800),ipv4(frag=no)))", "2")
	h.put("in_port(1),"+anyEth+"eth_type(0x0800),ipv4(frag=no)", "2")
	plain := udpFrame(1, 2, 1000)
	one := vlanFrame(plain, [2]uint16{header.EtherTypeVLAN, 20})
	two := vlanFrame(plain, [2]uint16{header.EtherTypeQinQ, 40}, [2]uint16{header.EtherTypeVLAN, 41})
	h.send(1, one, one, two, plain)
	for i := 0; i < 4; i++ {
		h.expect(2)
	}
	h.waitStats(4)
	if st := h.flowStats("vlan(vid=20"); st.Packets != 2 || st.Bytes != 2*uint64(len(one)) {
		t.Errorf("802.1Q flow: %d packets %d bytes, want 2 and %d", st.Packets, st.Bytes, 2*len(one))
	}
	if st := h.flowStats("vlan(vid=40"); st.Packets != 1 || st.Bytes != uint64(len(two)) {
		t.Errorf("802.1ad flow: %d packets %d bytes, want 1 and %d", st.Packets, st.Bytes, len(two))
	}
	if st := h.flowStats("),eth_type(0x0800)"); st.Packets != 1 || st.Bytes != uint64(len(plain)) {
		t.Errorf("untagged flow: %d packets %d bytes, want 1 and %d", st.Packets, st.Bytes, len(plain))
	}
}
