package odp

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Ethernet is OVS_KEY_ATTR_ETHERNET (struct ovs_key_ethernet). Text:
// eth(src=00:01:02:03:04:05,dst=10:11:12:13:14:15).
type Ethernet struct {
	// Src is the source MAC address.
	Src [6]byte
	// Dst is the destination MAC address.
	Dst [6]byte
}

// VLAN is OVS_KEY_ATTR_VLAN, the 802.1Q/802.1ad tag control information
// (be16 TCI: PCP in bits 13-15, CFI/DEI in bit 12, VID in bits 0-11). The
// kernel requires the CFI bit in a key: a tag is present. Text:
// vlan(vid=99,pcp=7), with ",cfi=0" when the CFI bit is clear.
type VLAN uint16

// VLAN TCI bits.
const (
	VLANCFI     VLAN = 0x1000
	VLANVIDMask VLAN = 0x0fff
	VLANPCPMask VLAN = 0xe000
)

// VID is the VLAN id.
func (v VLAN) VID() uint16 { return uint16(v) & 0x0fff }

// PCP is the priority code point.
func (v VLAN) PCP() uint8 { return uint8(v >> 13) }

// Encap is OVS_KEY_ATTR_ENCAP: the attributes of the packet inside a VLAN
// tag (nested). Text: encap(eth_type(0x0800),ipv4(...)).
type Encap struct {
	// Key holds the nested attributes.
	Key FlowKey
}

// MPLS is OVS_KEY_ATTR_MPLS: the label stack entries (array of be32 LSEs,
// outermost first). Text: mpls(label=100,tc=3,ttl=64,bos=1).
//
// An empty MPLS is what the kernel puts in an upcall key for a label
// stack cut short before its bottom entry (key_extract leaves
// num_labels_mask at 0, so __ovs_nla_put_key writes a 0-byte attribute).
// It decodes and encodes as that empty attribute and is shown as Open
// vSwitch shows it, mpls((bad key length 0)) (Open vSwitch leaves out the
// final parenthesis; this package keeps it). The kernel refuses it in a
// flow (MegaflowFromFlowKeys gives the flow of such a packet), and the
// text form cannot express it: mpls() parses, as in Open vSwitch, to one
// all-zero label stack entry.
type MPLS []uint32

// IPv4 is OVS_KEY_ATTR_IPV4 (struct ovs_key_ipv4). Text:
// ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,tos=0,ttl=64,frag=no).
type IPv4 struct {
	// Src and Dst are the addresses.
	Src, Dst [4]byte
	// Proto is the IP protocol number.
	Proto uint8
	// TOS is the type-of-service byte (DSCP and ECN).
	TOS uint8
	// TTL is the time to live.
	TTL uint8
	// Frag is FragNone, FragFirst or FragLater.
	Frag uint8
}

// IPv6 is OVS_KEY_ATTR_IPV6 (struct ovs_key_ipv6). Text:
// ipv6(src=::1,dst=::2,label=0,proto=6,tclass=0,hlimit=64,frag=no).
type IPv6 struct {
	// Src and Dst are the addresses.
	Src, Dst [16]byte
	// Label is the flow label (20 bits).
	Label uint32
	// Proto is the last next-header value.
	Proto uint8
	// TClass is the traffic class.
	TClass uint8
	// HLimit is the hop limit.
	HLimit uint8
	// Frag is FragNone, FragFirst or FragLater.
	Frag uint8
}

// TCP is OVS_KEY_ATTR_TCP (struct ovs_key_tcp). Text: tcp(src=80,dst=8080).
type TCP struct {
	// Src and Dst are the ports.
	Src, Dst uint16
}

// UDP is OVS_KEY_ATTR_UDP (struct ovs_key_udp). Text: udp(src=53,dst=53).
type UDP struct {
	// Src and Dst are the ports.
	Src, Dst uint16
}

// SCTP is OVS_KEY_ATTR_SCTP (struct ovs_key_sctp). Text: sctp(src=1,dst=2).
type SCTP struct {
	// Src and Dst are the ports.
	Src, Dst uint16
}

