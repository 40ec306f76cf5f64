package policy

import (
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
	var expired int
	sw := NewLearningSwitch(LearningOptions{MaxEntries: 2, MaxAge: time.Minute, Now: clk.now, OnEvent: func(e Event) {
		if e.Kind == Expired {
			expired++
		}
	}})
	sw.LearnMAC(macA, 1)
	clk.t = clk.t.Add(30 * time.Second)
	sw.LearnMAC(macB, 2)
	if _, ok := sw.LearnMAC(macC, 3); ok {
		t.Errorf("learned into a full table")
	}
	if st := sw.Stats(); st.Full != 1 || st.Entries != 2 {
		t.Errorf("stats %+v", st)
	}
	// Once A has aged out, C takes its place (and A's expiry is reported).
	clk.t = clk.t.Add(31 * time.Second)
	if ev, ok := sw.LearnMAC(macC, 3); !ok || ev.Kind != Learned {
		t.Errorf("learn after expiry: %v %v", ev, ok)
	}
	if expired != 1 {
		t.Errorf("%d expiries reported", expired)
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
