package conntrack

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
)

// IP protocol numbers the tracker treats specially.
const (
	ProtoICMP    = 1
	ProtoTCP     = 6
	ProtoUDP     = 17
	ProtoGRE     = 47
	ProtoICMPv6  = 58
	ProtoUDPLite = 136
)

// Tuple is one direction of a connection, as the kernel's struct
// nf_conntrack_tuple: addresses, protocol and the protocol's
// per-direction part.
//
// IPv4 addresses occupy the first 4 bytes of Src and Dst (the rest is
// zero). For TCP, UDP and UDP-Lite, SrcPort and DstPort are the ports.
// For ICMP and ICMPv6 they are laid out as the kernel's u.all words:
// SrcPort is the echo (query) identifier, DstPort is the type in its high
// byte and the code in its low byte; ICMPType, ICMPCode and ICMPID read
// them. Other protocols are tracked generically: both are zero.
type Tuple struct {
	Src, Dst         [16]byte
	SrcPort, DstPort uint16
	Proto            uint8
	V6               bool
}

// ICMPType is an ICMP tuple's type (the high byte of DstPort).
func (t Tuple) ICMPType() uint8 { return uint8(t.DstPort >> 8) }

// ICMPCode is an ICMP tuple's code (the low byte of DstPort).
func (t Tuple) ICMPCode() uint8 { return uint8(t.DstPort) }

// ICMPID is an ICMP tuple's echo identifier (SrcPort).
func (t Tuple) ICMPID() uint16 { return t.SrcPort }

// SrcAddr returns the source address.
func (t Tuple) SrcAddr() netip.Addr { return t.addr(&t.Src) }

// DstAddr returns the destination address.
func (t Tuple) DstAddr() netip.Addr { return t.addr(&t.Dst) }

func (t Tuple) addr(a *[16]byte) netip.Addr {
	if t.V6 {
		return netip.AddrFrom16(*a)
	}
	return netip.AddrFrom4([4]byte(a[:4]))
}

// String formats the tuple as "proto src:sport > dst:dport".
func (t Tuple) String() string {
	if t.isICMP() {
		return fmt.Sprintf("proto=%d src=%s dst=%s type=%d code=%d id=%d",
			t.Proto, t.SrcAddr(), t.DstAddr(), t.ICMPType(), t.ICMPCode(), t.ICMPID())
	}
	return fmt.Sprintf("proto=%d src=%s dst=%s sport=%d dport=%d",
		t.Proto, t.SrcAddr(), t.DstAddr(), t.SrcPort, t.DstPort)
}

// TupleFromAddrs builds a tuple from netip addresses (both IPv4 or both
// IPv6; an IPv4-mapped IPv6 address counts as IPv6).
func TupleFromAddrs(src, dst netip.Addr, proto uint8, sport, dport uint16) (Tuple, error) {
	if !src.IsValid() || !dst.IsValid() {
		return Tuple{}, fmt.Errorf("conntrack tuple: source %v or destination %v is not an address", src, dst)
	}
	if src.Is4() != dst.Is4() {
		return Tuple{}, fmt.Errorf("conntrack tuple: source %v and destination %v are not of one family", src, dst)
	}
	t := Tuple{Proto: proto, SrcPort: sport, DstPort: dport, V6: !src.Is4()}
	if t.V6 {
		t.Src, t.Dst = src.As16(), dst.As16()
	} else {
		s, d := src.As4(), dst.As4()
		copy(t.Src[:], s[:])
		copy(t.Dst[:], d[:])
	}
	return t, nil
}

func (t *Tuple) isICMP() bool { return t.Proto == ProtoICMP || t.Proto == ProtoICMPv6 }

// hasPorts reports whether the protocol's tuple has ports (or an ICMP
// identifier) that NAT may change.
func (t *Tuple) hasPorts() bool {
	switch t.Proto {
	case ProtoTCP, ProtoUDP, ProtoUDPLite, ProtoICMP, ProtoICMPv6:
		return true
	}
	return false
}

// icmpReplyType maps an ICMP query type to its reply's and back (the
// kernel's invmap in nf_conntrack_proto_icmp.c); 0 means no inverse.
// Types are stored plus one so that echo reply (type 0) is not "none".
var icmpInverse = [256]uint8{
	8: 0 + 1, 0: 8 + 1, // echo, echo reply
	13: 14 + 1, 14: 13 + 1, // timestamp
	15: 16 + 1, 16: 15 + 1, // information
	17: 18 + 1, 18: 17 + 1, // address mask
}

// icmp6Inverse is the ICMPv6 one (nf_conntrack_proto_icmpv6.c), plus one.
var icmp6Inverse = [256]uint8{
	128: 129 + 1, 129: 128 + 1, // echo
	139: 140 + 1, 140: 139 + 1, // node information
}

// invert returns the tuple of the other direction, and false when the
// tuple has none (an ICMP type that is not a query or its reply), as
// nf_ct_invert_tuple.
func (t *Tuple) invert() (Tuple, bool) {
	r := Tuple{Src: t.Dst, Dst: t.Src, Proto: t.Proto, V6: t.V6}
	switch t.Proto {
	case ProtoICMP, ProtoICMPv6:
		tab := &icmpInverse
		if t.Proto == ProtoICMPv6 {
			tab = &icmp6Inverse
		}
		inv := tab[t.ICMPType()]
		if inv == 0 {
			return Tuple{}, false
		}
		r.SrcPort = t.SrcPort
		r.DstPort = uint16(inv-1)<<8 | uint16(t.ICMPCode())
	default:
		r.SrcPort, r.DstPort = t.DstPort, t.SrcPort
	}
	return r, true
}

// equal is t == *u, field by field (the compiler calls memequal for
// the struct; the arrays compare in two words each), inlined.
func (t *Tuple) equal(u *Tuple) bool {
	return t.Src == u.Src && t.Dst == u.Dst &&
		t.SrcPort == u.SrcPort && t.DstPort == u.DstPort && t.Proto == u.Proto && t.V6 == u.V6
}

// hashSeed keys the table's hash (chosen at random per tracker, so that
// nobody outside can aim packets at one bucket).
type hashSeed [6]uint64

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// hash hashes a tuple and zone: the addresses' 64-bit words and one of
// ports, protocol, zone and family, folded pairwise with 128-bit
// multiplies (a keyed wyhash-style mix). An IPv4 tuple's addresses are
// one word (the rest of Src and Dst is zero), so it takes two multiplies
// where an IPv6 one takes four. It allocates nothing.
func (s *hashSeed) hash(t *Tuple, zone uint16) uint64 {
	le := binary.LittleEndian
	w4 := uint64(t.SrcPort) | uint64(t.DstPort)<<16 | uint64(t.Proto)<<32 | uint64(zone)<<40
	if !t.V6 {
		a := uint64(le.Uint32(t.Src[0:4])) | uint64(le.Uint32(t.Dst[0:4]))<<32
		return mix(mix(a^s[0], w4^s[1])^s[4], s[5])
	}
	w4 |= 1 << 56
	h := mix(le.Uint64(t.Src[0:8])^s[0], le.Uint64(t.Src[8:16])^s[1])
	h ^= mix(le.Uint64(t.Dst[0:8])^s[2], le.Uint64(t.Dst[8:16])^s[3])
	return mix(h^s[4], w4^s[5])
}
