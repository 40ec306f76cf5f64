package conntrack

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The connection table.
//
// A fixed array of buckets, each one cache line: six slots, each an
// atomic pointer to an entry (one entry per direction of a connection,
// both embedded in the connection), with a 8-bit tag of each slot's
// hash in one atomic word beside them, and a singly linked chain of the
// entries that found no free slot (rare: see bucketsFor). A lookup
// loads the bucket's line, compares the six tags with its own hash's,
// and reads only the entries whose tag matches (one in 255
// of the others, by chance): a bucket's other connections, cold as
// they may be, cost it nothing. That is the kernel's hlist_nulls with
// RCU turned into slots, where Go's garbage collector plays the part of
// the grace period.
//
// Readers (every packet's lookup) take no lock: they load the tags, the
// matching slots and the chain. Writers (commit, delete, the sweeper)
// serialise on one of a fixed set of stripe mutexes, chosen by bucket.
// An insert stores the fully built entry in a free slot, then its tag
// (a reader that sees the tag sees the entry); a delete clears the tag,
// then the slot, after marking the connection dead (a reader that
// loaded the old tag finds nil or a dead entry). A slot reused for
// another entry while a reader holds the old tags only shows that
// reader an entry whose tuple it then compares and rejects. The chain
// is walked as before: an insert publishes the entry with one atomic
// store of the chain's head, and a delete unlinks it with one atomic
// store of its predecessor's link, leaving its own next pointer intact,
// so a reader standing on a deleted entry still walks on to the rest.
// Entries never move between slots or chains and are never reused (a
// new connection is a new object), so a reader can never be carried
// into another bucket.
//
// The bucket count is fixed when the tracker is made (see bucketsFor):
// no resize, so no reader ever sees a table being moved.
//
// A table of more than hotMinBuckets buckets (32,768 connections) also
// has a hot cache: a small array of hotLines lines laid out as buckets
// (tags and six slots; more unused), indexed by the same hash's low
// bits, in which every lookup that found a live entry in the table
// leaves it (remember) and which every lookup reads first (hotFind). The connections that
// traffic keeps looking up are then found through 32 KB (8 pages of
// 4 KB) instead of through their buckets, one 4 KB page of the bucket
// array each: at 1,000,000 connections the array is 32 MB, and 1,000
// active connections' buckets lie on about 1,000 pages, more than the
// first-level TLB holds (BenchmarkEstablishedHot). The bucket array's
// transparent huge pages do not help there on this VM: its host backs
// the guest's memory with 4 KB pages, so a guest huge page still takes
// one TLB entry per 4 KB touched (measured in issue 15's ctslab notes).
// The hot cache holds no state: an entry in it is used only if it meets
// the lookup as the table's own test (tuple, zone, not dead, not
// expired), which is sound because an entry never changes its tuple or
// zone and is never reused, a delete marks the connection dead before
// unlinking it, and the table holds at most one undeleted entry per
// tuple and zone (as ConnCache's argument). Readers write it, without a
// lock, with atomic stores of a slot then of the tags word: two readers
// remembering into one line at once may lose one of the two, or leave a
// tag over another entry, which only makes a later lookup miss the
// cache (the tuple compare rejects the other entry) and look the table
// up. A slot keeps a deleted connection from being collected until it
// is reused (at most hotLines*bucketSlots connections, 768 KB).

// bucketSlots is the number of slots of a bucket, tagBits the width of
// a slot's tag in bucket.tags.
const (
	bucketSlots = 6
	tagBits     = 8
	tagMask     = 1<<tagBits - 1
)

// bucket is one cache line of the table (TestBucketLayout). A bucket
// array of 32 KB and more (1,024 connections and more) is page-aligned;
// a smaller one starts 8 bytes past a line (the allocator's type header
// of a small object with pointers), where the table is in cache anyway.
type bucket struct {
	tags  atomic.Uint64 // slot i's tag in bits tagBits*i up; 0: the slot is free
	slots [bucketSlots]atomic.Pointer[entry]
	more  atomic.Pointer[entry] // the chain of entries that found no free slot
}

// tagOf is a hash's tag: its top 8 bits (the bucket index uses the
// bottom ones), never 0.
func tagOf(h uint64) uint64 {
	t := h >> (64 - tagBits)
	return t + (t-1)>>63 // 0 becomes 1
}

