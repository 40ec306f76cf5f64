package conntrack

import (
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// TestBucketLayout: a bucket is one 64-byte cache line, and a bucket
// array of 32 KB and more starts on a line boundary (a large object:
// pages), so that a lookup reads one line for the tags and slots.
func TestBucketLayout(t *testing.T) {
	if n := unsafe.Sizeof(bucket{}); n != 64 {
		t.Errorf("bucket is %d bytes, want 64", n)
	}
	for _, n := range []int{1, 2, 7, 100, 1024, 5000, 1 << 20} {
		tab := newTable(n, hashSeed{})
		if p := uintptr(unsafe.Pointer(&tab.buckets[0])); p%64 != 0 && len(tab.buckets)*64 >= 32<<10 {
			t.Errorf("maximum %d: the bucket array at %#x is not 64-byte aligned", n, p)
		}
		if got := len(tab.buckets); got < n/2 || got&(got-1) != 0 || got > 1 && got/2 >= (n+1)/2 {
			t.Errorf("maximum %d: %d buckets, want the smallest power of two of at least %d", n, got, n/2)
		}
	}
}

// TestTagOf: a tag is the hash's top bits, never 0 (a free slot's).
func TestTagOf(t *testing.T) {
	for _, c := range []struct{ h, want uint64 }{{0, 1}, {^uint64(0), tagMask}, {5 << (64 - tagBits), 5}, {1<<(64-tagBits) - 1, 1}} {
		if got := tagOf(c.h); got != c.want {
			t.Errorf("tagOf(%#x) = %d, want %d", c.h, got, c.want)
		}
	}
}

// TestTagMatch: match flags every slot whose tag is the one looked
// for, in any slot, with any other tags (free ones included, and those
// one bit away) beside it, and flags a slot whose tag differs only
// just above one that matches (the borrow, which the lookup's compare
// rejects); never a bit outside the slots' tops.
func TestTagMatch(t *testing.T) {
	tops := uint64(0x0000808080808080)
	for tag := uint64(1); tag <= tagMask; tag++ {
		for slot := 0; slot < bucketSlots; slot++ {
			for _, other := range []uint64{0, 1, tag ^ 1, tag ^ 1<<(tagBits-1), tagMask, (tag + 1) & tagMask} {
				var tags uint64
				for i := 0; i < bucketSlots; i++ {
					v := other
					if i == slot {
						v = tag
					} else if v == tag {
						v = 0
					}
					tags |= v << (tagBits * i)
				}
				m := match(tags, tag)
				if m&^tops != 0 {
					t.Fatalf("match %#x has bits outside the slots' tops", m)
				}
				for i := 0; i < bucketSlots; i++ {
					hit := m>>(tagBits*i+tagBits-1)&1 != 0
					if i == slot && !hit {
						t.Fatalf("tag %d in slot %d among %d: not matched (tags %#x, match %#x)", tag, slot, other, tags, m)
					}
					if i < slot && hit {
						t.Fatalf("tag %d in slot %d among %d: slot %d below it matched (tags %#x, match %#x)", tag, slot, other, i, tags, m)
					}
				}
			}
		}
	}
}

// TestTableSlotsAndChain: with every connection in one bucket, the six
// slots fill, the rest go to the chain, and every connection is found
// in both directions; deleting from slots and chain, and reusing the
// freed slots, keeps every other one found and each listed once.
func TestTableSlotsAndChain(t *testing.T) {
	tr, _ := newTestTracker(t, Config{MaxConns: 64})
	tr.tab = newTable(1, tr.tab.seed)
	const n = 20
	tps := make([]Tuple, n)
	for i := range tps {
		tps[i] = connTuple(i)
		mustState(t, tr, &Packet{Tuple: tps[i], Len: 64}, commit, trkNew)
	}
	b := &tr.tab.buckets[0]
	for i := range b.slots {
		if b.slots[i].Load() == nil || b.tags.Load()>>(tagBits*i)&tagMask == 0 {
			t.Fatalf("slot %d free with %d connections in the bucket", i, n)
		}
	}
	check := func(live map[int]bool) {
		t.Helper()
		for i := range tps {
			var s State
			p := Packet{Tuple: rev(t, tps[i]), Len: 64}
			if err := tr.Execute(&p, &Action{}, &s); err != nil {
				t.Fatal(err)
			}
			// (A reply of a deleted one makes an unconfirmed connection,
			// which is not inserted.)
			if want := live[i]; (s.Flags == trkEstRpl) != want {
				t.Errorf("connection %d: reply ct_state %s, want it found %v", i, stateString(s.Flags), want)
			}
		}
		seen := map[Tuple]int{}
		tr.tab.each(0, len(tr.tab.buckets), func(c *conn) { seen[c.e0.tuple]++ })
		for i := range tps {
			if want := map[bool]int{true: 1}[live[i]]; seen[tps[i]] != want {
				t.Errorf("connection %d listed %d times, want %d", i, seen[tps[i]], want)
			}
		}
	}
	live := map[int]bool{}
	for i := range tps {
		live[i] = true
	}
	check(live)
	// Delete some in slots and some in the chain.
	for _, i := range []int{0, 3, 7, 12, 19} {
		e, _ := tr.tab.find(&tps[i], 0, tr.now())
		if e == nil || !tr.delete(e.conn()) {
			t.Fatalf("connection %d: not found to delete", i)
		}
		delete(live, i)
	}
	check(live)
	// New connections take the freed slots.
	for i := 0; i < 4; i++ {
		tp := connTuple(100 + i)
		tps = append(tps, tp)
		mustState(t, tr, &Packet{Tuple: tp, Len: 64}, commit, trkNew)
		live[len(tps)-1] = true
	}
	check(live)
	if got := tr.Count(); got != len(live) {
		t.Errorf("%d connections counted, want %d", got, len(live))
	}
}

// TestTableConcurrent: lookups of connections that stay committed find
// them every time while other goroutines commit and delete connections
// in the same buckets (run with -race).
func TestTableConcurrent(t *testing.T) {
	tr, _ := newTestTracker(t, Config{MaxConns: 4096})
	tr.tab = newTable(4, tr.tab.seed) // 2 buckets: everything collides
	const stay = 8
	for i := 0; i < stay; i++ {
		mustState(t, tr, &Packet{Tuple: connTuple(i), Len: 64}, commit, trkNew)
	}
	var stop atomic.Bool
	var writers sync.WaitGroup
	for w := range 2 {
		writers.Go(func() {
			for round := 0; !stop.Load(); round++ {
				tp := connTuple(1000 + w*100000 + round)
				var s State
				p := Packet{Tuple: tp, Len: 64}
				if err := tr.Execute(&p, &commit, &s); err != nil {
					t.Error(err)
					return
				}
				if round%2 == 0 {
					tr.delete(s.c)
				}
				if round > 3000 {
					return
				}
			}
		})
	}
	misses := 0
	for r := 0; r < 20000; r++ {
		i := r % stay
		tp := connTuple(i)
		if e, _ := tr.tab.find(&tp, 0, tr.now()); e == nil || e.conn().e0.tuple != tp {
			misses++
		}
	}
	stop.Store(true)
	writers.Wait()
	if misses != 0 {
		t.Errorf("%d of 20000 lookups of committed connections missed", misses)
	}
}
