package userdp

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// Each action is executed (Datapath.Execute, as if the packet came in on
// port 1) and the frame received on the output port is compared with the
// expected frame, built by editing the input's bytes directly and
// recomputing every checksum from scratch with the reference functions
// of packet_helpers_test.go. Incremental checksums must equal the full
// recomputation.

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// expectFrame fails unless the next frame on port equals want.
func (h *harness) expectFrame(port uint32, want []byte) []byte {
	h.t.Helper()
	got := h.expect(port)
	if !bytes.Equal(got, want) {
		h.t.Errorf("port %d frame:\n got % x\nwant % x", port, got, want)
	}
	return got
}

func (h *harness) mustExecute(frame []byte, acts string) {
	h.t.Helper()
	if err := h.execute(frame, acts); err != nil {
		h.t.Fatalf("execute %s: %v", acts, err)
	}
}

func TestActionOutputDropTrunc(t *testing.T) {
	h := newHarness(t, 3)
	f := udpFrame(1, 2, 1000)
	h.mustExecute(f, "2")
	h.expectFrame(2, f)
	h.mustExecute(f, "2,3")
	h.expectFrame(2, f)
	h.expectFrame(3, f)
	h.execActions(f, odp.Actions{odp.Drop{}})
	h.expectNone(2)
	if d := h.dp.Drops(); d.ExplicitDrops != 1 {
		t.Errorf("drops %+v, want 1 explicit", d)
	}
	// trunc applies to the next output only.
	h.mustExecute(f, "trunc(20),2,3")
	h.expectFrame(2, f[:20])
	h.expectFrame(3, f)
	// Shorter than 14 is rejected when put (EINVAL), tested in
	// TestFlowOperations; a trunc longer than the packet changes nothing.
	h.mustExecute(f, "trunc(1000),2")
	h.expectFrame(2, f)
}

func TestActionSetIPv4(t *testing.T) {
	h := newHarness(t, 2)
	f := udpFrame(1, 2, 1000)

	// TTL only (set_masked): only the TTL and the header checksum change.
	want := clone(f)
	want[14+8] = 5
	fixIPv4(want, 14)
	h.mustExecute(f, "set(ipv4(ttl=5)),2")
	got := h.expectFrame(2, want)
	checkIPv4(t, got, 14)
	if !bytes.Equal(got[14+12:], f[14+12:]) {
		t.Errorf("TTL set changed bytes after the header checksum")
	}

	// All four fields: addresses change the UDP checksum too.
	want = clone(f)
	want[14+1] = 0x28
	want[14+8] = 9
	copy(want[14+12:], []byte{192, 168, 1, 1})
	copy(want[14+16:], []byte{172, 16, 0, 9})
	fixIPv4(want, 14)
	h.mustExecute(f, "set(ipv4(src=192.168.1.1,dst=172.16.0.9,tos=0x28,ttl=9)),2")
	checkIPv4(t, h.expectFrame(2, want), 14)

	// Partly masked source.
	want = clone(f)
	copy(want[14+12:], []byte{7, 7, 0, 1})
	fixIPv4(want, 14)
	h.mustExecute(f, "set(ipv4(src=7.7.0.0/255.255.0.0)),2")
	checkIPv4(t, h.expectFrame(2, want), 14)

	// A TCP segment.
	rng := newRand(t)
	tf := testIPv4(rng, header.IPProtoTCP, 30, 0)
	want = clone(tf)
	copy(want[14+16:], []byte{1, 2, 3, 4})
	fixIPv4(want, 14)
	h.mustExecute(tf, "set(ipv4(dst=1.2.3.4)),2")
	checkIPv4(t, h.expectFrame(2, want), 14)
}

