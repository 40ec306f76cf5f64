package main

import (
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScaleRowsAndCharts: the table-growth goal is judged on the runs'
// own x-vs-1k; the big-cache row and the memory/put/dump row are for
// information; the sweeps give two line charts, one line per mask count
// and per table size.
func TestScaleRowsAndCharts(t *testing.T) {
	r := newResults()
	text := "pkg: github.com/ovsdp/ovsdp/userdp\n"
	for _, x := range []float64{0.18, 0.2, 0.19} {
		text += fmt.Sprintf("BenchmarkTableScale/goal-2 \t100\t5000 ns/op\t%g 1M-cpu-ns/lookup\t1900 1k-cpu-ns/lookup\t%g x-vs-1k\t460 bigcache-1M-cpu-ns/lookup\t310 bigcache-1k-cpu-ns/lookup\t0.674 bigcache-x-vs-1k\t460 bytes/megaflow\t16 bytes/cache-entry\t4500 1k-put-ns\t40000 1M-put-ns\t900 1M-dump-ns/flow\n", 1900/x, x)
	}
	for _, flows := range []int{1000, 1000000} {
		for _, masks := range []int{1, 100} {
			text += fmt.Sprintf("BenchmarkTableScale/flows=%d/masks=%d-2 \t100\t5000 ns/op\t%d cpu-ns/lookup\t1 Mlookups\n", flows, masks, flows/1000*masks+50)
		}
		for _, micro := range []int{1, 100000} {
			text += fmt.Sprintf("BenchmarkTableScale/microflows=%d/flows=%d-2 \t100\t5000 ns/op\t%d cpu-ns/lookup\t1 Mlookups\n", micro, flows, micro/100+20)
		}
	}
	if err := r.addText("userdp", text, "fixture"); err != nil {
		t.Fatal(err)
	}
	rows := r.scaleRows()
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(rows), rows)
	}
	if g := rows[0]; g.Met != metNo || g.Ratio.Center != 0.19 || !strings.Contains(g.Ours, "10 µs") || !strings.Contains(g.Baseline, "1.9 µs") {
		t.Errorf("goal row %+v", g)
	}
	if b := rows[1]; b.Met != metNone || b.Ratio.Center != 0.674 || !strings.Contains(b.Note, "1<<20") {
		t.Errorf("big-cache row %+v", b)
	}
	if m := rows[2]; m.Met != metNone || !strings.Contains(m.Ours, "460 B/megaflow, 16 B/cache entry") || !strings.Contains(m.Ours, "900 ns") || !strings.Contains(m.Baseline, "4.5 µs") {
		t.Errorf("memory row %+v", m)
	}
	dir := t.TempDir()
	charts, err := r.scaleCharts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 2 || charts[0].File != "scale-flows.png" || charts[1].File != "scale-microflows.png" {
		t.Fatalf("charts %+v", charts)
	}
	for _, c := range charts {
		f, err := os.Open(filepath.Join(dir, c.File))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", c.File, err)
		}
		f.Close()
	}
	// Without results: rows not measured, no charts.
	empty := newResults()
	for _, row := range empty.scaleRows() {
		if row.Met != metNotRun {
			t.Errorf("no results: %+v", row)
		}
	}
	if cs, err := empty.scaleCharts(dir); err != nil || len(cs) != 0 {
		t.Errorf("no results: charts %v %v", cs, err)
	}
}
