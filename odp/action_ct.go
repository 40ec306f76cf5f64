package odp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
)

// OVS_CT_ATTR_* types.
const (
	ctAttrCommit      = 1
	ctAttrZone        = 2
	ctAttrMark        = 3
	ctAttrLabels      = 4
	ctAttrHelper      = 5
	ctAttrNAT         = 6
	ctAttrForceCommit = 7
	ctAttrEventmask   = 8
	ctAttrTimeout     = 9
)

var ctAttrNames = map[uint16]string{
	ctAttrCommit: "commit", ctAttrZone: "zone", ctAttrMark: "mark", ctAttrLabels: "labels",
	ctAttrHelper: "helper", ctAttrNAT: "nat", ctAttrForceCommit: "force_commit",
	ctAttrEventmask: "eventmask", ctAttrTimeout: "timeout",
}

// OVS_NAT_ATTR_* types.
const (
	natAttrSrc         = 1
	natAttrDst         = 2
	natAttrIPMin       = 3
	natAttrIPMax       = 4
	natAttrProtoMin    = 5
	natAttrProtoMax    = 6
	natAttrPersistent  = 7
	natAttrProtoHash   = 8
	natAttrProtoRandom = 9
)

var natAttrNames = map[uint16]string{
	natAttrSrc: "src", natAttrDst: "dst", natAttrIPMin: "ip_min", natAttrIPMax: "ip_max",
	natAttrProtoMin: "proto_min", natAttrProtoMax: "proto_max", natAttrPersistent: "persistent",
	natAttrProtoHash: "hash", natAttrProtoRandom: "random",
}

// Limits of the conntrack helper and timeout policy names (Open vSwitch's
// parser: at most 15 and 31 characters; the kernel's: a NUL-terminated
// string of 16 and 32 bytes).
const (
	ctHelperMaxLen  = 15
	ctTimeoutMaxLen = 31
)

// CT sends the packet through connection tracking (OVS_ACTION_ATTR_CT,
// nested OVS_CT_ATTR_*).
//
// Text: "ct" alone, or "ct(commit,force_commit,zone=Z,mark=V/M,label=V/M,
// helper=H,timeout=T,nat(...))" with only what is present, in this order,
// as Open vSwitch prints it (zone only when not 0). The event mask, which
// Open vSwitch does not print, is shown as ",eventmask=0x..." after
// timeout so that it is not lost.
type CT struct {
	// Commit commits the connection; ForceCommit commits it and replaces
	// an existing entry in the other direction.
	Commit, ForceCommit bool
	// Zone is the conntrack zone (OVS_CT_ATTR_ZONE, u16), when HasZone.
	Zone    uint16
	HasZone bool
	// MarkValue/MarkMask set the connection mark's masked bits, when
	// HasMark (OVS_CT_ATTR_MARK: u32 value, u32 mask, host order).
	MarkValue, MarkMask uint32
	HasMark             bool
	// LabelsValue/LabelsMask set the 128-bit connection label's masked
	// bits, when HasLabels (OVS_CT_ATTR_LABELS: 16 bytes value, 16 bytes
	// mask, as the kernel stores them: the text shows them as one
	// big-endian 128-bit number).
	LabelsValue, LabelsMask [16]byte
	HasLabels               bool
	// Helper names the ALG ("ftp", "tftp"), empty for none.
	Helper string
	// Timeout names a timeout policy, empty for none.
	Timeout string
	// Eventmask selects the conntrack events delivered, when HasEventmask.
	Eventmask    uint32
	HasEventmask bool
	// NAT, when not nil, applies network address translation.
	NAT *NAT
}

// NAT is the nat() part of a ct action (OVS_CT_ATTR_NAT, nested
// OVS_NAT_ATTR_*). An empty NAT (no Src, no Dst) means "apply the NAT
// already set up for the connection".
type NAT struct {
	// Src or Dst selects source or destination NAT.
	Src, Dst bool
	// IPMin and IPMax bound the address range (both IPv4 or both IPv6);
	// the zero Addr means absent.
	IPMin, IPMax netip.Addr
	// ProtoMin and ProtoMax bound the port range; 0 means absent.
	ProtoMin, ProtoMax uint16
	// Persistent, ProtoHash and ProtoRandom are the range flags.
	Persistent, ProtoHash, ProtoRandom bool
}

// ActionType implements Action.
func (CT) ActionType() ActionType { return ActionCT }

