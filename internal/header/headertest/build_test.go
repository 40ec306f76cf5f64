package headertest

import (
	"bytes"
	"testing"

	"github.com/ovsdp/ovsdp/internal/header"
)

var (
	mac1, mac2 = MAC("02:00:00:00:00:01"), MAC("02:00:00:00:00:02")
	ip1, ip2   = IP4("10.0.0.1"), IP4("10.0.0.2")
	ip61, ip62 = IP6("fe80::1"), IP6("fe80::2")
)

// l4Sum verifies a transport checksum the way a receiver does: the sum
// over the message with its checksum in place, plus the pseudo-header,
// complements to 0.
func l4Sum(l4 []byte, pseudo uint64) uint16 { return header.Checksum(l4, pseudo) }

func TestEthWithTags(t *testing.T) {
	b := Eth(mac2, mac1, header.EtherTypeIPv4, []byte{0x45}, [2]uint16{header.EtherTypeQinQ, 5}, [2]uint16{header.EtherTypeVLAN, 6})
	want := append(append(append([]byte(nil), mac2[:]...), mac1[:]...), 0x88, 0xa8, 0, 5, 0x81, 0, 0, 6, 0x08, 0, 0x45)
	if !bytes.Equal(b, want) {
		t.Fatalf("Eth = % x, want % x", b, want)
	}
	if off, et, tags := header.L2(b); off != 22 || et != header.EtherTypeIPv4 || tags != 2 {
		t.Errorf("L2 of the built frame = %d, %#x, %d", off, et, tags)
	}
}

func TestIPv4Checksums(t *testing.T) {
	for _, proto := range []uint8{header.IPProtoTCP, header.IPProtoUDP, header.IPProtoICMP} {
		var l4 []byte
		switch proto {
		case header.IPProtoTCP:
			l4 = TCP(1, 2, 3, 4, header.TCPFlagSyn, []byte("abc"))
		case header.IPProtoUDP:
			l4 = UDP(1, 2, []byte("abcde"))
		default:
			l4 = ICMP(header.ICMPv4EchoRequest, 0, 0x10002, []byte("ping"))
		}
		b := IPv4(IPv4Hdr{Src: ip1, Dst: ip2, Proto: proto, TTL: 64, ID: 7, DF: true, Options: []byte{1, 1, 1}}, l4)
		ip := header.IPv4(b)
		if ip.HeaderLength() != 24 || int(ip.TotalLength()) != len(b) || ip.ID() != 7 || ip.FlagsFragmentOffset() != header.IPv4FlagDontFragment ||
			ip.Protocol() != proto || ip.TTL() != 64 || ip.SourceAddress() != ip1 || ip.DestinationAddress() != ip2 {
			t.Errorf("proto %d: header % x", proto, b[:24])
		}
		if header.Checksum(b[:24], 0) != 0 {
			t.Errorf("proto %d: bad header checksum", proto)
		}
		pseudo := ip.PseudoHeaderSum(proto, len(l4))
		if proto == header.IPProtoICMP {
			pseudo = 0
		}
		if l4Sum(b[24:], pseudo) != 0 {
			t.Errorf("proto %d: bad transport checksum", proto)
		}
		if !bytes.Equal(l4[header.ICMPChecksumOffset:header.ICMPChecksumOffset+2], []byte{0, 0}) && proto == header.IPProtoICMP {
			t.Errorf("the payload passed in was modified")
		}
	}
	// A fragment gets no transport checksum; NoChecksums none at all;
	// IHL and TotalLen are written as given.
	f := IPv4(IPv4Hdr{Src: ip1, Dst: ip2, Proto: header.IPProtoUDP, MF: true}, UDP(1, 2, nil))
	if header.UDP(f[20:]).Checksum() != 0 || header.Checksum(f[:20], 0) != 0 {
		t.Errorf("first fragment: % x", f)
	}
	raw := IPv4(IPv4Hdr{Proto: header.IPProtoUDP, IHL: 15, TotalLen: 1500, NoChecksums: true}, UDP(1, 2, nil))
	if ip := header.IPv4(raw); ip.HeaderLength() != 60 || ip.TotalLength() != 1500 || ip.Checksum() != 0 || header.UDP(raw[20:]).Checksum() != 0 || len(raw) != 28 {
		t.Errorf("raw header: % x", raw)
	}
}

func TestIPv6Checksums(t *testing.T) {
	for _, c := range []struct {
		next uint8
		l4   []byte
	}{
		{header.IPProtoTCP, TCP(1, 2, 3, 4, header.TCPFlagAck, []byte("x"))},
		{header.IPProtoUDP, UDP(1, 2, []byte("xy"))},
		{header.IPProtoICMPv6, ICMP(header.ICMPv6EchoRequest, 0, 1, nil)},
	} {
		b := IPv6(ip61, ip62, c.next, 9, 0xb8, 0x12345, c.l4)
		ip := header.IPv6(b)
		if ip.Version() != 6 || ip.TrafficClass() != 0xb8 || ip.FlowLabel() != 0x12345 || int(ip.PayloadLength()) != len(c.l4) ||
			ip.NextHeader() != c.next || ip.HopLimit() != 9 || ip.SourceAddress() != ip61 || ip.DestinationAddress() != ip62 {
			t.Errorf("next %d: header % x", c.next, b[:40])
		}
		if l4Sum(b[40:], ip.PseudoHeaderSum(c.next, len(c.l4))) != 0 {
			t.Errorf("next %d: bad transport checksum", c.next)
		}
	}
}

func TestTransportHeaders(t *testing.T) {
	th := header.TCP(TCPHeader(80, 443, 1000, 2000, 0x1ff, 8, 100))
	if len(th) != 32 || header.Ports(th).Source() != 80 || header.Ports(th).Destination() != 443 || th.SequenceNumber() != 1000 || th.AckNumber() != 2000 ||
		th.DataOffset() != 32 || th.Flags() != 0x1ff || th.WindowSize() != 100 {
		t.Errorf("TCPHeader: % x", []byte(th))
	}
	if th := header.TCP(TCP(1, 2, 3, 4, header.TCPFlagFin, []byte("p"))); len(th) != 21 || th.DataOffset() != 20 || th.WindowSize() != 8192 || th.Flags() != 1 {
		t.Errorf("TCP: % x", []byte(th))
	}
	if u := header.UDP(UDP(5, 6, []byte("abc"))); header.Ports(u).Source() != 5 || header.Ports(u).Destination() != 6 || u.Length() != 11 || len(u) != 11 {
		t.Errorf("UDP: % x", []byte(u))
	}
	if ic := header.ICMP(ICMP(8, 1, 0x00050006, []byte("z"))); ic.Type() != 8 || ic.Code() != 1 || ic.Ident() != 5 || ic.Sequence() != 6 || len(ic) != 9 {
		t.Errorf("ICMP: % x", []byte(ic))
	}
	a := header.ARP(ARP(header.ARPReply, mac1, ip1, mac2, ip2))
	if !a.IsIPv4OverEthernet() || a.Op() != header.ARPReply || a.SenderHardwareAddress() != mac1 || a.SenderProtocolAddress() != ip1 ||
		a.TargetHardwareAddress() != mac2 || a.TargetProtocolAddress() != ip2 {
		t.Errorf("ARP: % x", []byte(a))
	}
}

func TestLiteralsPanic(t *testing.T) {
	for _, f := range []func(){func() { MAC("nope") }, func() { IP4("::1") }, func() { IP6("10.0.0.1") }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("a bad literal did not panic")
				}
			}()
			f()
		}()
	}
}
