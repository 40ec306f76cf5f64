package header

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// seq returns n bytes 0, 1, 2, ...: every field of a view over it has a
// distinct, predictable value.
func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// TestGetters reads every field accessor over a buffer of bytes 0, 1,
// 2, ... (with the first byte of IPv4, IPv6 and TCP set where the
// version or length nibbles matter), against the values those bytes
// hold in network byte order.
func TestGetters(t *testing.T) {
	eth, vlan := Ethernet(seq(14)), VLAN([]byte{0x81, 0x00, 0xb0, 0x64, 0x08, 0x00})
	ip4 := IPv4(seq(20))
	ip4[0], ip4[6], ip4[7] = 0x46, 0x3f, 0xff // IHL 6; DF, MF, offset 0x1fff
	ip6 := IPv6(seq(40))
	ip6[0] = 0x6a
	tcp := TCP(seq(20))
	tcp[12] = 0x81 // data offset 8 words, NS bit
	udp, sctp, icmp, arp := UDP(seq(8)), SCTP(seq(16)), ICMP(seq(12)), ARP(seq(28))
	nd := ND(append(seq(24), NDOptionSourceLinkAddress, 1, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf))
	opt := NDOption(nd.Options())
	for _, c := range []struct {
		view, names string // the view and its getters, in the order of got
		got, want   []any
	}{
		{"Ethernet", "DestinationAddress SourceAddress Type",
			[]any{eth.DestinationAddress(), eth.SourceAddress(), eth.Type()},
			[]any{[6]byte{0, 1, 2, 3, 4, 5}, [6]byte{6, 7, 8, 9, 10, 11}, uint16(0x0c0d)}},
		{"VLAN", "TPID TCI VID PCP Type", []any{vlan.TPID(), vlan.TCI(), vlan.VID(), vlan.PCP(), vlan.Type()},
			[]any{uint16(EtherTypeVLAN), uint16(0xb064), uint16(0x064), uint8(5), uint16(EtherTypeIPv4)}},
		{"IPv4", "Version HeaderLength TOS TotalLength ID FlagsFragmentOffset FragmentOffset MoreFragments FragType TTL Protocol Checksum SourceAddress DestinationAddress SourceAddressUint32 DestinationAddressUint32",
			[]any{ip4.Version(), ip4.HeaderLength(), ip4.TOS(), ip4.TotalLength(), ip4.ID(), ip4.FlagsFragmentOffset(), ip4.FragmentOffset(), ip4.MoreFragments(), ip4.FragType(), ip4.TTL(), ip4.Protocol(), ip4.Checksum(), ip4.SourceAddress(), ip4.DestinationAddress(), ip4.SourceAddressUint32(), ip4.DestinationAddressUint32()},
			[]any{uint8(4), 24, uint8(1), uint16(0x0203), uint16(0x0405), uint16(0x3fff), uint16(0x1fff), true, uint8(FragLater), uint8(8), uint8(9), uint16(0x0a0b), [4]byte{12, 13, 14, 15}, [4]byte{16, 17, 18, 19}, uint32(0x0c0d0e0f), uint32(0x10111213)}},
		{"IPv6", "Version TrafficClass FlowLabel VersionClassLabel PayloadLength NextHeader HopLimit SourceAddress DestinationAddress *SourceAddressPtr *DestinationAddressPtr",
			[]any{ip6.Version(), ip6.TrafficClass(), ip6.FlowLabel(), ip6.VersionClassLabel(), ip6.PayloadLength(), ip6.NextHeader(), ip6.HopLimit(), ip6.SourceAddress(), ip6.DestinationAddress(), *ip6.SourceAddressPtr(), *ip6.DestinationAddressPtr()},
			[]any{uint8(6), uint8(0xa0), uint32(0x010203), uint32(0x6a010203), uint16(0x0405), uint8(6), uint8(7), [16]byte(seq(24)[8:]), [16]byte(seq(40)[24:]), [16]byte(seq(24)[8:]), [16]byte(seq(40)[24:])}},
		{"Ports", "Source Destination", []any{Ports(udp).Source(), Ports(udp).Destination()}, []any{uint16(0x0001), uint16(0x0203)}},
		{"TCP", "SequenceNumber AckNumber DataOffset Flags WindowSize Checksum",
			[]any{tcp.SequenceNumber(), tcp.AckNumber(), tcp.DataOffset(), tcp.Flags(), tcp.WindowSize(), tcp.Checksum()},
			[]any{uint32(0x04050607), uint32(0x08090a0b), 32, uint16(0x10d), uint16(0x0e0f), uint16(0x1011)}},
		{"UDP", "Length Checksum", []any{udp.Length(), udp.Checksum()}, []any{uint16(0x0405), uint16(0x0607)}},
		{"SCTP", "Checksum(little-endian)", []any{sctp.Checksum()}, []any{uint32(0x0b0a0908)}},
		{"ICMP", "Type Code Checksum Ident Sequence", []any{icmp.Type(), icmp.Code(), icmp.Checksum(), icmp.Ident(), icmp.Sequence()},
			[]any{uint8(0), uint8(1), uint16(0x0203), uint16(0x0405), uint16(0x0607)}},
		{"ND", "TargetAddress len(Options)", []any{nd.TargetAddress(), len(opt)}, []any{[16]byte(seq(24)[8:]), 8}},
		{"NDOption", "Type Length LinkAddress", []any{opt.Type(), opt.Length(), opt.LinkAddress()},
			[]any{uint8(NDOptionSourceLinkAddress), 8, [6]byte{0xa, 0xb, 0xc, 0xd, 0xe, 0xf}}},
		{"ARP", "HardwareType ProtocolType HardwareAddressSize ProtocolAddressSize Op SenderHardwareAddress SenderProtocolAddress TargetHardwareAddress TargetProtocolAddress IsIPv4OverEthernet",
			[]any{arp.HardwareType(), arp.ProtocolType(), arp.HardwareAddressSize(), arp.ProtocolAddressSize(), arp.Op(), arp.SenderHardwareAddress(), arp.SenderProtocolAddress(), arp.TargetHardwareAddress(), arp.TargetProtocolAddress(), arp.IsIPv4OverEthernet()},
			[]any{uint16(0x0001), uint16(0x0203), uint8(4), uint8(5), uint16(0x0607), [6]byte{8, 9, 10, 11, 12, 13}, [4]byte{14, 15, 16, 17}, [6]byte{18, 19, 20, 21, 22, 23}, [4]byte{24, 25, 26, 27}, false}},
	} {
		names := strings.Fields(c.names)
		if len(names) != len(c.got) || len(c.want) != len(c.got) {
			t.Fatalf("%s: %d names, %d values, %d wants", c.view, len(names), len(c.got), len(c.want))
		}
		for i := range c.got {
			if c.got[i] != c.want[i] {
				t.Errorf("%s.%s = %#v, want %#v", c.view, names[i], c.got[i], c.want[i])
			}
		}
	}
}

