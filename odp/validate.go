package odp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/nlattr"
)

// Conversion from key and mask attributes to flowkeys.Key, with the
// acceptance rules of the Linux kernel's openvswitch module (6.1):
// ovs_nla_get_match and what it calls in net/openvswitch/flow_netlink.c
// (__parse_flow_nlattrs, parse_vlan_from_nlattrs, ovs_key_from_nlattrs,
// metadata_from_nlattrs, ip_tun_from_nlattr, nsh_key_put_from_nlattr,
// mask_set_nlattr, match_validate). The code works on the attributes'
// wire bytes, as the kernel does, so that lengths, duplicates, nesting
// and the kernel's quirks (a mask attribute that is all zero counts as
// absent; the attribute table is shared between the key and the mask
// pass) come out the same.
//
// Rules implemented (each an EINVAL in the kernel):
//   - attribute type above 32 (OVS_KEY_ATTR_MAX), or one of the
//     userspace-only / kernel-internal types 29, 30, 31;
//   - an attribute twice at the same level (or, inside a VLAN encap, an
//     attribute that the outer level already had, except eth_type, vlan
//     and encap);
//   - a payload length other than the uapi struct's (variable for mpls,
//     nested for encap, tunnel and nsh); trailing bytes in a nest;
//   - VLAN: eth_type 0x8100/0x88a8 without vlan and encap; a TCI without
//     the CFI bit that is not zero; a zero TCI with a non-empty encap; a
//     vlan attribute where no VLAN eth_type precedes it; in the mask,
//     encap for a key without a tag, a TPID mask other than 0xffff, a
//     TCI mask without the CFI bit;
//   - eth_type below 0x600 in a key; neither eth nor eth_type;
//   - in_port of 65535 or more in a key; ct_state bits above 0xff;
//   - tunnel: unknown or mis-sized nested attributes, two option blocks,
//     Geneve options longer than 255 bytes or not a multiple of 4 (and a
//     mask's option length differing from the key's tun_opts_len, which
//     is 12 for ERSPAN and 4 for VXLAN options), ERSPAN options
//     longer than 255 bytes, bad VXLAN extensions, IPv4 mixed with IPv6,
//     no destination, a zero destination, no TTL, bad bridge-mode info;
//   - ipv4/ipv6 frag above 2, an IPv6 flow label above 20 bits, an ARP
//     opcode above 255 (keys only);
//   - mpls with 0 or more than 3 labels, or a length not a multiple of 4;
//   - nsh: unknown or mis-sized nested attributes, MD type 2, MD1 context
//     with a base MD type other than 1 (keys only);
//   - attributes left over that the key did not use ("Unknown key
//     attributes", e.g. tcp in an ARP key is not rejected here but by
//     match_validate; a zero-length type 0 is);
//   - match_validate: a key missing the attribute its eth_type / proto
//     requires (ipv4, ipv6, arp, mpls, nsh, tcp plus tcp_flags, udp,
//     sctp, icmp, icmpv6, nd for ICMPv6 types 135 and 136 — not for later
//     fragments), and mask attributes that are not allowed: L3 masks need
//     an exact eth_type mask, L4 masks an exact proto mask, nd an exact
//     ICMPv6 type mask, and ct_tuple6 never goes with nd.
//
// Not reproduced: the kernel keeps the conntrack original tuple in the
// same memory as the ARP hardware addresses (IPv4) and the ND fields
// (IPv6); flowkeys.Key has separate fields, so a key with both keeps
// both. Geneve option bytes go to flowkeys.Key's TunOpts, left-aligned
// (the kernel right-aligns them in tun_opts: the same match); a mask's
// TunOptsLen is 0xff when it has them, as the kernel's. ERSPAN options
// (struct erspan_metadata, 12 bytes) go to the same bytes, told apart by
// TunFlags' TUNNEL_ERSPAN_OPT as in the kernel; see erspanOpts for an
// attribute of another length. A mask whose option block is of
// another type than the key's (Geneve in the key, ERSPAN in the mask,
// say) is accepted by the kernel, which matches the key's option bytes
// under the other type's mask and dumps the flow without the key's
// options (the masked key loses its option flag) so that it does not
// read back: it fails as unsupported. The kernel's ovs_ct_verify is taken as
// true for every conntrack attribute (Debian's kernel has conntrack
// zones, marks and labels).

// KeyError is the error of ToFlowKeys and ToFlowKeysExact: which
// attribute was wrong and why, in the kernel's words. Err is
// syscall.EINVAL for what the kernel rejects, errors.ErrUnsupported for
// what the kernel accepts but flowkeys.Key cannot hold.
type KeyError struct {
	Attr   string // e.g. "key.encap.ipv4", "mask.tunnel", "key"
	Reason string
	Err    error
}

// Error implements error.
func (e *KeyError) Error() string {
	what := "rejected by the kernel (EINVAL)"
	if errors.Is(e.Err, errors.ErrUnsupported) {
		what = "not supported by flowkeys.Key"
	}
	return "odp: " + e.Attr + ": " + e.Reason + ": " + what
}

// Unwrap returns Err.
func (e *KeyError) Unwrap() error { return e.Err }

// The kernel's OVS_KEY_ATTR_MAX (Linux 6.1: OVS_KEY_ATTR_IPV6_EXTHDRS).
const kernelKeyAttrMax = 32

// Lengths of the kernel's ovs_key_lens table.
const (
	lenNested   = -1
	lenVariable = -2
)

var kernelKeyLens = [kernelKeyAttrMax + 1]int{
	KeyEncap: lenNested, KeyPriority: 4, KeyInPort: 4, KeySkbMark: 4,
	KeyEthernet: 12, KeyVLAN: 2, KeyEthertype: 2, KeyIPv4: 12, KeyIPv6: 40,
	KeyTCP: 4, KeyTCPFlags: 2, KeyUDP: 4, KeySCTP: 4, KeyICMP: 2,
	KeyICMPv6: 2, KeyARP: 24, KeyND: 28, KeyRecircID: 4, KeyDPHash: 4,
	KeyTunnel: lenNested, KeyMPLS: lenVariable, KeyCTState: 4, KeyCTZone: 2,
	KeyCTMark: 4, KeyCTLabels: 16, KeyCTOrigTupleV4: 16, KeyCTOrigTupleV6: 40,
	KeyNSH: lenNested, KeyIPv6ExtHdrs: 2,
}

// The kernel's ovs_tunnel_key_lens (OVS_TUNNEL_KEY_ATTR_MAX is 16,
// IPV4_INFO_BRIDGE; PAD, 14, has no entry and so length 0).
const (
	tunInfoBridge = 16
	tunAttrMax    = 16
)

