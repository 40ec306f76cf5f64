package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"
)

// Row is one line of the report's table.
type Row struct {
	Group, What string
	// Ours and Baseline are formatted measurements with their intervals
	// ("" when missing).
	Ours, Baseline string
	// Ratio is how many times better ours is than the baseline (or the
	// figure the goal is about), with its interval; Ratio.N is 0 when
	// there is none.
	Ratio Estimate
	// RatioUnit says what Ratio is ("×" by default).
	RatioUnit string
	Goal      string
	// Met is metYes, metNo, metUnclear, metNone (nothing to meet) or
	// metNotRun, judged on Ratio's interval (see judge).
	Met string
	// MedianMeets says, for an unclear verdict, whether the median alone
	// meets the goal.
	MedianMeets bool
	// Note says where the figures come from, or why they are missing.
	Note string
	// ChartRatio puts the row in the ratio chart (it has a numeric goal).
	ChartRatio bool
	// GoalValue is the goal's bound; AtMost makes it an upper bound
	// (≤), else it is a lower one (≥).
	GoalValue float64
	AtMost    bool
}

// setGoal judges the row's goal (≥ v, or ≤ v with atMost) on its
// ratio's interval.
func (row *Row) setGoal(v float64, atMost bool) {
	row.GoalValue, row.AtMost = v, atMost
	row.Met = judge(row.Ratio, !atMost, v)
	row.MedianMeets = medianMeets(row.Ratio, !atMost, v)
}

// missing explains why a benchmark of pkg has no result.
func (r *Results) missing(pkg, bench string) string {
	for _, m := range r.Malformed {
		if m.Pkg == pkg && m.Name == bench {
			return fmt.Sprintf("%s's result line is malformed (%s: %s)", bench, m.Where, m.Why)
		}
	}
	switch r.Outcome[pkg][bench] {
	case "FAIL":
		return fmt.Sprintf("%s failed (--- FAIL in %s's output)", bench, pkg)
	case "SKIP":
		return fmt.Sprintf("%s was skipped (--- SKIP in %s's output)", bench, pkg)
	}
	for _, step := range []string{pkg, "host"} {
		if s, ok := r.Steps[step]; ok && s.Status != "ok" {
			if s.Detail != "" {
				return fmt.Sprintf("step %s %s: %s", step, s.Status, s.Detail)
			}
			return fmt.Sprintf("step %s %s", step, s.Status)
		}
		if _, ok := r.Steps[step]; ok && step == pkg {
			break
		}
	}
	if len(r.Bench[pkg]) == 0 {
		if _, ok := r.Steps[pkg]; !ok {
			return fmt.Sprintf("%s was not run", pkg)
		}
		return fmt.Sprintf("%s produced no benchmark results", pkg)
	}
	return fmt.Sprintf("no benchmark %s in %s (not written yet)", bench, pkg)
}

func notMeasured(group, what, goal, reason string) Row {
	return Row{Group: group, What: what, Goal: goal, Met: metNotRun, Note: reason}
}

// fmtNs formats nanoseconds with a unit that keeps 3 significant digits.
func fmtNs(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3g s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	}
	return fmt.Sprintf("%.3g ns", ns)
}

// fmtRate formats a rate per second.
func fmtRate(v float64, unit string) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.3g M%s", v/1e6, unit)
	case v >= 1e4:
		return fmt.Sprintf("%.3g k%s", v/1e3, unit)
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

// nsE and rateE write an estimate with its interval after it.
// Each is followed by the runs' plain mean.
func nsE(e Estimate) string { return fmtNs(e.Center) + e.spread() + e.mean(fmtNs) }
func rateE(e Estimate, unit string) string {
	return fmtRate(e.Center, unit) + e.spread() + e.mean(func(v float64) string { return fmtRate(v, unit) })
}
func mppsE(e Estimate) string { return fmtMpps(e.Center) + e.spread() + e.mean(fmtMpps) }