func (c CT) appendPayload(b []byte) ([]byte, error) {
	if c.Commit {
		b = appendAttrHeader(b, ctAttrCommit, 0)
	}
	if c.ForceCommit {
		b = appendAttrHeader(b, ctAttrForceCommit, 0)
	}
	if c.HasZone {
		b = appendU16(b, ctAttrZone, c.Zone)
	}
	if c.HasMark {
		b = appendAttrHeader(b, ctAttrMark, 8)
		b = binary.NativeEndian.AppendUint32(b, c.MarkValue)
		b = binary.NativeEndian.AppendUint32(b, c.MarkMask)
	}
	if c.HasLabels {
		b = appendAttrHeader(b, ctAttrLabels, 32)
		b = append(b, c.LabelsValue[:]...)
		b = append(b, c.LabelsMask[:]...)
	}
	if c.Helper != "" {
		if len(c.Helper) > ctHelperMaxLen || strings.IndexByte(c.Helper, 0) >= 0 {
			return b, fmt.Errorf("ct helper %q: want 1 to %d characters and no NUL", c.Helper, ctHelperMaxLen)
		}
		b = appendAttr(b, ctAttrHelper, append([]byte(c.Helper), 0))
	}
	if c.Timeout != "" {
		if len(c.Timeout) > ctTimeoutMaxLen || strings.IndexByte(c.Timeout, 0) >= 0 {
			return b, fmt.Errorf("ct timeout %q: want 1 to %d characters and no NUL", c.Timeout, ctTimeoutMaxLen)
		}
		b = appendAttr(b, ctAttrTimeout, append([]byte(c.Timeout), 0))
	}
	if c.HasEventmask {
		b = appendU32(b, ctAttrEventmask, c.Eventmask)
	}
	if c.NAT != nil {
		var err error
		b, err = c.NAT.append(b)
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

func (n *NAT) append(b []byte) ([]byte, error) {
	b, start := beginNested(b, ctAttrNAT)
	if n.Src {
		b = appendAttrHeader(b, natAttrSrc, 0)
	}
	if n.Dst {
		b = appendAttrHeader(b, natAttrDst, 0)
	}
	for _, ip := range []struct {
		t uint16
		a netip.Addr
	}{{natAttrIPMin, n.IPMin}, {natAttrIPMax, n.IPMax}} {
		if ip.a.IsValid() {
			s := ip.a.AsSlice()
			b = appendAttr(b, ip.t, s)
		}
	}
	if n.IPMin.IsValid() && n.IPMax.IsValid() && n.IPMin.Is4() != n.IPMax.Is4() {
		return b, fmt.Errorf("nat address range mixes IPv4 and IPv6")
	}
	if n.ProtoMin != 0 {
		b = appendU16(b, natAttrProtoMin, n.ProtoMin)
	}
	if n.ProtoMax != 0 {
		b = appendU16(b, natAttrProtoMax, n.ProtoMax)
	}
	if n.Persistent {
		b = appendAttrHeader(b, natAttrPersistent, 0)
	}
	if n.ProtoHash {
		b = appendAttrHeader(b, natAttrProtoHash, 0)
	}
	if n.ProtoRandom {
		b = appendAttrHeader(b, natAttrProtoRandom, 0)
	}
	return endNested(b, start)
}

// actFormatHex128 writes 16 bytes as Open vSwitch's ds_put_hex does: "0x"
// and the hex digits without leading zeros, or "0".
func actFormatHex128(f *textBuf, v [16]byte) {
	i := 0
	for i < len(v) && v[i] == 0 {
		i++
	}
	if i == len(v) {
		f.WriteByte('0')
		return
	}
	fmt.Fprintf(f, "0x%x", v[i])
	writeHex(f, v[i+1:])
}

func (c CT) format(f *textBuf) {
	f.WriteString("ct")
	var parts []string
	if c.Commit {
		parts = append(parts, "commit")
	}
	if c.ForceCommit {
		parts = append(parts, "force_commit")
	}
	if c.HasZone && c.Zone != 0 {
		parts = append(parts, fmt.Sprintf("zone=%d", c.Zone))
	}
	if c.HasMark {
		parts = append(parts, "mark="+cAltHex(uint64(c.MarkValue))+"/"+cAltHex(uint64(c.MarkMask)))
	}
	if c.HasLabels {
		var l textBuf
		l.WriteString("label=")
		actFormatHex128(&l, actLabelBE(c.LabelsValue))
		if !allOnes(c.LabelsMask[:]) {
			l.WriteByte('/')
			actFormatHex128(&l, actLabelBE(c.LabelsMask))
		}
		parts = append(parts, l.String())
	}
	if c.Helper != "" {
		parts = append(parts, "helper="+c.Helper)
	}
	if c.Timeout != "" {
		parts = append(parts, "timeout="+c.Timeout)
	}
	if c.HasEventmask {
		parts = append(parts, "eventmask="+cAltHex(uint64(c.Eventmask)))
	}
	if c.NAT != nil {
		var n textBuf
		c.NAT.format(&n)
		parts = append(parts, n.String())
	}
	if len(parts) > 0 {
		f.WriteByte('(')
		f.WriteString(strings.Join(parts, ","))
		f.WriteByte(')')
	}
}

// actLabelBE converts the label as the kernel stores it (Open vSwitch's
// ovs_u128 in host order: the low 64 bits first on little-endian hosts)
// to the big-endian 128-bit number the text shows, and back (the
// conversion is its own inverse).
func actLabelBE(v [16]byte) [16]byte {
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		// Little-endian: reverse all 16 bytes.
		var out [16]byte
		for i := range v {
			out[i] = v[15-i]
		}
		return out
	}
	return v
}

func (n *NAT) format(f *textBuf) {
	f.WriteString("nat")
	var parts []string
	addRange := func(kind string) {
		var r textBuf
		r.WriteString(kind)
		if n.IPMin.IsValid() {
			r.WriteByte('=')
			bracket := n.IPMin.Is6() && n.ProtoMin != 0
			actFormatNATAddr(&r, n.IPMin, bracket)
			if n.IPMax.IsValid() && n.IPMax != n.IPMin && !(n.IPMax.Is6() && n.IPMax.IsUnspecified()) && !(n.IPMax.Is4() && n.IPMax.IsUnspecified()) {
				r.WriteByte('-')
				actFormatNATAddr(&r, n.IPMax, bracket)
			}
			if n.ProtoMin != 0 {
				fmt.Fprintf(&r, ":%d", n.ProtoMin)
				if n.ProtoMax != 0 && n.ProtoMax != n.ProtoMin {
					fmt.Fprintf(&r, "-%d", n.ProtoMax)
				}
			}
		}
		parts = append(parts, r.String())
	}
	if n.Src {
		addRange("src")
	}
	if n.Dst {
		if n.Src {
			parts = append(parts, "dst")
		} else {
			addRange("dst")
		}
	}
	if n.Persistent {
		parts = append(parts, "persistent")
	}
	if n.ProtoHash {
		parts = append(parts, "hash")
	}
	if n.ProtoRandom {
		parts = append(parts, "random")
	}
	if len(parts) > 0 {
		f.WriteByte('(')
		f.WriteString(strings.Join(parts, ","))
		f.WriteByte(')')
	}
}

func actFormatNATAddr(f *textBuf, a netip.Addr, bracket bool) {
	if a.Is4() {
		writeIPv4(f, a.As4())
		return
	}
	if bracket {
		f.WriteByte('[')
	}
	writeIPv6(f, a.As16())
	if bracket {
		f.WriteByte(']')
	}
}

func decodeCT(a *rawAttr, path string, _ int) (Action, error) {
	var c CT
	err := actNested(a, path, ctAttrNames, func(n *rawAttr, p string) error {
		var err error
		switch n.Type {
		case ctAttrCommit:
			err, c.Commit = actFlag(n, p), true
		case ctAttrForceCommit:
			err, c.ForceCommit = actFlag(n, p), true
		case ctAttrZone:
			c.Zone, err = actU16(n, p)
			c.HasZone = true
		case ctAttrMark:
			if err = wantLen(n, p, 8); err == nil {
				c.MarkValue = binary.NativeEndian.Uint32(n.Data)
				c.MarkMask = binary.NativeEndian.Uint32(n.Data[4:])
				c.HasMark = true
			}
		case ctAttrLabels:
			if err = wantLen(n, p, 32); err == nil {
				copy(c.LabelsValue[:], n.Data)
				copy(c.LabelsMask[:], n.Data[16:])
				c.HasLabels = true
			}
		case ctAttrHelper:
			c.Helper, err = actCString(n, p, ctHelperMaxLen)
		case ctAttrTimeout:
			c.Timeout, err = actCString(n, p, ctTimeoutMaxLen)
		case ctAttrEventmask:
			c.Eventmask, err = actU32(n, p)
			c.HasEventmask = true
		case ctAttrNAT:
			c.NAT, err = decodeNAT(n, p)
		default:
			err = actDecodeErr(n, p, "unknown ct attribute %d", n.Type)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// actCString decodes a NUL-terminated string attribute of 1 to max
// characters.
func actCString(a *rawAttr, path string, max int) (string, error) {
	d := a.Data
	if i := bytes.IndexByte(d, 0); i >= 0 {
		d = d[:i]
	}
	if len(d) == 0 || len(d) > max {
		return "", actDecodeErr(a, path, "string of %d characters, want 1 to %d", len(d), max)
	}
	return string(d), nil
}

func decodeNAT(a *rawAttr, path string) (*NAT, error) {
	n := &NAT{}
	err := actNested(a, path, natAttrNames, func(x *rawAttr, p string) error {
		var err error
		switch x.Type {
		case natAttrSrc:
			err, n.Src = actFlag(x, p), true
		case natAttrDst:
			err, n.Dst = actFlag(x, p), true
		case natAttrPersistent:
			err, n.Persistent = actFlag(x, p), true
		case natAttrProtoHash:
			err, n.ProtoHash = actFlag(x, p), true
		case natAttrProtoRandom:
			err, n.ProtoRandom = actFlag(x, p), true
		case natAttrIPMin, natAttrIPMax:
			var ip netip.Addr
			switch len(x.Data) {
			case 4:
				ip = netip.AddrFrom4([4]byte(x.Data))
			case 16:
				ip = netip.AddrFrom16([16]byte(x.Data))
			default:
				return actDecodeErr(x, p, "address of %d bytes, want 4 or 16", len(x.Data))
			}
			if x.Type == natAttrIPMin {
				n.IPMin = ip
			} else {
				n.IPMax = ip
			}
		case natAttrProtoMin:
			n.ProtoMin, err = actU16(x, p)
		case natAttrProtoMax:
			n.ProtoMax, err = actU16(x, p)
		default:
			err = actDecodeErr(x, p, "unknown nat attribute %d", x.Type)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if n.IPMin.IsValid() && n.IPMax.IsValid() && n.IPMin.Is4() != n.IPMax.Is4() {
		return nil, actDecodeErr(a, path, "address range mixes IPv4 and IPv6")
	}
	return n, nil
}

func parseCT(sc *scanner, _ int) (Action, error) {
	var c CT
	if !sc.accept("(") {
		return c, nil
	}
	seen := map[string]bool{}
	for {
		sc.skipSpace()
		if sc.accept(")") {
			break
		}
		start := sc.pos
		name := sc.ident()
		if seen[name] {
			return nil, sc.errorAt(start, "%s given twice in ct", name)
		}
		seen[name] = true
		var err error
		switch name {
		case "commit":
			c.Commit = true
		case "force_commit":
			c.ForceCommit = true
		case "zone":
			if err = sc.actExpect("=", "ct zone"); err == nil {
				var v uint64
				v, err = sc.actUint(16, "zone")
				c.Zone, c.HasZone = uint16(v), true
			}
		case "mark":
			if err = sc.actExpect("=", "ct mark"); err == nil {
				var v, m uint64
				if v, err = sc.actUintBase(32, 16, "mark"); err == nil {
					m = 0xffffffff
					if sc.accept("/") {
						m, err = sc.actUintBase(32, 16, "mark mask")
					}
				}
				c.MarkValue, c.MarkMask, c.HasMark = uint32(v), uint32(m), true
			}
		case "label":
			if err = sc.actExpect("=", "ct label"); err == nil {
				var v, m [16]byte
				if err = sc.intString(v[:]); err == nil {
					m = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
					if sc.accept("/") {
						err = sc.intString(m[:])
					}
				}
				c.LabelsValue, c.LabelsMask, c.HasLabels = actLabelBE(v), actLabelBE(m), true
			}
		case "helper", "timeout":
			if err = sc.actExpect("=", "ct "+name); err == nil {
				s0 := sc.pos
				v := sc.token(", \t\r\n)")
				max := ctHelperMaxLen
				if name == "timeout" {
					max = ctTimeoutMaxLen
				}
				if v == "" || len(v) > max {
					err = sc.errorAt(s0, "ct %s must have 1 to %d characters", name, max)
				} else if name == "helper" {
					c.Helper = v
				} else {
					c.Timeout = v
				}
			}
		case "eventmask":
			if err = sc.actExpect("=", "ct eventmask"); err == nil {
				var v uint64
				v, err = sc.actUint(32, "eventmask")
				c.Eventmask, c.HasEventmask = uint32(v), true
			}
		case "nat":
			c.NAT, err = parseNAT(sc)
		case "":
			err = sc.errorf("expected a ct option or ')'")
		default:
			err = sc.errorAt(start, "unknown ct option %q", name)
		}
		if err != nil {
			return nil, err
		}
		sc.skipSpace()
		if sc.accept(")") {
			break
		}
		if !sc.accept(",") {
			return nil, sc.errorf("expected ',' or ')' in ct")
		}
	}
	if c.Commit && c.ForceCommit {
		return nil, sc.errorf("ct cannot have both commit and force_commit")
	}
	return c, nil
}

// parseNAT parses what follows "nat": nothing, or "(src[=RANGE]|dst[=RANGE],
// persistent,hash,random)".
func parseNAT(sc *scanner) (*NAT, error) {
	n := &NAT{}
	if !sc.accept("(") {
		return n, nil
	}
	seen := map[string]bool{}
	for {
		sc.skipSpace()
		if sc.accept(")") {
			break
		}
		start := sc.pos
		name := sc.ident()
		if seen[name] {
			return nil, sc.errorAt(start, "%s given twice in nat", name)
		}
		seen[name] = true
		switch name {
		case "src", "dst":
			if name == "src" {
				n.Src = true
			} else {
				n.Dst = true
			}
			if sc.accept("=") {
				if err := parseNATRange(sc, n); err != nil {
					return nil, err
				}
			}
		case "persistent":
			n.Persistent = true
		case "hash":
			n.ProtoHash = true
		case "random":
			n.ProtoRandom = true
		case "":
			return nil, sc.errorf("expected a nat option or ')'")
		default:
			return nil, sc.errorAt(start, "unknown nat option %q", name)
		}
		sc.skipSpace()
		if sc.accept(")") {
			break
		}
		if !sc.accept(",") {
			return nil, sc.errorf("expected ',' or ')' in nat")
		}
	}
	if n.Src && n.Dst {
		return nil, sc.errorf("nat cannot have both src and dst")
	}
	if n.ProtoHash && n.ProtoRandom {
		return nil, sc.errorf("nat cannot have both hash and random")
	}
	return n, nil
}

// parseNATRange parses "ADDR[-ADDR][:PORT[-PORT]]" (IPv6 addresses
// optionally in brackets).
func parseNATRange(sc *scanner, n *NAT) error {
	if n.IPMin.IsValid() {
		return sc.errorf("nat address range given twice")
	}
	start := sc.pos
	addr := func() (netip.Addr, error) {
		// As Open vSwitch: IP_SCAN_FMT first, then IPV6_SCAN_FMT with or
		// without brackets. Digits then a dot can only be IPv4.
		s0 := sc.pos
		i := s0
		for i < len(sc.s) && sc.s[i] >= '0' && sc.s[i] <= '9' {
			i++
		}
		if i > s0 && i < len(sc.s) && sc.s[i] == '.' {
			a, err := sc.ipv4()
			return netip.AddrFrom4(a), err
		}
		sc.pos = s0
		a, err := sc.ipv6Bracketed()
		if err != nil {
			return netip.Addr{}, err
		}
		return netip.AddrFrom16(a), nil
	}
	lo, err := addr()
	if err != nil {
		return err
	}
	n.IPMin = lo
	if sc.accept("-") {
		hi, err := addr()
		if err != nil {
			return err
		}
		if hi.Is4() != lo.Is4() {
			return sc.errorAt(start, "nat address range mixes IPv4 and IPv6")
		}
		if hi.Compare(lo) < 0 {
			return sc.errorAt(start, "nat address range ends before it starts")
		}
		if hi != lo {
			n.IPMax = hi
		}
	}
	if sc.accept(":") {
		v, err := sc.actUintBase(16, 10, "nat port")
		if err != nil {
			return err
		}
		n.ProtoMin = uint16(v)
		if sc.accept("-") {
			w, err := sc.actUintBase(16, 10, "nat port")
			if err != nil {
				return err
			}
			if w < v {
				return sc.errorAt(start, "nat port range ends before it starts")
			}
			if w != v {
				n.ProtoMax = uint16(w)
			}
		}
	}
	return nil
}

func init() {
	actionDecoders[ActionCT] = decodeCT
	actionParsers["ct"] = parseCT
}
