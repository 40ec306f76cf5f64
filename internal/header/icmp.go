package header

import "encoding/binary"

// ICMPv4 message types.
const (
	ICMPv4EchoReply   = 0
	ICMPv4Unreachable = 3
	ICMPv4EchoRequest = 8
	ICMPv4TimeExceed  = 11
)

// ICMPv6 message types.
const (
	ICMPv6Unreachable         = 1
	ICMPv6PacketTooBig        = 2
	ICMPv6TimeExceeded        = 3
	ICMPv6EchoRequest         = 128
	ICMPv6EchoReply           = 129
	ICMPv6MLDQuery            = 130
	ICMPv6MLDReport           = 131
	ICMPv6MLDDone             = 132
	ICMPv6RouterSolicit       = 133
	ICMPv6RouterAdvert        = 134
	ICMPv6NeighborSolicit     = 135
	ICMPv6NeighborAdvert      = 136
	ICMPv6MLDv2Report         = 143
	NDOptionSourceLinkAddress = 1 // ND option: source link-layer address
	NDOptionTargetLinkAddress = 2 // ND option: target link-layer address
	NDMinimumSize             = ICMPMinimumSize + IPv6AddressSize
)

// ICMP is an ICMP (over IPv4) or ICMPv6 header, which have the same
// layout (type, code, checksum, 4 bytes of rest of header): at least
// ICMPMinimumSize bytes.
type ICMP []byte

// Type returns the message type.
func (b ICMP) Type() uint8 { return b[0] }

// Code returns the message code.
func (b ICMP) Code() uint8 { return b[1] }

// Checksum returns the checksum field.
func (b ICMP) Checksum() uint16 { return binary.BigEndian.Uint16(b[ICMPChecksumOffset:]) }

// Ident returns the identifier of an echo request or reply.
func (b ICMP) Ident() uint16 { return binary.BigEndian.Uint16(b[4:]) }

// Sequence returns the sequence number of an echo request or reply.
func (b ICMP) Sequence() uint16 { return binary.BigEndian.Uint16(b[6:]) }

// SetType sets the message type.
func (b ICMP) SetType(t uint8) { b[0] = t }

// SetCode sets the message code.
func (b ICMP) SetCode(c uint8) { b[1] = c }

// SetChecksum sets the checksum field.
func (b ICMP) SetChecksum(c uint16) { binary.BigEndian.PutUint16(b[ICMPChecksumOffset:], c) }

// SetIdent sets the identifier of an echo request or reply.
func (b ICMP) SetIdent(v uint16) { binary.BigEndian.PutUint16(b[4:], v) }

// SetSequence sets the sequence number of an echo request or reply.
func (b ICMP) SetSequence(v uint16) { binary.BigEndian.PutUint16(b[6:], v) }

// CalculateChecksum returns the checksum of the whole message with the
// checksum field taken as zero, added to the pseudo-header sum pseudo:
// 0 for ICMP over IPv4, which has none; IPv6.PseudoHeaderSum for
// ICMPv6. It returns 0 for a view shorter than 4 bytes.
func (b ICMP) CalculateChecksum(pseudo uint64) uint16 {
	if len(b) < 4 {
		return 0
	}
	return Checksum(b[4:], Sum(b[:2], pseudo))
}

// IsND reports whether the ICMPv6 message b is a neighbour solicitation
// or advertisement (code 0): the messages whose target and link-layer
// addresses a flow key holds.
func (b ICMP) IsND() bool {
	return b[1] == 0 && (b[0] == ICMPv6NeighborSolicit || b[0] == ICMPv6NeighborAdvert)
}

// ND is an ICMPv6 neighbour solicitation or advertisement: the ICMPv6
// header, the target address and options; at least NDMinimumSize bytes.
type ND []byte

// TargetAddress returns the target address.
func (b ND) TargetAddress() [16]byte { return [16]byte(b[ICMPMinimumSize:NDMinimumSize]) }

// SetTargetAddress sets the target address.
func (b ND) SetTargetAddress(a [16]byte) { copy(b[ICMPMinimumSize:NDMinimumSize], a[:]) }

// Options returns the options after the target address.
func (b ND) Options() []byte { return b[NDMinimumSize:] }

// NDOption is one neighbour discovery option: type, length in units of
// 8 bytes, data; at least 2 bytes.
type NDOption []byte

// Type returns the option type.
func (b NDOption) Type() uint8 { return b[0] }

// Length returns the option's length in bytes (the length field times
// 8; 0 is malformed).
func (b NDOption) Length() int { return int(b[1]) * 8 }

// LinkAddress returns the link-layer address of a source or target
// link-layer address option of 8 bytes.
func (b NDOption) LinkAddress() [6]byte { return [6]byte(b[2:8]) }

// SetLinkAddress sets the link-layer address of an 8-byte option.
func (b NDOption) SetLinkAddress(a [6]byte) { copy(b[2:8], a[:]) }