// TestSetters runs every setter on a buffer of bytes 0, 1, 2, ...: it
// must write exactly want at offset off (network byte order) and leave
// every other byte as it was.
func TestSetters(t *testing.T) {
	a4, a6, mac := [4]byte{10, 0, 0, 1}, [16]byte{0xfe, 0x80, 15: 1}, [6]byte{2, 0, 0, 0, 0, 1}
	for _, c := range []struct {
		name string
		set  func(b []byte)
		off  int
		want []byte
	}{
		{"Ethernet.SetDestinationAddress", func(b []byte) { Ethernet(b).SetDestinationAddress(mac) }, 0, mac[:]},
		{"Ethernet.SetSourceAddress", func(b []byte) { Ethernet(b).SetSourceAddress(mac) }, 6, mac[:]},
		{"Ethernet.SetType", func(b []byte) { Ethernet(b).SetType(EtherTypeIPv6) }, 12, []byte{0x86, 0xdd}},
		{"VLAN.SetTPID", func(b []byte) { VLAN(b).SetTPID(EtherTypeQinQ) }, 0, []byte{0x88, 0xa8}},
		{"VLAN.SetTCI", func(b []byte) { VLAN(b).SetTCI(0x1234) }, 2, []byte{0x12, 0x34}},
		{"IPv4.SetTOS", func(b []byte) { IPv4(b).SetTOS(0xb8) }, 1, []byte{0xb8}},
		{"IPv4.SetTotalLength", func(b []byte) { IPv4(b).SetTotalLength(1500) }, 2, []byte{0x05, 0xdc}},
		{"IPv4.SetID", func(b []byte) { IPv4(b).SetID(0xbeef) }, 4, []byte{0xbe, 0xef}},
		{"IPv4.SetFlagsFragmentOffset", func(b []byte) { IPv4(b).SetFlagsFragmentOffset(IPv4FlagDontFragment) }, 6, []byte{0x40, 0}},
		{"IPv4.SetTTL", func(b []byte) { IPv4(b).SetTTL(64) }, 8, []byte{64}},
		{"IPv4.SetProtocol", func(b []byte) { IPv4(b).SetProtocol(IPProtoUDP) }, 9, []byte{17}},
		{"IPv4.SetChecksum", func(b []byte) { IPv4(b).SetChecksum(0x1234) }, 10, []byte{0x12, 0x34}},
		{"IPv4.SetSourceAddress", func(b []byte) { IPv4(b).SetSourceAddress(a4) }, 12, a4[:]},
		{"IPv4.SetDestinationAddress", func(b []byte) { IPv4(b).SetDestinationAddress(a4) }, 16, a4[:]},
		{"IPv4.SetSourceAddressUint32", func(b []byte) { IPv4(b).SetSourceAddressUint32(0xc0a80001) }, 12, []byte{192, 168, 0, 1}},
		{"IPv4.SetDestinationAddressUint32", func(b []byte) { IPv4(b).SetDestinationAddressUint32(0xc0a80002) }, 16, []byte{192, 168, 0, 2}},
		{"IPv6.SetVersionClassLabel", func(b []byte) { IPv6(b).SetVersionClassLabel(6<<28 | 0x12<<20 | 0xabcde) }, 0, []byte{0x61, 0x2a, 0xbc, 0xde}},
		{"IPv6.SetPayloadLength", func(b []byte) { IPv6(b).SetPayloadLength(8) }, 4, []byte{0, 8}},
		{"IPv6.SetNextHeader", func(b []byte) { IPv6(b).SetNextHeader(IPProtoUDP) }, 6, []byte{17}},
		{"IPv6.SetHopLimit", func(b []byte) { IPv6(b).SetHopLimit(255) }, 7, []byte{255}},
		{"IPv6.SetSourceAddress", func(b []byte) { IPv6(b).SetSourceAddress(a6) }, 8, a6[:]},
		{"IPv6.SetDestinationAddress", func(b []byte) { IPv6(b).SetDestinationAddress(a6) }, 24, a6[:]},
		{"IPv6.SourceAddressPtr", func(b []byte) { IPv6(b).SourceAddressPtr()[0] = 0xfe }, 8, []byte{0xfe}},
		{"IPv6.DestinationAddressPtr", func(b []byte) { IPv6(b).DestinationAddressPtr()[15] = 0xff }, 39, []byte{0xff}},
		{"Ports(TCP).SetSource", func(b []byte) { Ports(TCP(b)).SetSource(80) }, 0, []byte{0, 80}},
		{"Ports(TCP).SetDestination", func(b []byte) { Ports(TCP(b)).SetDestination(443) }, 2, []byte{1, 0xbb}},
		{"TCP.SetSequenceNumber", func(b []byte) { TCP(b).SetSequenceNumber(0x01020304) }, 4, []byte{1, 2, 3, 4}},
		{"TCP.SetAckNumber", func(b []byte) { TCP(b).SetAckNumber(0xa0b0c0d0) }, 8, []byte{0xa0, 0xb0, 0xc0, 0xd0}},
		{"TCP.SetChecksum", func(b []byte) { TCP(b).SetChecksum(0xabcd) }, 16, []byte{0xab, 0xcd}},
		{"Ports(UDP).SetSource", func(b []byte) { Ports(UDP(b)).SetSource(53) }, 0, []byte{0, 53}},
		{"Ports(UDP).SetDestination", func(b []byte) { Ports(UDP(b)).SetDestination(5353) }, 2, []byte{0x14, 0xe9}},
		{"UDP.SetLength", func(b []byte) { UDP(b).SetLength(20) }, 4, []byte{0, 20}},
		{"UDP.SetChecksum", func(b []byte) { UDP(b).SetChecksum(0xffff) }, 6, []byte{0xff, 0xff}},
		{"Ports(SCTP).SetSource", func(b []byte) { Ports(SCTP(b)).SetSource(1) }, 0, []byte{0, 1}},
		{"Ports(SCTP).SetDestination", func(b []byte) { Ports(SCTP(b)).SetDestination(2) }, 2, []byte{0, 2}},
		{"SCTP.SetChecksum", func(b []byte) { SCTP(b).SetChecksum(0x01020304) }, 8, []byte{4, 3, 2, 1}},
		{"ICMP.SetType", func(b []byte) { ICMP(b).SetType(ICMPv4EchoRequest) }, 0, []byte{8}},
		{"ICMP.SetCode", func(b []byte) { ICMP(b).SetCode(3) }, 1, []byte{3}},
		{"ICMP.SetChecksum", func(b []byte) { ICMP(b).SetChecksum(0xfeed) }, 2, []byte{0xfe, 0xed}},
		{"ICMP.SetIdent", func(b []byte) { ICMP(b).SetIdent(0x1234) }, 4, []byte{0x12, 0x34}},
		{"ICMP.SetSequence", func(b []byte) { ICMP(b).SetSequence(7) }, 6, []byte{0, 7}},
		{"ND.SetTargetAddress", func(b []byte) { ND(b).SetTargetAddress(a6) }, 8, a6[:]},
		{"NDOption.SetLinkAddress", func(b []byte) { NDOption(b).SetLinkAddress(mac) }, 2, mac[:]},
		{"ARP.SetOp", func(b []byte) { ARP(b).SetOp(ARPReply) }, 6, []byte{0, 2}},
		{"ARP.SetIPv4OverEthernet", func(b []byte) { ARP(b).SetIPv4OverEthernet() }, 0, []byte{0, 1, 8, 0, 6, 4}},
		{"ARP.SetSenderHardwareAddress", func(b []byte) { ARP(b).SetSenderHardwareAddress(mac) }, 8, mac[:]},
		{"ARP.SetSenderProtocolAddress", func(b []byte) { ARP(b).SetSenderProtocolAddress(a4) }, 14, a4[:]},
		{"ARP.SetTargetHardwareAddress", func(b []byte) { ARP(b).SetTargetHardwareAddress(mac) }, 18, mac[:]},
		{"ARP.SetTargetProtocolAddress", func(b []byte) { ARP(b).SetTargetProtocolAddress(a4) }, 24, a4[:]},
	} {
		b := seq(64)
		c.set(b)
		want := seq(64)
		copy(want[c.off:], c.want)
		if !bytes.Equal(b, want) {
			t.Errorf("%s wrote\n% x, want\n% x", c.name, b[:c.off+len(c.want)], want[:c.off+len(c.want)])
		}
	}
}

