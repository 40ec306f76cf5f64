package policy

import (
	"encoding/binary"
	"unsafe"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
)

// Decision is what the policy decided for a flow key.
type Decision struct {
	// Actions are the actions of the rule matched in table 0 (DecideAt:
	// in its table), shared with the rule set: do not modify. Empty
	// means drop.
	Actions []Action
	// Mask has a one bit for every key bit the decision depended on: the
	// megaflow mask. Every key k2 with k2&Mask == k&Mask gets the same
	// Actions and, with the same learning-switch state and port list,
	// the same datapath actions from Translate.
	Mask flowkeys.Key
	// Rule is the index in RuleSet.Rules of the rule matched in table 0
	// (DecideAt: in its table), or -1 when no rule matched (the packet is
	// dropped).
	Rule int
	// Normal is set when a "normal" action was reached: the datapath
	// actions then depend on the learning switch, and a flow installed
	// from this decision must be revalidated when the switch learns,
	// moves or forgets the flow's Ethernet destination.
	Normal bool
	// NormalTCI is the outer VLAN tag (its tag-present bit and VLAN ID:
	// 0 when untagged) of the packet as the first normal action saw it,
	// after the actions before it: Env.Learn learns the source address
	// in the VLAN its input port maps that tag to.
	NormalTCI uint16

	// rs is the rule set that decided, whose tables Translate follows
	// for resubmit and goto_table.
	rs *RuleSet
}

// Decide evaluates the rules for k in priority order and returns the
// first matching rule's actions with the megaflow mask (see the package
// documentation for how the mask is built). It allocates nothing and is
// safe for concurrent use.
func (rs *RuleSet) Decide(k *flowkeys.Key) Decision {
	var d Decision
	rs.decide(k, &d)
	return d
}

// DecideInto is Decide writing into d, for callers that reuse Decisions.
func (rs *RuleSet) DecideInto(k *flowkeys.Key, d *Decision) {
	*d = Decision{}
	rs.decide(k, d)
}

// DecideAt is Decide starting in table (instead of table 0): the
// decision for a packet recirculated after ct(...,table=N), whose
// recirc_id the daemon maps to N.
func (rs *RuleSet) DecideAt(k *flowkeys.Key, table int) Decision {
	var d Decision
	rs.decideAt(k, table, &d)
	return d
}

// DecideAtInto is DecideAt writing into d.
func (rs *RuleSet) DecideAtInto(k *flowkeys.Key, table int, d *Decision) {
	*d = Decision{}
	rs.decideAt(k, table, d)
}

func (rs *RuleSet) decide(k *flowkeys.Key, d *Decision) { rs.decideAt(k, 0, d) }

func (rs *RuleSet) decideAt(k *flowkeys.Key, table int, d *Decision) {
	d.rs = rs
	if table < 0 || table > MaxTable {
		d.Rule = -1
		return
	}
	var w walker
	w.init(k, &d.Mask, nil)
	w.rs = rs
	w.fault = testFault
	if rs.recirc && w.fault != faultNoRecircMask {
		// Which table the packet starts in depends on its recirc_id.
		w.mask.RecircID = ^uint32(0)
	}
	d.Rule = w.lookup(table)
	if d.Rule >= 0 {
		d.Actions = rs.Rules[d.Rule].Actions
		w.run(d.Actions)
	}
	d.Mask = w.mask
	d.Normal = w.normal
	d.NormalTCI = w.normalTCI
}

// Bounds of a pipeline, as in Open vSwitch: resubmits nested deeper than
// maxDepth, or more than maxResubmits in all, drop the packet.
const (
	maxDepth     = 64
	maxResubmits = 4096
)

