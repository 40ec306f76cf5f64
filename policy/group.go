package policy

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// ActGroup runs group Action.Group ("group:N").
const ActGroup ActionType = 110

// GroupType is the type of a group.
type GroupType uint8

// The group types (OpenFlow's).
const (
	// GroupAll runs every bucket ("type=all").
	GroupAll GroupType = iota + 1
	// GroupSelect runs one live bucket, chosen by a hash of the packet's
	// 5-tuple and the buckets' weights ("type=select").
	GroupSelect
	// GroupFastFailover runs the first live bucket ("type=fast_failover").
	GroupFastFailover
)

var groupTypeNames = map[GroupType]string{GroupAll: "all", GroupSelect: "select", GroupFastFailover: "fast_failover"}

// MaxGroupID is the highest group number (OpenFlow's OFPG_MAX).
const MaxGroupID = 0xffffff00

// Group is a group of buckets ("group_id=N,type=T,bucket=...").
type Group struct {
	// ID is the group number (0-MaxGroupID).
	ID uint32
	// Type is how the buckets are run.
	Type GroupType
	// Buckets are the group's buckets, in order.
	Buckets []Bucket
	// Line is the group's 1-based line in its file.
	Line int
}

// Bucket is one bucket of a group.
type Bucket struct {
	// Weight is the bucket's share of a select group's packets (0-65535,
	// default 1; 0: never chosen).
	Weight uint16
	// WatchPort is the port whose liveness (Env.PortUp) makes the bucket
	// live; NoPort when it has none (always live).
	WatchPort uint32
	// WatchPortName is the name of watch_port:NAME (WatchPort is then its
	// number once RuleSet.Resolve found it, else NoPort, and the bucket is
	// not live while the name is no port).
	WatchPortName string
	// Actions are the bucket's actions.
	Actions []Action
}

// String formats the group in the rule syntax.
func (g *Group) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "group_id=%d,type=%s", g.ID, groupTypeNames[g.Type])
	for _, k := range g.Buckets {
		b.WriteString(",bucket=")
		if k.Weight != 1 {
			fmt.Fprintf(&b, "weight:%d,", k.Weight)
		}
		switch {
		case k.WatchPortName != "":
			b.WriteString("watch_port:" + k.WatchPortName + ",")
		case k.WatchPort != NoPort:
			fmt.Fprintf(&b, "watch_port:%d,", k.WatchPort)
		}
		b.WriteString("actions=" + formatActions(k.Actions))
	}
	return b.String()
}

// equal reports whether two groups are the same (Line aside).
func (g *Group) equal(o *Group) bool {
	return g.ID == o.ID && g.Type == o.Type && slices.EqualFunc(g.Buckets, o.Buckets, func(a, b Bucket) bool {
		return a.Weight == b.Weight && a.WatchPort == b.WatchPort && a.WatchPortName == b.WatchPortName && slices.Equal(a.Actions, b.Actions)
	})
}

