package main

import (
	"fmt"
	"path/filepath"
)

// ctConns are the table sizes of conntrack's BenchmarkEstablished.
var ctConns = []int{1000, 10000, 100000, 1000000}

// ctRows are issue 15's speed rows: the established-connection pipeline
// against the pipeline without ct (one interleaved benchmark), the
// tracker's lookup at 1,000 to 1,000,000 connections, its setup rate and
// its memory per connection.
func (r *Results) ctRows() []Row {
	const g = "conntrack"
	var rows []Row
	const what = "Established-connection pipeline (extract, ct, recirc, lookup hit, output) vs the no-ct pipeline"
	const pname = "BenchmarkPipelineCT"
	ct, ok1 := r.Est("userdp", pname, "cpu-ns/packet")
	noct, ok2 := r.Est("userdp", pname, "no-ct-cpu-ns/packet")
	x, ok3 := r.Est("userdp", pname, "x-of-no-ct")
	if ok1 && ok2 && ok3 {
		perPacket := func(e Estimate) string { return fmtNs(e.Center) + "/packet" + e.spread() + e.mean(fmtNs) }
		row := Row{Group: g, What: what, Ours: perPacket(ct), Baseline: perPacket(noct) + " (no ct)",
			Ratio: x, RatioUnit: "× of no-ct", Goal: "≥ 0.5× of no-ct", ChartRatio: true,
			Note: fmt.Sprintf("`userdp` %s (in-memory ports, one core, CPU time of the benchmark's thread): the two paths interleaved in chunks of 4,096 packets; ratio: median of the runs' own no-ct/ct ratios (%d runs)", pname, x.N)}
		row.setGoal(0.5, false)
		rows = append(rows, row)
	} else {
		rows = append(rows, notMeasured(g, what, "≥ 0.5× of no-ct", r.missing("userdp", pname)))
	}
	var first Estimate
	for _, n := range ctConns {
		name := fmt.Sprintf("BenchmarkEstablished/conns=%d", n)
		what := fmt.Sprintf("ct lookup of an established connection, %s tracked", fmtCount(n))
		v, ok := r.Est("conntrack", name, "cpu-ns/op")
		if !ok {
			rows = append(rows, notMeasured(g, what, "— (report)", r.missing("conntrack", name)))
			continue
		}
		note := "`conntrack` " + name + " (UDP, the tracker's Execute with no commit, probes spread over the table; CPU time)"
		if first.N == 0 {
			first = v
		} else if first.Center > 0 {
			note += fmt.Sprintf("; %.2g× the %s-connection lookup", v.Center/first.Center, fmtCount(ctConns[0]))
		}
		if n >= 100000 {
			note += ctFlatNote
		}
		rows = append(rows, Row{Group: g, What: what, Ours: nsE(v), Baseline: "—", Goal: "— (report; chart)", Met: metNone, Note: note})
	}
	for _, v := range []struct{ name, what, unit, fmt string }{
		{"BenchmarkSetup/tcp", "ct setup: new TCP connections committed per second, one core", "conns/s", "rate"},
		{"BenchmarkSetup/udp", "ct setup: new UDP connections committed per second, one core", "conns/s", "rate"},
		{"BenchmarkBytesPerConn", "ct memory per committed connection (heap, 100,000 connections)", "bytes/conn", "bytes"},
	} {
		e, ok := r.Est("conntrack", v.name, v.unit)
		if !ok {
			rows = append(rows, notMeasured(g, v.what, "— (report)", r.missing("conntrack", v.name)))
			continue
		}
		ours := rateE(e, "conns/s")
		note := "`conntrack` " + v.name + " (the tracker's Execute with commit, one goroutine; wall time)"
		if v.fmt == "bytes" {
			bytes := func(v float64) string { return fmt.Sprintf("%.0f bytes", v) }
			ours = bytes(e.Center) + e.spread() + e.mean(bytes)
			note = "`conntrack` " + v.name + " (runtime.MemStats HeapAlloc after GC, before and after committing 100,000 UDP connections: the connection objects and the bucket array)"
		}
		rows = append(rows, Row{Group: g, What: v.what, Ours: ours, Baseline: "—", Goal: "— (report)", Met: metNone, Note: note})
	}
	return append(rows, r.ctKernelRows()...)
}

