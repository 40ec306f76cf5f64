package userdp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Frame is a packet inside a buffer with headroom: the packet's bytes are
// Buf[Off:Off+Len]. Operations that grow the packet at the front (push
// VLAN, push MPLS) move the bytes in front of the insertion point into
// the headroom and decrease Off, so the rest of the packet is not copied;
// they fail with ErrNoHeadroom when Off is too small. Operations that
// shrink it at the front move those bytes back and increase Off.
type Frame struct {
	Buf []byte
	Off int
	Len int
}

// Bytes returns the packet's bytes, Buf[Off:Off+Len].
func (f *Frame) Bytes() []byte { return f.Buf[f.Off : f.Off+f.Len] }

// check verifies that the frame's bounds lie inside its buffer.
func (f *Frame) check() error {
	if f.Off < 0 || f.Len < 0 || f.Off > len(f.Buf) || f.Len > len(f.Buf)-f.Off {
		return fmt.Errorf("%w: frame bounds [%d:+%d] outside a %d-byte buffer", ErrBadFrame, f.Off, f.Len, len(f.Buf))
	}
	return nil
}

// Errors returned (wrapped, with the details) by the packet operations.
// The kernel's datapath drops a packet when an action on it fails
// (OVS_DROP_ACTION_ERROR); the userspace datapath should do the same.
var (
	// ErrTooShort: the packet ends before the header the operation
	// needs. The kernel fails such an action with -ENOMEM (from
	// skb_ensure_writable / pskb_may_pull) and drops the packet.
	ErrTooShort = errors.New("packet too short")
	// ErrNoHeadroom: a push needs more headroom than the Frame has.
	ErrNoHeadroom = errors.New("not enough headroom")
	// ErrBadFrame: the Frame's bounds are inconsistent with its buffer.
	ErrBadFrame = errors.New("bad frame")
	// ErrNotSettable: a masked set tried to change a field that the
	// kernel refuses to set (e.g. the IPv4 protocol or fragment type;
	// the kernel rejects such an action with EINVAL when the flow is put).
	ErrNotSettable = errors.New("field not settable")
	// ErrWrongProtocol: the packet does not carry the header the
	// operation sets (e.g. set(ipv4) on an ARP frame).
	ErrWrongProtocol = errors.New("packet does not have this header")
)

// EtherTypes used by the packet operations.
const (
	EthTypeIPv4    = 0x0800
	EthTypeARP     = 0x0806
	EthTypeRARP    = 0x8035
	EthTypeIPv6    = 0x86dd
	EthTypeVLAN    = 0x8100 // 802.1Q customer VLAN tag
	EthTypeQinQ    = 0x88a8 // 802.1ad service VLAN tag
	EthTypeMPLS    = 0x8847
	EthTypeMPLSMC  = 0x8848
	EthType8022    = 0x0004 // the kernel's ETH_P_802_2: an 802.3 frame without SNAP
	ethTypeTEB     = 0x6558 // transparent Ethernet bridging (ETH_P_TEB)
	ethTypeMin8023 = 0x0600
)

// IP protocol numbers used by the packet operations.
const (
	ProtoICMP   = 1
	ProtoTCP    = 6
	ProtoUDP    = 17
	ProtoICMPv6 = 58
	ProtoSCTP   = 132
)

// FragType is the IP fragment type of a packet, as the kernel's
// OVS_FRAG_TYPE_*.
type FragType uint8

// The fragment types.
const (
	FragNone  FragType = 0 // not a fragment
	FragFirst FragType = 1 // first fragment (offset 0): has the L4 header
	FragLater FragType = 2 // later fragment: no L4 header
)

// Headers locates a frame's headers, as the kernel records them in the
// skb during key extraction (mac_len, network and transport offsets). All
// offsets are from the start of the frame; -1 means absent.
type Headers struct {
	// MACLen is the length of the Ethernet header including in-line
	// VLAN tags (and an LLC/SNAP header), i.e. where the network header
	// or MPLS label stack starts.
	MACLen int
	// EthType is the innermost EtherType (after VLAN tags and SNAP),
	// exactly as flowkeys.Extract puts it in the key's eth_type: an
	// 802.3 length field followed by LLC with DSAP and SSAP 0xaa and a
	// zero OUI (whatever the control byte, as the kernel's
	// parse_ethertype) gives the SNAP EtherType when that is one
	// (>= 0x600), and every other 802.3 frame EthType8022.
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
	// Frag is the IP fragment type.
	Frag FragType
	// IPv6RoutingActive reports an IPv6 routing header with segments
	// left, before the transport header: the kernel then does not
	// update the L4 checksum when the destination address changes
	// (the pseudo-header uses the final destination).
	IPv6RoutingActive bool
}

