package crosscheck

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"

	"github.com/ovsdp/ovsdp/internal/header"
)

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
// or malformed (and L4 for a later fragment, which has none). IPv6
// extension headers are walked as the kernel walks them
// (header.IPv6ExtWalk), within the payload length.
func Parse(b []byte) Parsed {
	p := Parsed{L3: -1, L4: -1}
	if len(b) < header.EthernetMinimumSize {
		return p
	}
	off := header.EthernetTypeOffset
	typ := header.Ethernet(b).Type()
	for header.IsVLAN(typ) && len(b) >= off+header.VLANTagSize+2 {
		v := header.VLAN(b[off:])
		p.Tags = append(p.Tags, [2]uint16{typ, v.TCI()})
		off += header.VLANTagSize
		typ = v.Type()
	}
	p.EthType = typ
	off += 2
	switch typ {
	case header.EtherTypeIPv4:
		if len(b) < off+header.IPv4MinimumSize {
			return p
		}
		ip := header.IPv4(b[off:])
		hl, tl := ip.HeaderLength(), int(ip.TotalLength())
		if ip.Version() != 4 || hl < header.IPv4MinimumSize || tl < hl || len(ip) < tl {
			return p
		}
		p.L3 = off
		p.Proto = ip.Protocol()
		p.Fragment = ip.FlagsFragmentOffset()&(header.IPv4FlagMoreFragments|header.IPv4FragmentOffsetMask) != 0
		p.L4 = off + hl
		p.L4Len = tl - hl
	case header.EtherTypeIPv6:
		if len(b) < off+header.IPv6MinimumSize {
			return p
		}
		ip := header.IPv6(b[off:])
		end := off + header.IPv6MinimumSize + int(ip.PayloadLength())
		if ip.Version() != 6 || len(b) < end {
			return p
		}
		p.L3 = off
		p.IPv6 = true
		w := header.IPv6ExtWalk(b[:end], off)
		p.Fragment = w.Fragment
		if !w.OK {
			return p
		}
		p.Proto = w.Next
		if w.FragmentOffset == 0 {
			p.L4 = w.Offset
			p.L4Len = end - w.Offset
		}
	case header.EtherTypeARP:
		if len(b) >= off+header.ARPSize {
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
	var pseudo uint64
	switch p.EthType {
	case header.EtherTypeIPv4:
		ip := header.IPv4(b[p.L3:p.L4])
		if header.Checksum(ip, 0) != 0 {
			probs = append(probs, fmt.Sprintf("bad IPv4 header checksum %#04x", ip.Checksum()))
		}
		pseudo = ip.PseudoHeaderSum(p.Proto, p.L4Len)
	case header.EtherTypeIPv6:
		pseudo = header.IPv6(b[p.L3:]).PseudoHeaderSum(p.Proto, p.L4Len)
	default:
		return ""
	}
	if p.Fragment || p.L4 < 0 {
		return strings.Join(probs, "\n")
	}
	off, min := header.TransportChecksumOffset(p.Proto)
	if off >= 0 && p.L4Len >= min && p.L4+p.L4Len <= len(b) {
		l4 := b[p.L4 : p.L4+p.L4Len]
		if p.Proto == header.IPProtoICMP {
			pseudo = 0
		}
		stored := binary.BigEndian.Uint16(l4[off:])
		if !(p.Proto == header.IPProtoUDP && stored == 0 && !p.IPv6) && header.Checksum(l4, pseudo) != 0 {
			probs = append(probs, fmt.Sprintf("bad %s checksum %#04x", protoName(p.Proto), stored))
		}
	}
	return strings.Join(probs, "\n")
}

func protoName(p uint8) string {
	switch p {
	case header.IPProtoTCP:
		return "TCP"
	case header.IPProtoUDP:
		return "UDP"
	case header.IPProtoICMP:
		return "ICMP"
	case header.IPProtoICMPv6:
		return "ICMPv6"
	}
	return fmt.Sprintf("proto %d", p)
}

// Describe returns a one-line summary of a frame for diffs: addresses,
// TTL, TOS, ports, and whether its checksums are right.
func Describe(b []byte) string {
	if len(b) < header.EthernetMinimumSize {
		return fmt.Sprintf("runt (%d bytes)", len(b))
	}
	p := Parse(b)
	var s strings.Builder
	eth := header.Ethernet(b)
	esrc, edst := eth.SourceAddress(), eth.DestinationAddress()
	fmt.Fprintf(&s, "%d bytes %s>%s", len(b), net.HardwareAddr(esrc[:]), net.HardwareAddr(edst[:]))
	for _, t := range p.Tags {
		fmt.Fprintf(&s, " vlan(%#04x,vid=%d,pcp=%d)", t[0], t[1]&0xfff, t[1]>>13)
	}
	fmt.Fprintf(&s, " type=%#04x", p.EthType)
	if p.L3 < 0 {
		return s.String()
	}
	switch p.EthType {
	case header.EtherTypeIPv4:
		h := header.IPv4(b[p.L3:])
		src, dst := h.SourceAddress(), h.DestinationAddress()
		fmt.Fprintf(&s, " ipv4 %s>%s proto=%d tos=%#x ttl=%d", net.IP(src[:]), net.IP(dst[:]), h.Protocol(), h.TOS(), h.TTL())
		if p.Fragment {
			fmt.Fprintf(&s, " frag=%#04x", h.FlagsFragmentOffset())
		}
	case header.EtherTypeIPv6:
		h := header.IPv6(b[p.L3:])
		src, dst := h.SourceAddress(), h.DestinationAddress()
		fmt.Fprintf(&s, " ipv6 %s>%s next=%d hlim=%d", net.IP(src[:]), net.IP(dst[:]), p.Proto, h.HopLimit())
	case header.EtherTypeARP:
		h := header.ARP(b[p.L3:])
		spa, tpa := h.SenderProtocolAddress(), h.TargetProtocolAddress()
		fmt.Fprintf(&s, " arp op=%d %s>%s", h.Op(), net.IP(spa[:]), net.IP(tpa[:]))
		return s.String()
	}
	if !p.Fragment && p.L4Len >= 4 && (p.Proto == header.IPProtoTCP || p.Proto == header.IPProtoUDP) {
		ports := header.Ports(b[p.L4:])
		fmt.Fprintf(&s, " ports %d>%d", ports.Source(), ports.Destination())
	}
	if !p.Fragment && p.L4Len >= 2 && (p.Proto == header.IPProtoICMP || p.Proto == header.IPProtoICMPv6) {
		ic := header.ICMP(b[p.L4:])
		fmt.Fprintf(&s, " icmp type=%d code=%d", ic.Type(), ic.Code())
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
	if !p.IPv6 || p.Proto != header.IPProtoICMPv6 || p.L4 < 0 || p.L4Len < 1 || p.L4 >= len(b) {
		return false
	}
	switch header.ICMP(b[p.L4:]).Type() {
	case header.ICMPv6MLDQuery, header.ICMPv6MLDReport, header.ICMPv6MLDDone, header.ICMPv6RouterSolicit, header.ICMPv6MLDv2Report:
		return true
	}
	return false
}
