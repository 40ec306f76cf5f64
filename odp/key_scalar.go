package odp

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// Priority is OVS_KEY_ATTR_PRIORITY, the packet's skb->priority (u32,
// native byte order). Text: skb_priority(0x1234).
type Priority uint32

// InPort is OVS_KEY_ATTR_IN_PORT, the datapath port the packet came in on
// (u32, native byte order). Text: in_port(1).
type InPort uint32

// SkbMark is OVS_KEY_ATTR_SKB_MARK, the packet's skb->mark (u32, native).
// Text: skb_mark(0x1234).
type SkbMark uint32

// RecircID is OVS_KEY_ATTR_RECIRC_ID, the recirculation id (u32, native).
// Text: recirc_id(0). Its mask is always exact in the text syntax.
type RecircID uint32

// DPHash is OVS_KEY_ATTR_DP_HASH, the datapath-computed hash (u32, native
// byte order). Text: dp_hash(0x1).
type DPHash uint32

// CTState is OVS_KEY_ATTR_CT_STATE, a bit set of CTState* flags (u32,
// native). Text: ct_state(new|trk) exact, ct_state(+new-est) masked, or a
// number.
type CTState uint32

// The OVS_CS_F_* conntrack state bits of CTState.
const (
	CTStateNew         CTState = 0x01
	CTStateEstablished CTState = 0x02
	CTStateRelated     CTState = 0x04
	CTStateReplyDir    CTState = 0x08
	CTStateInvalid     CTState = 0x10
	CTStateTracked     CTState = 0x20
	CTStateSrcNAT      CTState = 0x40
	CTStateDstNAT      CTState = 0x80
)

// CTZone is OVS_KEY_ATTR_CT_ZONE, the conntrack zone (u16, native).
// Text: ct_zone(0x5).
type CTZone uint16

// CTMark is OVS_KEY_ATTR_CT_MARK, the conntrack mark (u32, native). Text:
// ct_mark(0x12345678).
type CTMark uint32

// CTLabels is OVS_KEY_ATTR_CT_LABELS, the 128-bit conntrack labels, held
// in wire order. Open vSwitch treats them as a 128-bit number stored in
// host byte order and prints that number in hex: ct_label(0x1234...).
type CTLabels [16]byte

// Ethertype is OVS_KEY_ATTR_ETHERTYPE (be16). Text: eth_type(0x0800).
type Ethertype uint16

// TCPFlags is OVS_KEY_ATTR_TCP_FLAGS, the TCP flags (be16, low 12 bits
// significant). Text: tcp_flags(syn|ack) exact, tcp_flags(+syn-ack) masked.
type TCPFlags uint16

// The TCP flag bits of TCPFlags.
const (
	TCPFlagFIN TCPFlags = 0x001
	TCPFlagSYN TCPFlags = 0x002
	TCPFlagRST TCPFlags = 0x004
	TCPFlagPSH TCPFlags = 0x008
	TCPFlagACK TCPFlags = 0x010
	TCPFlagURG TCPFlags = 0x020
	TCPFlagECE TCPFlags = 0x040
	TCPFlagCWR TCPFlags = 0x080
	TCPFlagNS  TCPFlags = 0x100
)

// PacketType is OVS_KEY_ATTR_PACKET_TYPE (userspace only): a be32 of the
// namespace (high 16 bits) and the type within it (low 16 bits). Text:
// packet_type(ns=0,id=0).
type PacketType struct {
	// Namespace is the packet type namespace (0: Ethernet, 1: Ethertype).
	Namespace uint16
	// Type is the type within the namespace.
	Type uint16
}

// IPv6ExtHdrs is OVS_KEY_ATTR_IPV6_EXTHDRS (kernel 6.x, type 32): a bit
// set of the IPv6 extension headers seen (struct ovs_key_ipv6_exthdrs, u16
// native). Open vSwitch 3.1 does not know it and prints key32(HEX); we
// print ipv6_exthdrs(0x41) and parse both forms.
type IPv6ExtHdrs uint16

// KeyType implements KeyAttr.
func (Priority) KeyType() KeyType { return KeyPriority }

// KeyType implements KeyAttr.
func (InPort) KeyType() KeyType { return KeyInPort }

// KeyType implements KeyAttr.
func (SkbMark) KeyType() KeyType { return KeySkbMark }

// KeyType implements KeyAttr.
func (RecircID) KeyType() KeyType { return KeyRecircID }

// KeyType implements KeyAttr.
func (DPHash) KeyType() KeyType { return KeyDPHash }

// KeyType implements KeyAttr.
func (CTState) KeyType() KeyType { return KeyCTState }

// KeyType implements KeyAttr.
func (CTZone) KeyType() KeyType { return KeyCTZone }

