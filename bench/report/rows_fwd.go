package main

import (
	"fmt"
	"strings"
)

// fwdBench is the veth forwarding benchmark (issue 5, issue 17 point
// 1): userdp's BenchmarkForwardVeth, whose phases alternate the Linux
// bridge, userdp with ring and with AF_XDP ports, and ovs-vswitchd's
// userspace datapath with default and with AF_XDP ports on the same veth
// pairs in one run.
const fwdBench = "BenchmarkForwardVeth"

// fwdForwarders are the benchmark's phases: metric prefix and name.
var fwdForwarders = []struct{ key, name string }{
	{"xdp", "userdp, AF_XDP ports"},
	{"ring", "userdp, ring ports"},
	{"ovsxdp", "ovs-vswitchd, AF_XDP ports"},
	{"ovs", "ovs-vswitchd, default ports"},
	{"bridge", "Linux bridge"},
}

// forwardRows: the goals of issue 17 point 1 (userdp's AF_XDP mode
// against ovs-vswitchd's, and against the bridge, with what was sent
// arriving; its ring mode against ovs-vswitchd's default ports), issue
// 5's (ring mode against the bridge), and the CPU each forwarder used
// per delivered packet, for information.
func (r *Results) forwardRows() []Row {
	const g, pkg = "userdp", "userdp"
	note := fmt.Sprintf("`userdp` %s: frames received by the far namespace per second, 64-byte UDP from one sendmmsg sender process, phases alternated in each run (bridge ring xdp ovs ovsxdp and back); ratio: median of the runs' own ratios", fwdBench)
	var rows []Row
	for _, v := range []struct {
		what, ours, base, ratio string
		goal                    float64
	}{
		{"Forwarding over veth, 64-byte UDP, userdp AF_XDP ports (vs ovs-vswitchd 3.1, AF_XDP ports, same run)", "xdp", "ovsxdp", "xdp-vs-ovsxdp", 1},
		{"Forwarding over veth, 64-byte UDP, userdp AF_XDP ports (vs Linux bridge)", "xdp", "bridge", "xdp-vs-bridge", 1},
		{"Forwarding over veth, 64-byte UDP, userdp ring ports (vs ovs-vswitchd 3.1, default ports, same run)", "ring", "ovs", "ring-vs-ovs", 1.5},
		{"Forwarding between two namespaces over veth, 64-byte UDP, userdp ring ports (vs Linux bridge)", "ring", "bridge", "ring-vs-bridge", 0.5},
	} {
		goal := fmt.Sprintf("≥ %.1f×", v.goal)
		ours, ok1 := r.Est(pkg, fwdBench, v.ours+"-Mpps")
		base, ok2 := r.Est(pkg, fwdBench, v.base+"-Mpps")
		ratio, ok3 := r.Est(pkg, fwdBench, v.ratio)
		if !ok1 || !ok2 || !ok3 {
			rows = append(rows, notMeasured(g, v.what, goal, r.missing(pkg, fwdBench)))
			continue
		}
		n := note + fmt.Sprintf(" (%d runs)", ratio.N) + r.fwdArrived(v.ours) + r.fwdArrived(v.base)
		if v.ratio == "xdp-vs-bridge" {
			n += r.fwdSenderCap()
		}
		row := Row{Group: g, What: v.what, Ours: mppsE(ours), Baseline: mppsE(base), Ratio: ratio, Goal: goal, ChartRatio: true, Note: n}
		row.setGoal(v.goal, false)
		rows = append(rows, row)
	}
	// What was sent arriving, through userdp's AF_XDP ports.
	const what = "Forwarding over veth, userdp AF_XDP ports: sent frames arriving"
	if arr, ok := r.Est(pkg, fwdBench, "xdp-arrived"); ok {
		pct := Estimate{Center: 100 * arr.Center, Mean: 100 * arr.Mean, Lo: 100 * arr.Lo, Hi: 100 * arr.Hi, Confidence: arr.Confidence, N: arr.N}
		row := Row{Group: g, What: what, Ours: fmt.Sprintf("%.1f%%", pct.Center) + arr.spread(), Baseline: "—", Ratio: pct, RatioUnit: "%",
			Goal: "≥ 99%", Note: fmt.Sprintf("`userdp` %s: frames R received / frames S sent in the measured windows%s", fwdBench, r.fwdDrops("xdp"))}
		row.setGoal(99, false)
		rows = append(rows, row)
	} else {
		rows = append(rows, notMeasured(g, what, "≥ 99%", r.missing(pkg, fwdBench)))
	}
	return append(rows, r.fwdCPURow(), r.coresRow())
}

