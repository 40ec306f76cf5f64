package policy

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
)

// Ethernet types that the rule syntax names.
const (
	ethIPv4 = flowkeys.EthTypeIPv4
	ethIPv6 = flowkeys.EthTypeIPv6
	ethARP  = flowkeys.EthTypeARP
)

// Match is a parsed match: the packets k with k&Mask == Value. Value has
// no bit set outside Mask. Prerequisites are part of it: "tcp" and
// "tp_dst=80,tcp" both set the Ethernet type (0x0800, mask 0xffff) and
// the IP protocol (6, mask 0xff).
//
// The fields a Match can hold are those of the rule syntax: InPort,
// EthSrc, EthDst, EthType, VLANTCI (dl_vlan: the VID and the
// VLANTagPresent bit), IPProto, IPTOS (the DSCP bits, mask 0xfc), IPTTL,
// TpSrc and TpDst (L4 ports, or the ICMP type and code), IPv4Src and
// IPv4Dst (also ARP's sender and target protocol addresses), IPv6Src and
// IPv6Dst.
type Match struct {
	Value, Mask flowkeys.Key
}

// Matches reports whether k matches m.
func (m *Match) Matches(k *flowkeys.Key) bool {
	return flowkeys.EqualMasked(k, &m.Value, &m.Mask, flowkeys.FullRange)
}

// ParseError is a syntax or consistency error in a rule or match, with
// its place: File and Line (1-based) are empty and zero for ParseMatch;
// Col is the 1-based byte column in the line.
type ParseError struct {
	File string
	Line int
	Col  int
	Msg  string
}