// lookup finds the rule of table t that the packet as modified so far
// matches (-1: none) and adds to the mask what the lookup consulted (see
// the package documentation): every field of the matching rule, and the
// proof of every failing rule before it. The bits the actions wrote are
// constants and add nothing; a match on dl_vlan reads the walker's outer
// tag, where it comes from.
func (w *walker) lookup(t int) int {
	if !w.wrote && w.outer.src == tagOuter {
		// The packet as it came (table 0, or no rewrite yet): the key
		// and the mask as they are.
		if t != 0 && w.fault == faultNoTableMask {
			m := w.mask
			return w.rs.match(t, &w.cur, &m, w.fault)
		}
		return w.rs.match(t, &w.cur, &w.mask, w.fault)
	}
	rs := w.rs
	// The packet as the lookup sees it, and the mask in the same terms:
	// written bits count as consulted already (they are constants).
	lk := w.cur
	lk.VLANTCI, lk.VLANTPID = w.outer.tci, w.outer.tpid
	view := w.mask
	vw, ww := view.Words(), w.written.Words()
	for i := range vw {
		vw[i] |= ww[i]
	}
	switch w.outer.src {
	case tagInner:
		view.VLANTCI, view.VLANTPID = w.mask.CVLANTCI, w.mask.CVLANTPID
	case tagConst:
		view.VLANTCI, view.VLANTPID = 0xffff, 0xffff
	}
	m := view
	found := rs.match(t, &lk, &m, w.fault)
	if t != 0 && w.fault == faultNoTableMask {
		return found
	}
	// Back to the key's terms: the outer tag's bits to where it comes
	// from, without the constants.
	tci, tpid := m.VLANTCI, m.VLANTPID
	m.VLANTCI, m.VLANTPID = w.mask.VLANTCI, w.mask.VLANTPID
	switch w.outer.src {
	case tagOuter:
		m.VLANTCI, m.VLANTPID = tci, tpid
	case tagInner:
		m.CVLANTCI, m.CVLANTPID = tci, tpid
	}
	mw, dw := m.Words(), w.mask.Words()
	for i := range mw {
		dw[i] |= mw[i] &^ ww[i]
	}
	return found
}

// match returns the first rule of table t that k matches (-1: none),
// adding to mask every field of that rule and the proof of every failing
// rule before it (index.go: by groups, for a table with hashed groups).
func (rs *RuleSet) match(t int, k, mask *flowkeys.Key, f fault) int {
	if rs.index != nil {
		if ti := rs.index[t]; ti != nil {
			return rs.matchIndexed(ti, k, mask, f)
		}
	}
	start, end := rs.table(t)
	for i := start; i < end; i++ {
		if rs.matchRule(i, k, mask, f) {
			return i
		}
	}
	return -1
}

// matchRule reports whether k matches rule i, adding to mask every field
// of the rule when it does, its proof of failure when it does not.
func (rs *RuleSet) matchRule(i int, k, mask *flowkeys.Key, f fault) bool {
	r := &rs.Rules[i]
	if flowkeys.EqualMasked(k, &r.Match.Value, &r.Match.Mask, r.rng) {
		// Every field of the rule was consulted and matched.
		orKey(mask, &r.Match.Mask, r.rng)
		if r.l4 {
			mask.IPFrag = 0xff
		}
		return true
	}
	if f == faultNone && failsInMask(r, k, mask) {
		return false // proven by what the mask already holds
	}
	if f != faultNoFailMask {
		addFailProof(r, k, mask, f)
	}
	return false
}

// failsInMask reports whether k differs from rule r on bits that mask
// already holds: every packet the megaflow matches then fails r as well,
// and r needs no proof of its own. (Those bits came with their
// prerequisites.) With many rules this is most of them: a long list of
// exact rules costs a few word operations each, not a proof each.
func failsInMask(r *Rule, k, mask *flowkeys.Key) bool {
	s, e := r.rng.Start, r.rng.End
	kw, vw := k.Words()[s:e], r.Match.Value.Words()[s:e]
	rw, mw := r.Match.Mask.Words()[s:e], mask.Words()[s:e]
	for i := range kw {
		if (kw[i]^vw[i])&rw[i]&mw[i] != 0 {
			return true
		}
	}
	return false
}

