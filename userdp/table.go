package userdp

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// The megaflow table: tuple-space search, one hash table (a subtable) per
// distinct mask.
//
// Concurrency. Lookups take no lock. Every structure a lookup reads is
// either immutable once published or an atomic value:
//
//   - the table's list of subtables is an immutable slice behind an
//     atomic.Pointer; adding or removing a mask, and re-ranking, publish a
//     new slice;
//   - a subtable's bucket array is an immutable array of atomic bucket
//     pointers; growing it publishes a new array;
//   - a bucket (up to bucketSlots flows and an overflow link) is never
//     changed once published: inserting into or removing from a chain
//     publishes a new copy of that chain.
//
// Writers (insert, remove, rebalance) are serialised by the table's
// mutex, which lookups never take. Memory that a reader may still be
// looking at is reclaimed by the garbage collector once no reader holds
// it, which is what RCU's grace period gives the kernel.
//
// Hashing. Each subtable hashes the packet's words in the mask's word
// range, ANDed with the mask, with a flowkeys.KeyedHasher of its own (a
// secret per subtable, from crypto/rand): a linear hash such as CRC32C
// would let anyone who can choose packet fields put every flow in one
// chain (flowkeys.CRCCollisions); the keyed hash does not.
//
// Lookup order. A packet is looked up in the subtables in rank order:
// subtables are re-sorted by the number of lookups they answered since
// the last re-sort (rebalance, run periodically by the datapath). The
// first subtable that has a matching flow answers. When megaflows
// overlap (one packet matches flows of several masks), which one answers
// therefore depends on the traffic seen, as in the kernel, whose mask
// list is likewise re-sorted by use: installing non-overlapping
// megaflows is the installer's business.

// bucketSlots is the number of flows in one bucket before the overflow
// link is used.
const bucketSlots = 4

// bucket is an immutable group of flows of one hash chain.
type bucket struct {
	hash [bucketSlots]uint32
	flow [bucketSlots]*megaflow
	next *bucket
}

// bucketArray is a subtable's hash table: a power-of-two array of chain
// heads.
type bucketArray struct {
	mask  uint32
	heads []atomic.Pointer[bucket]
}

// subtable holds the flows of one mask.
//
// The mask is at offset 56, after 56 bytes of other fields: the Go
// runtime puts an 8-byte header before a heap object that has pointers
// and is larger than 512 bytes, so the mask starts on a 64-byte boundary
// and the comparator's 64-byte loads do not cross cache lines (see
// TestHitPathKeysAligned; megaflow does the same with its key).
type subtable struct {
	rng    flowkeys.Range
	hasher *flowkeys.KeyedHasher
	arr    atomic.Pointer[bucketArray]
	n      int           // flows; written under the table's mutex
	hits   atomic.Uint64 // lookups answered since the last rebalance
	_      uint64        // puts mask at offset 56
	mask   flowkeys.Key
}

// subtableList is an immutable, ranked list of subtables.
type subtableList struct {
	st []*subtable
}

// megaflow is one flow of the table.
//
// The key is at offset 56, after the 56 bytes of st, mask, rng, ufid and
// ukey, so that it starts on a 64-byte boundary behind the runtime's
// 8-byte header (see subtable and TestHitPathKeysAligned).
type megaflow struct {
	st   *subtable      // its mask
	mask *flowkeys.Key  // &st.mask, for the cache's one load
	rng  flowkeys.Range // st.rng
	ufid odp.UFID
	// ukey is the key as given, for flows without a UFID (they are
	// identified by it); nil for flows with a UFID.
	ukey *flowkeys.Key
	key  flowkeys.Key // the masked key

	acts atomic.Pointer[flowActions]
	dead atomic.Bool

	packets  atomic.Uint64
	bytes    atomic.Uint64
	used     atomic.Uint64 // CLOCK_MONOTONIC ms
	tcpFlags atomic.Uint32
	hash     uint32 // hash of key in st
}

// flowActions are a flow's actions, as given and as compiled.
type flowActions struct {
	odp  odp.Actions
	prog []op
	fast fastProg // prog's specialised form (exec_fast.go)
}

// stats returns the flow's counters. The TCP flags are reported as the
// kernel reports them: only the low 8 bits (it puts
// OVS_FLOW_ATTR_TCP_FLAGS as a u8), so NS, and the reserved bits never
// show.
func (f *megaflow) stats() odp.FlowStats {
	return odp.FlowStats{
		Packets:  f.packets.Load(),
		Bytes:    f.bytes.Load(),
		Used:     f.used.Load(),
		TCPFlags: uint16(f.tcpFlags.Load()) & 0xff,
	}
}