var kernelTunLens = [tunAttrMax + 1]int{
	tunID: 8, tunIPv4Src: 4, tunIPv4Dst: 4, tunTOS: 1, tunTTL: 1,
	tunDF: 0, tunCSUM: 0, tunTPSrc: 2, tunTPDst: 2, tunOAM: 0,
	tunGeneveOpts: lenVariable, tunVXLANOpts: lenNested, tunIPv6Src: 16,
	tunIPv6Dst: 16, tunERSPANOpts: lenVariable, tunInfoBridge: 0,
}

var kernelNSHLens = [4]int{nshBase: 8, nshMD1: 16, nshMD2: lenVariable}

// ctSupportedMask is the kernel's CT_SUPPORTED_MASK.
const ctSupportedMask = 0xff

// tunOptsMax is sizeof(sw_flow_key.tun_opts) (IP_TUNNEL_OPTS_MAX).
const tunOptsMax = 255

func lenOK(n, want int) bool { return n == want || want == lenNested || want == lenVariable }

// kattr is one entry of the kernel's attribute table a[]. Its name for
// error messages (parent path, dot, type name) is built only when an
// error needs it: a parse that succeeds builds no strings.
type kattr struct {
	data   []byte
	parent string
	typ    KeyType
}

// name is the attribute's path for error messages, e.g. "key.ipv4".
func (a *kattr) name() string { return attrName(a.parent, uint16(a.typ)) }

func attrName(parent string, t uint16) string { return parent + "." + KeyType(t).String() }

// kparser holds the state of one ovs_nla_get_match.
type kparser struct {
	// present has bit t set when store[t] holds attribute t of the
	// message parsed (at(t)); store's other entries are stale. A bit
	// set rather than an array of pointers, so that reset clears one
	// word and no pointer, and store is not cleared at all.
	present uint64
	store   [kernelKeyAttrMax + 1]kattr
	k, m    *flowkeys.Key
	hasMask bool // match->mask != NULL
	// lenient suppresses the checks that only the flow-put path makes
	// (see ToFlowKeysExact).
	lenient bool
	// tunOptsLen is the key's tun_opts_len as the kernel has it: the
	// Geneve options' length, 12 for ERSPAN, 4 for VXLAN (whose GBP
	// flowkeys.Key holds in TunGBP, with a TunOptsLen of 0).
	tunOptsLen int
	// keyOptsType is the tunnel attribute type of the key's option
	// block (tunGeneveOpts, tunVXLANOpts, tunERSPANOpts), 0 for none.
	keyOptsType int
	// erspanKey is the key's ERSPAN option attribute (for the mask's
	// check of the bytes before the 12 the key holds).
	erspanKey   []byte
	unsupported *KeyError
}

// at is attribute t of the message parsed, or nil if it had none.
func (p *kparser) at(t KeyType) *kattr {
	if t > kernelKeyAttrMax || p.present&(1<<t) == 0 {
		return nil
	}
	return &p.store[t]
}

// reset readies p for a conversion into k and m, without clearing the
// attributes of the last one (present says none is there).
func (p *kparser) reset(k, m *flowkeys.Key, hasMask, lenient bool) {
	p.present = 0
	p.k, p.m, p.hasMask, p.lenient = k, m, hasMask, lenient
	p.tunOptsLen, p.erspanKey, p.unsupported = 0, nil, nil
}

func (p *kparser) fail(path, format string, args ...any) error {
	return &KeyError{Attr: path, Reason: fmt.Sprintf(format, args...), Err: syscall.EINVAL}
}

func (p *kparser) target(isMask bool) *flowkeys.Key {
	if isMask {
		return p.m
	}
	return p.k
}

// parseAttrs is __parse_flow_nlattrs: it records the attributes of b in
// p.a and their bits in *attrs. With nz (a mask), all-zero attributes are
// skipped.
func (p *kparser) parseAttrs(b []byte, path string, attrs *uint64, nz bool) error {
	w := nlattr.NewWalker(b, 0)
	for a := range w.All() {
		t, data := a.Type, a.Data
		if t > kernelKeyAttrMax {
			return p.fail(attrName(path, t), "key type %d is out of range max %d", t, kernelKeyAttrMax)
		}
		if t == uint16(KeyPacketType) || t == uint16(KeyNDExtensions) || t == uint16(KeyTunnelInfo) {
			return p.fail(attrName(path, t), "key type %d is not supported", t)
		}
		if *attrs&(1<<t) != 0 {
			return p.fail(attrName(path, t), "duplicate key (type %d)", t)
		}
		if want := kernelKeyLens[t]; !lenOK(len(data), want) {
			return p.fail(attrName(path, t), "key %d has unexpected len %d expected %d", t, len(data), want)
		}
		if !nz || !allZero(data) {
			*attrs |= 1 << t
			p.store[t] = kattr{data: data, parent: path, typ: KeyType(t)}
			p.present |= 1 << t
		}
	}
	if w.Rem() != 0 {
		return p.fail(path, "message has %d unknown bytes", w.Rem())
	}
	return nil
}

func (p *kparser) be16(t KeyType) uint16 { return binary.BigEndian.Uint16(p.at(t).data) }
func (p *kparser) u32(t KeyType) uint32  { return binary.NativeEndian.Uint32(p.at(t).data) }
func (p *kparser) path(t KeyType) string { return p.at(t).name() }

func has(attrs uint64, t KeyType) bool { return attrs&(1<<t) != 0 }

const tagPresent = flowkeys.VLANTagPresent

// parseVLAN is parse_vlan_from_nlattrs.
func (p *kparser) parseVLAN(attrs *uint64, isMask bool, path string) error {
	if err := p.parseOneVLAN(attrs, false, isMask, path); err != nil {
		return err
	}
	if p.k.VLANTCI&tagPresent != 0 {
		return p.parseOneVLAN(attrs, true, isMask, path+".encap")
	}
	return nil
}