// resubmit runs the actions of the rule that matches the packet, as
// modified so far, in table t (nothing when none does).
func (w *walker) resubmit(t int) {
	if w.rs == nil {
		return // a Decision made by hand: no tables to follow
	}
	w.depth++
	w.resubmits++
	if w.depth > maxDepth || w.resubmits > maxResubmits {
		w.stopped, w.overflow = true, true
		return
	}
	if i := w.lookup(t); i >= 0 {
		w.run(w.rs.Rules[i].Actions)
	}
	w.depth--
}

// addFailProof adds to mask the bits that prove that rule r fails for
// k: for one failing field, its proof (failBits) with the field's
// prerequisites masked exactly (the Ethernet type for L3 fields, also
// the IP protocol and fragment type for L4 fields). A failing field whose
// proof the mask already holds is preferred (it adds nothing); otherwise
// the first failing field in the fixed order is taken. Fields that
// match are not needed: any packet that agrees with k on the proof fails
// the rule on that field, whatever its other fields.
func addFailProof(r *Rule, k, mask *flowkeys.Key, flt fault) {
	first := numFields
	var firstBits be
	for _, f := range r.fieldOrder {
		fi := &fields[f]
		rv, rm, pv := get(&r.Match.Value, f), get(&r.Match.Mask, f), get(k, f)
		fb, failed := failBits(pv, rv, rm, fi.size)
		if !failed || flt == faultNoCTFailMask && (f == fCTState || f == fCTZone || f == fCTMark) {
			continue
		}
		if fi.exact {
			fb = fullMask(f)
		} else if flt == faultFailBitsShort {
			// Drop the differing bit (the lowest one of the proof).
			for i := fi.size - 1; i >= 0; i-- {
				if fb[i] != 0 {
					fb[i] &= fb[i] - 1
					break
				}
			}
		}
		if covered(mask, f, fb) {
			return
		}
		if first == numFields {
			first, firstBits = f, fb
		}
	}
	if first == numFields {
		return // cannot happen: the rule failed on some field
	}
	orField(mask, first, firstBits)
	if flt == faultNoPrereq {
		return
	}
	switch p := prereqOf(first); p {
	case prereqL4:
		mask.IPProto = 0xff
		mask.IPFrag = 0xff
		fallthrough
	case prereqL3:
		mask.EthType = 0xffff
	}
}

type prereqKind uint8

const (
	prereqNone prereqKind = iota
	prereqL3              // needs an exact Ethernet type
	prereqL4              // needs exact Ethernet type, IP protocol and fragment type
)

func prereqOf(f fieldID) prereqKind {
	switch f {
	case fNwProto, fNwSrc, fNwDst, fIPv6Src, fIPv6Dst, fNwTOS, fNwTTL:
		return prereqL3
	case fTpSrc, fTpDst:
		return prereqL4
	}
	return prereqNone
}

// covered reports whether mask already holds the bits fb of field f and
// the field's prerequisites.
func covered(mask *flowkeys.Key, f fieldID, fb be) bool {
	mv := get(mask, f)
	for i := range fields[f].size {
		if fb[i]&^mv[i] != 0 {
			return false
		}
	}
	switch prereqOf(f) {
	case prereqL4:
		if mask.IPProto != 0xff || mask.IPFrag != 0xff {
			return false
		}
		fallthrough
	case prereqL3:
		return mask.EthType == 0xffff
	}
	return true
}

