package odp

import (
	"encoding/hex"
	"fmt"
	"math"
)

// Actions that carry nested action lists: sample, clone, check_pkt_len
// and dec_ttl.

// OVS_SAMPLE_ATTR_* types.
const (
	sampleAttrProbability = 1
	sampleAttrActions     = 2
)

// Sample runs actions on a random fraction of packets
// (OVS_ACTION_ATTR_SAMPLE: nested u32 OVS_SAMPLE_ATTR_PROBABILITY and
// OVS_SAMPLE_ATTR_ACTIONS). Text: "sample(sample=9.7%,actions(ACTIONS))",
// the percentage with one decimal as Open vSwitch prints it.
type Sample struct {
	// Probability is the fraction of packets sampled, in units of
	// 1/UINT32_MAX (math.MaxUint32 samples every packet).
	Probability uint32
	// Actions run on the sampled packets.
	Actions Actions
}

// ActionType implements Action.
func (Sample) ActionType() ActionType { return ActionSample }

// SubLists implements NestedAction: the sampled packets' actions.
func (s Sample) SubLists() []SubList { return []SubList{{Name: "actions", Actions: s.Actions}} }

// MapSubLists implements NestedAction.
func (s Sample) MapSubLists(f func(Actions) Actions) Action {
	s.Actions = f(s.Actions)
	return s
}

func (s Sample) appendPayload(b []byte) ([]byte, error) {
	b = appendU32(b, sampleAttrProbability, s.Probability)
	return actAppendNestedActions(b, sampleAttrActions, s.Actions)
}

func (s Sample) format(f *textBuf) {
	pct := 100.0 * float64(s.Probability) / math.MaxUint32
	fmt.Fprintf(f, "sample(sample=%.1f%%,actions(", pct)
	formatActions(f, s.Actions)
	f.WriteString("))")
}

