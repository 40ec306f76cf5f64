package odp

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// The OVS_TUNNEL_KEY_ATTR_* nested attribute types of OVS_KEY_ATTR_TUNNEL.
const (
	tunID         = 0
	tunIPv4Src    = 1
	tunIPv4Dst    = 2
	tunTOS        = 3
	tunTTL        = 4
	tunDF         = 5
	tunCSUM       = 6
	tunOAM        = 7
	tunGeneveOpts = 8
	tunTPSrc      = 9
	tunTPDst      = 10
	tunVXLANOpts  = 11
	tunIPv6Src    = 12
	tunIPv6Dst    = 13
	tunPad        = 14
	tunERSPANOpts = 15
	tunGTPUOpts   = 16
	vxlanExtGBP   = 1
)

// TunnelFields says which optional OVS_TUNNEL_KEY_ATTR_* attributes a
// Tunnel carries.
type TunnelFields uint32

// The Tunnel fields.
const (
	TunnelHasID TunnelFields = 1 << iota
	TunnelHasIPv4Src
	TunnelHasIPv4Dst
	TunnelHasIPv6Src
	TunnelHasIPv6Dst
	TunnelHasTOS
	TunnelHasTTL
	TunnelHasTPSrc
	TunnelHasTPDst
	TunnelHasGeneve
	TunnelHasVXLAN
	TunnelHasERSPAN
	TunnelHasGTPU
)

// TunnelFlags are the tunnel flag attributes, numbered as Open vSwitch's
// FLOW_TNL_F_* (TunnelKey is implied by the presence of the tunnel id and
// is not an attribute of its own).
type TunnelFlags uint16

// The tunnel flags.
const (
	TunnelOAM  TunnelFlags = 1 << 0
	TunnelDF   TunnelFlags = 1 << 1
	TunnelCSUM TunnelFlags = 1 << 2
	TunnelKey  TunnelFlags = 1 << 3
)

// ERSPANOpts is struct erspan_metadata (OVS_TUNNEL_KEY_ATTR_ERSPAN_OPTS,
// 12 bytes): a native-endian version and 8 bytes holding either the v1
// index (be32) or the v2 fields. Text: erspan(ver=1,idx=0x7) or
// erspan(ver=2,dir=1,hwid=0x7), as Open vSwitch's odp-util.c: hwid there
// is struct erspan_md2's 4-bit hwid field only (not hwid_upper), and v2's
// other fields are not shown.
type ERSPANOpts struct {
	// Version is 1 or 2.
	Version uint32
	// MD is the version-specific metadata as on the wire.
	MD [8]byte
}

// Index is the version 1 index.
func (o ERSPANOpts) Index() uint32 { return binary.BigEndian.Uint32(o.MD[:]) }

// SetIndex sets the version 1 index.
func (o *ERSPANOpts) SetIndex(v uint32) { binary.BigEndian.PutUint32(o.MD[:], v) }

// Dir is the version 2 direction bit.
func (o ERSPANOpts) Dir() uint8 { return o.MD[7] >> 3 & 1 }

// HWID is the version 2 hardware id, all 6 bits (hwid_upper and hwid,
// as the kernel's get_hwid).
func (o ERSPANOpts) HWID() uint8 { return o.MD[6]&3<<4 | o.MD[7]>>4 }

// hwidLow is the 4-bit hwid field of struct erspan_md2 (HWID without
// hwid_upper), the one Open vSwitch's text shows.
func (o ERSPANOpts) hwidLow() uint8 { return o.MD[7] >> 4 }

// setHWIDLow sets the 4-bit hwid field to the low 4 bits of h.
func (o *ERSPANOpts) setHWIDLow(h uint8) { o.MD[7] = o.MD[7]&^0xf0 | (h&0xf)<<4 }

// SetDir sets the version 2 direction bit (the low bit of d).
func (o *ERSPANOpts) SetDir(d uint8) { o.MD[7] = o.MD[7]&^0x08 | (d&1)<<3 }

// SetHWID sets the version 2 hardware id (the low 6 bits of h).
func (o *ERSPANOpts) SetHWID(h uint8) {
	o.MD[6] = o.MD[6]&^3 | h>>4&3
	o.MD[7] = o.MD[7]&^0xf0 | (h&0xf)<<4
}