// Error formats the error as "FILE:LINE:COL: MSG", or without a file
// "line LINE, column COL: MSG", or without a line "column COL: MSG".
func (e *ParseError) Error() string {
	if e.File == "" {
		if e.Line == 0 {
			return fmt.Sprintf("column %d: %s", e.Col, e.Msg)
		}
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// ParseMatch parses a match in the rule syntax without priority and
// actions, for example "tcp,nw_dst=10.0.0.0/8,tp_dst=80". The empty
// string matches every packet. Fields and shorthands are separated by
// commas or blanks; the rules' prerequisites are enforced.
func ParseMatch(s string) (Match, error) {
	p := &lineParser{s: s}
	m, err := p.parseFields(false)
	if err != nil {
		return Match{}, err
	}
	return m.Match, nil
}

// lineParser parses one line of rule text.
type lineParser struct {
	s   string
	pos int
	// table is the rule's table, for goto_table's check.
	table int
	// actPos are the offsets of the actions parsed.
	actPos []int
}

func (p *lineParser) errAt(pos int, format string, args ...any) *ParseError {
	return &ParseError{Col: pos + 1, Msg: fmt.Sprintf(format, args...)}
}

func isSep(c byte) bool { return c == ',' || c == ' ' || c == '\t' || c == '\r' }

func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func (p *lineParser) skipSeps() {
	for p.pos < len(p.s) && isSep(p.s[p.pos]) {
		p.pos++
	}
}

// mention records where a field was named, for prerequisite errors.
type mention struct {
	name string
	col  int
	f    fieldID
}

// parsedMatch is a match with what the rule parser also needs.
type parsedMatch struct {
	Match
	// inPortName is the port name of in_port=NAME.
	inPortName  string
	priority    int
	hasPriority bool
	table       int
	actionsPos  int // offset of the text after "actions=", or -1
}

// shorthandFor returns the shorthand that sets exactly Ethernet type t
// and IP protocol proto (-1: none), or "" when there is none.
func shorthandFor(t uint16, proto int) string {
	for name, s := range shorthands {
		if s.ethType == t && s.proto == proto {
			return name
		}
	}
	return ""
}

// shorthands maps a shorthand to the Ethernet type and IP protocol it
// sets (protocol -1: none). No two set the same pair.
var shorthands = map[string]struct {
	ethType uint16
	proto   int
}{
	"ip":    {ethIPv4, -1},
	"ipv6":  {ethIPv6, -1},
	"arp":   {ethARP, -1},
	"tcp":   {ethIPv4, header.IPProtoTCP},
	"udp":   {ethIPv4, header.IPProtoUDP},
	"icmp":  {ethIPv4, header.IPProtoICMP},
	"tcp6":  {ethIPv6, header.IPProtoTCP},
	"udp6":  {ethIPv6, header.IPProtoUDP},
	"icmp6": {ethIPv6, header.IPProtoICMPv6},
}

// matchFields maps a field name to the key field and value syntax.
var matchFields = map[string]struct {
	f    fieldID
	kind valueKind
}{
	"in_port":   {fInPort, vkPort},
	"dl_src":    {fDlSrc, vkMAC},
	"dl_dst":    {fDlDst, vkMAC},
	"dl_type":   {fDlType, vkEthType},
	"dl_vlan":   {fVLAN, vkVLAN},
	"nw_src":    {fNwSrc, vkIPv4},
	"nw_dst":    {fNwDst, vkIPv4},
	"arp_spa":   {fNwSrc, vkIPv4},
	"arp_tpa":   {fNwDst, vkIPv4},
	"nw_proto":  {fNwProto, vkU8},
	"nw_tos":    {fNwTOS, vkTOS},
	"nw_ttl":    {fNwTTL, vkU8},
	"tp_src":    {fTpSrc, vkTp},
	"tp_dst":    {fTpDst, vkTp},
	"icmp_type": {fTpSrc, vkICMP},
	"icmp_code": {fTpDst, vkICMP},
	"ipv6_src":  {fIPv6Src, vkIPv6},
	"ipv6_dst":  {fIPv6Dst, vkIPv6},
	"ct_state":  {fCTState, vkCTState},
	"ct_zone":   {fCTZone, vkCTZone},
	"ct_mark":   {fCTMark, vkCTMark},
}

type valueKind uint8

const (
	vkPort valueKind = iota
	vkMAC
	vkEthType
	vkVLAN
	vkIPv4
	vkIPv6
	vkU8
	vkTOS
	vkTp
	vkICMP
	vkCTState
	vkCTZone
	vkCTMark
)

// expected describes each value syntax for errors.
var expected = [...]string{
	vkPort:    "a port number (0-4294967295) or name",
	vkMAC:     "a MAC address (xx:xx:xx:xx:xx:xx, optionally /mask)",
	vkEthType: "an Ethernet type (0-0xffff)",
	vkVLAN:    "a VLAN ID (0-4095, or 0xffff for no VLAN)",
	vkIPv4:    "an IPv4 address or CIDR",
	vkIPv6:    "an IPv6 address or CIDR",
	vkU8:      "a number 0-255",
	vkTOS:     "a DSCP value (0-255, a multiple of 4)",
	vkTp:      "a port number (0-65535, optionally /mask)",
	vkICMP:    "a number 0-255",
	vkCTState: "conntrack state flags (+FLAG or -FLAG for each of new, est, rel, rpl, inv, trk, snat, dnat; e.g. +trk+est-new) or VALUE[/MASK]",
	vkCTZone:  "a zone (0-65535)",
	vkCTMark:  "a mark VALUE[/MASK] (32 bits)",
}

// parseFields parses comma- or blank-separated fields up to the end of
// the line or, when inRule, up to "actions=" (which must come).
func (p *lineParser) parseFields(inRule bool) (*parsedMatch, error) {
	pm := &parsedMatch{priority: DefaultPriority, actionsPos: -1}
	var mentions []mention
	for {
		p.skipSeps()
		if p.pos >= len(p.s) {
			break
		}
		start := p.pos
		for p.pos < len(p.s) && isNameChar(p.s[p.pos]) {
			p.pos++
		}
		name := p.s[start:p.pos]
		if name == "" {
			return nil, p.errAt(start, "expected a field name, found %q", p.s[start])
		}
		lname := strings.ToLower(name)
		if p.pos >= len(p.s) || p.s[p.pos] != '=' {
			if p.pos < len(p.s) && !isSep(p.s[p.pos]) {
				return nil, p.errAt(p.pos, "expected '=', ',' or a blank after %s, found %q", name, p.s[p.pos])
			}
			sh, ok := shorthands[lname]
			if !ok {
				if _, isField := matchFields[lname]; isField || lname == "priority" || lname == "table" || lname == "actions" {
					return nil, p.errAt(p.pos, "expected '=' after %s", name)
				}
				return nil, p.errAt(start, "unknown field or shorthand %q", name)
			}
			if err := setField(&pm.Match, fDlType, u16be(sh.ethType), fullMask(fDlType)); err != nil {
				return nil, p.errAt(start, "%s conflicts with an earlier dl_type", name)
			}
			if sh.proto >= 0 {
				if err := setField(&pm.Match, fNwProto, be{byte(sh.proto)}, fullMask(fNwProto)); err != nil {
					return nil, p.errAt(start, "%s conflicts with an earlier nw_proto", name)
				}
			}
			continue
		}
		p.pos++ // '='
		if lname == "actions" {
			if !inRule {
				return nil, p.errAt(start, "actions= is not allowed in a match")
			}
			pm.actionsPos = p.pos
			break
		}
		vstart := p.pos
		for p.pos < len(p.s) && !isSep(p.s[p.pos]) {
			p.pos++
		}
		val := p.s[vstart:p.pos]
		if lname == "table" {
			if !inRule {
				return nil, p.errAt(start, "table= is not allowed in a match")
			}
			n, ok := parseNum(val, 8)
			if !ok || n > MaxTable {
				return nil, p.errAt(vstart, "expected a table number (0-%d) after table=", MaxTable)
			}
			pm.table = int(n)
			continue
		}
		if lname == "priority" {
			if !inRule {
				return nil, p.errAt(start, "priority= is not allowed in a match")
			}
			n, ok := parseNum(val, 16)
			if !ok {
				return nil, p.errAt(vstart, "expected a priority (0-65535) after priority=")
			}
			pm.priority, pm.hasPriority = int(n), true
			continue
		}
		mf, ok := matchFields[lname]
		if !ok {
			return nil, p.errAt(start, "unknown field %q", name)
		}
		if mf.kind == vkPort && isPortName(val) {
			if !inRule {
				return nil, p.errAt(vstart, "in_port=%s: port names are resolved only in rules; give the port number", val)
			}
			if pm.inPortName != "" || pm.Mask.InPort != 0 {
				return nil, p.errAt(start, "%s=%s conflicts with an earlier match on the same field", name, val)
			}
			// Resolved by RuleSet.Resolve; until then it matches no port.
			pm.inPortName = val
			pm.Value.InPort, pm.Mask.InPort = NoPort, 0xffffffff
			continue
		}
		v, m, ok := parseValue(mf.kind, val)
		if !ok {
			return nil, p.errAt(vstart, "expected %s after %s=", expected[mf.kind], name)
		}
		if mf.f == fInPort && pm.inPortName != "" {
			return nil, p.errAt(start, "%s=%s conflicts with an earlier match on the same field", name, val)
		}
		if err := setField(&pm.Match, mf.f, v, m); err != nil {
			return nil, p.errAt(start, "%s=%s conflicts with an earlier match on the same field", name, val)
		}
		mentions = append(mentions, mention{name: lname, col: start, f: mf.f})
	}
	if inRule && pm.actionsPos < 0 {
		return nil, p.errAt(len(p.s), "expected actions=")
	}
	for _, mn := range mentions {
		if msg := prereqError(&pm.Match, mn); msg != "" {
			return nil, p.errAt(mn.col, "%s", msg)
		}
	}
	return pm, nil
}

// errConflict is returned by setField.
var errConflict = fmt.Errorf("conflicting values")

// setField adds v/m for field f to the match, failing if an earlier
// value disagrees on a bit both masks set.
func setField(m *Match, f fieldID, v, msk be) error {
	ov, om := get(&m.Value, f), get(&m.Mask, f)
	n := fields[f].size
	for i := range n {
		if (ov[i]^v[i])&om[i]&msk[i] != 0 {
			return errConflict
		}
	}
	for i := range n {
		om[i] |= msk[i]
		ov[i] |= v[i] & msk[i]
	}
	put(&m.Value, f, ov)
	put(&m.Mask, f, om)
	return nil
}

func u16be(x uint16) be {
	var v be
	binary.BigEndian.PutUint16(v[:], x)
	return v
}

func u32be(x uint32) be {
	var v be
	binary.BigEndian.PutUint32(v[:], x)
	return v
}

// prereqError checks a named field's prerequisites (only when the field
// is really matched: a /0 mask needs none) and returns what is wrong.
func prereqError(m *Match, mn mention) string {
	if mk := get(&m.Mask, mn.f); mk.isZero(fields[mn.f].size) {
		return ""
	}
	t, hasType := m.Value.EthType, m.Mask.EthType == 0xffff
	p, hasProto := m.Value.IPProto, m.Mask.IPProto == 0xff
	isIP := hasType && (t == ethIPv4 || t == ethIPv6)
	switch mn.name {
	case "nw_src", "nw_dst":
		if !hasType || t != ethIPv4 && t != ethARP {
			return mn.name + " requires ip or arp (add \"ip,\", \"arp,\" or dl_type=0x0800)"
		}
	case "arp_spa", "arp_tpa":
		if !hasType || t != ethARP {
			return mn.name + " requires arp (add \"arp,\" or dl_type=0x0806)"
		}
	case "ipv6_src", "ipv6_dst":
		if !hasType || t != ethIPv6 {
			return mn.name + " requires ipv6 (add \"ipv6,\" or dl_type=0x86dd)"
		}
	case "nw_proto":
		if !isIP && !(hasType && t == ethARP) {
			return "nw_proto requires ip, ipv6 or arp (add \"ip,\", \"ipv6,\" or \"arp,\")"
		}
	case "nw_tos", "nw_ttl":
		if !isIP {
			return mn.name + " requires ip or ipv6 (add \"ip,\" or \"ipv6,\")"
		}
	case "tp_src", "tp_dst":
		if !isIP || !hasProto || p != header.IPProtoTCP && p != header.IPProtoUDP {
			return mn.name + " requires tcp or udp (add \"tcp,\", \"udp,\", \"tcp6,\" or \"udp6,\")"
		}
	case "icmp_type", "icmp_code":
		if !hasType || !hasProto || !(t == ethIPv4 && p == header.IPProtoICMP || t == ethIPv6 && p == header.IPProtoICMPv6) {
			return mn.name + " requires icmp or icmp6 (add \"icmp,\" or \"icmp6,\")"
		}
	}
	return ""
}

// parseNum parses a decimal or 0x-prefixed hexadecimal number of at most
// the given bits.
func parseNum(s string, nbits int) (uint64, bool) {
	base := 10
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s, base = s[2:], 16
	}
	if s == "" || s[0] == '+' || s[0] == '-' || strings.IndexByte(s, '_') >= 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, nbits)
	return n, err == nil
}

