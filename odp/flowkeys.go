package odp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// Conversions from flowkeys.Key to key attributes, as the Linux kernel's
// openvswitch module (6.1) writes them: __ovs_nla_put_key in
// net/openvswitch/flow_netlink.c and ovs_ct_put_key in conntrack.c. The
// attribute set, order and values follow those functions; the comments
// name the kernel's rule where it is not obvious.

// DPMaxPorts is the kernel's DP_MAX_PORTS: the in_port value of a flow
// key that does not match on the input port (its OVS_KEY_ATTR_IN_PORT
// attribute was absent). The kernel never puts an in_port attribute for
// such a key.
const DPMaxPorts = 0xffff

// Tunnel flag bits of flowkeys.Key.TunFlags: the kernel's TUNNEL_* flags
// of struct ip_tunnel_key (Linux 6.1), as host-order values.
const (
	KernelTunnelCSUM      = 0x0001 // TUNNEL_CSUM
	KernelTunnelKey       = 0x0004 // TUNNEL_KEY: the tunnel id is valid
	KernelTunnelDF        = 0x0100 // TUNNEL_DONT_FRAGMENT
	KernelTunnelOAM       = 0x0200 // TUNNEL_OAM
	KernelTunnelGeneveOpt = 0x0800 // TUNNEL_GENEVE_OPT
	KernelTunnelVXLANOpt  = 0x1000 // TUNNEL_VXLAN_OPT: TunGBP is valid
	KernelTunnelERSPANOpt = 0x4000 // TUNNEL_ERSPAN_OPT
)

// Values that key conversion uses often, boxed once so that putting them
// in a FlowKey does not allocate.
var (
	zeroCTLabels  KeyAttr = CTLabels{}
	ethTypeIPv4   KeyAttr = Ethertype(flowkeys.EthTypeIPv4)
	ethTypeIPv6   KeyAttr = Ethertype(flowkeys.EthTypeIPv6)
	ethTypeARP    KeyAttr = Ethertype(flowkeys.EthTypeARP)
	ethTypeVLAN   KeyAttr = Ethertype(flowkeys.EthTypeVLAN)
	ethTypeQinQ   KeyAttr = Ethertype(flowkeys.EthTypeQinQ)
	ethTypeAllOne KeyAttr = Ethertype(0xffff)
	zeroIPv6Ext   KeyAttr = IPv6ExtHdrs(0)
)

// boxEthertype returns t as a KeyAttr, without allocating for the common
// types.
func boxEthertype(t uint16) KeyAttr {
	switch t {
	case flowkeys.EthTypeIPv4:
		return ethTypeIPv4
	case flowkeys.EthTypeIPv6:
		return ethTypeIPv6
	case flowkeys.EthTypeARP:
		return ethTypeARP
	case flowkeys.EthTypeVLAN:
		return ethTypeVLAN
	case flowkeys.EthTypeQinQ:
		return ethTypeQinQ
	case 0xffff:
		return ethTypeAllOne
	}
	return Ethertype(t)
}

func isVLANEthType(t uint16) bool {
	return t == flowkeys.EthTypeVLAN || t == flowkeys.EthTypeQinQ
}

// KeyFromFlowKeys returns the key attributes that the kernel puts in an
// upcall (OVS_PACKET_ATTR_KEY) or in a flow dump (OVS_FLOW_ATTR_KEY) for
// the key k: the same attributes, in the same order, with the same
// values. See AppendKeyFromFlowKeys.
func KeyFromFlowKeys(k *flowkeys.Key) FlowKey {
	return AppendKeyFromFlowKeys(make(FlowKey, 0, 16), k)
}

