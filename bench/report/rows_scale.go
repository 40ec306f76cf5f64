package main

import "fmt"

// scaleBench is the megaflow table's growth benchmark (issue 17, how
// cost grows); its sweeps are charts (chart_scale.go), its goal and
// figures these rows.
const scaleBench = "BenchmarkTableScale/goal"

// scaleRows: the goal at 1M megaflows (over 100 masks, 100k
// microflows) against 1k, the same with exact-match caches big enough
// for every microflow, and memory, put and dump costs for information.
func (r *Results) scaleRows() []Row {
	const g, pkg = "userdp", "userdp"
	note := "`userdp` " + scaleBench + ": thread CPU per lookup of packets that all hit (the worker's exact-match cache, then the megaflow table, subtables ranked by hits), the two tables interleaved; ratio: median of the runs' own ratios"
	var rows []Row
	for _, v := range []struct {
		what, prefix, goal string
		extra              string
	}{
		{"Hit-path lookup at 1M megaflows over 100 masks, 100k microflows (vs 1k megaflows)", "", "≥ 0.4×", " (the default caches: 4,096-entry exact-match cache, then the second-level cache of 2^19 entries that a worker makes after 64k lookups needed the subtables)"},
		{"The same with exact-match caches of 1M entries (vs 1k megaflows, same cache)", "bigcache-", "— (report)", " (WithCacheEntries(1<<20): every microflow in the first cache; 16 MiB per worker)"},
	} {
		large, ok1 := r.Est(pkg, scaleBench, v.prefix+"1M-cpu-ns/lookup")
		small, ok2 := r.Est(pkg, scaleBench, v.prefix+"1k-cpu-ns/lookup")
		x, ok3 := r.Est(pkg, scaleBench, v.prefix+"x-vs-1k")
		if !ok1 || !ok2 || !ok3 {
			rows = append(rows, notMeasured(g, v.what, v.goal, r.missing(pkg, scaleBench)))
			continue
		}
		row := Row{Group: g, What: v.what, Ours: nsE(large) + "/lookup", Baseline: nsE(small) + "/lookup", Ratio: x, Goal: v.goal, Met: metNone, Note: note + v.extra}
		if v.prefix == "" {
			row.ChartRatio = true
			row.setGoal(0.4, false)
		}
		rows = append(rows, row)
	}
	const what = "Megaflow table at 1M flows: memory per megaflow and per cache entry, put and dump cost"
	mf, ok1 := r.Est(pkg, scaleBench, "bytes/megaflow")
	ce, ok2 := r.Est(pkg, scaleBench, "bytes/cache-entry")
	p1k, ok3 := r.Est(pkg, scaleBench, "1k-put-ns")
	p1m, ok4 := r.Est(pkg, scaleBench, "1M-put-ns")
	d, ok5 := r.Est(pkg, scaleBench, "1M-dump-ns/flow")
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return append(rows, notMeasured(g, what, "— (report)", r.missing(pkg, scaleBench)))
	}
	return append(rows, Row{Group: g, What: what,
		Ours:     fmt.Sprintf("%.0f B/megaflow, %.0f B/cache entry; put %s at 1M flows, dump %s/flow", mf.Center, ce.Center, nsE(p1m), nsE(d)),
		Baseline: fmt.Sprintf("put %s at 1k flows", nsE(p1k)), Goal: "— (report)", Met: metNone,
		Note: "`userdp` " + scaleBench + ": heap after GC (runtime.MemStats) per megaflow of the 1M-flow table (key, mask share, chains, bucket arrays) and per entry of a 1M-entry exact-match cache; put: thread CPU of the table's put (duplicate check over every subtable, then insert; no netlink conversion) of 1,000 new flows; dump: Datapath.DumpFlows of the 1M flows with their conversion to odp.Flow"})
}