// GTPUOpts is struct gtpu_metadata (OVS_TUNNEL_KEY_ATTR_GTPU_OPTS, used by
// the userspace datapath only). Text: gtpu(flags=0x30,msgtype=255).
type GTPUOpts struct {
	// Flags are the GTP-U header flags.
	Flags uint8
	// MsgType is the GTP-U message type.
	MsgType uint8
}

// Tunnel is OVS_KEY_ATTR_TUNNEL: the outer-header metadata of a packet
// received from (or sent to) a tunnel, as nested OVS_TUNNEL_KEY_ATTR_*
// attributes. Present says which optional attributes are there; Flags are
// the flag attributes. In a mask, an absent attribute is a zero mask.
//
// Text: tunnel(tun_id=0x7f10354,src=10.10.10.10,dst=20.20.20.20,ttl=64,
// flags(csum|key)), with ipv6_src=, ipv6_dst=, tos=, tp_src=, tp_dst=,
// geneve(...), vxlan(gbp(id=..,flags=..)), erspan(...) and gtpu(...).
type Tunnel struct {
	// Present says which of the fields below are attributes.
	Present TunnelFields
	// ID is the tunnel id (be64; VNI, GRE key, ...).
	ID uint64
	// IPv4Src and IPv4Dst are the outer IPv4 addresses.
	IPv4Src, IPv4Dst [4]byte
	// IPv6Src and IPv6Dst are the outer IPv6 addresses.
	IPv6Src, IPv6Dst [16]byte
	// TOS and TTL are the outer IP TOS and TTL.
	TOS, TTL uint8
	// Flags are the DF, CSUM and OAM flag attributes.
	Flags TunnelFlags
	// TPSrc and TPDst are the outer transport ports (be16).
	TPSrc, TPDst uint16
	// Geneve holds the Geneve options as on the wire (TLVs).
	Geneve []byte
	// VXLANGBP is the VXLAN group-based-policy extension (OVS_VXLAN_EXT_GBP,
	// u32 native: flags in bits 16-23, policy id in bits 0-15).
	VXLANGBP uint32
	// ERSPAN holds the ERSPAN metadata.
	ERSPAN ERSPANOpts
	// GTPU holds the GTP-U metadata (userspace datapath only).
	GTPU GTPUOpts
	// Unknown holds nested attributes this package does not know, kept as
	// they came.
	Unknown []UnknownKey
}

// KeyType implements KeyAttr.
func (Tunnel) KeyType() KeyType { return KeyTunnel }

func (t Tunnel) has(f TunnelFields) bool { return t.Present&f != 0 }

func (t Tunnel) appendPayload(b []byte) ([]byte, error) {
	if t.has(TunnelHasID) {
		b = appendBE64(b, tunID, t.ID)
	}
	if t.has(TunnelHasIPv4Src) {
		b = appendAttr(b, tunIPv4Src, t.IPv4Src[:])
	}
	if t.has(TunnelHasIPv4Dst) {
		b = appendAttr(b, tunIPv4Dst, t.IPv4Dst[:])
	}
	if t.has(TunnelHasIPv6Src) {
		b = appendAttr(b, tunIPv6Src, t.IPv6Src[:])
	}
	if t.has(TunnelHasIPv6Dst) {
		b = appendAttr(b, tunIPv6Dst, t.IPv6Dst[:])
	}
	if t.has(TunnelHasTOS) {
		b = appendU8(b, tunTOS, t.TOS)
	}
	if t.has(TunnelHasTTL) {
		b = appendU8(b, tunTTL, t.TTL)
	}
	if t.Flags&TunnelDF != 0 {
		b = appendAttr(b, tunDF, nil)
	}
	if t.Flags&TunnelCSUM != 0 {
		b = appendAttr(b, tunCSUM, nil)
	}
	if t.has(TunnelHasTPSrc) {
		b = appendBE16(b, tunTPSrc, t.TPSrc)
	}
	if t.has(TunnelHasTPDst) {
		b = appendBE16(b, tunTPDst, t.TPDst)
	}
	if t.Flags&TunnelOAM != 0 {
		b = appendAttr(b, tunOAM, nil)
	}
	if t.has(TunnelHasGeneve) {
		if len(t.Geneve) > maxAttrLen {
			return b, fmt.Errorf("geneve options of %d bytes are too long", len(t.Geneve))
		}
		b = appendAttr(b, tunGeneveOpts, t.Geneve)
	}
	if t.has(TunnelHasVXLAN) {
		var start int
		b, start = beginNested(b, tunVXLANOpts)
		b = appendU32(b, vxlanExtGBP, t.VXLANGBP)
		b, _ = endNested(b, start)
	}
	if t.has(TunnelHasERSPAN) {
		b = appendAttrHeader(b, tunERSPANOpts, 12)
		b = binary.NativeEndian.AppendUint32(b, t.ERSPAN.Version)
		b = append(b, t.ERSPAN.MD[:]...)
	}
	if t.has(TunnelHasGTPU) {
		b = appendAttr(b, tunGTPUOpts, []byte{t.GTPU.Flags, t.GTPU.MsgType})
	}
	for _, u := range t.Unknown {
		if len(u.Data) > maxAttrLen {
			return b, fmt.Errorf("tunnel attribute %d of %d bytes is too long", u.Type, len(u.Data))
		}
		b = appendAttr(b, uint16(u.Type), u.Data)
	}
	return b, nil
}

