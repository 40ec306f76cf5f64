package conntrack

import (
	"fmt"
	"testing"
	"time"
)

// TestConnCacheStale: a connection a ConnCache remembers is never used
// once it is deleted (flushed by tuple or all at once, swept after
// expiring, replaced by a new connection of the same tuple), expired,
// or looked up in another zone: each packet then gets the state a
// tracker without the cache gives it, and the cache holds the entry
// the table holds. Every case first checks that the cache remembered
// the connection (else it could not fail).
func TestConnCacheStale(t *testing.T) {
	const slot = 3
	orig := ctStep{src: "10.0.0.1", dst: "10.0.0.2", proto: ProtoUDP, sport: 1000, dport: 53}
	reply := ctStep{src: "10.0.0.2", dst: "10.0.0.1", proto: ProtoUDP, sport: 53, dport: 1000}
	for _, c := range []struct {
		name  string
		stale func(tr *Tracker, clk *fakeClock)
		act   Action
		want  uint8 // the ct_state of the next original-direction packet
	}{
		{"live", func(*Tracker, *fakeClock) {}, Action{}, trkEst},
		{"flushed by tuple", func(tr *Tracker, _ *fakeClock) {
			tp := tuple(t, orig.src, orig.dst, ProtoUDP, orig.sport, orig.dport)
			if n := tr.Flush(Filter{Orig: &tp}); n != 1 {
				t.Fatalf("flushed %d", n)
			}
		}, Action{}, trkNew},
		{"flushed", func(tr *Tracker, _ *fakeClock) {
			if n := tr.Flush(Filter{}); n != 1 {
				t.Fatalf("flushed %d", n)
			}
		}, Action{}, trkNew},
		{"flushed zone", func(tr *Tracker, _ *fakeClock) {
			if n := tr.Flush(Filter{HasZone: true}); n != 1 {
				t.Fatalf("flushed %d", n)
			}
		}, Action{}, trkNew},
		{"expired", func(_ *Tracker, clk *fakeClock) { clk.advance(31 * time.Second) }, Action{}, trkNew},
		{"expired and swept", func(tr *Tracker, clk *fakeClock) {
			clk.advance(31 * time.Second)
			if n := tr.Sweep(); n != 1 {
				t.Fatalf("swept %d", n)
			}
		}, Action{}, trkNew},
		{"replaced", func(tr *Tracker, _ *fakeClock) {
			// Flushed and committed again by a tracker without the
			// cache: a new connection of the same tuple, not yet
			// answered (the cached one was).
			tr.Flush(Filter{})
			k, l4, l3 := stepKey(t, orig)
			var s State
			var p Packet
			if err := tr.ExecuteKey(&k, l4, l3, false, &commit, &s, &p); err != nil || k.CTState != trkNew {
				t.Fatalf("recommit: %v, %s", err, stateString(k.CTState))
			}
		}, Action{}, trkNew},
		{"other zone", func(*Tracker, *fakeClock) {}, Action{Zone: 9}, trkNew},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref, clk1 := newTestTracker(t, Config{})
			tr, clk2 := newTestTracker(t, Config{})
			tr.tab.seed = ref.tab.seed
			cc := tr.NewConnCache(8)
			step := func(st ctStep, a Action) (uint8, State) {
				t.Helper()
				k1, l4, l3 := stepKey(t, st)
				k2 := k1
				var s1, s2 State
				var p1, p2 Packet
				err1 := ref.ExecuteKey(&k1, l4, l3, false, &a, &s1, &p1)
				err2 := cc.ExecuteKey(slot, &k2, l4, l3, false, &a, &s2, &p2)
				if err1 != nil || err2 != nil {
					t.Fatalf("%v, %v", err1, err2)
				}
				if k1 != k2 || !sameState(s1, s2) {
					t.Fatalf("with the cache ct_state %s zone %d, without %s zone %d", stateString(k2.CTState), k2.CTZone, stateString(k1.CTState), k1.CTZone)
				}
				return k2.CTState, s2
			}
			step(orig, commit)
			step(reply, Action{})
			if f, s := step(orig, Action{}); f != trkEst || cc.e[slot].e == nil || cc.e[slot].e.conn() != s.c {
				t.Fatalf("established: %s, cache slot %p", stateString(f), cc.e[slot].e)
			}
			c.stale(ref, clk1)
			c.stale(tr, clk2)
			clk1.advance(0)
			if f, s := step(orig, c.act); f != c.want {
				t.Fatalf("after: %s, want %s", stateString(f), stateString(c.want))
			} else if e := cc.e[slot].e; e != nil && (e.conn() != s.c || e.conn().dead()) {
				t.Fatalf("the cache remembers %p (dead %v), the packet met %p", e.conn(), e.conn().dead(), s.c)
			}
			// The reply direction, answered by the table as before.
			step(reply, c.act)
		})
	}
}