// ICMP is OVS_KEY_ATTR_ICMP (struct ovs_key_icmp). Text: icmp(type=8,code=0).
type ICMP struct {
	// Type and Code are the ICMP type and code.
	Type, Code uint8
}

// ICMPv6 is OVS_KEY_ATTR_ICMPV6 (struct ovs_key_icmpv6). Text:
// icmpv6(type=135,code=0).
type ICMPv6 struct {
	// Type and Code are the ICMPv6 type and code.
	Type, Code uint8
}

// ARP is OVS_KEY_ATTR_ARP (struct ovs_key_arp, 24 bytes with padding).
// Text: arp(sip=1.2.3.4,tip=5.6.7.8,op=1,sha=...,tha=...).
type ARP struct {
	// SIP and TIP are the sender and target protocol addresses.
	SIP, TIP [4]byte
	// Op is the ARP opcode.
	Op uint16
	// SHA and THA are the sender and target hardware addresses.
	SHA, THA [6]byte
}

// ND is OVS_KEY_ATTR_ND (struct ovs_key_nd): IPv6 neighbour discovery.
// Text: nd(target=::3,sll=...,tll=...).
type ND struct {
	// Target is the target address.
	Target [16]byte
	// SLL and TLL are the source and target link-layer address options.
	SLL, TLL [6]byte
}

// NDExtensions is OVS_KEY_ATTR_ND_EXTENSIONS (userspace only; struct
// ovs_key_nd_extensions, 8 bytes with padding). Text:
// nd_ext(nd_reserved=0x0,nd_options_type=2).
type NDExtensions struct {
	// Reserved is the ND message's reserved field (be32).
	Reserved uint32
	// OptionsType is the type of the first ND option.
	OptionsType uint8
}

// CTTupleIPv4 is OVS_KEY_ATTR_CT_ORIG_TUPLE_IPV4 (struct
// ovs_key_ct_tuple_ipv4, 16 bytes with padding). Text:
// ct_tuple4(src=...,dst=...,proto=17,tp_src=1,tp_dst=2).
type CTTupleIPv4 struct {
	// Src and Dst are the original direction's addresses.
	Src, Dst [4]byte
	// SrcPort and DstPort are the transport ports (or ICMP type/code).
	SrcPort, DstPort uint16
	// Proto is the IP protocol.
	Proto uint8
}

// CTTupleIPv6 is OVS_KEY_ATTR_CT_ORIG_TUPLE_IPV6 (struct
// ovs_key_ct_tuple_ipv6, 40 bytes with padding). Text:
// ct_tuple6(src=...,dst=...,proto=6,src_port=1,dst_port=2); the parser also
// accepts tp_src= and tp_dst=, which is what Open vSwitch's parser wants.
type CTTupleIPv6 struct {
	// Src and Dst are the original direction's addresses.
	Src, Dst [16]byte
	// SrcPort and DstPort are the transport ports.
	SrcPort, DstPort uint16
	// Proto is the IP protocol.
	Proto uint8
}

// KeyType implements KeyAttr.
func (Ethernet) KeyType() KeyType { return KeyEthernet }

// KeyType implements KeyAttr.
func (VLAN) KeyType() KeyType { return KeyVLAN }

// KeyType implements KeyAttr.
func (Encap) KeyType() KeyType { return KeyEncap }

// KeyType implements KeyAttr.
func (MPLS) KeyType() KeyType { return KeyMPLS }

// KeyType implements KeyAttr.
func (IPv4) KeyType() KeyType { return KeyIPv4 }

// KeyType implements KeyAttr.
func (IPv6) KeyType() KeyType { return KeyIPv6 }

// KeyType implements KeyAttr.
func (TCP) KeyType() KeyType { return KeyTCP }

// KeyType implements KeyAttr.
func (UDP) KeyType() KeyType { return KeyUDP }

// KeyType implements KeyAttr.
func (SCTP) KeyType() KeyType { return KeySCTP }

// KeyType implements KeyAttr.
func (ICMP) KeyType() KeyType { return KeyICMP }

// KeyType implements KeyAttr.
func (ICMPv6) KeyType() KeyType { return KeyICMPv6 }