// parseOneVLAN is __parse_vlan_from_nlattrs.
func (p *kparser) parseOneVLAN(attrs *uint64, inner, isMask bool, path string) error {
	what := "VLAN"
	if inner {
		what = "C-VLAN"
	}
	var tci, tpid uint16
	if !isMask {
		if !(has(*attrs, KeyEthernet) && has(*attrs, KeyEthertype) && isVLANEthType(p.be16(KeyEthertype))) {
			return nil // not a VLAN
		}
		if !(has(*attrs, KeyVLAN) && has(*attrs, KeyEncap)) {
			return p.fail(path, "invalid %s frame (eth_type %#04x needs vlan and encap)", what, p.be16(KeyEthertype))
		}
		tci = p.be16(KeyVLAN)
		if tci&tagPresent == 0 {
			if tci != 0 {
				return p.fail(p.path(KeyVLAN), "%s TCI does not have VLAN_CFI_MASK bit set", what)
			} else if len(p.at(KeyEncap).data) != 0 {
				return p.fail(p.path(KeyEncap), "truncated %s header has non-zero encap attribute", what)
			}
		}
	} else {
		if !has(*attrs, KeyEncap) {
			return nil
		}
		valid := p.k.VLANTCI&tagPresent != 0
		if inner {
			valid = p.k.CVLANTCI&tagPresent != 0
		}
		if !valid {
			return p.fail(p.path(KeyEncap), "encap mask attribute is set for non-%s frame", what)
		}
		// As in the kernel, an absent mask attribute leaves the key's
		// entry in the shared table.
		if p.at(KeyVLAN) != nil {
			tci = p.be16(KeyVLAN)
		}
		if p.at(KeyEthertype) != nil {
			tpid = p.be16(KeyEthertype)
		}
		if tpid != 0xffff {
			return p.fail(path, "must have an exact match on %s TPID (mask=%x)", what, tpid)
		}
		if tci&tagPresent == 0 {
			return p.fail(path, "%s TCI mask does not have exact match for VLAN_CFI_MASK bit", what)
		}
	}
	// encode_vlan_from_nlattrs
	tci, tpid = 0, 0
	if p.at(KeyVLAN) != nil {
		tci = p.be16(KeyVLAN)
	}
	if p.at(KeyEthertype) != nil {
		tpid = p.be16(KeyEthertype)
	}
	t := p.target(isMask)
	if !inner {
		t.VLANTPID, t.VLANTCI = tpid, tci
	} else {
		t.CVLANTPID, t.CVLANTCI = tpid, tci
	}
	*attrs &^= 1<<KeyEncap | 1<<KeyVLAN | 1<<KeyEthertype
	return p.parseAttrs(p.at(KeyEncap).data, p.path(KeyEncap), attrs, isMask)
}

// parseVLANLenient is the structural inverse of how the kernel writes
// VLAN tags, for ToFlowKeysExact: it also accepts the forms the kernel
// writes for a VLAN eth_type whose tag is truncated (eth_type(0),
// vlan(0), encap() — the kernel's own parser refuses them).
func (p *kparser) parseVLANLenient(attrs *uint64) error {
	for inner := false; ; inner = true {
		if !(has(*attrs, KeyEthernet) && has(*attrs, KeyVLAN) && has(*attrs, KeyEncap)) {
			return nil
		}
		var tpid uint16
		if has(*attrs, KeyEthertype) {
			tpid = p.be16(KeyEthertype)
		}
		tci := p.be16(KeyVLAN)
		encap := p.at(KeyEncap)
		*attrs &^= 1<<KeyEncap | 1<<KeyVLAN | 1<<KeyEthertype
		if !inner {
			p.k.VLANTPID, p.k.VLANTCI = tpid, tci
		} else {
			p.k.CVLANTPID, p.k.CVLANTCI = tpid, tci
		}
		// encap points into p.store, which parsing its contents may
		// overwrite (a nested encap).
		encapData := encap.data
		if err := p.parseAttrs(encapData, encap.name(), attrs, false); err != nil {
			return err
		}
		if tci == 0 && tpid == 0 && len(encapData) == 0 {
			// The kernel's truncated tag: its eth_type was a VLAN
			// TPID that the attributes do not say; 802.1Q is
			// assumed.
			p.k.EthType = flowkeys.EthTypeVLAN
			return nil
		}
		if inner {
			return nil
		}
	}
}

// parseEthType is parse_eth_type_from_nlattrs.
func (p *kparser) parseEthType(attrs *uint64, isMask bool) error {
	et := p.be16(KeyEthertype)
	if isMask {
		et = 0xffff
	} else if et < 0x600 {
		return p.fail(p.path(KeyEthertype), "EtherType %x is less than min %x", et, 0x600)
	}
	p.target(isMask).EthType = et
	*attrs &^= 1 << KeyEthertype
	return nil
}

// metadata is metadata_from_nlattrs.
func (p *kparser) metadata(attrs *uint64, isMask bool) error {
	t := p.target(isMask)
	if has(*attrs, KeyDPHash) {
		t.DPHash = p.u32(KeyDPHash)
		*attrs &^= 1 << KeyDPHash
	}
	if has(*attrs, KeyRecircID) {
		t.RecircID = p.u32(KeyRecircID)
		*attrs &^= 1 << KeyRecircID
	}
	if has(*attrs, KeyPriority) {
		t.Priority = p.u32(KeyPriority)
		*attrs &^= 1 << KeyPriority
	}
	if has(*attrs, KeyInPort) {
		in := p.u32(KeyInPort)
		if isMask {
			in = 0xffff // always exact; the kernel's in_port is 16 bits
		} else if in >= DPMaxPorts {
			return p.fail(p.path(KeyInPort), "port %d exceeds max allowable %d", in, DPMaxPorts)
		}
		t.InPort = in
		*attrs &^= 1 << KeyInPort
	} else if !isMask {
		t.InPort = DPMaxPorts
	}
	if has(*attrs, KeySkbMark) {
		t.SkbMark = p.u32(KeySkbMark)
		*attrs &^= 1 << KeySkbMark
	}
	if has(*attrs, KeyTunnel) {
		if err := p.tunnel(p.at(KeyTunnel), isMask); err != nil {
			return err
		}
		*attrs &^= 1 << KeyTunnel
	}
	if has(*attrs, KeyCTState) {
		s := p.u32(KeyCTState)
		if s&^ctSupportedMask != 0 {
			return p.fail(p.path(KeyCTState), "ct_state flags %08x unsupported", s)
		}
		t.CTState = uint8(s)
		*attrs &^= 1 << KeyCTState
	}
	if has(*attrs, KeyCTZone) {
		t.CTZone = binary.NativeEndian.Uint16(p.at(KeyCTZone).data)
		*attrs &^= 1 << KeyCTZone
	}
	if has(*attrs, KeyCTMark) {
		t.CTMark = p.u32(KeyCTMark)
		*attrs &^= 1 << KeyCTMark
	}
	if has(*attrs, KeyCTLabels) {
		copy(t.CTLabels[:], p.at(KeyCTLabels).data)
		*attrs &^= 1 << KeyCTLabels
	}
	if has(*attrs, KeyCTOrigTupleV4) {
		d := p.at(KeyCTOrigTupleV4).data
		copy(t.CTOrigIPv4Src[:], d[0:4])
		copy(t.CTOrigIPv4Dst[:], d[4:8])
		t.CTOrigTpSrc = binary.BigEndian.Uint16(d[8:])
		t.CTOrigTpDst = binary.BigEndian.Uint16(d[10:])
		t.CTOrigProto = d[12]
		*attrs &^= 1 << KeyCTOrigTupleV4
	}
	if has(*attrs, KeyCTOrigTupleV6) {
		d := p.at(KeyCTOrigTupleV6).data
		copy(t.CTOrigIPv6Src[:], d[0:16])
		copy(t.CTOrigIPv6Dst[:], d[16:32])
		t.CTOrigTpSrc = binary.BigEndian.Uint16(d[32:])
		t.CTOrigTpDst = binary.BigEndian.Uint16(d[34:])
		t.CTOrigProto = d[36]
		*attrs &^= 1 << KeyCTOrigTupleV6
	}
	// A key with eth_type but no eth is an L3 packet; mac_proto is
	// always matched exactly.
	macProto := uint8(flowkeys.MacProtoEthernet)
	if !has(*attrs, KeyEthernet) && has(*attrs, KeyEthertype) {
		macProto = flowkeys.MacProtoNone
	}
	if isMask {
		t.MacProto = 0xff
	} else {
		t.MacProto = macProto
	}
	if macProto == flowkeys.MacProtoNone {
		return p.parseEthType(attrs, isMask)
	}
	return nil
}