// parseMaskedNum parses VALUE[/MASK], numbers of at most nbits bits:
// the value under the mask, and the mask (all ones without /MASK).
func parseMaskedNum(s string, nbits int) (v, m uint64, ok bool) {
	vs, ms, hasMask := strings.Cut(s, "/")
	v, ok = parseNum(vs, nbits)
	m = 1<<nbits - 1
	if hasMask {
		var ok2 bool
		m, ok2 = parseNum(ms, nbits)
		ok = ok && ok2
	}
	return v & m, m, ok
}

// parseValue parses a field value of the given syntax into big-endian
// value and mask.
func parseValue(kind valueKind, s string) (v, m be, ok bool) {
	switch kind {
	case vkPort:
		n, ok := parseNum(s, 32)
		return u32be(uint32(n)), u32be(0xffffffff), ok
	case vkEthType:
		n, ok := parseNum(s, 16)
		return u16be(uint16(n)), u16be(0xffff), ok
	case vkVLAN:
		n, ok := parseNum(s, 16)
		switch {
		case !ok:
		case n == 0xffff:
			return u16be(0), u16be(flowkeys.VLANTagPresent), true
		case n <= 0xfff:
			return u16be(uint16(n) | flowkeys.VLANTagPresent), u16be(0x1fff), true
		}
		return v, m, false
	case vkU8:
		n, ok := parseNum(s, 8)
		return be{byte(n)}, be{0xff}, ok
	case vkTOS:
		n, ok := parseNum(s, 8)
		return be{byte(n)}, be{0xfc}, ok && n&3 == 0
	case vkICMP:
		n, ok := parseNum(s, 8)
		return u16be(uint16(n)), u16be(0xffff), ok
	case vkCTState:
		st, mk, ok := parseCTState(s)
		return be{st}, be{mk}, ok
	case vkCTZone:
		n, ok := parseNum(s, 16)
		return u16be(uint16(n)), u16be(0xffff), ok
	case vkCTMark:
		n, mk, ok := parseMaskedNum(s, 32)
		return u32be(uint32(n)), u32be(uint32(mk)), ok
	case vkTp:
		n, mk, ok := parseMaskedNum(s, 16)
		return u16be(uint16(n)), u16be(uint16(mk)), ok
	case vkMAC:
		vs, ms, hasMask := strings.Cut(s, "/")
		a, ok := parseMAC(vs)
		mk := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		if hasMask {
			var ok2 bool
			mk, ok2 = parseMAC(ms)
			ok = ok && ok2
		}
		for i := range 6 {
			v[i], m[i] = a[i]&mk[i], mk[i]
		}
		return v, m, ok
	case vkIPv4, vkIPv6:
		n := 4
		if kind == vkIPv6 {
			n = 16
		}
		vs, ms, hasMask := strings.Cut(s, "/")
		a, ok := parseIP(vs, n)
		if !ok {
			return v, m, false
		}
		var mk []byte
		if !hasMask {
			mk = prefixMask(n*8, n)
		} else if l, ok := parseNum(ms, 8); ok && !strings.HasPrefix(ms, "0x") && int(l) <= n*8 {
			mk = prefixMask(int(l), n)
		} else if ma, ok := parseIP(ms, n); ok {
			mk = ma
		} else {
			return v, m, false
		}
		for i := range n {
			v[i], m[i] = a[i]&mk[i], mk[i]
		}
		return v, m, true
	}
	return v, m, false
}