func TestActionSetL4(t *testing.T) {
	h := newHarness(t, 2)
	rng := newRand(t)
	protos := map[string]uint8{"tcp": header.IPProtoTCP, "udp": header.IPProtoUDP, "sctp": header.IPProtoSCTP}
	for _, l4 := range []string{"tcp", "udp", "sctp"} {
		c := struct {
			proto uint8
			act   string
		}{protos[l4], "set(" + l4 + "(src=1234,dst=80))"}
		f := testIPv4(rng, c.proto, 16, 0)
		binary.BigEndian.PutUint16(f[34:], 4321) // ports in the key: set(l4) needs them
		if c.proto == header.IPProtoTCP {
			f[34+12] = 5 << 4 // a valid data offset, or the key has no ports
		}
		fixIPv4(f, 14)
		want := clone(f)
		binary.BigEndian.PutUint16(want[34:], 1234)
		binary.BigEndian.PutUint16(want[36:], 80)
		fixIPv4(want, 14)
		h.mustExecute(f, c.act+",2")
		checkIPv4(t, h.expectFrame(2, want), 14)
		// Masked: only the destination's low byte.
		want = clone(f)
		want[37] = 0x42
		fixIPv4(want, 14)
		h.mustExecute(f, c.act[:strings.Index(c.act, "src")]+"dst=0x42/0xff)),2")
		checkIPv4(t, h.expectFrame(2, want), 14)
	}
	// UDP over IPv6.
	f := testIPv6(rng, header.IPProtoUDP, 10)
	binary.BigEndian.PutUint16(f[56:], 4321)
	fixIPv6(f, 14, 54)
	want := clone(f)
	binary.BigEndian.PutUint16(want[54:], 53)
	fixIPv6(want, 14, 54)
	h.mustExecute(f, "set(udp(src=53)),2")
	checkIPv6(t, h.expectFrame(2, want), 14, 54, header.IPProtoUDP)
}

func TestActionSetIPv6(t *testing.T) {
	h := newHarness(t, 2)
	rng := newRand(t)
	f := testIPv6(rng, header.IPProtoTCP, 10)
	want := clone(f)
	copy(want[14+8:], []byte{0x20, 0x01, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	want[14+7] = 3
	fixIPv6(want, 14, 54)
	h.mustExecute(f, "set(ipv6(src=2001:db8::1,hlimit=3)),2")
	checkIPv6(t, h.expectFrame(2, want), 14, 54, header.IPProtoTCP)

	// Traffic class and flow label.
	want = clone(f)
	w := binary.BigEndian.Uint32(want[14:])
	w = 6<<28 | 0x2e<<20 | 0x12345
	binary.BigEndian.PutUint32(want[14:], w)
	h.mustExecute(f, "set(ipv6(label=0x12345,tclass=0x2e)),2")
	h.expectFrame(2, want)
}

func TestActionSetEthPriorityMark(t *testing.T) {
	h := newHarness(t, 3)
	f := udpFrame(1, 2, 1000)
	want := clone(f)
	copy(want[0:6], []byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff})
	copy(want[6:12], []byte{2, 0, 0, 0, 0, 1})
	h.mustExecute(f, "set(eth(src=02:00:00:00:00:01,dst=aa:bb:cc:dd:ee:ff)),2")
	h.expectFrame(2, want)

	// skb_mark and priority are metadata: a recirculation sees them.
	h.put("recirc_id(7),skb_priority(3),skb_mark(0x42),in_port(1),"+anyEth+"eth_type(0x0800)"+anyIPv4, "3")
	h.mustExecute(f, "set(skb_mark(0x42)),set(skb_priority(3)),recirc(7)")
	h.expectFrame(3, f)
}

func TestActionSetICMPARPND(t *testing.T) {
	h := newHarness(t, 2)
	rng := newRand(t)
	// ICMP echo request → echo reply.
	f := testIPv4(rng, header.IPProtoICMP, 8, 0)
	f[34], f[35] = 8, 0
	fixICMP := func(b []byte) {
		seg := b[34:]
		seg[2], seg[3] = 0, 0
		binary.BigEndian.PutUint16(seg[2:], refCsum(seg))
		fixIPv4(b, 14)
	}
	fixICMP(f)
	want := clone(f)
	want[34] = 0
	fixICMP(want)
	h.mustExecute(f, "set(icmp(type=0)),2")
	h.expectFrame(2, want)

	// ICMPv6 type and code.
	f6 := testIPv6(rng, header.IPProtoICMPv6, 16)
	f6[54], f6[55] = 128, 0
	fixIPv6(f6, 14, 54)
	want = clone(f6)
	want[54], want[55] = 129, 1
	fixIPv6(want, 14, 54)
	h.mustExecute(f6, "set(icmpv6(type=129,code=1)),2")
	checkIPv6(t, h.expectFrame(2, want), 14, 54, header.IPProtoICMPv6)

	// ND: neighbour solicitation with a source link-layer option.
	ns := testIPv6(rng, header.IPProtoICMPv6, 24)
	ic := ns[54:]
	ic[0], ic[1] = 135, 0
	ic[24], ic[25] = 1, 1 // SLL option, 8 bytes
	fixIPv6(ns, 14, 54)
	want = clone(ns)
	wic := want[54:]
	copy(wic[8:24], []byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7})
	copy(wic[26:32], []byte{2, 0, 0, 0, 0, 7})
	fixIPv6(want, 14, 54)
	h.mustExecute(ns, "set(nd(target=fe80::7,sll=02:00:00:00:00:07)),2")
	checkIPv6(t, h.expectFrame(2, want), 14, 54, header.IPProtoICMPv6)

	// ARP.
	arp := make([]byte, 42)
	copy(arp, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1, 0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1,
		0, 0, 0, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2})
	want = clone(arp)
	binary.BigEndian.PutUint16(want[20:], 2)
	copy(want[38:42], []byte{10, 0, 0, 9})
	h.mustExecute(arp, "set(arp(tip=10.0.0.9,op=2)),2")
	h.expectFrame(2, want)
}

