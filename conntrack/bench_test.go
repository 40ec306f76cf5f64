package conntrack

import (
	"encoding/binary"
	"fmt"
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

// BenchmarkEstablished measures one established packet's ct (lookup,
// UDP state, counters) with 1,000 to 1,000,000 tracked connections: the
// cost should stay flat (the table is sized to the maximum).
func BenchmarkEstablished(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000, 1000000} {
		b.Run(fmt.Sprintf("conns=%d", n), func(b *testing.B) {
			tr := New(Config{MaxConns: uint32(n)})
			fill(b, tr, n)
			defer tr.StartSweeper(time.Hour)() // as a datapath runs it (and its coarse clock)
			const probes = 1 << 14
			ps := make([]Packet, probes)
			step := max(1, n/probes)
			for i := range ps {
				ps[i] = Packet{Tuple: connTuple((i * step * 7919) % n), Len: 64}
			}
			a := Action{}
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			c0 := cpuNow()
			for i := 0; i < b.N; i++ {
				var s State
				tr.Execute(&ps[i&(probes-1)], &a, &s)
			}
			b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
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