// AppendKeyFromFlowKeys appends the attributes of KeyFromFlowKeys(k) to
// dst and returns the extended slice, reusing dst's capacity. It
// allocates only to box attribute values into the KeyAttr interface
// (common values are pre-boxed) and for the nested attributes of a VLAN
// tag.
//
// Like the kernel, it always puts recirc_id, dp_hash, skb_priority,
// skb_mark, ct_state, ct_zone, ct_mark and ct_label; the tunnel only when
// k.TunProto is set; in_port unless k.InPort is DPMaxPorts; the
// conntrack original tuple only when k.CTOrigProto is set; eth and the
// VLAN tags only for Ethernet frames (k.MacProto); no eth_type for an
// 802.3 frame without SNAP (EthType 0x0004); the L4 attribute only for a
// non-later fragment; nd only for ICMPv6 neighbour solicitations and
// advertisements; ipv6_exthdrs (type 32, added in Linux 5.19) after
// every ipv6 attribute; and the MPLS label stack entries that
// k.MPLSLabelsMask says are present.
func AppendKeyFromFlowKeys(dst FlowKey, k *flowkeys.Key) FlowKey {
	return appendPutKey(dst, k, k, false, false)
}

// MaskFromFlowKeys returns the mask attributes that the kernel dumps for
// a flow (OVS_FLOW_ATTR_MASK, __ovs_nla_put_key with is_mask set): key
// decides which attributes appear (it is the flow's key), mask gives
// their values. As in the kernel, the tunnel attribute is always
// present, in_port is 0xffff0000|mask (or 0xffffffff for a key without
// in_port whose mask is 0xffff), the VLAN attributes carry an eth_type
// of 0xffff, and ARP and MPLS values come from the mask.
func MaskFromFlowKeys(mask, key *flowkeys.Key) FlowKey {
	return appendPutKey(make(FlowKey, 0, 16), key, mask, true, false)
}

// ErrInexpressible is wrapped by the error of MegaflowFromFlowKeys when
// no flow that the kernel accepts can match a packet's key on the bits
// of the mask.
var ErrInexpressible = errors.New("no flow the kernel accepts can match this")

// MegaflowFromFlowKeys returns the key and mask attributes of a megaflow
// that matches the packet whose key is k on the bits of mask: the key
// and mask to put (OVS_FLOW_ATTR_KEY and OVS_FLOW_ATTR_MASK), in a form
// that the kernel's flow rules (ToFlowKeys) accept.
//
// The key is KeyFromFlowKeys(k), the packet's whole key as an upcall
// gives it, and the mask is MaskFromFlowKeys(mask, k), the mask as the
// kernel dumps it, except where the kernel would refuse those or the
// flow would not match the packet:
//
//   - An MPLS packet whose label stack ends before a bottom-of-stack
//     entry: key_extract leaves its key without labels (num_labels_mask
//     0), its upcall key has a 0-byte mpls attribute, and a flow's mpls
//     attribute needs 1 to 3 labels (ovs_key_from_nlattrs): the put of
//     the upcall's key is EINVAL. The megaflow's key carries one label
//     (the stack's first entry as far as the packet has it, zero if
//     none), which the mask leaves out: a mask without mpls matches no
//     label count and no entry, so the flow matches this packet and any
//     MPLS packet that agrees on the other bits of mask.
//   - A frame whose VLAN tag (outer or inner) is cut short before its
//     TCI and type: the kernel takes the TPID for the Ethernet type, and
//     its upcall key (eth_type(0) with a vlan attribute and an empty
//     encap at that level) is EINVAL in a flow. Where the mask does not
//     read the Ethernet type, the megaflow is that of a frame with no
//     type after its whole tags (no eth_type attribute at that level,
//     the kernel's 802.2), which matches it: the type is wildcarded and
//     the TCI of the absent tag is zero in both. Its mask keeps a zero
//     eth_type inside the tag's encap: an empty mask encap is all zero,
//     taken for an absent one, and the tag's TPID mask would then be
//     taken for an exact Ethernet type mask (a flow that never matches).
//     Where the mask reads the Ethernet type, no flow matches the frame.
//   - An NSH mask without any bit set is left out: the kernel takes an
//     all-zero mask attribute for an absent one, but a nest is never all
//     zero, and an nsh mask without an exact Ethernet type mask is
//     EINVAL (match_validate), so that the flow of an NSH packet whose
//     decision did not read the Ethernet type (the learning switch's)
//     could not be put.
//
// When no flow can match the packet on the bits of mask, the error wraps
// ErrInexpressible, rather than giving a flow that matches more than the
// mask says or that never matches: the Ethernet type of a frame whose
// tag is cut short; any MPLS bit for a packet without labels (no flow
// with a label count matches it), entries past the mask's label count, a
// label count that is not 1, 2 or 3 labels from the top, or a label
// count without any entry bit (the kernel takes an all-zero mask
// attribute for an absent one).
func MegaflowFromFlowKeys(k, mask *flowkeys.Key) (key, maskAttrs FlowKey, err error) {
	if (k.EthType == flowkeys.EthTypeMPLS || k.EthType == flowkeys.EthTypeMPLSMC) && !mplsMaskExpressible(k, mask) {
		return nil, nil, fmt.Errorf("odp: megaflow for an MPLS packet with label stack mask %#x (entries %#x) and %d labels: %w",
			mask.MPLSLabelsMask, mask.MPLSLSE, bits.OnesCount32(k.MPLSLabelsMask), ErrInexpressible)
	}
	if missingTag(k) {
		if mask.EthType != 0 {
			return nil, nil, fmt.Errorf("odp: megaflow matching the Ethernet type %#04x of a frame whose VLAN tag is cut short: %w",
				k.EthType, ErrInexpressible)
		}
		// Put it as a frame without a type after its whole tags (802.2).
		k2 := *k
		k2.EthType = flowkeys.EthType8022
		k = &k2
	}
	return appendPutKey(make(FlowKey, 0, 16), k, k, false, true), appendPutKey(make(FlowKey, 0, 16), k, mask, true, true), nil
}