func TestActionVLANAndMPLS(t *testing.T) {
	h := newHarness(t, 3)
	f := udpFrame(1, 2, 1000)
	tagged := func(b []byte, tpid, tci uint16) []byte {
		out := append(clone(b[:12]), byte(tpid>>8), byte(tpid), byte(tci>>8), byte(tci))
		return append(out, b[12:]...)
	}
	want := tagged(f, 0x8100, 3<<13|10)
	h.mustExecute(f, "push_vlan(vid=10,pcp=3),2")
	h.expectFrame(2, want)
	want2 := tagged(want, 0x88a8, 20)
	h.mustExecute(f, "push_vlan(vid=10,pcp=3),push_vlan(tpid=0x88a8,vid=20,pcp=0),2")
	h.expectFrame(2, want2)
	h.mustExecute(want, "pop_vlan,2")
	h.expectFrame(2, f)

	// MPLS: push then pop restores the frame.
	mp := append(clone(f[:12]), 0x88, 0x47, 0, 0x06, 0x47, 0x40) // label 100, tc 3, bos 1, ttl 64
	mp = append(mp, f[14:]...)
	h.mustExecute(f, "push_mpls(label=100,tc=3,ttl=64,bos=1,eth_type=0x8847),2")
	h.expectFrame(2, mp)
	h.mustExecute(mp, "pop_mpls(eth_type=0x800),2")
	h.expectFrame(2, f)
	// set(mpls) on the label.
	want = clone(mp)
	binary.BigEndian.PutUint32(want[14:], 200<<12|3<<9|1<<8|64)
	h.mustExecute(mp, "set(mpls(label=200,tc=3,ttl=64,bos=1)),2")
	h.expectFrame(2, want)

	// The key is re-extracted after a push: a recirculated packet is
	// looked up with its VLAN tag.
	h.put("recirc_id(1),in_port(1),"+anyEth+"eth_type(0x8100),vlan(vid=10,pcp=3),encap(eth_type(0x0800)"+anyIPv4+")", "3")
	h.mustExecute(f, "push_vlan(vid=10,pcp=3),recirc(1)")
	h.expectFrame(3, tagged(f, 0x8100, 3<<13|10))
}

