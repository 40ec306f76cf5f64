package header

import "encoding/binary"

// EtherTypes (the Ethernet type field, and the kernel's skb->protocol).
const (
	EtherTypeIPv4   = 0x0800
	EtherTypeARP    = 0x0806
	EtherTypeTEB    = 0x6558 // transparent Ethernet bridging (ETH_P_TEB)
	EtherTypeRARP   = 0x8035
	EtherTypeVLAN   = 0x8100 // 802.1Q customer VLAN tag
	EtherTypeIPv6   = 0x86dd
	EtherTypeMPLS   = 0x8847 // MPLS unicast
	EtherTypeMPLSMC = 0x8848 // MPLS multicast
	EtherTypeQinQ   = 0x88a8 // 802.1ad service VLAN tag
	EtherTypeNSH    = 0x894f // network service header
	// EtherType8022 is the kernel's ETH_P_802_2: what it reports for an
	// 802.3 frame that carries no SNAP EtherType.
	EtherType8022 = 0x0004
	// EtherTypeMin is the smallest EtherType; a smaller value in the
	// type field is an 802.3 length.
	EtherTypeMin = 0x0600
)

// Sizes of the Ethernet header and its parts.
const (
	EthernetAddressSize = 6
	EthernetMinimumSize = 14 // destination, source, type
	EthernetTypeOffset  = 12 // the type field (or an outer VLAN tag's TPID)
	VLANTagSize         = 4  // TPID and TCI
	LLCSNAPSize         = 8  // LLC (DSAP, SSAP, control) and SNAP (OUI, type)
	// VLANCFI is the TCI's CFI/DEI bit; Open vSwitch uses it in a flow
	// key to mean "a tag is present".
	VLANCFI = 0x1000
)

// Ethernet is an Ethernet II header: at least EthernetMinimumSize bytes.
type Ethernet []byte

// DestinationAddress returns the destination MAC address.
func (b Ethernet) DestinationAddress() [6]byte { return [6]byte(b[0:6]) }

// SourceAddress returns the source MAC address.
func (b Ethernet) SourceAddress() [6]byte { return [6]byte(b[6:12]) }

// Type returns the type field at offset 12: the EtherType, the TPID of
// an in-line VLAN tag, or an 802.3 length.
func (b Ethernet) Type() uint16 { return binary.BigEndian.Uint16(b[12:]) }

// SetDestinationAddress sets the destination MAC address.
func (b Ethernet) SetDestinationAddress(a [6]byte) { copy(b[0:6], a[:]) }

// SetSourceAddress sets the source MAC address.
func (b Ethernet) SetSourceAddress(a [6]byte) { copy(b[6:12], a[:]) }

// SetType sets the type field at offset 12.
func (b Ethernet) SetType(t uint16) { binary.BigEndian.PutUint16(b[12:], t) }

// VLAN is an in-line VLAN tag, starting at its TPID: at least
// VLANTagSize bytes, and 2 more (the type field after the tag) for Type.
type VLAN []byte

// TPID returns the tag protocol identifier (EtherTypeVLAN or
// EtherTypeQinQ for a tag).
func (b VLAN) TPID() uint16 { return binary.BigEndian.Uint16(b[0:]) }

// TCI returns the tag control information: priority (3 bits), CFI/DEI
// and VLAN ID (12 bits).
func (b VLAN) TCI() uint16 { return binary.BigEndian.Uint16(b[2:]) }

// VID returns the 12-bit VLAN ID.
func (b VLAN) VID() uint16 { return b.TCI() & 0x0fff }

// PCP returns the 3-bit priority code point.
func (b VLAN) PCP() uint8 { return uint8(b.TCI() >> 13) }

// Type returns the type field that follows the tag.
func (b VLAN) Type() uint16 { return binary.BigEndian.Uint16(b[4:]) }

// SetTPID sets the tag protocol identifier.
func (b VLAN) SetTPID(t uint16) { binary.BigEndian.PutUint16(b[0:], t) }

// SetTCI sets the tag control information.
func (b VLAN) SetTCI(t uint16) { binary.BigEndian.PutUint16(b[2:], t) }

// IsVLAN reports whether et is a VLAN tag protocol identifier (802.1Q
// or 802.1ad).
func IsVLAN(et uint16) bool { return et == EtherTypeVLAN || et == EtherTypeQinQ }

// IsMPLS reports whether et is an MPLS EtherType.
func IsMPLS(et uint16) bool { return et == EtherTypeMPLS || et == EtherTypeMPLSMC }

// L2 applies the kernel's parse_vlan and parse_ethertype (as
// openvswitch's key_extract does) to an Ethernet frame of at least
// EthernetMinimumSize bytes: it returns the offset of the network
// header, the EtherType a flow key gets and the number of VLAN tags
// parsed (at most two). A tag is parsed only when its 4 bytes and the 2
// of the type after it are in the frame. An 802.3 length field is
// followed by LLC, and by SNAP when DSAP and SSAP are 0xaa and the OUI
// is zero (the control byte is not looked at); the SNAP EtherType is
// used when it is one (>= EtherTypeMin), else the frame is
// EtherType8022, as is any other 802.3 frame and one whose LLC/SNAP
// header is cut short. It returns (EthernetMinimumSize, 0, 0) for a
// shorter frame.
func L2(frame []byte) (off int, et uint16, tags int) {
	if len(frame) < EthernetMinimumSize {
		return EthernetMinimumSize, 0, 0
	}
	off = EthernetTypeOffset
	et = binary.BigEndian.Uint16(frame[off:])
	for tags < 2 && IsVLAN(et) && len(frame) >= off+VLANTagSize+2 {
		off += VLANTagSize
		tags++
		et = binary.BigEndian.Uint16(frame[off:])
	}
	off += 2
	if et >= EtherTypeMin {
		return off, et, tags
	}
	if len(frame) < off+LLCSNAPSize {
		return off, EtherType8022, tags
	}
	if l := frame[off : off+LLCSNAPSize]; l[0] != 0xaa || l[1] != 0xaa || l[3]|l[4]|l[5] != 0 {
		return off, EtherType8022, tags
	}
	et = binary.BigEndian.Uint16(frame[off+6:])
	off += LLCSNAPSize
	if et < EtherTypeMin {
		et = EtherType8022
	}
	return off, et, tags
}

// Htons returns v with its in-memory representation in network byte
// order, as the C library's htons: the form the kernel's socket API
// (sockaddr_ll's protocol, socket(AF_PACKET, ..., protocol)) takes.
func Htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}
