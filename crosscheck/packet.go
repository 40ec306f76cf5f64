package crosscheck

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
)

// Ethernet types and IP protocols the builders and the describer know.
const (
	EthIPv4 = 0x0800
	EthARP  = 0x0806
	EthVLAN = 0x8100
	EthQinQ = 0x88a8
	EthIPv6 = 0x86dd

	ProtoICMP   = 1
	ProtoTCP    = 6
	ProtoUDP    = 17
	ProtoICMPv6 = 58
)

// MAC parses a MAC address literal; it panics on a bad literal (for
// constants in scenario tables only).
func MAC(s string) [6]byte {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		panic(fmt.Sprintf("crosscheck: bad MAC literal %q", s))
	}
	return [6]byte(hw)
}

// IP4 parses an IPv4 literal; it panics on a bad literal.
func IP4(s string) [4]byte {
	ip := net.ParseIP(s).To4()
	if ip == nil {
		panic(fmt.Sprintf("crosscheck: bad IPv4 literal %q", s))
	}
	return [4]byte(ip)
}

// IP6 parses an IPv6 literal; it panics on a bad literal.
func IP6(s string) [16]byte {
	ip := net.ParseIP(s)
	if ip == nil || ip.To4() != nil {
		panic(fmt.Sprintf("crosscheck: bad IPv6 literal %q", s))
	}
	return [16]byte(ip.To16())
}

// Eth returns an Ethernet header followed by payload. Each tag in tags
// is a (TPID, TCI) pair inserted before the type.
func Eth(dst, src [6]byte, typ uint16, payload []byte, tags ...[2]uint16) []byte {
	b := make([]byte, 0, 14+4*len(tags)+len(payload))
	b = append(b, dst[:]...)
	b = append(b, src[:]...)
	for _, t := range tags {
		b = binary.BigEndian.AppendUint16(b, t[0])
		b = binary.BigEndian.AppendUint16(b, t[1])
	}
	b = binary.BigEndian.AppendUint16(b, typ)
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
	Options  []byte // padded to a multiple of 4 with zeros
}

// IPv4 returns an IPv4 packet with a correct header checksum. For TCP,
// UDP and ICMP payloads that are whole (not a fragment), it also fills
// in the transport checksum; payload is not modified.
func IPv4(h IPv4Hdr, payload []byte) []byte {
	opts := append([]byte(nil), h.Options...)
	for len(opts)%4 != 0 {
		opts = append(opts, 0)
	}
	hl := 20 + len(opts)
	b := make([]byte, hl+len(payload))
	b[0] = 0x40 | byte(hl/4)
	b[1] = h.TOS
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	binary.BigEndian.PutUint16(b[4:], h.ID)
	fo := h.FragOff & 0x1fff
	if h.DF {
		fo |= 0x4000
	}
	if h.MF {
		fo |= 0x2000
	}
	binary.BigEndian.PutUint16(b[6:], fo)
	b[8] = h.TTL
	b[9] = h.Proto
	copy(b[12:], h.Src[:])
	copy(b[16:], h.Dst[:])
	copy(b[20:], opts)
	binary.BigEndian.PutUint16(b[10:], Checksum(b[:hl], 0))
	copy(b[hl:], payload)
	if !h.MF && fo&0x1fff == 0 {
		fillL4Checksum(b[hl:], h.Proto, pseudo4(h.Src, h.Dst, h.Proto, len(payload)))
	}
	return b
}

// IPv6 returns an IPv6 packet (no extension headers unless payload
// starts with them, next being the first one's type), filling in the
// TCP, UDP or ICMPv6 checksum when next is one of those.
func IPv6(src, dst [16]byte, next, hlim uint8, tclass uint8, label uint32, payload []byte) []byte {
	b := make([]byte, 40+len(payload))
	binary.BigEndian.PutUint32(b, 6<<28|uint32(tclass)<<20|label&0xfffff)
	binary.BigEndian.PutUint16(b[4:], uint16(len(payload)))
	b[6] = next
	b[7] = hlim
	copy(b[8:], src[:])
	copy(b[24:], dst[:])
	copy(b[40:], payload)
	fillL4Checksum(b[40:], next, pseudo6(src, dst, next, len(payload)))
	return b
}