func TestVLANAndMPLSTypes(t *testing.T) {
	for et, want := range map[uint16]bool{EtherTypeVLAN: true, EtherTypeQinQ: true, EtherTypeIPv4: false, 0x9100: false} {
		eq(t, "IsVLAN", IsVLAN(et), want)
	}
	for et, want := range map[uint16]bool{EtherTypeMPLS: true, EtherTypeMPLSMC: true, EtherTypeIPv4: false} {
		eq(t, "IsMPLS", IsMPLS(et), want)
	}
}

func TestL2(t *testing.T) {
	mac := seq(12)
	cat := func(parts ...[]byte) []byte { return bytes.Join(append([][]byte{mac}, parts...), nil) }
	u16 := func(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
	snap := []byte{0xaa, 0xaa, 0x03, 0, 0, 0}
	for _, c := range []struct {
		name  string
		frame []byte
		off   int
		et    uint16
		tags  int
	}{
		{"short", seq(13), 14, 0, 0},
		{"ipv4", cat(u16(0x0800)), 14, 0x0800, 0},
		{"one tag", cat(u16(0x8100), u16(5), u16(0x86dd)), 18, 0x86dd, 1},
		{"two tags", cat(u16(0x88a8), u16(5), u16(0x8100), u16(6), u16(0x0800)), 22, 0x0800, 2},
		{"third tag not parsed", cat(u16(0x8100), u16(5), u16(0x8100), u16(6), u16(0x8100), u16(7)), 22, 0x8100, 2},
		{"tag without type after it", cat(u16(0x8100), u16(5)), 14, 0x8100, 0},
		{"802.3 no LLC room", cat(u16(40), []byte{0xaa, 0xaa}), 14, EtherType8022, 0},
		{"802.3 LLC not SNAP", cat(u16(40), []byte{0x42, 0x42, 3, 0, 0, 0}, u16(0x0800)), 14, EtherType8022, 0},
		{"802.3 SNAP with OUI", cat(u16(40), []byte{0xaa, 0xaa, 3, 0, 0, 1}, u16(0x0800)), 14, EtherType8022, 0},
		{"SNAP", cat(u16(40), snap, u16(0x0800)), 22, 0x0800, 0},
		{"SNAP with a length", cat(u16(40), snap, u16(0x0100)), 22, EtherType8022, 0},
		{"tag then SNAP", cat(u16(0x8100), u16(1), u16(40), snap, u16(0x86dd)), 26, 0x86dd, 1},
	} {
		off, et, tags := L2(c.frame)
		if off != c.off || et != c.et || tags != c.tags {
			t.Errorf("%s: L2 = %d, %#04x, %d; want %d, %#04x, %d", c.name, off, et, tags, c.off, c.et, c.tags)
		}
	}
}

func TestHtons(t *testing.T) {
	v := Htons(0x0806)
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], v)
	if b != [2]byte{0x08, 0x06} {
		t.Errorf("Htons(0x0806) is % x in memory, want 08 06", b)
	}
	if Htons(Htons(0x1234)) != 0x1234 {
		t.Error("Htons is not its own inverse")
	}
}