// clearStats zeroes the flow's counters.
func (f *megaflow) clearStats() {
	f.packets.Store(0)
	f.bytes.Store(0)
	f.used.Store(0)
	f.tcpFlags.Store(0)
}

// table is the megaflow table.
type table struct {
	mu     sync.Mutex // serialises writers
	list   atomic.Pointer[subtableList]
	byUFID map[odp.UFID]*megaflow // writers only
	nflows atomic.Int64
	// limit is the most flows the table holds (0: no limit); a create
	// past it fails with EFBIG (writers only).
	limit int64
	// newHasher makes each subtable's hasher (tests may fix secrets).
	newHasher func() *flowkeys.KeyedHasher
}

func newTable() *table {
	t := &table{byUFID: map[odp.UFID]*megaflow{}, newHasher: flowkeys.NewKeyedHasher}
	t.list.Store(&subtableList{})
	return t
}

// Errors of the flow table, wrapping the errors the kernel returns.
var (
	errFlowExists   = fmt.Errorf("flow exists: %w", syscall.EEXIST)
	errFlowNotFound = fmt.Errorf("flow not found: %w", syscall.ENOENT)
)

// flowLimitError refuses a flow past the table's limit. It matches
// syscall.EFBIG without that errno's text ("file too large").
type flowLimitError struct {
	name  string
	limit int64
}

func (e *flowLimitError) Error() string {
	return fmt.Sprintf("create flow %s: the flow table is full: it holds %d flows, its limit (EFBIG; upcalld --flow-limit sets it)", e.name, e.limit)
}

// Is matches syscall.EFBIG.
func (e *flowLimitError) Is(target error) bool { return target == syscall.EFBIG }

// einval wraps syscall.EINVAL with a reason.
func einval(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, syscall.EINVAL)...)
}

// hashMasked returns the subtable's hash of k's words under the mask
// (the keyed hash of k AND mask, computed without a masked copy).
func (st *subtable) hashMasked(k *flowkeys.Key) uint32 {
	return flowkeys.HashKeyedMasked(k, &st.mask, st.rng, st.hasher, 0)
}

// find returns the flow of st whose masked key matches k (hash h), or nil.
func (st *subtable) find(k *flowkeys.Key, h uint32) *megaflow {
	arr := st.arr.Load()
	for b := arr.heads[h&arr.mask].Load(); b != nil; b = b.next {
		for i := 0; i < bucketSlots; i++ {
			f := b.flow[i]
			if f != nil && b.hash[i] == h && flowkeys.EqualMasked(k, &f.key, &st.mask, st.rng) {
				return f
			}
		}
	}
	return nil
}

// lookup finds the flow that matches the packet key k, trying the
// subtables in rank order. probed is the number of subtables looked at
// (the kernel's n_mask_hit contribution). It writes nothing: the hit is
// counted for the subtable's rank by the caller's cache
// (flowCache.countSubtableHit), which publishes the counts once per
// batch, so that lookups on several cores do not all write the
// subtable's line.
func (t *table) lookup(k *flowkeys.Key) (f *megaflow, probed int) {
	l := t.list.Load()
	for i, st := range l.st {
		if f = st.find(k, st.hashMasked(k)); f != nil {
			return f, i + 1
		}
	}
	return nil, len(l.st)
}

// findExact returns the flow whose mask is m and masked key is k's (both
// already masked), or nil. Writers only.
func (t *table) findExact(k, m *flowkeys.Key) (*megaflow, *subtable) {
	for _, st := range t.list.Load().st {
		if st.mask == *m {
			return st.find(k, st.hashMasked(k)), st
		}
	}
	return nil, nil
}

// subtableFor returns the subtable of mask m, creating it (unpublished
// in the list: the caller publishes) if needed. Writers only.
func (t *table) subtableFor(m *flowkeys.Key) (st *subtable, created bool) {
	for _, s := range t.list.Load().st {
		if s.mask == *m {
			return s, false
		}
	}
	st = &subtable{mask: *m, rng: m.Range(), hasher: t.newHasher()}
	arr := &bucketArray{mask: 7, heads: make([]atomic.Pointer[bucket], 8)}
	st.arr.Store(arr)
	return st, true
}

