package conntrack

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// connTuple is the i-th of a family of distinct UDP tuples.
func connTuple(i int) Tuple {
	var t Tuple
	t.Proto = ProtoUDP
	t.Src[0], t.Dst[0] = 10, 172
	binary.BigEndian.PutUint16(t.Src[1:], uint16(i>>16))
	t.Src[3] = 1
	t.Dst[3] = 1
	t.SrcPort = uint16(i)
	t.DstPort = 53
	return t
}

func fill(tb testing.TB, tr *Tracker, n int) {
	tb.Helper()
	a := Action{Commit: true}
	for i := 0; i < n; i++ {
		p := Packet{Tuple: connTuple(i), Len: 64}
		var s State
		if err := tr.Execute(&p, &a, &s); err != nil {
			tb.Fatalf("connection %d: %v", i, err)
		}
	}
}

func TestEstablishedLookupAllocatesNothing(t *testing.T) {
	tr, _ := newTestTracker(t, Config{MaxConns: 4096})
	fill(t, tr, 1000)
	orig := &Packet{Tuple: connTuple(7), Len: 64}
	reply := &Packet{Tuple: rev(t, connTuple(7)), Len: 64}
	none := Action{}
	var s State
	if n := testing.AllocsPerRun(1000, func() {
		s = State{}
		tr.Execute(reply, &none, &s)
		s = State{}
		tr.Execute(orig, &none, &s)
	}); n != 0 {
		t.Errorf("UDP established: %v allocations per packet pair", n)
	}
	if s.Flags != trkEst {
		t.Fatalf("state %s", stateString(s.Flags))
	}
	// TCP, with window tracking, and NAT on an established connection.
	c := handshake(t, tr)
	seqs := uint32(1001)
	p := tcpPacket(c, seg{flags: TCPAck, seq: seqs, ack: 5001, win: 65535})
	if n := testing.AllocsPerRun(1000, func() {
		s = State{}
		tr.Execute(p, &none, &s)
	}); n != 0 {
		t.Errorf("TCP established: %v allocations per packet", n)
	}
	nat := Action{HasNAT: true}
	if n := testing.AllocsPerRun(1000, func() {
		s = State{}
		tr.Execute(orig, &nat, &s)
	}); n != 0 {
		t.Errorf("established with nat: %v allocations per packet", n)
	}
}

// cpuNow is the thread's CPU time in nanoseconds: the machine is shared,
// and wall time would count the time spent descheduled.
func cpuNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}

// benchTrackers are the benchmarks' filled trackers by size, made once
// per test binary: a benchmark function runs several times (to choose
// b.N, and per -count), and filling 1,000,000 connections takes
// seconds. Lookups without commit do not change which connections a
// tracker holds.
var benchTrackers = map[int]*Tracker{}

func benchTracker(b *testing.B, n int) *Tracker {
	if tr := benchTrackers[n]; tr != nil {
		return tr
	}
	tr := New(benchConfig(n))
	fill(b, tr, n)
	benchTrackers[n] = tr
	return tr
}

// benchConfig is the benchmarks' tracker configuration for n
// connections: UDP timeouts longer than any run. With the default 30 s
// unreplied timeout, a tracker that `-count 6` kept for longer than
// that (BenchmarkEstablished's runs take about 40 s before
// BenchmarkEstablishedHot's) held only expired connections, and each
// lookup then deleted one or made a new, uncommitted connection (3
// allocations per op of BenchmarkEstablishedHot in make bench's runs
// until ctflat2) instead of finding an established one. The lookup's
// work does not depend on the timeout's value.
func benchConfig(n int) Config {
	to := DefaultTimeouts()
	to.UDPUnreplied, to.UDPReplied = 1000*time.Hour, 1000*time.Hour
	return Config{MaxConns: uint32(n), Timeouts: &to}
}

// ctSizes are the table sizes of the lookup benchmarks.
var ctSizes = []int{1000, 10000, 100000, 1000000}

// BenchmarkEstablished measures one established packet's ct (lookup,
// UDP state, counters) with 1,000 to 1,000,000 tracked connections,
// every one of them probed, in a stride order that jumps across the
// table and the heap (a prime stride, so that each connection comes
// once per n probes): the working set is the whole table, as for
// traffic spread over every connection. Until issue 15's ctfast
// change it probed at most 16,384 distinct connections (a 3 MB working
// set at 1,000,000); the report keeps that method's figures beside.
func BenchmarkEstablished(b *testing.B) {
	for _, n := range ctSizes {
		b.Run(fmt.Sprintf("conns=%d", n), func(b *testing.B) {
			tr := benchTracker(b, n)
			defer tr.StartSweeper(time.Hour)() // as a datapath runs it (and its coarse clock)
			const stride = 1000003             // prime, so coprime with every size
			a := Action{}
			p := Packet{Len: 64}
			j := 0
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			c0 := cpuNow()
			for i := 0; i < b.N; i++ {
				var s State
				p.Tuple = connTuple(j)
				tr.Execute(&p, &a, &s)
				if j += stride % n; j >= n {
					j -= n
				}
			}
			b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(min(b.N, n)), "distinct-conns")
		})
	}
}