// KeyType implements KeyAttr.
func (CTMark) KeyType() KeyType { return KeyCTMark }

// KeyType implements KeyAttr.
func (CTLabels) KeyType() KeyType { return KeyCTLabels }

// KeyType implements KeyAttr.
func (Ethertype) KeyType() KeyType { return KeyEthertype }

// KeyType implements KeyAttr.
func (TCPFlags) KeyType() KeyType { return KeyTCPFlags }

// KeyType implements KeyAttr.
func (PacketType) KeyType() KeyType { return KeyPacketType }

// KeyType implements KeyAttr.
func (IPv6ExtHdrs) KeyType() KeyType { return KeyIPv6ExtHdrs }

func (v Priority) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, uint32(v)), nil
}
func (v InPort) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, uint32(v)), nil
}
func (v SkbMark) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, uint32(v)), nil
}
func (v RecircID) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, uint32(v)), nil
}
func (v DPHash) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, uint32(v)), nil
}
func (v CTState) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, uint32(v)), nil
}
func (v CTZone) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint16(b, uint16(v)), nil
}
func (v CTMark) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, uint32(v)), nil
}
func (v CTLabels) appendPayload(b []byte) ([]byte, error) { return append(b, v[:]...), nil }
func (v Ethertype) appendPayload(b []byte) ([]byte, error) {
	return binary.BigEndian.AppendUint16(b, uint16(v)), nil
}
func (v TCPFlags) appendPayload(b []byte) ([]byte, error) {
	return binary.BigEndian.AppendUint16(b, uint16(v)), nil
}
func (v PacketType) appendPayload(b []byte) ([]byte, error) {
	return binary.BigEndian.AppendUint32(b, uint32(v.Namespace)<<16|uint32(v.Type)), nil
}
func (v IPv6ExtHdrs) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint16(b, uint16(v)), nil
}

// formatU32 is the skb_priority/skb_mark/dp_hash/recirc_id form.
func formatU32(f *textBuf, v uint32, mask KeyAttr, m uint32) {
	f.WriteString(cx(uint64(v)))
	if mask != nil && m != ^uint32(0) {
		f.WriteByte('/')
		f.WriteString(cx(uint64(m)))
	}
}

func (v Priority) format(f *textBuf, mask KeyAttr, _ bool) {
	m, _ := mask.(Priority)
	formatU32(f, uint32(v), maskOf[Priority](mask), uint32(m))
}
func (v SkbMark) format(f *textBuf, mask KeyAttr, _ bool) {
	m, _ := mask.(SkbMark)
	formatU32(f, uint32(v), maskOf[SkbMark](mask), uint32(m))
}
func (v DPHash) format(f *textBuf, mask KeyAttr, _ bool) {
	m, _ := mask.(DPHash)
	formatU32(f, uint32(v), maskOf[DPHash](mask), uint32(m))
}
func (v RecircID) format(f *textBuf, mask KeyAttr, _ bool) {
	m, _ := mask.(RecircID)
	formatU32(f, uint32(v), maskOf[RecircID](mask), uint32(m))
}

// maskOf returns mask when it is a T, else nil (an exact match).
func maskOf[T KeyAttr](mask KeyAttr) KeyAttr {
	if _, ok := mask.(T); ok {
		return mask
	}
	return nil
}

func (v InPort) format(f *textBuf, mask KeyAttr, _ bool) {
	m, ok := mask.(InPort)
	f.writePort(uint32(v))
	if ok && m != 0xffffffff {
		f.WriteByte('/')
		f.WriteString(cx(uint64(m)))
	}
}

func (v CTMark) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(CTMark)
	if verbose || ok && m != 0 {
		formatU32(f, uint32(v), maskOf[CTMark](mask), uint32(m))
	}
}

func (v CTZone) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(CTZone)
	if verbose || ok && m != 0 {
		f.WriteString(cx(uint64(v)))
		if ok && m != 0xffff {
			f.WriteByte('/')
			f.WriteString(cx(uint64(m)))
		}
	}
}

func ctStateName(bit uint32) string {
	switch CTState(bit) {
	case CTStateReplyDir:
		return "rpl"
	case CTStateTracked:
		return "trk"
	case CTStateNew:
		return "new"
	case CTStateEstablished:
		return "est"
	case CTStateRelated:
		return "rel"
	case CTStateInvalid:
		return "inv"
	case CTStateSrcNAT:
		return "snat"
	case CTStateDstNAT:
		return "dnat"
	}
	return ""
}