// match returns a bit set of the slots whose tag may be tag: bit
// tagBits*i+tagBits-1 for slot i, set for every slot whose tag is tag
// (the zero-lane test of tags ^ tag; a borrow may set it for a slot
// just above one that matches too, which the caller's compare rejects).
func match(tags, tag uint64) uint64 {
	const ones = 0x0000010101010101 // the bottom bit of each slot's tag
	x := tags ^ tag*ones
	return (x - ones) &^ x & (ones << (tagBits - 1))
}

// bucketsFor is the bucket count for a maximum of n connections: the
// smallest power of two of at least n/2 buckets (and at least 1). At the
// maximum, a bucket then holds four entries on average in its six
// slots, and about 4% of entries go to a chain.
func bucketsFor(n int) int {
	size := 1
	for size*2 < n {
		size <<= 1
	}
	return size
}

// Directions of a connection.
const (
	dirOrig  = 0
	dirReply = 1
)

// entry is one direction of a connection in a bucket's slot or chain:
// its tuple, its connection's zone (read without touching the rest)
// and which of the connection's entries it is (d: dirOrig for conn.e0,
// dirReply for conn.e1), 42 bytes. An entry lives only inside its
// connection, at the start of the connection's first line (e0) or
// second (e1), so its connection is found from its address (conn)
// without a pointer to load, and e0's line has room beside it for
// everything a lookup reads (see conn). Its link in a bucket's chain is
// the connection's next[d], outside that line: a chained entry (about 4%
// of them) is the rare case.
type entry struct {
	tuple Tuple
	zone  uint16
	d     uint8
}

// dir is the entry's direction (dirOrig or dirReply).
func (e *entry) dir() uint8 { return e.d }

// conn is the connection e is an entry of: e0 at its start, e1 one
// line (connLine bytes) in.
func (e *entry) conn() *conn {
	return (*conn)(unsafe.Add(unsafe.Pointer(e), -int(e.d)*connLine))
}

// next is the link of e in its bucket's chain.
func (e *entry) next() *atomic.Pointer[entry] { return &e.conn().next[e.d] }

const lockStripes = 256

type table struct {
	buckets []bucket
	mask    uint64
	locks   [lockStripes]sync.Mutex
	seed    hashSeed
	huge    uintptr // bytes of buckets advised onto huge pages (see adviseHuge)

	// hot remembers entries that lookups found, for tables larger than
	// it (else nil): see hotLines.
	hot       []bucket
	hotMask   uint64
	hotSample uint64 // remember one lookup's entry in hotSample+1 (a mask: 2^k-1)
}

// hotLines is the size in lines of a table's hot cache (32 KB: 3,072
// entries, both directions of about 1,500 connections), which a table
// has when it has more than hotMinBuckets buckets (1 MB, 256 pages of
// 4 KB: a maximum of more than 32,768 connections). A smaller table
// has none: its bucket array is a few times the cache's size at most,
// and with every connection active (BenchmarkEstablished) a cache that
// holds a third of them is hit by a third of the lookups, a branch
// that mispredicts often: at 10,000 connections (hotMinBuckets 2,048
// then) hotFind was a fifth of the lookup's profile, 53 → 62 cpu-ns
// per lookup (medians, 6 rounds alternated, loaded host).
//
// hotSample+1 is how many lookups that find an entry in the table
// there are for one that remembers it (see remember).
const (
	hotLines      = 512
	hotMinBuckets = 32 * hotLines
	hotSample     = 7
)

// newTable makes the table for n connections, its bucket array on
// transparent huge pages where the kernel has them (see adviseHuge):
// one TLB entry per 2 MB of buckets instead of per 4 KB. Without them
// (or on a refusal) the array is on the heap's ordinary pages.
func newTable(n int, seed hashSeed) *table {
	size := bucketsFor(n)
	t := &table{buckets: make([]bucket, size), mask: uint64(size - 1), seed: seed}
	if size > hotMinBuckets {
		t.hot, t.hotMask, t.hotSample = make([]bucket, hotLines), hotLines-1, hotSample
	}
	huge, err := adviseHuge(unsafe.Pointer(unsafe.SliceData(t.buckets)), uintptr(size)*unsafe.Sizeof(bucket{}))
	if err == nil {
		t.huge = huge
	}
	return t
}

func (t *table) bucket(h uint64) int { return int(h & t.mask) }

func (t *table) stripe(b int) int { return b & (lockStripes - 1) }

