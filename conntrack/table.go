package conntrack

import (
	"sync"
	"sync/atomic"
)

// The connection table.
//
// A fixed array of buckets, each the head of a singly linked chain of
// entries (one entry per direction of a connection, both embedded in the
// connection), every link an atomic pointer: the kernel's hlist_nulls
// with RCU, where Go's garbage collector plays the part of the grace
// period. Readers (every packet's lookup) take no lock: they load the
// head and follow next pointers. Writers (commit, delete, the sweeper)
// serialise on one of a fixed set of stripe mutexes, chosen by bucket;
// an insert publishes a fully built entry with one atomic store of the
// head, and a delete unlinks an entry with one atomic store of its
// predecessor's link, leaving the entry's own next pointer intact, so a
// reader standing on a deleted entry still walks on to the rest of the
// chain. Entries are never reused (a new connection is a new object), so
// a reader can never be carried into another chain.
//
// The bucket count is fixed when the tracker is made (a power of two at
// least the maximum number of connections, as the kernel sizes
// nf_conntrack_buckets at boot): no resize, so no reader ever sees a
// table being moved.

// Directions of a connection.
const (
	dirOrig  = 0
	dirReply = 1
)

// entry is one direction of a connection in a bucket chain: 56 bytes,
// so that both entries and the fields a lookup reads fit in the
// connection's first 128 bytes (see conn). Its direction is which of
// the connection's entries it is (dir).
type entry struct {
	next  atomic.Pointer[entry]
	tuple Tuple
	zone  uint16 // the connection's, read without touching it
	c     *conn
}

// dir is the entry's direction (dirOrig or dirReply).
func (e *entry) dir() uint8 {
	if e == &e.c.e1 {
		return dirReply
	}
	return dirOrig
}

const lockStripes = 256

type table struct {
	buckets []atomic.Pointer[entry]
	mask    uint64
	locks   [lockStripes]sync.Mutex
	seed    hashSeed
}

func newTable(n int, seed hashSeed) *table {
	size := 1
	for size < n {
		size <<= 1
	}
	return &table{buckets: make([]atomic.Pointer[entry], size), mask: uint64(size - 1), seed: seed}
}

func (t *table) bucket(h uint64) int { return int(h & t.mask) }

func (t *table) stripe(b int) int { return b & (lockStripes - 1) }

// find returns the entry for tuple in zone whose connection is live
// (neither deleted nor expired at now), or nil, and any expired entry it
// passed with that tuple. It takes no lock and allocates nothing.
func (t *table) find(tp *Tuple, zone uint16, now int64) (live, expired *entry) {
	h := t.seed.hash(tp, zone)
	for e := t.buckets[t.bucket(h)].Load(); e != nil; e = e.next.Load() {
		if e.zone != zone || !e.tuple.equal(tp) {
			continue
		}
		c := e.c
		if c.dead.Load() {
			continue
		}
		if c.expires.Load() <= now {
			expired = e
			continue
		}
		return e, expired
	}
	return nil, expired
}

// lockPair locks the stripes of two buckets in order (once if they are
// the same) and returns the unlock.
func (t *table) lockPair(b0, b1 int) (s0, s1 int) {
	s0, s1 = t.stripe(b0), t.stripe(b1)
	if s0 > s1 {
		s0, s1 = s1, s0
	}
	t.locks[s0].Lock()
	if s1 != s0 {
		t.locks[s1].Lock()
	}
	return s0, s1
}

func (t *table) unlockPair(s0, s1 int) {
	if s1 != s0 {
		t.locks[s1].Unlock()
	}
	t.locks[s0].Unlock()
}

// clash returns the connection other than c that holds tp in zone (live
// or not yet deleted), or nil. The caller holds the tuple's stripe.
func (t *table) clash(b int, tp *Tuple, zone uint16, c *conn) *conn {
	for e := t.buckets[b].Load(); e != nil; e = e.next.Load() {
		if e.c != c && e.zone == zone && e.tuple.equal(tp) && !e.c.dead.Load() {
			return e.c
		}
	}
	return nil
}

// insert publishes both directions of c unless a tuple is held by
// another connection, which it returns (expired or live) without
// inserting.
func (t *table) insert(c *conn) *conn {
	b0 := t.bucket(t.seed.hash(&c.e0.tuple, c.e0.zone))
	b1 := t.bucket(t.seed.hash(&c.e1.tuple, c.e0.zone))
	s0, s1 := t.lockPair(b0, b1)
	defer t.unlockPair(s0, s1)
	for d, b := range [2]int{b0, b1} {
		if o := t.clash(b, &c.entry(uint8(d)).tuple, c.e0.zone, c); o != nil {
			return o
		}
	}
	if c.e0.tuple == c.e1.tuple {
		// A tuple that is its own reply (same address and port both
		// ways): one entry, as the kernel would find it in the
		// original direction first.
		t.push(b0, &c.e0)
		c.status.Or(statusSingle)
		return nil
	}
	t.push(b0, &c.e0)
	t.push(b1, &c.e1)
	return nil
}

func (t *table) push(b int, e *entry) {
	e.next.Store(t.buckets[b].Load())
	t.buckets[b].Store(e)
}

// remove unlinks both directions of c and marks it dead; it reports
// whether this call removed it (false when it was already gone).
func (t *table) remove(c *conn) bool {
	b0 := t.bucket(t.seed.hash(&c.e0.tuple, c.e0.zone))
	b1 := t.bucket(t.seed.hash(&c.e1.tuple, c.e0.zone))
	s0, s1 := t.lockPair(b0, b1)
	defer t.unlockPair(s0, s1)
	if c.dead.Load() {
		return false
	}
	c.dead.Store(true)
	t.unlink(b0, &c.e0)
	if c.status.Load()&statusSingle == 0 {
		t.unlink(b1, &c.e1)
	}
	return true
}

func (t *table) unlink(b int, target *entry) {
	link := &t.buckets[b]
	for e := link.Load(); e != nil; e = e.next.Load() {
		if e == target {
			link.Store(e.next.Load())
			return
		}
		link = &e.next
	}
}

// each calls fn for the original-direction entry of every connection in
// buckets [from, to), without locks; fn must not block the table.
func (t *table) each(from, to int, fn func(c *conn)) {
	for b := from; b < to && b < len(t.buckets); b++ {
		for e := t.buckets[b].Load(); e != nil; e = e.next.Load() {
			if e == &e.c.e0 && !e.c.dead.Load() {
				fn(e.c)
			}
		}
	}
}
