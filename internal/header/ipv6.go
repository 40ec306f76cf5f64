package header

import "encoding/binary"

// IPv6 header sizes and the offsets of its fields.
const (
	IPv6MinimumSize       = 40
	IPv6AddressSize       = 16
	IPv6PayloadLenOffset  = 4
	IPv6NextHeaderOffset  = 6
	IPv6HopLimitOffset    = 7
	IPv6SrcAddrOffset     = 8
	IPv6DstAddrOffset     = 24
	IPv6FlowLabelMask     = 0x000fffff
	IPv6ExtHdrMinimumSize = 8 // every extension header is at least 8 bytes
	IPv6FragmentHdrSize   = 8
)

// IPv6 is an IPv6 fixed header: at least IPv6MinimumSize bytes.
type IPv6 []byte

// Version returns the version nibble (6 for a well-formed header).
func (b IPv6) Version() uint8 { return b[0] >> 4 }

// TrafficClass returns the traffic class.
func (b IPv6) TrafficClass() uint8 { return uint8(binary.BigEndian.Uint16(b[0:]) >> 4) }

// FlowLabel returns the 20-bit flow label.
func (b IPv6) FlowLabel() uint32 { return binary.BigEndian.Uint32(b[0:]) & IPv6FlowLabelMask }

// VersionClassLabel returns the first 32-bit word: version, traffic
// class and flow label.
func (b IPv6) VersionClassLabel() uint32 { return binary.BigEndian.Uint32(b[0:]) }

// PayloadLength returns the payload length field.
func (b IPv6) PayloadLength() uint16 { return binary.BigEndian.Uint16(b[IPv6PayloadLenOffset:]) }

// NextHeader returns the next header field.
func (b IPv6) NextHeader() uint8 { return b[IPv6NextHeaderOffset] }

// HopLimit returns the hop limit.
func (b IPv6) HopLimit() uint8 { return b[IPv6HopLimitOffset] }

// SourceAddress returns the source address.
func (b IPv6) SourceAddress() [16]byte { return [16]byte(b[IPv6SrcAddrOffset:IPv6DstAddrOffset]) }

// DestinationAddress returns the destination address.
func (b IPv6) DestinationAddress() [16]byte {
	return [16]byte(b[IPv6DstAddrOffset:IPv6MinimumSize])
}

// SourceAddressPtr returns the source address in place, for an update
// that must not copy it.
func (b IPv6) SourceAddressPtr() *[16]byte {
	return (*[16]byte)(b[IPv6SrcAddrOffset:IPv6DstAddrOffset])
}

// DestinationAddressPtr returns the destination address in place.
func (b IPv6) DestinationAddressPtr() *[16]byte {
	return (*[16]byte)(b[IPv6DstAddrOffset:IPv6MinimumSize])
}

// SetVersionClassLabel sets the first 32-bit word: version, traffic
// class and flow label.
func (b IPv6) SetVersionClassLabel(v uint32) { binary.BigEndian.PutUint32(b[0:], v) }

// SetPayloadLength sets the payload length field.
func (b IPv6) SetPayloadLength(v uint16) { binary.BigEndian.PutUint16(b[IPv6PayloadLenOffset:], v) }

// SetNextHeader sets the next header field.
func (b IPv6) SetNextHeader(v uint8) { b[IPv6NextHeaderOffset] = v }

// SetHopLimit sets the hop limit.
func (b IPv6) SetHopLimit(v uint8) { b[IPv6HopLimitOffset] = v }

// SetSourceAddress sets the source address (no checksum is updated).
func (b IPv6) SetSourceAddress(a [16]byte) { copy(b[IPv6SrcAddrOffset:IPv6DstAddrOffset], a[:]) }

// SetDestinationAddress sets the destination address (no checksum is
// updated).
func (b IPv6) SetDestinationAddress(a [16]byte) {
	copy(b[IPv6DstAddrOffset:IPv6MinimumSize], a[:])
}