// missingTag reports whether k is an Ethernet frame whose Ethernet type
// is the TPID of a tag cut short (the kernel's parse_vlan_tag leaves its
// TCI and TPID zero and takes the TPID as the Ethernet type). A third
// tag's TPID as the type after two whole tags is a key that flows can
// have.
func missingTag(k *flowkeys.Key) bool {
	return k.MacProto == flowkeys.MacProtoEthernet && isVLANEthType(k.EthType) && (k.VLANTCI == 0 || k.CVLANTCI == 0)
}

// mplsMaskExpressible reports whether the MPLS bits of mask can be put
// for a flow with key k (see MegaflowFromFlowKeys).
func mplsMaskExpressible(k, mask *flowkeys.Key) bool {
	lm := mask.MPLSLabelsMask
	if lm == 0 {
		return mask.MPLSLSE == [3]uint32{}
	}
	if k.MPLSLabelsMask == 0 || lm&(lm+1) != 0 || lm > 7 {
		return false // no labels in the key; not 1, 2 or 3 from the top
	}
	n := bits.OnesCount32(lm)
	var any uint32
	for i, e := range mask.MPLSLSE {
		if i >= n && e != 0 {
			return false
		}
		any |= e
	}
	return any != 0
}

// appendPutKey is __ovs_nla_put_key: sw decides, out gives the values.
// With flow set (a megaflow to put) an MPLS key without labels gets one,
// an all-zero NSH mask is left out, and the mask of a tagged frame
// without a type keeps a zero eth_type in its encap (see
// MegaflowFromFlowKeys).
func appendPutKey(dst FlowKey, sw, out *flowkeys.Key, isMask, flow bool) FlowKey {
	dst = append(dst, RecircID(out.RecircID), DPHash(out.DPHash), Priority(out.Priority))
	if sw.TunProto != 0 || isMask {
		dst = append(dst, tunnelAttr(sw, out))
	}
	if uint16(sw.InPort) == DPMaxPorts {
		if isMask && uint16(out.InPort) == 0xffff {
			dst = append(dst, InPort(0xffffffff))
		}
	} else {
		var upper uint32
		if isMask {
			upper = 0xffff0000
		}
		dst = append(dst, InPort(upper|uint32(uint16(out.InPort))))
	}
	dst = append(dst, SkbMark(out.SkbMark))
	dst = appendCTKey(dst, sw, out)

	// Where the attributes go: top level, or inside one or two encaps.
	// The kernel opens the nests and closes them at the end; here the
	// inner attributes are collected in their own slices.
	var outer, inner *FlowKey
	cur := &dst
	if sw.MacProto == flowkeys.MacProtoEthernet {
		*cur = append(*cur, Ethernet{Src: out.EthSrc, Dst: out.EthDst})
		if sw.VLANTCI != 0 || isVLANEthType(sw.EthType) {
			*cur = appendVLAN(*cur, out.VLANTPID, out.VLANTCI, isMask)
			outer = new(FlowKey)
			cur = outer
			if sw.VLANTCI == 0 {
				return closeEncap(dst, outer, inner)
			}
			if sw.CVLANTCI != 0 || isVLANEthType(sw.EthType) {
				*cur = appendVLAN(*cur, out.CVLANTPID, out.CVLANTCI, isMask)
				inner = new(FlowKey)
				cur = inner
				if sw.CVLANTCI == 0 {
					return closeEncap(dst, outer, inner)
				}
			}
		}
		if sw.EthType == flowkeys.EthType8022 {
			// 802.2 is an absent eth_type in a key; in a mask the
			// eth_type's mask is there unless it is zero.
			if isMask && (out.EthType != 0 || flow && outer != nil) {
				// A flow's mask inside a tag keeps the (zero)
				// eth_type: an empty encap nest would be all zero,
				// taken for an absent one, and the tag's mask
				// would go unparsed, its TPID mask taken for an
				// exact Ethernet type mask.
				*cur = append(*cur, boxEthertype(out.EthType))
			}
			return closeEncap(dst, outer, inner)
		}
	}
	*cur = append(*cur, boxEthertype(out.EthType))
	if isVLANEthType(sw.EthType) {
		// A third tag: the kernel knows nothing about the rest.
		return closeEncap(dst, outer, inner)
	}
	switch {
	case sw.EthType == flowkeys.EthTypeIPv4:
		*cur = append(*cur, IPv4{Src: out.IPv4Src, Dst: out.IPv4Dst, Proto: out.IPProto,
			TOS: out.IPTOS, TTL: out.IPTTL, Frag: out.IPFrag})
	case sw.EthType == flowkeys.EthTypeIPv6:
		*cur = append(*cur, IPv6{Src: out.IPv6Src, Dst: out.IPv6Dst, Label: out.IPv6Label,
			Proto: out.IPProto, TClass: out.IPTOS, HLimit: out.IPTTL, Frag: out.IPFrag})
		if out.IPv6ExtHdrs == 0 {
			*cur = append(*cur, zeroIPv6Ext)
		} else {
			*cur = append(*cur, IPv6ExtHdrs(out.IPv6ExtHdrs))
		}
	case sw.EthType == flowkeys.EthTypeNSH:
		if isMask && flow && out.NSHFlags|out.NSHTTL|out.NSHMDType|out.NSHNP == 0 && out.NSHPathHdr == 0 &&
			out.NSHContext == ([4]uint32{}) {
			// A nest is never all zero: a flow's mask leaves it out.
			break
		}
		n := NSH{HasBase: true, Flags: out.NSHFlags, TTL: out.NSHTTL, MDType: out.NSHMDType,
			NP: out.NSHNP, PathHdr: out.NSHPathHdr}
		if isMask || out.NSHMDType == 1 {
			n.HasMD1 = true
			n.Context = out.NSHContext
		}
		*cur = append(*cur, n)
	case sw.EthType == flowkeys.EthTypeARP || sw.EthType == flowkeys.EthTypeRARP:
		*cur = append(*cur, ARP{SIP: out.IPv4Src, TIP: out.IPv4Dst, Op: uint16(out.IPProto),
			SHA: out.ARPSHA, THA: out.ARPTHA})
	case sw.EthType == flowkeys.EthTypeMPLS || sw.EthType == flowkeys.EthTypeMPLSMC:
		n := 0
		for m := out.MPLSLabelsMask; m != 0; m &= m - 1 {
			n++
		}
		if n > len(out.MPLSLSE) {
			// The kernel's mask never has more bits than labels;
			// a Key could.
			n = len(out.MPLSLSE)
		}
		if n == 0 && flow {
			n = 1
		}
		*cur = append(*cur, MPLS(append([]uint32(nil), out.MPLSLSE[:n]...)))
	}
	if (sw.EthType == flowkeys.EthTypeIPv4 || sw.EthType == flowkeys.EthTypeIPv6) &&
		sw.IPFrag != flowkeys.FragLater {
		switch {
		case sw.IPProto == 6:
			*cur = append(*cur, TCP{Src: out.TpSrc, Dst: out.TpDst}, TCPFlags(out.TCPFlags))
		case sw.IPProto == 17:
			*cur = append(*cur, UDP{Src: out.TpSrc, Dst: out.TpDst})
		case sw.IPProto == 132:
			*cur = append(*cur, SCTP{Src: out.TpSrc, Dst: out.TpDst})
		case sw.EthType == flowkeys.EthTypeIPv4 && sw.IPProto == 1:
			// The kernel keeps ICMP type and code in the 16-bit
			// port fields and puts their low bytes.
			*cur = append(*cur, ICMP{Type: uint8(out.TpSrc), Code: uint8(out.TpDst)})
		case sw.EthType == flowkeys.EthTypeIPv6 && sw.IPProto == 58:
			*cur = append(*cur, ICMPv6{Type: uint8(out.TpSrc), Code: uint8(out.TpDst)})
			if sw.TpSrc == 135 || sw.TpSrc == 136 {
				*cur = append(*cur, ND{Target: out.NDTarget, SLL: out.NDSLL, TLL: out.NDTLL})
			}
		}
	}
	return closeEncap(dst, outer, inner)
}