func tunFlagName(bit uint32) string {
	switch TunnelFlags(bit) {
	case TunnelDF:
		return "df"
	case TunnelCSUM:
		return "csum"
	case TunnelKey:
		return "key"
	case TunnelOAM:
		return "oam"
	}
	return ""
}

func (t Tunnel) format(f *textBuf, mask KeyAttr, verbose bool) {
	m, ok := mask.(Tunnel)
	w := newFW(f, mask, ok, verbose)
	if t.has(TunnelHasID) {
		w.be64("tun_id", t.ID, m.ID)
	}
	if t.has(TunnelHasIPv4Src) {
		w.ipv4("src", t.IPv4Src, m.IPv4Src)
	}
	if t.has(TunnelHasIPv4Dst) {
		w.ipv4("dst", t.IPv4Dst, m.IPv4Dst)
	}
	if t.has(TunnelHasIPv6Src) {
		w.ipv6("ipv6_src", t.IPv6Src, m.IPv6Src)
	}
	if t.has(TunnelHasIPv6Dst) {
		w.ipv6("ipv6_dst", t.IPv6Dst, m.IPv6Dst)
	}
	if t.has(TunnelHasTOS) {
		w.u8x("tos", t.TOS, m.TOS)
	}
	if t.has(TunnelHasTTL) {
		w.u8u("ttl", t.TTL, m.TTL)
	}
	if t.has(TunnelHasTPSrc) {
		w.be16("tp_src", t.TPSrc, m.TPSrc)
	}
	if t.has(TunnelHasTPDst) {
		w.be16("tp_dst", t.TPDst, m.TPDst)
	}
	if t.has(TunnelHasGeneve) {
		w.sep()
		w.str("geneve(")
		var mg []byte
		if ok {
			mg = m.Geneve
			if !m.has(TunnelHasGeneve) {
				mg = make([]byte, len(t.Geneve))
			}
		}
		formatGeneve(f, t.Geneve, mg, ok, verbose)
		w.str(")")
	}
	if t.has(TunnelHasVXLAN) {
		w.sep()
		w.str("vxlan(gbp(")
		g := newFW(f, mask, ok, verbose)
		g.be16("id", uint16(t.VXLANGBP), uint16(m.VXLANGBP))
		g.u8x("flags", uint8(t.VXLANGBP>>16), uint8(m.VXLANGBP>>16))
		w.str("))")
	}
	if t.has(TunnelHasERSPAN) {
		w.sep()
		w.str("erspan(")
		e := newFW(f, mask, ok, verbose)
		e.u8u("ver", uint8(t.ERSPAN.Version), uint8(m.ERSPAN.Version))
		switch t.ERSPAN.Version {
		case 1:
			e.sep()
			e.str("idx=" + cx(uint64(t.ERSPAN.Index())))
			if ok {
				e.str("/" + cx(uint64(m.ERSPAN.Index())))
			}
		case 2:
			e.u8u("dir", t.ERSPAN.Dir(), m.ERSPAN.Dir())
			// format_odp_tun_erspan_opt prints the 4-bit hwid field
			// of struct erspan_md2, not hwid_upper.
			e.u8x("hwid", t.ERSPAN.hwidLow(), m.ERSPAN.hwidLow())
		}
		w.str(")")
	}
	if t.has(TunnelHasGTPU) {
		w.sep()
		w.str("gtpu(")
		g := newFW(f, mask, ok, verbose)
		g.u8x("flags", t.GTPU.Flags, m.GTPU.Flags)
		g.u8u("msgtype", t.GTPU.MsgType, m.GTPU.MsgType)
		w.str(")")
	}
	for _, u := range t.Unknown {
		w.sep()
		fmt.Fprintf(f, "key%d(", u.Type)
		writeHex(f, u.Data)
		if ok {
			md := make([]byte, len(u.Data))
			for _, mu := range m.Unknown {
				if mu.Type == u.Type {
					md = mu.Data
					break
				}
			}
			f.WriteByte('/')
			writeHex(f, md)
		}
		f.WriteByte(')')
	}
	flags := uint32(t.Flags & (TunnelDF | TunnelCSUM | TunnelOAM))
	if t.has(TunnelHasID) {
		flags |= uint32(TunnelKey)
	}
	if !ok {
		w.sep()
		w.str("flags(")
		formatFlags(f, tunFlagName, flags, '|')
		w.str(")")
		return
	}
	mflags := uint32(m.Flags & (TunnelDF | TunnelCSUM | TunnelOAM))
	if t.has(TunnelHasID) {
		mflags |= uint32(TunnelKey)
	}
	if verbose || mflags != 0 {
		w.sep()
		w.str("flags(")
		formatFlagsMasked(f, tunFlagName, flags, mflags, 0xf)
		w.str(")")
	}
}