// fmtMpps formats millions of packets per second.
func fmtMpps(v float64) string { return fmt.Sprintf("%.3g Mpps", v) }

// pairNote says how a same-run pair's ratio was computed.
const pairNote = "ratio: median of the runs' own ratios"

// pairRow is a flowkeys-style pair: BENCH/ours reports ns/op,
// baseline-ns/op and x-vs-baseline from interleaved timing.
func (r *Results) pairRow(group, what, pkg, bench string, goalMin float64, zeroAllocs bool) Row {
	goal := fmt.Sprintf("≥ %.3g×", goalMin)
	if zeroAllocs {
		goal += ", 0 allocs"
	}
	name := bench + "/ours"
	row, ok := r.pair(group, what, pkg, name)
	if !ok {
		return notMeasured(group, what, goal, row.Note)
	}
	row.Goal, row.ChartRatio = goal, true
	row.setGoal(goalMin, false)
	if zeroAllocs {
		allocs, have := r.Est(pkg, name, "allocs/op")
		if have {
			row.Ours += fmt.Sprintf(", %g allocs", allocs.Center)
		}
		if !have || allocs.Center != 0 {
			row.Met = metNo
		}
	}
	return row
}

// pair is the row of BENCH/ours's ns/op against its baseline-ns/op, with
// the runs' own x-vs-baseline as the ratio; without them, ok is false and
// the row's Note says why.
func (r *Results) pair(group, what, pkg, name string) (Row, bool) {
	ours, ok1 := r.Est(pkg, name, "ns/op")
	base, ok2 := r.Est(pkg, name, "baseline-ns/op")
	ratio, ok3 := r.Est(pkg, name, "x-vs-baseline")
	if !ok1 || !ok2 || !ok3 {
		return Row{Note: r.missing(pkg, name)}, false
	}
	return Row{Group: group, What: what, Ours: nsE(ours), Baseline: nsE(base), Ratio: ratio, Goal: "—", Met: metNone,
		Note: fmt.Sprintf("`%s` %s, %d run(s), interleaved; %s (x-vs-baseline)", pkg, name, ours.N, pairNote)}, true
}

// flowkeysRows are issue 4's benchmarks.
func (r *Results) flowkeysRows() []Row {
	const g = "flowkeys"
	return []Row{
		r.pairRow(g, "Extract, mixed realistic packets (vs gopacket DecodingLayerParser)", "flowkeys", "BenchmarkExtract", 3, true),
		r.pairRow(g, "Hash of the longest key, CRC32C (vs Go jhash2)", "flowkeys", "BenchmarkHashLongestKey", 3, false),
		r.pairRow(g, "Hash of a 64-byte range (vs hash/crc32 Castagnoli)", "flowkeys", "BenchmarkHashRange64", 1, false),
		r.pairRow(g, "Hash of a 128-byte range (vs hash/crc32 Castagnoli)", "flowkeys", "BenchmarkHashRange128", 1, false),
		r.pairRow(g, "Masked compare, 128 bytes, equal (vs byte loop)", "flowkeys", "BenchmarkEqualMasked128/vs-byte-loop", 7, false),
		r.pairRow(g, "Masked compare, 128 bytes, equal (vs bytes.Equal, unmasked)", "flowkeys", "BenchmarkEqualMasked128/vs-bytes.Equal", 1, false),
		r.cpuPair(r.pairRow(g, cmpCPURow+", 64-byte-aligned keys", "flowkeys", "BenchmarkEqualMaskedCPU/aligned/dispatch", 1, false), "BenchmarkEqualMaskedCPU/aligned/dispatch"),
		r.cpuPair(r.infoPair(g, cmpCPURow+", keys 8 bytes past 64-byte boundaries", "flowkeys", "BenchmarkEqualMaskedCPU/off8/dispatch/ours"), "BenchmarkEqualMaskedCPU/off8/dispatch"),
		r.cpuPair(r.infoPair(g, cmpCPURow+", AVX2 comparator, 64-byte-aligned keys", "flowkeys", "BenchmarkEqualMaskedCPU/aligned/avx2/ours"), "BenchmarkEqualMaskedCPU/aligned/avx2"),
		r.infoPair(g, "Keyed hash (the table's, attack-resistant) vs plain CRC32C, 128 bytes", "flowkeys", "BenchmarkHashKeyed/ours"),
	}
}

