package header

import "encoding/binary"

// IPv4 header sizes and the offsets of its fields.
const (
	IPv4MinimumSize      = 20
	IPv4MaximumSize      = 60
	IPv4AddressSize      = 4
	IPv4TOSOffset        = 1
	IPv4TotalLenOffset   = 2
	IPv4IDOffset         = 4
	IPv4FlagsFragOffset  = 6 // flags (3 bits) and fragment offset (13 bits)
	IPv4TTLOffset        = 8
	IPv4ProtocolOffset   = 9
	IPv4ChecksumOffset   = 10
	IPv4SrcAddrOffset    = 12
	IPv4DstAddrOffset    = 16
	IPv4PseudoAddrsBytes = 8 // source and destination, in the pseudo-header
)

// Bits of the IPv4 flags and fragment offset field.
const (
	IPv4FlagDontFragment   = 0x4000
	IPv4FlagMoreFragments  = 0x2000
	IPv4FragmentOffsetMask = 0x1fff // in units of 8 bytes
)

// IPv4 is an IPv4 header: at least IPv4MinimumSize bytes, options (up
// to HeaderLength) included where present.
type IPv4 []byte

// Version returns the version nibble (4 for a well-formed header).
func (b IPv4) Version() uint8 { return b[0] >> 4 }

// HeaderLength returns the header length in bytes (the IHL field times
// 4): 0 to 60, not checked against the minimum.
func (b IPv4) HeaderLength() int { return int(b[0]&0x0f) * 4 }

// TOS returns the type of service byte (DSCP and ECN).
func (b IPv4) TOS() uint8 { return b[IPv4TOSOffset] }

// TotalLength returns the total length field.
func (b IPv4) TotalLength() uint16 { return binary.BigEndian.Uint16(b[IPv4TotalLenOffset:]) }

// ID returns the identification field.
func (b IPv4) ID() uint16 { return binary.BigEndian.Uint16(b[IPv4IDOffset:]) }

// FlagsFragmentOffset returns the flags and fragment offset field as a
// whole (see IPv4FlagMoreFragments and IPv4FragmentOffsetMask).
func (b IPv4) FlagsFragmentOffset() uint16 {
	return binary.BigEndian.Uint16(b[IPv4FlagsFragOffset:])
}

// FragmentOffset returns the fragment offset in units of 8 bytes.
func (b IPv4) FragmentOffset() uint16 { return b.FlagsFragmentOffset() & IPv4FragmentOffsetMask }

// MoreFragments reports the MF flag.
func (b IPv4) MoreFragments() bool { return b.FlagsFragmentOffset()&IPv4FlagMoreFragments != 0 }

// FragType returns the datapath's fragment type: FragLater for a
// non-zero offset, FragFirst for offset zero with MF set, else FragNone.
func (b IPv4) FragType() uint8 {
	fo := b.FlagsFragmentOffset()
	switch {
	case fo&IPv4FragmentOffsetMask != 0:
		return FragLater
	case fo&IPv4FlagMoreFragments != 0:
		return FragFirst
	}
	return FragNone
}

// TTL returns the time to live.
func (b IPv4) TTL() uint8 { return b[IPv4TTLOffset] }

// Protocol returns the IP protocol of the payload.
func (b IPv4) Protocol() uint8 { return b[IPv4ProtocolOffset] }

// Checksum returns the header checksum field.
func (b IPv4) Checksum() uint16 { return binary.BigEndian.Uint16(b[IPv4ChecksumOffset:]) }

// SourceAddress returns the source address.
func (b IPv4) SourceAddress() [4]byte { return [4]byte(b[IPv4SrcAddrOffset : IPv4SrcAddrOffset+4]) }

// DestinationAddress returns the destination address.
func (b IPv4) DestinationAddress() [4]byte {
	return [4]byte(b[IPv4DstAddrOffset : IPv4DstAddrOffset+4])
}

// SourceAddressUint32 returns the source address as a host-order number.
func (b IPv4) SourceAddressUint32() uint32 { return binary.BigEndian.Uint32(b[IPv4SrcAddrOffset:]) }

// DestinationAddressUint32 returns the destination address as a
// host-order number.
func (b IPv4) DestinationAddressUint32() uint32 {
	return binary.BigEndian.Uint32(b[IPv4DstAddrOffset:])
}

// SetTOS sets the type of service byte (the checksum is not updated).
func (b IPv4) SetTOS(v uint8) { b[IPv4TOSOffset] = v }

// SetTotalLength sets the total length field.
func (b IPv4) SetTotalLength(v uint16) { binary.BigEndian.PutUint16(b[IPv4TotalLenOffset:], v) }

// SetID sets the identification field.
func (b IPv4) SetID(v uint16) { binary.BigEndian.PutUint16(b[IPv4IDOffset:], v) }

// SetFlagsFragmentOffset sets the flags and fragment offset field.
func (b IPv4) SetFlagsFragmentOffset(v uint16) {
	binary.BigEndian.PutUint16(b[IPv4FlagsFragOffset:], v)
}

// SetTTL sets the time to live (the checksum is not updated).
func (b IPv4) SetTTL(v uint8) { b[IPv4TTLOffset] = v }

// SetProtocol sets the protocol field.
func (b IPv4) SetProtocol(v uint8) { b[IPv4ProtocolOffset] = v }

// SetChecksum sets the header checksum field.
func (b IPv4) SetChecksum(v uint16) { binary.BigEndian.PutUint16(b[IPv4ChecksumOffset:], v) }

// SetSourceAddress sets the source address (no checksum is updated).
func (b IPv4) SetSourceAddress(a [4]byte) { copy(b[IPv4SrcAddrOffset:IPv4SrcAddrOffset+4], a[:]) }

// SetDestinationAddress sets the destination address (no checksum is
// updated).
func (b IPv4) SetDestinationAddress(a [4]byte) {
	copy(b[IPv4DstAddrOffset:IPv4DstAddrOffset+4], a[:])
}

// SetSourceAddressUint32 sets the source address from a host-order
// number.
func (b IPv4) SetSourceAddressUint32(a uint32) { binary.BigEndian.PutUint32(b[IPv4SrcAddrOffset:], a) }

// SetDestinationAddressUint32 sets the destination address from a
// host-order number.
func (b IPv4) SetDestinationAddressUint32(a uint32) {
	binary.BigEndian.PutUint32(b[IPv4DstAddrOffset:], a)
}

// CalculateChecksum returns the header checksum of the whole view
// (options included: pass b[:HeaderLength()]) computed from scratch,
// with the checksum field taken as zero. It returns 0 for a view shorter
// than IPv4MinimumSize.
func (b IPv4) CalculateChecksum() uint16 {
	if len(b) < IPv4MinimumSize {
		return 0
	}
	return Checksum(b[IPv4ChecksumOffset+2:], Sum(b[:IPv4ChecksumOffset], 0))
}

// PseudoHeaderSum returns the unfolded one's complement sum of the
// IPv4 pseudo-header of a transport segment of length bytes of protocol
// proto carried in b: the addresses, the protocol and the length.
func (b IPv4) PseudoHeaderSum(proto uint8, length int) uint64 {
	return Sum(b[IPv4SrcAddrOffset:IPv4DstAddrOffset+4], uint64(proto)+uint64(length))
}