// tunnel is ip_tun_from_nlattr.
func (p *kparser) tunnel(ka *kattr, isMask bool) error {
	t := p.target(isMask)
	var ttl, ipv4, ipv6, bridge bool
	var flags uint16
	optsType := 0
	w := nlattr.NewWalker(ka.data, 0)
	for a := range w.All() {
		typ, d := a.Type, a.Data
		if err := p.checkNested(ka, "tunnel attr %d out of range max %d", "tunnel attr", a, kernelTunLens[:]); err != nil {
			return err
		}
		switch typ {
		case tunID:
			t.TunID = binary.BigEndian.Uint64(d)
			flags |= KernelTunnelKey
		case tunIPv4Src:
			copy(t.TunIPv4Src[:], d)
			ipv4 = true
		case tunIPv4Dst:
			copy(t.TunIPv4Dst[:], d)
			ipv4 = true
		case tunIPv6Src:
			copy(t.TunIPv6Src[:], d)
			ipv6 = true
		case tunIPv6Dst:
			copy(t.TunIPv6Dst[:], d)
			ipv6 = true
		case tunTOS:
			t.TunTOS = d[0]
		case tunTTL:
			t.TunTTL = d[0]
			ttl = true
		case tunDF:
			flags |= KernelTunnelDF
		case tunCSUM:
			flags |= KernelTunnelCSUM
		case tunTPSrc:
			t.TunTpSrc = binary.BigEndian.Uint16(d)
		case tunTPDst:
			t.TunTpDst = binary.BigEndian.Uint16(d)
		case tunOAM:
			flags |= KernelTunnelOAM
		case tunGeneveOpts, tunVXLANOpts, tunERSPANOpts:
			if optsType != 0 {
				return p.fail(ka.name(), "multiple metadata blocks provided")
			}
			optsType = int(typ)
			if !isMask {
				p.keyOptsType = optsType
			}
			switch typ {
			case tunGeneveOpts:
				if len(d) > tunOptsMax {
					return p.fail(ka.name(), "Geneve option length err (len %d, max %d)", len(d), tunOptsMax)
				}
				if len(d)%4 != 0 {
					return p.fail(ka.name(), "Geneve opt len %d is not a multiple of 4", len(d))
				}
				if !isMask {
					p.tunOptsLen = len(d)
					t.TunOptsLen = uint8(len(d))
				} else if p.tunOptsLen != len(d) {
					return p.fail(ka.name(), "Geneve option len %d != mask len %d", p.tunOptsLen, len(d))
				} else {
					t.TunOptsLen = 0xff // the length is always exact (SW_FLOW_KEY_PUT(tun_opts_len, 0xff))
				}
				// len(d) <= 252 here: at most 255 and a multiple of 4.
				copy(t.TunOpts[:], d)
				flags |= KernelTunnelGeneveOpt
			case tunERSPANOpts:
				if err := p.erspanOpts(ka.name(), d, t, isMask); err != nil {
					return err
				}
				flags |= KernelTunnelERSPANOpt
			case tunVXLANOpts:
				gbp, err := p.vxlanOpts(ka.name(), d)
				if err != nil {
					return err
				}
				if !isMask {
					p.tunOptsLen = vxlanOptsLen
				} else {
					// The kernel's mask has the length exact, as for
					// the other types: a key without options then
					// matches no packet with options. (A VXLAN key's
					// TunOptsLen is 0, as a VXLAN packet's.)
					t.TunOptsLen = 0xff
				}
				t.TunGBP = gbp
				flags |= KernelTunnelVXLANOpt
			}
			if isMask && p.keyOptsType != 0 && p.keyOptsType != optsType {
				p.markUnsupported(ka.name(), fmt.Sprintf("%s options in the mask of a key with %s options (the kernel takes the pair, "+
					"but matches the key's option bytes under the other type's mask, and its dump drops the key's options: "+
					"the flow does not read back)", tunOptsName(optsType), tunOptsName(p.keyOptsType)))
			}
		case tunPad:
		case tunInfoBridge:
			bridge = true
			ipv4 = true
		default:
			return p.fail(ka.name(), "unknown IP tunnel attribute %d", typ)
		}
	}
	t.TunFlags = flags
	if isMask {
		t.TunProto = 0xff
	} else if ipv6 {
		t.TunProto = flowkeys.TunProtoIPv6
	} else {
		t.TunProto = flowkeys.TunProtoIPv4
	}
	if w.Rem() > 0 {
		return p.fail(ka.name(), "IP tunnel attribute has %d unknown bytes", w.Rem())
	}
	if ipv4 && ipv6 {
		return p.fail(ka.name(), "mixed IPv4 and IPv6 tunnel attributes")
	}
	if !isMask {
		if !ipv4 && !ipv6 {
			return p.fail(ka.name(), "IP tunnel dst address not specified")
		}
		if ipv4 {
			if bridge {
				if t.TunIPv4Src != ([4]byte{}) || t.TunIPv4Dst != ([4]byte{}) || t.TunTpSrc != 0 ||
					t.TunTpDst != 0 || t.TunTTL != 0 || t.TunTOS != 0 || flags&^KernelTunnelKey != 0 {
					return p.fail(ka.name(), "IPv4 tun info is not correct")
				}
			} else if t.TunIPv4Dst == ([4]byte{}) {
				return p.fail(ka.name(), "IPv4 tunnel dst address is zero")
			}
		}
		if ipv6 && t.TunIPv6Dst == ([16]byte{}) {
			return p.fail(ka.name(), "IPv6 tunnel dst address is zero")
		}
		if !ttl && !bridge {
			return p.fail(ka.name(), "IP tunnel TTL not specified")
		}
	}
	return nil
}

