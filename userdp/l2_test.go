package userdp

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
)

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
	tags := [][2]uint16{{EthTypeQinQ, 40}, {EthTypeVLAN, 41}}

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

// l2Corpus returns frames that exercise the VLAN and LLC/SNAP rules at
// every length around their limits.
func l2Corpus() [][]byte {
	rng := rand.New(rand.NewPCG(7, 8))
	base := testIPv4(rng, ProtoUDP, 4, 0)
	var out [][]byte
	heads := [][]byte{
		snapFrame(base, 3), snapFrame(base, 0x54),
		vlanFrame(snapFrame(base, 3), [2]uint16{EthTypeVLAN, 5}),
		vlanFrame(snapFrame(base, 3), [2]uint16{EthTypeQinQ, 5}, [2]uint16{EthTypeVLAN, 6}),
		vlanFrame(base, [2]uint16{EthTypeVLAN, 5}),
		vlanFrame(base, [2]uint16{EthTypeQinQ, 5}, [2]uint16{EthTypeVLAN, 6}, [2]uint16{EthTypeVLAN, 7}),
	}
	// SNAP with a non-zero OUI, other SAPs, a SNAP type below 0x600,
	// Novell raw 802.3.
	for _, llc := range [][]byte{
		{0xaa, 0xaa, 3, 0, 0, 1, 0x08, 0x00}, {0xaa, 0xab, 3, 0, 0, 0, 0x08, 0x00},
		{0xaa, 0xaa, 3, 0, 0, 0, 0x05, 0xff}, {0xff, 0xff, 0, 0, 0, 0, 0, 0},
		{0xaa, 0xaa, 3, 0, 0, 0, 0x81, 0x00}, {0xaa, 0xaa, 3, 0, 0, 0, 0x86, 0xdd},
	} {
		f := append(append(append([]byte(nil), base[:12]...), 0, 40), llc...)
		heads = append(heads, append(f, base[14:]...))
	}
	for _, f := range heads {
		for n := 14; n <= len(f); n++ {
			out = append(out, f[:n])
		}
	}
	return out
}

// checkParseMatchesExtract fails unless ParseHeaders puts the network
// header and EtherType where flowkeys.Extract finds them, and
// Headers.Protocol is the skb->protocol key extraction leaves.
func checkParseMatchesExtract(t *testing.T, frame []byte) {
	t.Helper()
	var k flowkeys.Key
	if err := flowkeys.Extract(frame, &flowkeys.Metadata{InPort: 1}, &k); err != nil {
		return
	}
	var h Headers
	if err := ParseHeaders(frame, &h); err != nil {
		t.Fatalf("ParseHeaders fails where Extract succeeds: %v\n% x", err, frame)
	}
	if h.EthType != k.EthType || h.Protocol != keyProtocol(&k) || SkbProtocol(frame) != h.Protocol {
		t.Fatalf("EtherType %#04x protocol %#04x (SkbProtocol %#04x), Extract: eth_type %#04x protocol %#04x\n% x",
			h.EthType, h.Protocol, SkbProtocol(frame), k.EthType, keyProtocol(&k), frame)
	}
	switch {
	case k.EthType == EthTypeIPv4 && k.IPProto != 0:
		// Extract read the IPv4 header: it is at h.L3.
		if h.L4 < 0 || !bytes.Equal(frame[h.L3+12:h.L3+16], k.IPv4Src[:]) || frame[h.L3+9] != k.IPProto || frame[h.L3+8] != k.IPTTL {
			t.Fatalf("IPv4 header at %d (L4 %d) is not the one Extract read (src %v proto %d)\n% x", h.L3, h.L4, k.IPv4Src, k.IPProto, frame)
		}
	case k.EthType == EthTypeIPv6 && len(frame) >= h.L3+40:
		if !bytes.Equal(frame[h.L3+8:h.L3+24], k.IPv6Src[:]) || frame[h.L3+7] != k.IPTTL {
			t.Fatalf("IPv6 header at %d is not the one Extract read\n% x", h.L3, frame)
		}
	}
}

func TestParseHeadersMatchesExtract(t *testing.T) {
	c := l2Corpus()
	for _, f := range c {
		checkParseMatchesExtract(t, f)
	}
	t.Logf("%d frames: ParseHeaders and flowkeys.Extract agree", len(c))
}

// FuzzParseHeadersMatchesExtract checks on arbitrary frames that the
// packet operations' parser and flowkeys.Extract agree on the network
// header, the EtherType and skb->protocol.
func FuzzParseHeadersMatchesExtract(f *testing.F) {
	for i, fr := range l2Corpus() {
		if i%7 == 0 {
			f.Add(fr)
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		checkParseMatchesExtract(t, frame)
	})
}