// KeyType implements KeyAttr.
func (ARP) KeyType() KeyType { return KeyARP }

// KeyType implements KeyAttr.
func (ND) KeyType() KeyType { return KeyND }

// KeyType implements KeyAttr.
func (NDExtensions) KeyType() KeyType { return KeyNDExtensions }

// KeyType implements KeyAttr.
func (CTTupleIPv4) KeyType() KeyType { return KeyCTOrigTupleV4 }

// KeyType implements KeyAttr.
func (CTTupleIPv6) KeyType() KeyType { return KeyCTOrigTupleV6 }

var be = binary.BigEndian

func (k Ethernet) appendPayload(b []byte) ([]byte, error) {
	return append(append(b, k.Src[:]...), k.Dst[:]...), nil
}
func (k VLAN) appendPayload(b []byte) ([]byte, error) { return be.AppendUint16(b, uint16(k)), nil }
func (k Encap) appendPayload(b []byte) ([]byte, error) {
	return appendKey(b, k.Key)
}
func (k MPLS) appendPayload(b []byte) ([]byte, error) {
	for _, l := range k {
		b = be.AppendUint32(b, l)
	}
	return b, nil
}
func (k IPv4) appendPayload(b []byte) ([]byte, error) {
	b = append(append(b, k.Src[:]...), k.Dst[:]...)
	return append(b, k.Proto, k.TOS, k.TTL, k.Frag), nil
}
func (k IPv6) appendPayload(b []byte) ([]byte, error) {
	b = append(append(b, k.Src[:]...), k.Dst[:]...)
	b = be.AppendUint32(b, k.Label)
	return append(b, k.Proto, k.TClass, k.HLimit, k.Frag), nil
}
func (k TCP) appendPayload(b []byte) ([]byte, error) {
	return be.AppendUint16(be.AppendUint16(b, k.Src), k.Dst), nil
}
func (k UDP) appendPayload(b []byte) ([]byte, error) {
	return be.AppendUint16(be.AppendUint16(b, k.Src), k.Dst), nil
}
func (k SCTP) appendPayload(b []byte) ([]byte, error) {
	return be.AppendUint16(be.AppendUint16(b, k.Src), k.Dst), nil
}
func (k ICMP) appendPayload(b []byte) ([]byte, error)   { return append(b, k.Type, k.Code), nil }
func (k ICMPv6) appendPayload(b []byte) ([]byte, error) { return append(b, k.Type, k.Code), nil }
func (k ARP) appendPayload(b []byte) ([]byte, error) {
	b = append(append(b, k.SIP[:]...), k.TIP[:]...)
	b = be.AppendUint16(b, k.Op)
	return append(append(append(b, k.SHA[:]...), k.THA[:]...), 0, 0), nil
}
func (k ND) appendPayload(b []byte) ([]byte, error) {
	return append(append(append(b, k.Target[:]...), k.SLL[:]...), k.TLL[:]...), nil
}
func (k NDExtensions) appendPayload(b []byte) ([]byte, error) {
	return append(be.AppendUint32(b, k.Reserved), k.OptionsType, 0, 0, 0), nil
}
func (k CTTupleIPv4) appendPayload(b []byte) ([]byte, error) {
	b = append(append(b, k.Src[:]...), k.Dst[:]...)
	b = be.AppendUint16(be.AppendUint16(b, k.SrcPort), k.DstPort)
	return append(b, k.Proto, 0, 0, 0), nil
}
func (k CTTupleIPv6) appendPayload(b []byte) ([]byte, error) {
	b = append(append(b, k.Src[:]...), k.Dst[:]...)
	b = be.AppendUint16(be.AppendUint16(b, k.SrcPort), k.DstPort)
	return append(b, k.Proto, 0, 0, 0), nil
}

func (k Ethernet) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(Ethernet)
	w := newFW(f, mask, ok, verbose)
	w.eth("src", k.Src, m.Src)
	w.eth("dst", k.Dst, m.Dst)
}