// formatGeneve is format_geneve_opts: each option as
// {class=..,type=..,len=..,0xDATA[/0xMASK]}.
func formatGeneve(f *textBuf, opts, mask []byte, masked, verbose bool) {
	if masked && len(mask) != len(opts) {
		fmt.Fprintf(f, "value len %d different from mask len %d", len(opts), len(mask))
		return
	}
	for len(opts) > 0 {
		if len(opts) < 4 {
			fmt.Fprintf(f, "opt len %d less than minimum 4", len(opts))
			return
		}
		dataLen := int(opts[3]&0x1f) * 4
		n := 4 + dataLen
		if n > len(opts) {
			fmt.Fprintf(f, "opt len %d greater than remaining %d", n, len(opts))
			return
		}
		var mh [4]byte
		var md []byte
		if masked {
			copy(mh[:], mask)
			md = mask[4:n]
		}
		lenMask := mh[3] & 0x1f
		if lenMask == 0x1f {
			lenMask = 0xff
		}
		f.WriteByte('{')
		w := fw{f: f, verbose: verbose, masked: masked}
		w.be16x("class", binary.BigEndian.Uint16(opts), binary.BigEndian.Uint16(mh[:]))
		w.u8x("type", opts[2], mh[2])
		w.u8u("len", uint8(dataLen), lenMask)
		if dataLen > 0 && (verbose || !masked || !allZero(md)) {
			w.sep()
			writeCHex(f, opts[4:n])
			if masked && !allOnes(md) {
				f.WriteByte('/')
				writeCHex(f, md)
			}
		}
		f.WriteByte('}')
		opts = opts[n:]
		if masked {
			mask = mask[n:]
		}
	}
}

func init() {
	keyDecoders[KeyTunnel] = decodeTunnel
	keyParsers["tunnel"] = parseTunnel
}

// UnmarshalTunnel decodes b, the nested OVS_TUNNEL_KEY_ATTR_* attributes
// of an OVS_KEY_ATTR_TUNNEL or of an upcall's
// OVS_PACKET_ATTR_EGRESS_TUN_KEY (without the enclosing attribute's
// header).
func UnmarshalTunnel(b []byte) (Tunnel, error) {
	k, err := decodeTunnel(&rawAttr{Type: uint16(KeyTunnel), Data: b, Offset: -nlaHdrLen}, "tunnel", 0)
	if err != nil {
		return Tunnel{}, err
	}
	return k.(Tunnel), nil
}

