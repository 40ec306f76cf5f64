package header

import "encoding/binary"

// ARP is an ARP packet: at least 8 bytes for the fixed fields, ARPSize
// for the addresses of IPv4 over Ethernet.
type ARP []byte

// HardwareType returns the hardware type: ARPHardwareEther for an
// Ethernet link.
func (b ARP) HardwareType() uint16 { return binary.BigEndian.Uint16(b[0:]) }

// ProtocolType returns the protocol type, an EtherType:
// EtherTypeIPv4 for IPv4 addresses.
func (b ARP) ProtocolType() uint16 { return binary.BigEndian.Uint16(b[2:]) }

// HardwareAddressSize returns the hardware address length.
func (b ARP) HardwareAddressSize() uint8 { return b[4] }

// ProtocolAddressSize returns the protocol address length.
func (b ARP) ProtocolAddressSize() uint8 { return b[5] }

// Op returns the operation (ARPRequest, ARPReply, ...).
func (b ARP) Op() uint16 { return binary.BigEndian.Uint16(b[6:]) }

// IsIPv4OverEthernet reports whether the packet is Ethernet hardware,
// IPv4 protocol, with 6- and 4-byte addresses: the only form whose
// addresses a flow key holds.
func (b ARP) IsIPv4OverEthernet() bool {
	return b.HardwareType() == ARPHardwareEther && b.ProtocolType() == EtherTypeIPv4 &&
		b[4] == EthernetAddressSize && b[5] == IPv4AddressSize
}

// SenderHardwareAddress returns the sender's MAC (IPv4 over Ethernet).
func (b ARP) SenderHardwareAddress() [6]byte { return [6]byte(b[8:14]) }

// SenderProtocolAddress returns the sender's IPv4 address.
func (b ARP) SenderProtocolAddress() [4]byte { return [4]byte(b[14:18]) }

// TargetHardwareAddress returns the target's MAC.
func (b ARP) TargetHardwareAddress() [6]byte { return [6]byte(b[18:24]) }

// TargetProtocolAddress returns the target's IPv4 address.
func (b ARP) TargetProtocolAddress() [4]byte { return [4]byte(b[24:28]) }

// SetOp sets the operation.
func (b ARP) SetOp(op uint16) { binary.BigEndian.PutUint16(b[6:], op) }

// SetIPv4OverEthernet sets the fixed fields for IPv4 over Ethernet.
func (b ARP) SetIPv4OverEthernet() {
	binary.BigEndian.PutUint16(b[0:], ARPHardwareEther)
	binary.BigEndian.PutUint16(b[2:], EtherTypeIPv4)
	b[4], b[5] = EthernetAddressSize, IPv4AddressSize
}

// SetSenderHardwareAddress sets the sender's MAC.
func (b ARP) SetSenderHardwareAddress(a [6]byte) { copy(b[8:14], a[:]) }

// SetSenderProtocolAddress sets the sender's IPv4 address.
func (b ARP) SetSenderProtocolAddress(a [4]byte) { copy(b[14:18], a[:]) }

// SetTargetHardwareAddress sets the target's MAC.
func (b ARP) SetTargetHardwareAddress(a [6]byte) { copy(b[18:24], a[:]) }

// SetTargetProtocolAddress sets the target's IPv4 address.
func (b ARP) SetTargetProtocolAddress(a [4]byte) { copy(b[24:28], a[:]) }

// ARP sizes and values for IPv4 over Ethernet.
const (
	ARPSize          = 28 // an IPv4-over-Ethernet ARP packet
	ARPHardwareEther = 1
	ARPRequest       = 1
	ARPReply         = 2
)
