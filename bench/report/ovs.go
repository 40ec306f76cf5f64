package main

import "fmt"

// vsOVSRows are issue 17's points 2 and 3 and issue 19's megaflow count:
// BenchmarkIntegrationVsOVS, the same new-flow traffic through upcalld
// and a private ovs-vswitchd on the kernel datapath (vsovs@vm, VM_VSOVS_COUNT
// runs in one VM boot, 3 by default) and on the userspace one
// (vsovs@host, -count runs).
func (r *Results) vsOVSRows() []Row {
	const g = "upcalld vs ovs-vswitchd"
	return vsOVSEach("BenchmarkIntegrationVsOVS", "vsovs@vm", "vsovs@host", func(what, pkg, ours, ref string) []Row {
		return []Row{r.vsOVSSetup(g, "Flow setup rate, "+what, pkg, ours, ref),
			r.vsOVSMegaflows(g, "Megaflows installed, "+what, pkg, ours, ref)}
	})
}

// vsOVSEach returns the rows that rows makes for each datapath and
// workload of benchmark name (BenchmarkIntegrationVsOVS's, or a
// benchmark with its sub-benchmarks), from vmPkg's output for the
// kernel datapath and hostPkg's for the userspace one. rows gets the
// workload and datapath as a row names them, the package, and the
// upcalld and ovs-vswitchd benchmarks' names.
func vsOVSEach(name, vmPkg, hostPkg string, rows func(what, pkg, ours, ref string) []Row) []Row {
	var all []Row
	for _, dp := range []struct{ pkg, sub, where string }{
		{vmPkg, "system", "kernel datapath (VM)"},
		{hostPkg, "netdev", "userspace datapath (host)"},
	} {
		for _, w := range []struct{ sub, what string }{
			{"macs", "new source MACs, learning switch / NORMAL"},
			{"tuples", "new UDP 5-tuples, one exact rule each"},
			{"pipeline", "VLAN classify + forward pipeline, new MACs and ports"},
		} {
			b := name + "/" + dp.sub + "/" + w.sub
			all = append(all, rows(fmt.Sprintf("%s, %s", w.what, dp.where), dp.pkg, b+"/upcalld", b+"/ovs")...)
		}
	}
	return all
}

// vsOVSNote says how the figures were measured.
const vsOVSNote = "`cmd/upcalld/internal/daemon` BenchmarkIntegrationVsOVS: a sender and a sink namespace on two veth ports of each switch in turn (upcalld, then ovs-vswitchd started privately under a temporary directory), the same frames at the same offered load (OVSCMP_RATE) from an AF_PACKET socket"

// vsOVSSetup is the setup-rate row: new flows delivered per second,
// ratio upcalld/ovs-vswitchd, goal ≥ 1.0× with nothing lost by upcalld.
func (r *Results) vsOVSSetup(g, what, pkg, ours, ref string) Row {
	const goal = "≥ 1.0×, 0 lost"
	o, b, why := r.estPair(pkg, ours, ref, "setup/s")
	if why != "" {
		return notMeasured(g, what, goal, why)
	}
	loss := func(bench string) (float64, string) {
		var total float64
		var parts string
		for _, m := range []string{"undelivered", "lost", "shed"} {
			if e, ok := r.Est(pkg, bench, m); ok {
				total += e.Center
				parts += fmt.Sprintf(", %g %s", e.Center, m)
			}
		}
		return total, parts
	}
	oLoss, oParts := loss(ours)
	_, bParts := loss(ref)
	lat := func(bench string) string {
		p50, ok1 := r.Est(pkg, bench, "p50-ns")
		p99, ok2 := r.Est(pkg, bench, "p99-ns")
		if !ok1 || !ok2 {
			return ""
		}
		return fmt.Sprintf("; first packet %s / %s", fmtNs(p50.Center), fmtNs(p99.Center))
	}
	row := Row{Group: g, What: what, Goal: goal, ChartRatio: true,
		Ours:     rateE(o, "flows/s") + oParts + lat(ours),
		Baseline: rateE(b, "flows/s") + bParts + lat(ref),
	}
	if hp50, ok := r.Est(pkg, ours, "handler-p50-ns"); ok {
		if hp99, ok := r.Est(pkg, ours, "handler-p99-ns"); ok {
			row.Ours += fmt.Sprintf("; handler %s / %s", fmtNs(hp50.Center), fmtNs(hp99.Center))
		}
	}
	offered, _ := r.Est(pkg, ours, "offered/s")
	row.Note = fmt.Sprintf("%s, %s offered; setup rate: new flows delivered to the sink over the time from the first frame sent to the last delivered; first-packet latency p50 / p99: send to arrival per new flow (the upcall's round trip), measured the same way for both; upcalld's handler latency: from the read of an upcall's batch to the end of its work (ovs-vswitchd exposes none); lost: the datapath's lost upcalls; shed: misses upcalld's overloaded handlers dropped (queue half full or overrun); ratio: of the medians (%d run(s) each, not paired)",
		vsOVSNote, fmtRate(offered.Center, "frames/s"), min(o.N, b.N))
	if e, ok := ratioOfIntervals(o, b); ok {
		row.Ratio = e
		row.setGoal(1, false)
		if oLoss > 0 && row.Met != metNotRun {
			row.Met = metNo
		}
	}
	return row
}

// vsOVSMegaflows is the megaflow-count row: ratio upcalld/ovs-vswitchd
// of the megaflows per new flow delivered (a switch that lost frames
// installed fewer flows for fewer flows), goal ≤ 1.0× (no more
// megaflows than ovs-vswitchd installs for the same flows).
func (r *Results) vsOVSMegaflows(g, what, pkg, ours, ref string) Row {
	const goal = "≤ 1.0×"
	o, b, why := r.estPair(pkg, ours, ref, "megaflows")
	if why != "" {
		return notMeasured(g, what, goal, why)
	}
	row := Row{Group: g, What: what, Goal: goal, RatioUnit: "× megaflows",
		Ours: fmt.Sprintf("%g megaflows", o.Center), Baseline: fmt.Sprintf("%g megaflows", b.Center),
		Note: vsOVSNote + "; megaflows: the datapath's flow count right after the traffic (upcalld's dump; `ovs-appctl dpctl/dump-flows` lines), every flow counted; ratio: of the megaflows per new flow delivered (medians)"}
	od, ok1 := r.Est(pkg, ours, "delivered")
	bd, ok2 := r.Est(pkg, ref, "delivered")
	if ok1 && ok2 && od.Center > 0 && bd.Center > 0 {
		row.Ours += fmt.Sprintf(" for %g flows delivered", od.Center)
		row.Baseline += fmt.Sprintf(" for %g flows delivered", bd.Center)
		o, b = scaled(o, 1/od.Center), scaled(b, 1/bd.Center)
	}
	if e, ok := ratioOfIntervals(o, b); ok {
		row.Ratio = e
		row.setGoal(1, true)
	}
	return row
}

// estPair is unit of benchmarks ours and ref of pkg, or why one is
// missing.
func (r *Results) estPair(pkg, ours, ref, unit string) (o, b Estimate, why string) {
	o, ok1 := r.Est(pkg, ours, unit)
	b, ok2 := r.Est(pkg, ref, unit)
	switch {
	case !ok1:
		why = r.missing(pkg, ours)
	case !ok2:
		why = r.missing(pkg, ref)
	}
	return o, b, why
}

// scaled is e times k > 0.
func scaled(e Estimate, k float64) Estimate {
	e.Center, e.Lo, e.Hi = e.Center*k, e.Lo*k, e.Hi*k
	return e
}