func decodeTunnel(a *rawAttr, path string, _ int) (KeyAttr, error) {
	var t Tunnel
	w := newAttrWalker(a.Data, a.Offset+nlaHdrLen)
	for c := range w.All() {
		p := fmt.Sprintf("%s.%d", path, c.Type)
		fixed := func(name string, n int) ([]byte, error) {
			return decodeFixed(c, path+"."+name, n)
		}
		var err error
		var d []byte
		switch c.Type {
		case tunID:
			if d, err = fixed("tun_id", 8); err == nil {
				t.ID = binary.BigEndian.Uint64(d)
				t.Present |= TunnelHasID
			}
		case tunIPv4Src:
			if d, err = fixed("src", 4); err == nil {
				t.IPv4Src = [4]byte(d)
				t.Present |= TunnelHasIPv4Src
			}
		case tunIPv4Dst:
			if d, err = fixed("dst", 4); err == nil {
				t.IPv4Dst = [4]byte(d)
				t.Present |= TunnelHasIPv4Dst
			}
		case tunIPv6Src:
			if d, err = fixed("ipv6_src", 16); err == nil {
				t.IPv6Src = [16]byte(d)
				t.Present |= TunnelHasIPv6Src
			}
		case tunIPv6Dst:
			if d, err = fixed("ipv6_dst", 16); err == nil {
				t.IPv6Dst = [16]byte(d)
				t.Present |= TunnelHasIPv6Dst
			}
		case tunTOS:
			if d, err = fixed("tos", 1); err == nil {
				t.TOS = d[0]
				t.Present |= TunnelHasTOS
			}
		case tunTTL:
			if d, err = fixed("ttl", 1); err == nil {
				t.TTL = d[0]
				t.Present |= TunnelHasTTL
			}
		case tunDF:
			if _, err = fixed("df", 0); err == nil {
				t.Flags |= TunnelDF
			}
		case tunCSUM:
			if _, err = fixed("csum", 0); err == nil {
				t.Flags |= TunnelCSUM
			}
		case tunOAM:
			if _, err = fixed("oam", 0); err == nil {
				t.Flags |= TunnelOAM
			}
		case tunTPSrc:
			if d, err = fixed("tp_src", 2); err == nil {
				t.TPSrc = binary.BigEndian.Uint16(d)
				t.Present |= TunnelHasTPSrc
			}
		case tunTPDst:
			if d, err = fixed("tp_dst", 2); err == nil {
				t.TPDst = binary.BigEndian.Uint16(d)
				t.Present |= TunnelHasTPDst
			}
		case tunGeneveOpts:
			t.Geneve = append([]byte{}, c.Data...)
			t.Present |= TunnelHasGeneve
		case tunVXLANOpts:
			vw := newAttrWalker(c.Data, c.Offset+nlaHdrLen)
			for v := range vw.All() {
				if v.Type == vxlanExtGBP {
					if d, err = decodeFixed(v, path+".vxlan.gbp", 4); err != nil {
						return nil, err
					}
					t.VXLANGBP = binary.NativeEndian.Uint32(d)
				}
			}
			if err := vw.attrErr(path + ".vxlan"); err != nil {
				return nil, err
			}
			t.Present |= TunnelHasVXLAN
		case tunPad:
		case tunERSPANOpts:
			if d, err = fixed("erspan", 12); err == nil {
				t.ERSPAN.Version = binary.NativeEndian.Uint32(d)
				t.ERSPAN.MD = [8]byte(d[4:])
				t.Present |= TunnelHasERSPAN
			}
		case tunGTPUOpts:
			if d, err = fixed("gtpu", 2); err == nil {
				t.GTPU = GTPUOpts{d[0], d[1]}
				t.Present |= TunnelHasGTPU
			}
		default:
			_ = p
			t.Unknown = append(t.Unknown, UnknownKey{Type: KeyType(c.Type), Data: append([]byte{}, c.Data...)})
		}
		if err != nil {
			return nil, err
		}
	}
	if err := w.attrErr(path); err != nil {
		return nil, err
	}
	return t, nil
}