// UDP returns a UDP header and payload (checksum filled by IPv4/IPv6).
func UDP(src, dst uint16, payload []byte) []byte {
	b := make([]byte, 8+len(payload))
	binary.BigEndian.PutUint16(b, src)
	binary.BigEndian.PutUint16(b[2:], dst)
	binary.BigEndian.PutUint16(b[4:], uint16(len(b)))
	copy(b[8:], payload)
	return b
}

// TCP flag bits.
const (
	TCPFin = 0x01
	TCPSyn = 0x02
	TCPRst = 0x04
	TCPPsh = 0x08
	TCPAck = 0x10
)

// TCP returns a 20-byte TCP header and payload (checksum filled by
// IPv4/IPv6).
func TCP(src, dst uint16, seq, ack uint32, flags uint8, payload []byte) []byte {
	b := make([]byte, 20+len(payload))
	binary.BigEndian.PutUint16(b, src)
	binary.BigEndian.PutUint16(b[2:], dst)
	binary.BigEndian.PutUint32(b[4:], seq)
	binary.BigEndian.PutUint32(b[8:], ack)
	b[12] = 5 << 4
	b[13] = flags
	binary.BigEndian.PutUint16(b[14:], 8192)
	copy(b[20:], payload)
	return b
}

// ICMP returns an ICMP (or ICMPv6) message: type, code, the 4 bytes of
// rest-of-header from rest, then body (checksum filled by IPv4/IPv6).
func ICMP(typ, code uint8, rest uint32, body []byte) []byte {
	b := make([]byte, 8+len(body))
	b[0], b[1] = typ, code
	binary.BigEndian.PutUint32(b[4:], rest)
	copy(b[8:], body)
	return b
}

// ARP returns an Ethernet/IPv4 ARP packet.
func ARP(op uint16, sha [6]byte, spa [4]byte, tha [6]byte, tpa [4]byte) []byte {
	b := make([]byte, 28)
	binary.BigEndian.PutUint16(b, 1)
	binary.BigEndian.PutUint16(b[2:], EthIPv4)
	b[4], b[5] = 6, 4
	binary.BigEndian.PutUint16(b[6:], op)
	copy(b[8:], sha[:])
	copy(b[14:], spa[:])
	copy(b[18:], tha[:])
	copy(b[24:], tpa[:])
	return b
}

