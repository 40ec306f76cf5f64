package policy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unsafe"

	"github.com/ovsdp/ovsdp/odp"
)

// The stateful actions (numbered apart from action.go's, so that the two
// lists grow independently).
const (
	// ActCT sends the packet through connection tracking with Action.CT
	// ("ct(...)"); with CT.HasTable the pipeline goes on in table
	// Action.Table after recirculation, with the ct fields set.
	ActCT ActionType = 100 + iota
	// ActCTClear clears the packet's conntrack state ("ct_clear").
	ActCTClear
)

// CTArgs are the arguments of a ct action (ovs-actions(7)).
type CTArgs struct {
	// Commit commits the connection; Force (force) commits it and first
	// deletes an entry committed in the other direction.
	Commit, Force bool
	// Zone is the conntrack zone (zone=N; 0 is the default zone).
	Zone uint16
	// HasMark sets the connection's mark bits MarkMask to Mark
	// (mark=V[/M] or exec(set_field:V[/M]->ct_mark); needs commit).
	HasMark        bool
	Mark, MarkMask uint32
	// HasTable recirculates the packet after ct to go on in table
	// Action.Table (table=N).
	HasTable bool
	// NAT is the nat argument.
	NAT NATArgs
	// key is the canonical text of the action (its recirculation key).
	key string
}

// Kinds of NATArgs.
const (
	// NATNone: no nat argument.
	NATNone uint8 = iota
	// NATPlain is "nat": apply the NAT of an existing connection.
	NATPlain
	// NATSrc and NATDst are nat(src=...) and nat(dst=...).
	NATSrc
	NATDst
)

// NATArgs are the arguments of ct's nat.
type NATArgs struct {
	// Kind is NATNone, NATPlain, NATSrc or NATDst.
	Kind uint8
	// IPMin and IPMax bound the address range (IPMax invalid: one
	// address; both invalid: keep the address, map the ports).
	IPMin, IPMax netip.Addr
	// PortMin and PortMax bound the port range (0: none; PortMax 0: one
	// port).
	PortMin, PortMax uint16
	// Random, Hash and Persistent are the range flags.
	Random, Hash, Persistent bool
}

// ctKey returns the canonical text of a ct action: its recirculation
// key.
func (c *CTArgs) ctKey(table uint8) string {
	if c.key != "" {
		return c.key
	}
	return formatCT(c, table)
}

// formatCT formats a ct action in the rule syntax: "ct" alone, or
// ct(ARGS) with the arguments present, in a fixed order.
func formatCT(c *CTArgs, table uint8) string {
	var parts []string
	if c.Commit {
		parts = append(parts, "commit")
	}
	if c.Force {
		parts = append(parts, "force")
	}
	if c.Zone != 0 {
		parts = append(parts, "zone="+strconv.Itoa(int(c.Zone)))
	}
	if c.HasMark {
		s := fmt.Sprintf("mark=0x%x", c.Mark)
		if c.MarkMask != ^uint32(0) {
			s += fmt.Sprintf("/0x%x", c.MarkMask)
		}
		parts = append(parts, s)
	}
	switch n := &c.NAT; n.Kind {
	case NATPlain:
		parts = append(parts, "nat")
	case NATSrc, NATDst:
		s := "src="
		if n.Kind == NATDst {
			s = "dst="
		}
		addr := func(a netip.Addr) string {
			if a.Is6() {
				return "[" + a.String() + "]"
			}
			return a.String()
		}
		if n.IPMin.IsValid() {
			s += addr(n.IPMin)
			if n.IPMax.IsValid() {
				s += "-" + addr(n.IPMax)
			}
		}
		if n.PortMin != 0 {
			s += ":" + strconv.Itoa(int(n.PortMin))
			if n.PortMax != 0 {
				s += "-" + strconv.Itoa(int(n.PortMax))
			}
		}
		for _, f := range []struct {
			on   bool
			name string
		}{{n.Random, "random"}, {n.Hash, "hash"}, {n.Persistent, "persistent"}} {
			if f.on {
				s += "," + f.name
			}
		}
		parts = append(parts, "nat("+s+")")
	}
	if c.HasTable {
		parts = append(parts, "table="+strconv.Itoa(int(table)))
	}
	if len(parts) == 0 {
		return "ct"
	}
	return "ct(" + strings.Join(parts, ",") + ")"
}