func parseTunnel(sc *scanner) (KeyAttr, KeyAttr, error) {
	var k, m Tunnel
	set := func(f TunnelFields) { k.Present |= f; m.Present |= f }
	fields := []fieldSpec{
		{"tun_id", func(sc *scanner) error { set(TunnelHasID); return pU64(&k.ID, &m.ID)(sc) }},
		{"src", func(sc *scanner) error { set(TunnelHasIPv4Src); return pIPv4(&k.IPv4Src, &m.IPv4Src)(sc) }},
		{"dst", func(sc *scanner) error { set(TunnelHasIPv4Dst); return pIPv4(&k.IPv4Dst, &m.IPv4Dst)(sc) }},
		{"ipv6_src", func(sc *scanner) error { set(TunnelHasIPv6Src); return pIPv6(&k.IPv6Src, &m.IPv6Src)(sc) }},
		{"ipv6_dst", func(sc *scanner) error { set(TunnelHasIPv6Dst); return pIPv6(&k.IPv6Dst, &m.IPv6Dst)(sc) }},
		{"tos", func(sc *scanner) error { set(TunnelHasTOS); return pU8(&k.TOS, &m.TOS)(sc) }},
		{"ttl", func(sc *scanner) error { set(TunnelHasTTL); return pU8(&k.TTL, &m.TTL)(sc) }},
		{"tp_src", func(sc *scanner) error { set(TunnelHasTPSrc); return pU16(&k.TPSrc, &m.TPSrc)(sc) }},
		{"tp_dst", func(sc *scanner) error { set(TunnelHasTPDst); return pU16(&k.TPDst, &m.TPDst)(sc) }},
	}
	for {
		if sc.peek() == ')' {
			return k, m, nil
		}
		var err error
		switch {
		case sc.accept("geneve("):
			err = parseGeneve(sc, &k, &m)
		case sc.accept("vxlan(gbp("):
			err = parseVXLANGBP(sc, &k, &m)
		case sc.accept("erspan("):
			err = parseERSPAN(sc, &k, &m)
		case sc.accept("gtpu("):
			err = parseGTPU(sc, &k, &m)
		case sc.accept("flags("):
			var fl, fm uint32
			if fl, fm, err = parseFlags(sc, tunFlagName, 0xf, "tunnel"); err == nil {
				err = sc.expect(")")
			}
			k.Flags = TunnelFlags(fl) & (TunnelDF | TunnelCSUM | TunnelOAM)
			m.Flags = TunnelFlags(fm) & (TunnelDF | TunnelCSUM | TunnelOAM)
		case strings.HasPrefix(sc.rest(), "key"):
			err = parseTunnelUnknown(sc, &k, &m)
		default:
			err = parseOneField(sc, "tunnel", fields)
		}
		if err != nil {
			return nil, nil, err
		}
		if !sc.accept(",") && sc.peek() != ')' {
			return nil, nil, sc.errorf("expected ',' or ')' in tunnel()")
		}
	}
}

// parseOneField parses one "name=value" of fields.
func parseOneField(sc *scanner, what string, fields []fieldSpec) error {
	for _, fs := range fields {
		if strings.HasPrefix(sc.rest(), fs.name+"=") {
			sc.pos += len(fs.name) + 1
			return fs.parse(sc)
		}
	}
	return sc.errorf("unknown field in %s()", what)
}

func parseTunnelUnknown(sc *scanner, k, m *Tunnel) error {
	start := sc.pos
	sc.pos += 3
	n, err := sc.cnum(14)
	if err != nil || !sc.accept("(") {
		return sc.errorAt(start, "unknown field in tunnel()")
	}
	data, err := sc.hexBytes("tunnel attribute")
	if err != nil {
		return err
	}
	md := make([]byte, len(data))
	for i := range md {
		md[i] = 0xff
	}
	if has, err := sc.maskSep(); err != nil {
		return err
	} else if has {
		if md, err = sc.hexBytes("tunnel attribute mask"); err != nil {
			return err
		}
	}
	k.Unknown = append(k.Unknown, UnknownKey{Type: KeyType(n), Data: data})
	m.Unknown = append(m.Unknown, UnknownKey{Type: KeyType(n), Data: md})
	return sc.expect(")")
}

// maxGeneveOpts is the room for Geneve options (TLV_TOT_OPT_SIZE).
const maxGeneveOpts = 252