// TestConnCacheSlots: packets of different connections in one slot
// each get their own (the slot follows the last), and a cache of
// another tracker's size rounds up to a power of two.
func TestConnCacheSlots(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	if got := len(tr.NewConnCache(5).e); got != 8 {
		t.Fatalf("NewConnCache(5) has %d slots, want 8", got)
	}
	if got := len(tr.NewConnCache(0).e); got != 1 {
		t.Fatalf("NewConnCache(0) has %d slots, want 1", got)
	}
	cc := tr.NewConnCache(1)
	var conns [3]*conn
	for i := range conns {
		st := ctStep{src: "10.0.0.1", dst: "10.0.0.2", proto: ProtoUDP, sport: uint16(1000 + i), dport: 53}
		k, l4, l3 := stepKey(t, st)
		var s State
		var p Packet
		if err := tr.ExecuteKey(&k, l4, l3, false, &commit, &s, &p); err != nil {
			t.Fatal(err)
		}
		conns[i] = s.c
	}
	for round := 0; round < 2; round++ {
		for i, want := range conns {
			st := ctStep{src: "10.0.0.1", dst: "10.0.0.2", proto: ProtoUDP, sport: uint16(1000 + i), dport: 53}
			k, l4, l3 := stepKey(t, st)
			var s State
			var p Packet
			if err := cc.ExecuteKey(uint32(i)<<8, &k, l4, l3, false, &Action{}, &s, &p); err != nil {
				t.Fatal(err)
			}
			if s.c != want || cc.e[0].e == nil || cc.e[0].e.conn() != want || k.CTState != trkNew {
				t.Fatalf("round %d, connection %d: met %p (%s), want %p", round, i, s.c, stateString(k.CTState), want)
			}
		}
	}
}

// TestConnCacheConcurrent: two goroutines, each with its own ConnCache,
// look up connections that a third flushes and commits again all the
// while (for the race detector; and every packet is +new+trk, of a
// live connection or a new one, never an error).
func TestConnCacheConcurrent(t *testing.T) {
	tr := New(Config{MaxConns: 4096})
	const conns = 64
	steps := make([]ctStep, conns)
	for i := range steps {
		steps[i] = ctStep{src: "10.0.0.1", dst: "10.0.0.2", proto: ProtoUDP, sport: uint16(1000 + i), dport: 53}
		k, l4, l3 := stepKey(t, steps[i])
		var s State
		var p Packet
		if err := tr.ExecuteKey(&k, l4, l3, false, &commit, &s, &p); err != nil {
			t.Fatal(err)
		}
	}
	stop := readers(2, func() func(i int) string {
		cc := tr.NewConnCache(conns) // a cache of its own
		return func(i int) string {
			k, l4, l3 := stepKey(t, steps[i%conns])
			var s State
			var p Packet
			if err := cc.ExecuteKey(uint32(i%conns), &k, l4, l3, false, &Action{}, &s, &p); err != nil || k.CTState != trkNew {
				return fmt.Sprintf("connection %d: %v %s", i%conns, err, stateString(k.CTState))
			}
			return ""
		}
	})
	for i := 0; i < 3000; i++ {
		st := steps[i%conns]
		tp := tuple(t, st.src, st.dst, ProtoUDP, st.sport, st.dport)
		tr.Flush(Filter{Orig: &tp})
		k, l4, l3 := stepKey(t, st)
		var s State
		var p Packet
		if err := tr.ExecuteKey(&k, l4, l3, false, &commit, &s, &p); err != nil {
			t.Fatal(err)
		}
	}
	if e := stop(); e != "" {
		t.Fatal(e)
	}
}

// TestConnCacheSlotHash: a slot holds the entry with the hash of the
// packet that filled it; a packet with another hash (another
// microflow, of the same connection or not) gets its answer from the
// table, the same as through the slot, and takes the slot with its
// hash. (That it does not read the other entry is not observable here:
// it only spares a cache miss.)
func TestConnCacheSlotHash(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	cc := tr.NewConnCache(1)
	send := func(h uint32, sport uint16, a *Action) *conn {
		t.Helper()
		k, l4, l3 := stepKey(t, ctStep{src: "10.0.0.1", dst: "10.0.0.2", proto: ProtoUDP, sport: sport, dport: 53})
		var s State
		var p Packet
		if err := cc.ExecuteKey(h, &k, l4, l3, false, a, &s, &p); err != nil {
			t.Fatal(err)
		}
		if s.c == nil || s.c.e0.tuple.SrcPort != sport || k.CTState != trkNew {
			t.Fatalf("source port %d, hash %#x: %s, connection %p", sport, h, stateString(k.CTState), s.c)
		}
		return s.c
	}
	c := send(0, 1000, &commit)
	if send(7, 1000, &Action{}) != c || cc.e[0] != (ccSlot{&c.e0, 7}) {
		t.Fatalf("slot %+v after a lookup with hash 7, want connection %p's entry and 7", cc.e[0], c)
	}
	// Another connection's entry under hash 8, met by hash 9.
	d := send(7, 1001, &commit)
	cc.e[0] = ccSlot{&d.e0, 8}
	if send(9, 1000, &Action{}) != c || cc.e[0] != (ccSlot{&c.e0, 9}) {
		t.Fatalf("slot %+v after a lookup with hash 9", cc.e[0])
	}
	if send(9, 1000, &Action{}) != c || cc.e[0] != (ccSlot{&c.e0, 9}) {
		t.Fatalf("slot %+v after another lookup with hash 9", cc.e[0])
	}
}
