package conntrack

import (
	"fmt"
	"testing"
	"time"
)

// hotHas reports whether t's hot cache remembers e (in the line of its
// hash).
func (t *table) hotHas(e *entry) bool {
	if t.hot == nil {
		return false
	}
	b := &t.hot[t.seed.hash(&e.tuple, e.zone)&t.hotMask]
	for i := range b.slots {
		if b.slots[i].Load() == e {
			return true
		}
	}
	return false
}

// withHot gives t a hot cache of n lines (a power of two), whatever
// its size, that remembers every lookup's entry: the fuzzers' and
// TestHotCacheConcurrent's small tables share a few lines between all
// their entries.
func (t *table) withHot(n int) {
	t.hot, t.hotMask, t.hotSample = make([]bucket, n), uint64(n-1), 0
}

// TestHotCacheSizes: only a table of more than hotMinBuckets buckets
// has a hot cache, of hotLines lines.
func TestHotCacheSizes(t *testing.T) {
	for _, c := range []struct {
		max  uint32
		want int
	}{{1000, 0}, {2 * hotMinBuckets, 0}, {2*hotMinBuckets + 1, hotLines}, {1000000, hotLines}} {
		if got := len(New(Config{MaxConns: c.max}).tab.hot); got != c.want {
			t.Errorf("MaxConns %d: %d hot lines, want %d", c.max, got, c.want)
		}
	}
}

// TestHotCacheStale: a connection the hot cache remembers is never
// found once deleted (flushed, swept after expiring, replaced by a new
// connection of the same tuple) or expired, or in another zone: each
// packet gets the state that a tracker without the hot cache gives it,
// on Execute's path and on ExecuteKey's. Every case first checks that
// the hot cache remembered the connection (else it could not fail).
func TestHotCacheStale(t *testing.T) {
	orig := ctStep{src: "10.0.0.1", dst: "10.0.0.2", proto: ProtoUDP, sport: 1000, dport: 53}
	reply := ctStep{src: "10.0.0.2", dst: "10.0.0.1", proto: ProtoUDP, sport: 53, dport: 1000}
	otp := tuple(t, orig.src, orig.dst, ProtoUDP, orig.sport, orig.dport)
	for _, c := range []struct {
		name  string
		stale func(tr *Tracker, clk *fakeClock)
		act   Action
		want  uint8 // the ct_state of the next original-direction packet
	}{
		{"live", func(*Tracker, *fakeClock) {}, Action{}, trkEst},
		{"flushed by tuple", func(tr *Tracker, _ *fakeClock) {
			if n := tr.Flush(Filter{Orig: &otp}); n != 1 {
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
			// A new connection of the same tuple, not yet answered
			// (the remembered one was).
			tr.Flush(Filter{})
			if _, err := run(t, tr, &Packet{Tuple: otp, Len: 64}, commit); err != nil {
				t.Fatalf("recommit: %v", err)
			}
		}, Action{}, trkNew},
		{"other zone", func(*Tracker, *fakeClock) {}, Action{Zone: 9}, trkNew},
	} {
		for _, path := range []string{"Execute", "ExecuteKey"} {
			t.Run(c.name+"/"+path, func(t *testing.T) {
				cfg := Config{MaxConns: 2*hotMinBuckets + 1}
				ref, clk1 := newTestTracker(t, cfg)
				tr, clk2 := newTestTracker(t, cfg)
				ref.tab.hot = nil
				tr.tab.seed = ref.tab.seed
				tr.tab.hotSample = 0 // remember every lookup's entry
				step := func(st ctStep, a Action) (uint8, State) {
					t.Helper()
					k1, l4, l3 := stepKey(t, st)
					k2 := k1
					var s1, s2 State
					var p1, p2 Packet
					var err1, err2 error
					if path == "ExecuteKey" {
						err1 = ref.ExecuteKey(&k1, l4, l3, false, &a, &s1, &p1)
						err2 = tr.ExecuteKey(&k2, l4, l3, false, &a, &s2, &p2)
					} else {
						tp := tuple(t, st.src, st.dst, st.proto, st.sport, st.dport)
						p1, p2 = Packet{Tuple: tp, Len: 64}, Packet{Tuple: tp, Len: 64}
						err1, err2 = ref.Execute(&p1, &a, &s1), tr.Execute(&p2, &a, &s2)
						k1.CTState, k2.CTState = s1.Flags, s2.Flags
					}
					if err1 != nil || err2 != nil {
						t.Fatalf("%v, %v", err1, err2)
					}
					if k1 != k2 || !sameState(s1, s2) {
						t.Fatalf("with the hot cache ct_state %s zone %d, without %s zone %d", stateString(k2.CTState), s2.Zone, stateString(k1.CTState), s1.Zone)
					}
					return k2.CTState, s2
				}
				step(orig, commit)
				step(reply, Action{})
				f, s := step(orig, Action{})
				if f != trkEst || !tr.tab.hotHas(&s.c.e0) {
					t.Fatalf("established: %s, remembered %v", stateString(f), tr.tab.hotHas(&s.c.e0))
				}
				old := s.c
				c.stale(ref, clk1)
				c.stale(tr, clk2)
				if f, s := step(orig, c.act); f != c.want {
					t.Fatalf("after: %s, want %s", stateString(f), stateString(c.want))
				} else if c.want != trkEst && s.c == old {
					t.Fatalf("the packet met the remembered connection %p", old)
				}
				step(reply, c.act)
			})
		}
	}
}

// TestHotCacheConcurrent: readers looking connections up while a
// writer deletes and commits them again, all of them sharing one line
// of the hot cache (so that every reader's lookup replaces another's
// entries, and tags clash): a reader always meets its own tuple's
// connection, committed or a new one. Run it with -race.
func TestHotCacheConcurrent(t *testing.T) {
	tr := New(Config{MaxConns: 2*hotMinBuckets + 1})
	tr.tab.withHot(1)
	const conns = 64
	fill(t, tr, conns)
	stop := readers(2, func() func(i int) string {
		a := Action{}
		return func(i int) string {
			tp := connTuple(i % conns)
			p := Packet{Tuple: tp, Len: 64}
			var s State
			if err := tr.Execute(&p, &a, &s); err != nil || s.Flags != trkNew || s.c == nil || s.c.e0.tuple != tp || s.Orig != tp {
				return fmt.Sprintf("lookup %d: %v %s, met %v", i%conns, err, stateString(s.Flags), s.Orig)
			}
			return ""
		}
	})
	hits := 0
	for i := 0; i < 4000; i++ {
		tp := connTuple(i % conns)
		if i%3 == 0 {
			tr.Flush(Filter{Orig: &tp})
		}
		s, err := run(t, tr, &Packet{Tuple: tp, Len: 64}, commit)
		if err != nil {
			t.Fatal(err)
		}
		if s.c != nil && tr.tab.hotHas(&s.c.e0) {
			hits++
		}
	}
	if e := stop(); e != "" {
		t.Fatal(e)
	}
	if hits == 0 {
		t.Fatal("the hot cache never remembered a connection")
	}
}
