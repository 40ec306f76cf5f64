package userdp

import (
	"github.com/ovsdp/ovsdp/flowkeys"
)

// The recirculation memo: a firewall's established packets run a
// first-pass flow f1 whose actions are ct(...),recirc(N) (fastCTRecirc),
// then look the recirculated key up and meet a second flow f2. The
// recirculated key is the first-pass key with the ct fields and the
// recirculation ID changed, so each worker remembers, by the first
// lookup's cache hash, the f2 that the recirculated key of (f1, its
// actions, the ct fields) met, and a later packet with the same f1,
// actions and ct fields goes to f2 without the second lookup's masked
// compare of the whole key.
//
// Why that is f2's answer: the memo is filled only when f2's mask,
// outside the ct fields and the recirculation ID, asks for no bit that
// f1's mask does not (subsetOutsideCT). The packet's key matched f1
// (its first lookup), and the ct action without NAT and without
// reassembly changes only the ct fields, so on every other bit of f2's
// mask the key is what it was when the memo was filled (both keys
// agree with f1 on f1's mask); the ct fields are compared one by one
// (sameCTFields) and the recirculation ID is the actions'. f2 itself is
// checked as the exact-match cache checks its entries: a deleted flow
// (removed, replaced, flushed) is dead and never used again, and its
// actions are loaded afresh (a modified flow's new actions run). Flows
// added meanwhile that overlap f2 are the installer's business, as for
// the exact-match cache. A memo hit counts as an exact-match cache hit.

// recircMemoEntries is the size of each worker's memo (a power of two;
// tests may change it before making a worker).
var recircMemoEntries = 1024

// ctFields are a key's conntrack fields, as a ct action sets them.
type ctFields struct {
	state, origProto     uint8
	zone                 uint16
	mark                 uint32
	labels               [16]byte
	origV4Src, origV4Dst [4]byte
	origV6Src, origV6Dst [16]byte
	origTpSrc, origTpDst uint16
}

// recircMemo is one entry of the memo.
type recircMemo struct {
	f1   *megaflow
	acts *flowActions // f1's actions that ran (fastCTRecirc)
	f2   *megaflow
	ct   ctFields
}

// ctFieldsOf returns k's conntrack fields.
func ctFieldsOf(k *flowkeys.Key) ctFields {
	return ctFields{k.CTState, k.CTOrigProto, k.CTZone, k.CTMark, k.CTLabels,
		k.CTOrigIPv4Src, k.CTOrigIPv4Dst, k.CTOrigIPv6Src, k.CTOrigIPv6Dst, k.CTOrigTpSrc, k.CTOrigTpDst}
}

// sameCTFields reports whether k's conntrack fields are m's. It compares
// field by field, each load the size of the store that the ct action
// just made (a wider load across several of them would wait for them to
// reach the cache).
func sameCTFields(m *ctFields, k *flowkeys.Key) bool {
	return m.state == k.CTState && m.zone == k.CTZone && m.mark == k.CTMark &&
		m.origProto == k.CTOrigProto && m.origV4Src == k.CTOrigIPv4Src && m.origV4Dst == k.CTOrigIPv4Dst &&
		m.origTpSrc == k.CTOrigTpSrc && m.origTpDst == k.CTOrigTpDst && m.labels == k.CTLabels &&
		m.origV6Src == k.CTOrigIPv6Src && m.origV6Dst == k.CTOrigIPv6Dst
}

// ctKeyBits has every bit of the fields a ct action and a recirculation
// set.
var ctKeyBits = func() flowkeys.Key {
	var k flowkeys.Key
	k.RecircID = ^uint32(0)
	k.CTState, k.CTOrigProto, k.CTZone, k.CTMark = 0xff, 0xff, 0xffff, ^uint32(0)
	for i := range k.CTLabels {
		k.CTLabels[i] = 0xff
	}
	for i := range 4 {
		k.CTOrigIPv4Src[i], k.CTOrigIPv4Dst[i] = 0xff, 0xff
	}
	for i := range 16 {
		k.CTOrigIPv6Src[i], k.CTOrigIPv6Dst[i] = 0xff, 0xff
	}
	k.CTOrigTpSrc, k.CTOrigTpDst = 0xffff, 0xffff
	return k
}()

// subsetOutsideCT reports whether every bit of mask m2 outside the ct
// fields and the recirculation ID is in m1 too.
func subsetOutsideCT(m2 *flowkeys.Key, r2 flowkeys.Range, m1 *flowkeys.Key) bool {
	a, b, ct := m2.Words(), m1.Words(), ctKeyBits.Words()
	for i := r2.Start; i < r2.End; i++ {
		if a[i]&^(b[i]|ct[i]) != 0 {
			return false
		}
	}
	return true
}

// recircFromCT is runCTRecirc's recirculated lookup and execution (the
// ct action succeeded): through the memo when the first-pass flow f1
// and its actions a allow it, else as the recirc action (recirculate).
// memo says the ct action may have changed only the ct fields (no NAT,
// no reassembly).
func (w *worker) recircFromCT(c *pktCtx, f1 *megaflow, a *flowActions, memo bool) {
	id := a.fast.port
	if w.cache.sets == nil || !memo {
		w.recirculate(c, id)
		return
	}
	h1 := c.hash
	c.key.RecircID = id
	c.recirc++
	if w.memo == nil {
		w.memo = make([]recircMemo, recircMemoEntries)
	}
	m := &w.memo[h1&uint32(len(w.memo)-1)]
	h := recircHash(h1, id)
	c.hash = h
	if m.f1 == f1 && m.acts == a {
		if f2 := m.f2; !f2.dead.Load() && sameCTFields(&m.ct, &c.key) {
			w.cache.cacheHits++
			w.runFlow(c, f2)
			return
		}
	}
	f2 := w.cache.lookupHashed(&c.key, h)
	if f2 == nil {
		w.miss(c)
		return
	}
	if subsetOutsideCT(f2.mask, f2.rng, f1.mask) {
		*m = recircMemo{f1: f1, acts: a, f2: f2, ct: ctFieldsOf(&c.key)}
	}
	w.runFlow(c, f2)
}
