package odp

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/ovsdp/ovsdp/internal/header"
)

// Tunnel vport types (OVS_VPORT_TYPE_*) that tnl_push headers use.
const (
	VportGRE       uint32 = 3
	VportVXLAN     uint32 = 4
	VportGeneve    uint32 = 5
	VportERSPAN    uint32 = 107
	VportIP6ERSPAN uint32 = 108
	VportIP6GRE    uint32 = 109
	VportGTPU      uint32 = 110
	VportSRv6      uint32 = 112
)

// tnlPushHeaderMax is TNL_PUSH_HEADER_SIZE.
const tnlPushHeaderMax = 512

// TunnelPush encapsulates the packet in a prebuilt tunnel header and
// outputs it (Open vSwitch's userspace OVS_ACTION_ATTR_TUNNEL_PUSH, struct
// ovs_action_push_tnl in host order: u32 tnl_port, u32 out_port, u32
// header_len, u32 tnl_type, then header_len bytes of header; the kernel
// rejects it).
//
// Text, as Open vSwitch prints it:
// "tnl_push(tnl_port(4),header(size=42,type=3,eth(...),ipv4(...),gre(...)),out_port(1))".
// A header that this form cannot reproduce byte for byte (fields it does
// not show, truncated or unknown encapsulations) is shown as
// "header(size=N,type=T,raw=HEX)" instead, so nothing is lost.
type TunnelPush struct {
	// TnlPort is the tunnel port; OutPort the port the packet leaves by.
	TnlPort, OutPort uint32
	// TnlType is the OVS_VPORT_TYPE_* of the tunnel (VportGRE, ...).
	TnlType uint32
	// Header is the complete encapsulation (Ethernet, IP, UDP/GRE, ...).
	Header []byte
}

// ActionType implements Action.
func (TunnelPush) ActionType() ActionType { return ActionTunnelPush }

func (t TunnelPush) appendPayload(b []byte) ([]byte, error) {
	if len(t.Header) > tnlPushHeaderMax {
		return b, fmt.Errorf("tunnel header of %d bytes exceeds %d", len(t.Header), tnlPushHeaderMax)
	}
	ne := binary.NativeEndian
	b = ne.AppendUint32(b, t.TnlPort)
	b = ne.AppendUint32(b, t.OutPort)
	b = ne.AppendUint32(b, uint32(len(t.Header)))
	b = ne.AppendUint32(b, t.TnlType)
	return append(b, t.Header...), nil
}

func (t TunnelPush) format(f *textBuf) {
	fmt.Fprintf(f, "tnl_push(tnl_port(%d),", t.TnlPort)
	var h textBuf
	ok := formatTnlHeader(&h, t.TnlType, t.Header)
	if ok {
		// Keep the Open vSwitch form only if it gives back the same bytes.
		sc := newScanner(h.String())
		hdr, typ, err := parseTnlHeader(sc)
		ok = err == nil && sc.eof() && typ == t.TnlType && bytes.Equal(hdr, t.Header)
	}
	if ok {
		f.WriteString(h.String())
	} else {
		fmt.Fprintf(f, "header(size=%d,type=%d,raw=", len(t.Header), t.TnlType)
		writeHex(f, t.Header)
		f.WriteByte(')')
	}
	fmt.Fprintf(f, ",out_port(%d))", t.OutPort)
}

func decodeTunnelPush(a *rawAttr, path string, _ int) (Action, error) {
	if len(a.Data) < 16 {
		return nil, actDecodeErr(a, path, "payload is %d bytes, want at least 16", len(a.Data))
	}
	ne := binary.NativeEndian
	t := TunnelPush{TnlPort: ne.Uint32(a.Data), OutPort: ne.Uint32(a.Data[4:]), TnlType: ne.Uint32(a.Data[12:])}
	hl := ne.Uint32(a.Data[8:])
	if int(hl) != len(a.Data)-16 || hl > tnlPushHeaderMax {
		return nil, actDecodeErr(a, path, "header_len %d does not match the %d header bytes (at most %d)", hl, len(a.Data)-16, tnlPushHeaderMax)
	}
	t.Header = append([]byte{}, a.Data[16:]...)
	return t, nil
}