// cmpCPURow begins the names of the rows of BenchmarkEqualMaskedCPU.
const cmpCPURow = "Masked compare, 128 bytes, equal (vs bytes.Equal, unmasked; thread CPU time)"

// cpuPair gives a measured row of BenchmarkEqualMaskedCPU (bench, without
// "/ours") the note that says how it was measured; a row not measured
// keeps the note that says why.
func (r *Results) cpuPair(row Row, bench string) Row {
	if row.Met == metNotRun {
		return row
	}
	n := 0
	if e, ok := r.Est("flowkeys", bench+"/ours", "x-vs-baseline"); ok {
		n = e.N
	}
	row.Note = fmt.Sprintf("`flowkeys` %s, %d run(s): the goroutine locked to its thread and timed by the thread's CPU clock, 400 chunks alternating ours and bytes.Equal (order swapped every other chunk) over the same bytes of the same keys, \"dispatch\" being the comparator this CPU chooses; %s (x-vs-baseline)", bench, n, pairNote)
	return row
}

// infoPair is a pair with no goal: the ratio is shown for information.
func (r *Results) infoPair(group, what, pkg, name string) Row {
	row, ok := r.pair(group, what, pkg, name)
	if !ok {
		return notMeasured(group, what, "—", row.Note)
	}
	return row
}