// vxlanOptsLen is sizeof(struct ovs_vxlan_opts): the kernel's
// tun_opts_len of a key with VXLAN options.
const vxlanOptsLen = 4

// tunOptsName is the text name of a tunnel option block's attribute type.
func tunOptsName(typ int) string {
	switch typ {
	case tunGeneveOpts:
		return "geneve"
	case tunVXLANOpts:
		return "vxlan"
	case tunERSPANOpts:
		return "erspan"
	}
	return fmt.Sprintf("type %d", typ)
}

// ERSPANMetadataLen is sizeof(struct erspan_metadata): the kernel's
// tun_opts_len of every key with ERSPAN options, whatever the length of
// the attribute.
const ERSPANMetadataLen = 12

// erspanOpts is erspan_tun_opt_from_nlattr. The kernel accepts an
// attribute of any length up to tun_opts' 255 bytes, sets the key's
// tun_opts_len to 12 (0xff in the mask) and copies the attribute's bytes
// right-aligned into tun_opts, so an attribute of L < 12 bytes fills the
// last L bytes of the 12 the key matches and dumps (the version bytes
// first: they stay zero). flowkeys.Key holds the 12 bytes left-aligned
// in TunOpts, as it holds Geneve options. Bytes of a longer attribute
// land before those 12, where a packet's key holds no option bytes
// (the kernel never fills them from an ERSPAN packet); flowkeys.Key has
// them as zero, so a flow whose key and mask there have no bit in
// common matches as in the kernel, and the other flows fail as
// unsupported.
func (p *kparser) erspanOpts(path string, d []byte, t *flowkeys.Key, isMask bool) error {
	if len(d) > tunOptsMax {
		return p.fail(path, "ERSPAN option length err (len %d, max %d)", len(d), tunOptsMax)
	}
	if !isMask {
		p.tunOptsLen = ERSPANMetadataLen
		t.TunOptsLen = ERSPANMetadataLen
		p.erspanKey = d
	} else {
		t.TunOptsLen = 0xff
		if ext := len(d) - ERSPANMetadataLen; ext > 0 {
			// The key's bytes before its last 12 end where the mask's
			// do (both right-aligned); the key's are zero where it
			// is shorter.
			kext := p.erspanKey[:max(len(p.erspanKey)-ERSPANMetadataLen, 0)]
			for i, mb := range d[:ext] {
				if j := i - (ext - len(kext)); j >= 0 && kext[j]&mb != 0 {
					p.markUnsupported(path, fmt.Sprintf("an ERSPAN option of %d bytes matching bytes before the 12 of struct erspan_metadata", len(p.erspanKey)))
					break
				}
			}
		}
	}
	w := d[max(len(d)-ERSPANMetadataLen, 0):]
	copy(t.TunOpts[ERSPANMetadataLen-len(w):ERSPANMetadataLen], w)
	return nil
}

func (p *kparser) markUnsupported(path, what string) {
	if p.unsupported == nil {
		p.unsupported = &KeyError{Attr: path, Reason: what + " cannot be held in a flowkeys.Key", Err: errors.ErrUnsupported}
	}
}

// vxlanOpts is vxlan_tun_opt_from_nlattr.
func (p *kparser) vxlanOpts(path string, b []byte) (uint32, error) {
	var gbp uint32
	w := nlattr.NewWalker(b, 0)
	for a := range w.All() {
		typ, d := a.Type, a.Data
		if typ > vxlanExtGBP {
			return 0, p.fail(path, "VXLAN extension %d out of range max %d", typ, vxlanExtGBP)
		}
		want := 0
		if typ == vxlanExtGBP {
			want = 4
		}
		if len(d) != want {
			return 0, p.fail(path, "VXLAN extension %d has unexpected len %d expected %d", typ, len(d), want)
		}
		if typ != vxlanExtGBP {
			return 0, p.fail(path, "unknown VXLAN extension attribute %d", typ)
		}
		gbp = binary.NativeEndian.Uint32(d)
	}
	if w.Rem() != 0 {
		return 0, p.fail(path, "VXLAN extension message has %d unknown bytes", w.Rem())
	}
	return gbp, nil
}

// checkNested is the kernel's check of one attribute nested in a
// tunnel or nsh key against its length table lens (whose last index is
// the type's maximum), with the kernel's messages: rangeMsg for a type
// out of range, what for a length that does not match.
// The parent's path is formatted only for an error (it allocates).
func (p *kparser) checkNested(parent *kattr, rangeMsg, what string, a *nlattr.Attr, lens []int) error {
	if int(a.Type) >= len(lens) {
		return p.fail(parent.name(), rangeMsg, a.Type, len(lens)-1)
	}
	if want := lens[a.Type]; !lenOK(len(a.Data), want) {
		return p.fail(parent.name(), "%s %d has unexpected len %d expected %d", what, a.Type, len(a.Data), want)
	}
	return nil
}

// nsh is nsh_key_put_from_nlattr (not for push_nsh).
func (p *kparser) nsh(ka *kattr, isMask bool) error {
	t := p.target(isMask)
	var hasMD1 bool
	var mdtype uint8
	w := nlattr.NewWalker(ka.data, 0)
	for a := range w.All() {
		typ, d := a.Type, a.Data
		if err := p.checkNested(ka, "nsh attr %d is out of range max %d", "nsh attr", a, kernelNSHLens[:]); err != nil {
			return err
		}
		switch typ {
		case nshBase:
			mdtype = d[2]
			t.NSHFlags, t.NSHTTL, t.NSHMDType, t.NSHNP = d[0], d[1], d[2], d[3]
			t.NSHPathHdr = binary.BigEndian.Uint32(d[4:])
		case nshMD1:
			hasMD1 = true
			for i := range t.NSHContext {
				t.NSHContext[i] = binary.BigEndian.Uint32(d[4*i:])
			}
		case nshMD2:
			return p.fail(ka.name(), "MD type 2 is not supported (ENOTSUPP)")
		default:
			return p.fail(ka.name(), "unknown nsh attribute %d", typ)
		}
	}
	if w.Rem() > 0 {
		return p.fail(ka.name(), "nsh attribute has %d unknown bytes", w.Rem())
	}
	if !isMask && hasMD1 && mdtype != 1 {
		return p.fail(ka.name(), "nsh attribute has unmatched MD type %d", mdtype)
	}
	return nil
}

