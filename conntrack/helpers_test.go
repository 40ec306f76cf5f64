package conntrack

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand (atomic: a sweeper
// goroutine may read it).
type fakeClock struct{ t atomic.Int64 }

func (c *fakeClock) now() int64              { return c.t.Load() }
func (c *fakeClock) advance(d time.Duration) { c.t.Add(int64(d)) }

func newTestTracker(t testing.TB, cfg Config) (*Tracker, *fakeClock) {
	t.Helper()
	clk := &fakeClock{}
	clk.t.Store(int64(time.Hour))
	cfg.Clock = clk.now
	return New(cfg), clk
}

func tuple(t testing.TB, src, dst string, proto uint8, sport, dport uint16) Tuple {
	t.Helper()
	tp, err := TupleFromAddrs(netip.MustParseAddr(src), netip.MustParseAddr(dst), proto, sport, dport)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// seg is a TCP segment between two endpoints.
type seg struct {
	flags    uint8
	seq, ack uint32
	win      uint16
	data     uint32
}

func tcpPacket(tp Tuple, s seg) *Packet {
	return &Packet{Tuple: tp, Len: 40 + s.data, TCP: TCPInfo{Flags: s.flags, Seq: s.seq, Ack: s.ack, Window: s.win, DataLen: s.data}}
}

func rev(t testing.TB, tp Tuple) Tuple {
	t.Helper()
	r, ok := tp.invert()
	if !ok {
		t.Fatalf("no inverse of %v", tp)
	}
	return r
}

// run executes a on p with a fresh state and returns the state.
func run(t testing.TB, tr *Tracker, p *Packet, a Action) (State, error) {
	t.Helper()
	var s State
	err := tr.Execute(p, &a, &s)
	return s, err
}

// mustState runs p and fails unless its ct_state is want.
func mustState(t testing.TB, tr *Tracker, p *Packet, a Action, want uint8) State {
	t.Helper()
	s, err := run(t, tr, p, a)
	if err != nil {
		t.Fatalf("%v: %v", p.Tuple, err)
	}
	if s.Flags != want {
		t.Fatalf("%v flags %#x: ct_state %s, want %s", p.Tuple, p.TCP.Flags, stateString(s.Flags), stateString(want))
	}
	return s
}

func stateString(f uint8) string {
	names := []string{"new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"}
	s := ""
	for i, n := range names {
		if f&(1<<i) != 0 {
			s += "+" + n
		}
	}
	if s == "" {
		return "0"
	}
	return s
}

// connOf returns the dumped entry whose original tuple is orig.
func connOf(t testing.TB, tr *Tracker, orig Tuple, zone uint16) (Entry, bool) {
	t.Helper()
	var found Entry
	ok := false
	errStop := errors.New("stop")
	tr.Dump(Filter{HasZone: true, Zone: zone}, func(e *Entry) error {
		if e.Orig == orig {
			found, ok = *e, true
			return errStop
		}
		return nil
	})
	return found, ok
}

const (
	trkNew    = StateTracked | StateNew
	trkEst    = StateTracked | StateEstablished
	trkEstRpl = StateTracked | StateEstablished | StateReply
	trkInv    = StateTracked | StateInvalid
	trkRel    = StateTracked | StateRelated
	trkRelRpl = StateTracked | StateRelated | StateReply
)

var commit = Action{Commit: true}