// hotConns is BenchmarkEstablishedHot's working set.
const hotConns = 1000

// BenchmarkEstablishedHot isolates the cost of the table's size from
// that of the traffic's working set: the same 1,000 active connections
// (spread over the table: every n/1,000-th) are probed, in a shuffled
// order, in tables of 1,000 to 1,000,000 connections. The sizes run
// interleaved in chunks of 4,096 lookups, so that every size sees the
// same load, and each op is one lookup in each table. It reports each
// size's CPU ns per lookup (cpu-ns/op-N) and the 1,000,000-connection
// lookup's cost as a multiple of the 1,000-connection one in the same
// run (x-1M-of-1k): flat is 1.
func BenchmarkEstablishedHot(b *testing.B) {
	type size struct {
		tr  *Tracker
		ps  []Packet
		cpu int64
	}
	sizes := make([]size, len(ctSizes))
	rng := rand.New(rand.NewPCG(1, 2))
	for i, n := range ctSizes {
		tr := benchTracker(b, n)
		defer tr.StartSweeper(time.Hour)()
		ps := make([]Packet, hotConns)
		for h := range ps {
			ps[h] = Packet{Tuple: connTuple(h * (n / hotConns)), Len: 64}
		}
		rng.Shuffle(len(ps), func(x, y int) { ps[x], ps[y] = ps[y], ps[x] })
		sizes[i] = size{tr: tr, ps: ps}
	}
	a := Action{}
	const chunk = 4096
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		for i := range sizes {
			sz := &sizes[i]
			c0 := cpuNow()
			for k, h := 0, done%hotConns; k < n; k++ {
				var s State
				sz.tr.Execute(&sz.ps[h], &a, &s)
				if h++; h == hotConns {
					h = 0
				}
			}
			sz.cpu += cpuNow() - c0
		}
	}
	b.StopTimer()
	for i, n := range ctSizes {
		b.ReportMetric(float64(sizes[i].cpu)/float64(b.N), fmt.Sprintf("cpu-ns/op-%s", sizeName(n)))
	}
	if first := sizes[0].cpu; first > 0 {
		b.ReportMetric(float64(sizes[len(sizes)-1].cpu)/float64(first), "x-1M-of-1k")
	}
}

// sizeName writes 1000 as 1k and 1000000 as 1M.
func sizeName(n int) string {
	if n >= 1000000 {
		return fmt.Sprintf("%dM", n/1000000)
	}
	return fmt.Sprintf("%dk", n/1000)
}

// BenchmarkSetup measures committing new connections (one per op): the
// setup rate is 1e9/(ns/op) connections per second on one core.
func BenchmarkSetup(b *testing.B) {
	for _, proto := range []string{"udp", "tcp"} {
		b.Run(proto, func(b *testing.B) {
			tr := New(Config{MaxConns: uint32(b.N + 1)})
			a := Action{Commit: true}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := Packet{Tuple: connTuple(i), Len: 64}
				if proto == "tcp" {
					p.Tuple.Proto = ProtoTCP
					p.TCP = TCPInfo{Flags: TCPSyn, Seq: uint32(i), Window: 65535}
				}
				var s State
				if err := tr.Execute(&p, &a, &s); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "conns/s")
		})
	}
}

// BenchmarkBytesPerConn reports the heap each committed connection
// costs (its object and its share of the bucket array).
func BenchmarkBytesPerConn(b *testing.B) {
	const n = 100000
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		tr := New(Config{MaxConns: n})
		fill(b, tr, n)
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "bytes/conn")
		runtime.KeepAlive(tr)
	}
}

// TestBenchConfigOutlivesRuns: the benchmarks' trackers still find
// their connections established an hour after filling (a benchmark
// binary's runs take minutes; the default UDP timeout is 30 s).
func TestBenchConfigOutlivesRuns(t *testing.T) {
	cfg := benchConfig(100)
	clk := &fakeClock{}
	clk.t.Store(int64(time.Hour))
	cfg.Clock = clk.now
	tr := New(cfg)
	fill(t, tr, 100)
	clk.t.Add(int64(time.Hour))
	var s State
	if err := tr.Execute(&Packet{Tuple: connTuple(7), Len: 64}, &Action{}, &s); err != nil || s.c == nil || !s.c.confirmed() {
		t.Fatalf("an hour after the fill: %v, connection %p (not the committed one)", err, s.c)
	}
}