// Offsets of the key fields the actions read and write.
var (
	offInPort    = int(unsafe.Offsetof(kz.InPort))
	offEthSrc    = int(unsafe.Offsetof(kz.EthSrc))
	offEthDst    = int(unsafe.Offsetof(kz.EthDst))
	offEthType   = int(unsafe.Offsetof(kz.EthType))
	offVLANTCI   = int(unsafe.Offsetof(kz.VLANTCI))
	offVLANTPID  = int(unsafe.Offsetof(kz.VLANTPID))
	offCVLANTCI  = int(unsafe.Offsetof(kz.CVLANTCI))
	offCVLANTPID = int(unsafe.Offsetof(kz.CVLANTPID))
	offIPProto   = int(unsafe.Offsetof(kz.IPProto))
	offIPTOS     = int(unsafe.Offsetof(kz.IPTOS))
	offIPTTL     = int(unsafe.Offsetof(kz.IPTTL))
	offIPFrag    = int(unsafe.Offsetof(kz.IPFrag))
	offTpSrc     = int(unsafe.Offsetof(kz.TpSrc))
	offTpDst     = int(unsafe.Offsetof(kz.TpDst))
	offIPv4Src   = int(unsafe.Offsetof(kz.IPv4Src))
	offIPv4Dst   = int(unsafe.Offsetof(kz.IPv4Dst))
	offIPv6Src   = int(unsafe.Offsetof(kz.IPv6Src))
	offIPv6Dst   = int(unsafe.Offsetof(kz.IPv6Dst))
)

// walker runs a rule's actions over a model of the packet. cur is the
// packet as the actions have modified it so far; written marks the bits
// the actions have overwritten (their value no longer comes from the
// packet, so reading them adds nothing to the mask); pending marks
// written bits not yet emitted as set actions. Every read of a packet
// bit ORs it into mask. When tr is non-nil the walker also emits
// datapath operations.
type walker struct {
	mask    flowkeys.Key
	cur     flowkeys.Key
	written flowkeys.Key
	pending flowkeys.Key
	tr      *translator
	fault   fault // faultNone but in decide under soundness_test.go
	normal  bool
	// rs has the tables that resubmit and goto_table go to.
	rs *RuleSet
	// depth and resubmits count nested and all resubmits; stopped ends
	// the actions (dec_ttl on a TTL of 0 or 1, or a pipeline past its
	// bounds: overflow, which drops the packet).
	depth, resubmits int
	stopped          bool
	overflow         bool
	// wrote is set once an action has written a field (written is not
	// zero).
	wrote bool
	// origTpSrc and origTpDst are the pass's packet's transport ports
	// before any action wrote them (portInKey).
	origTpSrc, origTpDst uint16
	// outer and inner are the packet's VLAN tags as modified so far.
	outer, inner vlanTag
	// normalTCI is the outer tag's present bit and VID as the first
	// normal saw it.
	normalTCI uint16
	// dp is the form of the outer tag in the datapath's packet, when a
	// normal action has left it different from outer: each of normal's
	// outputs gets the tag its port wants (vlanForm). restore is set
	// after a normal: the next action that emits first brings the
	// datapath's packet back to outer.
	dp      vlanForm
	restore bool
}

// vlanForm is what stands in the datapath's packet for the walker's
// outer tag: the tag itself (formKeep; nothing when the packet has
// none), no tag (formNone), or a tag with tpid and tci (formConst).
type vlanForm struct {
	kind      uint8
	tpid, tci uint16
}

// Kinds of vlanForm.
const (
	formKeep uint8 = iota
	formNone
	formConst
)

// vlanTag is a VLAN tag of the packet being modified, and where its
// value comes from: the key's outer tag, its inner tag, or an action.
type vlanTag struct {
	tci, tpid uint16
	src       uint8
}

// Sources of a vlanTag.
const (
	tagOuter uint8 = iota // the key's VLANTCI and VLANTPID
	tagInner              // the key's CVLANTCI and CVLANTPID
	tagConst              // written by an action
)

// tagRead marks the bits tciMask of the tag's TCI and tpidMask of its
// TPID as consulted, in the key fields the tag comes from, and returns
// the TCI.
func (w *walker) tagRead(t *vlanTag, tciMask, tpidMask uint16) uint16 {
	switch t.src {
	case tagOuter:
		w.read16(offVLANTCI, tciMask)
		w.read16(offVLANTPID, tpidMask)
	case tagInner:
		w.read16(offCVLANTCI, tciMask)
		w.read16(offCVLANTPID, tpidMask)
	}
	return t.tci
}