func TestIPv4FragType(t *testing.T) {
	ip := IPv4(seq(20))
	for fo, want := range map[uint16]uint8{0: FragNone, 0x4000: FragNone, 0x2000: FragFirst, 0x6000: FragFirst, 1: FragLater, 0x4001: FragLater, 0x3fff: FragLater} {
		ip.SetFlagsFragmentOffset(fo)
		eq(t, "FragType", ip.FragType(), want)
		eq(t, "MoreFragments", ip.MoreFragments(), fo&IPv4FlagMoreFragments != 0)
		eq(t, "FragmentOffset", ip.FragmentOffset(), fo&IPv4FragmentOffsetMask)
	}
}

// TestIPv4Checksum checks CalculateChecksum against a real header whose
// checksum is known, and the pseudo-header sums.
func TestIPv4Checksum(t *testing.T) {
	// 45 00 00 73 00 00 40 00 40 11 [b8 61] c0 a8 00 01 c0 a8 00 c7
	h := IPv4([]byte{0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0, 0xc7})
	eq(t, "CalculateChecksum", h.CalculateChecksum(), 0xb861)
	eq(t, "Checksum over a correct header", Checksum(h, 0), 0)
	eq(t, "CalculateChecksum of a short view", IPv4(h[:19]).CalculateChecksum(), 0)
	want := uint64(0xc0a8+0x0001+0xc0a8+0x00c7) + 17 + 95
	eq(t, "Fold(IPv4.PseudoHeaderSum)", Fold(h.PseudoHeaderSum(17, 95)), Fold(want))
	ip6 := IPv6(make([]byte, 40))
	ip6.SetSourceAddress([16]byte{0xfe, 0x80, 15: 1})
	ip6.SetDestinationAddress([16]byte{0xfe, 0x80, 15: 2})
	eq(t, "Fold(IPv6.PseudoHeaderSum)", Fold(ip6.PseudoHeaderSum(17, 8)), Fold(uint64(0xfe80+1+0xfe80+2+17+8)))
}