// find returns the entry for tuple in zone whose connection is live
// (neither deleted nor expired at now), or nil, and any expired entry it
// passed with that tuple. It takes no lock and allocates nothing.
func (t *table) find(tp *Tuple, zone uint16, now int64) (live, expired *entry) {
	h := t.seed.hash(tp, zone)
	if t.hot != nil {
		if e := t.hotFind(h, tp, zone, now); e != nil {
			return e, nil
		}
	}
	b := &t.buckets[h&t.mask]
	// All six tags at once (match), without a branch per slot: a loop
	// with one (also in ExecuteKey's scan) was faster when the same
	// connection is looked up again and again (BenchmarkPipelineCT:
	// about 5 ns of 85 a packet, the branch predicted), and slower in
	// shuffled orders, which real traffic's many connections are like:
	// about 10 ns a lookup in BenchmarkEstablishedHot, about 3 ns of
	// 120 a packet in the ct pipeline over 1,000 connections.
	for m := match(b.tags.Load(), tagOf(h)); m != 0; m &= m - 1 {
		i := uint(bits.TrailingZeros64(m)) / tagBits
		if e := b.slots[i].Load(); e != nil {
			switch e.meets(tp, zone, now) {
			case meetsLive:
				t.remember(h, e, now)
				return e, expired
			case meetsExpired:
				expired = e
			}
		}
	}
	for e := b.more.Load(); e != nil; e = e.next().Load() {
		switch e.meets(tp, zone, now) {
		case meetsLive:
			t.remember(h, e, now)
			return e, expired
		case meetsExpired:
			expired = e
		}
	}
	return nil, expired
}

// findSlots is find's scan of the bucket's slots only, for
// ExecuteKey's shorter path: the live entry for tuple in zone, or nil
// when the slots hold none, or hold the tuple's expired entry (which
// find, on the general path, then returns for deletion), or the entry
// is in the bucket's chain.
func (t *table) findSlots(tp *Tuple, zone uint16, now int64) *entry {
	h := t.seed.hash(tp, zone)
	if t.hot != nil {
		if e := t.hotFind(h, tp, zone, now); e != nil {
			return e
		}
	}
	b := &t.buckets[h&t.mask]
	for m := match(b.tags.Load(), tagOf(h)); m != 0; m &= m - 1 {
		x := b.slots[uint(bits.TrailingZeros64(m))/tagBits].Load()
		if x == nil {
			continue
		}
		if r := x.meets(tp, zone, now); r != meetsNot {
			if r == meetsLive {
				t.remember(h, x, now)
				return x
			}
			return nil
		}
	}
	return nil
}

// hotFind returns the live entry for tp in zone (hash h) if the hot
// cache remembers it, else nil.
func (t *table) hotFind(h uint64, tp *Tuple, zone uint16, now int64) *entry {
	b := &t.hot[h&t.hotMask]
	for m := match(b.tags.Load(), tagOf(h)); m != 0; m &= m - 1 {
		if e := b.slots[uint(bits.TrailingZeros64(m))/tagBits].Load(); e != nil && e.meets(tp, zone, now) == meetsLive {
			return e
		}
	}
	return nil
}

// remember puts e (hash h), which a lookup at now found live in the
// table, in the hot cache, one time in hotSample+1: in a free slot of
// its line, or else in one picked by the hash and the time. Both choices
// are made from h and now, without a random number: a connection that
// traffic keeps looking up is remembered within a few of the clock's
// readings (the coarse clock's, coarseTick apart, as well as the
// default clock's), while a table probed everywhere (more active
// connections than the cache holds, where nearly every lookup misses
// it) pays the stores on an eighth of its lookups only.
func (t *table) remember(h uint64, e *entry, now int64) {
	if t.hot == nil {
		return
	}
	r := h>>32 ^ uint64(now)>>10
	if r&t.hotSample != 0 {
		return
	}
	b := &t.hot[h&t.hotMask]
	tags := b.tags.Load()
	i := int(r>>3) % bucketSlots
	for j := range bucketSlots {
		if tags>>(tagBits*j)&tagMask == 0 {
			i = j
			break
		}
	}
	b.slots[i].Store(e)
	b.tags.Store(tags&^(tagMask<<(tagBits*i)) | tagOf(h)<<(tagBits*i))
}

// How an entry meets a lookup (entry.meets).
const (
	meetsNot     = iota // another tuple or zone, or a dead connection
	meetsLive           // the tuple's live connection
	meetsExpired        // the tuple's, expired (not yet deleted)
)