// PseudoHeaderSum returns the unfolded one's complement sum of the IPv6
// pseudo-header of an upper-layer packet of length bytes with next
// header proto carried in b: the addresses, the length and the protocol.
func (b IPv6) PseudoHeaderSum(proto uint8, length int) uint64 {
	return Sum(b[IPv6SrcAddrOffset:IPv6MinimumSize], uint64(proto)+uint64(length))
}

// IsIPv6ExtHdr reports whether next is a next-header value that the
// kernel's ipv6_ext_hdr recognises as an extension header: hop-by-hop,
// routing, fragment, authentication, destination options and "no next
// header" (not ESP, whose payload cannot be walked).
func IsIPv6ExtHdr(next uint8) bool {
	switch next {
	case IPProtoHopByHop, IPProtoRouting, IPProtoFragment, IPProtoAuth, IPProtoNoNext, IPProtoDestOpts:
		return true
	}
	return false
}

// IPv6Walk is what IPv6ExtWalk found in an IPv6 extension header chain.
type IPv6Walk struct {
	// OK is false where the kernel's ipv6_find_hdr fails: a header whose
	// first bytes are missing (2, or 4 for a routing or fragment
	// header), a header whose length runs past the end of the packet
	// (-EBADMSG), or a later fragment followed by another extension
	// header (-ENOENT). Next and Offset are then not valid.
	OK bool
	// Next is the upper-layer protocol: the first next-header value
	// that is not an extension header, or IPProtoNoNext. For a later
	// fragment it is the value in its fragment header.
	Next uint8
	// Offset is where the upper-layer header starts, counted from the
	// start of the slice the walk was given; 0 for a later fragment,
	// whose payload is not one.
	Offset int
	// Fragment reports that a fragment header was reached.
	Fragment bool
	// FragmentOffset is the fragment offset field of the last fragment
	// header read (in bytes, its low three bits cleared): not zero for a
	// later fragment, also when OK is false.
	FragmentOffset uint16
	// RoutingActive reports a routing header with segments left (the
	// transport checksum's pseudo-header then uses the final
	// destination, not the one in the header).
	RoutingActive bool
}

// IPv6ExtWalk follows the extension headers after the IPv6 header at
// p[nh:] (which must hold at least IPv6MinimumSize bytes) as the
// kernel's ipv6_find_hdr(skb, &offset, -1, &frag_off, &flags) does: hop
// by hop, routing and destination options are (len+1)*8 bytes long,
// authentication (len+2)*4, a fragment header 8; the walk stops at the
// first value that is not an extension header, at "no next header", or
// at a later fragment. It reads nothing beyond p and allocates nothing.
func IPv6ExtWalk(p []byte, nh int) IPv6Walk {
	var w IPv6Walk
	start := nh + IPv6MinimumSize
	next := p[nh+IPv6NextHeaderOffset]
	for {
		if !IsIPv6ExtHdr(next) || next == IPProtoNoNext {
			w.OK, w.Next, w.Offset = true, next, start
			return w
		}
		if len(p)-start < 2 {
			return w
		}
		var hdrlen int
		switch next {
		case IPProtoRouting:
			if len(p)-start < 4 {
				return w
			}
			if p[start+3] != 0 {
				w.RoutingActive = true
			}
			hdrlen = (int(p[start+1]) + 1) << 3
		case IPProtoFragment:
			w.Fragment = true
			if len(p)-start < 4 {
				return w
			}
			w.FragmentOffset = binary.BigEndian.Uint16(p[start+2:]) &^ 7
			if w.FragmentOffset != 0 {
				if n := p[start]; !IsIPv6ExtHdr(n) || n == IPProtoNoNext {
					w.OK, w.Next = true, n
				}
				return w
			}
			hdrlen = IPv6FragmentHdrSize
		case IPProtoAuth:
			hdrlen = (int(p[start+1]) + 2) << 2
		default:
			hdrlen = (int(p[start+1]) + 1) << 3
		}
		if len(p)-start < hdrlen {
			return w
		}
		next = p[start]
		start += hdrlen
	}
}