// keyFromAttrs is ovs_key_from_nlattrs.
func (p *kparser) keyFromAttrs(attrs uint64, isMask bool) error {
	if err := p.metadata(&attrs, isMask); err != nil {
		return err
	}
	t := p.target(isMask)
	strict := !p.lenient
	if has(attrs, KeyEthernet) {
		d := p.at(KeyEthernet).data
		copy(t.EthSrc[:], d[0:6])
		copy(t.EthDst[:], d[6:12])
		attrs &^= 1 << KeyEthernet
		if has(attrs, KeyVLAN) && strict {
			return p.fail(p.path(KeyVLAN), "VLAN attribute unexpected")
		}
		if has(attrs, KeyEthertype) {
			if err := p.parseEthType(&attrs, isMask); err != nil && strict {
				return err
			}
			attrs &^= 1 << KeyEthertype
		} else if !isMask && !(p.lenient && t.EthType != 0) {
			t.EthType = flowkeys.EthType8022
		}
	} else if p.k.EthType == 0 && strict {
		return p.fail("key", "either Ethernet header or EtherType is required")
	}
	if has(attrs, KeyIPv4) {
		d := p.at(KeyIPv4).data
		if !isMask && d[11] > flowkeys.FragLater && strict {
			return p.fail(p.path(KeyIPv4), "IPv4 frag type %d is out of range max %d", d[11], flowkeys.FragLater)
		}
		copy(t.IPv4Src[:], d[0:4])
		copy(t.IPv4Dst[:], d[4:8])
		t.IPProto, t.IPTOS, t.IPTTL, t.IPFrag = d[8], d[9], d[10], d[11]
		attrs &^= 1 << KeyIPv4
	}
	if has(attrs, KeyIPv6) {
		d := p.at(KeyIPv6).data
		label := binary.BigEndian.Uint32(d[32:])
		if !isMask && d[39] > flowkeys.FragLater && strict {
			return p.fail(p.path(KeyIPv6), "IPv6 frag type %d is out of range max %d", d[39], flowkeys.FragLater)
		}
		if !isMask && label&0xfff00000 != 0 && strict {
			return p.fail(p.path(KeyIPv6), "IPv6 flow label %x is out of range (max=%x)", label, 1<<20-1)
		}
		copy(t.IPv6Src[:], d[0:16])
		copy(t.IPv6Dst[:], d[16:32])
		t.IPv6Label = label
		t.IPProto, t.IPTOS, t.IPTTL, t.IPFrag = d[36], d[37], d[38], d[39]
		attrs &^= 1 << KeyIPv6
	}
	if has(attrs, KeyIPv6ExtHdrs) {
		t.IPv6ExtHdrs = binary.NativeEndian.Uint16(p.at(KeyIPv6ExtHdrs).data)
		attrs &^= 1 << KeyIPv6ExtHdrs
	}
	if has(attrs, KeyARP) {
		d := p.at(KeyARP).data
		op := binary.BigEndian.Uint16(d[8:])
		if !isMask && op&0xff00 != 0 && strict {
			return p.fail(p.path(KeyARP), "unknown ARP opcode (opcode=%d)", op)
		}
		copy(t.IPv4Src[:], d[0:4])
		copy(t.IPv4Dst[:], d[4:8])
		t.IPProto = uint8(op)
		copy(t.ARPSHA[:], d[10:16])
		copy(t.ARPTHA[:], d[16:22])
		attrs &^= 1 << KeyARP
	}
	if has(attrs, KeyNSH) {
		if err := p.nsh(p.at(KeyNSH), isMask); err != nil && strict {
			return err
		}
		attrs &^= 1 << KeyNSH
	}
	if has(attrs, KeyMPLS) {
		d := p.at(KeyMPLS).data
		n := len(d) / 4
		if n == 0 || n > len(t.MPLSLSE) || len(d)%4 != 0 {
			if strict {
				return p.fail(p.path(KeyMPLS), "MPLS attribute of %d bytes: want 1 to %d labels of 4 bytes", len(d), len(t.MPLSLSE))
			}
			n = min(n, len(t.MPLSLSE))
		}
		for i := 0; i < n; i++ {
			t.MPLSLSE[i] = binary.BigEndian.Uint32(d[4*i:])
		}
		t.MPLSLabelsMask = 1<<n - 1
		attrs &^= 1 << KeyMPLS
	}
	for _, l4 := range [...]KeyType{KeyTCP, KeyUDP, KeySCTP} {
		if has(attrs, l4) {
			d := p.at(l4).data
			t.TpSrc = binary.BigEndian.Uint16(d[0:])
			t.TpDst = binary.BigEndian.Uint16(d[2:])
			attrs &^= 1 << l4
		}
		if l4 == KeyTCP && has(attrs, KeyTCPFlags) {
			t.TCPFlags = p.be16(KeyTCPFlags)
			attrs &^= 1 << KeyTCPFlags
		}
	}
	for _, icmp := range [...]KeyType{KeyICMP, KeyICMPv6} {
		if has(attrs, icmp) {
			d := p.at(icmp).data
			t.TpSrc, t.TpDst = uint16(d[0]), uint16(d[1])
			attrs &^= 1 << icmp
		}
	}
	if has(attrs, KeyND) {
		d := p.at(KeyND).data
		copy(t.NDTarget[:], d[0:16])
		copy(t.NDSLL[:], d[16:22])
		copy(t.NDTLL[:], d[22:28])
		attrs &^= 1 << KeyND
	}
	if attrs != 0 && strict {
		return p.fail("key", "unknown key attributes %x", attrs)
	}
	return nil
}

// maskSet is mask_set_nlattr: a copy of the key's attributes with every
// leaf byte set to 0xff (and ct_state limited to the supported bits).
func maskSet(b []byte, lens []int, sub func(t uint16) []int) {
	w := nlattr.NewWalker(b, 0)
	for a := range w.All() {
		t, d := a.Type, a.Data
		l := 0
		if int(t) < len(lens) {
			l = lens[t]
		}
		if l == lenNested {
			next := sub(t)
			if next == nil {
				next = lens
			}
			maskSet(d, next, sub)
		} else {
			for i := range d {
				d[i] = 0xff
			}
		}
		if t == uint16(KeyCTState) && len(d) == 4 {
			binary.NativeEndian.PutUint32(d, binary.NativeEndian.Uint32(d)&ctSupportedMask)
		}
	}
}

var vxlanLens = []int{vxlanExtGBP: 4}

// keyLensSub gives the nested table of a nested key attribute
// (ovs_len_tbl.next).
func keyLensSub(t uint16) []int {
	switch KeyType(t) {
	case KeyTunnel:
		return tunLensSub
	case KeyNSH:
		return kernelNSHLens[:]
	}
	return nil
}

var tunLensSub = func() []int {
	l := make([]int, len(kernelTunLens))
	copy(l, kernelTunLens[:])
	return l
}()