func TestActionNested(t *testing.T) {
	h := newHarness(t, 3)
	f := udpFrame(1, 2, 1000)
	mod := clone(f)
	mod[14+8] = 1
	fixIPv4(mod, 14)

	// clone: its changes stay inside it.
	h.mustExecute(f, "clone(set(ipv4(ttl=1)),2),3")
	h.expectFrame(2, mod)
	h.expectFrame(3, f)
	// The last clone works on the packet itself.
	h.mustExecute(f, "3,clone(set(ipv4(ttl=1)),2)")
	h.expectFrame(3, f)
	h.expectFrame(2, mod)

	// sample: 100% and 0%.
	h.execActions(f, odp.Actions{odp.Sample{Probability: 0xffffffff, Actions: odp.Actions{odp.Output{Port: 2}}}})
	h.expectFrame(2, f)
	h.execActions(f, odp.Actions{odp.Sample{Probability: 0, Actions: odp.Actions{odp.Output{Port: 2}}}, odp.Output{Port: 3}})
	h.expectFrame(3, f)
	h.expectNone(2)

	// check_pkt_len: len(f) is 60.
	h.mustExecute(f, "check_pkt_len(size=59,gt(2),le(3))")
	h.expectFrame(2, f)
	h.mustExecute(f, "check_pkt_len(size=60,gt(2),le(3))")
	h.expectFrame(3, f)
	// Not last: the rest of the list sees the unmodified packet.
	h.mustExecute(f, "check_pkt_len(size=60,gt(2),le(set(ipv4(ttl=1)),3)),2")
	h.expectFrame(3, mod)
	h.expectFrame(2, f)
}

func (h *harness) execActions(frame []byte, as odp.Actions) {
	h.t.Helper()
	if err := h.dp.Execute(context.Background(), &odp.Packet{Data: frame, Key: odp.FlowKey{odp.InPort(1)}, Actions: as}); err != nil {
		h.t.Fatalf("execute %s: %v", as, err)
	}
}

func TestActionDecTTL(t *testing.T) {
	h := newHarness(t, 3)
	f := udpFrame(1, 2, 1000)
	want := clone(f)
	want[14+8] = 63
	fixIPv4(want, 14)
	h.execActions(f, odp.Actions{odp.DecTTL{}, odp.Output{Port: 2}})
	checkIPv4(t, h.expectFrame(2, want), 14)

	// TTL 1: the le_1 actions run and the packet goes no further.
	one := clone(f)
	one[14+8] = 1
	fixIPv4(one, 14)
	h.execActions(one, odp.Actions{odp.DecTTL{LE1: odp.Actions{odp.Output{Port: 3}}}, odp.Output{Port: 2}})
	h.expectFrame(3, one)
	h.expectNone(2)

	// IPv6 hop limit.
	rng := newRand(t)
	f6 := testIPv6(rng, header.IPProtoUDP, 4)
	f6[14+7] = 10
	want = clone(f6)
	want[14+7] = 9
	h.execActions(f6, odp.Actions{odp.DecTTL{}, odp.Output{Port: 2}})
	h.expectFrame(2, want)
}

