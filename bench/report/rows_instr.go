package main

import (
	"fmt"
	"regexp"
	"strconv"
)

// instrPkg is the name Load gives scripts/pipeline-instructions.sh's
// output, which bench.sh writes to userdp@instructions.txt.
const instrPkg = "userdp@instructions"

// instrLine is the script's line for one test binary: the single-run
// figure (the original method), the old pattern's single-run figure and
// the differential one when printed, and the comparator that ran.
var instrLine = regexp.MustCompile(`: (\d+) instructions/packet \(single run, N=(\d+)\)(?:; (\d+) instructions/packet \(single run, old pattern [^;]*?once\))?(?:; ([0-9.]+) instructions/packet \(differential.*?)? \(comparator (\w+)`)

// instructionsRow is the cache-hit pipeline's instructions per packet
// under cachegrind (issue 17's goal, ≤ 500). The goal is judged on the
// single-run figure, the script's original method; the differential
// figure, a second method, is shown beside it. A count has no interval:
// the verdict is the value's side of the goal.
func (r *Results) instructionsRow() Row {
	const g, what, goal = "userdp", "Cache-hit pipeline instructions per packet (cachegrind, scripts/pipeline-instructions.sh)", "≤ 500 (single run)"
	text, ok := r.Text[instrPkg]
	if !ok {
		if s, ok := r.Steps[instrPkg]; ok && s.Status != "ok" {
			return notMeasured(g, what, goal, fmt.Sprintf("step %s %s: %s", instrPkg, s.Status, s.Detail))
		}
		return notMeasured(g, what, goal, "scripts/pipeline-instructions.sh was not run")
	}
	m := instrLine.FindStringSubmatch(text)
	if m == nil {
		return notMeasured(g, what, goal, "no result line in scripts/pipeline-instructions.sh's output")
	}
	single, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return notMeasured(g, what, goal, fmt.Sprintf("pipeline-instructions.sh's figure %q: %v", m[1], err))
	}
	ours := fmt.Sprintf("%s instructions/packet (single run, N=%s)", m[1], m[2])
	note := "scripts/pipeline-instructions.sh: cachegrind's count of the pipeline's own code in `userdp` BenchmarkPipeline/cache (comparator " + m[5] +
		"); single run: one run's instructions / N, the script's original method (the benchmark's set-up is counted too), on which the goal is judged (a count: no interval)"
	if m[3] != "" {
		ours += fmt.Sprintf("; old pattern %s", m[3])
		note += "; method corrected on 2026-12-02: the run's -test.bench pattern was 'BenchmarkPipeline/^cache$', whose unanchored first part also ran BenchmarkPipelineCT and BenchmarkPipelineCTConns once with b.N=1, so that their fixtures were counted as this benchmark's set-up; it is now '^BenchmarkPipeline$/^cache$', and the old pattern's figure (\"old pattern\", not judged) is shown beside it"
	}
	if m[4] != "" {
		ours += fmt.Sprintf("; differential %s", m[4])
		note += "; differential, a second method added beside it: (I(7N)-I(N))/6N under GOGC=off, so that set-up and collections cancel"
	}
	row := Row{Group: g, What: what, Ours: ours, Baseline: "—", Ratio: Estimate{Center: single, Mean: single, Lo: single, Hi: single, N: 1},
		RatioUnit: " instructions/packet", Goal: goal, Note: note, GoalValue: 500, AtMost: true, Met: metNo}
	if single <= 500 {
		row.Met = metYes
	}
	return row
}