// Checksum returns the Internet checksum (RFC 1071) of b added to the
// partial sum init.
func Checksum(b []byte, init uint32) uint16 {
	s := init
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func sum16(b []byte) uint32 {
	var s uint32
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

func pseudo4(src, dst [4]byte, proto uint8, n int) uint32 {
	return sum16(src[:]) + sum16(dst[:]) + uint32(proto) + uint32(n)
}

func pseudo6(src, dst [16]byte, next uint8, n int) uint32 {
	return sum16(src[:]) + sum16(dst[:]) + uint32(next) + uint32(n)
}

// l4CsumOffset is where proto's checksum lives in its header, or -1.
func l4CsumOffset(proto uint8) (off, minLen int) {
	switch proto {
	case ProtoTCP:
		return 16, 20
	case ProtoUDP:
		return 6, 8
	case ProtoICMP, ProtoICMPv6:
		return 2, 4
	}
	return -1, 0
}

func fillL4Checksum(l4 []byte, proto uint8, pseudo uint32) {
	off, min := l4CsumOffset(proto)
	if off < 0 || len(l4) < min {
		return
	}
	l4[off], l4[off+1] = 0, 0
	if proto == ProtoICMP {
		pseudo = 0
	}
	c := Checksum(l4, pseudo)
	if proto == ProtoUDP && c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(l4[off:], c)
}

// Parsed is what Parse found in a frame: offsets of its headers, or -1.
type Parsed struct {
	EthType  uint16
	Tags     [][2]uint16
	L3, L4   int // offsets of the IP (or ARP) and transport headers
	Proto    uint8
	IPv6     bool
	Fragment bool // an IPv4 fragment or IPv6 packet with a fragment header
	L4Len    int  // transport length according to the IP header
}

// Parse finds the headers of an Ethernet frame without trusting it: it
// never reads beyond b, and leaves L3/L4 at -1 where a header is missing
// or malformed.
func Parse(b []byte) Parsed {
	p := Parsed{L3: -1, L4: -1}
	if len(b) < 14 {
		return p
	}
	off := 12
	typ := binary.BigEndian.Uint16(b[off:])
	for (typ == EthVLAN || typ == EthQinQ) && len(b) >= off+6 {
		p.Tags = append(p.Tags, [2]uint16{typ, binary.BigEndian.Uint16(b[off+2:])})
		off += 4
		typ = binary.BigEndian.Uint16(b[off:])
	}
	p.EthType = typ
	off += 2
	switch typ {
	case EthIPv4:
		if len(b) < off+20 || b[off]>>4 != 4 {
			return p
		}
		hl := int(b[off]&0x0f) * 4
		tl := int(binary.BigEndian.Uint16(b[off+2:]))
		if hl < 20 || tl < hl || len(b) < off+tl {
			return p
		}
		p.L3 = off
		p.Proto = b[off+9]
		fo := binary.BigEndian.Uint16(b[off+6:])
		p.Fragment = fo&0x3fff != 0
		p.L4 = off + hl
		p.L4Len = tl - hl
	case EthIPv6:
		if len(b) < off+40 || b[off]>>4 != 6 {
			return p
		}
		pl := int(binary.BigEndian.Uint16(b[off+4:]))
		if len(b) < off+40+pl {
			return p
		}
		p.L3 = off
		p.IPv6 = true
		next := b[off+6]
		l4 := off + 40
		end := l4 + pl
		for next == 0 || next == 43 || next == 60 || next == 44 {
			if end < l4+8 {
				return p
			}
			if next == 44 {
				p.Fragment = true
				next = b[l4]
				l4 += 8
				continue
			}
			n := b[l4]
			l4 += (int(b[l4+1]) + 1) * 8
			next = n
			if l4 > end {
				return p
			}
		}
		p.Proto = next
		p.L4 = l4
		p.L4Len = end - l4
	case EthARP:
		if len(b) >= off+28 {
			p.L3 = off
		}
	}
	return p
}

// VerifyChecksums checks the IPv4 header checksum and the TCP, UDP, ICMP
// and ICMPv6 checksums of a frame (not of fragments, whose transport
// checksum covers bytes elsewhere). It returns one problem per line, or
// "" when every checksum present is right.
func VerifyChecksums(b []byte) string {
	p := Parse(b)
	var probs []string
	if p.L3 < 0 {
		return ""
	}
	var pseudo uint32
	switch p.EthType {
	case EthIPv4:
		hl := p.L4 - p.L3
		if c := Checksum(b[p.L3:p.L4], 0); c != 0 {
			probs = append(probs, fmt.Sprintf("bad IPv4 header checksum %#04x", binary.BigEndian.Uint16(b[p.L3+10:])))
		}
		_ = hl
		pseudo = pseudo4([4]byte(b[p.L3+12:p.L3+16]), [4]byte(b[p.L3+16:p.L3+20]), p.Proto, p.L4Len)
	case EthIPv6:
		pseudo = pseudo6([16]byte(b[p.L3+8:p.L3+24]), [16]byte(b[p.L3+24:p.L3+40]), p.Proto, p.L4Len)
	default:
		return ""
	}
	if p.Fragment {
		return strings.Join(probs, "\n")
	}
	off, min := l4CsumOffset(p.Proto)
	if off >= 0 && p.L4Len >= min && p.L4+p.L4Len <= len(b) {
		l4 := b[p.L4 : p.L4+p.L4Len]
		if p.Proto == ProtoICMP {
			pseudo = 0
		}
		stored := binary.BigEndian.Uint16(l4[off:])
		if !(p.Proto == ProtoUDP && stored == 0 && !p.IPv6) && Checksum(l4, pseudo) != 0 {
			probs = append(probs, fmt.Sprintf("bad %s checksum %#04x", protoName(p.Proto), stored))
		}
	}
	return strings.Join(probs, "\n")
}

func protoName(p uint8) string {
	switch p {
	case ProtoTCP:
		return "TCP"
	case ProtoUDP:
		return "UDP"
	case ProtoICMP:
		return "ICMP"
	case ProtoICMPv6:
		return "ICMPv6"
	}
	return fmt.Sprintf("proto %d", p)
}

// Describe returns a one-line summary of a frame for diffs: addresses,
// TTL, TOS, ports, and whether its checksums are right.
func Describe(b []byte) string {
	if len(b) < 14 {
		return fmt.Sprintf("runt (%d bytes)", len(b))
	}
	p := Parse(b)
	var s strings.Builder
	fmt.Fprintf(&s, "%d bytes %s>%s", len(b), net.HardwareAddr(b[6:12]), net.HardwareAddr(b[0:6]))
	for _, t := range p.Tags {
		fmt.Fprintf(&s, " vlan(%#04x,vid=%d,pcp=%d)", t[0], t[1]&0xfff, t[1]>>13)
	}
	fmt.Fprintf(&s, " type=%#04x", p.EthType)
	if p.L3 < 0 {
		return s.String()
	}
	switch p.EthType {
	case EthIPv4:
		h := b[p.L3:]
		fmt.Fprintf(&s, " ipv4 %s>%s proto=%d tos=%#x ttl=%d", net.IP(h[12:16]), net.IP(h[16:20]), h[9], h[1], h[8])
		if p.Fragment {
			fmt.Fprintf(&s, " frag=%#04x", binary.BigEndian.Uint16(h[6:]))
		}
	case EthIPv6:
		h := b[p.L3:]
		fmt.Fprintf(&s, " ipv6 %s>%s next=%d hlim=%d", net.IP(h[8:24]), net.IP(h[24:40]), p.Proto, h[7])
	case EthARP:
		h := b[p.L3:]
		fmt.Fprintf(&s, " arp op=%d %s>%s", binary.BigEndian.Uint16(h[6:]), net.IP(h[14:18]), net.IP(h[24:28]))
		return s.String()
	}
	if !p.Fragment && p.L4Len >= 4 && (p.Proto == ProtoTCP || p.Proto == ProtoUDP) {
		fmt.Fprintf(&s, " ports %d>%d", binary.BigEndian.Uint16(b[p.L4:]), binary.BigEndian.Uint16(b[p.L4+2:]))
	}
	if !p.Fragment && p.L4Len >= 2 && (p.Proto == ProtoICMP || p.Proto == ProtoICMPv6) {
		fmt.Fprintf(&s, " icmp type=%d code=%d", b[p.L4], b[p.L4+1])
	}
	if probs := VerifyChecksums(b); probs != "" {
		s.WriteString(" CHECKSUM: " + strings.ReplaceAll(probs, "\n", "; "))
	} else {
		s.WriteString(" csum ok")
	}
	return s.String()
}

// IsNoise reports whether b is background traffic that a host's IPv6
// stack sends on its own (MLD queries, reports and done messages, router
// solicitations): frames and upcalls of it are counted, not compared.
func IsNoise(b []byte) bool {
	p := Parse(b)
	if !p.IPv6 || p.Proto != ProtoICMPv6 || p.L4 < 0 || p.L4Len < 1 || p.L4 >= len(b) {
		return false
	}
	switch b[p.L4] {
	case 130, 131, 132, 133, 143:
		return true
	}
	return false
}
