package policy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

var (
	macA = [6]byte{0, 0, 0, 0, 0, 0xa}
	macB = [6]byte{0, 0, 0, 0, 0, 0xb}
	macC = [6]byte{0, 0, 0, 0, 0, 0xc}
)

func TestLearningSwitch(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	var mu sync.Mutex
	var events []Event
	sw := NewLearningSwitch(LearningOptions{MaxAge: 10 * time.Second, Now: clk.now, OnEvent: func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})

	// Learn.
	var k flowkeys.Key
	k.EthSrc, k.InPort = macA, 1
	ev, ok := sw.Learn(&k)
	if !ok || ev != (Event{Kind: Learned, MAC: macA, Port: 1}) {
		t.Fatalf("learn: %v %v", ev, ok)
	}
	if p, ok := sw.Lookup(macA); !ok || p != 1 {
		t.Fatalf("lookup: %d %v", p, ok)
	}
	if _, ok := sw.Lookup(macB); ok {
		t.Fatalf("unknown address found")
	}
	// Seeing it again on the same port is no event.
	if ev, ok := sw.Learn(&k); ok {
		t.Fatalf("refresh gave %v", ev)
	}
	// Multicast and zero sources are not learned.
	for _, m := range [][6]byte{{1, 0, 0x5e, 0, 0, 1}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {}} {
		if _, ok := sw.LearnMAC(m, 2); ok {
			t.Errorf("learned %x", m)
		}
		if _, ok := sw.Lookup(m); ok {
			t.Errorf("found %x", m)
		}
	}

	// A move.
	clk.t = clk.t.Add(5 * time.Second)
	ev, ok = sw.LearnMAC(macA, 2)
	if !ok || ev != (Event{Kind: Moved, MAC: macA, Port: 2, OldPort: 1}) {
		t.Fatalf("move: %v %v", ev, ok)
	}
	if ev.String() != "00:00:00:00:00:0a moved from port 1 to port 2" {
		t.Errorf("event text %q", ev.String())
	}
	if p, _ := sw.Lookup(macA); p != 2 {
		t.Fatalf("after move: port %d", p)
	}

	// Age-out: refreshed at t+5; B learned at t+8.
	clk.t = clk.t.Add(3 * time.Second)
	sw.LearnMAC(macB, 3)
	clk.t = clk.t.Add(7 * time.Second) // A last seen 10 s ago
	if _, ok := sw.Lookup(macA); ok {
		t.Errorf("A not aged out on lookup")
	}
	if _, ok := sw.Lookup(macB); !ok {
		t.Errorf("B aged out early")
	}
	exp := sw.Expire()
	if len(exp) != 1 || exp[0] != (Event{Kind: Expired, MAC: macA, OldPort: 2}) {
		t.Errorf("expire: %v", exp)
	}
	st := sw.Stats()
	if st.Entries != 1 || st.Learned != 2 || st.Moved != 1 || st.Expired != 1 {
		t.Errorf("stats %+v", st)
	}
	// Relearning an aged-out address is a new learn, not a move.
	if ev, ok := sw.LearnMAC(macA, 4); !ok || ev.Kind != Learned {
		t.Errorf("relearn: %v", ev)
	}
	// A stale entry not yet expired counts as gone too.
	clk.t = clk.t.Add(20 * time.Second)
	if ev, ok := sw.LearnMAC(macB, 1); !ok || ev.Kind != Learned {
		t.Errorf("stale relearn: %v", ev)
	}

	// ForgetPort.
	sw.LearnMAC(macC, 1)
	fe := sw.ForgetPort(1)
	slices.SortFunc(fe, func(a, b Event) int { return int(a.MAC[5]) - int(b.MAC[5]) })
	if len(fe) != 2 || fe[0].MAC != macB || fe[1].MAC != macC || fe[0].Kind != Expired {
		t.Errorf("forget: %v", fe)
	}

	mu.Lock()
	defer mu.Unlock()
	kinds := []EventKind{}
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	// Learned A, moved A, learned B, expired A, learned A, learned B, learned C, expired B and C.
	want := []EventKind{Learned, Moved, Learned, Expired, Learned, Learned, Learned, Expired, Expired}
	if !slices.Equal(kinds, want) {
		t.Errorf("callback events %v, want %v", kinds, want)
	}
}