// init starts a walk over packet k with the mask accumulated so far.
func (w *walker) init(k, mask *flowkeys.Key, tr *translator) {
	w.mask, w.tr = *mask, tr
	w.cur = *k
	w.origTpSrc, w.origTpDst = k.TpSrc, k.TpDst
	w.outer = vlanTag{tci: k.VLANTCI, tpid: k.VLANTPID, src: tagOuter}
	w.inner = vlanTag{tci: k.CVLANTCI, tpid: k.CVLANTPID, src: tagInner}
}

// portInKey makes the megaflow carry a nonzero transport port of the
// packet as it came (the datapath's key), which the kernel requires of
// a flow with set(tcp) or set(udp): validate_tp_port refuses one whose
// masked key has both ports 0. If the mask already keeps a nonzero bit
// of either port, nothing changes; else it matches a nonzero port
// whole (the destination first), or, when both are 0, both ports whole:
// the port set is then left out (hasPort false, translate's commit), as
// Open vSwitch's commit_set_port_action does, and every packet of the
// megaflow has both ports 0, so all of them are treated alike.
func (w *walker) portInKey() (hasPort bool) {
	switch {
	case w.origTpSrc&w.mask.TpSrc != 0 || w.origTpDst&w.mask.TpDst != 0:
	case w.origTpDst != 0:
		w.mask.TpDst = 0xffff
	case w.origTpSrc != 0:
		w.mask.TpSrc = 0xffff
	default:
		w.mask.TpSrc, w.mask.TpDst = 0xffff, 0xffff
		return false
	}
	return true
}

// read marks the bits m (n bytes, in memory layout) at off as consulted.
func (w *walker) read(off int, m []byte) {
	mb := w.mask.Bytes()[off:]
	wb := w.written.Bytes()[off:]
	for i, c := range m {
		mb[i] |= c &^ wb[i]
	}
}

var ones = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func (w *walker) read8(off int, m uint8) uint8 {
	w.read(off, []byte{m})
	return w.cur.Bytes()[off]
}

func (w *walker) read16(off int, m uint16) uint16 {
	var mb [2]byte
	binary.NativeEndian.PutUint16(mb[:], m)
	w.read(off, mb[:])
	return binary.NativeEndian.Uint16(w.cur.Bytes()[off:])
}

func (w *walker) read32(off int) uint32 {
	w.read(off, ones[:4])
	return binary.NativeEndian.Uint32(w.cur.Bytes()[off:])
}

// write sets the bits m of the n bytes at off to v (both in memory
// layout); pend makes them pending set actions.
func (w *walker) write(off int, v, m []byte, pend bool) {
	w.wrote = true
	cb := w.cur.Bytes()[off:]
	wb := w.written.Bytes()[off:]
	pb := w.pending.Bytes()[off:]
	for i, c := range m {
		cb[i] = cb[i]&^c | v[i]&c
		wb[i] |= c
		if pend {
			pb[i] |= c
		}
	}
}

func (w *walker) write8(off int, v, m uint8) { w.write(off, []byte{v}, []byte{m}, true) }

func (w *walker) write16(off int, v, m uint16, pend bool) {
	var vb, mb [2]byte
	binary.NativeEndian.PutUint16(vb[:], v)
	binary.NativeEndian.PutUint16(mb[:], m)
	w.write(off, vb[:], mb[:], pend)
}

// ipKind reads the Ethernet type and returns it if the packet is IPv4 or
// IPv6, else 0.
func (w *walker) ipKind() uint16 {
	t := w.read16(offEthType, 0xffff)
	if t == ethIPv4 || t == ethIPv6 {
		return t
	}
	return 0
}