func (k VLAN) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(VLAN)
	if !ok {
		m = 0xffff
	}
	w := fw{f: f}
	if verbose || k.VID() != 0 || m.VID() != 0 {
		w.sep()
		w.str("vid=" + strconv.Itoa(int(k.VID())))
		if m.VID() != 0xfff {
			w.str("/0x" + strconv.FormatUint(uint64(m.VID()), 16))
		}
	}
	if verbose || k.PCP() != 0 || m.PCP() != 0 {
		w.sep()
		w.str("pcp=" + strconv.Itoa(int(k.PCP())))
		if m.PCP() != 7 {
			w.str("/0x" + strconv.FormatUint(uint64(m.PCP()), 16))
		}
	}
	if k&VLANCFI == 0 {
		w.sep()
		w.str("cfi=0")
	}
}

func (k Encap) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(Encap)
	if ok && len(m.Key) > 0 && len(k.Key) > 0 {
		formatKey(f, k.Key, m.Key, verbose)
	} else if len(k.Key) > 0 {
		formatKey(f, k.Key, nil, verbose)
	}
}

func (k MPLS) format(f *textBuf, mask KeyAttr, _ bool) {
	if len(k) == 0 {
		// format_odp_key_attr__ checks the key's size before the mask.
		f.WriteString("(bad key length 0)")
		return
	}
	m, ok := mask.(MPLS)
	exact := !ok
	if ok {
		exact = true
		for _, l := range m {
			if l != 0xffffffff {
				exact = false
			}
		}
	}
	if !exact && len(m) != len(k) {
		fmt.Fprintf(f, "(key length %d != mask length %d)", 4*len(k), 4*len(m))
		return
	}
	for i, l := range k {
		if i > 0 {
			f.WriteByte(',')
		}
		if exact {
			fmt.Fprintf(f, "label=%d,tc=%d,ttl=%d,bos=%d", l>>12, l>>9&7, l&0xff, l>>8&1)
		} else {
			ml := m[i]
			fmt.Fprintf(f, "label=%d/0x%x,tc=%d/%x,ttl=%d/0x%x,bos=%d/%x",
				l>>12, ml>>12, l>>9&7, ml>>9&7, l&0xff, ml&0xff, l>>8&1, ml>>8&1)
		}
	}
}

func (k IPv4) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(IPv4)
	w := newFW(f, mask, ok, verbose)
	w.ipv4("src", k.Src, m.Src)
	w.ipv4("dst", k.Dst, m.Dst)
	w.u8u("proto", k.Proto, m.Proto)
	w.u8x("tos", k.TOS, m.TOS)
	w.u8u("ttl", k.TTL, m.TTL)
	w.frag("frag", k.Frag, m.Frag)
}

func (k IPv6) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(IPv6)
	w := newFW(f, mask, ok, verbose)
	w.ipv6("src", k.Src, m.Src)
	w.ipv6("dst", k.Dst, m.Dst)
	w.label("label", k.Label, m.Label)
	w.u8u("proto", k.Proto, m.Proto)
	w.u8x("tclass", k.TClass, m.TClass)
	w.u8u("hlimit", k.HLimit, m.HLimit)
	w.frag("frag", k.Frag, m.Frag)
}

func formatPorts(f *textBuf, src, dst, msrc, mdst uint16, mask KeyAttr, ok, verbose bool) {
	w := newFW(f, mask, ok, verbose)
	w.be16("src", src, msrc)
	w.be16("dst", dst, mdst)
}

func (k TCP) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(TCP)
	formatPorts(f, k.Src, k.Dst, m.Src, m.Dst, mask, ok, verbose)
}

func (k UDP) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(UDP)
	formatPorts(f, k.Src, k.Dst, m.Src, m.Dst, mask, ok, verbose)
}

func (k SCTP) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(SCTP)
	formatPorts(f, k.Src, k.Dst, m.Src, m.Dst, mask, ok, verbose)
}

func (k ICMP) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(ICMP)
	w := newFW(f, mask, ok, verbose)
	w.u8u("type", k.Type, m.Type)
	w.u8u("code", k.Code, m.Code)
}

func (k ICMPv6) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(ICMPv6)
	w := newFW(f, mask, ok, verbose)
	w.u8u("type", k.Type, m.Type)
	w.u8u("code", k.Code, m.Code)
}