// closeEncap nests the inner attributes into the outer ones and those
// into dst, as the kernel's nla_nest_end calls do at "unencap".
func closeEncap(dst FlowKey, outer, inner *FlowKey) FlowKey {
	if inner != nil {
		*outer = append(*outer, Encap{Key: *inner})
	}
	if outer != nil {
		dst = append(dst, Encap{Key: *outer})
	}
	return dst
}

// appendVLAN is ovs_nla_put_vlan: the TPID as eth_type (0xffff in a
// mask) and the TCI.
func appendVLAN(dst FlowKey, tpid, tci uint16, isMask bool) FlowKey {
	if isMask {
		tpid = 0xffff
	}
	return append(dst, boxEthertype(tpid), VLAN(tci))
}

// appendCTKey is ovs_ct_put_key (Debian's kernel has conntrack zones,
// marks and labels configured, so all four scalar attributes are put).
func appendCTKey(dst FlowKey, sw, out *flowkeys.Key) FlowKey {
	dst = append(dst, CTState(out.CTState), CTZone(out.CTZone), CTMark(out.CTMark))
	if out.CTLabels == ([16]byte{}) {
		dst = append(dst, zeroCTLabels)
	} else {
		dst = append(dst, CTLabels(out.CTLabels))
	}
	if sw.CTOrigProto != 0 {
		switch sw.EthType {
		case flowkeys.EthTypeIPv4:
			dst = append(dst, CTTupleIPv4{Src: out.CTOrigIPv4Src, Dst: out.CTOrigIPv4Dst,
				SrcPort: out.CTOrigTpSrc, DstPort: out.CTOrigTpDst, Proto: out.CTOrigProto})
		case flowkeys.EthTypeIPv6:
			dst = append(dst, CTTupleIPv6{Src: out.CTOrigIPv6Src, Dst: out.CTOrigIPv6Dst,
				SrcPort: out.CTOrigTpSrc, DstPort: out.CTOrigTpDst, Proto: out.CTOrigProto})
		}
	}
	return dst
}