// maskSetKey applies maskSet with the right nested tables: the tunnel's
// VXLAN options use the VXLAN extension table.
func maskSetKey(b []byte) {
	maskSet(b, kernelKeyLens[:], func(t uint16) []int {
		if t == tunVXLANOpts {
			// Within the tunnel table, type 11 is VXLAN_OPTS; within
			// the key table, 11 is ICMP (not nested), so this is
			// only reached from the tunnel.
			return vxlanLens
		}
		return keyLensSub(t)
	})
}

// matchValidate is match_validate.
func (p *kparser) matchValidate(keyAttrs, maskAttrs uint64) error {
	const bit = uint64(1)
	var expected uint64
	allowed := keyAttrs &^ (bit<<KeyIPv4 | bit<<KeyCTOrigTupleV4 | bit<<KeyIPv6 | bit<<KeyCTOrigTupleV6 |
		bit<<KeyTCP | bit<<KeyTCPFlags | bit<<KeyUDP | bit<<KeySCTP | bit<<KeyICMP | bit<<KeyICMPv6 |
		bit<<KeyARP | bit<<KeyND | bit<<KeyMPLS | bit<<KeyNSH)
	allowed |= bit<<KeyTunnel | bit<<KeyInPort | bit<<KeyEthertype
	k, m := p.k, p.m
	exactType := p.hasMask && m.EthType == 0xffff
	exactProto := p.hasMask && m.IPProto == 0xff
	switch {
	case k.EthType == flowkeys.EthTypeARP || k.EthType == flowkeys.EthTypeRARP:
		expected |= bit << KeyARP
		if exactType {
			allowed |= bit << KeyARP
		}
	case k.EthType == flowkeys.EthTypeMPLS || k.EthType == flowkeys.EthTypeMPLSMC:
		expected |= bit << KeyMPLS
		if exactType {
			allowed |= bit << KeyMPLS
		}
	case k.EthType == flowkeys.EthTypeIPv4 || k.EthType == flowkeys.EthTypeIPv6:
		v4 := k.EthType == flowkeys.EthTypeIPv4
		l3, tuple, icmp := KeyIPv6, KeyCTOrigTupleV6, KeyICMPv6
		if v4 {
			l3, tuple, icmp = KeyIPv4, KeyCTOrigTupleV4, KeyICMP
		}
		expected |= bit << l3
		if exactType {
			allowed |= bit<<l3 | bit<<tuple
		}
		if k.IPFrag != flowkeys.FragLater {
			var l4 uint64
			switch k.IPProto {
			case 17:
				l4 = bit << KeyUDP
			case 132:
				l4 = bit << KeySCTP
			case 6:
				l4 = bit<<KeyTCP | bit<<KeyTCPFlags
			case 1:
				if v4 {
					l4 = bit << icmp
				}
			case 58:
				if !v4 {
					l4 = bit << icmp
				}
			}
			expected |= l4
			if exactProto {
				allowed |= l4
			}
			if !v4 && k.IPProto == 58 && (k.TpSrc == 135 || k.TpSrc == 136) {
				expected |= bit << KeyND
				// The conntrack tuple shares the kernel's ND fields.
				allowed &^= bit << KeyCTOrigTupleV6
				if p.hasMask && m.TpSrc == 0xff {
					allowed |= bit << KeyND
				}
			}
		}
	case k.EthType == flowkeys.EthTypeNSH:
		expected |= bit << KeyNSH
		if exactType {
			allowed |= bit << KeyNSH
		}
	}
	if keyAttrs&expected != expected {
		missing := expected &^ keyAttrs
		return p.fail("key", "missing key attribute %s: %s (keys=%x, expected=%x)",
			attrNames(missing), requiredBecause(missing, k), keyAttrs, expected)
	}
	if maskAttrs&allowed != maskAttrs {
		return p.fail("mask", "unexpected mask attribute %s (mask=%x, allowed=%x)",
			attrNames(maskAttrs&^allowed), maskAttrs, allowed)
	}
	return nil
}

// requiredBecause says why match_validate expects the attributes in
// missing, from the key's values: "the kernel requires icmp() when ipv4
// proto=1".
func requiredBecause(missing uint64, k *flowkeys.Key) string {
	var t KeyType
	for t = 0; t < 64 && missing&(1<<t) == 0; t++ {
	}
	var why string
	l3 := "ipv4"
	if k.EthType == flowkeys.EthTypeIPv6 {
		l3 = "ipv6"
	}
	switch t {
	case KeyARP, KeyMPLS, KeyIPv4, KeyIPv6, KeyNSH:
		why = fmt.Sprintf("eth_type(0x%04x)", k.EthType)
	case KeyTCP, KeyTCPFlags, KeyUDP, KeySCTP, KeyICMP, KeyICMPv6:
		why = fmt.Sprintf("%s proto=%d", l3, k.IPProto)
		if k.IPFrag == flowkeys.FragFirst {
			why += " (a first fragment too)"
		}
	case KeyND:
		why = fmt.Sprintf("icmpv6 type=%d", k.TpSrc)
	default:
		why = "the key's other attributes"
	}
	return "the kernel requires " + attrNames(missing&(1<<t)) + "() when " + why
}

// attrNames lists the attribute names of the bits in set.
func attrNames(set uint64) string {
	s := ""
	for t := 0; t < 64; t++ {
		if set&(1<<t) != 0 {
			if s != "" {
				s += ","
			}
			s += KeyType(t).String()
		}
	}
	return s
}

// ToFlowKeys converts a flow's key and mask attributes (OVS_FLOW_ATTR_KEY
// and OVS_FLOW_ATTR_MASK) into a flowkeys.Key and its mask with the
// kernel's rules for a new or modified flow (ovs_nla_get_match with a
// mask, then match_validate), so that a userspace datapath accepts
// exactly the flows the kernel accepts. The returned key is already
// masked (k & m), as the kernel stores it.
//
// A nil mask means the mask attribute is absent: the key is exact in
// every field its attributes give (including zero tunnel fields). A
// non-nil mask gives the mask; an absent or all-zero mask attribute
// wildcards its fields, except that in_port, eth_type and mac_proto are
// always exact when given, and the VLAN TCIs are always exact.
//
// A rejected key or mask gives a *KeyError wrapping syscall.EINVAL that
// names the attribute and the kernel's reason; the comment at the top of
// validate.go lists the rules.
func ToFlowKeys(key, mask FlowKey) (k, m flowkeys.Key, err error) {
	s := getKeyScratch()
	defer putKeyScratch(s)
	if s.kb, err = appendKeyBounded(s.kb[:0], key); err != nil {
		return k, m, &KeyError{Attr: "key", Reason: err.Error(), Err: syscall.EINVAL}
	}
	var mb []byte
	if mask != nil {
		if s.mb, err = appendKeyBounded(s.mb[:0], mask); err != nil {
			return k, m, &KeyError{Attr: "mask", Reason: err.Error(), Err: syscall.EINVAL}
		}
		mb = s.mb
	}
	if err = s.toFlowKeysRaw(s.kb, mb, mask != nil); err != nil {
		return flowkeys.Key{}, flowkeys.Key{}, err
	}
	return s.k, s.m, nil
}