// meets says how e meets a lookup of tp in zone at now.
func (e *entry) meets(tp *Tuple, zone uint16, now int64) int {
	if e.zone != zone || !e.tuple.equal(tp) {
		return meetsNot
	}
	c := e.conn()
	if c.dead() {
		return meetsNot
	}
	if c.expires.Load() <= now {
		return meetsExpired
	}
	return meetsLive
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

// entries calls fn for every entry in bucket b, slots first, until fn
// returns false.
func (b *bucket) entries(fn func(e *entry) bool) {
	// A slot holds an entry only while its tag is set (push sets the
	// tag after the entry, delete clears it before), so a bucket without
	// tags has no slot to load: the sweeper's and dump's walk of a
	// mostly empty table does one load per bucket, not one per slot.
	// Without the stripe's lock, an entry being pushed or deleted may or
	// may not be seen, as before.
	if b.tags.Load() != 0 {
		for i := range b.slots {
			if e := b.slots[i].Load(); e != nil && !fn(e) {
				return
			}
		}
	}
	for e := b.more.Load(); e != nil; e = e.next().Load() {
		if !fn(e) {
			return
		}
	}
}

// clash returns the connection other than c that holds tp in zone (live
// or not yet deleted), or nil. The caller holds the tuple's stripe.
func (t *table) clash(b int, tp *Tuple, zone uint16, c *conn) *conn {
	var o *conn
	t.buckets[b].entries(func(e *entry) bool {
		if ec := e.conn(); ec != c && e.zone == zone && e.tuple.equal(tp) && !ec.dead() {
			o = ec
		}
		return o == nil
	})
	return o
}

// insert publishes both directions of c unless a tuple is held by
// another connection, which it returns (expired or live) without
// inserting.
func (t *table) insert(c *conn) *conn {
	h0 := t.seed.hash(&c.e0.tuple, c.e0.zone)
	h1 := t.seed.hash(&c.e1.tuple, c.e0.zone)
	b0, b1 := t.bucket(h0), t.bucket(h1)
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
		t.push(h0, &c.e0)
		c.status.Or(statusSingle)
		return nil
	}
	t.push(h0, &c.e0)
	t.push(h1, &c.e1)
	return nil
}

// push stores e, whose hash is h, in a free slot of its bucket, or else
// at the head of the bucket's chain. The caller holds the stripe.
func (t *table) push(h uint64, e *entry) {
	b := &t.buckets[t.bucket(h)]
	tags := b.tags.Load()
	for i := range b.slots {
		if tags>>(tagBits*i)&tagMask == 0 {
			b.slots[i].Store(e)
			b.tags.Store(tags | tagOf(h)<<(tagBits*i)) // after the entry
			return
		}
	}
	e.next().Store(b.more.Load())
	b.more.Store(e)
}

// remove unlinks both directions of c and marks it dead; it reports
// whether this call removed it (false when it was already gone).
func (t *table) remove(c *conn) bool {
	b0 := t.bucket(t.seed.hash(&c.e0.tuple, c.e0.zone))
	b1 := t.bucket(t.seed.hash(&c.e1.tuple, c.e0.zone))
	s0, s1 := t.lockPair(b0, b1)
	defer t.unlockPair(s0, s1)
	if c.dead() {
		return false
	}
	c.markDead()
	t.unlink(b0, &c.e0)
	if c.status.Load()&statusSingle == 0 {
		t.unlink(b1, &c.e1)
	}
	return true
}

// unlink takes target out of bucket b's slots or chain. The caller
// holds the stripe and has marked the connection dead.
func (t *table) unlink(b int, target *entry) {
	bk := &t.buckets[b]
	for i := range bk.slots {
		if bk.slots[i].Load() == target {
			bk.tags.Store(bk.tags.Load() &^ (tagMask << (tagBits * i))) // before the slot
			bk.slots[i].Store(nil)
			return
		}
	}
	link := &bk.more
	for e := link.Load(); e != nil; e = e.next().Load() {
		if e == target {
			link.Store(e.next().Load())
			return
		}
		link = e.next()
	}
}

// each calls fn for the original-direction entry of every connection in
// buckets [from, to), without locks; fn must not block the table.
func (t *table) each(from, to int, fn func(c *conn)) {
	for b := from; b < to && b < len(t.buckets); b++ {
		t.buckets[b].entries(func(e *entry) bool {
			if c := e.conn(); e.d == dirOrig && !c.dead() {
				fn(c)
			}
			return true
		})
	}
}