// ctKernelRows are the setup rate and memory per connection of ours and
// of the kernel's conntrack, measured in the same VM run (genl's
// BenchmarkIntegrationCTSetup, once: no interval).
func (r *Results) ctKernelRows() []Row {
	const g, pkg, name = "conntrack", "genl@vm-ct", "BenchmarkIntegrationCTSetup"
	var rows []Row
	for _, v := range []struct{ what, ours, kernel, unit, note string }{
		{"ct setup in the VM: new TCP connections committed per second, ours vs the kernel's conntrack", "ours-conns/s", "kernel-conns/s", "conns/s",
			"20,000 SYNs of distinct tuples committed in zone 4242; the kernel's through ct(commit) executed on a kernel datapath, 1,000 packets per ExecuteBatch (its rate includes the netlink requests), ours by the tracker's Execute (no netlink); wall time of one goroutine; Debian 6.1 kernel under QEMU TCG, so both are slower than on the host"},
		{"ct memory per connection in the VM, ours vs the kernel's conntrack", "ours-bytes/conn", "kernel-bytes/conn", "bytes",
			"ours: heap per connection after GC (objects and bucket array); the kernel's: the nf_conntrack slab object (/proc/slabinfo objsize), without the extensions it allocates beside it"},
	} {
		ours, ok1 := r.Est(pkg, name, v.ours)
		kern, ok2 := r.Est(pkg, name, v.kernel)
		if !ok1 || !ok2 {
			rows = append(rows, notMeasured(g, v.what, "— (report)", r.missing(pkg, name)))
			continue
		}
		f := func(e Estimate) string { return rateE(e, "conns/s") }
		ratio, ok := r.RatioEst(pkg, name, v.ours, v.kernel)
		unit := "× the kernel's rate"
		if v.unit == "bytes" {
			f = func(e Estimate) string {
				bytes := func(x float64) string { return fmt.Sprintf("%.0f bytes", x) }
				return bytes(e.Center) + e.spread() + e.mean(bytes)
			}
			unit = "× the kernel's size"
		}
		row := Row{Group: g, What: v.what, Ours: f(ours), Baseline: f(kern) + " (kernel)", Goal: "— (report)", Met: metNone,
			Note: "`genl` " + name + " in the VM: " + v.note}
		if ok {
			row.Ratio, row.RatioUnit = ratio, unit
		}
		rows = append(rows, row)
	}
	return rows
}

// ctFlatNote says why the lookup is not flat from 1,000 to 1,000,000
// connections.
const ctFlatNote = ": the work per lookup is the same at every size (one hash, one bucket chain of about one entry, 0 allocations), so the lookup is flat while the table is in cache and not beyond: at 100,000 and more connections the bucket, the entry and its connection are each a likely miss to memory (probes spread over the table). Misses per lookup are not measured here: this VM has no hardware counters, and cachegrind simulates the host's 480 MB last-level cache, which holds even the 1,000,000-connection table"

// fmtCount writes 1000 as "1,000".
func fmtCount(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// ctChart draws the ct lookup cost against the number of connections,
// when the results have it.
func (r *Results) ctChart(dir string) (Chart, bool, error) {
	s := Series{Name: "ct lookup, established (conntrack BenchmarkEstablished)"}
	for _, n := range ctConns {
		if v, ok := r.Est("conntrack", fmt.Sprintf("BenchmarkEstablished/conns=%d", n), "cpu-ns/op"); ok && v.Lo > 0 {
			s.Xs = append(s.Xs, float64(n))
			s.Ys = append(s.Ys, v)
		}
	}
	if len(s.Xs) == 0 {
		return Chart{}, false, nil
	}
	c := Chart{"ct_lookup.png", "Connection tracker: ns per established lookup against the number of tracked connections, with intervals"}
	if err := LineChart(filepath.Join(dir, c.File), "ct lookup vs tracked connections", "tracked connections (log scale)", "CPU ns per lookup (log scale)", []Series{s}, true, true); err != nil {
		return Chart{}, false, err
	}
	return c, true, nil
}