// keyScratch is the reusable memory of one key conversion: the encoded
// attributes, the parser (about 2 KB) and the keys it fills. Conversions
// take one from keyScratchPool so that the upcall and flow-put paths
// allocate nothing for it; nothing returned to a caller points into it
// (errors copy what they quote).
type keyScratch struct {
	p      kparser
	k, m   flowkeys.Key
	kb, mb []byte
}

var keyScratchPool = sync.Pool{New: func() any { return &keyScratch{kb: make([]byte, 0, 256), mb: make([]byte, 0, 256)} }}

func getKeyScratch() *keyScratch { return keyScratchPool.Get().(*keyScratch) }

// putKeyScratch returns s to the pool. Its parser points into s's own
// buffers only (toFlowKeysRaw, given the caller's, clears it first):
// every conversion resets it before use.
func putKeyScratch(s *keyScratch) { keyScratchPool.Put(s) }

// appendKeyBounded appends k's attributes to b, failing as MarshalKey
// does when they exceed the netlink attribute limit.
func appendKeyBounded(b []byte, k FlowKey) ([]byte, error) {
	b, err := appendKey(b, k)
	if err != nil {
		return b, err
	}
	if len(b) > maxAttrLen {
		return b, fmt.Errorf("odp: key of %d bytes exceeds the netlink attribute limit of %d", len(b), maxAttrLen)
	}
	return b, nil
}

func toFlowKeysRaw(kb, mb []byte, haveMask bool) (k, m flowkeys.Key, err error) {
	s := getKeyScratch()
	defer putKeyScratch(s)
	err = s.toFlowKeysRaw(kb, mb, haveMask)
	k, m = s.k, s.m
	s.p = kparser{} // drop the references into the caller's kb and mb
	if err != nil {
		return flowkeys.Key{}, flowkeys.Key{}, err
	}
	return k, m, nil
}

// toFlowKeysRaw is the conversion of toFlowKeysRaw into s.k and s.m
// (undefined on error), with s's parser and, for a missing mask, s.mb.
func (s *keyScratch) toFlowKeysRaw(kb, mb []byte, haveMask bool) (err error) {
	s.k, s.m = flowkeys.Key{}, flowkeys.Key{}
	k, m := &s.k, &s.m
	s.p = kparser{k: k, m: m, hasMask: true}
	p := &s.p
	var keyAttrs, maskAttrs uint64
	if err = p.parseAttrs(kb, "key", &keyAttrs, false); err != nil {
		return
	}
	if err = p.parseVLAN(&keyAttrs, false, "key"); err != nil {
		return
	}
	if err = p.keyFromAttrs(keyAttrs, false); err != nil {
		return
	}
	if !haveMask {
		mb = append(s.mb[:0], kb...)
		s.mb = mb
		maskSetKey(mb)
		if k.TunProto != 0 {
			m.TunID = ^uint64(0)
			m.TunIPv4Src, m.TunIPv4Dst = [4]byte{255, 255, 255, 255}, [4]byte{255, 255, 255, 255}
			for i := range m.TunIPv6Src {
				m.TunIPv6Src[i], m.TunIPv6Dst[i] = 0xff, 0xff
			}
			m.TunFlags, m.TunTOS, m.TunTTL, m.TunTpSrc, m.TunTpDst = 0xffff, 0xff, 0xff, 0xffff, 0xffff
		}
	}
	if err = p.parseAttrs(mb, "mask", &maskAttrs, true); err != nil {
		return
	}
	m.VLANTCI, m.CVLANTCI = 0xffff, 0xffff // always match on the TCIs
	if err = p.parseVLAN(&maskAttrs, true, "mask"); err != nil {
		return
	}
	if err = p.keyFromAttrs(maskAttrs, true); err != nil {
		return
	}
	if err = p.matchValidate(keyAttrs, maskAttrs); err != nil {
		return
	}
	if p.unsupported != nil {
		return p.unsupported
	}
	kw, mw := k.Words(), m.Words()
	for i := range kw {
		kw[i] &= mw[i]
	}
	return nil
}

// ToFlowKeysExact converts the key attributes of a packet — an upcall's
// key, or the key of an execute request — into a flowkeys.Key. It is the
// inverse of KeyFromFlowKeys: every key the kernel writes converts back
// to the key it was written from, except for what the attributes do not
// carry (the label stack entries of a truncated MPLS stack; whether a
// truncated VLAN tag's TPID was 0x8100 or 0x88a8, taken as 0x8100).
//
// It fails, with a *KeyError wrapping syscall.EINVAL, where the kernel
// fails an execute request's key (ovs_flow_key_extract_userspace):
// attribute types, duplicates and lengths, nested attributes, and the
// metadata rules (in_port, ct_state, the tunnel, the eth_type of an L3
// packet). Unlike ToFlowKeys it does not apply the rules the kernel has
// only for flows (VLAN consistency, frag, flow label, ARP opcode, MPLS
// and NSH checks, required attributes): those fields are re-extracted
// from the packet by an execute, and an upcall's key is never refused.
// Without an in_port attribute, InPort is DPMaxPorts.
func ToFlowKeysExact(key FlowKey) (flowkeys.Key, error) {
	s := getKeyScratch()
	defer putKeyScratch(s)
	var err error
	if s.kb, err = appendKeyBounded(s.kb[:0], key); err != nil {
		return flowkeys.Key{}, &KeyError{Attr: "key", Reason: err.Error(), Err: syscall.EINVAL}
	}
	// Only the key: without a mask (hasMask false) the parser writes
	// and reads nothing of s.m.
	s.k = flowkeys.Key{}
	s.p.reset(&s.k, &s.m, false, true)
	p := &s.p
	var attrs uint64
	if err := p.parseAttrs(s.kb, "key", &attrs, false); err != nil {
		return flowkeys.Key{}, err
	}
	if err := p.parseVLANLenient(&attrs); err != nil {
		return flowkeys.Key{}, err
	}
	if err := p.keyFromAttrs(attrs, false); err != nil {
		return flowkeys.Key{}, err
	}
	if p.unsupported != nil {
		return flowkeys.Key{}, p.unsupported
	}
	return s.k, nil
}
