package conntrack

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// burstTwins are two trackers alike (max connections, one clock, one hash seed, a hot
// cache of one line each, accounting, zone 1 limited to 3), one for the
// bursts and one for the packets one by one.
func burstTwins(clk *fakeClock, max uint32) (burst, single *Tracker) {
	burst = New(Config{MaxConns: max, Clock: clk.now, Accounting: true})
	single = New(Config{MaxConns: max, Clock: clk.now, Accounting: true})
	single.tab.seed = burst.tab.seed
	for _, tr := range []*Tracker{burst, single} {
		tr.tab.withHot(1)
		tr.SetZoneLimit(1, 3)
	}
	return burst, single
}

// burstCounts are the kinds of results burstAgainstOneByOne saw.
type burstCounts struct {
	packets, bursts, longest, new, est, rpl, inv, errs int
}

// checkBurst runs one burst through ExecuteBurst on burst and the same
// packets and actions through Execute one by one on its twin single,
// from the states ss (burst's) and refS (single's), which it updates.
// Every packet's error, state and packet (NAT rewrites) must be the
// same, and after the burst the counters and the tables.
func checkBurst(t *testing.T, burst, single *Tracker, ps []Packet, as []*Action, ss, refS []State, cnt *burstCounts) {
	t.Helper()
	ref := slices.Clone(ps)
	errs := make([]error, len(ps))
	if err := burst.ExecuteBurst(ps, as, ss, errs); err != nil {
		t.Fatalf("ExecuteBurst: %v", err)
	}
	for i := range ref {
		err := single.Execute(&ref[i], as[i], &refS[i])
		if (err == nil) != (errs[i] == nil) || err != nil && err.Error() != errs[i].Error() {
			t.Fatalf("burst packet %d of %d: error %v, one by one %v", i, len(ref), errs[i], err)
		}
		if !sameState(ss[i], refS[i]) || ss[i].c != nil && ss[i].c.e0.tuple != refS[i].c.e0.tuple {
			t.Fatalf("burst packet %d of %d: state\n%+v\none by one\n%+v", i, len(ref), ss[i], refS[i])
		}
		if ps[i] != ref[i] {
			t.Fatalf("burst packet %d of %d: packet\n%+v\none by one\n%+v", i, len(ref), ps[i], ref[i])
		}
		cnt.packets++
		switch f := ss[i].Flags; {
		case err != nil:
			cnt.errs++
		case f&StateInvalid != 0:
			cnt.inv++
		case f&StateReply != 0:
			cnt.rpl++
		case f&StateEstablished != 0:
			cnt.est++
		case f&StateNew != 0:
			cnt.new++
		}
	}
	if s1, s2 := burst.Stats(), single.Stats(); s1 != s2 {
		t.Fatalf("counters: burst %+v, one by one %+v", s1, s2)
	}
	if e1, e2 := dumpAll(t, burst), dumpAll(t, single); !slices.Equal(e1, e2) {
		t.Fatalf("tables: burst\n%+v\none by one\n%+v", e1, e2)
	}
	cnt.bursts++
	cnt.longest = max(cnt.longest, len(ps))
}