func decodeSample(a *rawAttr, path string, depth int) (Action, error) {
	var s Sample
	var haveP, haveA bool
	err := actNested(a, path, map[uint16]string{sampleAttrProbability: "probability", sampleAttrActions: "actions"},
		func(n *rawAttr, p string) error {
			var err error
			switch n.Type {
			case sampleAttrProbability:
				s.Probability, err = actU32(n, p)
				haveP = true
			case sampleAttrActions:
				s.Actions, err = actDecodeNestedActions(n, p, depth)
				haveA = true
			default:
				err = actDecodeErr(n, p, "unknown sample attribute %d", n.Type)
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	if !haveP || !haveA {
		return nil, actDecodeErr(a, path, "sample needs probability and actions")
	}
	return s, nil
}

func parseSample(sc *scanner, depth int) (Action, error) {
	if err := sc.actExpect("(sample=", "sample"); err != nil {
		return nil, err
	}
	start := sc.pos
	for sc.pos < len(sc.s) && (sc.s[sc.pos] >= '0' && sc.s[sc.pos] <= '9' || sc.s[sc.pos] == '.') {
		sc.pos++
	}
	var pct float64
	if _, err := fmt.Sscan(sc.s[start:sc.pos], &pct); err != nil || sc.pos == start || pct < 0 || pct > 100 {
		return nil, sc.errorAt(start, "bad sample percentage (want 0 to 100)")
	}
	if err := sc.actExpect("%,actions(", "sample"); err != nil {
		return nil, err
	}
	as, err := parseActionList(sc, depth+1)
	if err != nil {
		return nil, err
	}
	if err := sc.actExpect("))", "sample"); err != nil {
		return nil, err
	}
	p := math.Floor(math.MaxUint32*(pct/100.0) + 0.5)
	var prob uint32
	switch {
	case p <= 0:
		prob = 0
	case p >= math.MaxUint32:
		prob = math.MaxUint32
	default:
		prob = uint32(p)
	}
	return Sample{Probability: prob, Actions: as}, nil
}

// Clone runs actions on a copy of the packet, leaving the original
// unchanged for the actions that follow (OVS_ACTION_ATTR_CLONE: the
// nested actions directly). Text: "clone(ACTIONS)".
type Clone struct {
	// Actions run on the copy.
	Actions Actions
}

// ActionType implements Action.
func (Clone) ActionType() ActionType { return ActionClone }

// SubLists implements NestedAction: the copy's actions (unnamed in the
// text, "clone(ACTIONS)").
func (c Clone) SubLists() []SubList { return []SubList{{Actions: c.Actions}} }

// MapSubLists implements NestedAction.
func (c Clone) MapSubLists(f func(Actions) Actions) Action {
	c.Actions = f(c.Actions)
	return c
}

func (c Clone) appendPayload(b []byte) ([]byte, error) { return appendActions(b, c.Actions) }

func (c Clone) format(f *textBuf) {
	f.WriteString("clone(")
	formatActions(f, c.Actions)
	f.WriteByte(')')
}

func decodeClone(a *rawAttr, path string, depth int) (Action, error) {
	as, err := actDecodeNestedActions(a, path, depth)
	if err != nil {
		return nil, err
	}
	return Clone{Actions: as}, nil
}

func parseClone(sc *scanner, depth int) (Action, error) {
	if err := sc.actExpect("(", "clone"); err != nil {
		return nil, err
	}
	as, err := parseActionList(sc, depth+1)
	if err != nil {
		return nil, err
	}
	if err := sc.actExpect(")", "clone"); err != nil {
		return nil, err
	}
	return Clone{Actions: as}, nil
}

// OVS_CHECK_PKT_LEN_ATTR_* types.
const (
	cplAttrPktLen    = 1
	cplAttrGreater   = 2
	cplAttrLessEqual = 3
)

// CheckPktLen runs one of two action lists depending on the packet's
// length (OVS_ACTION_ATTR_CHECK_PKT_LEN: nested u16 PKT_LEN,
// ACTIONS_IF_GREATER, ACTIONS_IF_LESS_EQUAL). Text:
// "check_pkt_len(size=200,gt(ACTIONS),le(ACTIONS))".
type CheckPktLen struct {
	// PktLen is the length compared with.
	PktLen uint16
	// Greater runs when the packet is longer than PktLen, LessEqual
	// otherwise.
	Greater, LessEqual Actions
}

// ActionType implements Action.
func (CheckPktLen) ActionType() ActionType { return ActionCheckPktLen }

// SubLists implements NestedAction: gt, then le, as on the wire.
func (c CheckPktLen) SubLists() []SubList {
	return []SubList{{Name: "gt", Actions: c.Greater}, {Name: "le", Actions: c.LessEqual}}
}

// MapSubLists implements NestedAction.
func (c CheckPktLen) MapSubLists(f func(Actions) Actions) Action {
	c.Greater, c.LessEqual = f(c.Greater), f(c.LessEqual)
	return c
}

func (c CheckPktLen) appendPayload(b []byte) ([]byte, error) {
	b = appendU16(b, cplAttrPktLen, c.PktLen)
	b, err := actAppendNestedActions(b, cplAttrGreater, c.Greater)
	if err != nil {
		return b, err
	}
	return actAppendNestedActions(b, cplAttrLessEqual, c.LessEqual)
}

func (c CheckPktLen) format(f *textBuf) {
	fmt.Fprintf(f, "check_pkt_len(size=%d,gt(", c.PktLen)
	formatActions(f, c.Greater)
	f.WriteString("),le(")
	formatActions(f, c.LessEqual)
	f.WriteString("))")
}

func decodeCheckPktLen(a *rawAttr, path string, depth int) (Action, error) {
	var c CheckPktLen
	var have [4]bool
	err := actNested(a, path, map[uint16]string{cplAttrPktLen: "pkt_len", cplAttrGreater: "gt", cplAttrLessEqual: "le"},
		func(n *rawAttr, p string) error {
			var err error
			switch n.Type {
			case cplAttrPktLen:
				c.PktLen, err = actU16(n, p)
			case cplAttrGreater:
				c.Greater, err = actDecodeNestedActions(n, p, depth)
			case cplAttrLessEqual:
				c.LessEqual, err = actDecodeNestedActions(n, p, depth)
			default:
				return actDecodeErr(n, p, "unknown check_pkt_len attribute %d", n.Type)
			}
			have[n.Type] = true
			return err
		})
	if err != nil {
		return nil, err
	}
	if !have[cplAttrPktLen] || !have[cplAttrGreater] || !have[cplAttrLessEqual] {
		return nil, actDecodeErr(a, path, "check_pkt_len needs pkt_len, gt and le")
	}
	return c, nil
}

func parseCheckPktLen(sc *scanner, depth int) (Action, error) {
	if err := sc.actExpect("(size=", "check_pkt_len"); err != nil {
		return nil, err
	}
	v, err := sc.actUint(16, "size")
	if err != nil {
		return nil, err
	}
	c := CheckPktLen{PktLen: uint16(v)}
	if err := sc.actExpect(",gt(", "check_pkt_len"); err != nil {
		return nil, err
	}
	if c.Greater, err = parseActionList(sc, depth+1); err != nil {
		return nil, err
	}
	if err := sc.actExpect("),le(", "check_pkt_len"); err != nil {
		return nil, err
	}
	if c.LessEqual, err = parseActionList(sc, depth+1); err != nil {
		return nil, err
	}
	if err := sc.actExpect("))", "check_pkt_len"); err != nil {
		return nil, err
	}
	return c, nil
}

// decTTLAttrAction is OVS_DEC_TTL_ATTR_ACTION.
const decTTLAttrAction = 1

// DecTTL decrements the IP TTL or hop limit, running actions when it
// would reach zero (OVS_ACTION_ATTR_DEC_TTL: nested
// OVS_DEC_TTL_ATTR_ACTION holding the actions). Text:
// "dec_ttl(le_1(ACTIONS))".
type DecTTL struct {
	// LE1 runs when the TTL is 1 or less (the packet is then not sent on).
	LE1 Actions
}

// ActionType implements Action.
func (DecTTL) ActionType() ActionType { return ActionDecTTL }

// SubLists implements NestedAction: the actions for a TTL of 1 or less.
func (d DecTTL) SubLists() []SubList { return []SubList{{Name: "le_1", Actions: d.LE1}} }

// MapSubLists implements NestedAction.
func (d DecTTL) MapSubLists(f func(Actions) Actions) Action {
	d.LE1 = f(d.LE1)
	return d
}

func (d DecTTL) appendPayload(b []byte) ([]byte, error) {
	return actAppendNestedActions(b, decTTLAttrAction, d.LE1)
}

func (d DecTTL) format(f *textBuf) {
	f.WriteString("dec_ttl(le_1(")
	formatActions(f, d.LE1)
	f.WriteString("))")
}

func decodeDecTTL(a *rawAttr, path string, depth int) (Action, error) {
	var d DecTTL
	have := false
	err := actNested(a, path, map[uint16]string{decTTLAttrAction: "le_1"}, func(n *rawAttr, p string) error {
		if n.Type != decTTLAttrAction {
			return actDecodeErr(n, p, "unknown dec_ttl attribute %d", n.Type)
		}
		have = true
		var err error
		d.LE1, err = actDecodeNestedActions(n, p, depth)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !have {
		return nil, actDecodeErr(a, path, "dec_ttl needs its le_1 actions (OVS_DEC_TTL_ATTR_ACTION)")
	}
	return d, nil
}

func parseDecTTL(sc *scanner, depth int) (Action, error) {
	if err := sc.actExpect("(le_1(", "dec_ttl"); err != nil {
		return nil, err
	}
	as, err := parseActionList(sc, depth+1)
	if err != nil {
		return nil, err
	}
	if err := sc.actExpect("))", "dec_ttl"); err != nil {
		return nil, err
	}
	return DecTTL{LE1: as}, nil
}

// OVS_PSAMPLE_ATTR_* types and the cookie limit.
const (
	psampleAttrGroup  = 1
	psampleAttrCookie = 2
	// PsampleCookieMaxLen is the longest psample cookie (OVS_PSAMPLE_COOKIE_MAX_SIZE).
	PsampleCookieMaxLen = 16
)

// Psample sends the packet to a psample group
// (OVS_ACTION_ATTR_PSAMPLE: nested u32 GROUP and an optional COOKIE of
// at most 16 bytes). Text: "psample(group=12,cookie=0x0102...)".
type Psample struct {
	// Group is the psample group ID.
	Group uint32
	// Cookie is passed with the sample; nil for none.
	Cookie []byte
}

// ActionType implements Action.
func (Psample) ActionType() ActionType { return ActionPsample }

func (p Psample) appendPayload(b []byte) ([]byte, error) {
	if len(p.Cookie) > PsampleCookieMaxLen {
		return b, fmt.Errorf("psample cookie of %d bytes exceeds %d", len(p.Cookie), PsampleCookieMaxLen)
	}
	b = appendU32(b, psampleAttrGroup, p.Group)
	if len(p.Cookie) > 0 {
		b = appendAttr(b, psampleAttrCookie, p.Cookie)
	}
	return b, nil
}

func (p Psample) format(f *textBuf) {
	fmt.Fprintf(f, "psample(group=%d", p.Group)
	if len(p.Cookie) > 0 {
		f.WriteString(",cookie=")
		if p.Cookie[0] != 0 {
			// Open vSwitch's form (ds_put_hex): first byte unpadded.
			actFormatHexStripped(f, p.Cookie)
		} else {
			// Open vSwitch would drop leading zero bytes; keep them.
			f.WriteString("0x")
			writeHex(f, p.Cookie)
		}
	}
	f.WriteByte(')')
}

func decodePsample(a *rawAttr, path string, _ int) (Action, error) {
	var p Psample
	have := false
	err := actNested(a, path, map[uint16]string{psampleAttrGroup: "group", psampleAttrCookie: "cookie"}, func(n *rawAttr, np string) error {
		switch n.Type {
		case psampleAttrGroup:
			v, err := actU32(n, np)
			p.Group, have = v, true
			return err
		case psampleAttrCookie:
			if len(n.Data) > PsampleCookieMaxLen {
				return actDecodeErr(n, np, "cookie of %d bytes exceeds %d", len(n.Data), PsampleCookieMaxLen)
			}
			p.Cookie = append([]byte{}, n.Data...)
			return nil
		}
		return actDecodeErr(n, np, "unknown psample attribute %d", n.Type)
	})
	if err != nil {
		return nil, err
	}
	if !have {
		return nil, actDecodeErr(a, path, "psample needs a group")
	}
	return p, nil
}

func parsePsample(sc *scanner, _ int) (Action, error) {
	var p Psample
	haveGroup := false
	err := actParseFields(sc, "psample", func(name string) error {
		switch name {
		case "group":
			v, err := sc.actUint(32, "psample group")
			p.Group, haveGroup = uint32(v), true
			return err
		case "cookie":
			start := sc.pos
			if !sc.accept("0x") && !sc.accept("0X") {
				return sc.errorf("psample cookie must be hex starting with 0x")
			}
			d0 := sc.pos
			for isHex(sc.peek()) {
				sc.pos++
			}
			digits := sc.s[d0:sc.pos]
			if len(digits)%2 != 0 {
				digits = "0" + digits
			}
			d, err := hex.DecodeString(digits)
			if err != nil {
				return sc.errorAt(start, "bad psample cookie")
			}
			if len(d) == 0 {
				return sc.errorAt(start, "empty psample cookie")
			}
			if len(d) > PsampleCookieMaxLen {
				return sc.errorAt(start, "psample cookie of %d bytes exceeds %d", len(d), PsampleCookieMaxLen)
			}
			p.Cookie = d
			return nil
		}
		return errUnknownField
	})
	if err != nil {
		return nil, err
	}
	if !haveGroup {
		return nil, sc.errorf("psample needs group=")
	}
	return p, nil
}

func init() {
	actionDecoders[ActionSample] = decodeSample
	actionParsers["sample"] = parseSample
	actionDecoders[ActionClone] = decodeClone
	actionParsers["clone"] = parseClone
	actionDecoders[ActionCheckPktLen] = decodeCheckPktLen
	actionParsers["check_pkt_len"] = parseCheckPktLen
	actionDecoders[ActionDecTTL] = decodeDecTTL
	actionParsers["dec_ttl"] = parseDecTTL
	actionDecoders[ActionPsample] = decodePsample
	actionParsers["psample"] = parsePsample
}