func (k ARP) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(ARP)
	w := newFW(f, mask, ok, verbose)
	w.ipv4("sip", k.SIP, m.SIP)
	w.ipv4("tip", k.TIP, m.TIP)
	w.be16("op", k.Op, m.Op)
	w.eth("sha", k.SHA, m.SHA)
	w.eth("tha", k.THA, m.THA)
}

func (k ND) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(ND)
	w := newFW(f, mask, ok, verbose)
	w.ipv6("target", k.Target, m.Target)
	w.eth("sll", k.SLL, m.SLL)
	w.eth("tll", k.TLL, m.TLL)
}

func (k NDExtensions) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(NDExtensions)
	w := newFW(f, mask, ok, verbose)
	// Open vSwitch prints nd_reserved as if it were always exact.
	w.sep()
	w.str("nd_reserved=0x" + strconv.FormatUint(uint64(k.Reserved), 16))
	w.u8u("nd_options_type", k.OptionsType, m.OptionsType)
}

func (k CTTupleIPv4) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(CTTupleIPv4)
	w := newFW(f, mask, ok, verbose)
	w.ipv4("src", k.Src, m.Src)
	w.ipv4("dst", k.Dst, m.Dst)
	w.u8u("proto", k.Proto, m.Proto)
	w.be16("tp_src", k.SrcPort, m.SrcPort)
	w.be16("tp_dst", k.DstPort, m.DstPort)
}

func (k CTTupleIPv6) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(CTTupleIPv6)
	w := newFW(f, mask, ok, verbose)
	w.ipv6("src", k.Src, m.Src)
	w.ipv6("dst", k.Dst, m.Dst)
	w.u8u("proto", k.Proto, m.Proto)
	w.be16("src_port", k.SrcPort, m.SrcPort)
	w.be16("dst_port", k.DstPort, m.DstPort)
}

