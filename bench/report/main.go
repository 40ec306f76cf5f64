// Command report turns the raw outputs of scripts/bench.sh (go test -json
// and plain benchmark output, the VM runs' output, steps.txt and
// machine.txt) into bench/REPORT.md and its PNG charts.
//
//	go run ./bench/report -in DIR -out bench/REPORT.md
//
// Every row compares ours with a baseline measured in the same run; a
// benchmark without results is listed as "not measured" with the reason.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func main() {
	in := flag.String("in", "", "directory of raw results written by scripts/bench.sh")
	out := flag.String("out", "bench/REPORT.md", "report to write; charts go next to it")
	flag.Parse()
	if *in == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: report -in DIR [-out bench/REPORT.md]")
		os.Exit(2)
	}
	if err := run(*in, *out, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(in, out string, log io.Writer) error {
	r, err := Load(in)
	if err != nil {
		return err
	}
	rows := r.AllRows()
	dir := filepath.Dir(out)
	charts, err := r.Charts(rows, dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	writeReport(&b, r, rows, charts)
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	yes, no, nm := tally(rows)
	fmt.Fprintf(log, "wrote %s (%d rows: %d goals met, %d not met, %d not measured) and %d chart(s)\n", out, len(rows), yes, no, nm, len(charts))
	return nil
}

func tally(rows []Row) (yes, no, notMeasured int) {
	for _, r := range rows {
		switch r.Met {
		case "yes":
			yes++
		case "no":
			no++
		case "not measured":
			notMeasured++
		}
	}
	return
}

// mdEscape keeps table cells on one line and pipes out of the syntax.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func fmtRatio(r Row) string {
	if r.Ratio == 0 {
		return "—"
	}
	u := r.RatioUnit
	if u == "" {
		u = "×"
	}
	return strconv.FormatFloat(r.Ratio, 'f', precision(r.Ratio), 64) + u
}

func precision(v float64) int {
	switch {
	case v >= 100:
		return 0
	case v >= 10:
		return 1
	}
	return 2
}

// Chart is a chart written next to the report.
type Chart struct{ File, Title string }

func writeReport(b *strings.Builder, r *Results, rows []Row, charts []Chart) {
	yes, no, nm := tally(rows)
	fmt.Fprintf(b, "# ovsdp benchmark report\n\n")
	fmt.Fprintf(b, "Written by `make bench` (`scripts/bench.sh` → `go run ./bench/report`). ")
	fmt.Fprintf(b, "Every baseline was measured in the same run as what it is compared with; figures are medians over the runs (`-count`).\n\n")
	fmt.Fprintf(b, "**%d goals met, %d not met, %d not measured** (of %d rows; rows without a goal are reported for information).\n\n", yes, no, nm, len(rows))
	fmt.Fprintf(b, "## Machine\n\n| | |\n|---|---|\n")
	for _, kv := range r.Machine {
		fmt.Fprintf(b, "| %s | %s |\n", mdEscape(kv[0]), mdEscape(kv[1]))
	}
	fmt.Fprintf(b, "\n## Results\n\n")
	fmt.Fprintf(b, "Ratio: how many times faster ours is than the baseline, unless the unit says otherwise.\n\n")
	fmt.Fprintf(b, "| # | what | ours | baseline | ratio | goal | met |\n|---|---|---|---|---|---|---|\n")
	group := ""
	for i, row := range rows {
		if row.Group != group {
			group = row.Group
			fmt.Fprintf(b, "| | **%s** | | | | | |\n", mdEscape(group))
		}
		metCell := row.Met
		switch row.Met {
		case "yes":
			metCell = "✅ yes"
		case "no":
			metCell = "❌ no"
		case "not measured":
			metCell = "⚠️ not measured"
		}
		ours, base := row.Ours, row.Baseline
		if ours == "" {
			ours = "—"
		}
		if base == "" {
			base = "—"
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s |\n", i+1, mdEscape(row.What), mdEscape(ours), mdEscape(base),
			fmtRatio(row), mdEscape(row.Goal), metCell)
	}
	fmt.Fprintf(b, "\n### Notes\n\n")
	for i, row := range rows {
		if row.Note != "" {
			fmt.Fprintf(b, "%d. %s\n", i+1, strings.ReplaceAll(row.Note, "\n", " "))
		}
	}
	if len(charts) > 0 {
		fmt.Fprintf(b, "\n## Charts\n\n")
		for _, c := range charts {
			fmt.Fprintf(b, "### %s\n\n![%s](%s)\n\n", c.Title, c.Title, c.File)
		}
	}
	var steps []Step
	for _, s := range r.Steps {
		steps = append(steps, s)
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].Name < steps[j].Name })
	if len(steps) > 0 {
		fmt.Fprintf(b, "## Steps of this run\n\n| step | status | detail |\n|---|---|---|\n")
		for _, s := range steps {
			fmt.Fprintf(b, "| %s | %s | %s |\n", mdEscape(s.Name), mdEscape(s.Status), mdEscape(s.Detail))
		}
		b.WriteString("\n")
	}
}

// masksName matches a sweep's sub-benchmark: .../masks=N/SERIES.
var masksName = regexp.MustCompile(`/masks=(\d+)/([^/]+)$`)