// userdpRows are issue 5's benchmarks.
func (r *Results) userdpRows() []Row {
	const g, pkg = "userdp", "userdp"
	var rows []Row
	tl := "BenchmarkTableLookup"
	cache, ok1 := r.Est(pkg, tl, "cache-ns/lookup")
	nocache, ok2 := r.Est(pkg, tl, "nocache-ns/lookup")
	base, ok3 := r.Est(pkg, tl, "baseline-ns/lookup")
	xc, ok4 := r.RatioEst(pkg, tl, "baseline-ns/lookup", "cache-ns/lookup")
	xn, ok5 := r.RatioEst(pkg, tl, "baseline-ns/lookup", "nocache-ns/lookup")
	if ok1 && ok2 && ok3 && ok4 && ok5 {
		note := fmt.Sprintf("`userdp` %s: 1,000 random flows over 100 masks; baseline: every mask in turn, jhash2, byte compare; %s (baseline over ours)", tl, pairNote)
		on := Row{Group: g, What: "Table test, cache on (vs plain tuple-space search)", Ours: nsE(cache), Baseline: nsE(base),
			Ratio: xc, Goal: "≥ 10×", Note: note, ChartRatio: true}
		on.setGoal(10, false)
		off := Row{Group: g, What: "Table test, cache off (vs plain tuple-space search)", Ours: nsE(nocache), Baseline: nsE(base),
			Ratio: xn, Goal: "≥ 2×", Note: note, ChartRatio: true}
		off.setGoal(2, false)
		rows = append(rows, on, off)
	} else {
		why := r.missing(pkg, tl)
		rows = append(rows, notMeasured(g, "Table test, cache on (vs plain tuple-space search)", "≥ 10×", why),
			notMeasured(g, "Table test, cache off (vs plain tuple-space search)", "≥ 2×", why))
	}
	ca := "BenchmarkTableCRCAttack"
	att, ok1 := r.Est(pkg, ca, "attack-ns/lookup")
	rnd, ok2 := r.Est(pkg, ca, "random-ns/lookup")
	cost, ok3 := r.RatioEst(pkg, ca, "attack-ns/lookup", "random-ns/lookup")
	if ok1 && ok2 && ok3 {
		note := fmt.Sprintf("`userdp` %s: 1,000 keys colliding under plain CRC32C vs random keys; %s (attack over random)", ca, pairNote)
		if crc, ok := r.Est(pkg, ca, "crc-attack-ratio"); ok {
			note += fmt.Sprintf("; a table indexed by plain CRC32C slows down %.0f×%s under the same attack", crc.Center, crc.spread())
		}
		row := Row{Group: g, What: "Lookup under the CRC collision attack (cost vs random keys)",
			Ours: nsE(att), Baseline: nsE(rnd) + " (random)", Ratio: cost, RatioUnit: "× cost", Goal: "≤ 2× cost", Note: note}
		row.setGoal(2, true)
		rows = append(rows, row)
	} else {
		rows = append(rows, notMeasured(g, "Lookup under the CRC collision attack (cost vs random keys)", "≤ 2× cost", r.missing(pkg, ca)))
	}
	si := "BenchmarkSetIPv4/TTLOnly"
	ms, ok1 := r.Est(pkg, si, "ns/masked-set")
	fs, ok2 := r.Est(pkg, si, "ns/full-set")
	x, ok3 := r.RatioEst(pkg, si, "ns/full-set", "ns/masked-set")
	if ok1 && ok2 && ok3 {
		row := Row{Group: g, What: "Masked set of IPv4, TTL only (vs all four fields + checksum recomputed)",
			Ours: nsE(ms), Baseline: nsE(fs), Ratio: x, Goal: "≥ 1.3×",
			Note: "`userdp` " + si + ", interleaved; " + pairNote + " (full over masked)", ChartRatio: true}
		row.setGoal(1.3, false)
		rows = append(rows, row)
	} else {
		rows = append(rows, notMeasured(g, "Masked set of IPv4, TTL only (vs all four fields + checksum recomputed)", "≥ 1.3×", r.missing(pkg, si)))
	}
	rows = append(rows, r.pipelineRows()...)
	for _, v := range []struct{ name, what string }{
		{"BenchmarkNetdevRx/ring", "AF_PACKET read, ring port (TPACKET_V3 block lane under load, TPACKET_V2 slots when idle), 64-byte frames over veth"},
		{"BenchmarkNetdevRx/mmsg", "AF_PACKET read, recvmmsg, 64-byte frames over veth"},
		{"BenchmarkNetdevRx/xdp", "AF_XDP read (copy mode), 64-byte frames over veth"},
		{"BenchmarkNetdevTx/mmsg", "AF_PACKET write, sendmmsg batches of 64, 64-byte frames"},
		{"BenchmarkNetdevTx/xdp", "AF_XDP write (copy mode), batches of 64, 64-byte frames"},
		{"BenchmarkMemPipe/batch32", "In-memory port pair, batches of 32"},
	} {
		mpps, ok := r.Est(pkg, v.name, "Mpps")
		if !ok {
			rows = append(rows, notMeasured(g, v.what, "— (report)", r.missing(pkg, v.name)))
			continue
		}
		rows = append(rows, Row{Group: g, What: v.what, Ours: mppsE(mpps), Baseline: "—",
			Goal: "— (report)", Met: metNone, Note: "`userdp` " + v.name})
	}
	rows = append(append(rows, r.forwardRows()...), r.scaleRows()...)
	return rows
}

// pipelineMpps is a pipeline benchmark's packets per second: the fastest
// tenth of its chunks (p10 true) when it reports them, else the whole
// run's mean (Mpps, or from ns/op). ns is the matching time per packet.
func (r *Results) pipelineMpps(pkg, name string) (mpps, ns Estimate, p10, ok bool) {
	if ns, ok1 := r.Est(pkg, name, "p10-cpu-ns/packet"); ok1 {
		if mpps, ok2 := r.Est(pkg, name, "p10-Mpps"); ok2 {
			return mpps, ns, true, true
		}
	}
	ns, ok1 := r.Est(pkg, name, "ns/op")
	mpps, ok2 := r.Est(pkg, name, "Mpps")
	if !ok2 && ok1 && ns.Lo > 0 {
		mpps, ok2 = ns.inverse(1e3), true
	}
	return mpps, ns, false, ok1 && ok2
}

