package userdp

import (
	"fmt"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// Flow operations with the kernel's semantics (net/openvswitch/datapath.c,
// ovs_flow_cmd_new/set/get/del), on keys already converted and
// validated.
//
// Identity. A flow put with a UFID is identified by it; a flow put
// without one is identified by its key as given (the unmasked key).
// Looking a flow up by key (Get, Del, a modification without UFID) finds
// only flows without UFID, as the kernel's ovs_flow_tbl_lookup_exact.
//
// Duplicates. Creating a flow fails with EEXIST when a flow has its UFID,
// or when an installed flow matches the new flow's key as if it were a
// packet (the kernel's duplicate check, ovs_flow_tbl_lookup on the key):
// a flow that the new one would shadow for its own key. Other overlaps
// are allowed: see the comment on lookup order in table.go.

// flowSpec is a flow to put, converted.
type flowSpec struct {
	ufid      odp.UFID
	key, mask flowkeys.Key // the masked key and its mask
	ukey      flowkeys.Key // without UFID: the key as given, exact
	acts      *flowActions
	// name names a flow without UFID in errors (its key as given);
	// a flow with one is named by it, formatted only when an error
	// needs it (see flowSpec.nameOf).
	name string
}

// nameOf names the flow in errors.
func (s *flowSpec) nameOf() string {
	if s.name == "" && !s.ufid.IsZero() {
		return s.ufid.String()
	}
	return s.name
}

// put creates or modifies a flow as flags say (see odp.PutFlags) and
// returns the statistics of the flow it modified.
func (t *table) put(s *flowSpec, flags odp.PutFlags) (odp.FlowStats, error) {
	create, modify := flags&odp.PutCreate != 0, flags&odp.PutModify != 0
	if !create && !modify {
		return odp.FlowStats{}, einval("put flow: flags %#x ask neither to create nor to modify", uint8(flags))
	}
	t.mu.Lock()
	defer t.mu.Unlock()

	var f *megaflow
	if !create {
		// Modify only (OVS_FLOW_CMD_SET).
		f = t.findID(s.ufid, &s.ukey)
		if f == nil {
			return odp.FlowStats{}, fmt.Errorf("modify flow %s: %w", s.nameOf(), errFlowNotFound)
		}
	} else {
		if !s.ufid.IsZero() {
			f = t.byUFID[s.ufid]
		}
		if f == nil {
			f, _ = t.lookup(&s.key)
		}
		if f == nil {
			if t.limit > 0 && t.nflows.Load() >= t.limit {
				return odp.FlowStats{}, &flowLimitError{name: s.nameOf(), limit: t.limit}
			}
			nf := &megaflow{key: s.key, ufid: s.ufid}
			if s.ufid.IsZero() {
				uk := s.ukey
				nf.ukey = &uk
			}
			nf.acts.Store(s.acts)
			t.insert(nf, &s.mask)
			return odp.FlowStats{}, nil
		}
		if !modify {
			return odp.FlowStats{}, fmt.Errorf("create flow %s: %w", s.nameOf(), errFlowExists)
		}
		// May-create found a flow: it must be this very flow.
		if !t.sameFlow(f, s) {
			if f.ukey != nil && s.ufid.IsZero() {
				f = t.findID(odp.UFID{}, &s.ukey)
			} else {
				f = nil
			}
			if f == nil {
				return odp.FlowStats{}, fmt.Errorf("modify flow %s: an overlapping flow exists with another key or UFID: %w", s.nameOf(), errFlowNotFound)
			}
		}
	}
	st := f.stats()
	f.acts.Store(s.acts)
	if flags&odp.PutZeroStats != 0 {
		f.clearStats()
	}
	return st, nil
}

// sameFlow reports whether f is the flow s describes: same mask and
// masked key (the kernel's ovs_flow_cmp).
func (t *table) sameFlow(f *megaflow, s *flowSpec) bool {
	if f.st.mask != s.mask {
		return false
	}
	return flowkeys.EqualMasked(&f.key, &s.key, &s.mask, f.st.rng)
}

// findID returns the flow with UFID u, or when u is zero the flow without
// UFID whose key as given is k. The caller holds t.mu.
func (t *table) findID(u odp.UFID, k *flowkeys.Key) *megaflow {
	if !u.IsZero() {
		return t.byUFID[u]
	}
	for _, st := range t.list.Load().st {
		if f := st.find(k, st.hashMasked(k)); f != nil && f.ukey != nil && *f.ukey == *k {
			return f
		}
	}
	return nil
}

// get returns the flow with UFID u, or without UFID and key k.
func (t *table) get(u odp.UFID, k *flowkeys.Key) *megaflow {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.findID(u, k)
}

// del removes the flow with UFID u, or without UFID and key k, and
// returns it.
func (t *table) del(u odp.UFID, k *flowkeys.Key) *megaflow {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.findID(u, k)
	if f != nil {
		t.remove(f)
	}
	return f
}

// flowName names a flow in errors.
func flowName(u odp.UFID, k odp.FlowKey) string {
	if !u.IsZero() {
		return u.String()
	}
	return odp.FormatKey(k, nil, false)
}