func init() {
	fixed := func(t KeyType, n int, dec func(d []byte) KeyAttr) {
		keyDecoders[t] = func(a *rawAttr, path string, _ int) (KeyAttr, error) {
			d, err := decodeFixed(a, path, n)
			if err != nil {
				return nil, err
			}
			return dec(d), nil
		}
	}
	fixed(KeyEthernet, 12, func(d []byte) KeyAttr {
		var k Ethernet
		copy(k.Src[:], d)
		copy(k.Dst[:], d[6:])
		return k
	})
	fixed(KeyVLAN, 2, func(d []byte) KeyAttr { return VLAN(be.Uint16(d)) })
	fixed(KeyIPv4, 12, func(d []byte) KeyAttr {
		var k IPv4
		copy(k.Src[:], d)
		copy(k.Dst[:], d[4:])
		k.Proto, k.TOS, k.TTL, k.Frag = d[8], d[9], d[10], d[11]
		return k
	})
	fixed(KeyIPv6, 40, func(d []byte) KeyAttr {
		var k IPv6
		copy(k.Src[:], d)
		copy(k.Dst[:], d[16:])
		k.Label = be.Uint32(d[32:])
		k.Proto, k.TClass, k.HLimit, k.Frag = d[36], d[37], d[38], d[39]
		return k
	})
	fixed(KeyTCP, 4, func(d []byte) KeyAttr { return TCP{be.Uint16(d), be.Uint16(d[2:])} })
	fixed(KeyUDP, 4, func(d []byte) KeyAttr { return UDP{be.Uint16(d), be.Uint16(d[2:])} })
	fixed(KeySCTP, 4, func(d []byte) KeyAttr { return SCTP{be.Uint16(d), be.Uint16(d[2:])} })
	fixed(KeyICMP, 2, func(d []byte) KeyAttr { return ICMP{d[0], d[1]} })
	fixed(KeyICMPv6, 2, func(d []byte) KeyAttr { return ICMPv6{d[0], d[1]} })
	fixed(KeyARP, 24, func(d []byte) KeyAttr {
		var k ARP
		copy(k.SIP[:], d)
		copy(k.TIP[:], d[4:])
		k.Op = be.Uint16(d[8:])
		copy(k.SHA[:], d[10:])
		copy(k.THA[:], d[16:])
		return k
	})
	fixed(KeyND, 28, func(d []byte) KeyAttr {
		var k ND
		copy(k.Target[:], d)
		copy(k.SLL[:], d[16:])
		copy(k.TLL[:], d[22:])
		return k
	})
	fixed(KeyNDExtensions, 8, func(d []byte) KeyAttr { return NDExtensions{be.Uint32(d), d[4]} })
	fixed(KeyCTOrigTupleV4, 16, func(d []byte) KeyAttr {
		var k CTTupleIPv4
		copy(k.Src[:], d)
		copy(k.Dst[:], d[4:])
		k.SrcPort, k.DstPort, k.Proto = be.Uint16(d[8:]), be.Uint16(d[10:]), d[12]
		return k
	})
	fixed(KeyCTOrigTupleV6, 40, func(d []byte) KeyAttr {
		var k CTTupleIPv6
		copy(k.Src[:], d)
		copy(k.Dst[:], d[16:])
		k.SrcPort, k.DstPort, k.Proto = be.Uint16(d[32:]), be.Uint16(d[34:]), d[36]
		return k
	})
	keyDecoders[KeyMPLS] = func(a *rawAttr, path string, _ int) (KeyAttr, error) {
		// Empty is allowed: the kernel's upcall key for a truncated
		// label stack (see MPLS).
		if len(a.Data)%4 != 0 {
			return nil, &DecodeError{Attr: path, Offset: a.Offset, Err: fmt.Errorf("payload is %d bytes, want a multiple of 4", len(a.Data))}
		}
		var k MPLS // nil when empty, as KeyFromFlowKeys makes it
		if len(a.Data) > 0 {
			k = make(MPLS, len(a.Data)/4)
		}
		for i := range k {
			k[i] = be.Uint32(a.Data[4*i:])
		}
		return k, nil
	}
	keyDecoders[KeyEncap] = func(a *rawAttr, path string, depth int) (KeyAttr, error) {
		if depth+1 > maxEncapDepth {
			return nil, &DecodeError{Attr: path, Offset: a.Offset, Err: fmt.Errorf("encap nested more than %d deep", maxEncapDepth)}
		}
		k, err := decodeKey(a.Data, a.Offset+nlaHdrLen, path, depth+1)
		if err != nil {
			return nil, err
		}
		return Encap{Key: k}, nil
	}

	keyParsers["eth"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		var k, m Ethernet
		err := parseFields(sc, "eth", []fieldSpec{{"src", pMAC(&k.Src, &m.Src)}, {"dst", pMAC(&k.Dst, &m.Dst)}})
		return k, m, err
	}
	keyParsers["vlan"] = parseVLAN
	keyParsers["mpls"] = parseMPLS
	keyParsers["encap"] = parseEncap
	keyParsers["ipv4"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		var k, m IPv4
		err := parseFields(sc, "ipv4", []fieldSpec{
			{"src", pIPv4(&k.Src, &m.Src)}, {"dst", pIPv4(&k.Dst, &m.Dst)},
			{"proto", pU8(&k.Proto, &m.Proto)}, {"tos", pU8(&k.TOS, &m.TOS)},
			{"ttl", pU8(&k.TTL, &m.TTL)}, {"frag", pFrag(&k.Frag, &m.Frag)},
		})
		return k, m, err
	}
	keyParsers["ipv6"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		var k, m IPv6
		err := parseFields(sc, "ipv6", []fieldSpec{
			{"src", pIPv6(&k.Src, &m.Src)}, {"dst", pIPv6(&k.Dst, &m.Dst)},
			{"label", pLabel(&k.Label, &m.Label)},
			{"proto", pU8(&k.Proto, &m.Proto)}, {"tclass", pU8(&k.TClass, &m.TClass)},
			{"hlimit", pU8(&k.HLimit, &m.HLimit)}, {"frag", pFrag(&k.Frag, &m.Frag)},
		})
		return k, m, err
	}
	ports := func(name string, mk func(s, d uint16) KeyAttr) keyParser {
		return func(sc *scanner) (KeyAttr, KeyAttr, error) {
			var ks, kd, ms, md uint16
			err := parseFields(sc, name, []fieldSpec{{"src", pU16(&ks, &ms)}, {"dst", pU16(&kd, &md)}})
			return mk(ks, kd), mk(ms, md), err
		}
	}
	keyParsers["tcp"] = ports("tcp", func(s, d uint16) KeyAttr { return TCP{s, d} })
	keyParsers["udp"] = ports("udp", func(s, d uint16) KeyAttr { return UDP{s, d} })
	keyParsers["sctp"] = ports("sctp", func(s, d uint16) KeyAttr { return SCTP{s, d} })
	keyParsers["icmp"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		var k, m ICMP
		err := parseFields(sc, "icmp", []fieldSpec{{"type", pU8(&k.Type, &m.Type)}, {"code", pU8(&k.Code, &m.Code)}})
		return k, m, err
	}
	keyParsers["icmpv6"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		var k, m ICMPv6
		err := parseFields(sc, "icmpv6", []fieldSpec{{"type", pU8(&k.Type, &m.Type)}, {"code", pU8(&k.Code, &m.Code)}})
		return k, m, err
	}
	keyParsers["arp"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		var k, m ARP
		err := parseFields(sc, "arp", []fieldSpec{
			{"sip", pIPv4(&k.SIP, &m.SIP)}, {"tip", pIPv4(&k.TIP, &m.TIP)},
			{"op", pU16(&k.Op, &m.Op)},
			{"sha", pMAC(&k.SHA, &m.SHA)}, {"tha", pMAC(&k.THA, &m.THA)},
		})
		return k, m, err
	}
	keyParsers["nd"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		var k, m ND
		err := parseFields(sc, "nd", []fieldSpec{
			{"target", pIPv6(&k.Target, &m.Target)},
			{"sll", pMAC(&k.SLL, &m.SLL)}, {"tll", pMAC(&k.TLL, &m.TLL)},
		})
		return k, m, err
	}
	keyParsers["nd_ext"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		var k, m NDExtensions
		err := parseFields(sc, "nd_ext", []fieldSpec{
			{"nd_reserved", pU32(&k.Reserved, &m.Reserved)},
			{"nd_options_type", pU8(&k.OptionsType, &m.OptionsType)},
		})
		return k, m, err
	}
	keyParsers["ct_tuple4"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		var k, m CTTupleIPv4
		err := parseFields(sc, "ct_tuple4", []fieldSpec{
			{"src", pIPv4(&k.Src, &m.Src)}, {"dst", pIPv4(&k.Dst, &m.Dst)},
			{"proto", pU8(&k.Proto, &m.Proto)},
			{"tp_src", pU16(&k.SrcPort, &m.SrcPort)}, {"tp_dst", pU16(&k.DstPort, &m.DstPort)},
		})
		return k, m, err
	}
	keyParsers["ct_tuple6"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		var k, m CTTupleIPv6
		err := parseFields(sc, "ct_tuple6", []fieldSpec{
			{"src", pIPv6(&k.Src, &m.Src)}, {"dst", pIPv6(&k.Dst, &m.Dst)},
			{"proto", pU8(&k.Proto, &m.Proto)},
			{"tp_src", pU16(&k.SrcPort, &m.SrcPort)}, {"tp_dst", pU16(&k.DstPort, &m.DstPort)},
			{"src_port", pU16(&k.SrcPort, &m.SrcPort)}, {"dst_port", pU16(&k.DstPort, &m.DstPort)},
		})
		return k, m, err
	}
}

