package userdp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// recvUpcall receives one upcall from r or fails.
func recvUpcall(t *testing.T, r odp.UpcallReceiver) odp.Upcall {
	t.Helper()
	ups := make([]odp.Upcall, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := r.Recv(ctx, ups)
	if err != nil || n != 1 {
		t.Fatalf("recv upcall: %d %v", n, err)
	}
	return ups[0]
}

// TestActionPushPopEth checks pop_eth and push_eth as the kernel's: the
// L3 packet is the frame without its 14 bytes; push_eth puts back a
// header with skb->protocol as its EtherType; an L3 packet output to an
// Ethernet port is dropped (counted); sets of L3 fields work on it; a
// recirculated L3 packet is looked up and missed with a key without eth.
func TestActionPushPopEth(t *testing.T) {
	h := newHarness(t, 3)
	rs, err := h.dp.Upcalls(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	f := udpFrame(1, 2, 1000)
	src, dst := [6]byte{2, 0, 0, 0, 0, 0xaa}, [6]byte{2, 0, 0, 0, 0, 0xbb}
	withEth := func(ip []byte, et uint16) []byte {
		out := append(append(append([]byte(nil), dst[:]...), src[:]...), byte(et>>8), byte(et))
		return append(out, ip...)
	}
	const push = "push_eth(src=02:00:00:00:00:aa,dst=02:00:00:00:00:bb)"

	h.mustExecute(f, "pop_eth,"+push+",2")
	h.expectFrame(2, withEth(f[14:], header.EtherTypeIPv4))

	// Output of the L3 packet: dropped by the port type.
	h.mustExecute(f, "pop_eth,2")
	h.expectNone(2)
	if d := h.dp.Drops(); d.NoEthernet != 1 {
		t.Errorf("drops %+v, want 1 NoEthernet", d)
	}
	// Not the last action: the rest of the list runs.
	h.mustExecute(f, "pop_eth,3,"+push+",2")
	h.expectFrame(2, withEth(f[14:], header.EtherTypeIPv4))
	h.expectNone(3)

	// set(ipv4) finds the IPv4 header at the start of the L3 packet.
	want := withEth(clone(f[14:]), header.EtherTypeIPv4)
	want[14+8] = 7
	fixIPv4(want, 14)
	h.mustExecute(f, "pop_eth,set(ipv4(ttl=7)),"+push+",2")
	h.expectFrame(2, want)
	// dec_ttl likewise.
	want = withEth(clone(f[14:]), header.EtherTypeIPv4)
	want[14+8] = 63
	fixIPv4(want, 14)
	h.mustExecute(f, "pop_eth,dec_ttl(le_1(drop)),"+push+",2")
	h.expectFrame(2, want)

	// Recirculation: the L3 packet's key has no eth; a flow for it
	// matches, and a miss carries the key and the L3 packet.
	h.put("recirc_id(5),in_port(1),eth_type(0x0800),ipv4(frag=no)", push+",3")
	h.mustExecute(f, "pop_eth,recirc(5)")
	h.expectFrame(3, withEth(f[14:], header.EtherTypeIPv4))
	h.mustExecute(f, "pop_eth,recirc(6)")
	u := recvUpcall(t, rs[0])
	if u.Kind != odp.UpcallMiss || !bytes.Equal(u.Packet, f[14:]) {
		t.Fatalf("miss %v, packet % x, want the L3 packet % x", u.Kind, u.Packet, f[14:])
	}
	k, err := odp.ToFlowKeysExact(u.Key)
	if err != nil {
		t.Fatal(err)
	}
	if k.MacProto != flowkeys.MacProtoNone || k.EthType != header.EtherTypeIPv4 || k.RecircID != 6 || k.IPProto != header.IPProtoUDP || k.TpSrc != 1000 {
		t.Errorf("L3 miss key %s", odp.FormatKey(u.Key, nil, false))
	}
	for _, a := range u.Key {
		if a.KeyType() == odp.KeyEthernet {
			t.Errorf("L3 miss key %s has eth()", odp.FormatKey(u.Key, nil, false))
		}
	}
	// A userspace action sends the L3 packet, trunc cutting it.
	h.mustExecute(f, "pop_eth,trunc(20),userspace(pid=0)")
	if u = recvUpcall(t, rs[0]); u.Kind != odp.UpcallAction || !bytes.Equal(u.Packet, f[14:34]) {
		t.Errorf("userspace upcall %v % x, want the first 20 bytes of the L3 packet", u.Kind, u.Packet)
	}

	// Execute of an L3 packet: a key with eth_type and no eth.
	err = h.dp.Execute(context.Background(), &odp.Packet{Data: f[14:], Key: odp.FlowKey{odp.InPort(1), odp.Ethertype(header.EtherTypeIPv4)},
		Actions: odp.Actions{odp.PushEth{Src: src, Dst: dst}, odp.Output{Port: 2}}})
	if err != nil {
		t.Fatalf("execute of an L3 packet: %v", err)
	}
	h.expectFrame(2, withEth(f[14:], header.EtherTypeIPv4))
}

// TestPushPopEthValidation checks which lists the kernel's
// __ovs_nla_copy_actions accepts and which it refuses (EINVAL).
func TestPushPopEthValidation(t *testing.T) {
	h := newHarness(t, 2)
	ip := "in_port(1)," + anyEth + "eth_type(0x0800),ipv4(frag=no)"
	l3 := "in_port(1),eth_type(0x0800),ipv4(frag=no)"
	lldp := "in_port(1)," + anyEth + "eth_type(0x88cc)"
	vlan := "in_port(1)," + anyEth + "eth_type(0x8100),vlan(vid=9),encap(eth_type(0x0800),ipv4(frag=no))"
	const push = "push_eth(src=02:00:00:00:00:aa,dst=02:00:00:00:00:bb)"
	const mpls = "label=7,tc=0,ttl=64,bos=1,eth_type=0x8847"
	for _, c := range []struct {
		key, acts string
		ok        bool
	}{
		{ip, "pop_eth,2", true},
		{ip, push + ",2", false}, // has an Ethernet header
		{ip, "pop_eth,pop_eth,2", false},
		{ip, "pop_eth," + push + ",pop_eth,2", true},
		{ip, "pop_eth,push_vlan(vid=3,pcp=0),2", false},
		{ip, "pop_eth,pop_vlan,2", false},
		{ip, "pop_eth,set(eth(src=02:00:00:00:00:01)),2", false},
		{ip, "pop_eth,set(ipv4(ttl=3)),2", true},
		{ip, "pop_eth,push_mpls(" + mpls + "),2", true},
		{ip, "push_vlan(vid=3,pcp=0),pop_eth,2", false}, // a VLAN tag
		{vlan, "pop_eth,2", false},
		{vlan, "pop_vlan,pop_eth,2", true},
		{l3, push + ",2", true},
		{l3, "pop_eth,2", false},
		{l3, "clone(" + push + ",2),2", true},
		{l3, "clone(" + push + "),pop_eth,2", false}, // a nested list's key state stays in it
		// add_mpls: without the L3 tunnel flag, in front of the packet
		// whatever it is; with it, after the MAC header as push_mpls.
		{lldp, "add_mpls(" + mpls + "),2", true},
		{lldp, "add_mpls(" + mpls + ",tun_flags=0x1),2", false},
		{vlan, "add_mpls(" + mpls + ",tun_flags=0x1),2", false},
		{vlan, "add_mpls(" + mpls + "),2", true},
		{ip, "add_mpls(" + mpls + "),push_vlan(vid=3,pcp=0),2", false}, // no Ethernet header after it
		{ip, "add_mpls(" + mpls + "),pop_eth,2", false},
		{ip, "add_mpls(" + mpls + ")," + push + ",2", true},
		{ip, "add_mpls(" + mpls + "),pop_mpls(eth_type=0x6558),2", true},
		{ip, "add_mpls(" + mpls + "),pop_mpls(eth_type=0x6558),pop_mpls(eth_type=0x800),2", false}, // one label
		{ip, "add_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x800),2", false},                        // not MPLS
		{ip, "add_mpls(" + mpls + ",tun_flags=0x1),2", true},
		{l3, "add_mpls(" + mpls + ",tun_flags=0x1),2", true},
	} {
		h.checkPut(c.key, c.acts, c.ok)
	}
}

// putErr puts the flow key (with masks) and acts, flushes the flows, and
// returns the put's error.
func (h *harness) putErr(key, acts string) error {
	h.t.Helper()
	_, err := h.dp.PutFlow(context.Background(), parseFlow(h.t, key, acts), odp.PutCreate)
	h.dp.FlushFlows(context.Background())
	return err
}

// checkPut fails unless putting key and acts succeeds (ok) or is EINVAL
// (the kernel's answers).
func (h *harness) checkPut(key, acts string, ok bool) {
	h.t.Helper()
	switch err := h.putErr(key, acts); {
	case ok && err != nil:
		h.t.Errorf("%s actions %s: %v, the kernel accepts it", key, acts, err)
	case !ok && !errors.Is(err, syscall.EINVAL):
		h.t.Errorf("%s actions %s: %v, the kernel says EINVAL", key, acts, err)
	}
}

// TestActionAddMPLS checks add_mpls as the kernel's: without the L3
// tunnel flag the label goes in front of the Ethernet header and the
// packet becomes L3 MPLS (push_eth makes it Ethernet over MPLS; pop_mpls
// with EtherType 0x6558 gives back the frame); with the flag it is
// push_mpls; an L3 packet gets the label in front.
func TestActionAddMPLS(t *testing.T) {
	h := newHarness(t, 3)
	rs, err := h.dp.Upcalls(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	f := udpFrame(1, 2, 1000)
	const lse = 100<<12 | 1<<8 | 64 // label 100, tc 0, bos 1, ttl 64
	label := binary.BigEndian.AppendUint32(nil, lse)
	const add = "add_mpls(label=100,tc=0,ttl=64,bos=1,eth_type=0x8847)"
	const push = "push_eth(src=02:00:00:00:00:aa,dst=02:00:00:00:00:bb)"
	eth := []byte{2, 0, 0, 0, 0, 0xbb, 2, 0, 0, 0, 0, 0xaa, 0x88, 0x47}

	h.mustExecute(f, add+","+push+",2")
	h.expectFrame(2, append(append(clone(eth), label...), f...))
	h.mustExecute(f, add+",2")
	h.expectNone(2)
	if d := h.dp.Drops(); d.NoEthernet != 1 {
		t.Errorf("drops %+v, want 1 NoEthernet", d)
	}
	h.mustExecute(f, add+",pop_mpls(eth_type=0x6558),2")
	h.expectFrame(2, f)

	// With the L3 tunnel flag: push_mpls.
	mp := append(clone(f[:12]), 0x88, 0x47)
	mp = append(append(mp, label...), f[14:]...)
	h.mustExecute(f, "add_mpls(label=100,tc=0,ttl=64,bos=1,eth_type=0x8847,tun_flags=0x1),2")
	h.expectFrame(2, mp)

	// On an L3 packet, with or without the flag: in front of it.
	want := append(append(clone(eth), label...), f[14:]...)
	h.mustExecute(f, "pop_eth,"+add+","+push+",2")
	h.expectFrame(2, want)
	h.mustExecute(f, "pop_eth,add_mpls(label=100,tc=0,ttl=64,bos=1,eth_type=0x8847,tun_flags=0x1),"+push+",2")
	h.expectFrame(2, want)
	h.mustExecute(f, "pop_eth,push_mpls(label=100,tc=0,ttl=64,bos=1,eth_type=0x8847),"+push+",2")
	h.expectFrame(2, want)

	// The recirculated key: L3 MPLS, the label in it.
	h.mustExecute(f, add+",recirc(9)")
	u := recvUpcall(t, rs[0])
	k, err := odp.ToFlowKeysExact(u.Key)
	if err != nil {
		t.Fatal(err)
	}
	if k.MacProto != flowkeys.MacProtoNone || k.EthType != header.EtherTypeMPLS || k.MPLSLSE[0] != lse || !bytes.Equal(u.Packet, append(clone(label), f...)) {
		t.Errorf("add_mpls miss: key %s, packet % x", odp.FormatKey(u.Key, nil, false), u.Packet)
	}
}

// TestSetCTMarkDrops: set(ct_mark) and set(ct_label) are accepted, as
// the kernel's validation accepts them, and drop every packet, as its
// execute_masked_set_action fails them.
func TestSetCTMarkDrops(t *testing.T) {
	h := newHarness(t, 2)
	f := udpFrame(1, 2, 1000)
	h.mustExecute(f, "set(ct_mark(0x1)),2")
	h.mustExecute(f, "set(ct_label(0x1)),2")
	h.expectNone(2)
	if d := h.dp.Drops(); d.ActionErrors != 2 {
		t.Errorf("drops %+v, want 2 action errors", d)
	}
}

// TestReserve: a push with too little headroom moves the packet back in
// its buffer when the buffer has the room (as skb_cow_head makes room),
// and fails with errNoHeadroom when it has not.
func TestReserve(t *testing.T) {
	pkt := []byte{0x45, 1, 2, 3, 4, 5}
	buf := make([]byte, 4+len(pkt)+20)
	copy(buf[4:], pkt)
	f := frameBuf{Buf: buf, Off: 4, Len: len(pkt)}
	e := odp.Ethernet{Src: [6]byte{1}, Dst: [6]byte{2}}
	if err := pushEth(&f, true, &e, header.EtherTypeIPv4); err != nil {
		t.Fatal(err)
	}
	want := append([]byte{2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0}, pkt...)
	if !bytes.Equal(f.Bytes(), want) {
		t.Errorf("after a moving push: % x, want % x", f.Bytes(), want)
	}
	full := frameBuf{Buf: append([]byte{0, 0}, pkt...), Off: 2, Len: len(pkt)}
	if err := pushEth(&full, true, &e, header.EtherTypeIPv4); !errors.Is(err, errNoHeadroom) {
		t.Errorf("push into a full buffer: %v, want errNoHeadroom", err)
	}
	if !bytes.Equal(full.Bytes(), pkt) {
		t.Errorf("a failed push changed the packet: % x", full.Bytes())
	}
}

// TestUserspaceKeyAsKernel: a userspace action's upcall carries the key
// as the kernel's output_userspace does, not extracted again: after
// pop_eth and push_eth the old Ethernet addresses (the key is stale but
// for its MAC protocol), after push_vlan on an untagged frame the tag
// and a later set's TTL (the kernel keeps that key valid).
func TestUserspaceKeyAsKernel(t *testing.T) {
	h := newHarness(t, 2)
	rs, err := h.dp.Upcalls(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	f := udpFrame(1, 2, 1000)
	h.mustExecute(f, "pop_eth,push_eth(src=02:00:00:00:00:aa,dst=02:00:00:00:00:bb),userspace(pid=1)")
	u := recvUpcall(t, rs[0])
	k, err := odp.ToFlowKeysExact(u.Key)
	if err != nil {
		t.Fatal(err)
	}
	if k.MacProto != flowkeys.MacProtoEthernet || k.EthSrc != [6]byte(f[6:12]) || k.EthDst != [6]byte(f[0:6]) || u.Packet[11] != 0xaa {
		t.Errorf("after pop_eth,push_eth: key %s, packet % x", odp.FormatKey(u.Key, nil, false), u.Packet[:14])
	}
	h.mustExecute(f, "push_vlan(vid=5,pcp=0),set(ipv4(ttl=3)),userspace(pid=1)")
	u = recvUpcall(t, rs[0])
	if k, err = odp.ToFlowKeysExact(u.Key); err != nil {
		t.Fatal(err)
	}
	if k.VLANTCI != 0x1005 || k.VLANTPID != 0x8100 || k.IPTTL != 3 {
		t.Errorf("after push_vlan,set(ipv4): key %s", odp.FormatKey(u.Key, nil, false))
	}
}