// burstAgainstOneByOne cuts data into packets (fuzzPackets, NAT ports
// by hash), groups them into bursts (sizes 1 to 2*MaxBurst+3 chosen by
// data's first byte and then each burst's first packet; a burst also
// ends before a packet that continues the state of one already in it)
// and compares each burst with its packets one by one (checkBurst) on
// twin trackers (burstTwins). The clock steps of a burst's packets are
// taken after it.
func burstAgainstOneByOne(t *testing.T, data []byte) burstCounts {
	var cnt burstCounts
	clk := &fakeClock{}
	clk.t.Store(1)
	burst, single := burstTwins(clk, 64)
	size := 1
	if len(data) > 0 {
		size = 1 + int(data[0])%(2*MaxBurst+3)
	}
	type item struct {
		p   Packet
		a   Action
		key uint32
		adv time.Duration
	}
	var pending []item
	// Each tracker's states: a State holds its tracker's connection.
	states, refStates := map[uint32]State{}, map[uint32]State{}
	run := func() {
		if len(pending) == 0 {
			return
		}
		var ps []Packet
		var as []*Action
		var ss, refS []State
		var adv time.Duration
		for i := range pending {
			it := &pending[i]
			ps = append(ps, it.p)
			as = append(as, &it.a)
			ss = append(ss, states[it.key])
			refS = append(refS, refStates[it.key])
			adv += it.adv
		}
		checkBurst(t, burst, single, ps, as, ss, refS, &cnt)
		for i, it := range pending {
			states[it.key], refStates[it.key] = ss[i], refS[i]
		}
		pending = pending[:0]
		clk.advance(adv)
	}
	fuzzPackets(data, true, func(fp *fuzzPacket) {
		var p Packet
		if err := FromKey(&fp.k, fp.l4, uint32(len(fp.l4)+20), &p); err != nil {
			return
		}
		key := uint32(fp.k.IPv4Src[3]) ^ uint32(fp.k.IPv6Src[15])<<8
		for _, it := range pending {
			if it.key == key {
				run()
				break
			}
		}
		if fp.fresh {
			delete(states, key)
			delete(refStates, key)
		}
		if len(pending) == 0 && len(fp.l4) > 0 {
			size = 1 + int(fp.l4[0])%(2*MaxBurst+3)
		}
		pending = append(pending, item{p: p, a: fp.a, key: key, adv: fp.advance})
		if len(pending) >= size {
			run()
		}
	})
	run()
	return cnt
}

// TestExecuteBurstMatchesExecute: random bursts (1 to 2*MaxBurst+3
// packets) of a random mix over 300 connections: new and established UDP and TCP
// packets in both directions (TCP with random flags: handshakes, resets,
// invalid combinations), malformed ones, ICMP errors about them, with
// or without commit, marks, zones (zone 1 limited), source NAT, and
// states carried from the connection's last packet (recirculation)
// or fresh, give through ExecuteBurst the errors, states, rewrites,
// counters and tables that Execute gives them one by one (checkBurst).
// The mix must have had new, established, reply and invalid packets
// and errors, and bursts longer than MaxBurst.
func TestExecuteBurstMatchesExecute(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 32))
	clk := &fakeClock{}
	clk.t.Store(int64(time.Hour))
	burst, single := burstTwins(clk, 512)
	const conns = 300
	tuples := make([]Tuple, conns)
	for i := range tuples {
		tuples[i] = connTuple(i)
		if i%3 == 0 {
			tuples[i].Proto = ProtoTCP
		}
	}
	type carried struct{ s, ref State }
	last := make([]carried, conns)
	actions := []Action{{}, {Commit: true}, {Commit: true, MarkValue: 7, MarkMask: 0xff}, {Zone: 1, Commit: true}, {Zone: 1},
		{Commit: true, HasNAT: true, NAT: NATRange{Src: true, HasIP: true, IPMin: [16]byte{192, 168, 0, 1}, IPMax: [16]byte{192, 168, 0, 2}, HasProto: true, ProtoMin: 1000, ProtoMax: 1999, Hash: true}}}
	var cnt burstCounts
	for range 1000 {
		n := 1 + rng.IntN(2*MaxBurst+3)
		ps := make([]Packet, n)
		as := make([]*Action, n)
		ss := make([]State, n)
		refS := make([]State, n)
		conn := make([]int, n)
		used := map[int]bool{}
		for i := range n {
			c := rng.IntN(conns)
			for used[c] { // one packet a connection a burst: its state goes on to the next
				c = rng.IntN(conns)
			}
			used[c] = true
			conn[i] = c
			tp := tuples[c]
			if rng.IntN(2) == 0 {
				tp = rev(t, tp)
			}
			p := Packet{Tuple: tp, Len: 64}
			switch r := rng.IntN(20); {
			case r == 0:
				p.Malformed = true
			case r == 1:
				// An ICMP error about the connection's packet.
				p.HasInner, p.Inner = true, tp
				p.Tuple = Tuple{Src: tp.Dst, Dst: tp.Src, Proto: ProtoICMP, DstPort: 3 << 8}
			}
			if p.Tuple.Proto == ProtoTCP {
				flags := [...]uint8{TCPSyn, TCPSyn | TCPAck, TCPAck, TCPAck, TCPAck | TCPPsh, TCPFin | TCPAck, TCPRst, uint8(rng.Uint32())}
				p.TCP = TCPInfo{Flags: flags[rng.IntN(len(flags))], Seq: uint32(rng.IntN(3)), Ack: uint32(rng.IntN(3)), Window: 65535}
			}
			ps[i] = p
			as[i] = &actions[rng.IntN(len(actions))]
			if rng.IntN(4) == 0 {
				ss[i], refS[i] = last[c].s, last[c].ref
			}
		}
		checkBurst(t, burst, single, ps, as, ss, refS, &cnt)
		for i, c := range conn {
			last[c] = carried{ss[i], refS[i]}
		}
		clk.advance(time.Duration(rng.IntN(3)) * time.Second)
	}
	t.Logf("%+v", cnt)
	if cnt.new == 0 || cnt.est == 0 || cnt.rpl == 0 || cnt.inv == 0 || cnt.errs == 0 || cnt.longest <= MaxBurst {
		t.Fatalf("the random mix lacks a kind of packet or long bursts: %+v", cnt)
	}
}