// TestSCTPChecksum checks the CRC32c against RFC 3720's check value: 32
// zero bytes give 0x8a9136aa. What the checksum field holds does not
// count.
func TestSCTPChecksum(t *testing.T) {
	b := SCTP(make([]byte, 32))
	eq(t, "CalculateChecksum of 32 zero bytes", b.CalculateChecksum(), 0x8a9136aa)
	b.SetChecksum(b.CalculateChecksum())
	eq(t, "CalculateChecksum with the field set", b.CalculateChecksum(), 0x8a9136aa)
	eq(t, "CalculateChecksum of a short view", SCTP(b[:11]).CalculateChecksum(), 0)
}

func TestICMPChecksumAndND(t *testing.T) {
	b := ICMP(seq(12))
	b.SetChecksum(b.CalculateChecksum(0))
	eq(t, "Checksum over the message after SetChecksum", Checksum(b, 0), 0)
	b.SetChecksum(b.CalculateChecksum(0x12345))
	eq(t, "Checksum with a pseudo-header", Checksum(b, 0x12345), 0)
	eq(t, "CalculateChecksum of a short view", ICMP(b[:3]).CalculateChecksum(0), 0)
	for _, c := range []struct {
		typ, code uint8
		nd        bool
	}{{ICMPv6NeighborSolicit, 0, true}, {ICMPv6NeighborAdvert, 0, true}, {ICMPv6NeighborSolicit, 1, false}, {ICMPv6EchoRequest, 0, false}, {ICMPv6RouterSolicit, 0, false}} {
		b.SetType(c.typ)
		b.SetCode(c.code)
		eq(t, "IsND", b.IsND(), c.nd)
	}
}

