package conntrack

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func udp(t testing.TB, src, dst string, sport, dport uint16) *Packet {
	return &Packet{Tuple: tuple(t, src, dst, ProtoUDP, sport, dport), Len: 60}
}

func TestUDPStatesAndTimeouts(t *testing.T) {
	tr, clk := newTestTracker(t, Config{Accounting: true})
	req := udp(t, "10.0.0.1", "10.0.0.2", 5353, 53)
	orig := req.Tuple
	// Uncommitted: new every time, nothing kept.
	mustState(t, tr, req, Action{}, trkNew)
	mustState(t, tr, req, Action{}, trkNew)
	if tr.Count() != 0 {
		t.Fatalf("uncommitted packets left %d connections", tr.Count())
	}
	mustState(t, tr, req, commit, trkNew)
	// Still new (no reply seen yet), and the unreplied timeout.
	mustState(t, tr, req, Action{}, trkNew)
	e, _ := connOf(t, tr, orig, 0)
	if e.Timeout != 30 || e.Status&StatusSeenReply != 0 {
		t.Fatalf("unreplied: timeout %d status %#x, want 30 s and no reply", e.Timeout, e.Status)
	}
	reply := &Packet{Tuple: rev(t, orig), Len: 60}
	mustState(t, tr, reply, Action{}, trkEstRpl)
	mustState(t, tr, req, Action{}, trkEst)
	// A reply within 2 s of the start keeps the short timeout (6.1).
	e, _ = connOf(t, tr, orig, 0)
	if e.Timeout != 30 || e.Status&StatusAssured != 0 {
		t.Fatalf("early reply: timeout %d status %#x, want 30 s, not assured", e.Timeout, e.Status)
	}
	clk.advance(3 * time.Second)
	mustState(t, tr, reply, Action{}, trkEstRpl)
	e, _ = connOf(t, tr, orig, 0)
	if e.Timeout != 120 || e.Status&StatusAssured == 0 {
		t.Fatalf("stream: timeout %d status %#x, want 120 s, assured", e.Timeout, e.Status)
	}
	if e.OrigPackets != 3 || e.ReplyPackets != 2 || e.OrigBytes != 180 {
		t.Errorf("counters %d/%d packets %d bytes, want 3/2 and 180", e.OrigPackets, e.ReplyPackets, e.OrigBytes)
	}
	// Without accounting (the kernel's default) nothing is counted.
	plain, _ := newTestTracker(t, Config{})
	mustState(t, plain, udp(t, "10.0.0.1", "10.0.0.2", 5353, 53), commit, trkNew)
	if e, _ := connOf(t, plain, orig, 0); e.OrigPackets != 0 || e.OrigBytes != 0 {
		t.Errorf("counted %d packets without accounting", e.OrigPackets)
	}
}

func TestExpiryAndSweep(t *testing.T) {
	tr, clk := newTestTracker(t, Config{})
	req := udp(t, "10.0.0.1", "10.0.0.2", 1000, 2000)
	other := udp(t, "10.0.0.1", "10.0.0.2", 1001, 2000)
	mustState(t, tr, req, commit, trkNew)
	mustState(t, tr, other, commit, trkNew)
	clk.advance(29 * time.Second)
	mustState(t, tr, req, Action{}, trkNew) // refreshed: 30 s again (unreplied)
	mustState(t, tr, other, Action{}, trkNew)
	clk.advance(29 * time.Second)
	if n := tr.Sweep(); n != 0 {
		t.Fatalf("swept %d live connections", n)
	}
	clk.advance(2 * time.Second)
	// Expired: the lookup no longer finds it, before any sweep (the
	// reply is not a reply any more but a new connection's packet),
	// and deletes it on the way, as the kernel's lookup does.
	mustState(t, tr, &Packet{Tuple: rev(t, req.Tuple)}, Action{}, trkNew)
	if tr.Count() != 1 {
		t.Fatalf("count %d before the sweep, want 1", tr.Count())
	}
	if n := tr.Sweep(); n != 1 || tr.Count() != 0 {
		t.Fatalf("swept %d, count %d: want 1 and 0", n, tr.Count())
	}
	// A stream (replied, older than 2 s) lives 120 s.
	mustState(t, tr, req, commit, trkNew)
	clk.advance(3 * time.Second)
	mustState(t, tr, &Packet{Tuple: rev(t, req.Tuple)}, Action{}, trkEstRpl) // 30 s: not seen-reply yet when timed
	mustState(t, tr, req, Action{}, trkEst)                                  // 120 s
	clk.advance(119 * time.Second)
	mustState(t, tr, req, Action{}, trkEst)
	tr.Flush(Filter{})
	// Incremental sweeping covers the whole table in steps.
	for i := 0; i < 100; i++ {
		mustState(t, tr, udp(t, "10.0.1.1", "10.0.0.2", uint16(3000+i), 53), commit, trkNew)
	}
	clk.advance(31 * time.Second)
	total := 0
	steps := len(tr.tab.buckets)/1000 + 1
	for i := 0; i < steps; i++ {
		total += tr.SweepBuckets(1000)
	}
	if total != 100 || tr.Count() != 0 {
		t.Fatalf("incremental sweep removed %d, count %d", total, tr.Count())
	}
}