// splitArgs splits s at the commas outside parentheses and brackets,
// returning each part with its offset in s.
func splitArgs(s string) (parts []string, offs []int) {
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ',':
			if depth == 0 {
				parts, offs = append(parts, s[start:i]), append(offs, start)
				start = i + 1
			}
		}
	}
	return append(parts, s[start:]), append(offs, start)
}

// parseCT parses a ct action token: "ct" or "ct(ARGS)" (rest is what
// follows "ct", at offset pos).
func (p *lineParser) parseCT(rest string, pos int) (Action, error) {
	a := Action{Type: ActCT}
	if rest == "" {
		a.CT.key = formatCT(&a.CT, 0)
		return a, nil
	}
	if rest[0] != '(' || !strings.HasSuffix(rest, ")") {
		return Action{}, p.errAt(pos, "expected (ARGUMENTS) after ct")
	}
	inner := rest[1 : len(rest)-1]
	base := pos + 1
	seen := map[string]bool{}
	parts, offs := splitArgs(inner)
	for i, arg := range parts {
		at := base + offs[i]
		name, val, hasVal := strings.Cut(arg, "=")
		nameOnly := name
		if j := strings.IndexByte(name, '('); j >= 0 {
			nameOnly = name[:j]
		}
		nameOnly = strings.ToLower(strings.TrimSpace(nameOnly))
		if seen[nameOnly] {
			return Action{}, p.errAt(at, "ct: %s given twice", nameOnly)
		}
		seen[nameOnly] = true
		valAt := at + len(name) + 1
		switch {
		case arg == "commit":
			a.CT.Commit = true
		case arg == "force":
			a.CT.Force = true
		case nameOnly == "zone" && hasVal:
			n, ok := parseNum(val, 16)
			if !ok {
				return Action{}, p.errAt(valAt, "ct: expected a zone (0-65535) after zone=")
			}
			a.CT.Zone = uint16(n)
		case nameOnly == "table" && hasVal:
			n, ok := parseNum(val, 8)
			if !ok || n > MaxTable {
				return Action{}, p.errAt(valAt, "ct: expected a table number (0-%d) after table=", MaxTable)
			}
			a.CT.HasTable, a.Table = true, uint8(n)
		case nameOnly == "mark" && hasVal:
			v, m, ok := parseMark(val)
			if !ok {
				return Action{}, p.errAt(valAt, "ct: expected a mark VALUE[/MASK] (32 bits, mask not 0) after mark=")
			}
			a.CT.HasMark, a.CT.Mark, a.CT.MarkMask = true, v, m
		case nameOnly == "exec":
			// exec(set_field:V[/M]->ct_mark), Open vSwitch's form of mark=.
			in, ok := strings.CutPrefix(arg, "exec(set_field:")
			v, m, ok2 := uint32(0), uint32(0), false
			if ok {
				var mv string
				mv, ok = strings.CutSuffix(in, "->ct_mark)")
				v, m, ok2 = parseMark(mv)
			}
			if !ok || !ok2 {
				return Action{}, p.errAt(at, "ct: exec() takes only set_field:VALUE[/MASK]->ct_mark")
			}
			if seen["mark"] {
				return Action{}, p.errAt(at, "ct: mark given twice")
			}
			seen["mark"] = true
			a.CT.HasMark, a.CT.Mark, a.CT.MarkMask = true, v, m
		case nameOnly == "nat":
			n, err := p.parseNAT(arg[len("nat"):], at+len("nat"))
			if err != nil {
				return Action{}, err
			}
			a.CT.NAT = n
		default:
			return Action{}, p.errAt(at, "ct: unknown argument %q (expected commit, force, zone=N, mark=V[/M], exec(set_field:V[/M]->ct_mark), nat[(...)] or table=N)", arg)
		}
	}
	if a.CT.HasMark && !a.CT.Commit && !a.CT.Force {
		return Action{}, p.errAt(pos, "ct: setting the connection mark requires commit (the datapath refuses it otherwise)")
	}
	if k := a.CT.NAT.Kind; (k == NATSrc || k == NATDst) && !a.CT.Commit && !a.CT.Force {
		return Action{}, p.errAt(pos, "ct: nat(src=...) and nat(dst=...) require commit (the datapath refuses them otherwise)")
	}
	a.CT.key = formatCT(&a.CT, a.Table)
	return a, nil
}

