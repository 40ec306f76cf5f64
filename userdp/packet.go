package userdp

import (
	"errors"
	"fmt"

	"github.com/ovsdp/ovsdp/internal/header"
)

// frameBuf is a packet inside a buffer with headroom: the packet's bytes are
// Buf[Off:Off+Len]. Operations that grow the packet at the front (push
// VLAN, push MPLS) move the bytes in front of the insertion point into
// the headroom and decrease Off, so the rest of the packet is not copied;
// they fail with errNoHeadroom when Off is too small. Operations that
// shrink it at the front move those bytes back and increase Off.
type frameBuf struct {
	Buf []byte
	Off int
	Len int
}

// Bytes returns the packet's bytes, Buf[Off:Off+Len].
func (f *frameBuf) Bytes() []byte { return f.Buf[f.Off : f.Off+f.Len] }

// check verifies that the frame's bounds lie inside its buffer.
func (f *frameBuf) check() error {
	if f.Off < 0 || f.Len < 0 || f.Off > len(f.Buf) || f.Len > len(f.Buf)-f.Off {
		return fmt.Errorf("%w: frame bounds [%d:+%d] outside a %d-byte buffer", errBadFrame, f.Off, f.Len, len(f.Buf))
	}
	return nil
}

// Errors returned (wrapped, with the details) by the packet operations.
// The kernel's datapath drops a packet when an action on it fails
// (OVS_DROP_ACTION_ERROR); the userspace datapath should do the same.
var (
	// errTooShort: the packet ends before the header the operation
	// needs. The kernel fails such an action with -ENOMEM (from
	// skb_ensure_writable / pskb_may_pull) and drops the packet.
	errTooShort = errors.New("packet too short")
	// errNoHeadroom: a push needs more headroom than the frameBuf has.
	errNoHeadroom = errors.New("not enough headroom")
	// errBadFrame: the frameBuf's bounds are inconsistent with its buffer.
	errBadFrame = errors.New("bad frame")
	// errNotSettable: a masked set tried to change a field that the
	// kernel refuses to set (e.g. the IPv4 protocol or fragment type;
	// the kernel rejects such an action with EINVAL when the flow is put).
	errNotSettable = errors.New("field not settable")
	// errWrongProtocol: the packet does not carry the header the
	// operation sets (e.g. set(ipv4) on an ARP frame).
	errWrongProtocol = errors.New("packet does not have this header")
)

// pktHeaders locates a frame's headers, as the kernel records them in the
// skb during key extraction (mac_len, network and transport offsets). All
// offsets are from the start of the frame; -1 means absent.
type pktHeaders struct {
	// MACLen is the length of the Ethernet header including in-line
	// VLAN tags (and an LLC/SNAP header), i.e. where the network header
	// or MPLS label stack starts.
	MACLen int
	// EthType is the innermost EtherType (after VLAN tags and SNAP),
	// exactly as flowkeys.Extract puts it in the key's eth_type: an
	// 802.3 length field followed by LLC with DSAP and SSAP 0xaa and a
	// zero OUI (whatever the control byte, as the kernel's
	// parse_ethertype) gives the SNAP EtherType when that is one
	// (>= 0x600), and every other 802.3 frame header.EtherType8022.
	EthType uint16
	// Protocol is skb->protocol as the kernel's key_extract leaves it:
	// EthType, or with two VLAN tags the inner tag's TPID. The kernel's
	// dec_ttl and pop_mpls decide by it, not by the frame's bytes. The
	// datapath keeps it across actions that change it (push/pop of
	// VLAN tags and MPLS labels) as the kernel does.
	Protocol uint16
	// L3 is the offset of the IPv4/IPv6/ARP header or MPLS label stack.
	L3 int
	// L4 is the offset of the transport header, -1 if there is none
	// (not IP, a malformed IP header, an IPv6 later fragment, or an
	// IPv6 extension header chain that could not be followed or that
	// ends beyond the frame). As in
	// the kernel, an IPv4 later fragment has L4 set just after its IP
	// header; the checksum updates check Frag.
	L4 int
	// Proto is the IP protocol (for IPv6, the last next-header value
	// followed; 44, fragment, for a later fragment).
	Proto uint8
	// Frag is the IP fragment type: header.FragNone, FragFirst or
	// FragLater.
	Frag uint8
	// IPv6RoutingActive reports an IPv6 routing header with segments
	// left, before the transport header: the kernel then does not
	// update the L4 checksum when the destination address changes
	// (the pseudo-header uses the final destination).
	IPv6RoutingActive bool
}

// parseHeaders fills h with the locations of frame's headers. It parses
// an Ethernet header, up to two in-line VLAN tags (802.1Q or 802.1ad),
// LLC/SNAP, and IPv4 or IPv6 (with the extension headers the kernel's
// ipv6_find_hdr follows). It finds the network header exactly where
// flowkeys.Extract (the kernel's key_extract) does, so that the actions
// work on the header the flow key describes. It returns errTooShort when
// the frame is shorter than an Ethernet header; a truncated or malformed
// IP header is not an error: h.L4 is then -1, as the kernel leaves the
// packet without a transport header. It allocates nothing.
func parseHeaders(frame []byte, h *pktHeaders) error {
	*h = pktHeaders{L3: -1, L4: -1}
	if len(frame) < 14 {
		return fmt.Errorf("%w: %d bytes, an Ethernet header needs 14", errTooShort, len(frame))
	}
	off, et, tags := header.L2(frame)
	h.MACLen = off
	h.EthType = et
	h.Protocol = et
	if tags == 2 {
		h.Protocol = header.VLAN(frame[header.EthernetTypeOffset+header.VLANTagSize:]).TPID()
	}
	h.L3 = off
	switch et {
	case header.EtherTypeIPv4:
		parseIPv4(frame, h)
	case header.EtherTypeIPv6:
		parseIPv6(frame, h)
	}
	return nil
}

// parseIPv4 locates the transport header of the IPv4 header at h.L3.
func parseIPv4(frame []byte, h *pktHeaders) {
	ip := header.IPv4(frame[h.L3:])
	if len(ip) < header.IPv4MinimumSize {
		return
	}
	ihl := ip.HeaderLength()
	if ihl < header.IPv4MinimumSize || len(ip) < ihl {
		return
	}
	h.Proto = ip.Protocol()
	// The kernel sets the transport offset after the IPv4 header even
	// for a later fragment (whose payload is not a transport header).
	h.L4 = h.L3 + ihl
	h.Frag = ip.FragType()
}

// parseIPv6 follows the extension headers after the IPv6 header at h.L3
// as flowkeys.Extract does (the kernel's ipv6_find_hdr, one walk for
// both: header.IPv6ExtWalk).
func parseIPv6(frame []byte, h *pktHeaders) {
	if len(frame)-h.L3 < header.IPv6MinimumSize {
		return
	}
	w := header.IPv6ExtWalk(frame, h.L3)
	h.IPv6RoutingActive = w.RoutingActive
	if w.Fragment {
		if w.FragmentOffset != 0 {
			h.Frag = header.FragLater
			h.Proto = header.IPProtoFragment
			return
		}
		h.Frag = header.FragFirst
	}
	if !w.OK {
		return // a truncated or malformed chain: no transport header
	}
	h.Proto = w.Next
	if w.Next != header.IPProtoNoNext {
		h.L4 = w.Offset
	}
}
