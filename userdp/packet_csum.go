package userdp

import (
	"encoding/binary"
	"hash/crc32"
)

// Internet checksum helpers. Checksums are handled as uint16 values in
// host order, read from and written to the packet big-endian.

// fold16 folds a 32-bit one's complement sum to 16 bits.
func fold16(s uint32) uint16 {
	s = s&0xffff + s>>16
	s = s&0xffff + s>>16
	return uint16(s)
}

// CsumReplace2 returns the Internet checksum csum updated for a 16-bit
// field changing from old to new, by RFC 1624 equation 3:
// HC' = ~(~HC + ~m + m'). It is what the kernel's csum_replace2 computes.
func CsumReplace2(csum, old, new uint16) uint16 {
	return ^fold16(uint32(^csum) + uint32(^old) + uint32(new))
}

// CsumReplace4 is CsumReplace2 for a 32-bit field (e.g. an IPv4 address),
// as the kernel's csum_replace4.
func CsumReplace4(csum uint16, old, new uint32) uint16 {
	s := uint32(^csum) + (^old)>>16 + (^old)&0xffff + new>>16 + new&0xffff
	return ^fold16(s)
}

// CsumReplace16 is CsumReplace2 for a 16-byte field (an IPv6 address), as
// the kernel's inet_proto_csum_replace16 for a pseudo-header address.
func CsumReplace16(csum uint16, old, new *[16]byte) uint16 {
	s := uint32(^csum)
	for i := 0; i < 16; i += 2 {
		s += uint32(^binary.BigEndian.Uint16(old[i:])) + uint32(binary.BigEndian.Uint16(new[i:]))
	}
	return ^fold16(s)
}

// CsumReplaceUDP is CsumReplace2/4/16's rule for a UDP checksum: a zero
// checksum means "none" and is left alone (returns 0), and an updated
// checksum that computes to 0 is sent as 0xffff (the kernel's
// CSUM_MANGLED_0). updated is the result of the CsumReplace* function.
func CsumReplaceUDP(old, updated uint16) uint16 {
	if old == 0 {
		return 0
	}
	if updated == 0 {
		return 0xffff
	}
	return updated
}

// CsumPartial adds b's 16-bit big-endian words (a trailing odd byte
// padded with zero) to the one's complement running sum s and returns
// the new, unfolded sum. Use Csum to fold and complement it.
func CsumPartial(b []byte, s uint64) uint64 {
	for len(b) >= 8 {
		s += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	if len(b) >= 4 {
		s += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return s
}

// Csum folds the running sum s to 16 bits and complements it: the
// Internet checksum (RFC 1071).
func Csum(s uint64) uint16 {
	s = s&0xffffffff + s>>32
	s = s&0xffffffff + s>>32
	return ^fold16(uint32(s&0xffff) + uint32(s>>16))
}

// IPv4HeaderChecksum computes the checksum of the IPv4 header hdr (its
// full length, options included) from scratch, treating the checksum
// field as zero.
func IPv4HeaderChecksum(hdr []byte) uint16 {
	if len(hdr) < 20 {
		return 0
	}
	s := CsumPartial(hdr[:10], 0)
	s = CsumPartial(hdr[12:], s)
	return Csum(s)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// zero4 stands in for the SCTP checksum field (a package variable so
// that it does not escape to the heap on every call).
var zero4 [4]byte

// SCTPChecksum computes the CRC32c of the SCTP packet sctp (common header
// and chunks) with its checksum field taken as zero, in the byte order it
// is stored in the packet (little-endian; read it with
// binary.LittleEndian). It returns 0 for a packet shorter than the
// 12-byte common header.
func SCTPChecksum(sctp []byte) uint32 {
	if len(sctp) < 12 {
		return 0
	}
	c := crc32.Update(0, castagnoli, sctp[:8])
	c = crc32.Update(c, castagnoli, zero4[:])
	c = crc32.Update(c, castagnoli, sctp[12:])
	return c
}

// CompleteChecksum computes the TCP or UDP checksum of an IPv4 or IPv6
// frame from scratch and stores it, for frames whose sender left the
// checksum to offload (the field then holds only the pseudo-header sum).
// The segment's length comes from the IP header's length field, not the
// frame's (which may be padded). Frames that are not TCP/UDP, later
// fragments, and frames whose lengths are inconsistent are left as they
// are. It allocates nothing.
func CompleteChecksum(frame []byte) {
	var h Headers
	if ParseHeaders(frame, &h) != nil || h.L4 < 0 || h.Frag == FragLater {
		return
	}
	var end int
	var s uint64
	switch h.EthType {
	case EthTypeIPv4:
		ip := frame[h.L3:]
		end = h.L3 + int(binary.BigEndian.Uint16(ip[2:]))
		s = CsumPartial(ip[12:20], 0)
	case EthTypeIPv6:
		ip := frame[h.L3:]
		end = h.L3 + 40 + int(binary.BigEndian.Uint16(ip[4:]))
		s = CsumPartial(ip[8:40], 0)
	default:
		return
	}
	if end > len(frame) || end < h.L4 {
		return
	}
	seg := frame[h.L4:end]
	var co int
	switch h.Proto {
	case ProtoTCP:
		co = 16
	case ProtoUDP:
		co = 6
	default:
		return
	}
	if len(seg) < co+2 {
		return
	}
	s += uint64(h.Proto) + uint64(len(seg))
	seg[co], seg[co+1] = 0, 0
	c := Csum(CsumPartial(seg, s))
	if h.Proto == ProtoUDP && c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(seg[co:], c)
}
