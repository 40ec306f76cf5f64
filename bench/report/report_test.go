package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writeFixture writes a raw-results directory like bench.sh's.
func writeFixture(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for n, s := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const jsonFixture = `{"Action":"start","Package":"github.com/ovsdp/ovsdp/flowkeys"}
{"Action":"output","Package":"github.com/ovsdp/ovsdp/flowkeys","Test":"BenchmarkExtract/ours","Output":"BenchmarkExtract/ours-2     \t"}
{"Action":"output","Package":"github.com/ovsdp/ovsdp/userdp","Output":"BenchmarkSetIPv4/TTLOnly-2  \t    5913\t    111855 ns/op\t        77.50 ns/full-set\t        34.26 ns/masked-set\t         2.262 speedup\n"}
{"Action":"output","Package":"github.com/ovsdp/ovsdp/userdp","Output":"BenchmarkPipeline/cache-2  \t 3000000\t       120.0 ns/op\t         8.333 Mpps\t       120.0 cpu-ns/packet\t        12.50 p10-Mpps\t        80.00 p10-cpu-ns/packet\t       0 B/op\t       0 allocs/op\n"}
{"Action":"output","Package":"github.com/ovsdp/ovsdp/userdp","Output":"BenchmarkPipeline/nocache-2  \t 3000000\t       200.0 ns/op\t         5.000 Mpps\t       0 B/op\t       0 allocs/op\n"}
{"Action":"output","Package":"github.com/ovsdp/ovsdp/flowkeys","Test":"BenchmarkExtract/ours","Output":"  509950\t        80.50 ns/op\t       334.6 baseline-ns/op\t         4.157 x-vs-baseline\t       0 B/op\t       0 allocs/op\n"}
{"Action":"output","Package":"github.com/ovsdp/ovsdp/flowkeys","Test":"BenchmarkExtract/ours","Output":"BenchmarkExtract/ours-2     \t  509950\t        70.50 ns/op\t       334.6 baseline-ns/op\t         2.0 x-vs-baseline\t       0 B/op\t       0 allocs/op\n"}
{"Action":"output","Package":"github.com/ovsdp/ovsdp/flowkeys","Test":"BenchmarkExtract/ours","Output":"BenchmarkExtract/ours-2     \t  509950\t        90.50 ns/op\t       334.6 baseline-ns/op\t         5.0 x-vs-baseline\t       0 B/op\t       0 allocs/op\n"}
{"Action":"output","Package":"github.com/ovsdp/ovsdp/flowkeys","Output":"BenchmarkHashRange64/ours-2 \t 100 \t 10 ns/op \t 15 baseline-ns/op \t 1.5 x-vs-baseline\nBenchmarkHashRange64/ours-2 \t 100 \t 10 ns/op \t 16 baseline-ns/op \t 1.6 x-vs-baseline\nBenchmarkHashRange64/ours-2 \t 100 \t 10 ns/op \t 17 baseline-ns/op \t 1.7 x-vs-baseline\n"}
`

func TestLoadAndRows(t *testing.T) {
	dir := hostFixture(t, "host\tok\t\ngenl@vm\tfail\tthe VM run ended before it\ncmd/dpctl@10k\tok\t\n", map[string]string{
		"machine.txt": "CPU: Test CPU @ 1 GHz\ncores: 2\n",
		"cmd_dpctl@10k.txt": dpctlText([]string{"0.5 add-speedup\t2.0 dump-speedup\t1.5 del-speedup"},
			"add-flows of 10000 flows (1 runs): ovs-dpctl 1s, dpctl 2s: dpctl 0.50x as fast",
			"dump-flows of 10000 flows (1 runs): ovs-dpctl 500ms, dpctl 250ms: dpctl 2.00x as fast"),
	})
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Three runs of Extract (the first split over two events): median.
	if v, ok := r.Est("flowkeys", "BenchmarkExtract/ours", "ns/op"); !ok || v != (Estimate{Center: 80.5, Mean: 80.5, Lo: 70.5, Hi: 90.5, Confidence: 0.75, N: 3}) {
		t.Errorf("median ns/op = %+v %v, want 80.5 in [70.5, 90.5]", v, ok)
	}
	if n := len(r.Runs("flowkeys", "BenchmarkExtract/ours")); n != 3 {
		t.Errorf("%d runs, want 3", n)
	}
	// The text file keeps its variant name despite its pkg: line.
	if _, ok := r.Est("cmd/dpctl@10k", "BenchmarkIntegrationFlows", "add-speedup"); !ok {
		t.Errorf("dpctl@10k not parsed: %v", r.Bench)
	}
	if len(r.Machine) != 2 || r.Machine[0] != [2]string{"CPU", "Test CPU @ 1 GHz"} {
		t.Errorf("machine %v", r.Machine)
	}
	byWhat := r.rowsByWhat()
	ex := byWhat["Extract, mixed realistic packets (vs gopacket DecodingLayerParser)"]
	// Its three runs' own ratios are 4.157, 2 and 5: the median meets
	// the goal (≥ 3×), but the interval (the runs' range, 75% for three
	// runs) reaches below it.
	if ex.Met != metUnclear || !ex.MedianMeets || ex.Ratio != (Estimate{Center: 4.157, Mean: (4.157 + 2 + 5) / 3, Lo: 2, Hi: 5, Confidence: 0.75, N: 3}) ||
		!strings.Contains(ex.Ours, "80.5 ns ± 12%, mean 80.5 ns, 0 allocs") {
		t.Errorf("extract row %+v", ex)
	}
	if h := byWhat["Hash of the longest key, CRC32C (vs Go jhash2)"]; h.Met != "not measured" || !strings.Contains(h.Note, "no benchmark BenchmarkHashLongestKey/ours in flowkeys") {
		t.Errorf("missing hash row %+v", h)
	}
	if h := byWhat["Hash of a 64-byte range (vs hash/crc32 Castagnoli)"]; h.Met != metYes || h.Ratio.Center != 1.6 || h.Baseline != "16 ns ± 6%, mean 16 ns" {
		t.Errorf("hash row %+v", h)
	}
	// One run: no interval, so the goal is unclear even though the
	// figure meets it.
	if s := byWhat["Masked set of IPv4, TTL only (vs all four fields + checksum recomputed)"]; s.Met != metUnclear || !s.MedianMeets || s.Ratio.Center < 2.26 || s.Ratio.Center > 2.27 || s.Ratio.HasInterval() {
		t.Errorf("set row %+v", s)
	}
	// The pipeline: the fastest tenth of the chunks when the benchmark
	// reports it (the goal is judged on it, the mean is noted), else
	// the mean.
	if p := byWhat["Whole pipeline per packet (extract, lookup hit, dec_ttl, output), cache on"]; p.Met != metUnclear || p.Ratio.Center != 12.5 ||
		!strings.Contains(p.Ours, "80 ns/packet (1 run) = 12.5 Mpps (1 run)") || !strings.Contains(p.Note, "mean over the run 120") {
		t.Errorf("pipeline row %+v", p)
	}
	if p := byWhat["Whole pipeline per packet, cache off"]; p.Ratio.Center != 5 || !strings.Contains(p.Ours, "5 Mpps") || strings.Contains(p.Note, "percentile") {
		t.Errorf("cache-off pipeline row %+v", p)
	}
	if g := byWhat["genl flow dump, 10,000 flows, full (terse in Baseline column)"]; g.Met != "not measured" || !strings.Contains(g.Note, "step genl@vm fail: the VM run ended before it") {
		t.Errorf("genl row %+v", g)
	}
	add := byWhat["dpctl add-flows, 10k flows (vs ovs-dpctl, same VM)"]
	// The 10k rows are for information: issue 6's goal is at 100k.
	if add.Met != "—" || add.Ours != "5000 flows/s (1 run)" || add.Baseline != "10 kflows/s (1 run)" || add.Ratio.Center != 0.5 {
		t.Errorf("add row %+v", add)
	}
	if d := byWhat["dpctl dump-flows, 10k flows (vs ovs-dpctl, same VM)"]; d.Met != "—" || d.Ratio.Center != 2 {
		t.Errorf("dump row %+v", d)
	}
	// del has a speed-up but no log line: still shown, without rates.
	if d := byWhat["dpctl del-flows, 10k flows (vs ovs-dpctl, same VM)"]; d.Met != "not measured" {
		t.Errorf("del row %+v", d)
	}
	if d := byWhat["dpctl add-flows, 100k flows (vs ovs-dpctl, same VM)"]; d.Met != "not measured" || !strings.Contains(d.Note, "was not run") {
		t.Errorf("100k row %+v", d)
	}

	md, out, _ := runReport(t, dir)
	for _, want := range []string{"| CPU | Test CPU @ 1 GHz |", "| 1 | Extract, mixed realistic packets", "✅ yes", "⚠️ not measured", "![", "| genl@vm | fail |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, c := range []string{"ratios.png", "stages.png"} {
		img := readPNG(t, filepath.Join(filepath.Dir(out), c))
		if b := img.Bounds(); b.Dx() != barChartWidth || b.Dy() < barChartHeight(1) {
			t.Errorf("%s is %v", c, b)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"broken json":  {"x.json": "{\"Action\":"},
		"steps":        {"steps.txt": "just-a-name\n"},
		"machine":      {"machine.txt": "no colon here\n"},
		"missing dir?": nil,
	} {
		var dir string
		if files == nil {
			dir = filepath.Join(t.TempDir(), "absent")
		} else {
			dir = writeFixture(t, files)
		}
		if _, err := Load(dir); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// FuzzReadJSON's seeds are the fixture's events one by one and in pairs
// rather than the whole fixture (1.3 KB): the engine minimizes every new
// corpus entry in time quadratic in its length, and entries grown from the
// whole fixture took it all of a one-minute run (issue 21).
func FuzzReadJSON(f *testing.F) {
	events := strings.SplitAfter(strings.TrimSuffix(jsonFixture, "\n"), "\n")
	for i, e := range events {
		f.Add(e)
		if i > 0 {
			f.Add(events[i-1] + e)
		}
	}
	f.Add(`{"Action":"output","Package":"x","Output":"pkg: y\nBenchmarkA 1 2 ns/op\n"}`)
	f.Fuzz(func(t *testing.T, s string) {
		r := newResults()
		if err := r.ReadJSON(strings.NewReader(s), "fuzz"); err != nil {
			return
		}
		r.AllRows()
	})
}

// TestDpctlGoalAt100k: the dpctl rows at 100,000 flows carry issue 6's
// goal (at least as fast as ovs-dpctl).
func TestDpctlGoalAt100k(t *testing.T) {
	// Three runs of the benchmark: add's speed-ups all above 1, dump's
	// all below.
	dir := hostFixture(t, "host\tok\t\ncmd/dpctl@100k\tok\t\n", map[string]string{
		"cmd_dpctl@100k.txt": dpctlText([]string{"2.0 add-speedup\t0.9 dump-speedup\t1.5 del-speedup",
			"2.2 add-speedup\t0.8 dump-speedup\t1.4 del-speedup", "1.9 add-speedup\t0.95 dump-speedup\t1.6 del-speedup"},
			"add-flows of 100000 flows (1 runs): ovs-dpctl 20s, dpctl 10s: dpctl 2.00x as fast",
			"dump-flows of 100000 flows (4 runs): ovs-dpctl 36s, dpctl 40s: dpctl 0.90x as fast",
			"del-flows of 100000 flows (1 runs): ovs-dpctl 15s, dpctl 10s: dpctl 1.50x as fast"),
	})
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	byWhat := r.rowsByWhat()
	if a := byWhat["dpctl add-flows, 100k flows (vs ovs-dpctl, same VM)"]; a.Met != metYes || a.Goal != "≥ 1.0×" || a.Ours != "10 kflows/s ± 0.0%, mean 10 kflows/s" || a.Ratio.Center != 2 {
		t.Errorf("100k add row %+v", a)
	}
	// Four dumps each: 400,000 flows in 40 s.
	if d := byWhat["dpctl dump-flows, 100k flows (vs ovs-dpctl, same VM)"]; d.Met != metNo || d.Ratio.Center != 0.9 || d.Ours != "10 kflows/s ± 0.0%, mean 10 kflows/s" || !strings.Contains(d.Note, "4 runs each") {
		t.Errorf("100k dump row %+v", d)
	}
}

// dpctlText is cmd/dpctl's BenchmarkIntegrationFlows output with one
// result line per runs entry (its metrics) and the given log lines, as
// bench.sh saves it.
func dpctlText(runs []string, logs ...string) string {
	out := "goos: linux\npkg: github.com/ovsdp/ovsdp/cmd/dpctl\n"
	for _, metrics := range runs {
		out += "BenchmarkIntegrationFlows \t1\t9000000000 ns/op\t" + metrics + "\n--- BENCH: BenchmarkIntegrationFlows\n"
		for _, l := range logs {
			out += "    dpctl_integration_test.go:330: " + l + "\n"
		}
	}
	return out
}

// hostFixture is a raw-results directory with jsonFixture as host.json,
// the given steps.txt, a one-line machine.txt and the other files given
// (which may replace those).
func hostFixture(t *testing.T, steps string, files map[string]string) string {
	t.Helper()
	all := map[string]string{"host.json": jsonFixture, "machine.txt": "CPU: Test CPU @ 1 GHz\n", "steps.txt": steps}
	for n, s := range files {
		all[n] = s
	}
	return writeFixture(t, all)
}

// rowsByWhat indexes the report's rows by their What.
func (r *Results) rowsByWhat() map[string]Row {
	m := map[string]Row{}
	for _, row := range r.AllRows() {
		m[row.What] = row
	}
	return m
}

// loadRowGetter loads the results in dir and returns a function that
// finds one of their rows by its What, failing the test when there is
// none.
func loadRowGetter(t *testing.T, dir string) func(what string) Row {
	t.Helper()
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := r.rowsByWhat()
	return func(what string) Row {
		t.Helper()
		row, ok := rows[what]
		if !ok {
			t.Fatalf("no row %q", what)
		}
		return row
	}
}

// TestAddText: benchfmt reads the result lines; names lose only their
// -GOMAXPROCS suffix; units stay as go test printed them; failed and
// skipped benchmarks are recorded; a line that starts like a result but is
// not one is recorded with its place and reason, never dropped silently.
func TestAddText(t *testing.T) {
	text := strings.Join([]string{
		"goos: linux",
		"pkg: github.com/ovsdp/ovsdp/x",
		"BenchmarkX/sub-2   \t     100\t       5.5 ns/op\t         3 widgets/op\t  12.5 MB/s",
		"BenchmarkDecide/baseline-match-only-2  1000000  449.9 ns/op",
		"BenchmarkE 1 1.5e+06 upcalls/s",
		"BenchmarkY-2       \t--- FAIL: BenchmarkY-2",
		"    y_test.go:10: boom",
		"BenchmarkS-2       \t--- SKIP: BenchmarkS-2",
		"--- FAIL: BenchmarkJ/sub-2",
		"--- SKIP: BenchmarkK",
		"BenchmarkZ-2 10 1..2 ns/op",
		"BenchmarkN-2 1 NaN ns/op",
		"BenchmarkD-2 1 2 ns/op 3 ns/op",
		"BenchmarkU-2 10 ns/op",
		"BenchmarkP-2    \tpanic: runtime error: index out of range",
		"BenchmarkLonely",
		// A benchmark that printed while it ran, as a test binary run
		// without -test.v shows it.
		"BenchmarkPrints-2   \thello",
		"world",
		"      10\t       522.2 ns/op",
		"--- BENCH: BenchmarkX/sub-2",
		"PASS",
		"ok  \tgithub.com/ovsdp/ovsdp/x\t1.2s",
	}, "\n") + "\n"
	r := newResults()
	if err := r.addText("p", text, "x.txt"); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]float64{
		"BenchmarkX/sub":                      {"ns/op": 5.5, "widgets/op": 3, "MB/s": 12.5, "iterations": 100},
		"BenchmarkDecide/baseline-match-only": {"ns/op": 449.9, "iterations": 1e6},
		"BenchmarkE":                          {"upcalls/s": 1.5e6, "iterations": 1},
		"BenchmarkPrints":                     {"ns/op": 522.2, "iterations": 10},
	}
	if len(r.Bench["p"]) != len(want) {
		t.Errorf("benchmarks %v, want %d", r.Bench["p"], len(want))
	}
	for name, ms := range want {
		runs := r.Runs("p", name)
		if len(runs) != 1 || len(runs[0]) != len(ms) {
			t.Errorf("%s: runs %v, want %v", name, runs, ms)
			continue
		}
		for u, v := range ms {
			if runs[0][u] != v {
				t.Errorf("%s %s = %v, want %v", name, u, runs[0][u], v)
			}
		}
	}
	if o := r.Outcome["p"]; o["BenchmarkY"] != "FAIL" || o["BenchmarkS"] != "SKIP" || o["BenchmarkJ/sub"] != "FAIL" || o["BenchmarkK"] != "SKIP" || len(o) != 4 {
		t.Errorf("outcomes %v", o)
	}
	wantBad := []struct{ name, where, why string }{
		{"BenchmarkZ", "x.txt line 11", "parsing measurement"},
		{"BenchmarkN", "x.txt line 12", "ns/op is NaN, not a finite number"},
		{"BenchmarkD", "x.txt line 13", "unit ns/op given twice"},
		{"BenchmarkU", "x.txt line 14", "parsing measurement"},
		{"BenchmarkP", "x.txt line 15", "parsing iteration count"},
	}
	if len(r.Malformed) != len(wantBad) {
		t.Fatalf("malformed %+v, want %d", r.Malformed, len(wantBad))
	}
	for i, w := range wantBad {
		m := r.Malformed[i]
		if m.Pkg != "p" || m.Name != w.name || m.Where != w.where || !strings.Contains(m.Why, w.why) || !strings.HasPrefix(m.Line, w.name) {
			t.Errorf("malformed[%d] = %+v, want %s at %s: %s", i, m, w.name, w.where, w.why)
		}
	}
	// The rows that would use them say why they have no figure.
	for name, want := range map[string]string{
		"BenchmarkY": "BenchmarkY failed (--- FAIL in p's output)",
		"BenchmarkS": "BenchmarkS was skipped",
		"BenchmarkZ": "BenchmarkZ's result line is malformed (x.txt line 11: parsing measurement",
	} {
		if got := r.missing("p", name); !strings.Contains(got, want) {
			t.Errorf("missing(%s) = %q, want %q", name, got, want)
		}
	}
	// A line longer than benchfmt reads is an error that says where.
	if err := newResults().addText("p", "BenchmarkL 1 "+strings.Repeat("1", 70000)+" ns/op\n", "long.txt"); err == nil || !strings.Contains(err.Error(), "long.txt") {
		t.Errorf("over-long line: %v", err)
	}
}

// TestSummarize: the median with benchmath's order-statistic interval;
// 95% from 6 runs, the runs' range with its own confidence below that.
func TestSummarize(t *testing.T) {
	if _, ok := summarize(nil); ok {
		t.Error("no runs: ok")
	}
	for _, c := range []struct {
		vs   []float64
		want Estimate
	}{
		{[]float64{7}, Estimate{Center: 7, Mean: 7, Lo: 7, Hi: 7, N: 1}},
		{[]float64{12, 10}, Estimate{Center: 11, Mean: 11, Lo: 10, Hi: 12, Confidence: 0.5, N: 2}},
		{[]float64{12, 10, 11}, Estimate{Center: 11, Mean: 11, Lo: 10, Hi: 12, Confidence: 0.75, N: 3}},
		// The mean is the plain mean: a far run moves it, not the median.
		{[]float64{10, 11, 30}, Estimate{Center: 11, Mean: 17, Lo: 10, Hi: 30, Confidence: 0.75, N: 3}},
		{[]float64{14, 10, 13, 11, 12}, Estimate{Center: 12, Mean: 12, Lo: 10, Hi: 14, Confidence: 0.9375, N: 5}},
		{[]float64{6, 5, 4, 3, 2, 1}, Estimate{Center: 3.5, Mean: 3.5, Lo: 1, Hi: 6, Confidence: 0.96875, N: 6}},
		// With 8 runs the 95% interval no longer needs the extremes.
		{[]float64{10, 11, 12, 13, 14, 15, 16, 17}, Estimate{Center: 13.5, Mean: 13.5, Lo: 10, Hi: 16, Confidence: 0.9609375, N: 8}},
	} {
		got, ok := summarize(c.vs)
		if !ok || math.Abs(got.Confidence-c.want.Confidence) > 1e-12 {
			t.Errorf("summarize(%v) = %+v, want %+v", c.vs, got, c.want)
			continue
		}
		got.Confidence = c.want.Confidence
		if got != c.want {
			t.Errorf("summarize(%v) = %+v, want %+v", c.vs, got, c.want)
		}
		if got.Confidence < wantConfidence && len(c.vs) >= 6 {
			t.Errorf("%d runs: confidence %v below 95%%", len(c.vs), got.Confidence)
		}
	}
}

func TestRatioEstimates(t *testing.T) {
	// Per-run ratios: each run's own pair.
	r := newResults()
	if err := r.addText("p", "BenchmarkR 1 10 a 5 b\nBenchmarkR 1 30 a 10 b\nBenchmarkR 1 8 a 2 b\nBenchmarkR 1 1 a 0 b\n", "r.txt"); err != nil {
		t.Fatal(err)
	}
	// 2, 3 and 4 (the run with b = 0 is left out).
	if e, ok := r.RatioEst("p", "BenchmarkR", "a", "b"); !ok || e != (Estimate{Center: 3, Mean: 3, Lo: 2, Hi: 4, Confidence: 0.75, N: 3}) {
		t.Errorf("RatioEst = %+v %v", e, ok)
	}
	if _, ok := r.RatioEst("p", "BenchmarkR", "a", "c"); ok {
		t.Error("RatioEst of a missing unit: ok")
	}
	// From two intervals: lower over upper and back, confidence at least
	// the sum minus one.
	num := Estimate{Center: 10, Lo: 8, Hi: 12, Confidence: 0.95, N: 6}
	den := Estimate{Center: 5, Lo: 4, Hi: 6, Confidence: 0.96, N: 7}
	e, ok := ratioOfIntervals(num, den)
	if !ok || e.Center != 2 || math.Abs(e.Lo-8.0/6) > 1e-12 || e.Hi != 3 || math.Abs(e.Confidence-0.91) > 1e-12 || e.N != 6 {
		t.Errorf("ratioOfIntervals = %+v %v", e, ok)
	}
	if e, ok := ratioOfIntervals(num, Estimate{Center: 5, Lo: 5, Hi: 5, N: 1}); !ok || e.HasInterval() || e.Lo != 2 || e.Hi != 2 {
		t.Errorf("with one run: %+v %v, want 2 without an interval", e, ok)
	}
	if _, ok := ratioOfIntervals(num, Estimate{Center: 1, Lo: 0, Hi: 2, Confidence: 0.95, N: 6}); ok {
		t.Error("denominator interval reaching 0: ok")
	}
	if inv := den.inverse(1e3); inv.Center != 200 || inv.Lo != 1e3/6 || inv.Hi != 250 || inv.Confidence != den.Confidence {
		t.Errorf("inverse = %+v", inv)
	}
}

func TestJudge(t *testing.T) {
	iv := func(lo, c, hi float64) Estimate { return Estimate{Center: c, Lo: lo, Hi: hi, Confidence: 0.95, N: 6} }
	for _, c := range []struct {
		e       Estimate
		atLeast bool
		v       float64
		want    string
		meets   bool
	}{
		{iv(1.1, 1.2, 1.3), true, 1, metYes, true},
		{iv(1, 1.2, 1.3), true, 1, metYes, true},
		{iv(0.8, 0.85, 0.9), true, 1, metNo, false},
		{iv(0.9, 1.05, 1.1), true, 1, metUnclear, true},
		{iv(0.9, 0.95, 1.1), true, 1, metUnclear, false},
		{Estimate{Center: 5, Lo: 5, Hi: 5, N: 1}, true, 1, metUnclear, true},
		{iv(1.5, 1.8, 2), false, 2, metYes, true},
		{iv(2.1, 2.5, 3), false, 2, metNo, false},
		{iv(1.5, 2.5, 3), false, 2, metUnclear, false},
	} {
		if got := judge(c.e, c.atLeast, c.v); got != c.want {
			t.Errorf("judge(%+v, atLeast %v, %v) = %s, want %s", c.e, c.atLeast, c.v, got, c.want)
		}
		if got := medianMeets(c.e, c.atLeast, c.v); got != c.meets {
			t.Errorf("medianMeets(%+v, atLeast %v, %v) = %v", c.e, c.atLeast, c.v, got)
		}
	}
}

func TestIntervalText(t *testing.T) {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	for _, c := range []struct {
		e              Estimate
		spread, inside string
	}{
		{Estimate{Center: 10, Lo: 9, Hi: 10.5, Confidence: 0.96875, N: 6}, " ± 10%", "[9.00, 10.50]"},
		{Estimate{Center: 10, Lo: 9.99, Hi: 10.02, Confidence: 0.96875, N: 6}, " ± 0.2%", "[9.99, 10.02]"},
		{Estimate{Center: 2, Lo: 1, Hi: 3, Confidence: 0.75, N: 3}, " ± 50%", "[1.00, 3.00] (75%, 3 runs)"},
		{Estimate{Center: 2, Lo: 1, Hi: 3, Confidence: 0.9375, N: 5}, " ± 50%", "[1.00, 3.00] (93.8%, 5 runs)"},
		{Estimate{Center: 2, Lo: 2, Hi: 2, N: 1}, " (1 run)", "no interval (1 run)"},
	} {
		if got := c.e.spread(); got != c.spread {
			t.Errorf("%+v: spread %q, want %q", c.e, got, c.spread)
		}
		if got := c.e.interval(f); got != c.inside {
			t.Errorf("%+v: interval %q, want %q", c.e, got, c.inside)
		}
	}
}

// readPNG decodes the PNG file at path.
func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	data, err := os.ReadFile(path)
	if err == nil {
		var img image.Image
		if img, err = png.Decode(bytes.NewReader(data)); err == nil {
			return img
		}
	}
	t.Fatalf("chart %s: %v", path, err)
	return nil
}

// decodePNG checks that the chart at path is a PNG of w×h pixels with
// something drawn in col.
func decodePNG(t *testing.T, path string, w, h int, col color.RGBA) {
	t.Helper()
	img := readPNG(t, path)
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("%s is %dx%d, want %dx%d", path, b.Dx(), b.Dy(), w, h)
	}
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)) == col {
				n++
			}
		}
	}
	if n < 100 {
		t.Errorf("%s: %d pixels of %v, want the bars or lines drawn in it", path, n, col)
	}
}

