package userdp

import (
	"encoding/binary"
	"fmt"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// Masked sets the kernel's datapath does not have (it rejects set(icmp),
// set(icmpv6), set(arp) and set(nd) with EINVAL) but Open vSwitch's
// userspace datapath executes. Checksums are updated incrementally
// (RFC 1624) over the 16-bit words that change.

// setICMPMasked sets the masked bits of the ICMP (proto 1 over IPv4) or
// ICMPv6 (proto 58 over IPv6) type and code, updating the checksum.
func setICMPMasked(frame []byte, h *pktHeaders, ethType uint16, proto uint8, key, mask *[2]uint8) error {
	name := "icmp"
	if proto == header.IPProtoICMPv6 {
		name = "icmpv6"
	}
	if h.EthType != ethType || h.L4 < 0 || h.Proto != proto || h.Frag == header.FragLater {
		return fmt.Errorf("set(%s): %w: EtherType %#04x, IP protocol %d", name, errWrongProtocol, h.EthType, h.Proto)
	}
	if len(frame) < h.L4+4 {
		return fmt.Errorf("set(%s): %w: %d bytes, the header ends at %d", name, errTooShort, len(frame), h.L4+4)
	}
	ic := frame[h.L4:]
	old := binary.BigEndian.Uint16(ic)
	ic[0] = ic[0]&^mask[0] | key[0]&mask[0]
	ic[1] = ic[1]&^mask[1] | key[1]&mask[1]
	n := binary.BigEndian.Uint16(ic)
	if n != old {
		binary.BigEndian.PutUint16(ic[2:], header.ChecksumUpdate2(binary.BigEndian.Uint16(ic[2:]), old, n))
	}
	return nil
}

// setARPMasked sets the masked bits of an Ethernet/IPv4 ARP packet's
// opcode and addresses (no checksum).
func setARPMasked(frame []byte, h *pktHeaders, key, mask *odp.ARP) error {
	if (h.EthType != header.EtherTypeARP && h.EthType != header.EtherTypeRARP) || h.L3 < 0 {
		return fmt.Errorf("set(arp): %w: EtherType %#04x", errWrongProtocol, h.EthType)
	}
	if len(frame) < h.L3+28 {
		return fmt.Errorf("set(arp): %w: %d bytes, an Ethernet/IPv4 ARP packet ends at %d", errTooShort, len(frame), h.L3+28)
	}
	a := frame[h.L3:]
	if binary.BigEndian.Uint16(a) != 1 || binary.BigEndian.Uint16(a[2:]) != header.EtherTypeIPv4 || a[4] != 6 || a[5] != 4 {
		return fmt.Errorf("set(arp): %w: not an Ethernet/IPv4 ARP packet", errWrongProtocol)
	}
	op := binary.BigEndian.Uint16(a[6:])
	binary.BigEndian.PutUint16(a[6:], op&^mask.Op|key.Op&mask.Op)
	maskBytes(a[8:14], key.SHA[:], mask.SHA[:])
	maskBytes(a[14:18], key.SIP[:], mask.SIP[:])
	maskBytes(a[18:24], key.THA[:], mask.THA[:])
	maskBytes(a[24:28], key.TIP[:], mask.TIP[:])
	return nil
}

// maskBytes sets dst's bits selected by mask to key's.
func maskBytes(dst, key, mask []byte) {
	for i := range dst {
		if i < len(key) && i < len(mask) {
			dst[i] = dst[i]&^mask[i] | key[i]&mask[i]
		}
	}
}

// setNDMasked sets the masked bits of an ICMPv6 neighbour solicitation's
// or advertisement's target address and of its source (type 1) or
// target (type 2) link-layer address option, updating the ICMPv6
// checksum. An option that the packet does not have is not added.
func setNDMasked(frame []byte, h *pktHeaders, key, mask *odp.ND) error {
	if h.EthType != header.EtherTypeIPv6 || h.L4 < 0 || h.Proto != header.IPProtoICMPv6 {
		return fmt.Errorf("set(nd): %w: not ICMPv6", errWrongProtocol)
	}
	if len(frame) < h.L4+24 {
		return fmt.Errorf("set(nd): %w: %d bytes, the ND message ends at %d", errTooShort, len(frame), h.L4+24)
	}
	ic := frame[h.L4:]
	if ic[0] != 135 && ic[0] != 136 {
		return fmt.Errorf("set(nd): %w: ICMPv6 type %d is not a neighbour solicitation or advertisement", errWrongProtocol, ic[0])
	}
	csum := binary.BigEndian.Uint16(ic[2:])
	var old [16]byte
	copy(old[:], ic[8:24])
	maskBytes(ic[8:24], key.Target[:], mask.Target[:])
	csum = header.ChecksumUpdateBytes(csum, old[:], ic[8:24])
	for off := 24; off+8 <= len(ic); {
		typ, l := ic[off], int(ic[off+1])*8
		if l == 0 || off+l > len(ic) {
			break
		}
		var k, m []byte
		switch typ {
		case 1:
			k, m = key.SLL[:], mask.SLL[:]
		case 2:
			k, m = key.TLL[:], mask.TLL[:]
		}
		if k != nil && l >= 8 {
			copy(old[:6], ic[off+2:off+8])
			maskBytes(ic[off+2:off+8], k, m)
			csum = header.ChecksumUpdateBytes(csum, old[:6], ic[off+2:off+8])
		}
		off += l
	}
	binary.BigEndian.PutUint16(ic[2:], csum)
	return nil
}