func TestLearningSwitchDefaults(t *testing.T) {
	sw := NewLearningSwitch(LearningOptions{})
	if sw.maxAge != 300*time.Second || sw.max != DefaultMaxEntries || sw.now == nil {
		t.Errorf("defaults: %v %v", sw.maxAge, sw.max)
	}
}

func TestLearningSwitchFull(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	var evs []Event
	sw := NewLearningSwitch(LearningOptions{MaxEntries: 2, MaxAge: time.Minute, Now: clk.now, OnEvent: func(e Event) {
		evs = append(evs, e)
	}})
	sw.LearnMAC(macA, 1)
	clk.t = clk.t.Add(30 * time.Second)
	sw.LearnMAC(macB, 2)
	// Full, nothing aged out: C takes the place of the least recently
	// seen entry of a port with the most entries (both have one: A).
	if ev, ok := sw.LearnMAC(macC, 3); !ok || ev.Kind != Learned {
		t.Fatalf("learn into a full table: %v %v", ev, ok)
	}
	if st := sw.Stats(); st.Evicted != 1 || st.Entries != 2 || st.Learned != 3 {
		t.Errorf("stats %+v", st)
	}
	if _, ok := sw.Lookup(macA); ok {
		t.Errorf("A still known")
	}
	want := []Event{{Kind: Learned, MAC: macA, Port: 1}, {Kind: Learned, MAC: macB, Port: 2},
		{Kind: Evicted, MAC: macA, OldPort: 1}, {Kind: Learned, MAC: macC, Port: 3}}
	if !slices.Equal(evs, want) {
		t.Errorf("events %v, want %v", evs, want)
	}
	// Once B has aged out, a new address takes its place as an expiry,
	// although port 3 has as many entries.
	clk.t = clk.t.Add(61 * time.Second)
	sw.LearnMAC(macC, 3) // refresh C
	evs = nil
	if ev, ok := sw.LearnMAC(macA, 1); !ok || ev.Kind != Learned {
		t.Errorf("learn after expiry: %v %v", ev, ok)
	}
	want = []Event{{Kind: Expired, MAC: macB, OldPort: 2}, {Kind: Learned, MAC: macA, Port: 1}}
	if !slices.Equal(evs, want) {
		t.Errorf("events %v, want %v", evs, want)
	}
	if ev := (Event{Kind: Evicted, MAC: macA, OldPort: 1}); ev.String() != "00:00:00:00:00:0a evicted from port 1 (table full)" || Evicted.String() != "evicted" {
		t.Errorf("evicted text %q", ev.String())
	}
}

// A flood of new addresses on one port evicts only that port's entries:
// the addresses learned on the other ports stay.
func TestLearningSwitchFairEviction(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	sw := NewLearningSwitch(LearningOptions{MaxEntries: 100, Now: clk.now})
	host := func(i int) [6]byte { return [6]byte{0, 0, 0, 0, 1, byte(i)} }
	for i := range 10 {
		sw.LearnMAC(host(i), uint32(2+i%3)) // ports 2, 3, 4
	}
	for i := range 100000 {
		clk.t = clk.t.Add(time.Millisecond)
		m := [6]byte{2, 0x77}
		m[2], m[3], m[4], m[5] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
		if _, ok := sw.LearnMAC(m, 1); !ok {
			t.Fatalf("flood address %d not learned", i)
		}
	}
	for i := range 10 {
		if p, ok := sw.Lookup(host(i)); !ok || p != uint32(2+i%3) {
			t.Errorf("host %d: port %d, known %v after the flood", i, p, ok)
		}
	}
	st := sw.Stats()
	if st.Entries != 100 || st.Evicted != 100000-90 {
		t.Errorf("stats %+v", st)
	}
	// The port with the most entries loses them first: a second flood
	// on port 5 evicts port 1's until the two ports have as many, never
	// the hosts'.
	for i := range 200 {
		sw.LearnMAC([6]byte{2, 0x55, 0, 0, byte(i >> 8), byte(i)}, 5)
	}
	for i := range 10 {
		if _, ok := sw.Lookup(host(i)); !ok {
			t.Errorf("host %d evicted by the second flood", i)
		}
	}
	// ForgetPort drops the port's list and its place in the heap.
	evs := sw.ForgetPort(5)
	if len(evs) < 44 || len(evs) > 46 {
		t.Errorf("forgot %d entries of port 5, want 45 (half of the 90 not on the hosts' ports)", len(evs))
	}
	if st := sw.Stats(); st.Entries != 100-len(evs) {
		t.Errorf("%d entries left, want %d", st.Entries, 100-len(evs))
	}
}