func TestActionRecircHashUserspace(t *testing.T) {
	h := newHarness(t, 3)
	ctx := context.Background()
	rs, err := h.dp.Upcalls(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	f := udpFrame(1, 2, 1000)

	// A set changes the key that a recirculation looks up.
	h.put("recirc_id(2),in_port(1),"+anyEth+"eth_type(0x0800),ipv4(src=9.9.9.9/255.255.255.255)", "3")
	h.mustExecute(f, "set(ipv4(src=9.9.9.9)),recirc(2)")
	got := h.expect(3)
	if !bytes.Equal(got[14+12:14+16], []byte{9, 9, 9, 9}) {
		t.Errorf("recirculated frame % x", got)
	}

	// hash then recirc: a miss upcall whose key carries the dp_hash.
	h.mustExecute(f, "hash(l4(0)),recirc(3)")
	ups := make([]odp.Upcall, 4)
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := rs[0].Recv(c, ups)
	if err != nil || n != 1 || ups[0].Kind != odp.UpcallMiss {
		t.Fatalf("recv: %d %v %+v", n, err, ups[0])
	}
	k, err := odp.ToFlowKeysExact(ups[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	if k.RecircID != 3 || k.DPHash == 0 {
		t.Errorf("recirculated miss: recirc_id %d, dp_hash %#x", k.RecircID, k.DPHash)
	}
	// The symmetric hash is the same for both directions.
	var kr = k
	_ = kr
	h1 := l4Hash(&k, true, 5)
	k.IPv4Src, k.IPv4Dst = k.IPv4Dst, k.IPv4Src
	k.TpSrc, k.TpDst = k.TpDst, k.TpSrc
	if h2 := l4Hash(&k, true, 5); h1 != h2 {
		t.Errorf("sym_l4 hash differs by direction: %#x %#x", h1, h2)
	}

	// userspace: an action upcall with the userdata and the actions.
	as := odp.Actions{odp.Userspace{PID: 0, Userdata: []byte{1, 2, 3, 4}, Actions: true}, odp.Output{Port: 2}}
	h.execActions(f, as)
	h.expectFrame(2, f)
	n, err = rs[0].Recv(c, ups)
	if err != nil || n != 1 {
		t.Fatalf("recv: %d %v", n, err)
	}
	u := ups[0]
	if u.Kind != odp.UpcallAction || !bytes.Equal(u.Userdata, []byte{1, 2, 3, 4}) || !bytes.Equal(u.Packet, f) || u.Actions.String() != as.String() {
		t.Errorf("action upcall %+v", u)
	}
	// With trunc before it, the upcall's packet is truncated.
	h.mustExecute(f, "trunc(20),userspace(pid=0)")
	if n, err = rs[0].Recv(c, ups); err != nil || n != 1 || !bytes.Equal(ups[0].Packet, f[:20]) {
		t.Errorf("truncated userspace upcall: %d %v % x", n, err, ups[0].Packet)
	}
}

// snapFrame wraps the IPv4 packet of the Ethernet II frame f (its bytes
// from offset 14) in an 802.3 frame with LLC control byte ctrl and a
// SNAP header carrying EtherType 0x0800.
func snapFrame(f []byte, ctrl byte) []byte {
	ip := f[14:]
	out := append([]byte(nil), f[:12]...)
	out = binary.BigEndian.AppendUint16(out, uint16(8+len(ip)))
	out = append(out, 0xaa, 0xaa, ctrl, 0, 0, 0, 0x08, 0x00)
	return append(out, ip...)
}

// TestLLCSNAPActions checks that the actions find the IPv4 header of an
// LLC/SNAP frame where key extraction does (after the SNAP header,
// whatever the LLC control byte), and that dec_ttl decides by the
// kernel's skb->protocol (the key's EtherType), as the kernel: TTL 63
// with a valid checksum, the rest of the frame unchanged.
func TestLLCSNAPActions(t *testing.T) {
	h := newHarness(t, 2)
	h.put("in_port(1),"+anyEth+"eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=2000)", "dec_ttl(le_1(drop)),set(ipv4(tos=0x48/0xfc)),2")
	for _, ctrl := range []byte{0x03, 0x54} {
		in := snapFrame(udpFrame(1, 2, 1000), ctrl)
		h.send(1, in)
		got := h.expect(2)
		want := clone(in)
		ip := want[22:]
		ip[1] = ip[1]&0x03 | 0x48
		ip[8]--
		fixIPv4(want, 22)
		if !bytes.Equal(got, want) {
			t.Errorf("LLC control %#02x:\n got % x\nwant % x", ctrl, got, want)
		}
		if got[22+8] != 63 {
			t.Errorf("LLC control %#02x: TTL %d, want 63", ctrl, got[22+8])
		}
		checkIPv4(t, got, 22)
	}
}

// TestPopVLANProtocol checks skb->protocol tracking through pop_vlan of
// the outer of two tags: the kernel then sets it from the EtherType
// after the inner tag without looking for SNAP (vlan_set_encap_proto),
// so dec_ttl leaves an LLC/SNAP IPv4 packet alone, while it decrements
// the TTL of the same packet in Ethernet II.
func TestPopVLANProtocol(t *testing.T) {
	h := newHarness(t, 2)
	h.put("in_port(1),"+anyEth+"eth_type(0x88a8),vlan(vid=40),encap(eth_type(0x8100),vlan(vid=41),encap(eth_type(0x0800),ipv4(frag=no)))", "pop_vlan,dec_ttl(le_1(drop)),2")
	plain := udpFrame(1, 2, 1000)
	tags := [][2]uint16{{header.EtherTypeQinQ, 40}, {header.EtherTypeVLAN, 41}}

	in := vlanFrame(plain, tags...)
	h.send(1, in)
	want := vlanFrame(plain, tags[1])
	want[18+8]--
	fixIPv4(want, 18)
	h.expectFrame(2, want)

	in = vlanFrame(snapFrame(plain, 3), tags...)
	h.send(1, in)
	h.expectFrame(2, vlanFrame(snapFrame(plain, 3), tags[1]))
}

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
	tagged := vlanFrame(f, [2]uint16{header.EtherTypeVLAN, 5}, [2]uint16{header.EtherTypeVLAN, 6})
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

// TestActionValidationAsKernel checks the rules of the kernel's
// __ovs_nla_copy_actions that depend on the packet's state as the
// actions change it (its eth_type, vlan_tci and mpls_label_count).
func TestActionValidationAsKernel(t *testing.T) {
	h := newHarness(t, 2)
	ip := "in_port(1)," + anyEth + "eth_type(0x0800),ipv4(frag=no)"
	arp := "in_port(2)," + anyEth + "eth_type(0x0806),arp(sip=0.0.0.0/0.0.0.0)"
	lldp := "in_port(1)," + anyEth + "eth_type(0x88cc)"
	mpls := "in_port(1)," + anyEth + "eth_type(0x8847),mpls(label=5,tc=0,ttl=64,bos=1)"
	vlan := "in_port(1)," + anyEth + "eth_type(0x8100),vlan(vid=9),encap(eth_type(0x0800),ipv4(frag=no))"
	for _, c := range []struct {
		key, acts string
		ok        bool
	}{
		{arp, "dec_ttl(le_1(drop)),1", true}, // any EtherType
		{ip, "push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2", true},
		{arp, "push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),1", true},
		{lldp, "push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2", false},
		{vlan, "push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2", false},
		{vlan, "pop_vlan,push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2", true},
		{ip, "push_vlan(vid=3,pcp=0),push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2", false},
		{mpls, "pop_mpls(eth_type=0x800),2", true},
		{mpls, "pop_mpls(eth_type=0x800),set(ipv4(ttl=3)),2", false},          // eth_type unknown after the last label
		{mpls, "pop_mpls(eth_type=0x8847),pop_mpls(eth_type=0x800),2", false}, // one label only
		{mpls, "push_mpls(label=8,tc=0,ttl=64,bos=0,eth_type=0x8847),pop_mpls(eth_type=0x8847),pop_mpls(eth_type=0x800),2", true},
	} {
		h.checkPut(c.key, c.acts, c.ok)
	}
	// dec_ttl leaves an ARP packet alone.
	h.put(arp, "dec_ttl(le_1(drop)),1")
	f := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2, 0, 0}
	h.send(2, f)
	h.expectFrame(1, f)
}

// TestPushMPLSEtherTypeField checks where push_mpls writes its
// EtherType: in the Ethernet header's type field (skb_mpls_push's
// eth_hdr), which for an LLC/SNAP frame is the 802.3 length field, while
// the label goes after the SNAP header (the kernel's mac_len).
func TestPushMPLSEtherTypeField(t *testing.T) {
	h := newHarness(t, 2)
	h.put("in_port(1),"+anyEth+"eth_type(0x0800),ipv4(frag=no)", "push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2")
	in := snapFrame(udpFrame(1, 2, 1000), 3)
	h.send(1, in)
	want := append(append(append([]byte(nil), in[:12]...), 0x88, 0x47), in[14:22]...)
	want = append(append(want, 0, 0, 0x71, 0x40), in[22:]...)
	h.expectFrame(2, want)
}