func parseGeneve(sc *scanner, k, m *Tunnel) error {
	k.Present |= TunnelHasGeneve
	m.Present |= TunnelHasGeneve
	k.Geneve, m.Geneve = []byte{}, []byte{}
	for sc.accept("{") {
		if len(k.Geneve)+4 > maxGeneveOpts {
			return sc.errorf("geneve options longer than %d bytes", maxGeneveOpts)
		}
		var h, mh [4]byte
		mh = [4]byte{0xff, 0xff, 0xff, 0x1f}
		var class, mclass uint16
		var data, mdata []byte
		dataLen := 0
		if sc.accept("class=") {
			if err := pU16(&class, &mclass)(sc); err != nil {
				return err
			}
		}
		binary.BigEndian.PutUint16(h[:], class)
		binary.BigEndian.PutUint16(mh[:], mclass)
		sc.accept(",")
		if sc.accept("type=") {
			if err := pU8(&h[2], &mh[2])(sc); err != nil {
				return err
			}
		} else {
			mh[2] = 0
		}
		sc.accept(",")
		if sc.accept("len=") {
			start := sc.pos
			var l, ml uint8
			if err := pU8(&l, &ml)(sc); err != nil {
				return err
			}
			if l > 124 || l%4 != 0 || len(k.Geneve)+4+int(l) > maxGeneveOpts {
				return sc.errorAt(start, "bad geneve option len %d (a multiple of 4, at most 124)", l)
			}
			h[3] = l / 4
			mh[3] = ml & 0x1f
			dataLen = int(l)
		}
		data = make([]byte, dataLen)
		mdata = make([]byte, dataLen)
		for i := range mdata {
			mdata[i] = 0xff
		}
		if sc.accept(",") {
			if err := sc.intString(data); err != nil {
				return err
			}
		}
		if has, err := sc.maskSep(); err != nil {
			return err
		} else if has {
			if err := sc.intString(mdata); err != nil {
				return err
			}
		}
		if err := sc.expect("}"); err != nil {
			return err
		}
		k.Geneve = append(append(k.Geneve, h[:]...), data...)
		m.Geneve = append(append(m.Geneve, mh[:]...), mdata...)
	}
	return sc.expect(")")
}

func parseVXLANGBP(sc *scanner, k, m *Tunnel) error {
	var id, mid uint16
	var fl, mfl uint8
	if sc.accept("id=") {
		if err := pU16(&id, &mid)(sc); err != nil {
			return err
		}
	}
	sc.accept(",")
	if sc.accept("flags=") {
		if err := pU8(&fl, &mfl)(sc); err != nil {
			return err
		}
	}
	if err := sc.expect("))"); err != nil {
		return err
	}
	// Open vSwitch leaves out a zero GBP (in the key and in the mask).
	k.VXLANGBP = uint32(fl)<<16 | uint32(id)
	m.VXLANGBP = uint32(mfl)<<16 | uint32(mid)
	if k.VXLANGBP != 0 {
		k.Present |= TunnelHasVXLAN
	}
	if m.VXLANGBP != 0 {
		m.Present |= TunnelHasVXLAN
	}
	return nil
}

func parseERSPAN(sc *scanner, k, m *Tunnel) error {
	var ver, mver uint8
	verAt := sc.pos
	if sc.accept("ver=") {
		verAt = sc.pos
		if err := pU8(&ver, &mver)(sc); err != nil {
			return err
		}
	}
	sc.accept(",")
	k.ERSPAN = ERSPANOpts{Version: uint32(ver)}
	m.ERSPAN = ERSPANOpts{Version: 0xffffffff, MD: [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	switch ver {
	case 1:
		var idx, midx uint32
		if sc.accept("idx=") {
			if err := pU32(&idx, &midx)(sc); err != nil {
				return err
			}
		}
		k.ERSPAN.SetIndex(idx)
		m.ERSPAN.SetIndex(midx)
	case 2:
		var dir, mdir, hwid, mhwid uint8
		if sc.accept("dir=") {
			if err := pU8(&dir, &mdir)(sc); err != nil {
				return err
			}
		}
		sc.accept(",")
		if sc.accept("hwid=") {
			if err := pU8(&hwid, &mhwid)(sc); err != nil {
				return err
			}
		}
		// As scan_erspan_metadata: hwid and its mask go to the 4-bit
		// hwid field (cut to 4 bits); hwid_upper stays 0 in the key
		// and exact in the mask.
		k.ERSPAN.SetDir(dir)
		k.ERSPAN.setHWIDLow(hwid)
		m.ERSPAN.SetDir(mdir)
		m.ERSPAN.setHWIDLow(mhwid)
	default:
		return sc.errorAt(verAt, "erspan ver must be 1 or 2")
	}
	k.Present |= TunnelHasERSPAN
	m.Present |= TunnelHasERSPAN
	return sc.expect(")")
}

func parseGTPU(sc *scanner, k, m *Tunnel) error {
	var g, mg GTPUOpts
	if sc.accept("flags=") {
		if err := pU8(&g.Flags, &mg.Flags)(sc); err != nil {
			return err
		}
	}
	sc.accept(",")
	if sc.accept("msgtype=") {
		if err := pU8(&g.MsgType, &mg.MsgType)(sc); err != nil {
			return err
		}
	}
	k.GTPU, m.GTPU = g, mg
	k.Present |= TunnelHasGTPU
	m.Present |= TunnelHasGTPU
	return sc.expect(")")
}
