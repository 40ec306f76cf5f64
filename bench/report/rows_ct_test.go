package main

import (
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCTRows: issue 15's speed rows from a fixture of six runs: the ct
// pipeline's ratio judged against 0.5, the lookups at each table size
// under both measures (every connection active, with the old method's
// figures in the note; 1,000 active) with the flatness verdicts
// computed from them, the footprint beside the 1,000-active one, the
// setup rates and the bytes per connection; a
// size without a result is "not measured" with the reason; the lookup
// chart is drawn.
func TestCTRows(t *testing.T) {
	var out strings.Builder
	line := func(pkg, s string) {
		fmt.Fprintf(&out, `{"Action":"output","Package":"github.com/ovsdp/ovsdp/%s","Output":"%s\n"}`+"\n", pkg, strings.ReplaceAll(s, "\t", `\t`))
	}
	for i, x := range []float64{0.52, 0.55, 0.53, 0.6, 0.51, 0.54} {
		line("userdp", fmt.Sprintf("BenchmarkPipelineCT-2 \t 1000 \t 300 ns/op \t %g cpu-ns/packet \t 40 no-ct-cpu-ns/packet \t %g x-of-no-ct \t 0 B/op \t 0 allocs/op", 40/x, x))
		line("userdp", fmt.Sprintf("BenchmarkPipelineCTConns-2 \t 1000 \t 300 ns/op \t %g cpu-ns/packet \t 50 no-ct-cpu-ns/packet \t %g x-of-no-ct \t 0 B/op \t 0 allocs/op", 50/(x-0.1), x-0.1))
		for _, n := range []int{1000, 10000, 1000000} { // no 100,000
			line("conntrack", fmt.Sprintf("BenchmarkEstablished/conns=%d-2 \t 1000 \t 99 ns/op \t %d cpu-ns/op", n, map[int]int{1000: 30, 10000: 40, 1000000: 240}[n]+i))
			line("conntrack", fmt.Sprintf("BenchmarkEstablishedBurst/conns=%d-2 \t 1000 \t 99 ns/op \t %d cpu-ns/op", n, map[int]int{1000: 40, 10000: 45, 1000000: 90}[n]+i))
		}
		line("conntrack", fmt.Sprintf("BenchmarkEstablishedHot-2 \t 1000 \t 99 ns/op \t %d cpu-ns/op-1k \t 30 cpu-ns/op-10k \t 31 cpu-ns/op-100k \t %d cpu-ns/op-1M \t %g x-1M-of-1k", 26+i, 34+i, float64(34+i)/float64(26+i)))
		line("conntrack", "BenchmarkEstablishedFootprint-2 \t 1000 \t 0.2 ns/op \t 942 bucket-pages-1M \t 8 bucket-pages-1k \t 1034 conn-pages-1M \t 65 conn-pages-1k \t 2.051 lines/lookup-1M \t 2.052 lines/lookup-1k")
		line("conntrack", fmt.Sprintf("BenchmarkSetup/tcp-2 \t 1000 \t 900 ns/op \t %d conns/s", 1100000+i*1000))
		line("conntrack", fmt.Sprintf("BenchmarkSetup/udp-2 \t 1000 \t 800 ns/op \t %d conns/s", 1200000+i*1000))
		line("conntrack", fmt.Sprintf("BenchmarkBytesPerConn-2 \t 1 \t 9 ns/op \t %d bytes/conn", 330+i))
	}
	dir := writeFixture(t, map[string]string{"host.json": out.String(), "steps.txt": "host\tok\t\ngenl@vm-ct\tok\t\n", "machine.txt": "CPU: x\n",
		"genl@vm-ct.txt": "BenchmarkIntegrationCTSetup \t 1 \t 5 ns/op \t 40000 kernel-conns/s \t 200000 ours-conns/s \t 320 kernel-bytes/conn \t 330 ours-bytes/conn\n"})
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	byWhat := r.rowsByWhat()
	p := byWhat["Established-connection pipeline (extract, ct, recirc, lookup hit, output) vs the no-ct pipeline"]
	if p.Met != metYes || p.Ratio.Center != 0.535 || !strings.Contains(p.Baseline, "40 ns") || !strings.Contains(p.Ours, "mean") {
		t.Errorf("ct pipeline row %+v", p)
	}
	if c := byWhat["Established-connection pipeline over 1,000 connections (shuffled) vs the no-ct pipeline"]; c.Met != metNone || c.Ratio.Center < 0.4349 || c.Ratio.Center > 0.4351 || !strings.Contains(c.Baseline, "50 ns") || !strings.Contains(c.Note, "6 runs") {
		t.Errorf("ct pipeline over 1,000 connections row %+v", c)
	}
	for what, want := range map[string]string{
		"ct lookup of an established connection, 1,000 tracked":     "32.5 ns ± ",
		"ct lookup of an established connection, 1,000,000 tracked": "242 ns ± ",
	} {
		if row := byWhat[what]; !strings.HasPrefix(row.Ours, want) || row.Met != metNone {
			t.Errorf("%s: %+v, want %q", what, row, want)
		}
	}
	if row := byWhat["ct lookup of an established connection, 1,000,000 tracked"]; !strings.Contains(row.Note, "7.5× the 1,000-connection lookup") || !strings.Contains(row.Note, "at most 16,384 distinct connections") || !strings.Contains(row.Note, "1M 231 ns") {
		t.Errorf("1M lookup note %q", row.Note)
	}
	// Flat: judged on 1M/1k against 1.5. Every connection active: 242/32.5, no.
	if row := byWhat["ct lookup flat from 1,000 to 1,000,000 tracked connections, every connection active"]; row.Met != metNo || row.Ratio.Center < 7 || row.Ratio.Center > 8 || row.GoalValue != 1.5 || !row.AtMost {
		t.Errorf("flat, every connection: %+v", row)
	}
	// In bursts: a row of its own right after, judged the same way: 92.5/42.5, no.
	burstWhat := "ct lookup flat from 1,000 to 1,000,000 tracked connections, every connection active, in bursts of 32 as userdp's pipeline runs it"
	if row := byWhat[burstWhat]; row.Met != metNo || row.Ratio.Center < 2.1 || row.Ratio.Center > 2.3 || row.GoalValue != 1.5 || !row.AtMost ||
		!strings.HasPrefix(row.Ours, "92.5 ns ± ") || !strings.HasPrefix(row.Baseline, "42.5 ns ± ") || !strings.Contains(row.Note, "BenchmarkEstablishedBurst") {
		t.Errorf("flat, every connection, in bursts: %+v", row)
	}
	all := r.AllRows()
	for i, row := range all {
		if row.What == "ct lookup flat from 1,000 to 1,000,000 tracked connections, every connection active" && (i+1 == len(all) || all[i+1].What != burstWhat) {
			t.Errorf("the burst row is not right after the one-by-one row")
		}
	}
	// 1,000 active: each run's own ratio, 34/26 to 39/31, all within 1.5: yes.
	if row := byWhat["ct lookup flat from 1,000 to 1,000,000 tracked connections, 1,000 active"]; row.Met != metYes || row.Ratio.N != 6 || row.Ratio.Hi > 1.5 {
		t.Errorf("flat, 1,000 active: %+v", row)
	}
	// The footprint beside it: counts, for information.
	if row := byWhat["ct lookup's footprint, 1,000 active of 1,000,000 vs of 1,000 tracked: cache lines per lookup, 4 KB pages of the 1,000 lookups (counts)"]; row.Ours != "2.05 lines/lookup; 942 bucket + 1,034 connection pages (1,000,000)" ||
		row.Baseline != "2.05 lines/lookup; 8 bucket + 65 connection pages (1,000)" || row.Met != metNone || row.Ratio.N != 0 {
		t.Errorf("footprint row %+v", row)
	}
	if row := byWhat["ct lookup of an established connection, 1,000 active of 1,000,000 tracked"]; !strings.HasPrefix(row.Ours, "36.5 ns ± ") {
		t.Errorf("hot 1M row %+v", row)
	}
	if row := byWhat["ct lookup of an established connection, 100,000 tracked"]; row.Met != metNotRun || !strings.Contains(row.Note, "BenchmarkEstablished/conns=100000") {
		t.Errorf("missing size: %+v", row)
	}
	if row := byWhat["ct setup: new TCP connections committed per second, one core"]; !strings.HasPrefix(row.Ours, "1.1 Mconns/s ± ") {
		t.Errorf("setup row %+v", row)
	}
	if row := byWhat["ct memory per committed connection (heap, 100,000 connections)"]; !strings.HasPrefix(row.Ours, "332 bytes ± ") || !strings.Contains(row.Ours, "mean 332 bytes") {
		t.Errorf("bytes row %+v", row)
	}
	if row := byWhat["ct setup in the VM: new TCP connections committed per second, ours vs the kernel's conntrack"]; row.Ours != "200 kconns/s (1 run)" ||
		row.Baseline != "40 kconns/s (1 run) (kernel)" || row.Ratio.Center != 5 || row.Met != metNone {
		t.Errorf("kernel setup row %+v", row)
	}
	if row := byWhat["ct memory per connection in the VM, ours vs the kernel's conntrack"]; row.Ours != "330 bytes (1 run)" || !strings.HasPrefix(row.Baseline, "320 bytes") {
		t.Errorf("kernel memory row %+v", row)
	}
	charts := t.TempDir()
	cs, err := r.Charts(r.AllRows(), charts)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range cs {
		if c.File == "ct_lookup.png" {
			found = true
		}
	}
	f, err := os.Open(filepath.Join(charts, "ct_lookup.png"))
	if err != nil || !found {
		t.Fatalf("no ct lookup chart (%v, listed %v)", err, found)
	}
	defer f.Close()
	if img, err := png.Decode(f); err != nil || img.Bounds().Dx() != lineChartW {
		t.Errorf("ct chart: %v", err)
	}
}

// TestMeanBesideMedian: every figure the report writes has the runs'
// plain mean after its interval, ratios included, and estimates derived
// from others derive their means the same way.
func TestMeanBesideMedian(t *testing.T) {
	e, _ := summarize([]float64{10, 11, 30})
	if got := nsE(e); got != "11 ns ± 173%, mean 17 ns" {
		t.Errorf("nsE = %q", got)
	}
	if got := fmtRatio(Row{Ratio: e}); got != "11.0× [10.0, 30.0] (75%, 3 runs), mean 17.0×" {
		t.Errorf("fmtRatio = %q", got)
	}
	if got := mppsE(e); !strings.HasSuffix(got, ", mean 17 Mpps") {
		t.Errorf("mppsE = %q", got)
	}
	one, _ := summarize([]float64{5})
	if got := nsE(one); got != "5 ns (1 run)" {
		t.Errorf("one run: %q (no mean: it is the figure)", got)
	}
	if inv := e.inverse(1e3); inv.Mean != 1e3/17 {
		t.Errorf("inverse mean %v", inv.Mean)
	}
	den, _ := summarize([]float64{2, 2, 4})
	if x, ok := ratioOfIntervals(e, den); !ok || x.Mean != 17/(8.0/3) {
		t.Errorf("ratio of intervals mean %v", x.Mean)
	}
}

// TestCTFootprintHotPages: with BenchmarkEstablishedFootprint's
// hot-pages metrics (since ctslab's hot cache), the footprint row shows
// the hot cache's pages between the buckets' and the connections'.
func TestCTFootprintHotPages(t *testing.T) {
	var out strings.Builder
	for range 3 {
		fmt.Fprintf(&out, `{"Action":"output","Package":"github.com/ovsdp/ovsdp/conntrack","Output":"%s\n"}`+"\n",
			`BenchmarkEstablishedFootprint-2 \t 1000 \t 0.2 ns/op \t 6 bucket-pages-1M \t 8 bucket-pages-1k \t 8 hot-pages-1M \t 0 hot-pages-1k \t 1000 conn-pages-1M \t 65 conn-pages-1k \t 2.009 lines/lookup-1M \t 2.034 lines/lookup-1k`)
		fmt.Fprintf(&out, `{"Action":"output","Package":"github.com/ovsdp/ovsdp/conntrack","Output":"%s\n"}`+"\n",
			`BenchmarkEstablishedHot-2 \t 1000 \t 99 ns/op \t 26 cpu-ns/op-1k \t 27 cpu-ns/op-10k \t 28 cpu-ns/op-100k \t 30 cpu-ns/op-1M \t 1.15 x-1M-of-1k`)
	}
	dir := writeFixture(t, map[string]string{"host.json": out.String(), "steps.txt": "host\tok\t\n", "machine.txt": "CPU: x\n"})
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	row := r.rowsByWhat()["ct lookup's footprint, 1,000 active of 1,000,000 vs of 1,000 tracked: cache lines per lookup, 4 KB pages of the 1,000 lookups (counts)"]
	if row.Ours != "2.01 lines/lookup; 6 bucket + 8 hot-cache + 1,000 connection pages (1,000,000)" ||
		row.Baseline != "2.03 lines/lookup; 8 bucket + 0 hot-cache + 65 connection pages (1,000)" {
		t.Errorf("footprint row %+v", row)
	}
}