// parseMAC parses six colon-separated bytes of one or two hex digits.
func parseMAC(s string) ([6]byte, bool) {
	var a [6]byte
	parts := strings.Split(s, ":")
	if len(parts) != 6 {
		return a, false
	}
	for i, p := range parts {
		if len(p) < 1 || len(p) > 2 {
			return a, false
		}
		n, err := strconv.ParseUint(p, 16, 8)
		if err != nil {
			return a, false
		}
		a[i] = byte(n)
	}
	return a, true
}

// parseIP parses an IPv4 (n == 4) or IPv6 (n == 16) address.
func parseIP(s string, n int) ([]byte, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return nil, false
	}
	if n == 4 && !a.Is4() || n == 16 && !a.Is6() {
		return nil, false
	}
	return a.AsSlice(), true
}

// prefixMask returns an n-byte mask with the first l bits set.
func prefixMask(l, n int) []byte {
	m := make([]byte, n)
	for i := range n {
		switch {
		case l >= 8:
			m[i] = 0xff
			l -= 8
		case l > 0:
			m[i] = byte(0xff << (8 - l))
			l = 0
		}
	}
	return m
}

// prefixLen returns l if m (n bytes) is a prefix mask of l bits, else -1.
func prefixLen(m []byte) int {
	l := 0
	for i, b := range m {
		if b == 0xff {
			l += 8
			continue
		}
		ones := bits.LeadingZeros8(^b)
		if byte(0xff<<(8-ones)) != b {
			return -1
		}
		l += ones
		for _, c := range m[i+1:] {
			if c != 0 {
				return -1
			}
		}
		return l
	}
	return l
}

