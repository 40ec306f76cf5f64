package conntrack

import (
	"fmt"
	"math/bits"
	"syscall"
	"unsafe"
)

// Bursts: lookups with their misses overlapped.
//
// Above the caches' size every lookup of an established connection is
// two dependent misses to memory, the bucket's line and then the
// connection's (see the package doc), and one lookup after the other
// pays them one after the other: about 240 ns at 1,000,000 connections
// against about 33 at 1,000 (BenchmarkEstablished). A burst of packets
// hides most of that latency by asking for every line before it needs
// any: first every packet's tuple hash and a prefetch of its bucket
// (and of its hot-cache line), then, once those lines are on their way
// or in, a prefetch of the connection lines whose tags match in each
// bucket, and only then the lookups, in order, each as Execute does it.
// The misses of up to MaxBurst packets then overlap instead of adding
// up. The prefetches are hints (prefetch): they read nothing the
// lookups use and change nothing, so a burst's results and state
// changes are exactly those of its packets executed one by one in
// order, even where an earlier packet of the burst creates, commits or
// deletes the connection that a later one's prefetch fetched.

// MaxBurst is the number of packets whose lines are prefetched together
// (ExecuteBurst takes longer bursts in groups of MaxBurst; a Prefetcher
// holds at most MaxBurst). 32 lookups' lines are at most 96 lines in
// flight, more than the processor's line fill buffers (10-16) can hold:
// the later prefetches wait for the earlier ones, but every wait
// overlaps other misses.
const MaxBurst = 32

// Prefetcher prefetches the table lines of up to MaxBurst lookups
// before they run (see ExecuteBurst, which uses one): Add for each
// lookup to come, Conns once after them, then the lookups. It changes
// nothing in the tracker and allocates nothing; its zero value is not
// usable (Tracker.NewPrefetcher). It is not safe for concurrent use.
type Prefetcher struct {
	t     *Tracker
	n     int
	h     [MaxBurst]uint64
	lines [2 * MaxBurst]uintptr // the addresses to prefetch (Conns)
}

// NewPrefetcher returns a Prefetcher for t's table.
func (t *Tracker) NewPrefetcher() *Prefetcher { return &Prefetcher{t: t} }

// Len is the number of lookups added since the last Conns.
func (pf *Prefetcher) Len() int { return pf.n }

// Add computes the hash of a lookup of tp in zone, for Conns. It
// reports false, doing nothing, when MaxBurst lookups are added
// already.
func (pf *Prefetcher) Add(tp *Tuple, zone uint16) bool {
	if pf.n >= len(pf.h) {
		return false
	}
	pf.h[pf.n] = pf.t.tab.seed.hash(tp, zone)
	pf.n++
	return true
}

// Conns prefetches, for the lookups added, first their buckets' lines
// (all of them in one prefetchLines call), then the connection lines of
// each bucket's entries whose tag is the lookup's hash's (the entry's
// line and, for a reply-direction entry, its connection's first line,
// which a reply-direction hit reads too), and forgets the lookups. It
// loads each bucket's tags and matching slots (the lines it just
// prefetched: the first ones have mostly arrived when it comes to
// them, and the later ones' misses overlap the wait), and nothing else.
// The hot cache's lines are not prefetched: 32 KB that every lookup
// reads, they stay in the cache.
func (pf *Prefetcher) Conns() {
	tab := pf.t.tab
	hs := pf.h[:pf.n]
	pf.n = 0
	lines := pf.lines[:0]
	for _, h := range hs {
		lines = append(lines, uintptr(unsafe.Pointer(&tab.buckets[h&tab.mask])))
	}
	prefetchLines(lines)
	lines = lines[:0]
	const connMask = unsafe.Sizeof(conn{}) - 1
	for _, h := range hs {
		b := &tab.buckets[h&tab.mask]
		for m := match(b.tags.Load(), tagOf(h)); m != 0 && len(lines) < len(pf.lines)-1; m &= m - 1 {
			if e := b.slots[uint(bits.TrailingZeros64(m))/tagBits].Load(); e != nil {
				a := uintptr(unsafe.Pointer(e))
				lines = append(lines, a)
				if a&connMask != 0 {
					// A reply entry, one line into its 256-byte
					// (so 256-aligned: TestConnLayout) connection.
					lines = append(lines, a&^connMask)
				}
			}
		}
	}
	prefetchLines(lines)
}

// Reset forgets the lookups added, without prefetching their
// connections.
func (pf *Prefetcher) Reset() { pf.n = 0 }

// AddPacket is Add for the lookup that Execute(p, a, s) will make,
// if it makes one that Add can foresee: none for a packet whose state
// carries its connection in a's zone or that is malformed, and none
// prefetched for an ICMP error (its lookup is of the embedded packet's
// inverse; rare). It reports whether it added one.
func (pf *Prefetcher) AddPacket(p *Packet, a *Action, s *State) bool {
	if p.Malformed || p.HasInner || s.c != nil && s.c.e0.zone == a.Zone {
		return false
	}
	return pf.Add(&p.Tuple, a.Zone)
}

// ExecuteBurst runs the ct actions as[i] on packets ps[i] with states
// ss[i], for every i in order, with exactly the results and state
// changes of Execute(&ps[i], as[i], &ss[i]) called one by one in that
// order (each packet's error in errs[i], nil when it passed), but with
// the table lines of each group of MaxBurst lookups prefetched
// together before the group's lookups run (see Prefetcher). The
// slices must be as long as ps (else it executes nothing and returns
// EINVAL); a nil action is refused the same way. It allocates nothing
// on the path of an established connection.
func (t *Tracker) ExecuteBurst(ps []Packet, as []*Action, ss []State, errs []error) error {
	if len(as) != len(ps) || len(ss) != len(ps) || len(errs) != len(ps) {
		return fmt.Errorf("conntrack: burst of %d packets with %d actions, %d states and %d errors: %w", len(ps), len(as), len(ss), len(errs), syscall.EINVAL)
	}
	for i, a := range as {
		if a == nil {
			return fmt.Errorf("conntrack: burst packet %d has no action: %w", i, syscall.EINVAL)
		}
	}
	pf := Prefetcher{t: t}
	for len(ps) > 0 {
		n := min(len(ps), MaxBurst)
		for i := range n {
			pf.AddPacket(&ps[i], as[i], &ss[i])
		}
		pf.Conns()
		for i := range n {
			errs[i] = t.Execute(&ps[i], as[i], &ss[i])
		}
		ps, as, ss, errs = ps[n:], as[n:], ss[n:], errs[n:]
	}
	return nil
}