// insert adds f (its key masked with mask m) to the table. The caller
// holds t.mu and has checked for duplicates.
func (t *table) insert(f *megaflow, m *flowkeys.Key) {
	st, created := t.subtableFor(m)
	f.st, f.mask, f.rng = st, &st.mask, st.rng
	flowkeys.ApplyMask(&f.key, &f.key, m, flowkeys.FullRange)
	f.hash = st.hashMasked(&f.key)
	arr := st.arr.Load()
	if uint32(st.n+1) > 2*(arr.mask+1) {
		arr = st.grow(arr)
	}
	st.chainInsert(arr, f)
	st.n++
	if created {
		old := t.list.Load().st
		nl := make([]*subtable, len(old), len(old)+1)
		copy(nl, old)
		t.list.Store(&subtableList{st: append(nl, st)})
	}
	if !f.ufid.IsZero() {
		t.byUFID[f.ufid] = f
	}
	t.nflows.Add(1)
}

// chainInsert publishes a copy of f's chain with f added.
func (st *subtable) chainInsert(arr *bucketArray, f *megaflow) {
	head := &arr.heads[f.hash&arr.mask]
	var flows []*megaflow
	var hashes []uint32
	for b := head.Load(); b != nil; b = b.next {
		for i := 0; i < bucketSlots; i++ {
			if b.flow[i] != nil {
				flows = append(flows, b.flow[i])
				hashes = append(hashes, b.hash[i])
			}
		}
	}
	head.Store(buildChain(append(flows, f), append(hashes, f.hash)))
}

// buildChain makes a new immutable chain of the flows.
func buildChain(flows []*megaflow, hashes []uint32) *bucket {
	var first, last *bucket
	for i := 0; i < len(flows); i += bucketSlots {
		b := &bucket{}
		for j := 0; j < bucketSlots && i+j < len(flows); j++ {
			b.flow[j] = flows[i+j]
			b.hash[j] = hashes[i+j]
		}
		if first == nil {
			first = b
		} else {
			last.next = b
		}
		last = b
	}
	return first
}

// grow publishes a bucket array of twice the size, with every chain
// rebuilt; readers of the old array are not disturbed.
func (st *subtable) grow(old *bucketArray) *bucketArray {
	n := 2 * (old.mask + 1)
	arr := &bucketArray{mask: n - 1, heads: make([]atomic.Pointer[bucket], n)}
	chains := make([][]*megaflow, n)
	for i := range old.heads {
		for b := old.heads[i].Load(); b != nil; b = b.next {
			for j := 0; j < bucketSlots; j++ {
				if f := b.flow[j]; f != nil {
					chains[f.hash&arr.mask] = append(chains[f.hash&arr.mask], f)
				}
			}
		}
	}
	for i, c := range chains {
		if len(c) > 0 {
			hs := make([]uint32, len(c))
			for j, f := range c {
				hs[j] = f.hash
			}
			arr.heads[i].Store(buildChain(c, hs))
		}
	}
	st.arr.Store(arr)
	return arr
}

// remove takes f out of the table. The caller holds t.mu.
func (t *table) remove(f *megaflow) {
	st := f.st
	arr := st.arr.Load()
	head := &arr.heads[f.hash&arr.mask]
	var flows []*megaflow
	var hashes []uint32
	for b := head.Load(); b != nil; b = b.next {
		for i := 0; i < bucketSlots; i++ {
			if g := b.flow[i]; g != nil && g != f {
				flows = append(flows, g)
				hashes = append(hashes, b.hash[i])
			}
		}
	}
	head.Store(buildChain(flows, hashes))
	f.dead.Store(true)
	st.n--
	if st.n == 0 {
		old := t.list.Load().st
		nl := make([]*subtable, 0, len(old))
		for _, s := range old {
			if s != st {
				nl = append(nl, s)
			}
		}
		t.list.Store(&subtableList{st: nl})
	}
	if !f.ufid.IsZero() && t.byUFID[f.ufid] == f {
		delete(t.byUFID, f.ufid)
	}
	t.nflows.Add(-1)
}

// flush removes every flow and returns them. The caller holds t.mu.
func (t *table) flush() []*megaflow {
	var all []*megaflow
	t.each(func(f *megaflow) bool { all = append(all, f); return true })
	t.list.Store(&subtableList{})
	clear(t.byUFID)
	for _, f := range all {
		f.dead.Store(true)
	}
	t.nflows.Store(0)
	return all
}