// pLabel parses an IPv6 flow label (20 bits; mask 0xfffff when absent).
func pLabel(k, m *uint32) func(*scanner) error {
	return func(sc *scanner) error {
		start := sc.pos
		v, err := sc.cnum(32)
		if err != nil {
			return err
		}
		if v&^0xfffff != 0 {
			return sc.errorAt(start, "IPv6 flow label %#x exceeds 20 bits", v)
		}
		*k, *m = uint32(v), 0xfffff
		if has, err := sc.maskSep(); err != nil || !has {
			return err
		}
		start = sc.pos
		v, err = sc.cnum(32)
		if err != nil {
			return err
		}
		if v&^0xfffff != 0 {
			return sc.errorAt(start, "IPv6 flow label mask %#x exceeds 20 bits", v)
		}
		*m = uint32(v)
		return nil
	}
}

// bitField parses a bits-wide value at shift into k, and its mask into m
// (all the field's bits when no mask is given).
func bitField(sc *scanner, k, m *uint32, bits, shift uint, what string) error {
	start := sc.pos
	v, err := sc.cnum(32)
	if err != nil {
		return err
	}
	field := uint32(1)<<bits - 1
	if v > uint64(field) {
		return sc.errorAt(start, "%s %d does not fit in %d bits", what, v, bits)
	}
	*k = *k&^(field<<shift) | uint32(v)<<shift
	has, err := sc.maskSep()
	if err != nil {
		return err
	}
	if !has {
		*m |= field << shift
		return nil
	}
	start = sc.pos
	if v, err = sc.cnum(32); err != nil {
		return err
	}
	if v > uint64(field) {
		return sc.errorAt(start, "%s mask %#x does not fit in %d bits", what, v, bits)
	}
	*m = *m&^(field<<shift) | uint32(v)<<shift
	return nil
}