// refSwitch is a plain model of the table: a slice of entries in the
// order they were last seen (oldest first).
type refSwitch struct {
	max    int
	maxAge time.Duration
	ents   []refEntry
}

type refEntry struct {
	mac  [6]byte
	port uint32
	seen time.Time
}

func (r *refSwitch) find(mac [6]byte) int {
	for i, e := range r.ents {
		if e.mac == mac {
			return i
		}
	}
	return -1
}

// The table behaves like the model under random operations; where the
// model allows a choice (which port with the most entries loses one),
// the switch's choice must be one of those allowed.
func TestLearningSwitchModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		clk := &fakeClock{t: time.Unix(0, 0)}
		var got []Event
		maxE := 1 + rng.IntN(20)
		sw := NewLearningSwitch(LearningOptions{MaxEntries: maxE, MaxAge: 50 * time.Second, Now: clk.now,
			OnEvent: func(e Event) { got = append(got, e) }})
		ref := &refSwitch{max: maxE, maxAge: 50 * time.Second}
		for step := range 2000 {
			got = got[:0]
			clk.t = clk.t.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
			mac := [6]byte{0, 0, 0, 0, 0, byte(1 + rng.IntN(40))}
			port := uint32(rng.IntN(4))
			where := func() string { return fmt.Sprintf("round %d step %d", round, step) }
			switch op := rng.IntN(20); {
			case op < 14:
				sw.LearnMAC(mac, port)
				var want []Event
				i := ref.find(mac)
				switch {
				case i >= 0 && ref.ents[i].port == port:
				case i >= 0:
					e := ref.ents[i]
					kind := Learned
					if clk.t.Sub(e.seen) < ref.maxAge {
						kind = Moved
					}
					want = append(want, Event{Kind: kind, MAC: mac, Port: port, OldPort: e.port})
					if kind == Learned {
						want[0].OldPort = 0
					}
				default:
					if len(ref.ents) >= ref.max {
						if clk.t.Sub(ref.ents[0].seen) >= ref.maxAge {
							want = append(want, Event{Kind: Expired, MAC: ref.ents[0].mac, OldPort: ref.ents[0].port})
						} else {
							// Any port with the most entries may lose its oldest.
							count := map[uint32]int{}
							for _, e := range ref.ents {
								count[e.port]++
							}
							most := 0
							for _, c := range count {
								most = max(most, c)
							}
							if len(got) != 2 || got[0].Kind != Evicted || count[got[0].OldPort] != most {
								t.Fatalf("%s: eviction events %v, ports %v", where(), got, count)
							}
							for _, e := range ref.ents {
								if e.port == got[0].OldPort {
									if e.mac != got[0].MAC {
										t.Fatalf("%s: evicted %v, want the port's oldest %x", where(), got[0], e.mac)
									}
									break
								}
							}
							want = append(want, got[0])
						}
						ref.ents = slices.DeleteFunc(ref.ents, func(e refEntry) bool { return e.mac == want[0].MAC })
					}
					want = append(want, Event{Kind: Learned, MAC: mac, Port: port})
				}
				if i = ref.find(mac); i >= 0 {
					ref.ents = slices.Delete(ref.ents, i, i+1)
				}
				ref.ents = append(ref.ents, refEntry{mac: mac, port: port, seen: clk.t})
				if !slices.Equal(got, want) {
					t.Fatalf("%s: learn %x on %d: events %v, want %v", where(), mac, port, got, want)
				}
			case op < 17:
				p, ok := sw.Lookup(mac)
				i := ref.find(mac)
				wok := i >= 0 && clk.t.Sub(ref.ents[i].seen) < ref.maxAge
				if ok != wok || (ok && p != ref.ents[i].port) {
					t.Fatalf("%s: lookup %x = %d %v, want known %v", where(), mac, p, ok, wok)
				}
			case op < 19:
				evs := sw.Expire()
				var want []Event
				for len(ref.ents) > 0 && clk.t.Sub(ref.ents[0].seen) >= ref.maxAge {
					want = append(want, Event{Kind: Expired, MAC: ref.ents[0].mac, OldPort: ref.ents[0].port})
					ref.ents = ref.ents[1:]
				}
				if !slices.Equal(evs, want) {
					t.Fatalf("%s: expire %v, want %v", where(), evs, want)
				}
			default:
				evs := sw.ForgetPort(port)
				n := len(ref.ents)
				ref.ents = slices.DeleteFunc(ref.ents, func(e refEntry) bool { return e.port == port })
				if len(evs) != n-len(ref.ents) {
					t.Fatalf("%s: forget port %d: %d events, want %d", where(), port, len(evs), n-len(ref.ents))
				}
			}
			if st := sw.Stats(); st.Entries != len(ref.ents) {
				t.Fatalf("%s: %d entries, want %d", where(), st.Entries, len(ref.ents))
			}
		}
	}
}