// each calls fn for every flow of the current list until fn returns
// false. It reads like a lookup (no lock): flows inserted or removed
// meanwhile may or may not be seen.
func (t *table) each(fn func(*megaflow) bool) {
	for _, st := range t.list.Load().st {
		arr := st.arr.Load()
		for i := range arr.heads {
			for b := arr.heads[i].Load(); b != nil; b = b.next {
				for j := 0; j < bucketSlots; j++ {
					if f := b.flow[j]; f != nil && !f.dead.Load() {
						if !fn(f) {
							return
						}
					}
				}
			}
		}
	}
}

// masks returns the number of subtables.
func (t *table) masks() int { return len(t.list.Load().st) }

// rebalance re-sorts the subtables by the lookups they answered since
// the last call (most first) and restarts the counts.
func (t *table) rebalance() {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.list.Load().st
	type ranked struct {
		st   *subtable
		hits uint64
	}
	r := make([]ranked, len(old))
	for i, st := range old {
		r[i] = ranked{st, st.hits.Swap(0)}
	}
	slices.SortStableFunc(r, func(a, b ranked) int {
		switch {
		case a.hits > b.hits:
			return -1
		case a.hits < b.hits:
			return 1
		}
		return 0
	})
	nl := make([]*subtable, len(r))
	for i := range r {
		nl[i] = r[i].st
	}
	t.list.Store(&subtableList{st: nl})
}

// cacheHash is the exact-match cache's (and the upcall queues') hash of
// packet key k: flowkeys.HashMicroflow, the fields that tell microflows
// apart. The hash only picks the cache set; a hit is validated against
// the flow's whole mask, so packets that differ only in fields it leaves
// out merely share a set.
func cacheHash(k *flowkeys.Key, h *flowkeys.KeyedHasher) uint32 {
	return flowkeys.HashMicroflow(k, h)
}

// DefaultCacheEntries is the default size of each forwarding thread's
// exact-match cache.
const DefaultCacheEntries = 4096

// cacheEntry is one exact-match cache entry.
type cacheEntry struct {
	hash uint32
	flow *megaflow
}

// cacheSet is the cacheWays entries a packet's hash picks, in the
// exact-match cache or the second-level one.
type cacheSet [cacheWays]cacheEntry

// flowCache is an exact-match cache in front of the table, owned by one
// goroutine (a port's forwarding loop). An entry maps a packet-key hash
// to the flow that answered it last; a hit is valid only if that flow
// is still installed and matches the packet under its mask, so removing
// or replacing flows never needs to touch the caches.
type flowCache struct {
	t       *table
	hasher  *flowkeys.KeyedHasher
	sets    []cacheSet // nil: cache disabled
	setMask uint32     // len(sets)-1 (a power of two less one: set)

	// Counters since the last publish (plain: one goroutine). A cache
	// hit counts only in cacheHits (it is also a hit and one mask
	// hit: publish adds it to those).
	hit, missed, maskHits, cacheHits uint64
	// Lookups each subtable answered since the last publish.
	stHits [stHitSlots]stHit

	// The second-level cache (smc.go): nil until smcMisses, the
	// lookups the subtables answered, reach smcAfter; smcHits counts
	// the lookups it answered.
	smc                []cacheEntry
	smcMisses, smcHits uint64
	smcNext            uint32 // the next entry smcClean looks at
}

// stHit counts the lookups one subtable answered.
type stHit struct {
	st *subtable
	n  uint64
}

// stHitSlots is how many subtables a cache counts hits for between
// publishes; more in one batch publish the counts early.
const stHitSlots = 16

// countSubtableHit counts a lookup that subtable st answered.
func (c *flowCache) countSubtableHit(st *subtable) {
	for i := range c.stHits {
		e := &c.stHits[i]
		if e.st == st {
			e.n++
			return
		}
		if e.st == nil {
			e.st, e.n = st, 1
			return
		}
	}
	c.publishSubtableHits()
	c.stHits[0] = stHit{st, 1}
}

// publishSubtableHits adds the counted hits to the subtables' ranks.
func (c *flowCache) publishSubtableHits() {
	for i := range c.stHits {
		e := &c.stHits[i]
		if e.st == nil {
			break
		}
		e.st.hits.Add(e.n)
		*e = stHit{}
	}
}

// newFlowCache returns a cache of n entries (rounded up to a power of
// two); n == 0 disables it.
func newFlowCache(t *table, n int) *flowCache {
	c := &flowCache{t: t, hasher: flowkeys.NewKeyedHasher()}
	if n > 0 {
		size := cacheWays
		for size < n {
			size <<= 1
		}
		c.sets = make([]cacheSet, size/cacheWays)
		c.setMask = uint32(len(c.sets) - 1)
	}
	return c
}

