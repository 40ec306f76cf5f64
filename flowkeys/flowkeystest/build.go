package flowkeystest

import (
	"encoding/binary"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
)

// Addresses used throughout the corpus.
var (
	MACDst  = [6]byte{0x02, 0, 0, 0, 0, 0x02}
	MACSrc  = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	IPv4Src = [4]byte{10, 0, 0, 1}
	IPv4Dst = [4]byte{10, 0, 0, 2}
	IPv6Src = [16]byte{0xfe, 0x80, 14: 0, 15: 1}
	IPv6Dst = [16]byte{0xfe, 0x80, 14: 0, 15: 2}
)

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// Eth returns an Ethernet header (MACDst, MACSrc) with type t.
func Eth(t uint16) []byte { return headertest.Eth(MACDst, MACSrc, t, nil) }

// VLAN returns a VLAN tag: TPID tpid, TCI tci (the type that follows is
// not included).
func VLAN(tpid, tci uint16) []byte { return cat(u16(tpid), u16(tci)) }

// IPv4Opts describes an IPv4 header for IPv4: headertest's, whose
// zero addresses and ID IPv4 replaces with the corpus's.
type IPv4Opts = headertest.IPv4Hdr

// IPv4 returns an IPv4 header from IPv4Src to IPv4Dst (unless o names
// other addresses), ID 0x1234 (unless o has one), with payload appended
// and every checksum zero: the key does not depend on them.
func IPv4(o IPv4Opts, payload []byte) []byte {
	if o.Src == ([4]byte{}) {
		o.Src = IPv4Src
	}
	if o.Dst == ([4]byte{}) {
		o.Dst = IPv4Dst
	}
	if o.ID == 0 {
		o.ID = 0x1234
	}
	o.NoChecksums = true
	return headertest.IPv4(o, payload)
}

// IPv6 returns an IPv6 header (traffic class tc, flow label, hop limit
// 64) from IPv6Src to IPv6Dst with next header next and payload
// appended; checksums are left zero.
func IPv6(next, tc uint8, label uint32, payload []byte) []byte {
	return cat(headertest.IPv6Header(IPv6Src, IPv6Dst, next, 64, tc, label, len(payload)), payload)
}

// ExtHdr returns a generic IPv6 extension header (hop-by-hop, routing,
// destination options) of (len8+1)*8 bytes.
func ExtHdr(next uint8, len8 uint8) []byte {
	h := make([]byte, (int(len8)+1)*8)
	h[0] = next
	h[1] = len8
	return h
}

// FragHdr returns an IPv6 fragment header.
func FragHdr(next uint8, off uint16, more bool) []byte {
	v := off << 3
	if more {
		v |= 1
	}
	return cat([]byte{next, 0}, u16(v), u32(0xabcd))
}

// AuthHdr returns an IPv6 authentication header of (len4+2)*4 bytes.
func AuthHdr(next uint8, len4 uint8) []byte {
	h := make([]byte, (int(len4)+2)*4)
	h[0] = next
	h[1] = len4
	return h
}

// TCP returns a TCP header with data offset doff (in words; 0 means 5)
// and the given flags; options up to doff are zero.
func TCP(src, dst uint16, flags uint16, doff int) []byte {
	return headertest.TCPHeader(src, dst, 0, 0, flags, doff, 0)
}

// UDP returns a UDP header followed by payload.
func UDP(src, dst uint16, payload []byte) []byte { return headertest.UDP(src, dst, payload) }

// SCTP returns an SCTP common header (12 bytes).
func SCTP(src, dst uint16) []byte { return cat(u16(src), u16(dst), u32(1), u32(0)) }

// ICMP returns an ICMP or ICMPv6 header (8 bytes) with body appended.
func ICMP(typ, code uint8, body []byte) []byte { return headertest.ICMP(typ, code, 0, body) }

// ND returns an ICMPv6 neighbour solicitation (typ 135) or advertisement
// (136) for target with the given options appended.
func ND(typ, code uint8, target [16]byte, opts ...[]byte) []byte {
	return headertest.ICMP(typ, code, 0, cat(target[:], cat(opts...)))
}

// NDOpt returns an ND option of type t with a length of len8 units of 8
// bytes; data is placed after the 2-byte header and the rest is zero.
func NDOpt(t uint8, len8 uint8, data []byte) []byte {
	n := int(len8) * 8
	if n < 2 {
		n = 2
	}
	h := make([]byte, n)
	h[0] = t
	h[1] = len8
	copy(h[2:], data)
	return h
}

// ARP returns an ARP packet; hln and pln give the address lengths and
// the addresses are filled with recognisable bytes.
func ARP(hrd, pro uint16, hln, pln uint8, op uint16) []byte {
	h := cat(u16(hrd), u16(pro), []byte{hln, pln}, u16(op))
	for i := 0; i < 2*int(hln)+2*int(pln); i++ {
		h = append(h, byte(0xa0+i))
	}
	return h
}

// MPLS returns an MPLS label stack entry.
func MPLS(label uint32, tc uint8, bos bool, ttl uint8) []byte {
	v := label<<12 | uint32(tc&7)<<9 | uint32(ttl)
	if bos {
		v |= 0x100
	}
	return u32(v)
}

// NSH returns an NSH header: version ver, ttl, length len4 (in 4-byte
// words), MD type, next protocol np, path header, and ctx appended.
func NSH(ver uint8, flags uint8, ttl uint8, len4 uint8, mdtype, np uint8, path uint32, ctx []byte) []byte {
	v := uint16(ver&3)<<14 | uint16(flags&3)<<12 | uint16(ttl&0x3f)<<6 | uint16(len4&0x3f)
	return cat(u16(v), []byte{mdtype, np}, u32(path), ctx)
}

// EthKey returns the key of an Ethernet frame from MACSrc to MACDst of
// type t that came in on port inPort, with nothing above L2 parsed.
func EthKey(inPort uint32, t uint16) flowkeys.Key {
	return flowkeys.Key{InPort: inPort, MacProto: flowkeys.MacProtoEthernet, EthSrc: MACSrc, EthDst: MACDst, EthType: t}
}
