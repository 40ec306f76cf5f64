package header

import (
	"bytes"
	"encoding/binary"
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

func TestEthernet(t *testing.T) {
	b := Ethernet(seq(14))
	eq(t, "DestinationAddress", b.DestinationAddress(), [6]byte{0, 1, 2, 3, 4, 5})
	eq(t, "SourceAddress", b.SourceAddress(), [6]byte{6, 7, 8, 9, 10, 11})
	eq(t, "Type", b.Type(), 0x0c0d)
	b.SetDestinationAddress([6]byte{0xa, 0xb, 0xc, 0xd, 0xe, 0xf})
	b.SetSourceAddress([6]byte{1, 1, 1, 1, 1, 1})
	b.SetType(EtherTypeIPv6)
	want := []byte{0xa, 0xb, 0xc, 0xd, 0xe, 0xf, 1, 1, 1, 1, 1, 1, 0x86, 0xdd}
	if !bytes.Equal(b, want) {
		t.Errorf("after setters: % x, want % x", []byte(b), want)
	}
}

func TestVLAN(t *testing.T) {
	b := VLAN([]byte{0x81, 0x00, 0xb0, 0x64, 0x08, 0x00})
	eq(t, "TPID", b.TPID(), EtherTypeVLAN)
	eq(t, "TCI", b.TCI(), 0xb064)
	eq(t, "VID", b.VID(), 0x064)
	eq(t, "PCP", b.PCP(), 5)
	eq(t, "Type", b.Type(), EtherTypeIPv4)
	b.SetTPID(EtherTypeQinQ)
	b.SetTCI(0x1234)
	if want := []byte{0x88, 0xa8, 0x12, 0x34, 0x08, 0x00}; !bytes.Equal(b, want) {
		t.Errorf("after setters: % x, want % x", []byte(b), want)
	}
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

func TestIPv4(t *testing.T) {
	b := IPv4(seq(20))
	b[0] = 0x46
	b[6], b[7] = 0x3f, 0xff // flags and offset: DF, MF and offset 0x1fff
	eq(t, "Version", b.Version(), 4)
	eq(t, "HeaderLength", b.HeaderLength(), 24)
	eq(t, "TOS", b.TOS(), 1)
	eq(t, "TotalLength", b.TotalLength(), 0x0203)
	eq(t, "ID", b.ID(), 0x0405)
	eq(t, "FlagsFragmentOffset", b.FlagsFragmentOffset(), 0x3fff)
	eq(t, "FragmentOffset", b.FragmentOffset(), 0x1fff)
	eq(t, "MoreFragments", b.MoreFragments(), true)
	eq(t, "FragType", b.FragType(), FragLater)
	eq(t, "TTL", b.TTL(), 8)
	eq(t, "Protocol", b.Protocol(), 9)
	eq(t, "Checksum", b.Checksum(), 0x0a0b)
	eq(t, "SourceAddress", b.SourceAddress(), [4]byte{12, 13, 14, 15})
	eq(t, "DestinationAddress", b.DestinationAddress(), [4]byte{16, 17, 18, 19})
	eq(t, "SourceAddressUint32", b.SourceAddressUint32(), 0x0c0d0e0f)
	eq(t, "DestinationAddressUint32", b.DestinationAddressUint32(), 0x10111213)
	for fo, want := range map[uint16]uint8{0: FragNone, 0x4000: FragNone, 0x2000: FragFirst, 0x6000: FragFirst, 1: FragLater, 0x4001: FragLater} {
		b.SetFlagsFragmentOffset(fo)
		eq(t, "FragType", b.FragType(), want)
	}
	b.SetTOS(0xb8)
	b.SetTotalLength(1500)
	b.SetID(0xbeef)
	b.SetFlagsFragmentOffset(IPv4FlagDontFragment)
	b.SetTTL(64)
	b.SetProtocol(IPProtoUDP)
	b.SetChecksum(0x1234)
	b.SetSourceAddress([4]byte{10, 0, 0, 1})
	b.SetDestinationAddress([4]byte{10, 0, 0, 2})
	want := []byte{0x46, 0xb8, 0x05, 0xdc, 0xbe, 0xef, 0x40, 0, 64, 17, 0x12, 0x34, 10, 0, 0, 1, 10, 0, 0, 2}
	if !bytes.Equal(b, want) {
		t.Errorf("after setters:\n% x, want\n% x", []byte(b), want)
	}
	b.SetSourceAddressUint32(0xc0a80001)
	b.SetDestinationAddressUint32(0xc0a80002)
	eq(t, "SourceAddress", b.SourceAddress(), [4]byte{192, 168, 0, 1})
	eq(t, "DestinationAddress", b.DestinationAddress(), [4]byte{192, 168, 0, 2})
}

// TestIPv4Checksum checks CalculateChecksum against the example of
// RFC 1071's era: a real header whose checksum is known.
func TestIPv4Checksum(t *testing.T) {
	// 45 00 00 73 00 00 40 00 40 11 [b8 61] c0 a8 00 01 c0 a8 00 c7
	h := IPv4([]byte{0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0, 0xc7})
	eq(t, "CalculateChecksum", h.CalculateChecksum(), 0xb861)
	eq(t, "Checksum over a correct header", Checksum(h, 0), 0)
	eq(t, "CalculateChecksum of a short view", IPv4(h[:19]).CalculateChecksum(), 0)
	// The pseudo-header sum: addresses + protocol + length.
	want := uint64(0xc0a8+0x0001+0xc0a8+0x00c7) + 17 + 95
	eq(t, "Fold(PseudoHeaderSum)", Fold(h.PseudoHeaderSum(17, 95)), Fold(want))
}

func TestIPv6(t *testing.T) {
	b := IPv6(seq(40))
	b[0] = 0x6a
	eq(t, "Version", b.Version(), 6)
	eq(t, "TrafficClass", b.TrafficClass(), 0xa0)
	eq(t, "FlowLabel", b.FlowLabel(), 0x010203)
	eq(t, "VersionClassLabel", b.VersionClassLabel(), 0x6a010203)
	eq(t, "PayloadLength", b.PayloadLength(), 0x0405)
	eq(t, "NextHeader", b.NextHeader(), 6)
	eq(t, "HopLimit", b.HopLimit(), 7)
	eq(t, "SourceAddress", b.SourceAddress(), [16]byte(seq(24)[8:]))
	eq(t, "DestinationAddress", b.DestinationAddress(), [16]byte(seq(40)[24:]))
	eq(t, "SourceAddressPtr", *b.SourceAddressPtr(), b.SourceAddress())
	eq(t, "DestinationAddressPtr", *b.DestinationAddressPtr(), b.DestinationAddress())
	b.SourceAddressPtr()[0] = 0xfe
	eq(t, "byte 8 after writing through SourceAddressPtr", b[8], 0xfe)
	b.DestinationAddressPtr()[15] = 0xff
	eq(t, "byte 39 after writing through DestinationAddressPtr", b[39], 0xff)
	b.SetVersionClassLabel(6<<28 | 0x12<<20 | 0xabcde)
	b.SetPayloadLength(8)
	b.SetNextHeader(IPProtoUDP)
	b.SetHopLimit(255)
	src, dst := [16]byte{0xfe, 0x80, 15: 1}, [16]byte{0xfe, 0x80, 15: 2}
	b.SetSourceAddress(src)
	b.SetDestinationAddress(dst)
	want := append([]byte{0x61, 0x2a, 0xbc, 0xde, 0, 8, 17, 255}, append(src[:], dst[:]...)...)
	if !bytes.Equal(b, want) {
		t.Errorf("after setters:\n% x, want\n% x", []byte(b), want)
	}
	eq(t, "Fold(PseudoHeaderSum)", Fold(b.PseudoHeaderSum(17, 8)), Fold(uint64(0xfe80+1+0xfe80+2+17+8)))
}

func TestTCP(t *testing.T) {
	b := TCP(seq(20))
	b[12] = 0x81 // data offset 8 words, NS bit
	eq(t, "SourcePort", b.SourcePort(), 0x0001)
	eq(t, "DestinationPort", b.DestinationPort(), 0x0203)
	eq(t, "SequenceNumber", b.SequenceNumber(), 0x04050607)
	eq(t, "AckNumber", b.AckNumber(), 0x08090a0b)
	eq(t, "DataOffset", b.DataOffset(), 32)
	eq(t, "Flags", b.Flags(), 0x10d)
	eq(t, "WindowSize", b.WindowSize(), 0x0e0f)
	eq(t, "Checksum", b.Checksum(), 0x1011)
	b.SetSourcePort(80)
	b.SetDestinationPort(443)
	b.SetChecksum(0xabcd)
	eq(t, "SourcePort", b.SourcePort(), 80)
	eq(t, "DestinationPort", b.DestinationPort(), 443)
	eq(t, "Checksum", b.Checksum(), 0xabcd)
	if !bytes.Equal(b[:4], []byte{0, 80, 1, 0xbb}) || !bytes.Equal(b[16:18], []byte{0xab, 0xcd}) {
		t.Errorf("setters wrote % x", []byte(b))
	}
}

func TestUDP(t *testing.T) {
	b := UDP(seq(8))
	eq(t, "SourcePort", b.SourcePort(), 0x0001)
	eq(t, "DestinationPort", b.DestinationPort(), 0x0203)
	eq(t, "Length", b.Length(), 0x0405)
	eq(t, "Checksum", b.Checksum(), 0x0607)
	b.SetSourcePort(53)
	b.SetDestinationPort(5353)
	b.SetLength(20)
	b.SetChecksum(0xffff)
	if want := []byte{0, 53, 0x14, 0xe9, 0, 20, 0xff, 0xff}; !bytes.Equal(b, want) {
		t.Errorf("after setters: % x, want % x", []byte(b), want)
	}
}

func TestSCTP(t *testing.T) {
	b := SCTP(seq(16))
	eq(t, "SourcePort", b.SourcePort(), 0x0001)
	eq(t, "DestinationPort", b.DestinationPort(), 0x0203)
	eq(t, "Checksum", b.Checksum(), 0x0b0a0908)
	b.SetSourcePort(1)
	b.SetDestinationPort(2)
	b.SetChecksum(b.CalculateChecksum())
	if !bytes.Equal(b[:4], []byte{0, 1, 0, 2}) {
		t.Errorf("ports: % x", []byte(b[:4]))
	}
	// The CRC32c of the packet with its checksum field zero, computed
	// independently with the table-free bitwise algorithm.
	z := append([]byte(nil), b...)
	copy(z[8:12], []byte{0, 0, 0, 0})
	eq(t, "CalculateChecksum", b.CalculateChecksum(), crc32cBitwise(z))
	eq(t, "Checksum after SetChecksum", b.Checksum(), crc32cBitwise(z))
	eq(t, "CalculateChecksum of a short view", SCTP(b[:11]).CalculateChecksum(), 0)
}

func crc32cBitwise(b []byte) uint32 {
	c := ^uint32(0)
	for _, x := range b {
		c ^= uint32(x)
		for i := 0; i < 8; i++ {
			if c&1 != 0 {
				c = c>>1 ^ 0x82f63b78
			} else {
				c >>= 1
			}
		}
	}
	return ^c
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

func TestICMPv4(t *testing.T) {
	b := ICMPv4(seq(12))
	eq(t, "Type", b.Type(), 0)
	eq(t, "Code", b.Code(), 1)
	eq(t, "Checksum", b.Checksum(), 0x0203)
	eq(t, "Ident", b.Ident(), 0x0405)
	eq(t, "Sequence", b.Sequence(), 0x0607)
	b.SetType(ICMPv4EchoRequest)
	b.SetCode(0)
	b.SetIdent(0x1234)
	b.SetSequence(7)
	b.SetChecksum(b.CalculateChecksum())
	eq(t, "Type", b.Type(), ICMPv4EchoRequest)
	eq(t, "Ident", b.Ident(), 0x1234)
	eq(t, "Sequence", b.Sequence(), 7)
	eq(t, "Checksum over the message after SetChecksum", Checksum(b, 0), 0)
	eq(t, "CalculateChecksum of a short view", ICMPv4(b[:3]).CalculateChecksum(), 0)
}

func TestICMPv6AndND(t *testing.T) {
	b := ICMPv6(seq(8))
	eq(t, "Type", b.Type(), 0)
	eq(t, "Code", b.Code(), 1)
	eq(t, "Checksum", b.Checksum(), 0x0203)
	eq(t, "Ident", b.Ident(), 0x0405)
	eq(t, "Sequence", b.Sequence(), 0x0607)
	b.SetType(ICMPv6NeighborSolicit)
	b.SetCode(0)
	b.SetChecksum(0xfeed)
	b.SetIdent(0x4321)
	b.SetSequence(9)
	eq(t, "Checksum", b.Checksum(), 0xfeed)
	eq(t, "Ident", b.Ident(), 0x4321)
	eq(t, "Sequence", b.Sequence(), 9)
	eq(t, "IsND", b.IsND(), true)
	b.SetCode(1)
	eq(t, "IsND with code 1", b.IsND(), false)
	b.SetCode(0)
	b.SetType(ICMPv6EchoRequest)
	eq(t, "IsND for an echo request", b.IsND(), false)

	nd := ND(append(seq(24), 1, 1, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf))
	eq(t, "TargetAddress", nd.TargetAddress(), [16]byte(seq(24)[8:]))
	nd.SetTargetAddress([16]byte{0xfe, 0x80, 15: 9})
	eq(t, "TargetAddress", nd.TargetAddress(), [16]byte{0xfe, 0x80, 15: 9})
	opt := NDOption(nd.Options())
	eq(t, "len(Options)", len(opt), 8)
	eq(t, "option Type", opt.Type(), NDOptionSourceLinkAddress)
	eq(t, "option Length", opt.Length(), 8)
	eq(t, "option LinkAddress", opt.LinkAddress(), [6]byte{0xa, 0xb, 0xc, 0xd, 0xe, 0xf})
	opt.SetLinkAddress([6]byte{2, 0, 0, 0, 0, 1})
	eq(t, "option LinkAddress", opt.LinkAddress(), [6]byte{2, 0, 0, 0, 0, 1})
}

func TestARP(t *testing.T) {
	b := ARP(seq(28))
	eq(t, "HardwareType", b.HardwareType(), 0x0001)
	eq(t, "ProtocolType", b.ProtocolType(), 0x0203)
	eq(t, "HardwareAddressSize", b.HardwareAddressSize(), 4)
	eq(t, "ProtocolAddressSize", b.ProtocolAddressSize(), 5)
	eq(t, "Op", b.Op(), 0x0607)
	eq(t, "SenderHardwareAddress", b.SenderHardwareAddress(), [6]byte{8, 9, 10, 11, 12, 13})
	eq(t, "SenderProtocolAddress", b.SenderProtocolAddress(), [4]byte{14, 15, 16, 17})
	eq(t, "TargetHardwareAddress", b.TargetHardwareAddress(), [6]byte{18, 19, 20, 21, 22, 23})
	eq(t, "TargetProtocolAddress", b.TargetProtocolAddress(), [4]byte{24, 25, 26, 27})
	eq(t, "IsIPv4OverEthernet", b.IsIPv4OverEthernet(), false)
	b.SetIPv4OverEthernet()
	eq(t, "IsIPv4OverEthernet", b.IsIPv4OverEthernet(), true)
	b.SetOp(ARPReply)
	b.SetSenderHardwareAddress([6]byte{2, 0, 0, 0, 0, 1})
	b.SetSenderProtocolAddress([4]byte{10, 0, 0, 1})
	b.SetTargetHardwareAddress([6]byte{2, 0, 0, 0, 0, 2})
	b.SetTargetProtocolAddress([4]byte{10, 0, 0, 2})
	want := []byte{0, 1, 8, 0, 6, 4, 0, 2, 2, 0, 0, 0, 0, 1, 10, 0, 0, 1, 2, 0, 0, 0, 0, 2, 10, 0, 0, 2}
	if !bytes.Equal(b, want) {
		t.Errorf("after setters:\n% x, want\n% x", []byte(b), want)
	}
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
