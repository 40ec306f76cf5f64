package userdp

import (
	"encoding/binary"
	"fmt"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// Masked set operations, as the kernel's execute_masked_set_action in
// net/openvswitch/actions.c. Each writes only the bits selected by the
// mask: field = old&^mask | key&mask (the kernel's OVS_MASKED; the kernel
// requires key bits outside the mask to be zero, so this is the same),
// and updates the checksums incrementally (RFC 1624). The pktHeaders must
// describe frame (parseHeaders). A plain (unmasked) set is a masked set
// with an all-ones mask, as the kernel converts it.
//
// The kernel's datapath does not execute set actions on ICMP, ICMPv6,
// ARP or ND fields (its flow validation rejects them with EINVAL). This
// datapath executes them, as Open vSwitch's userspace datapath does: their
// operations are in exec_sets.go, not here.

// setEthernetMasked sets the masked bits of the frame's Ethernet source
// and destination addresses. The kernel fails it with -ENOMEM for a
// frame shorter than 14 bytes; this returns errTooShort.
func setEthernetMasked(frame []byte, key, mask *odp.Ethernet) error {
	if len(frame) < 14 {
		return fmt.Errorf("set(eth): %w: %d bytes, the Ethernet header needs 14", errTooShort, len(frame))
	}
	for i := 0; i < 6; i++ {
		frame[i] = frame[i]&^mask.Dst[i] | key.Dst[i]&mask.Dst[i]
		frame[6+i] = frame[6+i]&^mask.Src[i] | key.Src[i]&mask.Src[i]
	}
	return nil
}

// setIPv4Masked sets the masked bits of the IPv4 source, destination, TOS
// and TTL, as the kernel's set_ipv4: an address is rewritten only when its
// value changes, and then the header checksum and, unless the packet is a
// later fragment, the TCP or UDP checksum (the pseudo-header covers the
// addresses) are updated incrementally; a zero UDP checksum stays zero,
// and an updated one that becomes zero is stored as 0xffff. TOS and TTL
// changes update the header checksum. The L4 checksum is updated only if
// the whole TCP (20 bytes) or UDP (8 bytes) header is in the frame, as
// the kernel does. Errors: errWrongProtocol if the frame is not IPv4,
// errNotSettable if mask.Proto or mask.Frag is not zero, errTooShort if
// the frame ends inside the 20-byte IPv4 header (the kernel drops it).
func setIPv4Masked(frame []byte, h *pktHeaders, key, mask *odp.IPv4) error {
	if h.EthType != header.EtherTypeIPv4 || h.L3 < 0 {
		return fmt.Errorf("set(ipv4): %w: EtherType %#04x", errWrongProtocol, h.EthType)
	}
	if mask.Proto != 0 || mask.Frag != 0 {
		return fmt.Errorf("set(ipv4): %w: proto mask %#x, frag mask %#x", errNotSettable, mask.Proto, mask.Frag)
	}
	if len(frame) < h.L3+header.IPv4MinimumSize {
		return fmt.Errorf("set(ipv4): %w: %d bytes, the IPv4 header ends at %d", errTooShort, len(frame), h.L3+header.IPv4MinimumSize)
	}
	ip := header.IPv4(frame[h.L3 : h.L3+header.IPv4MinimumSize])
	check := ip.Checksum()
	if m := binary.BigEndian.Uint32(mask.Src[:]); m != 0 {
		old := ip.SourceAddressUint32()
		n := old&^m | binary.BigEndian.Uint32(key.Src[:])&m
		if n != old {
			updateIPv4L4(frame, h, ip, old, n)
			check = header.ChecksumUpdate4(check, old, n)
			ip.SetSourceAddressUint32(n)
		}
	}
	if m := binary.BigEndian.Uint32(mask.Dst[:]); m != 0 {
		old := ip.DestinationAddressUint32()
		n := old&^m | binary.BigEndian.Uint32(key.Dst[:])&m
		if n != old {
			updateIPv4L4(frame, h, ip, old, n)
			check = header.ChecksumUpdate4(check, old, n)
			ip.SetDestinationAddressUint32(n)
		}
	}
	if m := mask.TOS; m != 0 {
		old := ip.TOS()
		n := old&^m | key.TOS&m
		check = header.ChecksumUpdate2(check, uint16(old), uint16(n))
		ip.SetTOS(n)
	}
	if m := mask.TTL; m != 0 {
		old := ip.TTL()
		n := old&^m | key.TTL&m
		check = header.ChecksumUpdate2(check, uint16(old)<<8, uint16(n)<<8)
		ip.SetTTL(n)
	}
	ip.SetChecksum(check)
	return nil
}

// updateIPv4L4 updates the TCP/UDP checksum for an IPv4 address change,
// as the kernel's update_ip_l4_checksum.
func updateIPv4L4(frame []byte, h *pktHeaders, ip header.IPv4, old, n uint32) {
	if ip.FragmentOffset() != 0 {
		return
	}
	if c, udp := addrChecksumField(frame, h, ip.Protocol()); c != nil {
		oc := binary.BigEndian.Uint16(c)
		nc := header.ChecksumUpdate4(oc, old, n)
		if udp {
			nc = header.UDPChecksumUpdate(oc, nc)
		}
		binary.BigEndian.PutUint16(c, nc)
	}
}

// addrChecksumField returns the transport checksum field that an IP
// address change updates (the pseudo-header covers the addresses): the
// TCP (proto 6) or UDP (17) checksum, or the ICMPv6 (58) checksum of an
// IPv6 packet, when the whole TCP header or 8 bytes of the UDP or ICMPv6
// header are in the frame, as the kernel requires; nil otherwise. udp
// reports a UDP checksum, whose value 0 means none.
func addrChecksumField(frame []byte, h *pktHeaders, proto uint8) (c []byte, udp bool) {
	if h.L4 < 0 {
		return nil, false
	}
	l4 := frame[h.L4:]
	switch {
	case proto == header.IPProtoTCP && len(l4) >= header.TCPMinimumSize:
		return l4[header.TCPChecksumOffset:], false
	case proto == header.IPProtoUDP && len(l4) >= header.UDPMinimumSize:
		return l4[header.UDPChecksumOffset:], true
	case proto == header.IPProtoICMPv6 && h.EthType == header.EtherTypeIPv6 && len(l4) >= header.ICMPMinimumSize:
		return l4[header.ICMPChecksumOffset:], false
	}
	return nil, false
}

// setIPv6Masked sets the masked bits of the IPv6 source, destination,
// traffic class, flow label and hop limit, as the kernel's set_ipv6. An
// address is rewritten only when its value changes; then the TCP, UDP or
// ICMPv6 checksum (h.Proto, at h.L4; the whole header must be in the
// frame) is updated incrementally, except for a destination change when
// the packet has a routing header with segments left
// (h.IPv6RoutingActive: the pseudo-header carries the final
// destination). UDP checksum 0 stays 0; an updated one that becomes 0 is
// stored as 0xffff. Errors: errWrongProtocol if the frame is not IPv6,
// errNotSettable if mask.Proto or mask.Frag is not zero or the label
// mask has bits above the 20-bit label (the kernel rejects these when the
// flow is put), errTooShort if the frame ends inside the 40-byte header.
func setIPv6Masked(frame []byte, h *pktHeaders, key, mask *odp.IPv6) error {
	if h.EthType != header.EtherTypeIPv6 || h.L3 < 0 {
		return fmt.Errorf("set(ipv6): %w: EtherType %#04x", errWrongProtocol, h.EthType)
	}
	if mask.Proto != 0 || mask.Frag != 0 || mask.Label&^0xfffff != 0 {
		return fmt.Errorf("set(ipv6): %w: proto mask %#x, frag mask %#x, label mask %#x", errNotSettable, mask.Proto, mask.Frag, mask.Label)
	}
	if len(frame) < h.L3+header.IPv6MinimumSize {
		return fmt.Errorf("set(ipv6): %w: %d bytes, the IPv6 header ends at %d", errTooShort, len(frame), h.L3+header.IPv6MinimumSize)
	}
	ip := header.IPv6(frame[h.L3 : h.L3+header.IPv6MinimumSize])
	if !isZero16(&mask.Src) {
		setIPv6Addr(frame, h, ip.SourceAddressPtr(), &key.Src, &mask.Src, true)
	}
	if !isZero16(&mask.Dst) {
		setIPv6Addr(frame, h, ip.DestinationAddressPtr(), &key.Dst, &mask.Dst, !h.IPv6RoutingActive)
	}
	w := ip.VersionClassLabel()
	if m := uint32(mask.TClass) << 20; m != 0 {
		w = w&^m | uint32(key.TClass)<<20&m
	}
	if m := mask.Label; m != 0 {
		w = w&^m | key.Label&m
	}
	ip.SetVersionClassLabel(w)
	if m := mask.HLimit; m != 0 {
		ip.SetHopLimit(ip.HopLimit()&^m | key.HLimit&m)
	}
	return nil
}

func isZero16(a *[16]byte) bool {
	return binary.NativeEndian.Uint64(a[:8])|binary.NativeEndian.Uint64(a[8:]) == 0
}

// setIPv6Addr sets the masked bits of the address addr (inside frame)
// and, if csum is true, updates the L4 checksum, as the kernel's
// set_ipv6_addr and update_ipv6_checksum.
func setIPv6Addr(frame []byte, h *pktHeaders, addr, key, mask *[16]byte, csum bool) {
	var n [16]byte
	for i := range n {
		n[i] = addr[i]&^mask[i] | key[i]&mask[i]
	}
	if n == *addr {
		return
	}
	if c, udp := addrChecksumField(frame, h, h.Proto); csum && c != nil {
		oc := binary.BigEndian.Uint16(c)
		nc := header.ChecksumUpdate16(oc, addr, &n)
		if udp {
			nc = header.UDPChecksumUpdate(oc, nc)
		}
		binary.BigEndian.PutUint16(c, nc)
	}
	*addr = n
}

// l4Header checks that the frame has an L4 header of protocol proto and
// at least size bytes, and returns it.
func l4Header(frame []byte, h *pktHeaders, proto uint8, size int, what string) ([]byte, error) {
	if h.L4 < 0 || h.Proto != proto {
		return nil, fmt.Errorf("set(%s): %w: IP protocol %d, transport offset %d", what, errWrongProtocol, h.Proto, h.L4)
	}
	if len(frame) < h.L4+size {
		return nil, fmt.Errorf("set(%s): %w: %d bytes, the %s header ends at %d", what, errTooShort, len(frame), what, h.L4+size)
	}
	return frame[h.L4:], nil
}

// setTCPMasked sets the masked bits of the TCP ports, as the kernel's
// set_tcp: a port is rewritten only when it changes, and the checksum is
// updated incrementally. errTooShort if the 20-byte TCP header is not
// all in the frame.
func setTCPMasked(frame []byte, h *pktHeaders, key, mask *odp.TCP) error {
	th, err := l4Header(frame, h, header.IPProtoTCP, header.TCPMinimumSize, "tcp")
	if err != nil {
		return err
	}
	t := header.TCP(th)
	t.SetChecksum(setPortsMasked(th, key, mask, t.Checksum(), true))
	return nil
}

// setUDPMasked sets the masked bits of the UDP ports, as the kernel's
// set_udp: with a non-zero checksum the changed ports update it
// incrementally (a result of 0 is stored as 0xffff); a zero checksum
// (none) stays zero. errTooShort if the 8-byte UDP header is not all in
// the frame.
func setUDPMasked(frame []byte, h *pktHeaders, key, mask *odp.UDP) error {
	uh, err := l4Header(frame, h, header.IPProtoUDP, header.UDPMinimumSize, "udp")
	if err != nil {
		return err
	}
	u := header.UDP(uh)
	old := u.Checksum()
	u.SetChecksum(header.UDPChecksumUpdate(old, setPortsMasked(uh, (*odp.TCP)(key), (*odp.TCP)(mask), old, old != 0)))
	return nil
}

// setSCTPMasked sets the masked bits of the SCTP ports, as the kernel's
// set_sctp: it computes the CRC32c of the packet (from h.L4 to the end
// of the frame) before and after the change and stores
// old checksum XOR old correct CRC XOR new CRC, so that a packet whose
// checksum was wrong stays wrong. errTooShort if the 12-byte common
// header is not all in the frame.
func setSCTPMasked(frame []byte, h *pktHeaders, key, mask *odp.SCTP) error {
	sh, err := l4Header(frame, h, header.IPProtoSCTP, header.SCTPMinimumSize, "sctp")
	if err != nil {
		return err
	}
	s := header.SCTP(sh)
	oldSum, oldCorrect := s.Checksum(), s.CalculateChecksum()
	setPortsMasked(sh, (*odp.TCP)(key), (*odp.TCP)(mask), 0, false)
	s.SetChecksum(oldSum ^ oldCorrect ^ s.CalculateChecksum())
	return nil
}

// setPortsMasked sets the masked bits of the source and destination
// ports at the start of the TCP, UDP or SCTP header l4, each only when
// it changes, and returns the checksum check updated for the changes
// when csum is true (check unchanged otherwise). UDP's and SCTP's keys
// convert to odp.TCP, which has the same fields.
func setPortsMasked(l4 []byte, key, mask *odp.TCP, check uint16, csum bool) uint16 {
	p := header.Ports(l4)
	if old := p.Source(); old&^mask.Src|key.Src&mask.Src != old {
		n := old&^mask.Src | key.Src&mask.Src
		if csum {
			check = header.ChecksumUpdate2(check, old, n)
		}
		p.SetSource(n)
	}
	if old := p.Destination(); old&^mask.Dst|key.Dst&mask.Dst != old {
		n := old&^mask.Dst | key.Dst&mask.Dst
		if csum {
			check = header.ChecksumUpdate2(check, old, n)
		}
		p.SetDestination(n)
	}
	return check
}

// setMPLSMasked sets the masked bits of the outermost MPLS label stack
// entry (at h.L3), as the kernel's set_mpls. errWrongProtocol if the
// frame is not MPLS; errTooShort if the label is not in the frame.
func setMPLSMasked(frame []byte, h *pktHeaders, lse, mask uint32) error {
	if h.EthType != header.EtherTypeMPLS && h.EthType != header.EtherTypeMPLSMC {
		return fmt.Errorf("set(mpls): %w: EtherType %#04x", errWrongProtocol, h.EthType)
	}
	if len(frame) < h.L3+4 {
		return fmt.Errorf("set(mpls): %w: %d bytes, the label ends at %d", errTooShort, len(frame), h.L3+4)
	}
	old := binary.BigEndian.Uint32(frame[h.L3:])
	binary.BigEndian.PutUint32(frame[h.L3:], old&^mask|lse&mask)
	return nil
}
