// Package headertest builds packets for tests: Ethernet frames with VLAN
// tags, IPv4 (options, fragments, malformed lengths), IPv6, TCP, UDP,
// ICMP and ARP, with correct checksums unless asked otherwise. It is the
// one packet builder of the module's tests (flowkeystest's corpus and
// crosscheck's scenarios build on it). Every function returns a new
// slice and leaves its arguments unchanged; fields are host-order values,
// written in network byte order (see package header).
package headertest

import (
	"encoding/binary"
	"fmt"
	"net"

	"github.com/ovsdp/ovsdp/internal/header"
)

// MAC parses a MAC address literal; it panics on a bad literal (for
// constants in test tables only).
func MAC(s string) [6]byte {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		panic(fmt.Sprintf("headertest: bad MAC literal %q", s))
	}
	return [6]byte(hw)
}

// IP4 parses an IPv4 literal; it panics on a bad literal.
func IP4(s string) [4]byte {
	ip := net.ParseIP(s).To4()
	if ip == nil {
		panic(fmt.Sprintf("headertest: bad IPv4 literal %q", s))
	}
	return [4]byte(ip)
}

// IP6 parses an IPv6 literal; it panics on a bad literal.
func IP6(s string) [16]byte {
	ip := net.ParseIP(s)
	if ip == nil || ip.To4() != nil {
		panic(fmt.Sprintf("headertest: bad IPv6 literal %q", s))
	}
	return [16]byte(ip.To16())
}

// Eth returns an Ethernet header followed by payload. Each tag in tags
// is a (TPID, TCI) pair inserted before the type.
func Eth(dst, src [6]byte, typ uint16, payload []byte, tags ...[2]uint16) []byte {
	b := make([]byte, header.EthernetMinimumSize+header.VLANTagSize*len(tags), header.EthernetMinimumSize+header.VLANTagSize*len(tags)+len(payload))
	eth := header.Ethernet(b)
	eth.SetDestinationAddress(dst)
	eth.SetSourceAddress(src)
	for i, t := range tags {
		v := header.VLAN(b[header.EthernetTypeOffset+header.VLANTagSize*i:])
		v.SetTPID(t[0])
		v.SetTCI(t[1])
	}
	binary.BigEndian.PutUint16(b[len(b)-2:], typ)
	return append(b, payload...)
}

// IPv4Hdr describes an IPv4 header for IPv4.
type IPv4Hdr struct {
	Src, Dst [4]byte
	Proto    uint8
	TOS      uint8
	TTL      uint8
	ID       uint16
	DF, MF   bool
	FragOff  uint16 // in 8-byte units
	// Options follow the fixed header; unless IHL is set they are
	// padded with zeros to a multiple of 4 bytes.
	Options []byte
	// IHL is the header length field in 32-bit words (its low 4 bits
	// are written, whatever the options' length: for malformed headers);
	// 0 means 5 + the padded options' words.
	IHL int
	// TotalLen is the total length field; 0 means the packet's length.
	TotalLen int
	// NoChecksums leaves the header and transport checksums zero.
	NoChecksums bool
}

// IPv4 returns an IPv4 packet: the header h and payload. Unless
// h.NoChecksums it has a correct header checksum and, for a TCP, UDP or
// ICMP payload that is whole (not a fragment), the transport checksum
// filled in (in the copy of payload it holds).
func IPv4(h IPv4Hdr, payload []byte) []byte {
	opts := append([]byte(nil), h.Options...)
	ihl := h.IHL
	if ihl == 0 {
		for len(opts)%4 != 0 {
			opts = append(opts, 0)
		}
		ihl = 5 + len(opts)/4
	}
	hl := header.IPv4MinimumSize + len(opts)
	b := make([]byte, hl+len(payload))
	ip := header.IPv4(b)
	b[0] = 0x40 | byte(ihl&0x0f)
	ip.SetTOS(h.TOS)
	tl := h.TotalLen
	if tl == 0 {
		tl = len(b)
	}
	ip.SetTotalLength(uint16(tl))
	ip.SetID(h.ID)
	fo := h.FragOff & header.IPv4FragmentOffsetMask
	if h.DF {
		fo |= header.IPv4FlagDontFragment
	}
	if h.MF {
		fo |= header.IPv4FlagMoreFragments
	}
	ip.SetFlagsFragmentOffset(fo)
	ip.SetTTL(h.TTL)
	ip.SetProtocol(h.Proto)
	ip.SetSourceAddress(h.Src)
	ip.SetDestinationAddress(h.Dst)
	copy(b[header.IPv4MinimumSize:], opts)
	copy(b[hl:], payload)
	if h.NoChecksums {
		return b
	}
	ip[:hl].SetChecksum(ip[:hl].CalculateChecksum())
	if !h.MF && fo&header.IPv4FragmentOffsetMask == 0 {
		FillL4Checksum(b[hl:], h.Proto, ip.PseudoHeaderSum(h.Proto, len(payload)))
	}
	return b
}

