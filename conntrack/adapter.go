package conntrack

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// The adapter from what the datapath already has (the flow key and the
// packet's L4 bytes) to the tracker's Packet. It reads only what the
// kernel's trackers read beyond the key: the TCP header's sequence
// numbers, window and options, the ICMP echo identifier and the header
// embedded in an ICMP error.

// ErrNotIP: the key is neither IPv4 nor IPv6 (the kernel's ct needs one).
var ErrNotIP = errors.New("conntrack: packet is neither IPv4 nor IPv6")

// ErrFragment: the packet is an IP fragment. The kernel's ct action
// reassembles fragments before tracking: the caller gives fragments to
// Tracker.Defrag first and tracks the datagram it completes (or, for a
// fragment Defrag passes on, clears the key's fragment type as the
// kernel does); a fragment is never tracked as a whole packet.
var ErrFragment = errors.New("conntrack: an IP fragment must be reassembled (Defrag) before it is tracked")

// ICMP types that carry an embedded packet (errors), IPv4.
func icmpIsError(t uint8) bool { return t == 3 || t == 4 || t == 5 || t == 11 || t == 12 }

// nrICMPTypes is NR_ICMP_TYPES: a type above it is invalid.
const nrICMPTypes = 18

// FromKey fills p from the flow key k and l4, the packet's bytes from its
// L4 header to the end of the IP payload (no link-layer padding), and
// l3Len, the packet's length from the IP header on. A header cut short
// makes p Malformed (the tracker marks it invalid), never an error; the
// errors are ErrNotIP and ErrFragment.
func FromKey(k *flowkeys.Key, l4 []byte, l3Len uint32, p *Packet) error {
	*p = Packet{Len: l3Len}
	t := &p.Tuple
	switch k.EthType {
	case 0x0800:
		copy(t.Src[:4], k.IPv4Src[:])
		copy(t.Dst[:4], k.IPv4Dst[:])
	case 0x86dd:
		t.V6 = true
		t.Src, t.Dst = k.IPv6Src, k.IPv6Dst
	default:
		return fmt.Errorf("%w (EtherType %#04x)", ErrNotIP, k.EthType)
	}
	if k.IPFrag != flowkeys.FragNone {
		return ErrFragment
	}
	t.Proto = k.IPProto
	switch t.Proto {
	case ProtoTCP:
		p.Malformed = !parseTCP(l4, p)
	case ProtoUDP, ProtoUDPLite:
		if len(l4) < 8 {
			p.Malformed = true
			return nil
		}
		t.SrcPort, t.DstPort = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	case ProtoICMP, ProtoICMPv6:
		p.Malformed = !parseICMP(l4, p)
	}
	return nil
}

// parseTCP reads the header that tcp_error and tcp_in_window read; false
// when it is cut short or its data offset is impossible.
func parseTCP(l4 []byte, p *Packet) bool {
	if len(l4) < 20 {
		return false
	}
	doff := int(l4[12]>>4) * 4
	if doff < 20 || doff > len(l4) {
		return false
	}
	p.Tuple.SrcPort, p.Tuple.DstPort = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	tp := &p.TCP
	tp.Seq, tp.Ack = binary.BigEndian.Uint32(l4[4:]), binary.BigEndian.Uint32(l4[8:])
	tp.Flags = l4[13]
	tp.Window = binary.BigEndian.Uint16(l4[14:])
	tp.DataLen = uint32(len(l4) - doff)
	opts := l4[20:doff]
	tp.HasOptions = len(opts) > 0
	tcpOptions(opts, tp)
	return true
}

// tcpOptions reads window scale, SACK-permitted and the SACK blocks'
// highest right edge, stopping where the kernel's parser stops.
func tcpOptions(o []byte, tp *TCPInfo) {
	// The timestamp-only layout carries no SACK (the kernel's fast path).
	sackDone := len(o) == 12 && o[0] == 1 && o[1] == 1 && o[2] == 8 && o[3] == 10
	for len(o) > 0 {
		switch kind := o[0]; kind {
		case 0:
			return
		case 1:
			o = o[1:]
			continue
		default:
			if len(o) < 2 {
				return
			}
			size := int(o[1])
			if size < 2 || size > len(o) {
				return
			}
			switch {
			case kind == 3 && size == 3:
				tp.WScale, tp.HasWScale = o[2], true
			case kind == 4 && size == 2:
				tp.SACKPerm = true
			case kind == 5 && !sackDone && size >= 10 && (size-2)%8 == 0:
				for i := 2; i+8 <= size; i += 8 {
					edge := binary.BigEndian.Uint32(o[i+4:])
					if !tp.HasSACK || after(edge, tp.SACK) {
						tp.SACK, tp.HasSACK = edge, true
					}
				}
				sackDone = true
			}
			o = o[size:]
		}
	}
}