// FuzzExecuteBurst is TestExecuteBurstMatchesExecute's comparison on
// arbitrary inputs.
func FuzzExecuteBurst(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { burstAgainstOneByOne(t, data) })
}

// TestExecuteBurstRefusesBadArguments: slices of other lengths than the
// packets' and a nil action are EINVAL, and nothing is executed.
func TestExecuteBurstRefusesBadArguments(t *testing.T) {
	tr, _ := newTestTracker(t, Config{MaxConns: 64})
	a := Action{Commit: true}
	ps := []Packet{{Tuple: connTuple(1), Len: 64}, {Tuple: connTuple(2), Len: 64}}
	for name, args := range map[string]struct {
		as   []*Action
		ss   []State
		errs []error
	}{
		"short actions": {[]*Action{&a}, make([]State, 2), make([]error, 2)},
		"short states":  {[]*Action{&a, &a}, make([]State, 1), make([]error, 2)},
		"long errors":   {[]*Action{&a, &a}, make([]State, 2), make([]error, 3)},
		"nil action":    {[]*Action{&a, nil}, make([]State, 2), make([]error, 2)},
	} {
		if err := tr.ExecuteBurst(ps, args.as, args.ss, args.errs); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", name, err)
		}
	}
	if n := tr.Count(); n != 0 {
		t.Fatalf("refused bursts committed %d connections", n)
	}
	if err := tr.ExecuteBurst(nil, nil, nil, nil); err != nil {
		t.Fatalf("empty burst: %v", err)
	}
}

// TestExecuteBurstAllocatesNothing: a burst of MaxBurst established
// UDP packets, both directions, allocates nothing.
func TestExecuteBurstAllocatesNothing(t *testing.T) {
	tr, _ := newTestTracker(t, Config{MaxConns: 4096})
	fill(t, tr, 1000)
	ps := make([]Packet, MaxBurst)
	as := make([]*Action, MaxBurst)
	ss := make([]State, MaxBurst)
	errs := make([]error, MaxBurst)
	a := Action{}
	for i := range ps {
		as[i] = &a
	}
	if n := testing.AllocsPerRun(100, func() {
		for i := range ps {
			tp := connTuple(i * 31)
			if i%2 == 1 {
				tp = rev(t, tp)
			}
			ps[i] = Packet{Tuple: tp, Len: 64}
			ss[i] = State{}
		}
		tr.ExecuteBurst(ps, as, ss, errs)
	}); n != 0 {
		t.Errorf("a burst of %d established packets allocates %v times", MaxBurst, n)
	}
	for i := range ss {
		want := uint8(trkNew) // committed by fill, no reply seen
		if i%2 == 1 {
			want = trkEst | StateReply
		}
		if errs[i] != nil || ss[i].Flags != want {
			t.Fatalf("packet %d: %v, state %s", i, errs[i], stateString(ss[i].Flags))
		}
	}
}