func (v CTState) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(CTState)
	exact := !ok || m == 0xffffffff
	switch {
	case verbose:
		f.WriteString(cx(uint64(v)))
		if !exact {
			f.WriteByte('/')
			f.WriteString(cx(uint64(m)))
		}
	case !exact:
		formatFlagsMasked(f, ctStateName, uint32(v), uint32(m), 0xffffffff)
	default:
		formatFlags(f, ctStateName, uint32(v), '|')
	}
}

// u128 converts CT labels between wire order and the number Open vSwitch
// prints (the wire holds it in host byte order).
func (v CTLabels) u128() [16]byte {
	var out [16]byte
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 { // little endian
		for i := range v {
			out[i] = v[15-i]
		}
		return out
	}
	return v
}

func (v CTLabels) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(CTLabels)
	if verbose || ok && m != (CTLabels{}) {
		n := v.u128()
		writeCHex(f, n[:])
		if ok && !allOnes(m[:]) {
			f.WriteByte('/')
			n = m.u128()
			writeCHex(f, n[:])
		}
	}
}

func (v Ethertype) format(f *textBuf, mask KeyAttr, _ bool) {
	m, ok := mask.(Ethertype)
	f.WriteString("0x" + hex04(uint16(v)))
	if ok && m != 0xffff {
		f.WriteString("/0x" + hex04(uint16(m)))
	}
}

func hex04(v uint16) string {
	s := strconv.FormatUint(uint64(v), 16)
	return strings.Repeat("0", 4-len(s)) + s
}

func tcpFlagName(bit uint32) string {
	switch bit {
	case 0x001:
		return "fin"
	case 0x002:
		return "syn"
	case 0x004:
		return "rst"
	case 0x008:
		return "psh"
	case 0x010:
		return "ack"
	case 0x020:
		return "urg"
	case 0x040:
		return "ece"
	case 0x080:
		return "cwr"
	case 0x100:
		return "ns"
	case 0x200:
		return "[200]"
	case 0x400:
		return "[400]"
	case 0x800:
		return "[800]"
	}
	return ""
}

func (v TCPFlags) format(f *textBuf, mask KeyAttr, _ bool) {
	m, ok := mask.(TCPFlags)
	if ok && m&0x0fff != 0x0fff {
		formatFlagsMasked(f, tcpFlagName, uint32(v), uint32(m)&0x0fff, 0x0fff)
		return
	}
	formatFlags(f, tcpFlagName, uint32(v), '|')
}

func (v PacketType) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(PacketType)
	if !ok {
		m = PacketType{0xffff, 0xffff}
	}
	w := fw{f: f, verbose: verbose, masked: true}
	w.be16("ns", v.Namespace, m.Namespace)
	w.be16x("id", v.Type, m.Type)
}

func (v IPv6ExtHdrs) format(f *textBuf, mask KeyAttr, _ bool) {
	m, ok := mask.(IPv6ExtHdrs)
	f.WriteString(cx(uint64(v)))
	if ok && m != 0xffff {
		f.WriteByte('/')
		f.WriteString(cx(uint64(m)))
	}
}

// decodeFixed checks the payload length of a fixed-size attribute.
func decodeFixed(a *rawAttr, path string, n int) ([]byte, error) {
	if err := wantLen(a, path, n); err != nil {
		return nil, err
	}
	return a.Data, nil
}

// parseSingle parses a single masked number "N[/M]" of bits bits.
func parseSingle(sc *scanner, bits int) (v, m uint64, err error) {
	return sc.maskedNum(bits)
}

