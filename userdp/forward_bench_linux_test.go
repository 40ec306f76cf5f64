package userdp

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// Phases of BenchmarkForwardVeth.
const (
	fwdFlowing = 10 * time.Second       // the longest a new phase may take before frames reach R
	fwdSettle  = 150 * time.Millisecond // after frames flow, before measuring
	fwdWindow  = 500 * time.Millisecond // measured part of a phase
)

// BenchmarkForwardVeth compares forwarding between two namespaces over
// veth by the userspace datapath with the Linux bridge and with Open
// vSwitch's userspace datapath (ovs-vswitchd, datapath_type=netdev)
// forwarding the same veth pairs (issue 5's benchmark table, issue 17
// point 1). Run as root, with Open vSwitch installed (it fails without):
//
//	go test -run XXX -bench ForwardVeth -benchtime 1x -count 3 ./userdp
//
// Topology (newFwdTopo): namespace S --veth-- namespace M --veth--
// namespace R, IPv6 off everywhere. In S, a sender process (this test
// binary again, runFwdSender) sends 64-byte UDP frames (60 bytes + FCS,
// 64 distinct UDP source ports, to R's MAC address) with sendmmsg in
// batches of 64, as fast as it can, for the whole benchmark; being a
// process of its own, the CPU each forwarder uses can be told from the
// sender's. M forwards them by one of (a phase each):
//
//   - bridge: a Linux bridge (multicast snooping off, br_netfilter's
//     bridge-nf-call-* off in M) with both middle ends enslaved and R's
//     MAC a static fdb entry on R's side, so it forwards by unicast;
//   - ring, xdp: a userdp Datapath (no local port) with both middle ends
//     as netdev ports, NetdevRing (TPACKET_V2/V3 ring reads, sendmmsg) or
//     NetdevXDP (AF_XDP, copy mode), and two flows,
//     in_port(A),eth(any),eth_type(0x0800),ipv4(any) -> B and back, so every
//     frame hits a flow (the benchmark fails on any miss while measured).
//     The flows name eth_type because, as in the kernel, a key without it
//     matches only 802.2 frames;
//   - ovs, ovsxdp: a private ovs-vswitchd in M (fwdTopo.ovsOn) with a
//     netdev bridge whose OpenFlow flows are in_port=1,actions=output:2 and
//     back, and M's ends added as ports 1 and 2 for the phase: default
//     ports (AF_PACKET, polled by the main thread) or type=afxdp ports
//     (native XDP on veth, polled by a PMD thread that busy-polls a core).
//
// FWD_PHASES=xdp (a comma-separated list of phases) runs only those, for
// profiling one forwarder (no ratios then).
//
// One op is ten phases, bridge ring xdp ovs ovsxdp ovsxdp ovs xdp ring
// bridge (so a linear drift of the machine's load hits all equally);
// each phase sets M up, waits until frames reach R (at most 10 s, or it
// fails), waits 150 ms more, then counts for 500 ms the frames R's veth
// end received (rx_packets, read by netlink in R), the frames S sent,
// and the CPU the forwarder used. -benchtime 1x is the intended use
// (one op is about 10 s; ns/op is just its duration). Metrics, over all
// phases of the run, for each forwarder F of bridge, ring, xdp, ovs,
// ovsxdp:
//
//	F-Mpps          frames delivered to R per second
//	F-arrived       frames R received / frames S sent in the windows
//	                (frames still queued in a forwarder at a window's end
//	                count as not arrived, those queued before it as
//	                arrived, so it can be a little above 1)
//	F-sent-Mpps     the sender's rate meanwhile
//	F-cpu-ns/pkt    CPU the forwarder used per frame delivered: the
//	                summed run time of its threads (schedstat of
//	                /proc/PID/task/*) over the window: this process's for
//	                userdp (the sender is another), ovs-vswitchd's for
//	                Open vSwitch. The bridge forwards inside the sender's
//	                sendmmsg (softirq), so its figure is the sender
//	                process's CPU, sending included
//	F-stat-cpu-ns/pkt  the same from /proc/PID/stat (utime + stime, in
//	                ticks of 10 ms, threads that exited included): a
//	                cross-check
//	F-cores         that CPU time / the window: cores the forwarder kept busy
//	F-runq-cores    the time its threads were runnable but waited for a
//	                CPU (schedstat's second field) / the window: how much
//	                other work on the machine held the forwarder back
//	F-sender-cpu-ns/sent  the sender process's CPU (schedstat) per frame
//	                it sent: its sendmmsg and the kernel's work done in
//	                it (for userdp's AF_XDP ports, M's veth receive and
//	                XDP program and the copy into the socket's ring)
//	F-slices/pkt    times the forwarder's threads were put on a CPU
//	                (schedstat's third field) per frame delivered: its
//	                wake-ups (and returns after preemption)
//
// and the ratios of the run (its phases alternated on the same veth):
// xdp-vs-ovsxdp, xdp-vs-bridge, ring-vs-ovs and ring-vs-bridge
// (delivered rates), ring-rxdrop, ring-txdrop, xdp-rxdrop, xdp-txdrop
// (fraction of the frames S sent that userdp's ports dropped: the
// kernel's ring or the AF_XDP rings full; sendmmsg's ENOBUFS), and, for
// diagnosis, where userdp's path dropped frames (fwdDrops.report).
//
// What runs where: on a machine with 2 cores (as the development VMs),
// the sender, the kernel's veth work and the forwarder share them. With
// the bridge, all of the kernel's forwarding (S's transmit, M's receive,
// the bridge, M's transmit, R's receive) runs in softirq context inside
// the sender's sendmmsg call, so the bridge's rate is the sender's rate
// on one core. With userdp, the sender's sendmmsg ends when M's veth end
// has put the frame in the port's ring; the datapath's receive goroutine
// for that port reads, looks up and sends on the other core, which also
// does R's receive work. OVS's PMD thread (the afxdp phase) busy-polls
// the other core whether or not frames come.
func BenchmarkForwardVeth(b *testing.B) {
	f := newFwdTopo(b)
	b.Logf("GOMAXPROCS %d", runtime.GOMAXPROCS(0))
	snd := f.startFwdSender(b)
	b.Cleanup(func() { snd.stop(b) })
	self := os.Getpid()

	type acc struct {
		rx, sent         uint64
		secs             float64
		cpu, wait        time.Duration
		sndCPU           time.Duration // the sender process's (schedstat)
		slices           uint64        // times the forwarder's threads were put on a CPU
		statCPU          time.Duration // utime + stime of /proc/PID/stat
		rxDrops, txDrops uint64        // userdp: dropped by the ports' sockets (ring full; ENOBUFS)
		diag             fwdDrops      // userdp: where the path dropped frames (diagnostics)
	}
	cpuOf := func(pid int) testenv.ProcCPU {
		c, err := testenv.ReadProcCPU(pid)
		if err != nil {
			b.Fatalf("CPU of the forwarder: %v", err)
		}
		return c
	}
	// measure waits for frames to reach R, then counts a phase's window
	// with the CPU of process pid; mark, if not nil, is called at its
	// start and end.
	measure := func(a *acc, phase string, pid int, mark func()) {
		base, deadline := f.rxPackets(b), time.Now().Add(fwdFlowing)
		for f.rxPackets(b)-base < 1000 {
			if time.Now().After(deadline) {
				b.Fatalf("phase %s: fewer than 1000 frames reached R in the %v after M was set up (%d)", phase, fwdFlowing, f.rxPackets(b)-base)
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(fwdSettle)
		if mark != nil {
			mark()
		}
		c0, sc0 := cpuOf(pid), cpuOf(snd.pid)
		r0, s0, t0 := f.rxPackets(b), snd.sent(b), time.Now()
		time.Sleep(fwdWindow)
		r1, s1, el := f.rxPackets(b), snd.sent(b), time.Since(t0)
		c1, sc1 := cpuOf(pid), cpuOf(snd.pid)
		if mark != nil {
			mark()
		}
		a.rx += r1 - r0
		a.sent += s1 - s0
		a.secs += el.Seconds()
		d := c1.Sub(c0)
		a.cpu += d.Sched
		a.wait += d.Wait
		a.statCPU += d.User + d.System
		a.sndCPU += sc1.Sub(sc0).Sched
		a.slices += d.Slices
	}
	userdp := func(a *acc, mode NetdevMode) {
		// Frames that arrive while the ports are added and before the
		// flows are put miss; those in the window must not.
		dp, off := f.datapathOn(b, mode)
		defer off()
		var st [2]odp.DatapathStats
		var drops [2]odp.PortStats
		var diag [2]fwdDrops
		k := 0
		measure(a, mode.String(), self, func() {
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
			diag[k] = f.drops(b)
			k++
		})
		a.diag.add(diag[1].sub(diag[0]))
		a.rxDrops += drops[1].RxDropped - drops[0].RxDropped
		a.txDrops += drops[1].TxDropped - drops[0].TxDropped
		if hit, missed := st[1].Hit-st[0].Hit, st[1].Missed-st[0].Missed; missed != 0 || hit == 0 {
			b.Fatalf("datapath (%v): %d hits and %d misses while measured: want hits only (no upcalls on the measured path)", mode, hit, missed)
		}
	}
	names := []string{"bridge", "ring", "xdp", "ovs", "ovsxdp"}
	if env := os.Getenv("FWD_PHASES"); env != "" {
		// For profiling one forwarder: only these phases, no ratios.
		names = strings.Split(env, ",")
		b.Logf("FWD_PHASES=%s: only those phases", env)
	}
	accs := make(map[string]*acc, len(names))
	for _, n := range names {
		accs[n] = new(acc)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range 2 * len(names) {
			phase := names[min(j, 2*len(names)-1-j)]
			a := accs[phase]
			switch phase {
			case "bridge":
				off := f.bridgeOn(b)
				measure(a, phase, snd.pid, nil)
				off()
			case "ring":
				userdp(a, NetdevRing)
			case "xdp":
				userdp(a, NetdevXDP)
			case "ovs", "ovsxdp":
				off := f.ovsOn(b, phase == "ovsxdp")
				measure(a, phase, f.ovs.VswitchdPID, nil)
				off()
			default:
				b.Fatalf("FWD_PHASES: no phase %q (bridge, ring, xdp, ovs, ovsxdp)", phase)
			}
		}
	}
	b.StopTimer()
	mpps := make(map[string]float64, len(names))
	for _, n := range names {
		a := accs[n]
		if a.rx == 0 || a.sent == 0 {
			b.Fatalf("%s: R received %d of %d frames sent: want some", n, a.rx, a.sent)
		}
		mpps[n] = float64(a.rx) / a.secs / 1e6
		b.ReportMetric(mpps[n], n+"-Mpps")
		b.ReportMetric(float64(a.rx)/float64(a.sent), n+"-arrived")
		b.ReportMetric(float64(a.sent)/a.secs/1e6, n+"-sent-Mpps")
		b.ReportMetric(float64(a.cpu.Nanoseconds())/float64(a.rx), n+"-cpu-ns/pkt")
		b.ReportMetric(float64(a.statCPU.Nanoseconds())/float64(a.rx), n+"-stat-cpu-ns/pkt")
		b.ReportMetric(a.cpu.Seconds()/a.secs, n+"-cores")
		b.ReportMetric(a.wait.Seconds()/a.secs, n+"-runq-cores")
		b.ReportMetric(float64(a.sndCPU.Nanoseconds())/float64(a.sent), n+"-sender-cpu-ns/sent")
		b.ReportMetric(float64(a.slices)/float64(a.rx), n+"-slices/pkt")
	}
	for _, n := range []string{"ring", "xdp"} {
		a, ok := accs[n]
		if !ok {
			continue
		}
		b.ReportMetric(float64(a.rxDrops)/float64(a.sent), n+"-rxdrop")
		b.ReportMetric(float64(a.txDrops)/float64(a.sent), n+"-txdrop")
		a.diag.report(b, n, a.sent)
	}
	if len(mpps) < 5 {
		return
	}
	b.ReportMetric(mpps["xdp"]/mpps["ovsxdp"], "xdp-vs-ovsxdp")
	b.ReportMetric(mpps["xdp"]/mpps["bridge"], "xdp-vs-bridge")
	b.ReportMetric(mpps["ring"]/mpps["ovs"], "ring-vs-ovs")
	b.ReportMetric(mpps["ring"]/mpps["bridge"], "ring-vs-bridge")
}

// fwdDrops are the counters of the frames a userdp phase's path dropped,
// by where (diagnostics of BenchmarkForwardVeth).
type fwdDrops struct {
	// vethIn: S's veth end's tx_dropped plus M's end's rx_dropped (the
	// veth's ring into M full, or M's backlog); vethOut: the same for M's
	// end facing R and R's end (R's backlog full).
	vethIn, vethOut uint64
	// The XDP_STATISTICS of the datapath's AF_XDP ports, summed.
	xskRxDropped, xskRingFull, xskFillEmpty, xskTxEmpty uint64
}

func (d fwdDrops) sub(o fwdDrops) fwdDrops {
	return fwdDrops{d.vethIn - o.vethIn, d.vethOut - o.vethOut, d.xskRxDropped - o.xskRxDropped,
		d.xskRingFull - o.xskRingFull, d.xskFillEmpty - o.xskFillEmpty, d.xskTxEmpty - o.xskTxEmpty}
}

func (d *fwdDrops) add(o fwdDrops) {
	d.vethIn += o.vethIn
	d.vethOut += o.vethOut
	d.xskRxDropped += o.xskRxDropped
	d.xskRingFull += o.xskRingFull
	d.xskFillEmpty += o.xskFillEmpty
	d.xskTxEmpty += o.xskTxEmpty
}

// report reports d as fractions of the frames sent, as metrics of phase
// n: n-veth-in-drop, n-veth-out-drop, and for AF_XDP ports
// n-xsk-rx-dropped (no fill-ring frame or a bad one), n-xsk-ring-full
// (no room in the rx ring) and n-xsk-fill-empty (times the kernel found
// the fill ring empty, per frame sent), n-xsk-tx-empty (sendto calls
// that found the tx ring empty, per frame sent).
func (d fwdDrops) report(b *testing.B, n string, sent uint64) {
	s := float64(sent)
	b.ReportMetric(float64(d.vethIn)/s, n+"-veth-in-drop")
	b.ReportMetric(float64(d.vethOut)/s, n+"-veth-out-drop")
	if n == "xdp" {
		b.ReportMetric(float64(d.xskRxDropped)/s, n+"-xsk-rx-dropped")
		b.ReportMetric(float64(d.xskRingFull)/s, n+"-xsk-ring-full")
		b.ReportMetric(float64(d.xskFillEmpty)/s, n+"-xsk-fill-empty")
		b.ReportMetric(float64(d.xskTxEmpty)/s, n+"-xsk-tx-empty")
	}
}

// drops reads the drop counters of the path through M's datapath.
func (f *fwdTopo) drops(t testing.TB) fwdDrops {
	t.Helper()
	stats := func(ns *testenv.Netns, idx int) *netlink.LinkStatistics {
		l, err := ns.Handle().LinkByIndex(idx)
		if err != nil || l.Attrs().Statistics == nil {
			t.Fatalf("statistics of link %d in namespace %s: %v", idx, ns, err)
		}
		return l.Attrs().Statistics
	}
	var d fwdDrops
	d.vethIn = stats(f.s, f.sv.Index).TxDropped + stats(f.m, f.sv.PeerIndex).RxDropped
	d.vethOut = stats(f.m, f.rv.PeerIndex).TxDropped + stats(f.r, f.rv.Index).RxDropped
	for _, p := range f.dpPorts {
		x, ok := p.(*XDPPort)
		if !ok {
			continue
		}
		var st unix.XDPStatistics
		var err error
		if cerr := x.rc.Control(func(fd uintptr) {
			err = getsockoptPtr(int(fd), unix.SOL_XDP, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st))
		}); cerr != nil || err != nil {
			t.Fatalf("XDP_STATISTICS of %s: %v %v", x.Name(), cerr, err)
		}
		d.xskRxDropped += st.Rx_dropped
		d.xskRingFull += st.Rx_ring_full
		d.xskFillEmpty += st.Rx_fill_ring_empty_descs
		d.xskTxEmpty += st.Tx_ring_empty_descs
	}
	return d
}