func TestCharts(t *testing.T) {
	dir := t.TempDir()
	iv := func(lo, c, hi float64) Estimate { return Estimate{Center: c, Lo: lo, Hi: hi, Confidence: 0.95, N: 6} }
	bars := []Bar{
		{Label: "1. met", Value: iv(3, 3.5, 4), Goal: 2, Color: green},
		{Label: "2. missed (µs, ×, ≥)", Value: iv(0.5, 0.6, 0.7), Goal: 1, Color: red},
		{Label: "3. no interval", Value: Estimate{Center: 20, Lo: 20, Hi: 20, N: 1}},
	}
	p := filepath.Join(dir, "bars.png")
	if err := BarChart(p, "t", "x", bars, true, 1); err != nil {
		t.Fatal(err)
	}
	decodePNG(t, p, barChartWidth, barChartHeight(3), green)
	if err := BarChart(p, "t", "x", bars[:2], false, 0); err != nil {
		t.Fatal(err)
	}
	decodePNG(t, p, barChartWidth, barChartHeight(2), red)
	// Nothing drawable on a log axis.
	if err := BarChart(p, "t", "x", []Bar{{Label: "zero", Value: Estimate{N: 1}}}, true, 1); err == nil {
		t.Error("no drawable bar: no error")
	}
	// A stage that delivered nothing has no bar on the log axis, and the
	// report's charts are still drawn.
	r := newResults()
	if err := r.addText("userdp", "BenchmarkMemPipe/batch32-2 1 0 Mpps\nBenchmarkMemPipe/batch32-2 1 0 Mpps\n", "z.txt"); err != nil {
		t.Fatal(err)
	}
	if charts, err := r.Charts(nil, dir); err != nil || len(charts) != 0 {
		t.Errorf("charts of a zero rate: %v %v", charts, err)
	}
	lp := filepath.Join(dir, "m.png")
	ss := []Series{
		{"ours", []float64{1, 10, 100}, []Estimate{iv(45, 50, 55), iv(55, 60, 70), iv(70, 80, 85)}},
		{"baseline", []float64{1, 10, 100}, []Estimate{iv(55, 60, 70), iv(500, 600, 700), iv(5000, 6000, 7000)}},
	}
	if err := LineChart(lp, "t", "masks", "ns", ss, true, true); err != nil {
		t.Fatal(err)
	}
	decodePNG(t, lp, lineChartW, lineChartH, palette[0])
	for name, bad := range map[string][]Series{
		"empty":    nil,
		"mismatch": {{"s", []float64{1, 2}, []Estimate{iv(1, 2, 3)}}},
		"log of 0": {{"s", []float64{0}, []Estimate{iv(1, 2, 3)}}},
	} {
		if err := LineChart(lp, "t", "x", "y", bad, true, true); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestReportIntervals: the report shows every figure's interval, judges
// each goal on it (met, missed, or unclear when the interval straddles the
// goal), and names malformed and failed benchmark lines instead of
// dropping them.
func TestReportIntervals(t *testing.T) {
	var out strings.Builder
	line := func(name string, ours, base, x float64) {
		fmt.Fprintf(&out, `{"Action":"output","Package":"github.com/ovsdp/ovsdp/flowkeys","Output":"%s-2 \t 1000 \t %g ns/op \t %g baseline-ns/op \t %g x-vs-baseline\n"}`+"\n", name, ours, base, x)
	}
	for i, x := range []float64{1.2, 1.3, 1.25, 1.4, 1.22, 1.35} {
		line("BenchmarkHashRange64/ours", 10, 10*x, x)
		// Straddles its goal (≥ 1×): the median (1.075) alone would meet it.
		y := []float64{0.8, 1.1, 1.0, 1.3, 1.05, 1.2}[i]
		line("BenchmarkHashRange128/ours", 10, 10*y, y)
		// Below its goal in every run.
		z := []float64{0.8, 0.9, 0.85, 0.95, 0.82, 0.91}[i]
		line("BenchmarkEqualMasked128/vs-bytes.Equal/ours", 10, 10*z, z)
	}
	out.WriteString(`{"Action":"output","Package":"github.com/ovsdp/ovsdp/flowkeys","Output":"BenchmarkHashLongestKey/ours-2 \t 1000 \t 1..2 ns/op\n"}` + "\n")
	out.WriteString(`{"Action":"output","Package":"github.com/ovsdp/ovsdp/flowkeys","Output":"BenchmarkExtract/ours-2 \t--- FAIL: BenchmarkExtract/ours-2\n"}` + "\n")
	dir := writeFixture(t, map[string]string{"host.json": out.String(), "steps.txt": "host\tok\t\n", "machine.txt": "CPU: x\n"})
	md, _, log := runReport(t, dir)
	rowOf := func(what string) string {
		for _, l := range strings.Split(md, "\n") {
			if strings.Contains(l, "| "+what+" |") {
				return l
			}
		}
		t.Errorf("no row %q in\n%s", what, md)
		return ""
	}
	for what, want := range map[string][]string{
		"Hash of a 64-byte range (vs hash/crc32 Castagnoli)":          {"10 ns ± 0.0%", "12.8 ns ± ", "1.27× [1.20, 1.40]", "✅ yes"},
		"Hash of a 128-byte range (vs hash/crc32 Castagnoli)":         {"1.08× [0.80, 1.30]", "❔ unclear", "median meets"},
		"Masked compare, 128 bytes, equal (vs bytes.Equal, unmasked)": {"0.88× [0.80, 0.95]", "❌ no"},
	} {
		row := rowOf(what)
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("row %q lacks %q", row, w)
			}
		}
	}
	for _, want := range []string{
		"1 goals met, 1 not met, 1 unclear",
		"BenchmarkHashLongestKey/ours's result line is malformed (" + filepath.Join(dir, "host.json") + " (package flowkeys) line 19: parsing measurement",
		"BenchmarkExtract/ours failed (--- FAIL in flowkeys's output)",
		"## Output lines that were not benchmark results",
		"golang.org/x/perf's benchmath",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if !strings.Contains(log, "not a benchmark result (parsing measurement") {
		t.Errorf("log %q does not name the malformed line", log)
	}
}

// FuzzAddText: any text is read without panicking; what is recorded is
// finite numbers, and every line left out is accounted for with its
// place; the rows and the report build from whatever was read.
func FuzzAddText(f *testing.F) {
	f.Add("BenchmarkHashRange64/ours-2 \t 4415647\t 27.05 ns/op\t 31.65 baseline-ns/op\t 1.17 x-vs-baseline\n")
	f.Add("BenchmarkX 1 NaN ns/op\nBenchmarkY-2 \t--- FAIL: BenchmarkY-2\n")
	f.Add("pkg: x\nBenchmarkA 1 2 ns/op 3 ns/op\nUnit ns/op better=higher\nBenchmarkB 10 1e400 ns/op\n")
	f.Add("BenchmarkTableLookup-2 10 1 cache-ns/lookup 2 nocache-ns/lookup 30 baseline-ns/lookup\n")
	f.Fuzz(func(t *testing.T, s string) {
		r := newResults()
		if err := r.addText("userdp", s, "fuzz"); err != nil {
			return
		}
		for name, runs := range r.Bench["userdp"] {
			if !strings.HasPrefix(name, "Benchmark") {
				t.Fatalf("name %q", name)
			}
			for _, run := range runs {
				for u, v := range run {
					if bad(v) {
						t.Fatalf("%s %s = %v recorded", name, u, v)
					}
				}
			}
		}
		for _, m := range r.Malformed {
			if m.Where == "" || m.Why == "" {
				t.Fatalf("malformed line without place or reason: %+v", m)
			}
		}
		var b strings.Builder
		rows := r.AllRows()
		writeReport(&b, r, rows, nil)
	})
}

// runReport runs the generator on a raw-results directory and returns the
// report, its path and what the generator logged.
func runReport(t *testing.T, dir string) (md, path, log string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "REPORT.md")
	var b strings.Builder
	if err := run(dir, path, &b); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data), path, b.String()
}