// run executes the actions.
func (w *walker) run(as []Action) {
	for i := range as {
		if w.stopped {
			return
		}
		a := &as[i]
		switch a.Type {
		case ActResubmit, ActGotoTable:
			w.resubmit(int(a.Table))
		case ActCT, ActCTClear:
			w.ct(a)
		case ActGroup:
			w.group(a)
		case ActOutput:
			if a.PortName != "" && a.Port == NoPort {
				continue // a port name that is not a port (now)
			}
			w.restoreVLAN()
			inPort := w.inPort()
			if a.Port != inPort {
				w.emitOutput(a.Port)
			}
		case ActFlood, ActAll:
			w.restoreVLAN()
			w.flood()
		case ActNormal:
			w.restoreVLAN()
			inPort := w.inPort()
			w.read(offEthSrc, ones[:6])
			w.read(offEthDst, ones[:6])
			tci := w.normalVLAN()
			if !w.normal {
				w.normal, w.normalTCI = true, tci
			}
			if w.tr != nil {
				w.tr.normal(w, inPort, tci)
			}
			w.restore = true
		case ActController:
			w.restoreVLAN()
			w.emitUserspace(a.Userdata)
		case ActSetVLAN:
			w.restoreVLAN()
			ntci := flowkeys.VLANTagPresent | a.Arg&0xfff
			if w.tagRead(&w.outer, flowkeys.VLANTagPresent, 0)&flowkeys.VLANTagPresent != 0 {
				// Keep the tag's PCP and TPID.
				pcpMask := uint16(0xe000)
				if w.fault == faultNoPCPMask {
					pcpMask = 0
				}
				ntci |= w.tagRead(&w.outer, pcpMask, 0xffff) & 0xe000
				tpid := w.outer.tpid
				w.emitPopVLAN()
				w.emitPushVLAN(tpid, ntci)
				w.outer = vlanTag{tci: ntci, tpid: tpid, src: tagConst}
			} else {
				w.emitPushVLAN(flowkeys.EthTypeVLAN, ntci)
				// The absent outer tag becomes the absent inner one.
				w.inner = w.outer
				w.outer = vlanTag{tci: ntci, tpid: flowkeys.EthTypeVLAN, src: tagConst}
			}
		case ActSetVLANPCP:
			w.restoreVLAN()
			pcp := a.Arg & 7 << 13
			if w.tagRead(&w.outer, flowkeys.VLANTagPresent, 0)&flowkeys.VLANTagPresent != 0 {
				// Keep the tag's VID and TPID.
				ntci := pcp | w.tagRead(&w.outer, 0x1fff, 0xffff)&0x1fff
				tpid := w.outer.tpid
				w.emitPopVLAN()
				w.emitPushVLAN(tpid, ntci)
				w.outer = vlanTag{tci: ntci, tpid: tpid, src: tagConst}
			} else {
				ntci := pcp | flowkeys.VLANTagPresent
				w.emitPushVLAN(flowkeys.EthTypeVLAN, ntci)
				w.inner = w.outer
				w.outer = vlanTag{tci: ntci, tpid: flowkeys.EthTypeVLAN, src: tagConst}
			}
		case ActPushVLAN:
			w.restoreVLAN()
			// VID 0 and PCP 0, as Open vSwitch does. The key knows two
			// tags: a third one down is not followed.
			w.emitPushVLAN(a.Arg, flowkeys.VLANTagPresent)
			w.inner = w.outer
			w.outer = vlanTag{tci: flowkeys.VLANTagPresent, tpid: a.Arg, src: tagConst}
		case ActStripVLAN:
			w.restoreVLAN()
			if w.tagRead(&w.outer, flowkeys.VLANTagPresent, 0)&flowkeys.VLANTagPresent != 0 {
				w.emitPopVLAN()
				// The inner tag, if any, becomes the outer one. (The key
				// knows two tags at most: after both are gone, the packet
				// is taken to have none.)
				w.outer = w.inner
				w.inner = vlanTag{src: tagConst}
			}
		case ActSetDlSrc:
			w.write(offEthSrc, a.MAC[:], ones[:6], true)
		case ActSetDlDst:
			w.write(offEthDst, a.MAC[:], ones[:6], true)
		case ActSetNwSrc, ActSetNwDst, ActSetIPv6Src, ActSetIPv6Dst:
			w.setAddr(a)
		case ActSetNwTOS:
			if w.ipKind() != 0 {
				w.write8(offIPTOS, uint8(a.Arg), 0xfc)
			}
		case ActSetNwTTL:
			if w.ipKind() != 0 {
				w.write8(offIPTTL, uint8(a.Arg), 0xff)
			}
		case ActDecTTL:
			if w.ipKind() == 0 {
				continue
			}
			m := uint8(0xfe)
			if w.fault == faultNoTTLMask {
				m = 0
			}
			// The bits above the lowest tell whether TTL <= 1.
			if ttl := w.read8(offIPTTL, m); ttl <= 1 {
				// The packet goes no further: pending sets are moot.
				w.stopped = true
				return
			}
			if w.fault != faultNoTTLMask {
				w.read8(offIPTTL, 0xff)
			}
			w.write8(offIPTTL, w.cur.IPTTL-1, 0xff)
		case ActSetTpSrc, ActSetTpDst:
			if w.ipKind() == 0 {
				continue
			}
			p := w.read8(offIPProto, 0xff)
			frag := w.read8(offIPFrag, 0xff)
			if p != header.IPProtoTCP && p != header.IPProtoUDP || frag == flowkeys.FragLater {
				continue
			}
			off := offTpSrc
			if a.Type == ActSetTpDst {
				off = offTpDst
			}
			w.portInKey()
			w.write16(off, a.Arg, 0xffff, true)
		}
	}
}