// ParseHeaders fills h with the locations of frame's headers. It parses
// an Ethernet header, up to two in-line VLAN tags (802.1Q or 802.1ad),
// LLC/SNAP, and IPv4 or IPv6 (with the extension headers the kernel's
// ipv6_find_hdr follows). It finds the network header exactly where
// flowkeys.Extract (the kernel's key_extract) does, so that the actions
// work on the header the flow key describes. It returns ErrTooShort when
// the frame is shorter than an Ethernet header; a truncated or malformed
// IP header is not an error: h.L4 is then -1, as the kernel leaves the
// packet without a transport header. It allocates nothing.
func ParseHeaders(frame []byte, h *Headers) error {
	*h = Headers{L3: -1, L4: -1}
	if len(frame) < 14 {
		return fmt.Errorf("%w: %d bytes, an Ethernet header needs 14", ErrTooShort, len(frame))
	}
	off, et, tags := l2Type(frame)
	h.MACLen = off
	h.EthType = et
	h.Protocol = et
	if tags == 2 {
		h.Protocol = binary.BigEndian.Uint16(frame[16:])
	}
	h.L3 = off
	switch et {
	case EthTypeIPv4:
		parseIPv4(frame, h)
	case EthTypeIPv6:
		parseIPv6(frame, h)
	}
	return nil
}

// l2Type applies the kernel's parse_vlan and parse_ethertype (as
// flowkeys.Extract does) to a frame of at least 14 bytes: it returns the
// offset of the network header, the EtherType the flow key gets and the
// number of VLAN tags parsed. A tag is parsed only when its 4 bytes and
// the 2 of the type after it are in the frame; an 802.3 length field is
// followed by LLC, and by SNAP when DSAP and SSAP are 0xaa and the OUI is
// zero (the control byte is not looked at); the SNAP EtherType is used
// when it is one (>= 0x600), else the frame is EthType8022, as is any
// other 802.3 frame and one whose LLC/SNAP header is cut short.
func l2Type(frame []byte) (off int, et uint16, tags int) {
	off = 12
	et = binary.BigEndian.Uint16(frame[off:])
	for tags < 2 && isVLANType(et) && len(frame) >= off+6 {
		off += 4
		tags++
		et = binary.BigEndian.Uint16(frame[off:])
	}
	off += 2
	if et >= ethTypeMin8023 {
		return off, et, tags
	}
	if len(frame) < off+8 {
		return off, EthType8022, tags
	}
	if frame[off] != 0xaa || frame[off+1] != 0xaa || frame[off+3]|frame[off+4]|frame[off+5] != 0 {
		return off, EthType8022, tags
	}
	et = binary.BigEndian.Uint16(frame[off+6:])
	off += 8
	if et < ethTypeMin8023 {
		et = EthType8022
	}
	return off, et, tags
}

func parseIPv4(frame []byte, h *Headers) {
	ip := frame[h.L3:]
	if len(ip) < 20 {
		return
	}
	ihl := int(ip[0]&0x0f) * 4
	if ihl < 20 || len(ip) < ihl {
		return
	}
	h.Proto = ip[9]
	// The kernel sets the transport offset after the IPv4 header even
	// for a later fragment (whose payload is not a transport header).
	h.L4 = h.L3 + ihl
	fo := binary.BigEndian.Uint16(ip[6:])
	switch {
	case fo&0x1fff != 0:
		h.Frag = FragLater
	case fo&0x2000 != 0:
		h.Frag = FragFirst
	}
}

// IPv6 next-header values the extension header walk knows.
const (
	nhHop      = 0
	nhRouting  = 43
	nhFragment = 44
	nhAuth     = 51
	nhNone     = 59
	nhDest     = 60
)

func parseIPv6(frame []byte, h *Headers) {
	ip := frame[h.L3:]
	if len(ip) < 40 {
		return
	}
	nh := ip[6]
	off := h.L3 + 40
	for {
		switch nh {
		case nhHop, nhRouting, nhDest, nhAuth, nhFragment:
		case nhNone:
			h.Proto = nh
			return
		default:
			h.Proto = nh
			if off <= len(frame) {
				h.L4 = off
			}
			return
		}
		if len(frame) < off+8 {
			return // truncated extension header: no transport header
		}
		var hl int
		switch nh {
		case nhFragment:
			hl = 8
			fo := binary.BigEndian.Uint16(frame[off+2:])
			if fo&^7 != 0 {
				h.Frag = FragLater
				h.Proto = nhFragment
				return
			}
			h.Frag = FragFirst
		case nhAuth:
			hl = (int(frame[off+1]) + 2) * 4
		case nhRouting:
			if frame[off+3] != 0 {
				h.IPv6RoutingActive = true
			}
			hl = (int(frame[off+1]) + 1) * 8
		default:
			hl = (int(frame[off+1]) + 1) * 8
		}
		nh = frame[off]
		off += hl
	}
}
