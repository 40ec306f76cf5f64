package userdp

import (
	"encoding/binary"
	"fmt"

	"github.com/ovsdp/ovsdp/internal/header"
)

// Length-changing operations (push/pop VLAN and MPLS) work on a frameBuf and
// keep the bytes after the inserted or removed header where they are:
// only the Ethernet header (and in-line VLAN tags) move, into or out of
// the headroom. After one of them, re-parse the frame's pktHeaders (the
// kernel likewise invalidates the flow key).
//
// Frames carry every VLAN tag in-line. The kernel keeps the outermost tag
// out of the packet data (the skb's accelerated tag): its skb->protocol is
// the EtherType after that tag, and its skb->len excludes it. skbProtocol
// and skbLen give those values, for the operations that depend on them.

// skbProtocol returns the EtherType the kernel's datapath sees as
// skb->protocol for frame right after key extraction (pktHeaders.Protocol):
// the flow key's EtherType (after VLAN tags and LLC/SNAP, as
// flowkeys.Extract finds it), or with two VLAN tags the inner tag's TPID.
// It returns 0 for a frame too short to have one. Actions can change
// skb->protocol in ways the bytes do not show (popping the outer of two
// tags from an 802.3 frame gives the kernel's 802.2 or 802.3 value);
// the datapath tracks those.
func skbProtocol(frame []byte) uint16 {
	if len(frame) < 14 {
		return 0
	}
	_, et, tags := header.L2(frame)
	if tags == 2 {
		return header.VLAN(frame[header.EthernetTypeOffset+header.VLANTagSize:]).TPID()
	}
	return et
}

// skbLen returns the length the kernel would count for frame (skb->len):
// without the outermost VLAN tag, which the kernel holds out of band.
// Flow statistics, trunc and check_pkt_len use this length.
func skbLen(frame []byte) int {
	if outerTag(frame) {
		return len(frame) - header.VLANTagSize
	}
	return len(frame)
}

// pushVLAN inserts a VLAN tag (TPID tpid, 0x8100 or 0x88a8, and TCI tci)
// as the outermost tag, after the Ethernet addresses, as the kernel's
// push_vlan: the CFI/DEI bit (0x1000) of tci is cleared (OVS uses it in
// the action to mean "tag present"). It needs 4 bytes of headroom
// (errNoHeadroom) and a frame of at least 14 bytes (errTooShort).
func pushVLAN(f *frameBuf, tpid, tci uint16) error {
	if err := f.check(); err != nil {
		return fmt.Errorf("push_vlan: %w", err)
	}
	if f.Len < 14 {
		return fmt.Errorf("push_vlan: %w: %d bytes, the Ethernet header needs 14", errTooShort, f.Len)
	}
	if f.Off < 4 {
		return fmt.Errorf("push_vlan: %w: %d bytes in front of the frame, 4 needed", errNoHeadroom, f.Off)
	}
	b := f.Buf[f.Off-header.VLANTagSize:]
	copy(b[:header.EthernetTypeOffset], b[header.VLANTagSize:header.EthernetTypeOffset+header.VLANTagSize])
	tag := header.VLAN(b[header.EthernetTypeOffset:])
	tag.SetTPID(tpid)
	tag.SetTCI(tci &^ header.VLANCFI)
	f.Off -= header.VLANTagSize
	f.Len += header.VLANTagSize
	return nil
}

// popVLAN removes the outermost VLAN tag, as the kernel's pop_vlan. A
// frame without a tag is left unchanged (the kernel does nothing). A
// tagged frame shorter than 18 bytes gives errTooShort.
func popVLAN(f *frameBuf) error {
	if err := f.check(); err != nil {
		return fmt.Errorf("pop_vlan: %w", err)
	}
	b := f.Bytes()
	if len(b) < 14 {
		return fmt.Errorf("pop_vlan: %w: %d bytes, the Ethernet header needs 14", errTooShort, len(b))
	}
	if !header.IsVLAN(header.Ethernet(b).Type()) {
		return nil
	}
	if len(b) < 18 {
		return fmt.Errorf("pop_vlan: %w: %d bytes, a tagged Ethernet header needs 18", errTooShort, len(b))
	}
	copy(b[4:16], b[:12])
	f.Off += 4
	f.Len -= 4
	return nil
}

// pushMPLS inserts the MPLS label stack entry lse at h.MACLen (after the
// Ethernet header, its in-line VLAN tags and an LLC/SNAP header: on top
// of the label stack if the frame is MPLS already) and sets the
// Ethernet header's EtherType field to ethertype (0x8847 or 0x8848,
// which the kernel requires when the flow is put), as the kernel's
// push_mpls (skb_mpls_push): the field it sets is the one right after
// the addresses and the out-of-band outer VLAN tag, that is at offset
// 12, or 16 when the frame has an outer tag; with LLC/SNAP that is the
// 802.3 length field. It needs 4 bytes of headroom.
func pushMPLS(f *frameBuf, h *pktHeaders, lse uint32, ethertype uint16) error {
	if !header.IsMPLS(ethertype) {
		return fmt.Errorf("push_mpls: EtherType %#04x is not MPLS (0x8847 or 0x8848): %w", ethertype, errNotSettable)
	}
	return insertMPLS(f, "push_mpls", h.MACLen, lse, ethertype, true)
}