func parseTunnelPush(sc *scanner, _ int) (Action, error) {
	if err := sc.actExpect("(tnl_port(", "tnl_push"); err != nil {
		return nil, err
	}
	v, err := sc.actUint(32, "tnl_port")
	if err != nil {
		return nil, err
	}
	t := TunnelPush{TnlPort: uint32(v)}
	if err := sc.actExpect("),", "tnl_push"); err != nil {
		return nil, err
	}
	if t.Header, t.TnlType, err = parseTnlHeader(sc); err != nil {
		return nil, err
	}
	if err := sc.actExpect(",out_port(", "tnl_push"); err != nil {
		return nil, err
	}
	if v, err = sc.actUint(32, "out_port"); err != nil {
		return nil, err
	}
	t.OutPort = uint32(v)
	if err := sc.actExpect("))", "tnl_push"); err != nil {
		return nil, err
	}
	return t, nil
}

// formatTnlHeader writes "header(...)" in Open vSwitch's form. It reports
// false when the header is not one it can show.
func formatTnlHeader(f *textBuf, typ uint32, h []byte) bool {
	be := binary.BigEndian
	if len(h) < 14 {
		return false
	}
	fmt.Fprintf(f, "header(size=%d,type=%d,eth(dst=", len(h), typ)
	eth := header.Ethernet(h)
	writeMAC(f, eth.DestinationAddress())
	f.WriteString(",src=")
	writeMAC(f, eth.SourceAddress())
	ethType := eth.Type()
	fmt.Fprintf(f, ",dl_type=0x%04x),", ethType)
	l3 := h[header.EthernetMinimumSize:]
	var l4 []byte
	if ethType == header.EtherTypeIPv4 {
		if len(l3) < header.IPv4MinimumSize {
			return false
		}
		ip := header.IPv4(l3)
		f.WriteString("ipv4(src=")
		writeIPv4(f, ip.SourceAddress())
		f.WriteString(",dst=")
		writeIPv4(f, ip.DestinationAddress())
		tos := "0"
		if ip.TOS() != 0 {
			tos = fmt.Sprintf("%#x", ip.TOS())
		}
		fmt.Fprintf(f, ",proto=%d,tos=%s,ttl=%d,frag=0x%x),", ip.Protocol(), tos, ip.TTL(), ip.FlagsFragmentOffset())
		l4 = l3[header.IPv4MinimumSize:]
	} else {
		if len(l3) < header.IPv6MinimumSize {
			return false
		}
		ip := header.IPv6(l3)
		f.WriteString("ipv6(src=")
		writeIPv6(f, ip.SourceAddress())
		f.WriteString(",dst=")
		writeIPv6(f, ip.DestinationAddress())
		fmt.Fprintf(f, ",label=%d,proto=%d,tclass=0x%x,hlimit=%d),", ip.FlowLabel(), ip.NextHeader(), ip.TrafficClass(), ip.HopLimit())
		l4 = l3[header.IPv6MinimumSize:]
	}
	udp := func() bool {
		if len(l4) < header.UDPMinimumSize {
			return false
		}
		u := header.UDP(l4)
		fmt.Fprintf(f, "udp(src=%d,dst=%d,csum=0x%x),", header.Ports(u).Source(), header.Ports(u).Destination(), u.Checksum())
		l4 = l4[header.UDPMinimumSize:]
		return true
	}
	switch typ {
	case VportVXLAN:
		if !udp() || len(l4) < 8 {
			return false
		}
		fmt.Fprintf(f, "vxlan(flags=0x%x,vni=0x%x)", be.Uint32(l4), be.Uint32(l4[4:])>>8)
	case VportGeneve:
		if !udp() || len(l4) < 8 {
			return false
		}
		optLen := int(l4[0]&0x3f) * 4
		f.WriteString("geneve(")
		if l4[1]&0x80 != 0 {
			f.WriteString("oam,")
		}
		if l4[1]&0x40 != 0 {
			f.WriteString("crit,")
		}
		fmt.Fprintf(f, "vni=0x%x", be.Uint32(l4[4:])>>8)
		opts := l4[8:]
		if optLen > 0 {
			if len(opts) < optLen {
				return false
			}
			f.WriteString(",options(")
			o := opts[:optLen]
			for len(o) > 0 {
				if len(o) < 4 {
					return false
				}
				dl := int(o[3]&0x1f) * 4
				if 4+dl > len(o) {
					return false
				}
				fmt.Fprintf(f, "{class=0x%04x,type=0x%x,len=%d", be.Uint16(o), o[2], dl)
				if dl > 0 {
					f.WriteByte(',')
					actFormatHexStripped(f, o[4:4+dl])
				}
				f.WriteByte('}')
				o = o[4+dl:]
			}
			f.WriteByte(')')
		}
		f.WriteByte(')')
	case VportSRv6:
		if len(l4) < 8 {
			return false
		}
		n := int(l4[4]) + 1
		segs := l4[8:]
		if len(segs) < 16*n {
			return false
		}
		fmt.Fprintf(f, "srv6(segments_left=%d,segs(", l4[3])
		for i := 0; i < n; i++ {
			if i > 0 {
				f.WriteByte(',')
			}
			j := n - i - 1
			writeIPv6(f, [16]byte(segs[16*j:16*j+16]))
		}
		f.WriteString("))")
	case VportGRE, VportIP6GRE:
		if len(l4) < 4 {
			return false
		}
		flags := be.Uint16(l4)
		fmt.Fprintf(f, "gre((flags=0x%x,proto=0x%x)", flags, be.Uint16(l4[2:]))
		o := l4[4:]
		if flags&0x8000 != 0 {
			if len(o) < 4 {
				return false
			}
			fmt.Fprintf(f, ",csum=0x%x", be.Uint16(o))
			o = o[4:]
		}
		if flags&0x2000 != 0 {
			if len(o) < 4 {
				return false
			}
			fmt.Fprintf(f, ",key=0x%x", be.Uint32(o))
			o = o[4:]
		}
		if flags&0x1000 != 0 {
			if len(o) < 4 {
				return false
			}
			fmt.Fprintf(f, ",seq=0x%x", be.Uint32(o))
		}
		f.WriteByte(')')
	default:
		return false
	}
	f.WriteByte(')')
	return true
}

