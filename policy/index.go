package policy

import (
	"math/bits"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// The hashed rule lookup. A table's rules that match the same fields
// with the same mask form a group (Open vSwitch's classifier calls it a
// subtable). A group of at least hashMinRules rules is looked up with
// hash probes instead of rule by rule: the rules of a group agree with a
// packet exactly when their value equals the packet's key under the
// group's mask, so one probe of a hash of the masked key finds every
// rule of the group that matches, the first in evaluation order first.
// Smaller groups, and every rule of a table without a hashed group, are
// consulted one by one as before (RuleSet.match).
//
// Priorities and first-match semantics are kept: the table's rules are
// walked in evaluation order as steps, a rule or a group, a group taking
// its place at its first rule; a group's probe gives the position of its
// first matching rule, and the walk ends at the first step past the best
// such position, or at a single rule that matches before it.
//
// What the lookup consulted goes into the megaflow mask, as for the
// linear walk (see the package documentation), group by group:
//
//   - a group with a matching rule adds its whole mask (the mask of the
//     rule matched, when it is the answer): every key that agrees with
//     the packet on it has the same matching rules in the group;
//   - a group without one adds the shortest proof of that: its mask's
//     fields are probed as prefixes in the fixed consulting order (each
//     prefix a hash set of the rules' values under it), and the first
//     prefix that no rule's value agrees with is the proof, with its
//     prerequisites (an exact Ethernet type for L3 fields, also the IP
//     protocol and fragment type for L4 ones). A group of UDP 5-tuple
//     rules costs an ARP packet its Ethernet type only, as the linear
//     walk's proof would.
//
// The mask may hold more bits than the linear walk's, never fewer than
// soundness needs: a linear walk proves each failing rule by one of its
// fields, a group by the prefix of fields where the packet left every
// rule of the group.

// hashMinRules is the size from which a group of rules is hashed. Below
// it a group's rules cost less one by one (most fail on the bits the
// mask already holds, a few word operations each) and their proofs are
// finer. Tests lower it to exercise the hashed lookup on small sets.
var hashMinRules = 16

// ruleGroup is a group of a table's rules with the same mask.
type ruleGroup struct {
	mask flowkeys.Key
	rng  flowkeys.Range
	l4   bool
	// stages are the prefixes of the mask's fields in consulting order,
	// the last one the whole mask.
	stages []groupStage
}

// groupStage is one prefix of a group's mask, with the hash set of the
// group's rules' values under it: for each hash, the positions (in
// RuleSet.Rules, ascending) of the rules whose masked value has it.
type groupStage struct {
	mask flowkeys.Key
	rng  flowkeys.Range
	// proof is the prefix as a proof: the mask with the fields'
	// prerequisites.
	proof    flowkeys.Key
	proofRng flowkeys.Range
	buckets  map[uint64][]int32
}

// maskedHash hashes the words of k under mask m in r (a multiply and
// rotate per word). Its collisions cost a comparison each, nothing
// else: the rules decide which keys share a bucket, not the packets.
func maskedHash(k, m *flowkeys.Key, r flowkeys.Range) uint64 {
	kw, mw := k.Words()[r.Start:r.End], m.Words()[r.Start:r.End]
	mw = mw[:len(kw)]
	h := uint64(0x5ca1ab1e)
	for i, w := range kw {
		h = bits.RotateLeft64((h^(w&mw[i]))*0x9e3779b97f4a7c15, 31)
	}
	return h ^ h>>29
}

// lookupStep is a step of a table's walk: a rule (group < 0) or a
// group, at position pos (the group's first rule).
type lookupStep struct {
	pos   int32
	group int32
}

// tableIndex is a table's walk, for tables with a hashed group.
type tableIndex struct {
	steps  []lookupStep
	groups []ruleGroup
}

// buildIndex groups each table's rules by mask and indexes the tables
// that have a group of at least hashMinRules rules.
func (rs *RuleSet) buildIndex() {
	rs.index = nil
	for t := 0; t <= MaxTable; t++ {
		start, end := rs.table(t)
		if end-start < hashMinRules {
			continue
		}
		byMask := map[flowkeys.Key][]int32{}
		var order []flowkeys.Key
		for i := start; i < end; i++ {
			m := rs.Rules[i].Match.Mask
			if _, ok := byMask[m]; !ok {
				order = append(order, m)
			}
			byMask[m] = append(byMask[m], int32(i))
		}
		var ti tableIndex
		groupOf := map[int32]int32{} // a hashed group's first rule: its group
		member := map[int32]bool{}   // rules of hashed groups
		for _, m := range order {
			pos := byMask[m]
			if len(pos) < hashMinRules {
				continue
			}
			groupOf[pos[0]] = int32(len(ti.groups))
			for _, p := range pos {
				member[p] = true
			}
			ti.groups = append(ti.groups, rs.newGroup(pos))
		}
		if len(ti.groups) == 0 {
			continue
		}
		for i := start; i < end; i++ {
			p := int32(i)
			switch g, first := groupOf[p]; {
			case first:
				ti.steps = append(ti.steps, lookupStep{pos: p, group: g})
			case !member[p]:
				ti.steps = append(ti.steps, lookupStep{pos: p, group: -1})
			}
		}
		if rs.index == nil {
			rs.index = make([]*tableIndex, MaxTable+1)
		}
		rs.index[t] = &ti
	}
}

// newGroup builds the group of the rules at positions pos (ascending),
// which share one mask.
func (rs *RuleSet) newGroup(pos []int32) ruleGroup {
	r0 := &rs.Rules[pos[0]]
	g := ruleGroup{mask: r0.Match.Mask, rng: r0.rng, l4: r0.l4}
	var prefix flowkeys.Key
	addStage := func(m *flowkeys.Key) {
		st := groupStage{mask: *m, rng: m.Range(), buckets: map[uint64][]int32{}}
		st.proof = st.mask
		for f := range fieldID(numFields) {
			if v := get(&st.mask, f); v.isZero(fields[f].size) {
				continue
			}
			switch prereqOf(f) {
			case prereqL4:
				st.proof.IPProto, st.proof.IPFrag = 0xff, 0xff
				fallthrough
			case prereqL3:
				st.proof.EthType = 0xffff
			}
		}
		st.proofRng = st.proof.Range()
		for _, p := range pos {
			h := maskedHash(&rs.Rules[p].Match.Value, &st.mask, st.rng)
			st.buckets[h] = append(st.buckets[h], p)
		}
		g.stages = append(g.stages, st)
	}
	// One stage per field but the last (whose prefix is the whole mask,
	// fields outside the consulting order included).
	for i, f := range r0.fieldOrder {
		if i == len(r0.fieldOrder)-1 {
			break
		}
		orField(&prefix, f, get(&g.mask, f))
		addStage(&prefix)
	}
	addStage(&g.mask)
	return g
}

// probe returns the position of the first rule of g that k matches (-1:
// none) and the index of the stage whose proof the answer needs: the
// whole mask when a rule matches, else the first prefix no rule agrees
// with.
func (rs *RuleSet) probe(g *ruleGroup, k *flowkeys.Key) (pos, stage int) {
	for si := range g.stages {
		st := &g.stages[si]
		found := -1
		for _, p := range st.buckets[maskedHash(k, &st.mask, st.rng)] {
			if flowkeys.EqualMasked(k, &rs.Rules[p].Match.Value, &st.mask, st.rng) {
				found = int(p)
				break
			}
		}
		if found < 0 {
			return -1, si
		}
		if si == len(g.stages)-1 {
			return found, si
		}
	}
	return -1, len(g.stages) - 1 // no stages: cannot happen (a group has its whole mask)
}

// matchIndexed is match for a table with hashed groups (see above).
func (rs *RuleSet) matchIndexed(ti *tableIndex, k, mask *flowkeys.Key, f fault) int {
	best := -1 // the first matching rule of the groups probed so far
	for _, s := range ti.steps {
		pos := int(s.pos)
		if best >= 0 && pos > best {
			break
		}
		if s.group < 0 {
			if rs.matchRule(pos, k, mask, f) {
				return pos // before best: best is later than this step
			}
			continue
		}
		g := &ti.groups[s.group]
		p, si := rs.probe(g, k)
		if p >= 0 {
			orKey(mask, &g.mask, g.rng)
			if g.l4 {
				mask.IPFrag = 0xff
			}
			if best < 0 || p < best {
				best = p
			}
			continue
		}
		switch f {
		case faultNoFailMask:
			continue
		case faultGroupProofShort:
			// The prefix before the one that proved it.
			if si == 0 {
				continue
			}
			si--
		}
		st := &g.stages[si]
		orKey(mask, &st.proof, st.proofRng)
	}
	return best
}