// insertMPLS inserts the label stack entry lse at offset ml of the
// packet (the kernel's mac_len; 0 puts it in front of the packet), as
// skb_mpls_push: the ml bytes in front move into the headroom, and with
// ethernet (a packet with an Ethernet header, ml at least 14) the
// EtherType field after the addresses (and after an outer VLAN tag, which
// the kernel holds out of band) is set to ethertype. It needs 4 bytes of
// headroom. name is the action, for errors.
func insertMPLS(f *frameBuf, name string, ml int, lse uint32, ethertype uint16, ethernet bool) error {
	if err := f.check(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if ml < 0 || ml > f.Len || (ethernet && ml < header.EthernetMinimumSize) {
		return fmt.Errorf("%s: %w: MAC header length %d, frame %d bytes", name, errTooShort, ml, f.Len)
	}
	if f.Off < 4 {
		return fmt.Errorf("%s: %w: %d bytes in front of the frame, 4 needed", name, errNoHeadroom, f.Off)
	}
	typeOff := header.EthernetTypeOffset
	if ethernet && outerTag(f.Bytes()) && ml >= header.EthernetMinimumSize+header.VLANTagSize {
		typeOff += header.VLANTagSize
	}
	b := f.Buf[f.Off-4:]
	copy(b[:ml], b[4:4+ml])
	binary.BigEndian.PutUint32(b[ml:], lse)
	if ethernet {
		binary.BigEndian.PutUint16(b[typeOff:], ethertype)
	}
	f.Off -= 4
	f.Len += 4
	return nil
}

// popMPLS removes the outermost MPLS label stack entry (at h.MACLen) and
// sets the EtherType in front of it to ethertype, as the kernel's
// pop_mpls (skb_mpls_pop). A frame that is not MPLS by h.Protocol (the
// kernel checks skb->protocol) is left unchanged. A packet without an
// Ethernet header (ethernet false: h.MACLen is 0) has its first label
// removed and no EtherType field to set. errTooShort if the label is
// not all in the frame.
func popMPLS(f *frameBuf, h *pktHeaders, ethertype uint16, ethernet bool) error {
	if err := f.check(); err != nil {
		return fmt.Errorf("pop_mpls: %w", err)
	}
	b := f.Bytes()
	if !header.IsMPLS(h.Protocol) {
		return nil
	}
	ml := h.MACLen
	if (ethernet && ml < 14) || ml < 0 || len(b) < ml+4 {
		return fmt.Errorf("pop_mpls: %w: %d bytes, the label ends at %d", errTooShort, len(b), ml+4)
	}
	copy(b[4:4+ml], b[:ml])
	if ethernet {
		binary.BigEndian.PutUint16(b[4+ml-2:], ethertype)
	}
	f.Off += 4
	f.Len -= 4
	return nil
}

// truncLen returns the length frame has when output after a
// trunc(maxLen) action, as the kernel's do_output: the kernel trims
// skb->len (skbLen, without the out-of-band outermost VLAN tag) to
// max(maxLen, 14) when maxLen is smaller; the tag, if any, is sent too.
func truncLen(frame []byte, maxLen uint32) int {
	sl := skbLen(frame)
	if uint64(maxLen) >= uint64(sl) {
		return len(frame)
	}
	cut := int(max(maxLen, 14))
	return cut + (len(frame) - sl)
}

// decIPv4TTL decrements the TTL of the IPv4 header ip (at least 20
// bytes) and updates its checksum incrementally, unless the TTL is 1 or
// 0: then it changes nothing and reports true (expired). It is small
// enough to be inlined in the datapath's action loop.
func decIPv4TTL(ip []byte) (expired bool) {
	v := header.IPv4(ip[:header.IPv4MinimumSize])
	ttl := v.TTL()
	if ttl <= 1 {
		return true
	}
	v.SetTTL(ttl - 1)
	v.SetChecksum(header.DecTTLChecksum(v.Checksum()))
	return false
}

// decTTL decrements the IPv4 TTL (updating the header checksum
// incrementally) or the IPv6 hop limit, as the kernel's execute_dec_ttl.
// The kernel decides by skb->protocol (proto, pktHeaders.Protocol): a
// frame that is neither IPv4 nor IPv6 by it (e.g. two VLAN tags, MPLS) is
// left unchanged. The IP header is at l3, the network header key
// extraction found (after VLAN tags and LLC/SNAP). When the TTL is 1 or 0
// the frame is not changed and expired is true: the datapath then runs
// the action's le_1 nested actions (none: the packet is dropped).
// errTooShort when the IP header is not all in the frame.
func decTTL(frame []byte, proto uint16, l3 int) (expired bool, err error) {
	switch proto {
	case header.EtherTypeIPv4:
		if l3 < 0 || len(frame) < l3+header.IPv4MinimumSize {
			return false, fmt.Errorf("dec_ttl: %w: %d bytes, the IPv4 header ends at %d", errTooShort, len(frame), l3+header.IPv4MinimumSize)
		}
		return decIPv4TTL(frame[l3:]), nil
	case header.EtherTypeIPv6:
		if l3 < 0 || len(frame) < l3+header.IPv6MinimumSize {
			return false, fmt.Errorf("dec_ttl: %w: %d bytes, the IPv6 header ends at %d", errTooShort, len(frame), l3+header.IPv6MinimumSize)
		}
		ip := header.IPv6(frame[l3 : l3+header.IPv6MinimumSize])
		if ip.HopLimit() <= 1 {
			return true, nil
		}
		ip.SetHopLimit(ip.HopLimit() - 1)
	}
	return false, nil
}
