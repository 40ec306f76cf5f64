package main

import "fmt"

// vsOVSSatRows are issue 17's points 2 and 3 past saturation:
// BenchmarkIntegrationVsOVSSat, the workloads of BenchmarkIntegrationVsOVS
// offered faster than either switch sets up flows, so that the setup rate
// is each switch's own and not the offered load (vssat@vm: in one VM
// boot; vssat@host: rounds of one run of each, upcalld then
// ovs-vswitchd, so run i of one pairs with run i of the other).
func (r *Results) vsOVSSatRows() []Row {
	const g = "upcalld vs ovs-vswitchd"
	return vsOVSEach("BenchmarkIntegrationVsOVSSat", "vssat@vm", "vssat@host", func(what, pkg, ours, ref string) []Row {
		return []Row{r.satSetup(g, "Flow setup rate at saturation, "+what, pkg, ours, ref),
			r.satMegaflows(g, "Megaflows installed at saturation, "+what, pkg, ours, ref)}
	})
}

// satNote says how the saturation figures were measured.
const satNote = "`cmd/upcalld/internal/daemon` BenchmarkIntegrationVsOVSSat: BenchmarkIntegrationVsOVS's topology, frames and measurement (rows above), offered faster than either switch sets up flows (OVSSAT_FLOWS new flows at OVSSAT_RATE)"

// satDrops are the counters that say where undelivered frames went,
// with how the row names them.
var satDrops = []struct{ unit, name string }{
	{"lost", "lost (datapath upcall queue)"},
	{"shed", "shed (handlers overloaded)"},
	{"socket-drops", "socket drops (the switch's receive sockets full)"},
	{"port-drops", "port drops"},
	{"sink-drops", "sink drops"},
	{"veth-drops", "veth drops"},
	{"softnet-drops", "backlog drops"},
}

// satSide is one switch's figures: its setup rate, what it delivered
// and lost and where, its latencies, its megaflows.
func (r *Results) satSide(pkg, bench string, rate Estimate) string {
	s := rateE(rate, "flows/s")
	med := func(unit string) (float64, bool) {
		e, ok := r.Est(pkg, bench, unit)
		return e.Center, ok
	}
	if v, ok := med("delivered"); ok {
		s += fmt.Sprintf(", %g delivered", v)
	}
	if v, ok := med("undelivered"); ok {
		s += fmt.Sprintf(", %g undelivered", v)
	}
	for _, d := range satDrops {
		if v, ok := med(d.unit); ok && v > 0 {
			s += fmt.Sprintf(", %g %s", v, d.name)
		}
	}
	if p50, ok := med("p50-ns"); ok {
		if p99, ok := med("p99-ns"); ok {
			s += fmt.Sprintf("; first packet %s / %s", fmtNs(p50), fmtNs(p99))
		}
	}
	if p50, ok := med("handler-p50-ns"); ok {
		if p99, ok := med("handler-p99-ns"); ok {
			s += fmt.Sprintf("; handler %s / %s", fmtNs(p50), fmtNs(p99))
		}
	}
	if v, ok := med("megaflows"); ok {
		s += fmt.Sprintf("; %g megaflows", v)
	}
	return s
}

// satSetup is the saturation setup-rate row: each switch's achieved rate
// (new flows delivered per second), ratio upcalld/ovs-vswitchd of the
// runs paired in order, goal ≥ 1.0× (loss is not judged: past
// saturation both lose, and the row says how much and where).
func (r *Results) satSetup(g, what, pkg, ours, ref string) Row {
	const goal = "≥ 1.0×"
	o, b, why := r.estPair(pkg, ours, ref, "setup/s")
	if why != "" {
		return notMeasured(g, what, goal, why)
	}
	row := Row{Group: g, What: what, Goal: goal, ChartRatio: true,
		Ours: r.satSide(pkg, ours, o), Baseline: r.satSide(pkg, ref, b)}
	offered, _ := r.Est(pkg, ours, "offered/s")
	sentO, _ := r.Est(pkg, ours, "sent/s")
	sentB, _ := r.Est(pkg, ref, "sent/s")
	e, n, ok := r.pairedRatio(pkg, ours, ref, func(run map[string]float64) (float64, bool) {
		v, ok := run["setup/s"]
		return v, ok
	})
	row.Note = fmt.Sprintf("%s, %s offered (sent: %s to upcalld, %s to ovs-vswitchd); setup rate: new flows delivered to the sink over the time from the first frame sent to the last delivered (one megaflow per new flow for macs and tuples, so it is also their megaflows installed per second); undelivered: new flows whose frame never reached the sink, with the counters that account for them; latencies p50 / p99 as above; ratio: median of the per-round ratios upcalld/ovs-vswitchd (%d round(s), each one run of upcalld then one of ovs-vswitchd)",
		satNote, fmtRate(offered.Center, "frames/s"), fmtRate(sentO.Center, "frames/s"), fmtRate(sentB.Center, "frames/s"), n)
	if ok {
		row.Ratio = e
		row.setGoal(1, false)
	}
	return row
}

// satMegaflows is the saturation megaflow-count row: upcalld's megaflows
// per new flow delivered over ovs-vswitchd's, paired by round, goal
// ≤ 1.0×.
func (r *Results) satMegaflows(g, what, pkg, ours, ref string) Row {
	const goal = "≤ 1.0×"
	o, b, why := r.estPair(pkg, ours, ref, "megaflows")
	if why != "" {
		return notMeasured(g, what, goal, why)
	}
	row := Row{Group: g, What: what, Goal: goal, RatioUnit: "× megaflows",
		Ours: fmt.Sprintf("%g megaflows", o.Center), Baseline: fmt.Sprintf("%g megaflows", b.Center)}
	if od, ok := r.Est(pkg, ours, "delivered"); ok {
		row.Ours += fmt.Sprintf(" for %g flows delivered", od.Center)
	}
	if bd, ok := r.Est(pkg, ref, "delivered"); ok {
		row.Baseline += fmt.Sprintf(" for %g flows delivered", bd.Center)
	}
	if mx, ok := r.Est(pkg, ref, "megaflows-max"); ok && mx.Center > b.Center {
		row.Baseline += fmt.Sprintf(" (%g at most during the run, in its revalidators' dumps: they deleted flows before the count)", mx.Center)
	}
	e, n, ok := r.pairedRatio(pkg, ours, ref, func(run map[string]float64) (float64, bool) {
		m, ok1 := run["megaflows"]
		d, ok2 := run["delivered"]
		return m / d, ok1 && ok2 && d > 0
	})
	row.Note = fmt.Sprintf("%s; megaflows: the datapath's flow count right after the traffic, as above; ratio: median of the per-round ratios of megaflows per new flow delivered (%d round(s))", satNote, n)
	if ok {
		row.Ratio = e
		row.setGoal(1, true)
	}
	return row
}

// pairedRatio is the median, with its interval, of f(ours' run i) /
// f(ref's run i) over the runs both have (the i-th runs of the two were
// measured in the same round), and how many pairs there were.
func (r *Results) pairedRatio(pkg, ours, ref string, f func(map[string]float64) (float64, bool)) (Estimate, int, bool) {
	o, b := r.Bench[pkg][ours], r.Bench[pkg][ref]
	var vs []float64
	for i := range min(len(o), len(b)) {
		x, ok1 := f(o[i])
		y, ok2 := f(b[i])
		if ok1 && ok2 && x > 0 && y > 0 {
			vs = append(vs, x/y)
		}
	}
	e, ok := summarize(vs)
	return e, len(vs), ok
}