// actFormatHexStripped writes bytes as Open vSwitch's ds_put_hex: "0x"
// then the digits without leading zeros, or "0" when all are zero.
func actFormatHexStripped(f *textBuf, d []byte) {
	i := 0
	for i < len(d) && d[i] == 0 {
		i++
	}
	if i == len(d) {
		f.WriteByte('0')
		return
	}
	fmt.Fprintf(f, "0x%x", d[i])
	writeHex(f, d[i+1:])
}

// parseTnlHeader parses "header(...)" and builds the header bytes as Open
// vSwitch's parser does. It checks size= and type= against what it built.
func parseTnlHeader(sc *scanner) ([]byte, uint32, error) {
	be := binary.BigEndian
	if err := sc.actExpect("header(size=", "tnl_push"); err != nil {
		return nil, 0, err
	}
	sizeAt := sc.pos
	size, err := sc.actUint(32, "header size")
	if err != nil {
		return nil, 0, err
	}
	if err := sc.actExpect(",type=", "tnl_push header"); err != nil {
		return nil, 0, err
	}
	typeAt := sc.pos
	tv, err := sc.actUint(32, "tunnel type")
	if err != nil {
		return nil, 0, err
	}
	typ := uint32(tv)
	if sc.accept(",raw=") {
		d, err := sc.hexBytes("raw header")
		if err != nil {
			return nil, 0, err
		}
		if uint64(len(d)) != size || len(d) > tnlPushHeaderMax {
			return nil, 0, sc.errorAt(sizeAt, "size=%d but the raw header has %d bytes (at most %d)", size, len(d), tnlPushHeaderMax)
		}
		if err := sc.actExpect(")", "tnl_push header"); err != nil {
			return nil, 0, err
		}
		return d, typ, nil
	}
	h := make([]byte, 14, 128)
	if err := sc.actExpect(",eth(dst=", "tnl_push header"); err != nil {
		return nil, 0, err
	}
	mac, err := sc.mac()
	if err != nil {
		return nil, 0, err
	}
	copy(h[0:6], mac[:])
	if err := sc.actExpect(",src=", "tnl_push eth"); err != nil {
		return nil, 0, err
	}
	if mac, err = sc.mac(); err != nil {
		return nil, 0, err
	}
	copy(h[6:12], mac[:])
	if err := sc.actExpect(",dl_type=0x", "tnl_push eth"); err != nil {
		return nil, 0, err
	}
	et, err := sc.actUintBase(16, 16, "dl_type")
	if err != nil {
		return nil, 0, err
	}
	be.PutUint16(h[12:], uint16(et))
	if err := sc.actExpect("),", "tnl_push eth"); err != nil {
		return nil, 0, err
	}
	isV4 := et == header.EtherTypeIPv4
	l3 := len(h)
	if isV4 {
		ip := make([]byte, 20)
		ip[0] = 0x45
		if err := sc.actExpect("ipv4(src=", "tnl_push header"); err != nil {
			return nil, 0, err
		}
		a, err := sc.ipv4()
		if err != nil {
			return nil, 0, err
		}
		copy(ip[12:], a[:])
		if err := sc.actExpect(",dst=", "tnl_push ipv4"); err != nil {
			return nil, 0, err
		}
		if a, err = sc.ipv4(); err != nil {
			return nil, 0, err
		}
		copy(ip[16:], a[:])
		var vals [4]uint64
		for i, fd := range []struct {
			lit  string
			bits int
		}{{",proto=", 8}, {",tos=", 8}, {",ttl=", 8}} {
			if err := sc.actExpect(fd.lit, "tnl_push ipv4"); err != nil {
				return nil, 0, err
			}
			if vals[i], err = sc.actUint(fd.bits, fd.lit[1:len(fd.lit)-1]); err != nil {
				return nil, 0, err
			}
		}
		if err := sc.actExpect(",frag=0x", "tnl_push ipv4"); err != nil {
			return nil, 0, err
		}
		if vals[3], err = sc.actUintBase(16, 16, "frag"); err != nil {
			return nil, 0, err
		}
		if err := sc.actExpect("),", "tnl_push ipv4"); err != nil {
			return nil, 0, err
		}
		ip[9], ip[1], ip[8] = byte(vals[0]), byte(vals[1]), byte(vals[2])
		be.PutUint16(ip[6:], uint16(vals[3]))
		header.IPv4(ip).SetChecksum(header.IPv4(ip).CalculateChecksum())
		h = append(h, ip...)
	} else {
		ip := make([]byte, 40)
		if err := sc.actExpect("ipv6(src=", "tnl_push header"); err != nil {
			return nil, 0, err
		}
		a, err := sc.ipv6()
		if err != nil {
			return nil, 0, err
		}
		copy(ip[8:], a[:])
		if err := sc.actExpect(",dst=", "tnl_push ipv6"); err != nil {
			return nil, 0, err
		}
		if a, err = sc.ipv6(); err != nil {
			return nil, 0, err
		}
		copy(ip[24:], a[:])
		if err := sc.actExpect(",label=", "tnl_push ipv6"); err != nil {
			return nil, 0, err
		}
		label, err := sc.actUint(20, "label")
		if err != nil {
			return nil, 0, err
		}
		if err := sc.actExpect(",proto=", "tnl_push ipv6"); err != nil {
			return nil, 0, err
		}
		proto, err := sc.actUint(8, "proto")
		if err != nil {
			return nil, 0, err
		}
		if err := sc.actExpect(",tclass=0x", "tnl_push ipv6"); err != nil {
			return nil, 0, err
		}
		tclass, err := sc.actUintBase(8, 16, "tclass")
		if err != nil {
			return nil, 0, err
		}
		if err := sc.actExpect(",hlimit=", "tnl_push ipv6"); err != nil {
			return nil, 0, err
		}
		hl, err := sc.actUint(8, "hlimit")
		if err != nil {
			return nil, 0, err
		}
		if err := sc.actExpect("),", "tnl_push ipv6"); err != nil {
			return nil, 0, err
		}
		be.PutUint32(ip, 6<<28|uint32(tclass)<<20|uint32(label))
		ip[6], ip[7] = byte(proto), byte(hl)
		h = append(h, ip...)
	}
	var built uint32
	switch {
	case sc.accept("udp(src="):
		u := make([]byte, 8)
		src, err := sc.actUint(16, "udp src")
		if err != nil {
			return nil, 0, err
		}
		if err := sc.actExpect(",dst=", "tnl_push udp"); err != nil {
			return nil, 0, err
		}
		dst, err := sc.actUint(16, "udp dst")
		if err != nil {
			return nil, 0, err
		}
		if err := sc.actExpect(",csum=0x", "tnl_push udp"); err != nil {
			return nil, 0, err
		}
		cs, err := sc.actUintBase(16, 16, "udp csum")
		if err != nil {
			return nil, 0, err
		}
		if err := sc.actExpect("),", "tnl_push udp"); err != nil {
			return nil, 0, err
		}
		be.PutUint16(u, uint16(src))
		be.PutUint16(u[2:], uint16(dst))
		be.PutUint16(u[6:], uint16(cs))
		h = append(h, u...)
		switch {
		case sc.accept("vxlan(flags=0x"):
			fl, err := sc.actUintBase(32, 16, "vxlan flags")
			if err != nil {
				return nil, 0, err
			}
			if err := sc.actExpect(",vni=0x", "tnl_push vxlan"); err != nil {
				return nil, 0, err
			}
			vni, err := sc.actUintBase(24, 16, "vxlan vni")
			if err != nil {
				return nil, 0, err
			}
			if err := sc.actExpect("))", "tnl_push vxlan"); err != nil {
				return nil, 0, err
			}
			h = be.AppendUint32(h, uint32(fl))
			h = be.AppendUint32(h, uint32(vni)<<8)
			built = VportVXLAN
		case sc.accept("geneve("):
			g := make([]byte, 8)
			if sc.accept("oam,") {
				g[1] |= 0x80
			}
			if sc.accept("crit,") {
				g[1] |= 0x40
			}
			if err := sc.actExpect("vni=", "tnl_push geneve"); err != nil {
				return nil, 0, err
			}
			vni, err := sc.actUint(24, "geneve vni")
			if err != nil {
				return nil, 0, err
			}
			be.PutUint16(g[2:], 0x6558)
			be.PutUint32(g[4:], uint32(vni)<<8)
			var opts []byte
			if sc.accept(",options(") {
				for sc.accept("{") {
					o := make([]byte, 4)
					var dl uint64
					if sc.accept("class=") {
						c, err := sc.actUint(16, "geneve option class")
						if err != nil {
							return nil, 0, err
						}
						be.PutUint16(o, uint16(c))
					}
					sc.accept(",")
					if sc.accept("type=") {
						t, err := sc.actUint(8, "geneve option type")
						if err != nil {
							return nil, 0, err
						}
						o[2] = byte(t)
					}
					sc.accept(",")
					if sc.accept("len=") {
						lAt := sc.pos
						if dl, err = sc.actUint(8, "geneve option len"); err != nil {
							return nil, 0, err
						}
						if dl > 124 || dl%4 != 0 {
							return nil, 0, sc.errorAt(lAt, "geneve option len must be a multiple of 4 up to 124")
						}
						o[3] = byte(dl / 4)
					}
					data := make([]byte, dl)
					if sc.accept(",") {
						if err = sc.intString(data); err != nil {
							return nil, 0, err
						}
					}
					if err := sc.actExpect("}", "geneve option"); err != nil {
						return nil, 0, err
					}
					opts = append(opts, o...)
					opts = append(opts, data...)
					sc.accept(",")
				}
				if err := sc.actExpect(")", "geneve options"); err != nil {
					return nil, 0, err
				}
				if len(opts) > 252 {
					return nil, 0, sc.errorf("geneve options of %d bytes exceed 252", len(opts))
				}
				g[0] = byte(len(opts) / 4)
			}
			if err := sc.actExpect("))", "tnl_push geneve"); err != nil {
				return nil, 0, err
			}
			h = append(h, g...)
			h = append(h, opts...)
			built = VportGeneve
		default:
			return nil, 0, sc.errorf("expected vxlan( or geneve( after udp()")
		}
	case sc.accept("gre((flags=0x"):
		fl, err := sc.actUintBase(16, 16, "gre flags")
		if err != nil {
			return nil, 0, err
		}
		if err := sc.actExpect(",proto=0x", "tnl_push gre"); err != nil {
			return nil, 0, err
		}
		pr, err := sc.actUintBase(16, 16, "gre proto")
		if err != nil {
			return nil, 0, err
		}
		if err := sc.actExpect(")", "tnl_push gre"); err != nil {
			return nil, 0, err
		}
		h = be.AppendUint16(h, uint16(fl))
		h = be.AppendUint16(h, uint16(pr))
		for _, o := range []struct {
			bit  uint64
			lit  string
			bits int
		}{{0x8000, ",csum=0x", 16}, {0x2000, ",key=0x", 32}, {0x1000, ",seq=0x", 32}} {
			if fl&o.bit == 0 {
				continue
			}
			if err := sc.actExpect(o.lit, "tnl_push gre"); err != nil {
				return nil, 0, err
			}
			v, err := sc.actUintBase(o.bits, 16, o.lit[1:len(o.lit)-3])
			if err != nil {
				return nil, 0, err
			}
			if o.bits == 16 {
				h = be.AppendUint16(h, uint16(v))
				h = append(h, 0, 0)
			} else {
				h = be.AppendUint32(h, uint32(v))
			}
		}
		if err := sc.actExpect("))", "tnl_push gre"); err != nil {
			return nil, 0, err
		}
		built = VportGRE
		if !isV4 {
			built = VportIP6GRE
		}
	case sc.accept("srv6(segments_left="):
		if isV4 {
			return nil, 0, sc.errorf("srv6 needs an IPv6 header")
		}
		sl, err := sc.actUint(8, "segments_left")
		if err != nil {
			return nil, 0, err
		}
		n := int(sl) + 1
		if 62+16*n > tnlPushHeaderMax {
			return nil, 0, sc.errorf("too many srv6 segments")
		}
		h[l3+6] = 43 // IPPROTO_ROUTING
		srh := []byte{0, byte(2 * n), 4, byte(sl), byte(sl), 0, 0, 0}
		segs := make([]byte, 16*n)
		if err := sc.actExpect(",segs(", "tnl_push srv6"); err != nil {
			return nil, 0, err
		}
		for i := 0; ; i++ {
			if i == n {
				return nil, 0, sc.errorf("more srv6 segments than segments_left+1 (%d)", n)
			}
			a, err := sc.ipv6()
			if err != nil {
				return nil, 0, err
			}
			copy(segs[16*(n-1-i):], a[:])
			if !sc.accept(",") {
				if i != n-1 {
					return nil, 0, sc.errorf("srv6 needs segments_left+1 (%d) segments, got %d", n, i+1)
				}
				break
			}
		}
		if err := sc.actExpect(")))", "tnl_push srv6"); err != nil {
			return nil, 0, err
		}
		h = append(h, srh...)
		h = append(h, segs...)
		built = VportSRv6
	default:
		return nil, 0, sc.errorf("expected udp(, gre(( or srv6( in the tunnel header")
	}
	if built != typ {
		return nil, 0, sc.errorAt(typeAt, "type=%d but the header is of tunnel type %d", typ, built)
	}
	if uint64(len(h)) != size {
		return nil, 0, sc.errorAt(sizeAt, "size=%d but the header has %d bytes", size, len(h))
	}
	return h, typ, nil
}

func init() {
	actionDecoders[ActionTunnelPush] = decodeTunnelPush
	actionParsers["tnl_push"] = parseTunnelPush
}