// tunnelAttr is ip_tun_to_nlattr: the tunnel id when the key flag is
// set; the addresses of the key's family when non-zero; tos when
// non-zero; ttl always; the flag attributes; the ports when non-zero;
// the Geneve options (sw's TunOptsLen bytes of out's, copied) when
// out's Geneve option flag is set and sw has options; else the ERSPAN
// metadata (out's first 12 option bytes) when out's ERSPAN option flag is
// set and sw has options; and the VXLAN options when the VXLAN option
// flag is set.
func tunnelAttr(sw, out *flowkeys.Key) Tunnel {
	var t Tunnel
	if out.TunFlags&KernelTunnelKey != 0 {
		t.Present |= TunnelHasID
		t.ID = out.TunID
	}
	switch sw.TunProto {
	case flowkeys.TunProtoIPv4:
		if out.TunIPv4Src != ([4]byte{}) {
			t.Present |= TunnelHasIPv4Src
			t.IPv4Src = out.TunIPv4Src
		}
		if out.TunIPv4Dst != ([4]byte{}) {
			t.Present |= TunnelHasIPv4Dst
			t.IPv4Dst = out.TunIPv4Dst
		}
	case flowkeys.TunProtoIPv6:
		if out.TunIPv6Src != ([16]byte{}) {
			t.Present |= TunnelHasIPv6Src
			t.IPv6Src = out.TunIPv6Src
		}
		if out.TunIPv6Dst != ([16]byte{}) {
			t.Present |= TunnelHasIPv6Dst
			t.IPv6Dst = out.TunIPv6Dst
		}
	}
	if out.TunTOS != 0 {
		t.Present |= TunnelHasTOS
		t.TOS = out.TunTOS
	}
	t.Present |= TunnelHasTTL
	t.TTL = out.TunTTL
	if out.TunFlags&KernelTunnelDF != 0 {
		t.Flags |= TunnelDF
	}
	if out.TunFlags&KernelTunnelCSUM != 0 {
		t.Flags |= TunnelCSUM
	}
	if out.TunTpSrc != 0 {
		t.Present |= TunnelHasTPSrc
		t.TPSrc = out.TunTpSrc
	}
	if out.TunTpDst != 0 {
		t.Present |= TunnelHasTPDst
		t.TPDst = out.TunTpDst
	}
	if out.TunFlags&KernelTunnelOAM != 0 {
		t.Flags |= TunnelOAM
	}
	if out.TunFlags&KernelTunnelGeneveOpt != 0 && sw.TunOptsLen != 0 {
		// The kernel puts the key's tun_opts_len bytes of out's
		// options (of the key's, or of the mask's), and nothing for
		// a key without options: a flow put with an empty geneve()
		// dumps without it (Linux 6.1, checked in the VM).
		t.Present |= TunnelHasGeneve
		t.Geneve = append([]byte{}, out.TunOpts[:min(int(sw.TunOptsLen), flowkeys.TunOptsMax)]...)
	} else if out.TunFlags&KernelTunnelERSPANOpt != 0 && sw.TunOptsLen != 0 {
		// The kernel puts sw's tun_opts_len bytes, which is 12 for
		// every key with ERSPAN options (erspanOpts).
		t.Present |= TunnelHasERSPAN
		t.ERSPAN.Version = binary.NativeEndian.Uint32(out.TunOpts[:4])
		t.ERSPAN.MD = [8]byte(out.TunOpts[4:ERSPANMetadataLen])
	}
	if out.TunFlags&KernelTunnelVXLANOpt != 0 && sw.TunFlags&KernelTunnelVXLANOpt != 0 {
		t.Present |= TunnelHasVXLAN
		t.VXLANGBP = out.TunGBP
	}
	return t
}