// String formats the match canonically: fields in a fixed order, the
// Ethernet type and IP protocol as a shorthand where there is one,
// without the fields the match does not use. ParseMatch of the result
// gives m back. A match of everything is "".
func (m *Match) String() string {
	var parts []string
	add := func(s string) { parts = append(parts, s) }
	if m.Mask.InPort != 0 {
		add(fmt.Sprintf("in_port=%d", m.Value.InPort))
	}
	parts = appendCTMatch(parts, m)
	t, hasType := m.Value.EthType, m.Mask.EthType != 0
	p, hasProto := m.Value.IPProto, m.Mask.IPProto != 0
	protoDone := false
	if hasType {
		name := shorthandFor(t, -1)
		if hasProto {
			if n := shorthandFor(t, int(p)); n != "" {
				name = n
			}
		}
		if name == "" {
			add(fmt.Sprintf("dl_type=0x%04x", t))
		} else {
			add(name)
			protoDone = shorthands[name].proto >= 0
		}
	}
	if hasProto && !protoDone {
		add(fmt.Sprintf("nw_proto=%d", p))
	}
	macField := func(name string, v, mk [6]byte) {
		if mk == [6]byte{} {
			return
		}
		s := name + "=" + fmtMAC(v)
		if mk != [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} {
			s += "/" + fmtMAC(mk)
		}
		add(s)
	}
	macField("dl_src", m.Value.EthSrc, m.Mask.EthSrc)
	macField("dl_dst", m.Value.EthDst, m.Mask.EthDst)
	if m.Mask.VLANTCI != 0 {
		if m.Value.VLANTCI&flowkeys.VLANTagPresent == 0 {
			add("dl_vlan=0xffff")
		} else {
			add(fmt.Sprintf("dl_vlan=%d", m.Value.VLANTCI&0xfff))
		}
	}
	ipField := func(name string, v, mk []byte) {
		if allZero(mk) {
			return
		}
		a, _ := netip.AddrFromSlice(v)
		s := name + "=" + a.String()
		if l := prefixLen(mk); l < 0 {
			ma, _ := netip.AddrFromSlice(mk)
			s += "/" + ma.String()
		} else if l != len(mk)*8 {
			s += "/" + strconv.Itoa(l)
		}
		add(s)
	}
	src, dst := "nw_src", "nw_dst"
	if hasType && t == ethARP {
		src, dst = "arp_spa", "arp_tpa"
	}
	ipField(src, m.Value.IPv4Src[:], m.Mask.IPv4Src[:])
	ipField(dst, m.Value.IPv4Dst[:], m.Mask.IPv4Dst[:])
	ipField("ipv6_src", m.Value.IPv6Src[:], m.Mask.IPv6Src[:])
	ipField("ipv6_dst", m.Value.IPv6Dst[:], m.Mask.IPv6Dst[:])
	if m.Mask.IPTOS != 0 {
		add(fmt.Sprintf("nw_tos=%d", m.Value.IPTOS))
	}
	if m.Mask.IPTTL != 0 {
		add(fmt.Sprintf("nw_ttl=%d", m.Value.IPTTL))
	}
	icmp := hasProto && (p == header.IPProtoICMP || p == header.IPProtoICMPv6)
	tpField := func(name, icmpName string, v, mk uint16) {
		switch {
		case mk == 0:
		case icmp:
			add(fmt.Sprintf("%s=%d", icmpName, v))
		case mk == 0xffff:
			add(fmt.Sprintf("%s=%d", name, v))
		default:
			add(fmt.Sprintf("%s=0x%04x/0x%04x", name, v, mk))
		}
	}
	tpField("tp_src", "icmp_type", m.Value.TpSrc, m.Mask.TpSrc)
	tpField("tp_dst", "icmp_code", m.Value.TpDst, m.Mask.TpDst)
	return strings.Join(parts, ",")
}

func fmtMAC(a [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", a[0], a[1], a[2], a[3], a[4], a[5])
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