// Group returns group id of the rule set, or nil.
func (rs *RuleSet) Group(id uint32) *Group {
	i, ok := slices.BinarySearchFunc(rs.groups, id, func(g *Group, id uint32) int {
		switch {
		case g.ID < id:
			return -1
		case g.ID > id:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return rs.groups[i]
}

// Groups returns the rule set's groups, by ID (do not modify them).
func (rs *RuleSet) Groups() []*Group { return rs.groups }

// isGroupLine reports whether a rules line defines a group.
func isGroupLine(text string) bool {
	return strings.HasPrefix(strings.TrimLeft(text, " \t"), "group_id=")
}

// parseGroup parses a group line:
//
//	group_id=N,type=all|select|fast_failover,bucket=BUCKET[,bucket=BUCKET...]
//
// where BUCKET is [weight:W,][watch_port:PORT,]actions=ACTIONS or just
// ACTIONS, its actions running to the next ",bucket=".
func parseGroup(text string) (*Group, *ParseError) {
	p := &lineParser{s: text}
	g := &Group{}
	errAt := func(pos int, f string, args ...any) (*Group, *ParseError) { return nil, p.errAt(pos, f, args...) }
	// The header: group_id and type, up to the first bucket=.
	head := text
	first := strings.Index(text, "bucket=")
	if first >= 0 {
		head = text[:first]
	}
	seen := map[string]bool{}
	parts, offs := splitArgs(head)
	for i, part := range parts {
		at := offs[i]
		lead := len(part) - len(strings.TrimLeft(part, " \t"))
		part = strings.TrimSpace(part)
		at += lead
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok || seen[name] {
			return errAt(at, "expected group_id=N, type=TYPE and bucket=..., found %q", part)
		}
		seen[name] = true
		switch name {
		case "group_id":
			n, ok := parseNum(val, 32)
			if !ok || n > MaxGroupID {
				return errAt(at+len(name)+1, "expected a group number (0-%d) after group_id=", uint32(MaxGroupID))
			}
			g.ID = uint32(n)
		case "type":
			for t, n := range groupTypeNames {
				if n == val {
					g.Type = t
				}
			}
			if g.Type == 0 {
				return errAt(at+len(name)+1, "expected a group type (all, select or fast_failover) after type=")
			}
		default:
			return errAt(at, "unknown group field %q (expected group_id=, type= and bucket=)", name)
		}
	}
	if !seen["group_id"] {
		return errAt(0, "expected group_id=N")
	}
	if g.Type == 0 {
		return errAt(len(head), "expected type=all, type=select or type=fast_failover")
	}
	if first < 0 {
		return errAt(len(text), "expected bucket=ACTIONS: a group needs buckets")
	}
	// The buckets: each from its "bucket=" to the next ",bucket=" outside
	// parentheses.
	pos := first
	for pos < len(text) {
		start := pos + len("bucket=")
		end := len(text)
		depth := 0
		for i := start; i < len(text); i++ {
			switch text[i] {
			case '(':
				depth++
			case ')':
				depth--
			case ',':
				if depth == 0 && strings.HasPrefix(text[i+1:], "bucket=") {
					end = i
				}
			}
			if end != len(text) {
				break
			}
		}
		b, err := p.parseBucket(g, text[start:end], start)
		if err != nil {
			return nil, err
		}
		g.Buckets = append(g.Buckets, b)
		pos = end + 1
	}
	return g, nil
}

// parseBucket parses one bucket's text s (at offset pos).
func (p *lineParser) parseBucket(g *Group, s string, pos int) (Bucket, *ParseError) {
	b := Bucket{Weight: 1, WatchPort: NoPort}
	acts := s
	actPos := pos
	if strings.HasPrefix(s, "weight:") || strings.HasPrefix(s, "watch_port:") || strings.HasPrefix(s, "actions=") {
		// Options up to actions=.
		i := strings.Index(s, "actions=")
		if i < 0 {
			return b, p.errAt(pos, "expected actions= in the bucket after its options")
		}
		opts, offs := splitArgs(strings.TrimSuffix(s[:i], ","))
		for j, o := range opts {
			at := pos + offs[j]
			name, val, _ := strings.Cut(o, ":")
			switch {
			case o == "":
			case name == "weight":
				n, ok := parseNum(val, 16)
				if !ok {
					return b, p.errAt(at, "expected a weight (0-65535) after weight:")
				}
				b.Weight = uint16(n)
			case name == "watch_port" && isPortName(val):
				b.WatchPortName = val
			case name == "watch_port":
				n, ok := parseNum(val, 32)
				if !ok {
					return b, p.errAt(at, "expected a port number or name after watch_port:")
				}
				b.WatchPort = uint32(n)
			default:
				return b, p.errAt(at, "unknown bucket option %q (expected weight:W, watch_port:PORT, then actions=)", o)
			}
		}
		acts, actPos = s[i+len("actions="):], pos+i+len("actions=")
	}
	if g.Type == GroupFastFailover && b.WatchPort == NoPort && b.WatchPortName == "" {
		return b, p.errAt(pos, "a fast_failover bucket needs watch_port:PORT (its liveness)")
	}
	bp := &lineParser{s: acts, table: -1}
	as, err := bp.parseActions()
	if err != nil {
		pe := err.(*ParseError)
		pe.Col += actPos
		return b, pe
	}
	for i, a := range as {
		switch {
		case a.Type == ActGotoTable:
			return b, p.errAt(actPos+bp.actPos[i], "goto_table is not allowed in a bucket (use resubmit)")
		case a.Type == ActCT && a.CT.HasTable:
			return b, p.errAt(actPos+bp.actPos[i], "ct(...,table=N) is not allowed in a bucket")
		}
	}
	b.Actions = as
	return b, nil
}

// checkGroups checks that every group:N of the rules and groups names a
// group of the set, and that groups do not refer to themselves (in a
// loop), returning the first error.
func checkGroups(name string, rules []Rule, groups []*Group, rulePos map[int][]int) error {
	byID := map[uint32]*Group{}
	for _, g := range groups {
		if o := byID[g.ID]; o != nil {
			return &ParseError{File: name, Line: g.Line, Col: 1, Msg: fmt.Sprintf("group %d is defined twice (first on line %d)", g.ID, o.Line)}
		}
		byID[g.ID] = g
	}
	for i := range rules {
		r := &rules[i]
		for j, a := range r.Actions {
			if a.Type == ActGroup && byID[a.Group] == nil {
				col := 1
				if pos := rulePos[i]; j < len(pos) {
					col = pos[j] + 1
				}
				return &ParseError{File: name, Line: r.Line, Col: col, Msg: fmt.Sprintf("group:%d: there is no group %d", a.Group, a.Group)}
			}
		}
	}
	// Groups may refer to other groups, without loops (depth-first).
	state := map[uint32]int{} // 1: in progress, 2: done
	var visit func(g *Group) error
	visit = func(g *Group) error {
		switch state[g.ID] {
		case 1:
			return &ParseError{File: name, Line: g.Line, Col: 1, Msg: fmt.Sprintf("group %d refers to itself through its buckets", g.ID)}
		case 2:
			return nil
		}
		state[g.ID] = 1
		for _, b := range g.Buckets {
			for _, a := range b.Actions {
				if a.Type != ActGroup {
					continue
				}
				o := byID[a.Group]
				if o == nil {
					return &ParseError{File: name, Line: g.Line, Col: 1, Msg: fmt.Sprintf("group %d: group:%d: there is no group %d", g.ID, a.Group, a.Group)}
				}
				if err := visit(o); err != nil {
					return err
				}
			}
		}
		state[g.ID] = 2
		return nil
	}
	for _, g := range groups {
		if err := visit(g); err != nil {
			return err
		}
	}
	return nil
}

// sortGroups orders groups by ID.
func sortGroups(groups []*Group) {
	slices.SortFunc(groups, func(a, b *Group) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
}

// live reports whether bucket b is live: it has no watch port, or its
// watch port is up (Env.PortUp; an unresolved name is not).
func (t *translator) live(b *Bucket) bool {
	if b.WatchPort == NoPort {
		return b.WatchPortName == ""
	}
	return t.portUp == nil || t.portUp(b.WatchPort)
}

// group runs group:N. Every bucket runs on its own copy of the packet,
// as in Open vSwitch (the actions after the group see the packet as it
// was before it). Deciding runs every bucket, so that the mask holds
// what any of them reads whichever is live; a select group also reads
// the fields it hashes. Translating runs the buckets the type chooses:
// all of them, the first live one (fast_failover), or one live bucket
// by the hash and the weights (select).
func (w *walker) group(a *Action) {
	if w.rs == nil {
		return
	}
	g := w.rs.Group(a.Group)
	if g == nil {
		return
	}
	w.restoreVLAN()
	var hash uint32
	if g.Type == GroupSelect {
		hash = w.selectHash()
	}
	if w.tr == nil {
		for i := range g.Buckets {
			w.bucket(&g.Buckets[i])
		}
		return
	}
	w.commit()
	switch g.Type {
	case GroupAll:
		for i := range g.Buckets {
			w.bucket(&g.Buckets[i])
		}
	case GroupFastFailover:
		for i := range g.Buckets {
			if w.tr.live(&g.Buckets[i]) {
				w.bucket(&g.Buckets[i])
				break
			}
		}
	case GroupSelect:
		total := uint64(0)
		for i := range g.Buckets {
			if b := &g.Buckets[i]; w.tr.live(b) {
				total += uint64(b.Weight)
			}
		}
		if total == 0 {
			return
		}
		pick := uint64(hash) % total
		for i := range g.Buckets {
			b := &g.Buckets[i]
			if !w.tr.live(b) {
				continue
			}
			if pick < uint64(b.Weight) {
				w.bucket(b)
				break
			}
			pick -= uint64(b.Weight)
		}
	}
}

// bucket runs a bucket's actions on a copy of the packet: the walker's
// model of the packet is put back afterwards (what the actions read
// stays in the mask), and when translating, actions that change the
// datapath's packet are emitted inside a clone.
func (w *walker) bucket(b *Bucket) {
	// Buckets count as resubmits towards the pipeline's bound, so that
	// groups of groups cannot multiply the work without limit.
	w.resubmits++
	if w.resubmits > maxResubmits {
		w.stopped, w.overflow = true, true
		return
	}
	saved := *w
	var start int
	if w.tr != nil {
		start = len(w.tr.out)
	}
	w.stopped = false
	w.run(b.Actions)
	mask, normal, normalTCI, overflow, resubmits := w.mask, w.normal, w.normalTCI, w.overflow, w.resubmits
	if w.tr != nil && !w.overflow {
		// A bucket that only outputs needs no copy.
		emitted := w.tr.out[start:]
		plain := true
		for _, x := range emitted {
			switch x.(type) {
			case odp.Output, odp.Userspace:
			default:
				plain = false
			}
		}
		if !plain {
			c := odp.Clone{Actions: slices.Clone(emitted)}
			w.tr.out = append(w.tr.out[:start], c)
		}
	}
	out := w.tr
	*w = saved
	w.tr = out
	w.mask, w.normal, w.normalTCI, w.overflow, w.resubmits = mask, normal, normalTCI, overflow, resubmits
	if w.overflow {
		w.stopped = true
	}
}

// selectHash reads the fields a select group hashes, the 5-tuple (the
// Ethernet type; IPv4 or IPv6 source, destination and protocol; the TCP,
// UDP or SCTP ports of a packet that has them; the Ethernet addresses of
// a packet that is not IP), and returns their hash. The hash is the
// policy's own, not the datapath's dp_hash, so that both datapaths choose
// the same bucket for the same packet.
func (w *walker) selectHash() uint32 {
	// read marks n bytes at off as consulted (not under the planted bug)
	// and returns them.
	read := func(off, n int) []byte {
		if w.fault != faultSelectNoHashMask {
			w.read(off, ones[:n])
		}
		return w.cur.Bytes()[off : off+n]
	}
	var buf [40]byte
	b := buf[:0]
	et := w.read16(offEthType, 0xffff)
	b = binary.BigEndian.AppendUint16(b, et)
	switch et {
	case ethIPv4, ethIPv6:
		if et == ethIPv4 {
			b = append(b, read(offIPv4Src, 4)...)
			b = append(b, read(offIPv4Dst, 4)...)
		} else {
			b = append(b, read(offIPv6Src, 16)...)
			b = append(b, read(offIPv6Dst, 16)...)
		}
		p := w.read8(offIPProto, 0xff)
		b = append(b, p)
		if p == header.IPProtoTCP || p == header.IPProtoUDP || p == header.IPProtoSCTP {
			if w.read8(offIPFrag, 0xff) != flowkeys.FragLater {
				b = append(b, read(offTpSrc, 2)...)
				b = append(b, read(offTpDst, 2)...)
			}
		}
	default:
		b = append(b, read(offEthSrc, 6)...)
		b = append(b, read(offEthDst, 6)...)
	}
	// FNV-1a, then a final mix.
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	return h
}

// parseGroupAction parses "group:N" (rest is what follows "group").
func (p *lineParser) parseGroupAction(rest string, start int) (Action, error) {
	if !strings.HasPrefix(rest, ":") {
		return Action{}, p.errAt(start, "expected ':' and a group number after group")
	}
	n, err := strconv.ParseUint(rest[1:], 10, 32)
	if err != nil || n > MaxGroupID {
		return Action{}, p.errAt(start+1, "expected a group number (0-%d) after group:", uint32(MaxGroupID))
	}
	return Action{Type: ActGroup, Group: uint32(n)}, nil
}

// setGroups gives the rule set its groups (sorted by ID).
func (rs *RuleSet) setGroups(groups []*Group) {
	rs.groups = slices.Clone(groups)
	sortGroups(rs.groups)
}
