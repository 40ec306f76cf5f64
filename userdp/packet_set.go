package userdp

import (
	"encoding/binary"
	"fmt"

	"github.com/ovsdp/ovsdp/odp"
)

// Masked set operations, as the kernel's execute_masked_set_action in
// net/openvswitch/actions.c. Each writes only the bits selected by the
// mask: field = old&^mask | key&mask (the kernel's OVS_MASKED; the kernel
// requires key bits outside the mask to be zero, so this is the same),
// and updates the checksums incrementally (RFC 1624). The Headers must
// describe frame (ParseHeaders). A plain (unmasked) set is a masked set
// with an all-ones mask, as the kernel converts it.
//
// The kernel's datapath does not execute set actions on ICMP, ICMPv6,
// ARP or ND fields (its flow validation rejects them with EINVAL). This
// datapath executes them, as Open vSwitch's userspace datapath does: their
// operations are in exec_sets.go, not here.

// SetEthernetMasked sets the masked bits of the frame's Ethernet source
// and destination addresses. The kernel fails it with -ENOMEM for a
// frame shorter than 14 bytes; this returns ErrTooShort.
func SetEthernetMasked(frame []byte, key, mask *odp.Ethernet) error {
	if len(frame) < 14 {
		return fmt.Errorf("set(eth): %w: %d bytes, the Ethernet header needs 14", ErrTooShort, len(frame))
	}
	for i := 0; i < 6; i++ {
		frame[i] = frame[i]&^mask.Dst[i] | key.Dst[i]&mask.Dst[i]
		frame[6+i] = frame[6+i]&^mask.Src[i] | key.Src[i]&mask.Src[i]
	}
	return nil
}

// SetIPv4Masked sets the masked bits of the IPv4 source, destination, TOS
// and TTL, as the kernel's set_ipv4: an address is rewritten only when its
// value changes, and then the header checksum and, unless the packet is a
// later fragment, the TCP or UDP checksum (the pseudo-header covers the
// addresses) are updated incrementally; a zero UDP checksum stays zero,
// and an updated one that becomes zero is stored as 0xffff. TOS and TTL
// changes update the header checksum. The L4 checksum is updated only if
// the whole TCP (20 bytes) or UDP (8 bytes) header is in the frame, as
// the kernel does. Errors: ErrWrongProtocol if the frame is not IPv4,
// ErrNotSettable if mask.Proto or mask.Frag is not zero, ErrTooShort if
// the frame ends inside the 20-byte IPv4 header (the kernel drops it).
func SetIPv4Masked(frame []byte, h *Headers, key, mask *odp.IPv4) error {
	if h.EthType != EthTypeIPv4 || h.L3 < 0 {
		return fmt.Errorf("set(ipv4): %w: EtherType %#04x", ErrWrongProtocol, h.EthType)
	}
	if mask.Proto != 0 || mask.Frag != 0 {
		return fmt.Errorf("set(ipv4): %w: proto mask %#x, frag mask %#x", ErrNotSettable, mask.Proto, mask.Frag)
	}
	if len(frame) < h.L3+20 {
		return fmt.Errorf("set(ipv4): %w: %d bytes, the IPv4 header ends at %d", ErrTooShort, len(frame), h.L3+20)
	}
	ip := frame[h.L3 : h.L3+20]
	check := binary.BigEndian.Uint16(ip[10:])
	if m := binary.BigEndian.Uint32(mask.Src[:]); m != 0 {
		old := binary.BigEndian.Uint32(ip[12:])
		n := old&^m | binary.BigEndian.Uint32(key.Src[:])&m
		if n != old {
			updateIPv4L4(frame, h, ip, old, n)
			check = CsumReplace4(check, old, n)
			binary.BigEndian.PutUint32(ip[12:], n)
		}
	}
	if m := binary.BigEndian.Uint32(mask.Dst[:]); m != 0 {
		old := binary.BigEndian.Uint32(ip[16:])
		n := old&^m | binary.BigEndian.Uint32(key.Dst[:])&m
		if n != old {
			updateIPv4L4(frame, h, ip, old, n)
			check = CsumReplace4(check, old, n)
			binary.BigEndian.PutUint32(ip[16:], n)
		}
	}
	if m := mask.TOS; m != 0 {
		old := ip[1]
		n := old&^m | key.TOS&m
		check = CsumReplace2(check, uint16(old), uint16(n))
		ip[1] = n
	}
	if m := mask.TTL; m != 0 {
		old := ip[8]
		n := old&^m | key.TTL&m
		check = CsumReplace2(check, uint16(old)<<8, uint16(n)<<8)
		ip[8] = n
	}
	binary.BigEndian.PutUint16(ip[10:], check)
	return nil
}