// cacheWays is the associativity of the exact-match cache: a packet's
// hash picks a set of cacheWays entries, so that a few packets sharing a
// set do not evict each other (a direct-mapped cache loses about a fifth
// of 1,000 flows to conflicts in 4,096 entries).
const cacheWays = 4

// lookup returns the flow for packet key k, or nil on a miss.
func (c *flowCache) lookup(k *flowkeys.Key) *megaflow { return c.lookupHashed(k, c.hashOf(k)) }

// hashOf is the cache hash of packet key k (0 when the cache is
// disabled: no set to pick).
func (c *flowCache) hashOf(k *flowkeys.Key) uint32 {
	if c.sets == nil {
		return 0
	}
	return cacheHash(k, c.hasher)
}

// recircHash is the cache hash of a packet recirculated with ID id
// whose previous lookup used hash h: the packet's microflow is the one
// h was computed for, so its recirculated lookups need no new pass over
// the key. A bijective mix of (h, id), so that keys that did not share
// a set before recirculation do not share one after it by more than
// chance.
func recircHash(h, id uint32) uint32 { return uint32(flowkeys.Mix64(uint64(h)<<32 | uint64(id))) }

// set returns the exact-match cache's set for hash h (the cache is
// enabled: sets is not nil). Without a bounds check: newFlowCache makes
// len(sets) a power of two and setMask len(sets)-1, and neither changes
// after, so h&setMask is always an index of sets (TestFlowCacheSets).
func (c *flowCache) set(h uint32) *cacheSet {
	return (*cacheSet)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(c.sets)), uintptr(h&c.setMask)*unsafe.Sizeof(cacheSet{})))
}

// lookupHashed is lookup with k's cache hash h given (ignored when the
// cache is disabled): from the exact-match cache, else the second-level
// cache (smc.go), else the subtables. A hit of either cache counts only
// in cacheHits (publish adds it to the hits and mask hits).
func (c *flowCache) lookupHashed(k *flowkeys.Key, h uint32) *megaflow {
	var set *cacheSet
	var f *megaflow
	if c.sets != nil {
		set = c.set(h)
		for j := range set {
			e := &set[j]
			// The hash first: it is in the set's cache line, the flow
			// is not.
			if e.hash != h {
				continue
			}
			if ef := e.flow; ef != nil && !ef.dead.Load() && flowkeys.EqualMasked(k, &ef.key, ef.mask, ef.rng) {
				c.cacheHits++
				return ef
			}
		}
		f = c.smcLookup(k, h) // smc.go
	}
	if f != nil {
		c.cacheHits++
	} else {
		var probed int
		f, probed = c.t.lookup(k)
		c.maskHits += uint64(probed)
		if f == nil {
			c.missed++
			return nil
		}
		c.hit++
		c.countSubtableHit(f.st)
		if set != nil {
			c.smcInsert(h, f)
		}
	}
	if set != nil {
		set.put(h, f)
	}
	return f
}

// find returns the flow of the set's entry for hash h if it is still
// installed and matches k under its mask, else nil.
func (set *cacheSet) find(k *flowkeys.Key, h uint32) *megaflow {
	for j := range set {
		e := &set[j]
		if f := e.flow; f != nil && e.hash == h && !f.dead.Load() &&
			flowkeys.EqualMasked(k, &f.key, &f.st.mask, f.st.rng) {
			return f
		}
	}
	return nil
}

// put records f for hash h: in an empty or dead entry, else one chosen
// by the hash.
func (set *cacheSet) put(h uint32, f *megaflow) {
	j := int(h>>28) % cacheWays
	for x := range set {
		if set[x].flow == nil || set[x].flow.dead.Load() {
			j = x
			break
		}
	}
	set[j] = cacheEntry{hash: h, flow: f}
}

// tableCounters are a datapath's lookup counters.
type tableCounters struct {
	hit, missed, lost, maskHits, cacheHits atomic.Uint64
}

// publish adds the cache's counters to tc and restarts them.
func (c *flowCache) publish(tc *tableCounters) {
	if hit := c.hit + c.cacheHits; hit != 0 {
		tc.hit.Add(hit)
	}
	if c.missed != 0 {
		tc.missed.Add(c.missed)
	}
	if mh := c.maskHits + c.cacheHits; mh != 0 {
		tc.maskHits.Add(mh)
	}
	if c.cacheHits != 0 {
		tc.cacheHits.Add(c.cacheHits)
	}
	c.hit, c.missed, c.maskHits, c.cacheHits = 0, 0, 0, 0
	c.publishSubtableHits()
	c.smcClean()
}