// parseMark parses a mark VALUE[/MASK] (the mask must not be 0).
func parseMark(s string) (v, m uint32, ok bool) {
	n, mk, ok := parseMaskedNum(s, 32)
	if !ok || mk == 0 {
		return 0, 0, false
	}
	return uint32(n), uint32(mk), true
}

// parseNAT parses what follows "nat" in a ct argument: nothing, or
// (src|dst=ADDR[-ADDR][:PORT[-PORT]][,random|hash|persistent...]),
// IPv6 addresses in brackets.
func (p *lineParser) parseNAT(rest string, pos int) (NATArgs, error) {
	if rest == "" {
		return NATArgs{Kind: NATPlain}, nil
	}
	if rest[0] != '(' || !strings.HasSuffix(rest, ")") {
		return NATArgs{}, p.errAt(pos, "ct: expected nothing or (src=...|dst=...) after nat")
	}
	parts, offs := splitArgs(rest[1 : len(rest)-1])
	var n NATArgs
	for i, arg := range parts {
		at := pos + 1 + offs[i]
		switch {
		case i == 0 && (strings.HasPrefix(arg, "src=") || strings.HasPrefix(arg, "dst=")):
			n.Kind = NATSrc
			if arg[0] == 'd' {
				n.Kind = NATDst
			}
			if err := parseNATRange(&n, arg[4:]); err != "" {
				return NATArgs{}, p.errAt(at+4, "ct: nat: %s", err)
			}
		case i > 0 && arg == "random" && !n.Random:
			n.Random = true
		case i > 0 && arg == "hash" && !n.Hash:
			n.Hash = true
		case i > 0 && arg == "persistent" && !n.Persistent:
			n.Persistent = true
		case i == 0:
			return NATArgs{}, p.errAt(at, "ct: nat: expected src=RANGE or dst=RANGE first")
		default:
			return NATArgs{}, p.errAt(at, "ct: nat: unknown or repeated flag %q (expected random, hash or persistent)", arg)
		}
	}
	if n.Random && n.Hash {
		return NATArgs{}, p.errAt(pos, "ct: nat: random and hash exclude each other")
	}
	return n, nil
}

// parseNATRange parses ADDR[-ADDR][:PORT[-PORT]] into n, returning what
// is wrong ("" when nothing).
func parseNATRange(n *NATArgs, s string) string {
	addrs, ports := s, ""
	if strings.Contains(s, "]") {
		// [IPv6]-[IPv6]:PORTS
		end := strings.LastIndexByte(s, ']')
		if end < 0 {
			return "expected ']' after an IPv6 address"
		}
		addrs, ports = s[:end+1], s[end+1:]
		if ports != "" && ports[0] != ':' {
			return fmt.Sprintf("unexpected %q after the address range", ports)
		}
	} else if i := strings.IndexByte(s, ':'); i >= 0 {
		addrs, ports = s[:i], s[i:]
	}
	lo, hi, hasHi := strings.Cut(addrs, "-")
	parse := func(a string) (netip.Addr, bool) {
		if v6, ok := strings.CutPrefix(a, "["); ok {
			v6, ok = strings.CutSuffix(v6, "]")
			ip, err := netip.ParseAddr(v6)
			return ip, ok && err == nil && ip.Is6() && ip.Zone() == ""
		}
		ip, err := netip.ParseAddr(a)
		return ip, err == nil && ip.Is4()
	}
	if addrs != "" {
		var ok bool
		if n.IPMin, ok = parse(lo); !ok {
			return fmt.Sprintf("expected an IPv4 address or a bracketed IPv6 address, found %q", lo)
		}
		if hasHi {
			if n.IPMax, ok = parse(hi); !ok {
				return fmt.Sprintf("expected an IPv4 address or a bracketed IPv6 address after '-', found %q", hi)
			}
			if n.IPMin.Is4() != n.IPMax.Is4() {
				return "the address range mixes IPv4 and IPv6"
			}
			if n.IPMax.Less(n.IPMin) {
				return fmt.Sprintf("the address range %s-%s is empty", n.IPMin, n.IPMax)
			}
		}
	}
	if ports != "" {
		plo, phi, hasPhi := strings.Cut(ports[1:], "-")
		a, ok := parseNum(plo, 16)
		if !ok || a == 0 {
			return fmt.Sprintf("expected a port (1-65535) after ':', found %q", plo)
		}
		n.PortMin = uint16(a)
		if hasPhi {
			b, ok := parseNum(phi, 16)
			if !ok || b < a {
				return fmt.Sprintf("expected a port range LOW-HIGH (1-65535, LOW <= HIGH), found %q", ports[1:])
			}
			n.PortMax = uint16(b)
		}
	}
	if !n.IPMin.IsValid() && n.PortMin == 0 {
		return "expected an address or :PORT range"
	}
	return ""
}