// updateIPv4L4 updates the TCP/UDP checksum for an IPv4 address change,
// as the kernel's update_ip_l4_checksum.
func updateIPv4L4(frame []byte, h *Headers, ip []byte, old, n uint32) {
	if binary.BigEndian.Uint16(ip[6:])&0x1fff != 0 || h.L4 < 0 {
		return
	}
	tl := len(frame) - h.L4
	switch ip[9] {
	case ProtoTCP:
		if tl >= 20 {
			c := frame[h.L4+16:]
			binary.BigEndian.PutUint16(c, CsumReplace4(binary.BigEndian.Uint16(c), old, n))
		}
	case ProtoUDP:
		if tl >= 8 {
			c := frame[h.L4+6:]
			oc := binary.BigEndian.Uint16(c)
			binary.BigEndian.PutUint16(c, CsumReplaceUDP(oc, CsumReplace4(oc, old, n)))
		}
	}
}

// SetIPv6Masked sets the masked bits of the IPv6 source, destination,
// traffic class, flow label and hop limit, as the kernel's set_ipv6. An
// address is rewritten only when its value changes; then the TCP, UDP or
// ICMPv6 checksum (h.Proto, at h.L4; the whole header must be in the
// frame) is updated incrementally, except for a destination change when
// the packet has a routing header with segments left
// (h.IPv6RoutingActive: the pseudo-header carries the final
// destination). UDP checksum 0 stays 0; an updated one that becomes 0 is
// stored as 0xffff. Errors: ErrWrongProtocol if the frame is not IPv6,
// ErrNotSettable if mask.Proto or mask.Frag is not zero or the label
// mask has bits above the 20-bit label (the kernel rejects these when the
// flow is put), ErrTooShort if the frame ends inside the 40-byte header.
func SetIPv6Masked(frame []byte, h *Headers, key, mask *odp.IPv6) error {
	if h.EthType != EthTypeIPv6 || h.L3 < 0 {
		return fmt.Errorf("set(ipv6): %w: EtherType %#04x", ErrWrongProtocol, h.EthType)
	}
	if mask.Proto != 0 || mask.Frag != 0 || mask.Label&^0xfffff != 0 {
		return fmt.Errorf("set(ipv6): %w: proto mask %#x, frag mask %#x, label mask %#x", ErrNotSettable, mask.Proto, mask.Frag, mask.Label)
	}
	if len(frame) < h.L3+40 {
		return fmt.Errorf("set(ipv6): %w: %d bytes, the IPv6 header ends at %d", ErrTooShort, len(frame), h.L3+40)
	}
	ip := frame[h.L3 : h.L3+40]
	if !isZero16(&mask.Src) {
		setIPv6Addr(frame, h, (*[16]byte)(ip[8:24]), &key.Src, &mask.Src, true)
	}
	if !isZero16(&mask.Dst) {
		setIPv6Addr(frame, h, (*[16]byte)(ip[24:40]), &key.Dst, &mask.Dst, !h.IPv6RoutingActive)
	}
	w := binary.BigEndian.Uint32(ip)
	if m := uint32(mask.TClass) << 20; m != 0 {
		w = w&^m | uint32(key.TClass)<<20&m
	}
	if m := mask.Label; m != 0 {
		w = w&^m | key.Label&m
	}
	binary.BigEndian.PutUint32(ip, w)
	if m := mask.HLimit; m != 0 {
		ip[7] = ip[7]&^m | key.HLimit&m
	}
	return nil
}

func isZero16(a *[16]byte) bool {
	return binary.NativeEndian.Uint64(a[:8])|binary.NativeEndian.Uint64(a[8:]) == 0
}

// setIPv6Addr sets the masked bits of the address addr (inside frame)
// and, if csum is true, updates the L4 checksum, as the kernel's
// set_ipv6_addr and update_ipv6_checksum.
func setIPv6Addr(frame []byte, h *Headers, addr, key, mask *[16]byte, csum bool) {
	var n [16]byte
	for i := range n {
		n[i] = addr[i]&^mask[i] | key[i]&mask[i]
	}
	if n == *addr {
		return
	}
	if csum && h.L4 >= 0 {
		tl := len(frame) - h.L4
		switch h.Proto {
		case ProtoTCP:
			if tl >= 20 {
				c := frame[h.L4+16:]
				binary.BigEndian.PutUint16(c, CsumReplace16(binary.BigEndian.Uint16(c), addr, &n))
			}
		case ProtoUDP:
			if tl >= 8 {
				c := frame[h.L4+6:]
				oc := binary.BigEndian.Uint16(c)
				binary.BigEndian.PutUint16(c, CsumReplaceUDP(oc, CsumReplace16(oc, addr, &n)))
			}
		case ProtoICMPv6:
			if tl >= 8 {
				c := frame[h.L4+2:]
				binary.BigEndian.PutUint16(c, CsumReplace16(binary.BigEndian.Uint16(c), addr, &n))
			}
		}
	}
	*addr = n
}

