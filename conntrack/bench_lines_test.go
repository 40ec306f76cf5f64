package conntrack

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

// BenchmarkEstablishedOneSize is for a cache simulator (cachegrind,
// scripts/ct-misses.sh), which cannot tell BenchmarkEstablishedHot's
// interleaved sizes apart: one table size per sub-benchmark, probed as
// BenchmarkEstablishedHot probes it (hot: the same 1,000 active
// connections, every n/1,000-th, shuffled) or as BenchmarkEstablished
// does (all: every connection, in a prime stride). Its trackers have a
// fixed hash seed, so that two runs fill the same buckets and miss the
// same times filling: the misses of two runs of different lengths,
// subtracted, are then the lookups' alone. Its timings are not the
// report's.
func BenchmarkEstablishedOneSize(b *testing.B) {
	for _, probe := range []string{"hot", "all"} {
		for _, n := range []int{1000, 1000000} {
			b.Run(fmt.Sprintf("%s/conns=%d", probe, n), func(b *testing.B) {
				tr := seededTracker(b, n)
				defer tr.StartSweeper(time.Hour)()
				var ps []Packet
				if probe == "hot" {
					ps = make([]Packet, hotConns)
					for h := range ps {
						ps[h] = Packet{Tuple: connTuple(h * (n / hotConns)), Len: 64}
					}
					rng := rand.New(rand.NewPCG(1, 2))
					rng.Shuffle(len(ps), func(x, y int) { ps[x], ps[y] = ps[y], ps[x] })
				}
				a := Action{}
				p := Packet{Len: 64}
				b.ReportAllocs()
				b.ResetTimer()
				for i, h, j := 0, 0, 0; i < b.N; i++ {
					var s State
					if ps != nil {
						tr.Execute(&ps[h], &a, &s)
						if h++; h == hotConns {
							h = 0
						}
						continue
					}
					p.Tuple = connTuple(j)
					tr.Execute(&p, &a, &s)
					if j += 1000003 % n; j >= n {
						j -= n
					}
				}
			})
		}
	}
}

// seededTrackers are BenchmarkEstablishedOneSize's trackers by size.
var seededTrackers = map[int]*Tracker{}

// seededTracker is benchTracker's filled tracker with a fixed hash seed
// and a clock that stands still (as benchConfig's timeouts, so that no
// connection expires under valgrind, where filling 1,000,000 takes
// minutes).
func seededTracker(b *testing.B, n int) *Tracker {
	if tr := seededTrackers[n]; tr != nil {
		return tr
	}
	cfg := benchConfig(n)
	cfg.Clock = func() int64 { return 1 }
	tr := New(cfg)
	for i := range tr.tab.seed {
		tr.tab.seed[i] = 0x9e3779b97f4a7c15 * uint64(i+1)
	}
	fill(b, tr, n)
	seededTrackers[n] = tr
	return tr
}