func init() {
	u32 := func(mk func(uint32) KeyAttr) keyDecoder {
		return func(a *rawAttr, path string, _ int) (KeyAttr, error) {
			d, err := decodeFixed(a, path, 4)
			if err != nil {
				return nil, err
			}
			return mk(binary.NativeEndian.Uint32(d)), nil
		}
	}
	keyDecoders[KeyPriority] = u32(func(v uint32) KeyAttr { return Priority(v) })
	keyDecoders[KeyInPort] = u32(func(v uint32) KeyAttr { return InPort(v) })
	keyDecoders[KeySkbMark] = u32(func(v uint32) KeyAttr { return SkbMark(v) })
	keyDecoders[KeyRecircID] = u32(func(v uint32) KeyAttr { return RecircID(v) })
	keyDecoders[KeyDPHash] = u32(func(v uint32) KeyAttr { return DPHash(v) })
	keyDecoders[KeyCTState] = u32(func(v uint32) KeyAttr { return CTState(v) })
	keyDecoders[KeyCTMark] = u32(func(v uint32) KeyAttr { return CTMark(v) })
	keyDecoders[KeyCTZone] = func(a *rawAttr, path string, _ int) (KeyAttr, error) {
		d, err := decodeFixed(a, path, 2)
		if err != nil {
			return nil, err
		}
		return CTZone(binary.NativeEndian.Uint16(d)), nil
	}
	keyDecoders[KeyIPv6ExtHdrs] = func(a *rawAttr, path string, _ int) (KeyAttr, error) {
		d, err := decodeFixed(a, path, 2)
		if err != nil {
			return nil, err
		}
		return IPv6ExtHdrs(binary.NativeEndian.Uint16(d)), nil
	}
	keyDecoders[KeyCTLabels] = func(a *rawAttr, path string, _ int) (KeyAttr, error) {
		d, err := decodeFixed(a, path, 16)
		if err != nil {
			return nil, err
		}
		return CTLabels(d), nil
	}
	keyDecoders[KeyEthertype] = func(a *rawAttr, path string, _ int) (KeyAttr, error) {
		d, err := decodeFixed(a, path, 2)
		if err != nil {
			return nil, err
		}
		return Ethertype(binary.BigEndian.Uint16(d)), nil
	}
	keyDecoders[KeyTCPFlags] = func(a *rawAttr, path string, _ int) (KeyAttr, error) {
		d, err := decodeFixed(a, path, 2)
		if err != nil {
			return nil, err
		}
		return TCPFlags(binary.BigEndian.Uint16(d)), nil
	}
	keyDecoders[KeyPacketType] = func(a *rawAttr, path string, _ int) (KeyAttr, error) {
		d, err := decodeFixed(a, path, 4)
		if err != nil {
			return nil, err
		}
		return PacketType{binary.BigEndian.Uint16(d), binary.BigEndian.Uint16(d[2:])}, nil
	}

	p32 := func(mk func(uint32) KeyAttr) keyParser {
		return func(sc *scanner) (KeyAttr, KeyAttr, error) {
			v, m, err := parseSingle(sc, 32)
			return mk(uint32(v)), mk(uint32(m)), err
		}
	}
	keyParsers["skb_priority"] = p32(func(v uint32) KeyAttr { return Priority(v) })
	keyParsers["skb_mark"] = p32(func(v uint32) KeyAttr { return SkbMark(v) })
	keyParsers["dp_hash"] = p32(func(v uint32) KeyAttr { return DPHash(v) })
	inPortNum := p32(func(v uint32) KeyAttr { return InPort(v) })
	keyParsers["in_port"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		if c := sc.peek(); sc.portNumber != nil && !(c >= '0' && c <= '9') {
			start := sc.pos
			name := sc.token(")")
			n, ok := sc.portNumber(name)
			if !ok {
				return nil, nil, sc.errorAt(start, "no port named %q", name)
			}
			return InPort(n), InPort(0xffffffff), nil
		}
		return inPortNum(sc)
	}
	keyParsers["ct_mark"] = p32(func(v uint32) KeyAttr { return CTMark(v) })
	keyParsers["recirc_id"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		// Open vSwitch scans recirc_id fully masked: no "/mask".
		v, err := sc.cnum(32)
		return RecircID(v), RecircID(0xffffffff), err
	}
	keyParsers["ct_zone"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		v, m, err := parseSingle(sc, 16)
		return CTZone(v), CTZone(m), err
	}
	keyParsers["eth_type"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		v, m, err := parseSingle(sc, 16)
		return Ethertype(v), Ethertype(m), err
	}
	keyParsers["ipv6_exthdrs"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		v, m, err := parseSingle(sc, 16)
		return IPv6ExtHdrs(v), IPv6ExtHdrs(m), err
	}
	keyParsers["ct_state"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		v, m, err := parseFlags(sc, ctStateName, 0xff, "ct_state")
		return CTState(v), CTState(m), err
	}
	keyParsers["tcp_flags"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		v, m, err := parseFlags(sc, tcpFlagName, 0x0fff, "tcp_flags")
		if err == nil && m == 0xffffffff {
			m = 0xffff
		}
		return TCPFlags(v), TCPFlags(m), err
	}
	keyParsers["ct_label"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		var n, mn [16]byte
		if err := sc.intString(n[:]); err != nil {
			return nil, nil, err
		}
		for i := range mn {
			mn[i] = 0xff
		}
		if has, err := sc.maskSep(); err != nil {
			return nil, nil, err
		} else if has {
			if err := sc.intString(mn[:]); err != nil {
				return nil, nil, err
			}
		}
		return CTLabels(CTLabels(n).u128()), CTLabels(CTLabels(mn).u128()), nil
	}
	keyParsers["packet_type"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		var k, m PacketType
		err := parseFields(sc, "packet_type", []fieldSpec{
			{"ns", pU16(&k.Namespace, &m.Namespace)},
			{"id", pU16(&k.Type, &m.Type)},
		})
		return k, m, err
	}
}