// l4Header checks that the frame has an L4 header of protocol proto and
// at least size bytes, and returns it.
func l4Header(frame []byte, h *Headers, proto uint8, size int, what string) ([]byte, error) {
	if h.L4 < 0 || h.Proto != proto {
		return nil, fmt.Errorf("set(%s): %w: IP protocol %d, transport offset %d", what, ErrWrongProtocol, h.Proto, h.L4)
	}
	if len(frame) < h.L4+size {
		return nil, fmt.Errorf("set(%s): %w: %d bytes, the %s header ends at %d", what, ErrTooShort, len(frame), what, h.L4+size)
	}
	return frame[h.L4:], nil
}

// SetTCPMasked sets the masked bits of the TCP ports, as the kernel's
// set_tcp: a port is rewritten only when it changes, and the checksum is
// updated incrementally. ErrTooShort if the 20-byte TCP header is not
// all in the frame.
func SetTCPMasked(frame []byte, h *Headers, key, mask *odp.TCP) error {
	th, err := l4Header(frame, h, ProtoTCP, 20, "tcp")
	if err != nil {
		return err
	}
	check := binary.BigEndian.Uint16(th[16:])
	for i, kv := range [2][2]uint16{{key.Src, mask.Src}, {key.Dst, mask.Dst}} {
		old := binary.BigEndian.Uint16(th[2*i:])
		n := old&^kv[1] | kv[0]&kv[1]
		if n != old {
			check = CsumReplace2(check, old, n)
			binary.BigEndian.PutUint16(th[2*i:], n)
		}
	}
	binary.BigEndian.PutUint16(th[16:], check)
	return nil
}

// SetUDPMasked sets the masked bits of the UDP ports, as the kernel's
// set_udp: with a non-zero checksum the changed ports update it
// incrementally (a result of 0 is stored as 0xffff); a zero checksum
// (none) stays zero. ErrTooShort if the 8-byte UDP header is not all in
// the frame.
func SetUDPMasked(frame []byte, h *Headers, key, mask *odp.UDP) error {
	uh, err := l4Header(frame, h, ProtoUDP, 8, "udp")
	if err != nil {
		return err
	}
	check := binary.BigEndian.Uint16(uh[6:])
	oldCheck := check
	for i, kv := range [2][2]uint16{{key.Src, mask.Src}, {key.Dst, mask.Dst}} {
		old := binary.BigEndian.Uint16(uh[2*i:])
		n := old&^kv[1] | kv[0]&kv[1]
		if n != old {
			if oldCheck != 0 {
				check = CsumReplace2(check, old, n)
			}
			binary.BigEndian.PutUint16(uh[2*i:], n)
		}
	}
	if oldCheck != 0 && check == 0 {
		check = 0xffff
	}
	binary.BigEndian.PutUint16(uh[6:], check)
	return nil
}

// SetSCTPMasked sets the masked bits of the SCTP ports, as the kernel's
// set_sctp: it computes the CRC32c of the packet (from h.L4 to the end
// of the frame) before and after the change and stores
// old checksum XOR old correct CRC XOR new CRC, so that a packet whose
// checksum was wrong stays wrong. ErrTooShort if the 12-byte common
// header is not all in the frame.
func SetSCTPMasked(frame []byte, h *Headers, key, mask *odp.SCTP) error {
	sh, err := l4Header(frame, h, ProtoSCTP, 12, "sctp")
	if err != nil {
		return err
	}
	oldSum := binary.LittleEndian.Uint32(sh[8:])
	oldCorrect := SCTPChecksum(sh)
	for i, kv := range [2][2]uint16{{key.Src, mask.Src}, {key.Dst, mask.Dst}} {
		old := binary.BigEndian.Uint16(sh[2*i:])
		binary.BigEndian.PutUint16(sh[2*i:], old&^kv[1]|kv[0]&kv[1])
	}
	binary.LittleEndian.PutUint32(sh[8:], oldSum^oldCorrect^SCTPChecksum(sh))
	return nil
}

// SetMPLSMasked sets the masked bits of the outermost MPLS label stack
// entry (at h.L3), as the kernel's set_mpls. ErrWrongProtocol if the
// frame is not MPLS; ErrTooShort if the label is not in the frame.
func SetMPLSMasked(frame []byte, h *Headers, lse, mask uint32) error {
	if h.EthType != EthTypeMPLS && h.EthType != EthTypeMPLSMC {
		return fmt.Errorf("set(mpls): %w: EtherType %#04x", ErrWrongProtocol, h.EthType)
	}
	if len(frame) < h.L3+4 {
		return fmt.Errorf("set(mpls): %w: %d bytes, the label ends at %d", ErrTooShort, len(frame), h.L3+4)
	}
	old := binary.BigEndian.Uint32(frame[h.L3:])
	binary.BigEndian.PutUint32(frame[h.L3:], old&^mask|lse&mask)
	return nil
}