// Charts draws the charts the results allow and returns them.
func (r *Results) Charts(rows []Row, dir string) ([]Chart, error) {
	var charts []Chart
	// Ratios against goals.
	var bars []Bar
	for i, row := range rows {
		if !row.ChartRatio || row.Ratio <= 0 {
			continue
		}
		col := green
		if row.Met != "yes" {
			col = red
		}
		bars = append(bars, Bar{Label: fmt.Sprintf("%d. %s", i+1, shorten(row.What, 58)), Value: row.Ratio, Goal: row.GoalValue, Color: col,
			Text: fmt.Sprintf("%.3g×", row.Ratio)})
	}
	if len(bars) > 0 {
		c := Chart{"ratios.png", "Speed-up over the same-run baseline (black tick: goal; green: met)"}
		if err := BarChart(filepath.Join(dir, c.File), c.Title, "times faster than the baseline (log scale)", bars, true, 1); err != nil {
			return nil, err
		}
		charts = append(charts, c)
	}
	// Mpps per stage.
	var stages []Bar
	addNs := func(label, pkg, name, unit string) {
		if ns, ok := r.Metric(pkg, name, unit); ok && ns > 0 {
			stages = append(stages, Bar{Label: label, Value: 1e3 / ns, Text: fmt.Sprintf("%.3g Mpps (%s)", 1e3/ns, fmtNs(ns))})
		}
	}
	// addMppsOf adds a bar for a benchmark's metric in Mpps and reports
	// whether it had one.
	addMppsOf := func(label, pkg, name, unit string) bool {
		v, ok := r.Metric(pkg, name, unit)
		if ok {
			stages = append(stages, Bar{Label: label, Value: v, Color: orange, Text: fmt.Sprintf("%.3g Mpps", v)})
		}
		return ok
	}
	addMpps := func(label, pkg, name string) { addMppsOf(label, pkg, name, "Mpps") }
	addNs("extract (mixed packets)", "flowkeys", "BenchmarkExtract/ours", "ns/op")
	addNs("hash, 128-byte range", "flowkeys", "BenchmarkHashRange128/ours", "ns/op")
	addNs("masked compare, 128 bytes", "flowkeys", "BenchmarkEqualMasked128/vs-byte-loop/ours", "ns/op")
	addNs("lookup, cache on (100 masks)", "userdp", "BenchmarkTableLookup", "cache-ns/lookup")
	addNs("lookup, cache off (100 masks)", "userdp", "BenchmarkTableLookup", "nocache-ns/lookup")
	addNs("masked set ipv4(ttl)", "userdp", "BenchmarkSetIPv4/TTLOnly", "ns/masked-set")
	// The pipeline's bars are the fastest tenth of its chunks, as in
	// its table row, when it reports them.
	for _, p := range []struct{ label, name string }{
		{"whole pipeline, cache on", "BenchmarkPipeline/cache"},
		{"whole pipeline, cache off", "BenchmarkPipeline/nocache"},
	} {
		if !addMppsOf(p.label+" (p10 of chunks)", "userdp", p.name, "p10-Mpps") {
			addMpps(p.label, "userdp", p.name)
		}
	}
	addMpps("in-memory port I/O, batch 32", "userdp", "BenchmarkMemPipe/batch32")
	addMpps("AF_PACKET rx, TPACKET_V3 ring", "userdp", "BenchmarkNetdevRx/ring")
	addMpps("AF_PACKET rx, recvmmsg", "userdp", "BenchmarkNetdevRx/mmsg")
	addMpps("AF_XDP rx, copy mode", "userdp", "BenchmarkNetdevRx/xdp")
	addMpps("AF_PACKET tx, sendmmsg", "userdp", "BenchmarkNetdevTx/mmsg")
	addMpps("AF_XDP tx, copy mode", "userdp", "BenchmarkNetdevTx/xdp")
	if len(stages) > 0 {
		c := Chart{"stages.png", "Packets per second per stage, one core (blue: from ns/op; orange: measured Mpps; dashed: 10 Mpps target)"}
		if err := BarChart(filepath.Join(dir, c.File), c.Title, "million packets per second (log scale)", stages, true, 10); err != nil {
			return nil, err
		}
		charts = append(charts, c)
	}
	// Lookup time against the number of masks.
	type pt struct{ x, y float64 }
	series := map[string][]pt{}
	var pkgs []string
	for p := range r.Bench {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		for name := range r.Bench[p] {
			m := masksName.FindStringSubmatch(name)
			if m == nil {
				continue
			}
			n, _ := strconv.ParseFloat(m[1], 64)
			y, ok := r.Metric(p, name, "ns/lookup")
			if !ok {
				y, ok = r.Metric(p, name, "ns/op")
			}
			if ok {
				series[m[2]] = append(series[m[2]], pt{n, y})
			}
		}
	}
	if len(series) > 0 {
		var ss []Series
		var names []string
		for n := range series {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			pts := series[n]
			sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
			s := Series{Name: n}
			for _, p := range pts {
				s.Xs = append(s.Xs, p.x)
				s.Ys = append(s.Ys, p.y)
			}
			ss = append(ss, s)
		}
		c := Chart{"masks.png", "Time per packet against the number of masks, 1,000 flows (bench/sweep: userdp's whole pipeline vs extract + plain tuple-space lookup)"}
		if err := LineChart(filepath.Join(dir, c.File), "ns per packet vs number of masks, 1,000 flows", "masks (log scale)", "ns per packet (log scale)", ss, true, true); err != nil {
			return nil, err
		}
		charts = append(charts, c)
	}
	return charts, nil
}

func shorten(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return string(rs[:n-1]) + "…"
}