// TestPrefetchChangesNothing: prefetching lines of memory (the first,
// the middle and past the end of a buffer, a connection's two lines)
// and addresses that are not memory (0, the top of the address space)
// changes no byte, faults nowhere, and a Prefetcher's Add and Conns
// change neither the table nor what the next lookups find.
func TestPrefetchChangesNothing(t *testing.T) {
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := slices.Clone(buf)
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	for _, a := range []uintptr{base, base + 2048, base + 4095, base + 1<<20, 0, 1, ^uintptr(0) &^ 63} {
		prefetch(a)
	}
	runtime.KeepAlive(buf)
	if !slices.Equal(buf, want) {
		t.Fatal("prefetch changed the memory it prefetched")
	}
	tr, _ := newTestTracker(t, Config{MaxConns: 4096})
	fill(t, tr, 100)
	before := dumpAll(t, tr)
	pf := tr.NewPrefetcher()
	for i := range 2 * MaxBurst {
		tp := connTuple(i)
		if i%2 == 1 {
			tp = rev(t, tp)
		}
		if ok := pf.Add(&tp, 0); ok != (i < MaxBurst) {
			t.Fatalf("Add %d: %v (MaxBurst %d)", i, ok, MaxBurst)
		}
	}
	if pf.Len() != MaxBurst {
		t.Fatalf("Len %d after %d adds, want MaxBurst", pf.Len(), 2*MaxBurst)
	}
	pf.Conns()
	if pf.Len() != 0 {
		t.Fatalf("Len %d after Conns", pf.Len())
	}
	if after := dumpAll(t, tr); !slices.Equal(before, after) || tr.Stats() != (Stats{Insert: 100}) {
		t.Fatalf("prefetching changed the table or counters: %+v", tr.Stats())
	}
	for i := range 100 {
		if s := mustState(t, tr, &Packet{Tuple: connTuple(i), Len: 64}, Action{}, trkNew); s.c == nil {
			t.Fatalf("connection %d not found after prefetching", i)
		}
	}
}

// BenchmarkEstablishedBurst is BenchmarkEstablished (the same
// trackers, sizes, stride order over every connection and per-lookup
// work) with the lookups made in bursts of MaxBurst through
// ExecuteBurst, as the userspace datapath's receive loop prefetches a
// burst's connections: each op is still one packet.
func BenchmarkEstablishedBurst(b *testing.B) {
	for _, n := range ctSizes {
		b.Run(fmt.Sprintf("conns=%d", n), func(b *testing.B) {
			tr := benchTracker(b, n)
			defer tr.StartSweeper(time.Hour)()
			const stride = 1000003
			a := Action{}
			ps := make([]Packet, MaxBurst)
			as := make([]*Action, MaxBurst)
			ss := make([]State, MaxBurst)
			errs := make([]error, MaxBurst)
			for i := range as {
				as[i] = &a
				ps[i].Len = 64
			}
			j := 0
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			c0 := cpuNow()
			for done := 0; done < b.N; done += MaxBurst {
				k := min(MaxBurst, b.N-done)
				for i := range k {
					ps[i].Tuple = connTuple(j)
					ss[i] = State{}
					if j += stride % n; j >= n {
						j -= n
					}
				}
				tr.ExecuteBurst(ps[:k], as[:k], ss[:k], errs[:k])
			}
			b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(min(b.N, n)), "distinct-conns")
		})
	}
}

// BenchmarkPrefetchCall is the cost of one prefetch of a line in the
// cache (the call: an assembly function is not inlined).
func BenchmarkPrefetchCall(b *testing.B) {
	var line [64]byte
	a := uintptr(unsafe.Pointer(&line))
	for b.Loop() {
		prefetch(a)
	}
	runtime.KeepAlive(&line)
}