// parseICMP reads an ICMP or ICMPv6 header: a query's identifier, or an
// error's embedded tuple.
func parseICMP(l4 []byte, p *Packet) bool {
	if len(l4) < 8 {
		return false
	}
	t := &p.Tuple
	typ, code := l4[0], l4[1]
	t.SrcPort = binary.BigEndian.Uint16(l4[4:])
	t.DstPort = uint16(typ)<<8 | uint16(code)
	var isErr bool
	if t.Proto == ProtoICMP {
		if typ > nrICMPTypes {
			return false
		}
		isErr = icmpIsError(typ)
	} else {
		isErr = typ < 128
	}
	if !isErr {
		return true
	}
	t.SrcPort = 0
	p.HasInner = true
	if t.V6 {
		return parseInner6(l4[8:], &p.Inner)
	}
	return parseInner4(l4[8:], &p.Inner)
}

func parseInner4(b []byte, in *Tuple) bool {
	if len(b) < 20 || b[0]>>4 != 4 {
		return false
	}
	ihl := int(b[0]&0x0f) * 4
	if ihl < 20 || ihl > len(b) {
		return false
	}
	in.Proto = b[9]
	copy(in.Src[:4], b[12:16])
	copy(in.Dst[:4], b[16:20])
	return innerL4(b[ihl:], in)
}

func parseInner6(b []byte, in *Tuple) bool {
	if len(b) < 40 || b[0]>>4 != 6 {
		return false
	}
	in.V6 = true
	copy(in.Src[:], b[8:24])
	copy(in.Dst[:], b[24:40])
	nh, rest := b[6], b[40:]
	for {
		switch nh {
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if len(rest) < 8 {
				return false
			}
			n := (int(rest[1]) + 1) * 8
			if n > len(rest) {
				return false
			}
			nh, rest = rest[0], rest[n:]
			continue
		case 44: // a fragment: only the first carries the L4 header
			if len(rest) < 8 || binary.BigEndian.Uint16(rest[2:])&^7 != 0 {
				return false
			}
			nh, rest = rest[0], rest[8:]
			continue
		}
		break
	}
	in.Proto = nh
	return innerL4(rest, in)
}

// innerL4 reads the embedded packet's ports (its first 4 bytes) or ICMP
// query header (8 bytes).
func innerL4(b []byte, in *Tuple) bool {
	switch in.Proto {
	case ProtoTCP, ProtoUDP, ProtoUDPLite:
		if len(b) < 4 {
			return false
		}
		in.SrcPort, in.DstPort = binary.BigEndian.Uint16(b), binary.BigEndian.Uint16(b[2:])
	case ProtoICMP, ProtoICMPv6:
		if len(b) < 8 {
			return false
		}
		in.SrcPort = binary.BigEndian.Uint16(b[4:])
		in.DstPort = uint16(b[0])<<8 | uint16(b[1])
	}
	return true
}

// ToKey writes s into the flow key's conntrack fields as the kernel's
// ovs_ct_update_key (the original tuple only for a connection of the
// key's address family).
func (s *State) ToKey(k *flowkeys.Key) {
	k.CTState, k.CTZone, k.CTMark, k.CTLabels = s.Flags, s.Zone, s.Mark, s.Labels
	o := &s.Orig
	if s.HasOrig && (!o.V6 && k.EthType == 0x0800 || o.V6 && k.EthType == 0x86dd && !isND(k)) {
		o.toKey(k)
		return
	}
	k.CTOrigProto = 0
	k.CTOrigIPv4Src, k.CTOrigIPv4Dst = [4]byte{}, [4]byte{}
	k.CTOrigIPv6Src, k.CTOrigIPv6Dst = [16]byte{}, [16]byte{}
	k.CTOrigTpSrc, k.CTOrigTpDst = 0, 0
}

// toKey writes the original tuple o into the key's ct_tuple fields (the
// caller checked that the key may have them).
func (o *Tuple) toKey(k *flowkeys.Key) {
	if !o.V6 {
		k.CTOrigIPv4Src, k.CTOrigIPv4Dst = [4]byte(o.Src[:4]), [4]byte(o.Dst[:4])
		k.CTOrigIPv6Src, k.CTOrigIPv6Dst = [16]byte{}, [16]byte{}
	} else {
		k.CTOrigIPv4Src, k.CTOrigIPv4Dst = [4]byte{}, [4]byte{}
		k.CTOrigIPv6Src, k.CTOrigIPv6Dst = o.Src, o.Dst
	}
	k.CTOrigProto = o.Proto
	if o.isICMP() {
		// __ovs_ct_update_key_orig_tp: ICMP's type and code, not its
		// identifier.
		k.CTOrigTpSrc, k.CTOrigTpDst = uint16(o.ICMPType()), uint16(o.ICMPCode())
		return
	}
	k.CTOrigTpSrc, k.CTOrigTpDst = o.SrcPort, o.DstPort
}

// isND reports an ICMPv6 neighbour solicitation or advertisement key
// (sw_flow_key_is_nd), which gets no original tuple.
func isND(k *flowkeys.Key) bool {
	return k.IPProto == ProtoICMPv6 && k.TpDst == 0 && (k.TpSrc == 135 || k.TpSrc == 136)
}

// StateFromKey returns the state of a packet whose key already has
// conntrack fields (one that comes back through an upcall): a later ct
// action in the same zone finds its connection by tuple, as the kernel's
// ovs_ct_executed, instead of tracking it twice.
func StateFromKey(k *flowkeys.Key) State {
	return State{Flags: k.CTState, Zone: k.CTZone, Mark: k.CTMark, Labels: k.CTLabels}
}