// coresRow: issue 17's multi-core goal, BenchmarkForwardCores.
func (r *Results) coresRow() Row {
	const g, pkg, name = "userdp", "userdp", "BenchmarkForwardCores"
	const what = "Forwarding on two cores: two in-memory ports, two receive goroutines (vs one)"
	two, ok1 := r.Est(pkg, name, "two-Mpps")
	one, ok2 := r.Est(pkg, name, "one-Mpps")
	x, ok3 := r.Est(pkg, name, "x-vs-one")
	if !ok1 || !ok2 || !ok3 {
		return notMeasured(g, what, "≥ 1.8×", r.missing(pkg, name))
	}
	note := fmt.Sprintf("`userdp` %s (%d runs): 64-byte UDP frames of 64 microflows per port, exact-match cache hits, phases one two two one; ratio: median of the runs' own ratios", name, x.N)
	c1, ok1 := r.Est(pkg, name, "one-cpu-ns/pkt")
	c2, ok2 := r.Est(pkg, name, "two-cpu-ns/pkt")
	rq, ok3 := r.Est(pkg, name, "two-runq-cores")
	if ok1 && ok2 && ok3 {
		note += fmt.Sprintf("; CPU per frame %s%s with one goroutine, %s%s with two (equal: nothing the two write is shared); while two ran, the process's threads waited %.2f cores for a CPU (other work on the host: the ratio is then the host's)",
			fmtNs(c1.Center), c1.spread(), fmtNs(c2.Center), c2.spread(), rq.Center)
	}
	row := Row{Group: g, What: what, Ours: mppsE(two), Baseline: mppsE(one), Ratio: x, Goal: "≥ 1.8×", ChartRatio: true, Note: note}
	row.setGoal(1.8, false)
	return row
}

// fwdArrived notes what fraction of the sent frames arrived through
// forwarder key ("" without the figure).
func (r *Results) fwdArrived(key string) string {
	arr, ok := r.Est("userdp", fwdBench, key+"-arrived")
	if !ok {
		return ""
	}
	return fmt.Sprintf("; %s delivered %.0f%%%s of what was sent", key, 100*arr.Center, arr.spread())
}

// fwdSenderCap notes why userdp's AF_XDP ports trail the bridge on 2
// cores ("" without the figures): the sender's CPU per frame it sent in
// the AF_XDP phase against the bridge's whole path per frame (the
// sender's CPU with all of the kernel's forwarding in its softirq),
// whose ratio bounds AF_XDP against the bridge while the sender holds
// one core, and where the sender's extra time goes (a perf profile of
// the AF_XDP phase, taken once, cited).
func (r *Results) fwdSenderCap() string {
	snd, ok1 := r.Est("userdp", fwdBench, "xdp-sender-cpu-ns/sent")
	br, ok2 := r.Est("userdp", fwdBench, "bridge-cpu-ns/pkt")
	if !ok1 || !ok2 || snd.Center <= 0 {
		return ""
	}
	return fmt.Sprintf("; the sender's CPU per frame it sent in the AF_XDP phase, %s%s, against the bridge's whole path, %s%s: "+
		"with AF_XDP ports the sender's softirq also runs M's veth receive with the XDP program, which copies each frame into a page-pool page "+
		"(skb_pp_cow_data: an AF_PACKET skb has less than the 256 bytes of headroom XDP wants) and then into the socket's UMEM, and wakes the reader "+
		"(perf -e cpu-clock of the AF_XDP phase, 2 Dec 2026: veth_poll 41%% of the sender's samples, skb_pp_cow_data 16%%, the redirect into the socket 12%%, sock_def_readable 4%%); "+
		"while the sender holds one core that bounds AF_XDP at %.2f× the bridge, whatever the forwarder does",
		fmtNs(snd.Center), snd.spread(), fmtNs(br.Center), br.spread(), br.Center/snd.Center)
}

// fwdDrops notes where userdp's ports dropped frames.
func (r *Results) fwdDrops(key string) string {
	rx, ok1 := r.Est("userdp", fwdBench, key+"-rxdrop")
	tx, ok2 := r.Est("userdp", fwdBench, key+"-txdrop")
	if !ok1 || !ok2 {
		return ""
	}
	return fmt.Sprintf("; dropped by its receive side %.1f%%, its transmit side %.1f%% of what was sent", 100*rx.Center, 100*tx.Center)
}

// fwdCPURow: the CPU each forwarder used per delivered packet and the
// cores it kept busy, for information (no goal).
func (r *Results) fwdCPURow() Row {
	const g, pkg = "userdp", "userdp"
	const what = "Forwarding over veth: CPU per delivered packet, by forwarder"
	var parts []string
	for _, f := range fwdForwarders {
		ns, ok1 := r.Est(pkg, fwdBench, f.key+"-cpu-ns/pkt")
		cores, ok2 := r.Est(pkg, fwdBench, f.key+"-cores")
		if !ok1 || !ok2 {
			return notMeasured(g, what, "— (report)", r.missing(pkg, fwdBench))
		}
		parts = append(parts, fmt.Sprintf("%s %s%s (%.2f cores)", f.name, fmtNs(ns.Center), ns.spread(), cores.Center))
	}
	return Row{Group: g, What: what, Ours: strings.Join(parts[:2], "; "), Baseline: strings.Join(parts[2:], "; "), Goal: "— (report)", Met: metNone,
		Note: fmt.Sprintf("`userdp` %s: summed run time of the forwarder's threads (/proc/PID/task/*/schedstat) over the window, per frame R received: the test process for userdp (the sender is a process of its own), ovs-vswitchd for Open vSwitch (its PMD thread busy-polls a core with AF_XDP ports); the bridge forwards in softirq inside the sender's sendmmsg, so its figure is the sender process's CPU, sending included", fwdBench)}
}