// lookupLines calls add with the address of every cache line (64
// bytes) that an established UDP packet's lookup of tp in zone reads
// in the table and its connections, as find, fill and streamPacket read
// them: the hot cache's line (a table that has one) and, unless the
// connection's entry is remembered there, the bucket's line, the line of every entry whose tag matches
// (and, for a chained one, its link's), and the found connection's
// lines of status, expires, the original tuple and (once a reply was
// seen) stream. The tracker's own fields, the hash and the packet are
// the same at every table size and left out.
func (t *table) lookupLines(tp *Tuple, zone uint16, add func(line uintptr)) {
	span := func(p unsafe.Pointer, n uintptr) {
		for a := uintptr(p) &^ 63; a < uintptr(p)+n; a += 64 {
			add(a)
		}
	}
	hit := func(e *entry) bool {
		span(unsafe.Pointer(e), unsafe.Sizeof(*e))
		if e.zone != zone || !e.tuple.equal(tp) {
			return false
		}
		c := e.conn()
		span(unsafe.Pointer(&c.status), unsafe.Sizeof(c.status))
		span(unsafe.Pointer(&c.expires), unsafe.Sizeof(c.expires))
		if c.status.Load()&StatusSeenReply != 0 {
			span(unsafe.Pointer(&c.stream), unsafe.Sizeof(c.stream)) // streamPacket's
		}
		span(unsafe.Pointer(&c.e0), unsafe.Sizeof(c.e0))
		return true
	}
	h := t.seed.hash(tp, zone)
	if t.hot != nil {
		// The hot cache's line first (hotFind): a remembered entry ends
		// the lookup there, without the bucket's line.
		hb := &t.hot[h&t.hotMask]
		span(unsafe.Pointer(hb), unsafe.Sizeof(*hb))
		for m := match(hb.tags.Load(), tagOf(h)); m != 0; m &= m - 1 {
			if e := hb.slots[uint(bits.TrailingZeros64(m))/tagBits].Load(); e != nil && hit(e) && !e.conn().dead() {
				return
			}
		}
	}
	b := &t.buckets[h&t.mask]
	span(unsafe.Pointer(b), unsafe.Sizeof(*b))
	for m := match(b.tags.Load(), tagOf(h)); m != 0; m &= m - 1 {
		if e := b.slots[uint(bits.TrailingZeros64(m))/tagBits].Load(); e != nil && hit(e) {
			return
		}
	}
	for e := b.more.Load(); e != nil; e = e.next().Load() {
		if hit(e) {
			return
		}
		span(unsafe.Pointer(e.next()), unsafe.Sizeof(*e.next()))
	}
}

// BenchmarkEstablishedFootprint is the deterministic side of
// BenchmarkEstablishedHot's ratio: for the same 1,000 active
// connections in a table of 1,000 and of 1,000,000 (no timing; one op
// computes both), the distinct cache lines one lookup reads in the
// table and its connection (lines/lookup-N, from lookupLines) and the
// distinct 4 KB pages that all 1,000 lookups' lines lie on, buckets'
// (bucket-pages-N: on transparent huge pages where the kernel has them,
// see newTable), the hot cache's (hot-pages-N, a table that has one)
// and connections' (conn-pages-N): the TLB's working set, which
// cachegrind does not model. The 1,000 connections are looked up
// first, as BenchmarkEstablishedHot's repeated lookups find them: in
// the hot cache where the table has one (since ctslab; before, every
// lookup read its bucket).
func BenchmarkEstablishedFootprint(b *testing.B) {
	type count struct{ lines, bucketPages, hotPages, connPages int }
	counts := map[int]count{}
	for _, n := range []int{1000, 1000000} {
		tab := benchTracker(b, n).tab
		tps := make([]Tuple, hotConns)
		for h := range tps {
			tps[h] = connTuple(h * (n / hotConns))
		}
		// Eight passes at eight clock readings: remember admits each
		// entry at one of them (see remember).
		for k := range int64(hotSample + 1) {
			for h := range tps {
				if e, _ := tab.find(&tps[h], 0, k<<10); e == nil {
					b.Fatalf("connection %v not found", tps[h])
				}
			}
		}
		in := func(s []bucket, l uintptr) bool {
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
			return l >= lo && l < lo+uintptr(len(s))*unsafe.Sizeof(bucket{})
		}
		pages := map[uintptr]bool{}
		var c count
		for h := range tps {
			lines := map[uintptr]bool{}
			tab.lookupLines(&tps[h], 0, func(l uintptr) { lines[l] = true })
			c.lines += len(lines)
			for l := range lines {
				if p := l &^ 4095; !pages[p] {
					pages[p] = true
					switch {
					case in(tab.buckets, l):
						c.bucketPages++
					case in(tab.hot, l):
						c.hotPages++
					default:
						c.connPages++
					}
				}
			}
		}
		counts[n] = c
	}
	b.ResetTimer()
	for range b.N {
		// The figures are counts, computed once above.
	}
	for n, c := range counts {
		b.ReportMetric(float64(c.lines)/hotConns, "lines/lookup-"+sizeName(n))
		b.ReportMetric(float64(c.bucketPages), "bucket-pages-"+sizeName(n))
		b.ReportMetric(float64(c.hotPages), "hot-pages-"+sizeName(n))
		b.ReportMetric(float64(c.connPages), "conn-pages-"+sizeName(n))
	}
}