func parseVLAN(sc *scanner) (KeyAttr, KeyAttr, error) {
	k, m := uint32(VLANCFI), uint32(VLANCFI)
	err := parseFields(sc, "vlan", []fieldSpec{
		{"vid", func(sc *scanner) error { return bitField(sc, &k, &m, 12, 0, "vid") }},
		{"pcp", func(sc *scanner) error { return bitField(sc, &k, &m, 3, 13, "pcp") }},
		{"cfi", func(sc *scanner) error { return bitField(sc, &k, &m, 1, 12, "cfi") }},
	})
	return VLAN(k), VLAN(m), err
}

// maxMPLSLabels is how many label stack entries the text form takes
// (Open vSwitch's FLOW_MAX_MPLS_LABELS).
const maxMPLSLabels = 3

func parseMPLS(sc *scanner) (KeyAttr, KeyAttr, error) {
	var k, m [maxMPLSLabels]uint32
	idx, seen := 0, 0
	fields := []struct {
		name        string
		bits, shift uint
	}{{"label", 20, 12}, {"tc", 3, 9}, {"ttl", 8, 0}, {"bos", 1, 8}}
	any := false
	for sc.peek() != ')' {
		start := sc.pos
		matched := false
		for i, fd := range fields {
			if !strings.HasPrefix(sc.rest(), fd.name+"=") {
				continue
			}
			if seen&(1<<i) != 0 {
				seen = 0
				idx++
				if idx == maxMPLSLabels {
					return nil, nil, sc.errorAt(start, "more than %d MPLS labels", maxMPLSLabels)
				}
			}
			sc.pos += len(fd.name) + 1
			if err := bitField(sc, &k[idx], &m[idx], fd.bits, fd.shift, fd.name); err != nil {
				return nil, nil, err
			}
			seen |= 1 << i
			matched, any = true, true
			break
		}
		if !matched {
			return nil, nil, sc.errorAt(start, "unknown field in mpls(); expected label= tc= ttl= bos=")
		}
		if !sc.accept(",") && sc.peek() != ')' {
			return nil, nil, sc.errorf("expected ',' or ')' in mpls()")
		}
	}
	_ = any
	n := idx + 1
	return MPLS(append([]uint32(nil), k[:n]...)), MPLS(append([]uint32(nil), m[:n]...)), nil
}

func parseEncap(sc *scanner) (KeyAttr, KeyAttr, error) {
	if sc.depth >= maxEncapDepth {
		return nil, nil, sc.errorf("encap() nested more than %d deep", maxEncapDepth)
	}
	sc.depth++
	defer func() { sc.depth-- }()
	k, m, err := parseKeyList(sc)
	if err != nil {
		return nil, nil, err
	}
	return Encap{Key: k}, Encap{Key: m}, nil
}