// pipelineRows: the target is for the datapath as it runs
// (cache on); the cache-less figure is shown for information.
func (r *Results) pipelineRows() []Row {
	const g, pkg = "userdp", "userdp"
	var rows []Row
	for _, v := range []struct {
		name, what string
		goal       bool
	}{
		{"BenchmarkPipeline/cache", "Whole pipeline per packet (extract, lookup hit, dec_ttl, output), cache on", true},
		{"BenchmarkPipeline/nocache", "Whole pipeline per packet, cache off", false},
	} {
		goal := "≥ 10 Mpps per core"
		if !v.goal {
			goal = "— (report)"
		}
		mpps, ns, p10, ok := r.pipelineMpps(pkg, v.name)
		if !ok {
			rows = append(rows, notMeasured(g, v.what, goal, r.missing(pkg, v.name)))
			continue
		}
		// With the per-chunk figures, the row is the fastest tenth of
		// the run's chunks (the benchmark's comment says why), and the
		// mean over the whole run is noted.
		note := "`userdp` " + v.name + " (in-memory ports, one core; CPU time of the benchmark's thread"
		if p10 {
			meanNs, ok1 := r.Est(pkg, v.name, "ns/op")
			meanMpps, ok2 := r.Est(pkg, v.name, "Mpps")
			if ok1 && ok2 {
				note += fmt.Sprintf("; the 10th percentile of 40 chunks spread over the run, as this shared host's noise only adds time; mean over the run %s/packet%s = %s",
					fmtNs(meanNs.Center), meanNs.spread(), mppsE(meanMpps))
			}
		}
		note += ")"
		row := Row{Group: g, What: v.what, Ours: fmt.Sprintf("%s/packet%s%s = %s", fmtNs(ns.Center), ns.spread(), ns.mean(fmtNs), mppsE(mpps)),
			Baseline: "—", Ratio: mpps, RatioUnit: " Mpps", Goal: goal, Met: metNone, Note: note}
		if v.goal {
			row.setGoal(10, false)
		}
		rows = append(rows, row)
	}
	return append(rows, r.instructionsRow())
}

// bothNote says how a ratio of figures from different benchmarks was
// computed.
const bothNote = "ratio: medians' ratio, interval from both figures' intervals (lower bound over upper bound and back; the two are not paired run by run)"

// policyRows: the upcall handler's decision.
func (r *Results) policyRows() []Row {
	const g, pkg = "policy", "policy"
	what := "Decide, 32 random rules (vs bare rule matching without mask bookkeeping)"
	ours, ok1 := r.Est(pkg, "BenchmarkDecide/rules=32", "ns/op")
	base, ok2 := r.Est(pkg, "BenchmarkDecide/baseline-match-only", "ns/op")
	if !ok1 || !ok2 {
		return []Row{notMeasured(g, what, "—", r.missing(pkg, "BenchmarkDecide/rules=32"))}
	}
	ratio, _ := ratioOfIntervals(base, ours)
	return []Row{{Group: g, What: what, Ours: nsE(ours), Baseline: nsE(base), Ratio: ratio, Goal: "— (cost of sound megaflow masks)", Met: metNone,
		Note: "`policy` BenchmarkDecide (sub-benchmarks run one after the other); " + bothNote}}
}

// dpctlLog matches the log line of cmd/dpctl's BenchmarkIntegrationFlows.
var dpctlLog = regexp.MustCompile(`(add|dump|del)-flows of (\d+) flows \((\d+) runs\): ovs-dpctl (\S+), dpctl (\S+):`)

