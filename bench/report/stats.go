package main

import (
	"fmt"
	"math"
	"strconv"

	"golang.org/x/perf/benchmath"
)

// wantConfidence is the confidence level of the report's intervals when
// there are enough runs for it (6 or more: the interval is between two
// order statistics of the runs, as benchstat computes it).
const wantConfidence = 0.95

// Estimate is a figure with its confidence interval: the median of the
// runs (or of per-run ratios) and the interval benchmath gives for it,
// and the plain mean of the same runs beside it.
type Estimate struct {
	// Center is the median.
	Center float64
	// Mean is the plain mean of the runs (for an estimate derived from
	// others, the same derivation of their means).
	Mean float64
	// Lo and Hi bound the interval; they equal Center when there is
	// none.
	Lo, Hi float64
	// Confidence is the interval's actual confidence level, 0 when
	// there is no interval (a single run).
	Confidence float64
	// N is the number of runs the figure comes from (for an estimate
	// from two intervals, the smaller of the two).
	N int
}

// HasInterval reports whether the estimate has a confidence interval.
func (e Estimate) HasInterval() bool { return e.Confidence > 0 }

// summarize is the median of vs with its confidence interval, by
// benchmath's distribution-free method (AssumeNothing: the interval lies
// between order statistics of the sample). With 6 or more runs the
// interval is a 95% one; fewer runs cannot give 95% (the widest interval
// they have, from the smallest to the largest run, has confidence
// 1 − 2·0.5ⁿ: 75% for 3 runs, 93.8% for 5), so the interval is that range,
// labelled with its confidence. One run has no interval. ok is false when
// vs is empty. vs is sorted in place.
func summarize(vs []float64) (Estimate, bool) {
	n := len(vs)
	switch n {
	case 0:
		return Estimate{}, false
	case 1:
		return Estimate{Center: vs[0], Mean: vs[0], Lo: vs[0], Hi: vs[0], N: 1}, true
	}
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	mean := sum / float64(n)
	conf := wantConfidence
	if most := 1 - 2*math.Pow(0.5, float64(n)); most < conf {
		// Just below the range's confidence, so that rounding cannot
		// push the request past what the sample allows.
		conf = most - 1e-9
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(vs, &benchmath.DefaultThresholds), conf)
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) || math.IsNaN(s.Center) {
		// Not reached for finite inputs of 2 or more runs; kept so that
		// an unbounded interval is never shown as a finite one.
		return Estimate{Center: s.Center, Mean: mean, Lo: s.Center, Hi: s.Center, N: n}, true
	}
	return Estimate{Center: s.Center, Mean: mean, Lo: s.Lo, Hi: s.Hi, Confidence: s.Confidence, N: n}, true
}

// ratioOfIntervals is num/den estimated conservatively from the two
// figures' own intervals, for figures that come from different
// benchmarks (no per-run pairing): the interval runs from num.Lo/den.Hi to
// num.Hi/den.Lo, and its confidence is at least the sum of the two
// intervals' confidences minus one (both cover at once with at least that
// probability). Both must be positive.
func ratioOfIntervals(num, den Estimate) (Estimate, bool) {
	if !(num.Lo > 0 && den.Lo > 0) {
		return Estimate{}, false
	}
	e := Estimate{Center: num.Center / den.Center, Lo: num.Lo / den.Hi, Hi: num.Hi / den.Lo, N: min(num.N, den.N)}
	if den.Mean != 0 {
		e.Mean = num.Mean / den.Mean
	}
	if num.HasInterval() && den.HasInterval() {
		e.Confidence = math.Max(0, num.Confidence+den.Confidence-1)
	}
	if e.Confidence == 0 {
		e.Lo, e.Hi = e.Center, e.Center
	}
	return e, true
}

// inverse is k/x of a positive estimate (for example Mpps from ns per
// packet): the bounds swap, and the mean is k over the mean (the rate
// at the mean time, not the mean of the rates).
func (e Estimate) inverse(k float64) Estimate {
	inv := Estimate{Center: k / e.Center, Lo: k / e.Hi, Hi: k / e.Lo, Confidence: e.Confidence, N: e.N}
	if e.Mean != 0 {
		inv.Mean = k / e.Mean
	}
	return inv
}

// mean is the plain mean written after a figure and its interval, with
// f formatting it: ", mean 4.1 ns"; "" for one run (the mean is the
// figure).
func (e Estimate) mean(f func(float64) string) string {
	if e.N < 2 {
		return ""
	}
	return ", mean " + f(e.Mean)
}

// spread is the interval written after a figure: " ± 3%", the larger
// distance from the median to a bound, as benchstat prints it (the
// report's header says which confidence each number of runs gives), or
// " (1 run)" when there is no interval.
func (e Estimate) spread() string {
	if !e.HasInterval() {
		return fmt.Sprintf(" (%d run)", e.N)
	}
	pct := 0.0
	if e.Center != 0 {
		pct = 100 * math.Max(e.Hi-e.Center, e.Center-e.Lo) / math.Abs(e.Center)
	}
	return " ± " + strconv.FormatFloat(pct, 'f', pctPrecision(pct), 64) + "%"
}

func pctPrecision(p float64) int {
	if p < 1 {
		return 1
	}
	return 0
}

// confString writes a confidence level as a percentage: "75%", "93.8%".
func confString(c float64) string {
	return strconv.FormatFloat(100*c, 'g', 3, 64) + "%"
}

// interval writes an estimate's bounds as "[lo, hi]" with f formatting
// each value, followed by the confidence and the number of runs when the
// confidence is below 95%; "no interval (1 run)" for one run.
func (e Estimate) interval(f func(float64) string) string {
	if !e.HasInterval() {
		return fmt.Sprintf("no interval (%d run)", e.N)
	}
	s := "[" + f(e.Lo) + ", " + f(e.Hi) + "]"
	if e.Confidence < wantConfidence {
		s += fmt.Sprintf(" (%s, %d runs)", confString(e.Confidence), e.N)
	}
	return s
}

// Verdicts of a goal, judged on the interval.
const (
	metYes     = "yes"          // the whole interval meets the goal
	metNo      = "no"           // the whole interval misses it
	metUnclear = "unclear"      // the interval straddles it, or there is none
	metNone    = "—"            // the row has no goal
	metNotRun  = "not measured" // the row has no figure
)

// judge decides a goal on e's interval: atLeast goals (≥ v) are met when
// the interval's lower bound reaches v and missed when its upper bound
// stays below; at-most goals (≤ v) the other way round. An interval that
// straddles v, or a figure from one run (no interval), is unclear.
func judge(e Estimate, atLeast bool, v float64) string {
	if !e.HasInterval() {
		return metUnclear
	}
	lo, hi := e.Lo, e.Hi
	if !atLeast {
		lo, hi = -hi, -lo
		v = -v
	}
	switch {
	case lo >= v:
		return metYes
	case hi < v:
		return metNo
	}
	return metUnclear
}

// medianMeets says on which side of the goal the median lies, for an
// unclear verdict.
func medianMeets(e Estimate, atLeast bool, v float64) bool {
	if atLeast {
		return e.Center >= v
	}
	return e.Center <= v
}