func TestLearningSwitchAllocs(t *testing.T) {
	sw := NewLearningSwitch(LearningOptions{})
	var k flowkeys.Key
	k.EthSrc, k.InPort = macA, 1
	sw.Learn(&k)
	if n := testing.AllocsPerRun(1000, func() { sw.Learn(&k) }); n != 0 {
		t.Errorf("Learn (refresh) allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { sw.Lookup(macA) }); n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
	// New addresses into a full table: each evicts one entry.
	full := NewLearningSwitch(LearningOptions{MaxEntries: 64, OnEvent: func(Event) {}})
	var i uint32
	next := func() {
		i++
		full.LearnMAC([6]byte{2, 0, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}, i%3)
	}
	for range 100 {
		next()
	}
	if n := testing.AllocsPerRun(1000, next); n != 0 {
		t.Errorf("LearnMAC (new address, full table) allocates %v times", n)
	}
}

func TestLearningSwitchConcurrent(t *testing.T) {
	sw := NewLearningSwitch(LearningOptions{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				m := [6]byte{0, 0, 0, byte(g) + 1, byte(i >> 8), byte(i)}
				sw.LearnMAC(m, uint32(i%3))
				sw.Lookup(m)
				if i%100 == 0 {
					sw.Expire()
				}
			}
		}()
	}
	wg.Wait()
	if st := sw.Stats(); st.Entries != 4*1000 {
		t.Errorf("entries %d", st.Entries)
	}
}

// scanSwitch is the earlier table, kept as the benchmarks' baseline: a
// map alone, so that a new address in a full table scans every entry for
// aged-out ones.
type scanSwitch struct {
	mu     sync.Mutex
	max    int
	maxAge time.Duration
	table  map[[6]byte]refEntry
}

func (s *scanSwitch) learn(mac [6]byte, port uint32) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.table[mac]; !ok && len(s.table) >= s.max {
		for m, e := range s.table {
			if now.Sub(e.seen) >= s.maxAge {
				delete(s.table, m)
			}
		}
		if len(s.table) >= s.max {
			return
		}
	}
	s.table[mac] = refEntry{mac: mac, port: port, seen: now}
}

// BenchmarkLearnFloodFullTable: a new source address on every call into
// a full table of DefaultMaxEntries, against the scanning table.
func BenchmarkLearnFloodFullTable(b *testing.B) {
	mac := func(i int) [6]byte {
		return [6]byte{2, 0x77, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}
	}
	run := func(b *testing.B, learn func([6]byte, uint32)) float64 {
		for i := range DefaultMaxEntries {
			learn(mac(i), 1)
		}
		i := DefaultMaxEntries
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			learn(mac(i), 1)
			i++
		}
		return float64(time.Since(start).Nanoseconds()) / float64(b.N)
	}
	var base float64
	b.Run("scan", func(b *testing.B) {
		s := &scanSwitch{max: DefaultMaxEntries, maxAge: DefaultMaxAge, table: make(map[[6]byte]refEntry)}
		base = run(b, func(m [6]byte, p uint32) { s.learn(m, p) })
	})
	b.Run("lru", func(b *testing.B) {
		sw := NewLearningSwitch(LearningOptions{})
		ns := run(b, func(m [6]byte, p uint32) { sw.LearnMAC(m, p) })
		if base > 0 {
			b.ReportMetric(base/ns, "x-faster-than-scan")
		}
	})
}