// dpctlRates are the flows per second of ovs-dpctl (ref) and dpctl
// (ours) per operation (add, dump, del), one figure per log line of
// cmd/dpctl's BenchmarkIntegrationFlows in pkg, and the runs each line
// timed.
type dpctlRates struct {
	ref, ours map[string][]float64
	runs      map[string]float64
}

func (r *Results) dpctlRates(pkg string) dpctlRates {
	d := dpctlRates{ref: map[string][]float64{}, ours: map[string][]float64{}, runs: map[string]float64{}}
	for _, m := range dpctlLog.FindAllStringSubmatch(r.Text[pkg], -1) {
		n, err1 := strconv.ParseFloat(m[2], 64)
		runs, err2 := strconv.ParseFloat(m[3], 64)
		ref, err3 := time.ParseDuration(m[4])
		ours, err4 := time.ParseDuration(m[5])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || ref <= 0 || ours <= 0 {
			continue
		}
		d.ref[m[1]] = append(d.ref[m[1]], n*runs/ref.Seconds())
		d.ours[m[1]] = append(d.ours[m[1]], n*runs/ours.Seconds())
		d.runs[m[1]] = runs
	}
	return d
}

// kernelRows are the genl and dpctl benchmarks run in the VM.
func (r *Results) kernelRows() []Row {
	var rows []Row
	const g = "genl (VM)"
	name := "BenchmarkIntegrationFlows"
	for _, v := range []struct{ pkg, n, dpctl string }{{"genl@vm", "10,000", "cmd/dpctl@10k"}, {"genl@100k", "100,000", "cmd/dpctl@100k"}} {
		what := func(s string) string { return fmt.Sprintf(s, v.n) }
		install := what("genl flow install, %s flows, batched (vs one request at a time)")
		dumpWhat := what("genl flow dump, %s flows, full (terse in Baseline column)")
		one, ok1 := r.Est(v.pkg, name, "install-flows/s")
		bat, ok2 := r.Est(v.pkg, name, "batched-install-flows/s")
		dump, ok3 := r.Est(v.pkg, name, "dump-flows/s")
		terse, ok4 := r.Est(v.pkg, name, "terse-dump-flows/s")
		x, ok5 := r.RatioEst(v.pkg, name, "batched-install-flows/s", "install-flows/s")
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
			why := r.missing(v.pkg, name)
			rows = append(rows, notMeasured(g, install, "— (report)", why),
				notMeasured(g, dumpWhat, "— (report)", why),
				notMeasured(g, what("genl flow install, %s flows, batched (vs ovs-dpctl add-flows, same VM)"), "— (report)", why),
				notMeasured(g, what("genl flow dump, %s flows, full (vs ovs-dpctl dump-flows, same VM)"), "— (report)", why))
			continue
		}
		note := fmt.Sprintf("`genl` BenchmarkIntegrationFlows, %s flows (GENL_BENCH_FLOWS), Debian 6.1 kernel under QEMU TCG", v.n)
		rows = append(rows,
			Row{Group: g, What: install, Ours: rateE(bat, "flows/s"),
				Baseline: rateE(one, "flows/s"), Ratio: x, Goal: "— (report)", Met: metNone, Note: note + "; " + pairNote},
			Row{Group: g, What: dumpWhat, Ours: rateE(dump, "flows/s"),
				Baseline: rateE(terse, "flows/s") + " (terse)", Goal: "— (report)", Met: metNone, Note: note})
		// ovs-dpctl's rates come from cmd/dpctl's benchmark of the same
		// number of flows, in the same VM boot.
		ref := r.dpctlRates(v.dpctl).ref
		for _, c := range []struct {
			op, what string
			ours     Estimate
		}{{"add", "genl flow install, %s flows, batched (vs ovs-dpctl add-flows, same VM)", bat},
			{"dump", "genl flow dump, %s flows, full (vs ovs-dpctl dump-flows, same VM)", dump}} {
			base, ok := summarize(ref[c.op])
			if !ok {
				rows = append(rows, notMeasured(g, what(c.what), "— (report)", r.missing(v.dpctl, "BenchmarkIntegrationFlows")))
				continue
			}
			ratio, _ := ratioOfIntervals(c.ours, base)
			rows = append(rows, Row{Group: g, What: what(c.what), Ours: rateE(c.ours, "flows/s"), Baseline: rateE(base, "flows/s"),
				Ratio: ratio, Goal: "— (report)", Met: metNone,
				Note: note + "; ovs-dpctl " + c.op + "-flows FILE timed as a whole command by `cmd/dpctl` BenchmarkIntegrationFlows; " + bothNote})
		}
	}
	for _, size := range []string{"10k", "100k"} {
		pkg := "cmd/dpctl@" + size
		rates := r.dpctlRates(pkg)
		for _, op := range []string{"add", "dump", "del"} {
			what := fmt.Sprintf("dpctl %s-flows, %s flows (vs ovs-dpctl, same VM)", op, size)
			speed, okS := r.Est(pkg, "BenchmarkIntegrationFlows", op+"-speedup")
			runs, okR := rates.runs[op]
			if !okS || !okR {
				rows = append(rows, notMeasured("dpctl (VM)", what, "≥ 1.0×", r.missing(pkg, "BenchmarkIntegrationFlows")))
				continue
			}
			row := Row{Group: "dpctl (VM)", What: what, Ratio: speed, Goal: "≥ 1.0×", ChartRatio: true,
				Note: fmt.Sprintf("`cmd/dpctl` BenchmarkIntegrationFlows (DPCTL_BULK), whole commands timed, %g runs each, both binaries copied to the VM's local tmpfs first (its 9p shares have no page cache); dumps taking turns; ratio: the benchmark's own speed-up (%s-speedup), median over its runs", runs, op)}
			row.setGoal(1, false)
			if size != "100k" {
				// Issue 6 sets its goal at 100,000 flows; the smaller
				// run, all that make bench does without BENCH_LARGE,
				// is shown for information.
				row.Goal, row.Met, row.ChartRatio = "— (report; the goal is at 100k)", metNone, false
			}
			if ours, ok := summarize(rates.ours[op]); ok {
				ref, _ := summarize(rates.ref[op])
				row.Ours, row.Baseline = rateE(ours, "flows/s"), rateE(ref, "flows/s")
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// upcalldRows are issue 7's benchmark: the daemon's own benchmarks on
// the userspace datapath (in-memory ports), and a kernel one when it
// exists.
func (r *Results) upcalldRows() []Row {
	const g, pkg = "upcalld", "cmd/upcalld/internal/daemon"
	var rows []Row
	name := "BenchmarkHandleUpcall"
	what := "One handler's work per miss, userspace datapath (vs the policy alone)"
	rate, ok1 := r.Est(pkg, name, "upcalls/s")
	base, ok2 := r.Est(pkg, name, "policy-only-ns/op")
	x, ok3 := r.Est(pkg, name, "x-policy-only")
	if ok1 && ok2 && ok3 && rate.Lo > 0 {
		rows = append(rows, Row{Group: g, What: what, Ours: fmt.Sprintf("%s (%s/upcall)", rateE(rate, "upcalls/s"), fmtNs(1e9/rate.Center)),
			Baseline: fmtNs(base.Center) + "/upcall" + base.spread() + base.mean(fmtNs) + " (decide + translate)", Ratio: x, RatioUnit: "× cost", Goal: "— (report)", Met: metNone,
			Note: "`" + pkg + "` " + name + ": convert the key, decide, install the megaflow, execute; 20,000 distinct megaflows per run; ratio: the benchmark's own x-policy-only, median over its runs"})
	} else {
		rows = append(rows, notMeasured(g, what, "— (report)", r.missing(pkg, name)))
	}
	name = "BenchmarkUpcallsEndToEnd"
	what = "Upcalls handled per second end to end, userspace datapath, 2 handlers"
	h, ok1 := r.Est(pkg, name, "handled/s")
	hits, ok2 := r.Est(pkg, name, "baseline-hits/s")
	p50, ok3 := r.Est(pkg, name, "p50-ns")
	p99, ok4 := r.Est(pkg, name, "p99-ns")
	if ok1 && ok2 && ok3 && ok4 {
		lost, _ := r.Est(pkg, name, "lost")
		note := "`" + pkg + "` " + name + ": frames of new flows into an in-memory port; baseline: the same number of frames hitting one installed flow"
		rows = append(rows,
			Row{Group: g, What: what, Ours: rateE(h, "upcalls/s"), Baseline: rateE(hits, "pkts/s") + " (datapath hits)",
				Goal: "— (report)", Met: metNone, Note: fmt.Sprintf("%s; %g upcalls lost (median)", note, lost.Center)},
			Row{Group: g, What: "Handler latency p50 / p99, userspace datapath", Ours: nsE(p50) + " / " + nsE(p99), Baseline: "—",
				Goal: "— (report)", Met: metNone, Note: note})
	} else {
		why := r.missing(pkg, name)
		rows = append(rows, notMeasured(g, what, "— (report)", why), notMeasured(g, "Handler latency p50 / p99, userspace datapath", "— (report)", why))
	}
	for _, v := range []struct{ dp, what string }{
		{"system", "Upcalls handled per second, p50 / p99 handler latency, kernel datapath (VM)"},
		{"netdev", "Upcalls handled per second, p50 / p99 handler latency, userspace datapath on veth (same VM run)"},
	} {
		kpkg, kname := "upcalld@vm", "BenchmarkIntegrationUpcalls/"+v.dp
		rate, ok1 := r.Est(kpkg, kname, "handled/s")
		p50, ok2 := r.Est(kpkg, kname, "p50-ns")
		p99, ok3 := r.Est(kpkg, kname, "p99-ns")
		if !ok1 || !ok2 || !ok3 {
			rows = append(rows, notMeasured(g, v.what, "— (report)", r.missing(kpkg, kname)))
			continue
		}
		lost, _ := r.Est(kpkg, kname, "lost")
		shed, _ := r.Est(kpkg, kname, "shed")
		rows = append(rows, Row{Group: g, What: v.what, Ours: fmt.Sprintf("%s, %s / %s", rateE(rate, "upcalls/s"), nsE(p50), nsE(p99)),
			Baseline: "—", Goal: "— (report)", Met: metNone,
			Note: fmt.Sprintf("`%s` %s (medians of %d runs): new flows from a namespace over veth, 2 handlers, Debian 6.1 kernel under QEMU TCG; %g lost, %g shed",
				"cmd/upcalld/internal/daemon", kname, rate.N, lost.Center, shed.Center)})
	}
	return rows
}

// AllRows is the report's table, in order.
func (r *Results) AllRows() []Row {
	var rows []Row
	rows = append(rows, r.flowkeysRows()...)
	rows = append(rows, r.userdpRows()...)
	rows = append(rows, r.ctRows()...)
	rows = append(rows, r.policyRows()...)
	rows = append(rows, r.kernelRows()...)
	rows = append(rows, r.upcalldRows()...)
	rows = append(rows, r.vsOVSRows()...)
	rows = append(rows, r.vsOVSSatRows()...)
	for i := range rows {
		e := rows[i].Ratio
		if bad(e.Center) || bad(e.Lo) || bad(e.Hi) {
			rows[i].Ratio = Estimate{}
			if rows[i].Met == metYes || rows[i].Met == metNo {
				rows[i].Met = metUnclear
			}
		}
	}
	return rows
}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
