package userdp

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// genPort is an in-memory port that, while a phase runs, receives
// (copies into the caller's buffers) a quota of 64-byte UDP frames of 64
// microflows, as fast as it is read; between phases its ReadBatch
// blocks. It transmits nothing (WriteBatch discards). One goroutine
// reads it: the datapath's receive loop for the port.
type genPort struct {
	name      string
	frames    [][]byte
	next      int
	left      int
	finishing bool          // the quota was handed over; report it done next call
	start     chan int      // a phase's quota
	done      chan struct{} // the quota was read and forwarded
	closed    chan struct{}
	once      atomic.Bool
}

func newGenPort(name string, frames [][]byte) *genPort {
	return &genPort{name: name, frames: frames, start: make(chan int), done: make(chan struct{}, 1), closed: make(chan struct{})}
}

func (p *genPort) Name() string       { return p.name }
func (p *genPort) Type() odp.PortType { return PortMemory }
func (p *genPort) MTU() int           { return 1500 }

// ReadBatch implements Port. After the call that hands over the last
// frames of the quota, the next call (the receive loop forwards a batch
// before it reads the next, so they have been forwarded then) reports
// the phase done and waits for the next.
func (p *genPort) ReadBatch(bufs [][]byte, sizes []int, offset int) (int, error) {
	if p.left == 0 {
		if p.finishing {
			p.finishing = false
			p.done <- struct{}{}
		}
		select {
		case p.left = <-p.start:
		case <-p.closed:
			return 0, ErrPortClosed
		}
	}
	n := min(len(bufs), p.left)
	for i := 0; i < n; i++ {
		f := p.frames[p.next]
		p.next = (p.next + 1) % len(p.frames)
		sizes[i] = copy(bufs[i][offset:], f)
	}
	p.left -= n
	p.finishing = p.left == 0
	return n, nil
}

func (p *genPort) WriteBatch(pkts [][]byte) (int, error) { return len(pkts), nil }
func (p *genPort) Stats() odp.PortStats                  { return odp.PortStats{} }
func (p *genPort) Close() error {
	if p.once.CompareAndSwap(false, true) {
		close(p.closed)
	}
	return nil
}

// Phases of BenchmarkForwardCores.
const fwdCoresQuota = 1 << 20 // frames per forwarding goroutine per phase

// BenchmarkForwardCores measures how forwarding scales with cores
// (issue 17: two ports, two forwarding goroutines, >= 1.8x one): a
// Datapath with two generator ports (genPort: in-memory, each read by
// its own receive goroutine, as every port is) and two sink ports, and
// the flows in_port(gen i),eth(any),eth_type(0x0800),ipv4(any) -> sink
// i. The generators hand over 64-byte UDP frames of 64 microflows each
// (the exact-match cache's hit path), copied into the receive buffers as
// a port would. One op is four phases, one two two one: in a "one"
// phase one generator forwards fwdCoresQuota frames, in a "two" phase
// both do at once; a phase ends when every frame has been forwarded
// (each sink counts its own; the benchmark fails on a miss or a frame
// lost). Metrics:
//
//	one-Mpps, two-Mpps   frames forwarded per second (wall clock)
//	x-vs-one             two-Mpps / one-Mpps (the goal: >= 1.8)
//	one-cpu-ns/pkt, two-cpu-ns/pkt  CPU this process used per frame
//	                     (schedstat of its threads): equal when nothing
//	                     is contended between the goroutines
//	two-runq-cores       time this process's threads waited for a CPU
//	                     during the "two" phases / their length (other
//	                     work on the machine: with it, x-vs-one is the
//	                     machine's, not the datapath's)
//
// Needs GOMAXPROCS >= 2 and two idle cores to mean anything; it fails
// with GOMAXPROCS < 2.
func BenchmarkForwardCores(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Fatalf("GOMAXPROCS %d: two forwarding goroutines cannot run at once", runtime.GOMAXPROCS(0))
	}
	dp, err := New("cores", WithoutLocalPort())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dp.Close() })
	frames := fwdFrames(fwdDstMAC, fwdDstMAC)
	var gens [2]*genPort
	var sinks [2]*sinkPort
	for i := range gens {
		gens[i] = newGenPort(fmt.Sprintf("gen%d", i), frames)
		sinks[i] = newSinkPort(fmt.Sprintf("sink%d", i))
		g, err1 := dp.AttachPort(gens[i], uint32(2*i+1))
		s, err2 := dp.AttachPort(sinks[i], uint32(2*i+2))
		if err1 != nil || err2 != nil {
			b.Fatal(err1, err2)
		}
		fl := parseFlow(b, "in_port("+itoa(g.Number)+"),"+anyEth+"eth_type(0x0800)"+anyIPv4, itoa(s.Number))
		fl.Key, fl.Mask = odp.AddTCPFlags(fl.Key, fl.Mask)
		if _, err := dp.PutFlow(context.Background(), fl, odp.PutCreate); err != nil {
			b.Fatal(err)
		}
	}
	cpu := func() testenv.ProcCPU {
		c, err := testenv.ReadProcCPU(os.Getpid())
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	type acc struct {
		frames uint64
		secs   float64
		c      testenv.ProcCPU
	}
	// phase has k generators forward quota frames each, at once.
	phase := func(a *acc, k, quota int) {
		var before [2]uint64
		for i := range k {
			before[i] = sinks[i].tx.Load()
		}
		c0, t0 := cpu(), time.Now()
		for i := range k {
			gens[i].start <- quota
		}
		for i := range k {
			<-gens[i].done
		}
		el, c1 := time.Since(t0), cpu()
		for i := range k {
			if got := sinks[i].tx.Load() - before[i]; got != uint64(quota) {
				b.Fatalf("sink %d received %d frames, want the %d generator %d sent", i, got, quota, i)
			}
		}
		if a != nil {
			d := c1.Sub(c0)
			a.frames += uint64(k * quota)
			a.secs += el.Seconds()
			a.c.Sched += d.Sched
			a.c.Wait += d.Wait
		}
	}
	phase(nil, 2, 1<<16) // warm the exact-match caches
	info0, err := dp.Info(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var one, two acc
	b.ResetTimer()
	for range b.N {
		for _, k := range [...]int{1, 2, 2, 1} {
			a := &one
			if k == 2 {
				a = &two
			}
			phase(a, k, fwdCoresQuota)
		}
	}
	b.StopTimer()
	info1, err := dp.Info(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if missed := info1.Stats.Missed - info0.Stats.Missed; missed != 0 {
		b.Fatalf("%d misses while measured: want hits only", missed)
	}
	om, tm := float64(one.frames)/one.secs/1e6, float64(two.frames)/two.secs/1e6
	b.ReportMetric(om, "one-Mpps")
	b.ReportMetric(tm, "two-Mpps")
	b.ReportMetric(tm/om, "x-vs-one")
	b.ReportMetric(float64(one.c.Sched.Nanoseconds())/float64(one.frames), "one-cpu-ns/pkt")
	b.ReportMetric(float64(two.c.Sched.Nanoseconds())/float64(two.frames), "two-cpu-ns/pkt")
	b.ReportMetric(two.c.Wait.Seconds()/two.secs, "two-runq-cores")
}
