package userdp

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
)

// Phases of BenchmarkForwardVeth.
const (
	fwdSettle = 150 * time.Millisecond // after switching the middle, before measuring
	fwdWindow = 500 * time.Millisecond // measured part of a phase
)

// BenchmarkForwardVeth compares forwarding between two namespaces over
// veth by the userspace datapath with the Linux bridge forwarding the
// same veth pairs (issue 5's benchmark table). Run as root:
//
//	go test -run XXX -bench ForwardVeth -benchtime 1x -count 3 ./userdp
//
// Topology (newFwdTopo): namespace S --veth-- namespace M --veth--
// namespace R, IPv6 off everywhere. In S, a sendmmsg NetdevPort sends
// 64-byte UDP frames (60 bytes + FCS, 64 distinct UDP source ports, to
// R's MAC address) in batches of 64, as fast as it can, for the whole
// benchmark. M forwards them by one of:
//
//   - bridge: a Linux bridge (multicast snooping off, br_netfilter's
//     bridge-nf-call-* off in M) with both middle ends enslaved and R's
//     MAC a static fdb entry on R's side, so it forwards by unicast;
//   - userdp: a Datapath (no local port) with both middle ends as netdev
//     ports in DefaultNetdevMode (TPACKET_V3 ring reads and sendmmsg when
//     this was written; the benchmark logs the mode) and two flows,
//     in_port(A),eth(any),eth_type(0x0800),ipv4(any) -> B and back, so every
//     frame hits a flow (the benchmark fails on any miss while measured).
//     The flows name eth_type because, as in the kernel, a key without it
//     matches only 802.2 frames.
//
// One op is four phases, bridge, userdp, userdp, bridge (so a linear
// drift of the machine's load hits both equally); each phase sets M up,
// waits 150 ms, then counts for 500 ms the frames R's veth end received
// (rx_packets, read by netlink in R) and the frames S sent. -benchtime 1x
// is the intended use (one op is about 3 s; ns/op is just its duration).
// Metrics, over all phases of the run:
//
//	bridge-Mpps, userdp-Mpps    frames delivered to R per second
//	ratio                       userdp-Mpps / bridge-Mpps (issue 5's goal: >= 0.5)
//	bridge-arrived, userdp-arrived  frames R received / frames S sent in the
//	                            windows (frames still queued in the datapath's
//	                            ring at a window's end count as not arrived,
//	                            those queued before it as arrived, so userdp's
//	                            can be a little above 1, or below 1 with no drops)
//	bridge-sent-Mpps, userdp-sent-Mpps  the sender's rate meanwhile
//	userdp-rxdrop, userdp-txdrop  fraction of the frames S sent that the
//	                            datapath's ports dropped (kernel: ring full;
//	                            sendmmsg: ENOBUFS)
//
// What runs where: on a machine with 2 cores (as the development VMs),
// the sender goroutine, the kernel's veth work and the datapath's
// forwarding goroutine share them. With the bridge, all of the kernel's
// forwarding (S's transmit, M's receive, the bridge, M's transmit, R's
// receive) runs in softirq context inside the sender's sendmmsg call, so
// the bridge's rate is the sender's rate on one core. With userdp, the
// sender's sendmmsg ends when M's veth end has put the frame in the
// port's ring; the datapath's receive goroutine for that port (one
// goroutine per port; only S's side carries traffic) reads, looks up and
// sends with sendmmsg on the other core, which also does R's receive
// work. So userdp uses both cores where the bridge uses one, and its
// rate falls when the other core is busy (GOMAXPROCS must be at least 2
// for the sender and the datapath to run at once). Frames the datapath
// cannot read in time are dropped by the kernel at M's ring, which the
// arrived fraction shows.
func BenchmarkForwardVeth(b *testing.B) {
	f := newFwdTopo(b)
	b.Logf("netdev mode %v, GOMAXPROCS %d", DefaultNetdevMode, runtime.GOMAXPROCS(0))

	var sent atomic.Uint64
	var stop atomic.Bool
	var sendErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			n, err := f.tx.WriteBatch(f.frames)
			sent.Add(uint64(n))
			if err != nil && !errors.Is(err, unix.ENOBUFS) {
				sendErr = err
				return
			}
		}
	}()
	var once sync.Once
	stopSender := func() {
		once.Do(func() {
			stop.Store(true)
			<-done
		})
	}
	b.Cleanup(stopSender) // before the sender's port closes (cleanups run last-in first-out)

	type acc struct {
		rx, sent         uint64
		secs             float64
		rxDrops, txDrops uint64 // userdp: dropped by the ports' sockets (ring full; ENOBUFS)
	}
	// measure counts a phase's window; mark, if not nil, is called at
	// its start and end.
	measure := func(a *acc, mark func()) {
		time.Sleep(fwdSettle)
		if mark != nil {
			mark()
		}
		r0, s0, t0 := f.rxPackets(b), sent.Load(), time.Now()
		time.Sleep(fwdWindow)
		r1, s1, el := f.rxPackets(b), sent.Load(), time.Since(t0)
		if mark != nil {
			mark()
		}
		a.rx += r1 - r0
		a.sent += s1 - s0
		a.secs += el.Seconds()
	}
	var br, us acc
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, mode := range [...]string{"bridge", "userdp", "userdp", "bridge"} {
			switch mode {
			case "bridge":
				off := f.bridgeOn(b)
				measure(&br, nil)
				off()
			case "userdp":
				// Frames that arrive while the ports are added and
				// before the flows are put miss; those in the window
				// must not.
				dp, off := f.datapathOn(b)
				var st [2]odp.DatapathStats
				var drops [2]odp.PortStats
				k := 0
				measure(&us, func() {
					info, err := dp.Info(context.Background())
					if err != nil {
						b.Fatal(err)
					}
					ports, err := dp.Ports(context.Background())
					if err != nil {
						b.Fatal(err)
					}
					st[k] = info.Stats
					for _, p := range ports {
						drops[k].RxDropped += p.Stats.RxDropped
						drops[k].TxDropped += p.Stats.TxDropped
					}
					k++
				})
				off()
				us.rxDrops += drops[1].RxDropped - drops[0].RxDropped
				us.txDrops += drops[1].TxDropped - drops[0].TxDropped
				if hit, missed := st[1].Hit-st[0].Hit, st[1].Missed-st[0].Missed; missed != 0 || hit == 0 {
					b.Fatalf("datapath: %d hits and %d misses while measured: want hits only (no upcalls on the measured path)", hit, missed)
				}
			}
		}
	}
	b.StopTimer()
	stopSender()
	if sendErr != nil {
		b.Fatalf("sender: %v", sendErr)
	}
	if br.rx == 0 || us.rx == 0 {
		b.Fatalf("R received %d frames through the bridge and %d through the datapath: want some through each", br.rx, us.rx)
	}
	bm, um := float64(br.rx)/br.secs/1e6, float64(us.rx)/us.secs/1e6
	b.ReportMetric(bm, "bridge-Mpps")
	b.ReportMetric(um, "userdp-Mpps")
	b.ReportMetric(um/bm, "ratio")
	b.ReportMetric(float64(br.rx)/float64(br.sent), "bridge-arrived")
	b.ReportMetric(float64(us.rx)/float64(us.sent), "userdp-arrived")
	b.ReportMetric(float64(br.sent)/br.secs/1e6, "bridge-sent-Mpps")
	b.ReportMetric(float64(us.sent)/us.secs/1e6, "userdp-sent-Mpps")
	b.ReportMetric(float64(us.rxDrops)/float64(us.sent), "userdp-rxdrop")
	b.ReportMetric(float64(us.txDrops)/float64(us.sent), "userdp-txdrop")
}
