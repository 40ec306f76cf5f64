package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
)

// scaleName matches BenchmarkTableScale's sweeps: flows=N/masks=M and
// microflows=K/flows=N.
var scaleName = regexp.MustCompile(`^BenchmarkTableScale/(flows|microflows)=(\d+)/(masks|flows)=(\d+)$`)

// scaleCharts draws how the hit path's cost grows: cpu-ns/lookup
// against the number of megaflows (a line per mask count) and against
// the number of microflows (a line per table size), when the results
// have them.
func (r *Results) scaleCharts(dir string) ([]Chart, error) {
	// by sweep ("flows" or "microflows"), then series name.
	sweeps := map[string]map[string][]xy{"flows": {}, "microflows": {}}
	for name := range r.Bench["userdp"] {
		m := scaleName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		x, err1 := strconv.ParseFloat(m[2], 64)
		s, err2 := strconv.Atoi(m[4])
		y, ok := r.Est("userdp", name, "cpu-ns/lookup")
		if err1 != nil || err2 != nil || !ok || !(y.Lo > 0) || !(x > 0) {
			continue
		}
		series := fmt.Sprintf("%d masks", s)
		if m[3] == "flows" {
			series = fmt.Sprintf("%d megaflows (100 masks)", s)
		}
		sweeps[m[1]][series] = append(sweeps[m[1]][series], xy{x, y})
	}
	var charts []Chart
	for _, c := range []struct {
		sweep, file, title, caption, xlabel string
	}{
		{"flows", "scale-flows.png", "Hit-path lookup vs installed megaflows, 100k microflows",
			"CPU per lookup (exact-match cache of 4,096 entries, the second-level cache of 2^19 once a worker needs it, then the megaflow table) against the megaflows installed, a line per mask count, 100,000 microflows in the traffic (`userdp` BenchmarkTableScale)", "megaflows (log scale)"},
		{"microflows", "scale-microflows.png", "Hit-path lookup vs distinct microflows, 100 masks",
			"CPU per lookup against the distinct microflows in the traffic (the caches' working set: 4,096 exact-match entries, then 2^19 second-level ones), for 1,000 and 1,000,000 megaflows over 100 masks (`userdp` BenchmarkTableScale)", "microflows (log scale)"},
	} {
		byName := sweeps[c.sweep]
		if len(byName) == 0 {
			continue
		}
		var names []string
		for n := range byName {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool {
			return len(names[i]) < len(names[j]) || len(names[i]) == len(names[j]) && names[i] < names[j]
		})
		ss := seriesOf(byName, names)
		if err := LineChart(filepath.Join(dir, c.file), c.title, c.xlabel, "CPU ns per lookup (log scale)", ss, true, true); err != nil {
			return nil, err
		}
		charts = append(charts, Chart{c.file, c.caption})
	}
	return charts, nil
}
