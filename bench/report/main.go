// Command report turns the raw outputs of scripts/bench.sh (go test -json
// and plain benchmark output, the VM runs' output, steps.txt and
// machine.txt) into bench/REPORT.md and its PNG charts.
//
//	go run ./bench/report -in DIR -out bench/REPORT.md
//
// Every row compares ours with a baseline measured in the same run; a
// benchmark without results is listed as "not measured" with the reason.
// golang.org/x/perf's benchfmt reads the benchmark lines and its benchmath
// gives every figure's median with a confidence interval (stats.go); a
// goal is judged on the interval, not the median alone. The charts are
// drawn with gonum.org/v1/plot (chart.go).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	yes, no, unclear, nm := tally(rows)
	fmt.Fprintf(log, "wrote %s (%d rows: %d goals met, %d not met, %d unclear, %d not measured) and %d chart(s)\n", out, len(rows), yes, no, unclear, nm, len(charts))
	for _, m := range r.Malformed {
		fmt.Fprintf(log, "report: %s: not a benchmark result (%s): %s\n", m.Where, m.Why, m.Line)
	}
	return nil
}

// tally counts the rows by verdict.
func tally(rows []Row) (yes, no, unclear, notMeasured int) {
	for _, r := range rows {
		switch r.Met {
		case metYes:
			yes++
		case metNo:
			no++
		case metUnclear:
			unclear++
		case metNotRun:
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

// fmtRatio writes a row's ratio with its interval: "3.84× [3.70, 3.95]".
func fmtRatio(r Row) string {
	if r.Ratio.N == 0 {
		return "—"
	}
	u := r.RatioUnit
	if u == "" {
		u = "×"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', precision(v), 64) }
	return f(r.Ratio.Center) + u + " " + r.Ratio.interval(f) + r.Ratio.mean(func(v float64) string { return f(v) + u })
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

// metCell is a row's verdict as the table shows it.
func metCell(r Row) string {
	switch r.Met {
	case metYes:
		return "✅ yes"
	case metNo:
		return "❌ no"
	case metNotRun:
		return "⚠️ not measured"
	case metUnclear:
		side := "misses"
		if r.MedianMeets {
			side = "meets"
		}
		if !r.Ratio.HasInterval() {
			return fmt.Sprintf("❔ unclear: %d run, no interval (the figure %s the goal)", r.Ratio.N, side)
		}
		return "❔ unclear: the interval straddles the goal (the median " + side + " it)"
	}
	return r.Met
}

// Chart is a chart written next to the report.
type Chart struct{ File, Title string }

func writeReport(b *strings.Builder, r *Results, rows []Row, charts []Chart) {
	yes, no, unclear, nm := tally(rows)
	fmt.Fprintf(b, "# ovsdp benchmark report\n\n")
	fmt.Fprintf(b, "Written by `make bench` (`scripts/bench.sh` → `go run ./bench/report`). ")
	fmt.Fprintf(b, "Every baseline was measured in the same run as what it is compared with.\n\n")
	fmt.Fprintf(b, "**%d goals met, %d not met, %d unclear, %d not measured** (of %d rows; rows without a goal are reported for information).\n\n", yes, no, unclear, nm, len(rows))
	b.WriteString(statsMethod)
	fmt.Fprintf(b, "## Machine\n\n| | |\n|---|---|\n")
	for _, kv := range r.Machine {
		fmt.Fprintf(b, "| %s | %s |\n", mdEscape(kv[0]), mdEscape(kv[1]))
	}
	fmt.Fprintf(b, "\n## Results\n\n")
	fmt.Fprintf(b, "Ratio: how many times faster ours is than the baseline, unless the unit says otherwise, with its interval in brackets.\n\n")
	fmt.Fprintf(b, "| # | what | ours | baseline | ratio | goal | met |\n|---|---|---|---|---|---|---|\n")
	group := ""
	for i, row := range rows {
		if row.Group != group {
			group = row.Group
			fmt.Fprintf(b, "| | **%s** | | | | | |\n", mdEscape(group))
		}
		ours, base := row.Ours, row.Baseline
		if ours == "" {
			ours = "—"
		}
		if base == "" {
			base = "—"
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s |\n", i+1, mdEscape(row.What), mdEscape(ours), mdEscape(base),
			mdEscape(fmtRatio(row)), mdEscape(row.Goal), metCell(row))
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
	if len(r.Malformed) > 0 {
		fmt.Fprintf(b, "## Output lines that were not benchmark results\n\n| where | benchmark | what is wrong | line |\n|---|---|---|---|\n")
		for _, m := range r.Malformed {
			fmt.Fprintf(b, "| %s | %s | %s | `%s` |\n", mdEscape(m.Where), mdEscape(m.Name), mdEscape(m.Why), mdEscape(strings.ReplaceAll(m.Line, "`", "'")))
		}
		b.WriteString("\n")
	}
}

// statsMethod is the report's paragraph on its statistics.
const statsMethod = `Every figure is the median of the runs (` + "`-count`" + `) with its confidence interval, computed by golang.org/x/perf's benchmath (distribution-free: the interval lies between two order statistics of the runs). ` +
	`"± x%" is the larger distance from the median to a bound; "mean" after it is the plain mean of the same runs (the median resists a run disturbed by the shared host, the mean shows it; for a rate derived from a time, the rate at the mean time). With 6 runs or more the intervals are 95% ones; fewer runs cannot give 95%, and the interval shown is then the range of the runs, with the confidence it has (1 − 2·0.5ⁿ: 75% for 3 runs, 93.8% for 5); one run has no interval. ` +
	`A ratio of two figures measured in the same run is the median of the runs' own ratios, with its interval; a ratio of figures from different benchmarks is the ratio of the medians, its interval from the lower bound of one over the upper bound of the other and back (its confidence is at least the sum of the two confidences minus one). ` +
	`A goal is met (✅) when the whole interval meets it and missed (❌) when the whole interval misses it; when the interval straddles the goal, or there is only one run, the verdict is unclear (❔) and says on which side the median lies.

`