// stringCT formats the stateful actions; ok is false for the others.
func (a Action) stringCT() (string, bool) {
	switch a.Type {
	case ActCT:
		return formatCT(&a.CT, a.Table), true
	case ActCTClear:
		return "ct_clear", true
	case ActGroup:
		return fmt.Sprintf("group:%d", a.Group), true
	}
	return "", false
}

// checkCTRule checks what a rule with ct actions needs, as Open vSwitch
// does for OpenFlow: ct needs a match on ip or ipv6, an address range of
// nat the same family, and ct(table=N) is the last action (the packet's
// pass of the pipeline ends there: it goes on in table N after
// recirculation).
func (p *lineParser) checkCTRule(m *Match, as []Action, actPos []int) error {
	for i, a := range as {
		if a.Type != ActCT {
			continue
		}
		et := m.Value.EthType
		if m.Mask.EthType != 0xffff || et != ethIPv4 && et != ethIPv6 {
			return p.errAt(actPos[i], "ct requires ip or ipv6 in the match (add \"ip,\" or \"ipv6,\")")
		}
		if ip := a.CT.NAT.IPMin; ip.IsValid() && ip.Is4() != (et == ethIPv4) {
			return p.errAt(actPos[i], "ct: the nat address is not of the match's family")
		}
		if a.CT.HasTable && i != len(as)-1 {
			return p.errAt(actPos[i+1], "ct(...,table=N) must be the last action (the pipeline goes on in table N after recirculation)")
		}
	}
	return nil
}

// Offsets of the conntrack fields of the key.
var (
	offCTState = int(unsafe.Offsetof(kz.CTState))
	offCTZone  = int(unsafe.Offsetof(kz.CTZone))
	offCTMark  = int(unsafe.Offsetof(kz.CTMark))
	offCTLabel = int(unsafe.Offsetof(kz.CTLabels))
)

var zeros [16]byte

// ct runs a ct or ct_clear action.
func (w *walker) ct(a *Action) {
	w.restoreVLAN()
	if a.Type == ActCTClear {
		w.emitCTClear()
		w.untracked()
		return
	}
	// The datapath needs an IP flow (the kernel's "ct family
	// unspecified"): a rule's match makes sure of it, but a packet may
	// reach a ct through a resubmit.
	et := w.read16(offEthType, 0xffff)
	if et != ethIPv4 && et != ethIPv6 || a.CT.NAT.IPMin.IsValid() && a.CT.NAT.IPMin.Is4() != (et == ethIPv4) {
		if a.CT.HasTable {
			w.stopped = true
		}
		return
	}
	if w.tr != nil {
		w.commit()
		w.tr.ct(a)
	}
	// As in Open vSwitch, ct leaves the packet untracked for the rest of
	// this pass: its fields are only seen after recirculation.
	w.untracked()
	if a.CT.HasTable {
		// This pass of the pipeline ends; it goes on after recirculation.
		w.stopped = true
		if w.tr != nil && w.tr.recirc == nil {
			w.overflow = true // no recirculation IDs: drop
		}
	}
}