// IPv6Header returns a 40-byte IPv6 header for a payload of payloadLen
// bytes whose first header is next.
func IPv6Header(src, dst [16]byte, next, hlim, tclass uint8, label uint32, payloadLen int) []byte {
	b := header.IPv6(make([]byte, header.IPv6MinimumSize))
	b.SetVersionClassLabel(6<<28 | uint32(tclass)<<20 | label&header.IPv6FlowLabelMask)
	b.SetPayloadLength(uint16(payloadLen))
	b.SetNextHeader(next)
	b.SetHopLimit(hlim)
	b.SetSourceAddress(src)
	b.SetDestinationAddress(dst)
	return b
}

// IPv6 returns an IPv6 packet (no extension headers unless payload
// starts with them, next being the first one's type), filling in the
// TCP, UDP or ICMPv6 checksum when next is one of those.
func IPv6(src, dst [16]byte, next, hlim uint8, tclass uint8, label uint32, payload []byte) []byte {
	b := append(IPv6Header(src, dst, next, hlim, tclass, label, len(payload)), payload...)
	FillL4Checksum(b[header.IPv6MinimumSize:], next, header.IPv6(b).PseudoHeaderSum(next, len(payload)))
	return b
}

// UDP returns a UDP header and payload (checksum zero: IPv4 and IPv6
// fill it in).
func UDP(src, dst uint16, payload []byte) []byte {
	b := make([]byte, header.UDPMinimumSize+len(payload))
	u := header.UDP(b)
	header.Ports(u).SetSource(src)
	header.Ports(u).SetDestination(dst)
	u.SetLength(uint16(len(b)))
	copy(b[header.UDPMinimumSize:], payload)
	return b
}

// TCPHeader returns a TCP header: data offset doff in 32-bit words (0
// means 5; the header is doff*4 bytes, at least 20, options zero), the
// 12 flag bits of flags, window win, checksum zero.
func TCPHeader(src, dst uint16, seq, ack uint32, flags uint16, doff int, win uint16) []byte {
	if doff == 0 {
		doff = 5
	}
	b := make([]byte, max(doff*4, header.TCPMinimumSize))
	t := header.TCP(b)
	header.Ports(t).SetSource(src)
	header.Ports(t).SetDestination(dst)
	t.SetSequenceNumber(seq)
	t.SetAckNumber(ack)
	binary.BigEndian.PutUint16(b[12:], uint16(doff&0xf)<<12|flags&0x0fff)
	binary.BigEndian.PutUint16(b[14:], win)
	return b
}

// TCP returns a 20-byte TCP header (window 8192) and payload (checksum
// zero: IPv4 and IPv6 fill it in).
func TCP(src, dst uint16, seq, ack uint32, flags uint8, payload []byte) []byte {
	return append(TCPHeader(src, dst, seq, ack, uint16(flags), 5, 8192), payload...)
}

// ICMP returns an ICMP (or ICMPv6) message: type, code, the 4 bytes of
// rest-of-header from rest, then body (checksum zero: IPv4 and IPv6
// fill it in).
func ICMP(typ, code uint8, rest uint32, body []byte) []byte {
	b := make([]byte, header.ICMPMinimumSize+len(body))
	ic := header.ICMP(b)
	ic.SetType(typ)
	ic.SetCode(code)
	binary.BigEndian.PutUint32(b[4:], rest)
	copy(b[header.ICMPMinimumSize:], body)
	return b
}

// ARP returns an Ethernet/IPv4 ARP packet.
func ARP(op uint16, sha [6]byte, spa [4]byte, tha [6]byte, tpa [4]byte) []byte {
	a := header.ARP(make([]byte, header.ARPSize))
	a.SetIPv4OverEthernet()
	a.SetOp(op)
	a.SetSenderHardwareAddress(sha)
	a.SetSenderProtocolAddress(spa)
	a.SetTargetHardwareAddress(tha)
	a.SetTargetProtocolAddress(tpa)
	return a
}

// FillL4Checksum computes and stores the checksum of the transport
// message l4 of protocol proto (TCP, UDP, ICMP, ICMPv6; others are left
// alone, as is a message too short for its checksum field) with the
// pseudo-header sum pseudo (ignored for ICMP over IPv4, which has none);
// a UDP checksum that computes to 0 is stored as 0xffff.
func FillL4Checksum(l4 []byte, proto uint8, pseudo uint64) {
	off, minSize := header.TransportChecksumOffset(proto)
	if off < 0 || len(l4) < minSize {
		return
	}
	l4[off], l4[off+1] = 0, 0
	if proto == header.IPProtoICMP {
		pseudo = 0
	}
	c := header.Checksum(l4, pseudo)
	if proto == header.IPProtoUDP && c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(l4[off:], c)
}
