package header

import (
	"encoding/binary"
	"hash/crc32"
)

// The Internet checksum (RFC 1071). A running sum is a uint64 of 16-bit
// big-endian words added without folding (Sum), so that long buffers
// and pseudo-headers add up without a carry check per word; Fold folds
// it to 16 bits and Checksum complements that. Checksums are host-order
// uint16 values, stored big-endian.

// Sum adds b's 16-bit big-endian words (a trailing odd byte padded with
// zero) to the running sum s and returns the new, unfolded sum. Summing
// a buffer in pieces gives the same result only where every piece but
// the last has an even length.
func Sum(b []byte, s uint64) uint64 {
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

// Fold folds the running sum s to 16 bits (one's complement addition
// of its 16-bit parts), without complementing it.
func Fold(s uint64) uint16 {
	s = s&0xffffffff + s>>32
	s = s&0xffffffff + s>>32
	return fold32(uint32(s&0xffff) + uint32(s>>16))
}

// fold32 folds a 32-bit one's complement sum to 16 bits.
func fold32(s uint32) uint16 {
	s = s&0xffff + s>>16
	s = s&0xffff + s>>16
	return uint16(s)
}

// Checksum returns the Internet checksum of b added to the running sum
// s (0, or a pseudo-header's PseudoHeaderSum): the complement of the
// folded sum. Over a buffer whose checksum field holds a correct
// checksum, it returns 0.
func Checksum(b []byte, s uint64) uint16 { return ^Fold(Sum(b, s)) }

// ChecksumUpdate2 returns the checksum csum updated for a 16-bit field
// changing from old to new, by RFC 1624 equation 3:
// HC' = ~(~HC + ~m + m'), as the kernel's csum_replace2.
func ChecksumUpdate2(csum, old, new uint16) uint16 {
	return ^fold32(uint32(^csum) + uint32(^old) + uint32(new))
}

// ChecksumUpdate4 is ChecksumUpdate2 for a 32-bit field (an IPv4
// address), as the kernel's csum_replace4.
func ChecksumUpdate4(csum uint16, old, new uint32) uint16 {
	return ^fold32(uint32(^csum) + (^old)>>16 + (^old)&0xffff + new>>16 + new&0xffff)
}

// ChecksumUpdate16 is ChecksumUpdate2 for a 16-byte field (an IPv6
// address), as the kernel's inet_proto_csum_replace16.
func ChecksumUpdate16(csum uint16, old, new *[16]byte) uint16 {
	s := uint32(^csum)
	for i := 0; i < 16; i += 2 {
		s += uint32(^binary.BigEndian.Uint16(old[i:])) + uint32(binary.BigEndian.Uint16(new[i:]))
	}
	return ^fold32(s)
}

// DecTTLChecksum returns the IPv4 header checksum csum updated for the
// TTL going down by one: ChecksumUpdate2(csum, ttl<<8, (ttl-1)<<8),
// which is the same for every TTL (^old + new is 0xffff - 0x100). The
// sum is at most 0x1fefe, so one fold is enough: it stays small enough
// to be inlined into a caller that is itself inlined.
func DecTTLChecksum(csum uint16) uint16 {
	s := uint32(^csum) + 0xfeff
	return ^uint16(s + s>>16)
}

// UDPChecksumUpdate applies UDP's rules to an incremental update of a
// UDP checksum old to updated (the result of a ChecksumUpdate*): a zero
// checksum means "none" and stays 0, and an updated checksum that
// computes to 0 is stored as 0xffff (the kernel's CSUM_MANGLED_0).
func UDPChecksumUpdate(old, updated uint16) uint16 {
	if old == 0 {
		return 0
	}
	if updated == 0 {
		return 0xffff
	}
	return updated
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// zero4 stands in for the SCTP checksum field (a package variable, so
// that taking a slice of it does not allocate).
var zero4 [4]byte

// CalculateChecksum returns the CRC32c of the SCTP packet b (common
// header and chunks) with its checksum field taken as zero, in the byte
// order SetChecksum takes; 0 for a view shorter than SCTPMinimumSize.
func (b SCTP) CalculateChecksum() uint32 {
	if len(b) < SCTPMinimumSize {
		return 0
	}
	c := crc32.Update(0, castagnoli, b[:SCTPChecksumOffset])
	c = crc32.Update(c, castagnoli, zero4[:])
	return crc32.Update(c, castagnoli, b[SCTPChecksumOffset+4:])
}

// ChecksumUpdateBytes is ChecksumUpdate2 for the bytes old changing to
// new: the same even length (a longer one is cut to the shorter), at an
// even offset from the start of the checksummed data.
func ChecksumUpdateBytes(csum uint16, old, new []byte) uint16 {
	s := uint32(^csum)
	for i := 0; i+1 < len(old) && i+1 < len(new); i += 2 {
		s += uint32(^binary.BigEndian.Uint16(old[i:])) + uint32(binary.BigEndian.Uint16(new[i:]))
		s = s&0xffff + s>>16
	}
	return ^fold32(s)
}