// setAddr writes the address of mod_nw_src, mod_nw_dst (IPv4 packets)
// or set_field to ipv6_src, ipv6_dst (IPv6 packets).
func (w *walker) setAddr(a *Action) {
	et, off, v := uint16(ethIPv4), offIPv4Src, a.IP[:]
	switch a.Type {
	case ActSetNwDst:
		off = offIPv4Dst
	case ActSetIPv6Src:
		et, off, v = ethIPv6, offIPv6Src, a.IP6[:]
	case ActSetIPv6Dst:
		et, off, v = ethIPv6, offIPv6Dst, a.IP6[:]
	}
	if w.read16(offEthType, 0xffff) == et {
		w.write(off, v, ones[:len(v)], true)
	}
}

// normalVLAN reads the bits of the outer tag that normal needs and
// returns its present bit and VLAN ID (0 when untagged): the present
// bit, and the VID of a tagged packet (the learning table is keyed by
// VLAN, and the VLAN decides the ports). A priority-tagged packet (VID
// 0) may leave re-tagged with its input port's VLAN, keeping its PCP and
// TPID as Open vSwitch does, so those are read too.
//
// Unlike Open vSwitch's xlate_normal, which drops a frame whose tag is
// cut short (no tag, a VLAN TPID as Ethernet type), normal takes it as
// untagged: telling it apart would put the Ethernet type in every
// untagged megaflow, and the decision for such a frame would have no
// flow (the daemon refuses those as inexpressible), so each of them
// would be a miss.
func (w *walker) normalVLAN() uint16 {
	tci := w.tagRead(&w.outer, flowkeys.VLANTagPresent, 0)
	if tci&flowkeys.VLANTagPresent == 0 {
		return 0
	}
	if w.fault != faultNoVLANMask {
		tci = w.tagRead(&w.outer, 0xfff, 0)
	}
	if tci&0xfff == 0 && w.fault != faultNoPCPMask {
		w.tagRead(&w.outer, 0xe000, 0xffff)
	}
	return tci & (flowkeys.VLANTagPresent | 0xfff)
}

// restoreVLAN is called by every action that may emit: after a normal
// it brings the datapath's packet back to the walker's outer tag, which
// needs the whole tag when the packet has one (normal may have removed
// or replaced it). The bits are read whether or not this normal changed
// the tag, so that the mask does not depend on the learning switch.
func (w *walker) restoreVLAN() {
	if !w.restore {
		return
	}
	w.restore = false
	if w.outer.tci&flowkeys.VLANTagPresent != 0 && w.fault != faultNoRestoreMask {
		w.tagRead(&w.outer, 0xffff, 0xffff)
	}
	if w.tr != nil {
		w.setForm(vlanForm{kind: formKeep})
	}
}

