package userdp

import "github.com/ovsdp/ovsdp/flowkeys"

// The second-level cache of a worker (a signature-match cache, in Open
// vSwitch's terms): when the packets a worker sees hold more microflows
// than its exact-match cache has entries, each miss costs a search of
// the subtables, one probe of a bucket array per mask, and with a large
// table nearly every probe misses the CPU's caches (BenchmarkTableScale:
// 1M megaflows over 100 masks, 100k microflows, 8-12 µs a lookup
// against 1.9 µs with 1k megaflows). This cache maps a microflow's hash
// straight to the flow that answered it: one entry, one flow, one
// masked compare. Like the exact-match cache, an entry is only a hint:
// it is used only if its flow is still installed and matches the packet
// under its own mask, so flow changes never need to touch it.
//
// It is set-associative as the exact-match cache is (cacheWays entries
// a set, each with the full 32-bit hash, so that only a likely entry's
// flow is read): a direct-mapped one lost 9% of 100k microflows to
// collisions in 1M entries (BenchmarkTableScale/goal, 1M-smc-hit-fraction
// 0.91), and each of those costs a search of the subtables. Its sets are
// chosen by the hash's high bits, the exact-match cache's by its low
// ones.
//
// It costs smcEntries entries (8 MiB) per worker, so a worker makes it
// only once smcAfter lookups have missed the exact-match cache and been
// answered by the subtables: a port whose traffic fits the exact-match
// cache never has one. With 2^18 entries, 3% of 100k microflows missed
// (1M-smc-hit-fraction 0.97) and the goal's lookup took 0.77-0.85 µs;
// with 2^19, 0.4% and 0.41-0.47 µs.
//
// An entry keeps its flow's memory after the flow is removed, until the
// entry is reused: each end of a batch (publish) clears the entries of
// removed flows among the next smcSweep entries, so that with traffic
// flowing every entry is looked at within smcEntries/smcSweep batches
// (a few seconds at a million packets a second); an idle worker keeps
// its cache as it was.
const (
	smcBits    = 19
	smcEntries = 1 << smcBits
	smcAfter   = 1 << 16
	smcSweep   = 2
)

// smcSet is the set of microflow hash h.
func (c *flowCache) smcSet(h uint32) *cacheSet {
	return (*cacheSet)(c.smc[(h>>(32-smcBits))&^(cacheWays-1):])
}

// smcLookup returns the flow the second-level cache holds for packet
// key k (microflow hash h) if it still matches, else nil.
func (c *flowCache) smcLookup(k *flowkeys.Key, h uint32) *megaflow {
	if c.smc == nil {
		return nil
	}
	f := c.smcSet(h).find(k, h)
	if f != nil {
		c.smcHits++
	}
	return f
}

// smcInsert records that flow f answered microflow hash h, making the
// cache once smcAfter lookups have needed the subtables.
func (c *flowCache) smcInsert(h uint32, f *megaflow) {
	if c.smc == nil {
		if c.smcMisses++; c.smcMisses < smcAfter {
			return
		}
		c.smc = make([]cacheEntry, smcEntries)
	}
	c.smcSet(h).put(h, f)
}

// smcClean clears the entries of removed flows among the next smcSweep
// entries of the second-level cache.
func (c *flowCache) smcClean() {
	if c.smc == nil {
		return
	}
	for range smcSweep {
		e := &c.smc[c.smcNext]
		c.smcNext = (c.smcNext + 1) & (smcEntries - 1)
		if e.flow != nil && e.flow.dead.Load() {
			*e = cacheEntry{}
		}
	}
}
