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
	ic := header.ICMP(frame[h.L4:])
	old := binary.BigEndian.Uint16(ic) // type and code, one checksum word
	ic.SetType(ic.Type()&^mask[0] | key[0]&mask[0])
	ic.SetCode(ic.Code()&^mask[1] | key[1]&mask[1])
	if n := binary.BigEndian.Uint16(ic); n != old {
		ic.SetChecksum(header.ChecksumUpdate2(ic.Checksum(), old, n))
	}
	return nil
}

// setARPMasked sets the masked bits of an Ethernet/IPv4 ARP packet's
// opcode and addresses (no checksum).
func setARPMasked(frame []byte, h *pktHeaders, key, mask *odp.ARP) error {
	if (h.EthType != header.EtherTypeARP && h.EthType != header.EtherTypeRARP) || h.L3 < 0 {
		return fmt.Errorf("set(arp): %w: EtherType %#04x", errWrongProtocol, h.EthType)
	}
	if len(frame) < h.L3+header.ARPSize {
		return fmt.Errorf("set(arp): %w: %d bytes, an Ethernet/IPv4 ARP packet ends at %d", errTooShort, len(frame), h.L3+header.ARPSize)
	}
	a := header.ARP(frame[h.L3 : h.L3+header.ARPSize])
	if !a.IsIPv4OverEthernet() {
		return fmt.Errorf("set(arp): %w: not an Ethernet/IPv4 ARP packet", errWrongProtocol)
	}
	a.SetOp(a.Op()&^mask.Op | key.Op&mask.Op)
	sha, sip, tha, tip := a.SenderHardwareAddress(), a.SenderProtocolAddress(), a.TargetHardwareAddress(), a.TargetProtocolAddress()
	maskBytes(sha[:], key.SHA[:], mask.SHA[:])
	maskBytes(sip[:], key.SIP[:], mask.SIP[:])
	maskBytes(tha[:], key.THA[:], mask.THA[:])
	maskBytes(tip[:], key.TIP[:], mask.TIP[:])
	a.SetSenderHardwareAddress(sha)
	a.SetSenderProtocolAddress(sip)
	a.SetTargetHardwareAddress(tha)
	a.SetTargetProtocolAddress(tip)
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
	if len(frame) < h.L4+header.NDMinimumSize {
		return fmt.Errorf("set(nd): %w: %d bytes, the ND message ends at %d", errTooShort, len(frame), h.L4+header.NDMinimumSize)
	}
	ic := header.ICMP(frame[h.L4:])
	if t := ic.Type(); t != header.ICMPv6NeighborSolicit && t != header.ICMPv6NeighborAdvert {
		return fmt.Errorf("set(nd): %w: ICMPv6 type %d is not a neighbour solicitation or advertisement", errWrongProtocol, t)
	}
	csum := ic.Checksum()
	nd := header.ND(ic)
	old := nd.TargetAddress()
	target := old
	maskBytes(target[:], key.Target[:], mask.Target[:])
	nd.SetTargetAddress(target)
	csum = header.ChecksumUpdateBytes(csum, old[:], target[:])
	for opts := nd.Options(); len(opts) >= 8; {
		o := header.NDOption(opts)
		l := o.Length()
		if l == 0 || l > len(opts) {
			break
		}
		var k, m []byte
		switch o.Type() {
		case header.NDOptionSourceLinkAddress:
			k, m = key.SLL[:], mask.SLL[:]
		case header.NDOptionTargetLinkAddress:
			k, m = key.TLL[:], mask.TLL[:]
		}
		if k != nil {
			oldLL := o.LinkAddress()
			ll := oldLL
			maskBytes(ll[:], k, m)
			o.SetLinkAddress(ll)
			csum = header.ChecksumUpdateBytes(csum, oldLL[:], ll[:])
		}
		opts = opts[l:]
	}
	ic.SetChecksum(csum)
	return nil
}