// untracked makes the packet's conntrack fields constants, zero, for
// the rest of the pass (after ct_clear, or ct).
func (w *walker) untracked() {
	w.write(offCTState, zeros[:1], ones[:1], false)
	w.write(offCTZone, zeros[:2], ones[:2], false)
	w.write(offCTMark, zeros[:4], ones[:4], false)
	w.write(offCTLabel, zeros[:16], ones[:16], false)
}

func (w *walker) emitCTClear() {
	if w.tr != nil {
		w.commit()
		w.tr.out = append(w.tr.out, odp.CTClear{})
	}
}

// ct emits ct and, with table=N, recirc with the ID of the
// continuation.
func (t *translator) ct(a *Action) {
	c := odp.CT{Commit: a.CT.Commit && !a.CT.Force, ForceCommit: a.CT.Force, Zone: a.CT.Zone, HasZone: a.CT.Zone != 0}
	if a.CT.HasMark {
		c.HasMark, c.MarkValue, c.MarkMask = true, a.CT.Mark, a.CT.MarkMask
	}
	if n := &a.CT.NAT; n.Kind != NATNone {
		c.NAT = &odp.NAT{Src: n.Kind == NATSrc, Dst: n.Kind == NATDst, IPMin: n.IPMin, IPMax: n.IPMax,
			ProtoMin: n.PortMin, ProtoMax: n.PortMax, Persistent: n.Persistent, ProtoHash: n.Hash, ProtoRandom: n.Random}
	}
	t.out = append(t.out, c)
	if a.CT.HasTable && t.recirc != nil {
		t.out = append(t.out, odp.Recirc{ID: t.recirc.RecircID(a.CT.ctKey(a.Table), int(a.Table))})
	}
}

// ctFlags are the ct_state flag names, bit i of the field being
// ctFlags[i] (OVS_CS_F_*).
var ctFlags = [8]string{"new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"}

// parseCTState parses ct_state's value: +FLAG/-FLAG sequences, or a
// number with an optional /mask.
func parseCTState(s string) (v, m uint8, ok bool) {
	if s == "" {
		return 0, 0, false
	}
	if s[0] != '+' && s[0] != '-' {
		n, mk, ok := parseMaskedNum(s, 8)
		return uint8(n), uint8(mk), ok
	}
	for s != "" {
		if s[0] != '+' && s[0] != '-' {
			return 0, 0, false
		}
		set := s[0] == '+'
		s = s[1:]
		end := strings.IndexAny(s, "+-")
		if end < 0 {
			end = len(s)
		}
		name := s[:end]
		s = s[end:]
		bit := -1
		for i, f := range ctFlags {
			if f == name {
				bit = i
			}
		}
		if bit < 0 || m&(1<<bit) != 0 {
			return 0, 0, false // unknown, or given twice
		}
		m |= 1 << bit
		if set {
			v |= 1 << bit
		}
	}
	return v, m, true
}

// formatCTState formats ct_state's value: the flags of mask as +FLAG or
// -FLAG, in bit order.
func formatCTState(v, m uint8) string {
	var b strings.Builder
	for i, f := range ctFlags {
		if m&(1<<i) == 0 {
			continue
		}
		if v&(1<<i) != 0 {
			b.WriteByte('+')
		} else {
			b.WriteByte('-')
		}
		b.WriteString(f)
	}
	return b.String()
}

// appendCTMatch appends the conntrack fields of m in the rule syntax.
func appendCTMatch(parts []string, m *Match) []string {
	if m.Mask.CTState != 0 {
		parts = append(parts, "ct_state="+formatCTState(m.Value.CTState, m.Mask.CTState))
	}
	if m.Mask.CTZone != 0 {
		parts = append(parts, fmt.Sprintf("ct_zone=%d", m.Value.CTZone))
	}
	if m.Mask.CTMark != 0 {
		s := fmt.Sprintf("ct_mark=0x%x", m.Value.CTMark)
		if m.Mask.CTMark != ^uint32(0) {
			s += fmt.Sprintf("/0x%x", m.Mask.CTMark)
		}
		parts = append(parts, s)
	}
	return parts
}