// tagged reports whether form f puts a tag in the datapath's packet.
func (w *walker) tagged(f vlanForm) bool {
	return f.kind == formConst || f.kind == formKeep && w.outer.tci&flowkeys.VLANTagPresent != 0
}

// setForm emits what turns the datapath's outer tag from w.dp into f.
func (w *walker) setForm(f vlanForm) {
	if w.dp == f {
		return
	}
	if w.tagged(w.dp) {
		w.emitPopVLAN()
	}
	switch {
	case f.kind == formConst:
		w.emitPushVLAN(f.tpid, f.tci)
	case f.kind == formKeep && w.tagged(f):
		w.emitPushVLAN(w.outer.tpid, w.outer.tci)
	}
	w.dp = f
}

// outputForm is the form of the outer tag for a normal output with VLAN
// ID vid, or without a tag when strip is set (portVLAN.outputVID). As
// Open vSwitch's xvlan_input_translate and xvlan_put: the tag carries
// the PCP and TPID of the frame's tag (PCP 0 and TPID 0x8100 for an
// untagged frame), and a tag whose VID and PCP are both 0 is left out,
// so that a priority tag with a PCP stays on a port that tags VLAN 0
// and one without is removed. normalVLAN has read the PCP and TPID of
// a tag with VID 0, the only tag whose VID an output may change.
func (w *walker) outputForm(vid uint16, strip bool) vlanForm {
	tagged := w.outer.tci&flowkeys.VLANTagPresent != 0
	pcp := uint16(0)
	if tagged {
		pcp = w.outer.tci & 0xe000
	}
	switch {
	case (strip || vid == 0 && pcp == 0) && !tagged:
		return vlanForm{kind: formKeep}
	case strip || vid == 0 && pcp == 0:
		return vlanForm{kind: formNone}
	case tagged && w.outer.tci&0xfff == vid:
		return vlanForm{kind: formKeep}
	case tagged:
		return vlanForm{kind: formConst, tpid: w.outer.tpid, tci: pcp | flowkeys.VLANTagPresent | vid}
	}
	return vlanForm{kind: formConst, tpid: flowkeys.EthTypeVLAN, tci: flowkeys.VLANTagPresent | vid}
}

// inPort reads the input port.
func (w *walker) inPort() uint32 {
	if w.fault == faultNoInPortMask {
		return w.cur.InPort
	}
	return w.read32(offInPort)
}

// flood outputs to every port but the input port.
func (w *walker) flood() {
	in := w.inPort()
	if w.tr == nil {
		return
	}
	for _, p := range w.tr.ports {
		if p != in {
			w.emitOutput(p)
		}
	}
}

// commit emits the pending modifications as masked sets, one per
// header, before an action that sends or reshapes the packet.
func (w *walker) commit() {
	if w.pending.IsZero() {
		return
	}
	w.tr.commit(w)
	w.pending = flowkeys.Key{}
}

// The emit functions add a datapath action, after the pending sets, when
// translating; they do nothing when only deciding.

func (w *walker) emitOutput(port uint32) {
	if w.tr != nil {
		w.commit()
		w.tr.output(port)
		w.tr.mirrorEgress(port)
	}
}

func (w *walker) emitUserspace(userdata string) {
	if w.tr != nil {
		w.commit()
		w.tr.userspace(userdata)
	}
}

func (w *walker) emitPopVLAN() {
	if w.tr != nil {
		w.commit()
		w.tr.popVLAN()
	}
}

func (w *walker) emitPushVLAN(tpid, tci uint16) {
	if w.tr != nil {
		w.commit()
		w.tr.pushVLAN(tpid, tci)
	}
}

// orKey ORs the words of src in r into dst.
func orKey(dst, src *flowkeys.Key, r flowkeys.Range) {
	d := dst.Words()[r.Start:r.End]
	s := src.Words()[r.Start:r.End]
	s = s[:len(d)]
	for i := range d {
		d[i] |= s[i]
	}
}