func TestTransportChecksumOffset(t *testing.T) {
	for _, c := range []struct {
		proto    uint8
		off, min int
	}{{IPProtoTCP, 16, 20}, {IPProtoUDP, 6, 8}, {IPProtoICMP, 2, 4}, {IPProtoICMPv6, 2, 4}, {IPProtoSCTP, -1, 0}, {IPProtoFragment, -1, 0}} {
		off, min := TransportChecksumOffset(c.proto)
		if off != c.off || min != c.min {
			t.Errorf("TransportChecksumOffset(%d) = %d, %d; want %d, %d", c.proto, off, min, c.off, c.min)
		}
	}
}

func TestARPIsIPv4OverEthernet(t *testing.T) {
	b := ARP(seq(28))
	b.SetIPv4OverEthernet()
	eq(t, "IsIPv4OverEthernet", b.IsIPv4OverEthernet(), true)
	for _, f := range []func(){
		func() { b[4] = 8 },
		func() { b[5] = 16 },
		func() { binary.BigEndian.PutUint16(b[0:], 6) },
		func() { binary.BigEndian.PutUint16(b[2:], EtherTypeIPv6) },
	} {
		b.SetIPv4OverEthernet()
		f()
		if b.IsIPv4OverEthernet() {
			t.Errorf("IsIPv4OverEthernet true for % x", []byte(b[:6]))
		}
	}
}
