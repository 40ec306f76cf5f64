package header

import "encoding/binary"

// Transport header sizes and the offsets of their checksum fields.
const (
	TCPMinimumSize     = 20
	TCPChecksumOffset  = 16
	TCPFlagsOffset     = 13
	UDPMinimumSize     = 8
	UDPChecksumOffset  = 6
	SCTPMinimumSize    = 12 // the common header
	SCTPChecksumOffset = 8  // CRC32c, stored little-endian
	ICMPMinimumSize    = 8  // type, code, checksum and 4 bytes of rest of header
	ICMPChecksumOffset = 2
)

// TCP flag bits (the low byte of the flags field).
const (
	TCPFlagFin = 0x01
	TCPFlagSyn = 0x02
	TCPFlagRst = 0x04
	TCPFlagPsh = 0x08
	TCPFlagAck = 0x10
	TCPFlagUrg = 0x20
	TCPFlagEce = 0x40
	TCPFlagCwr = 0x80
)

// Ports is the start of a TCP, UDP or SCTP header, which all carry the
// source and destination ports in their first 4 bytes: Ports(tcp),
// Ports(udp) and Ports(sctp) read and write them. At least 4 bytes.
type Ports []byte

// Source returns the source port.
func (b Ports) Source() uint16 { return binary.BigEndian.Uint16(b[0:]) }

// Destination returns the destination port.
func (b Ports) Destination() uint16 { return binary.BigEndian.Uint16(b[2:]) }

// SetSource sets the source port (no checksum is updated).
func (b Ports) SetSource(p uint16) { binary.BigEndian.PutUint16(b[0:], p) }

// SetDestination sets the destination port (no checksum is updated).
func (b Ports) SetDestination(p uint16) { binary.BigEndian.PutUint16(b[2:], p) }

// TCP is a TCP header: at least TCPMinimumSize bytes.
type TCP []byte

// SequenceNumber returns the sequence number.
func (b TCP) SequenceNumber() uint32 { return binary.BigEndian.Uint32(b[4:]) }

// AckNumber returns the acknowledgement number.
func (b TCP) AckNumber() uint32 { return binary.BigEndian.Uint32(b[8:]) }

// DataOffset returns the header length in bytes (the data offset field
// times 4): 0 to 60, not checked against the minimum.
func (b TCP) DataOffset() int { return int(b[12]>>4) * 4 }

// Flags returns the 12 bits below the data offset: the flags of a flow
// key's tcp_flags (NS, CWR, ECE, URG, ACK, PSH, RST, SYN, FIN and the
// three reserved bits).
func (b TCP) Flags() uint16 { return binary.BigEndian.Uint16(b[12:]) & 0x0fff }

// WindowSize returns the window field.
func (b TCP) WindowSize() uint16 { return binary.BigEndian.Uint16(b[14:]) }

// Checksum returns the checksum field.
func (b TCP) Checksum() uint16 { return binary.BigEndian.Uint16(b[TCPChecksumOffset:]) }

// SetSequenceNumber sets the sequence number.
func (b TCP) SetSequenceNumber(v uint32) { binary.BigEndian.PutUint32(b[4:], v) }

// SetAckNumber sets the acknowledgement number.
func (b TCP) SetAckNumber(v uint32) { binary.BigEndian.PutUint32(b[8:], v) }

// SetChecksum sets the checksum field.
func (b TCP) SetChecksum(c uint16) { binary.BigEndian.PutUint16(b[TCPChecksumOffset:], c) }

// UDP is a UDP header: at least UDPMinimumSize bytes.
type UDP []byte

// Length returns the length field (header and payload).
func (b UDP) Length() uint16 { return binary.BigEndian.Uint16(b[4:]) }

// Checksum returns the checksum field (0: no checksum, over IPv4).
func (b UDP) Checksum() uint16 { return binary.BigEndian.Uint16(b[UDPChecksumOffset:]) }

// SetLength sets the length field.
func (b UDP) SetLength(l uint16) { binary.BigEndian.PutUint16(b[4:], l) }

// SetChecksum sets the checksum field.
func (b UDP) SetChecksum(c uint16) { binary.BigEndian.PutUint16(b[UDPChecksumOffset:], c) }

// SCTP is an SCTP common header: at least SCTPMinimumSize bytes.
type SCTP []byte

// Checksum returns the CRC32c field, which SCTP stores little-endian.
func (b SCTP) Checksum() uint32 { return binary.LittleEndian.Uint32(b[SCTPChecksumOffset:]) }

// SetChecksum sets the CRC32c field (little-endian).
func (b SCTP) SetChecksum(c uint32) { binary.LittleEndian.PutUint32(b[SCTPChecksumOffset:], c) }

// TransportChecksumOffset returns where the checksum of a proto header
// lives (TCP, UDP, ICMP, ICMPv6) and the header's minimum size, or -1
// and 0 for a protocol with no 16-bit Internet checksum.
func TransportChecksumOffset(proto uint8) (off, minSize int) {
	switch proto {
	case IPProtoTCP:
		return TCPChecksumOffset, TCPMinimumSize
	case IPProtoUDP:
		return UDPChecksumOffset, UDPMinimumSize
	case IPProtoICMP, IPProtoICMPv6:
		return ICMPChecksumOffset, 4
	}
	return -1, 0
}