func TestSweeperGoroutine(t *testing.T) {
	tr, clk := newTestTracker(t, Config{MaxConns: 1024})
	mustState(t, tr, udp(t, "10.0.0.1", "10.0.0.2", 1, 2), commit, trkNew)
	clk.advance(time.Minute)
	stop := tr.StartSweeper(10 * time.Millisecond)
	defer stop()
	deadline := time.Now().Add(5 * time.Second)
	for tr.Count() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper did not remove an expired connection in 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestICMPEchoAndErrors(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	echo := &Packet{Tuple: tuple(t, "10.0.0.1", "10.0.0.2", ProtoICMP, 77, 8<<8)}
	reply := &Packet{Tuple: tuple(t, "10.0.0.2", "10.0.0.1", ProtoICMP, 77, 0<<8)}
	// An echo reply cannot start a connection.
	mustState(t, tr, reply, commit, trkInv)
	mustState(t, tr, echo, commit, trkNew)
	mustState(t, tr, reply, Action{}, trkEstRpl)
	e, _ := connOf(t, tr, echo.Tuple, 0)
	if e.Reply != reply.Tuple || e.Timeout != 30 {
		t.Fatalf("entry %+v", e)
	}
	// A type without an inverse (router advertisement, 9) is invalid.
	mustState(t, tr, &Packet{Tuple: tuple(t, "10.0.0.1", "10.0.0.2", ProtoICMP, 0, 9<<8)}, commit, trkInv)

	// An ICMP error about a UDP flow is related, in either direction.
	u := udp(t, "10.0.0.1", "10.0.0.9", 4000, 53)
	mustState(t, tr, u, commit, trkNew)
	unreach := &Packet{Tuple: tuple(t, "10.0.0.254", "10.0.0.1", ProtoICMP, 0, 3<<8|3), Inner: u.Tuple, HasInner: true}
	s := mustState(t, tr, unreach, Action{}, trkRelRpl)
	if s.Orig != u.Tuple {
		t.Errorf("related: orig tuple %v, want the UDP flow's %v", s.Orig, u.Tuple)
	}
	back := &Packet{Tuple: tuple(t, "10.0.0.1", "10.0.0.9", ProtoICMP, 0, 3<<8|3), Inner: rev(t, u.Tuple), HasInner: true}
	mustState(t, tr, back, Action{}, trkRel)
	// An error about no connection is invalid.
	stray := &Packet{Tuple: unreach.Tuple, Inner: tuple(t, "10.0.0.1", "10.0.0.9", ProtoUDP, 1, 1), HasInner: true}
	mustState(t, tr, stray, Action{}, trkInv)
}

func TestICMPv6Echo(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	echo := &Packet{Tuple: tuple(t, "fd00::1", "fd00::2", ProtoICMPv6, 9, 128<<8)}
	mustState(t, tr, echo, commit, trkNew)
	mustState(t, tr, &Packet{Tuple: tuple(t, "fd00::2", "fd00::1", ProtoICMPv6, 9, 129<<8)}, Action{}, trkEstRpl)
	// Neighbour solicitation has no inverse: invalid.
	mustState(t, tr, &Packet{Tuple: tuple(t, "fd00::1", "ff02::1:ff00:2", ProtoICMPv6, 0, 135<<8)}, Action{}, trkInv)
	tooBig := &Packet{Tuple: tuple(t, "fd00::fe", "fd00::1", ProtoICMPv6, 0, 2<<8), Inner: echo.Tuple, HasInner: true}
	mustState(t, tr, tooBig, Action{}, trkRelRpl)
}

func TestGenericProtocol(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	p := &Packet{Tuple: tuple(t, "10.0.0.1", "10.0.0.2", 132, 0, 0)} // SCTP: generic here
	mustState(t, tr, p, commit, trkNew)
	mustState(t, tr, &Packet{Tuple: rev(t, p.Tuple)}, Action{}, trkEstRpl)
	if e, _ := connOf(t, tr, p.Tuple, 0); e.Timeout != 600 {
		t.Errorf("generic timeout %d, want 600", e.Timeout)
	}
}

func TestZonesIsolate(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	p := udp(t, "10.0.0.1", "10.0.0.2", 1, 2)
	z1, z2 := Action{Commit: true, Zone: 1}, Action{Commit: true, Zone: 2}
	s := mustState(t, tr, p, z1, trkNew)
	if s.Zone != 1 {
		t.Fatalf("zone %d, want 1", s.Zone)
	}
	mustState(t, tr, &Packet{Tuple: rev(t, p.Tuple)}, Action{Zone: 1}, trkEstRpl)
	// The same tuple in zone 2 is a different connection.
	mustState(t, tr, &Packet{Tuple: rev(t, p.Tuple)}, z2, trkNew)
	mustState(t, tr, &Packet{Tuple: rev(t, p.Tuple)}, Action{Zone: 0}, trkNew)
	if _, ok := connOf(t, tr, rev(t, p.Tuple), 2); !ok {
		t.Fatal("zone 2's connection is missing")
	}
	// An invalid packet reports the action's zone.
	s = mustState(t, tr, &Packet{Tuple: p.Tuple, Malformed: true}, Action{Zone: 7}, trkInv)
	if s.Zone != 7 {
		t.Errorf("invalid packet's zone %d, want 7", s.Zone)
	}
}

func TestZoneLimits(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	if err := tr.SetZoneLimit(5, 2); err != nil {
		t.Fatal(err)
	}
	z5 := Action{Commit: true, Zone: 5}
	for i := 0; i < 2; i++ {
		mustState(t, tr, udp(t, "10.0.0.1", "10.0.0.2", uint16(100+i), 53), z5, trkNew)
	}
	_, err := run(t, tr, udp(t, "10.0.0.1", "10.0.0.2", 102, 53), z5)
	if !errors.Is(err, ErrZoneLimit) {
		t.Fatalf("third commit in zone 5: %v, want ErrZoneLimit", err)
	}
	// Without commit the packet is still tracked; other zones are free.
	mustState(t, tr, udp(t, "10.0.0.1", "10.0.0.2", 102, 53), Action{Zone: 5}, trkNew)
	mustState(t, tr, udp(t, "10.0.0.1", "10.0.0.2", 102, 53), Action{Commit: true, Zone: 6}, trkNew)
	lim, n, _ := tr.ZoneLimit(5)
	if lim != 2 || n != 2 {
		t.Fatalf("zone 5: limit %d count %d", lim, n)
	}
	// The default limit applies to zones without their own. As in the
	// kernel, zone 6's connection, committed while it was unlimited, is
	// not counted: one more fits in the default's 1, the next does not.
	tr.SetZoneLimit(DefaultZone, 1)
	if _, n, _ := tr.ZoneLimit(6); n != 0 {
		t.Errorf("zone 6 counts %d connections committed while unlimited, want 0", n)
	}
	mustState(t, tr, udp(t, "10.0.0.1", "10.0.0.2", 103, 53), Action{Commit: true, Zone: 6}, trkNew)
	_, err = run(t, tr, udp(t, "10.0.0.1", "10.0.0.2", 106, 53), Action{Commit: true, Zone: 6})
	if !errors.Is(err, ErrZoneLimit) {
		t.Fatalf("zone 6 over the default limit: %v", err)
	}
	// Limit 0 is unlimited; deleting a zone's limit returns it to the default.
	tr.SetZoneLimit(5, 0)
	mustState(t, tr, udp(t, "10.0.0.1", "10.0.0.2", 104, 53), z5, trkNew)
	tr.DeleteZoneLimit(5)
	if _, err := run(t, tr, udp(t, "10.0.0.1", "10.0.0.2", 105, 53), z5); !errors.Is(err, ErrZoneLimit) {
		t.Fatalf("zone 5 back on the default limit: %v", err)
	}
	if err := tr.SetZoneLimit(70000, 1); !errors.Is(err, ErrZone) {
		t.Errorf("zone 70000: %v", err)
	}
	// Flushing a zone frees its count.
	if n := tr.Flush(Filter{HasZone: true, Zone: 5}); n != 3 {
		t.Fatalf("flushed %d from zone 5, want 3", n)
	}
	if _, n, _ := tr.ZoneLimit(5); n != 0 {
		t.Fatalf("zone 5 count %d after flush", n)
	}
}

func TestGlobalMaximum(t *testing.T) {
	tr, _ := newTestTracker(t, Config{MaxConns: 2})
	mustState(t, tr, udp(t, "10.0.0.1", "10.0.0.2", 1, 53), commit, trkNew)
	mustState(t, tr, udp(t, "10.0.0.1", "10.0.0.2", 2, 53), commit, trkNew)
	if _, err := run(t, tr, udp(t, "10.0.0.1", "10.0.0.2", 3, 53), commit); !errors.Is(err, ErrTableFull) {
		t.Fatalf("third connection: %v, want ErrTableFull", err)
	}
	// Established packets still pass.
	mustState(t, tr, udp(t, "10.0.0.2", "10.0.0.1", 53, 1), Action{}, trkEstRpl)
	tr.SetMaxConns(3)
	mustState(t, tr, udp(t, "10.0.0.1", "10.0.0.2", 3, 53), commit, trkNew)
	if s := tr.Stats(); s.Drop != 1 || s.Insert != 3 {
		t.Errorf("stats %+v, want 1 drop and 3 inserts", s)
	}
}

func TestMarkAndLabels(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	p := udp(t, "10.0.0.1", "10.0.0.2", 1, 2)
	a := Action{Commit: true, MarkValue: 0x12, MarkMask: 0xff, HasLabels: true}
	a.LabelsValue[15], a.LabelsMask[15] = 0x01, 0x0f
	s := mustState(t, tr, p, a, trkNew)
	if s.Mark != 0x12 || s.Labels[15] != 1 {
		t.Fatalf("mark %#x labels %x after commit", s.Mark, s.Labels)
	}
	// Masked update keeps the other bits.
	a2 := Action{Commit: true, MarkValue: 0x300, MarkMask: 0xf00}
	s = mustState(t, tr, p, a2, trkNew)
	if s.Mark != 0x312 {
		t.Fatalf("mark %#x, want 0x312", s.Mark)
	}
	s = mustState(t, tr, &Packet{Tuple: rev(t, p.Tuple)}, Action{}, trkEstRpl)
	if s.Mark != 0x312 || s.Labels[15] != 1 {
		t.Fatalf("reply sees mark %#x labels %x", s.Mark, s.Labels)
	}
}

func TestCachedStateAcrossRecirculation(t *testing.T) {
	tr, _ := newTestTracker(t, Config{Accounting: true})
	p := udp(t, "10.0.0.1", "10.0.0.2", 1, 2)
	var s State
	// ct(zone=3), recirc, ct(commit,zone=3): the second action reuses
	// the first's (unconfirmed) connection and commits it.
	if err := tr.Execute(p, &Action{Zone: 3}, &s); err != nil {
		t.Fatal(err)
	}
	if s.Flags != trkNew {
		t.Fatalf("first pass %s", stateString(s.Flags))
	}
	if err := tr.Execute(p, &Action{Zone: 3, Commit: true}, &s); err != nil {
		t.Fatal(err)
	}
	if tr.Count() != 1 {
		t.Fatalf("count %d after the committing pass", tr.Count())
	}
	if st, _ := connOf(t, tr, p.Tuple, 3); st.OrigPackets != 1 {
		t.Errorf("the packet was counted %d times, want once", st.OrigPackets)
	}
	// ct_clear forgets everything.
	s.Clear()
	if s != (State{}) {
		t.Fatalf("cleared state %+v", s)
	}
}

func TestForceCommit(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	p := udp(t, "10.0.0.1", "10.0.0.2", 1, 2)
	mustState(t, tr, p, commit, trkNew)
	r := &Packet{Tuple: rev(t, p.Tuple)}
	var s State
	if err := tr.Execute(r, &Action{}, &s); err != nil || s.Flags != trkEstRpl {
		t.Fatalf("reply: %v %s", err, stateString(s.Flags))
	}
	// ct(commit,force) on the reply: the old entry goes, a new one
	// starts in this direction.
	if err := tr.Execute(r, &Action{Commit: true, Force: true}, &s); err != nil {
		t.Fatal(err)
	}
	if s.Flags != trkNew {
		t.Fatalf("forced: %s, want +trk+new", stateString(s.Flags))
	}
	if _, ok := connOf(t, tr, r.Tuple, 0); !ok || tr.Count() != 1 {
		t.Fatalf("after force: orig %v present %v, count %d", r.Tuple, ok, tr.Count())
	}
	// Force in the original direction changes nothing.
	var s2 State
	tr.Execute(r, &Action{}, &s2)
	if err := tr.Execute(r, &Action{Commit: true, Force: true}, &s2); err != nil || tr.Count() != 1 {
		t.Fatalf("force in original direction: %v, count %d", err, tr.Count())
	}
}

func TestFlushByTuple(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	var a, b *Packet
	for i, p := range []**Packet{&a, &b} {
		*p = udp(t, "10.0.0.1", "10.0.0.2", uint16(2*i+1), uint16(2*i+2))
		mustState(t, tr, *p, commit, trkNew)
	}
	if n := tr.Flush(Filter{Orig: &a.Tuple}); n != 1 {
		t.Fatalf("flushed %d", n)
	}
	if _, ok := connOf(t, tr, b.Tuple, 0); !ok {
		t.Fatal("flush by tuple removed the other connection")
	}
	if n := tr.Flush(Filter{}); n != 1 || tr.Count() != 0 {
		t.Fatalf("flush all: %d, count %d", n, tr.Count())
	}
}

// TestConcurrentLookupsAndWriters runs lookups of established
// connections while others commit, flush and sweep (for the race
// detector, and to check that a live connection is never lost).
func TestConcurrentLookupsAndWriters(t *testing.T) {
	tr := New(Config{MaxConns: 4096})
	fill(t, tr, 256)
	stop := readers(2, func() func(i int) string {
		a := Action{}
		return func(i int) string {
			p := Packet{Tuple: connTuple(i % 256)}
			var s State
			if err := tr.Execute(&p, &a, &s); err != nil || s.Flags != trkNew {
				return fmt.Sprintf("lookup %d: %v %s", i%256, err, stateString(s.Flags))
			}
			return ""
		}
	})
	a := Action{Commit: true}
	for i := 0; i < 2000; i++ {
		p := Packet{Tuple: connTuple(1000 + i)}
		var s State
		if err := tr.Execute(&p, &a, &s); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			tr.Flush(Filter{Orig: &p.Tuple})
			tr.Sweep()
		}
	}
	if e := stop(); e != "" {
		t.Fatal(e)
	}
}

// readers starts n goroutines, each calling its own function from
// newReader with i = 0, 1, ... until one returns a failure or stop is
// called; stop returns the first failure, or "".
func readers(n int, newReader func() func(i int) string) (stop func() string) {
	done := make(chan struct{})
	errs := make(chan string, n)
	for r := 0; r < n; r++ {
		fn := newReader()
		go func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					errs <- ""
					return
				default:
				}
				if e := fn(i); e != "" {
					errs <- e
					return
				}
			}
		}()
	}
	return func() string {
		close(done)
		first := ""
		for r := 0; r < n; r++ {
			if e := <-errs; e != "" && first == "" {
				first = e
			}
		}
		return first
	}
}

// TestCoarseClock: with the default clock, a running sweeper gives the
// packet path the time it last read (no clock read per packet), kept
// fresh; stopping it returns to reading the clock.
func TestCoarseClock(t *testing.T) {
	tr := New(Config{MaxConns: 1024})
	if tr.coarse.Load() != 0 {
		t.Fatal("coarse clock set without a sweeper")
	}
	stop := tr.StartSweeper(time.Second)
	n1 := tr.now()
	if n1 == 0 || tr.coarse.Load() != n1 {
		t.Fatalf("now %d, coarse %d: want the sweeper's reading", n1, tr.coarse.Load())
	}
	deadline := time.Now().Add(5 * time.Second)
	for tr.now() == n1 {
		if time.Now().After(deadline) {
			t.Fatal("the coarse clock did not move in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	for tr.coarse.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the coarse clock outlived its sweeper")
		}
		time.Sleep(time.Millisecond)
	}
	// A fake clock is never replaced.
	ft, clk := newTestTracker(t, Config{MaxConns: 1024})
	defer ft.StartSweeper(time.Second)()
	clk.advance(time.Minute)
	if ft.now() != clk.now() {
		t.Fatal("the sweeper overrode a test clock")
	}
}
