package main

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The charts are drawn with gonum.org/v1/plot and written as PNG at
// chartDPI, so that a chart's size in pixels is exactly what the caller
// asks for.

var (
	black  = color.RGBA{0, 0, 0, 255}
	dark   = color.RGBA{90, 90, 90, 255}
	green  = color.RGBA{46, 139, 87, 255}
	red    = color.RGBA{200, 60, 50, 255}
	amber  = color.RGBA{225, 170, 30, 255}
	blue   = color.RGBA{50, 100, 200, 255}
	orange = color.RGBA{230, 140, 20, 255}
	purple = color.RGBA{140, 70, 170, 255}
)

// palette colours the series of a line chart in order.
var palette = []color.RGBA{blue, orange, green, purple, red, dark}

const chartDPI = 96

// Pixel sizes of the charts: bar charts are barChartWidth wide and
// barChartHeight(n) high for n bars; line charts are lineChartW×lineChartH.
const (
	barChartWidth          = 1200
	barRowPx, barMarginsPx = 30, 130
	lineChartW, lineChartH = 900, 560
)

// barChartHeight is the height in pixels of a bar chart of n bars.
func barChartHeight(n int) int { return barMarginsPx + n*barRowPx }

// px is a length of n pixels at chartDPI.
func px(n int) vg.Length { return vg.Length(n) * vg.Inch / chartDPI }

// savePNG draws p on a w×h pixel image and writes it to path.
func savePNG(p *plot.Plot, path string, w, h int) error {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	c := vgimg.NewWith(vgimg.UseImage(img), vgimg.UseDPI(chartDPI))
	p.Draw(draw.New(c))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing chart: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("writing chart %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing chart %s: %w", path, err)
	}
	return nil
}

// ticks125 marks a log axis at 1, 2 and 5 times each power of ten, all
// labelled (plot.LogTicks labels the powers of ten only, too few for an
// axis spanning one or two decades).
type ticks125 struct{}

// Ticks implements plot.Ticker.
func (ticks125) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	if !(lo > 0) || !(hi > lo) {
		return ts
	}
	for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := d * m; v >= lo*0.9999 && v <= hi*1.0001 {
				ts = append(ts, plot.Tick{Value: v, Label: fmtTick(v)})
			}
		}
	}
	return ts
}

func fmtTick(v float64) string {
	switch {
	case v >= 1e6 && math.Mod(v, 1e6) == 0:
		return strconv.FormatFloat(v/1e6, 'g', -1, 64) + "M"
	case v >= 1e3 && math.Mod(v, 1e3) == 0:
		return strconv.FormatFloat(v/1e3, 'g', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// decades is the log axis [10^a, 10^b] around [lo, hi].
func decades(lo, hi float64) (float64, float64) {
	return math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
}

// Bar is one bar of a horizontal bar chart.
type Bar struct {
	Label string
	// Value is the bar's length; its interval is drawn as a whisker.
	Value Estimate
	// Goal draws a black tick at this value when > 0.
	Goal  float64
	Color color.RGBA
	// Text is written after the bar (the value by default).
	Text string
}

// hbars draws Bars as horizontal bars from the axis' minimum, row i at
// y = n-1-i (the first bar on top), with whiskers for the intervals, goal
// ticks, a dashed reference line and a text after each bar.
type hbars struct {
	bars []Bar
	base float64 // where bars start: the x axis' minimum
	ref  float64 // the dashed reference line, when > 0
}

// Plot implements plot.Plotter.
func (h *hbars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(h.bars)
	thin := draw.LineStyle{Color: black, Width: vg.Points(1)}
	if h.ref > 0 {
		dash := draw.LineStyle{Color: dark, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
		c.StrokeLine2(dash, trX(h.ref), trY(-0.5), trX(h.ref), trY(float64(n)-0.5))
	}
	txt := p.Y.Tick.Label
	txt.XAlign, txt.YAlign = draw.XLeft, draw.YCenter
	for i, b := range h.bars {
		y := float64(n - 1 - i)
		y0, y1, ym := trY(y-0.32), trY(y+0.32), trY(y)
		x0, x1 := trX(h.base), trX(b.Value.Center)
		col := b.Color
		if col == (color.RGBA{}) {
			col = blue
		}
		c.FillPolygon(col, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
		end := x1
		if b.Value.HasInterval() {
			lo, hi := trX(b.Value.Lo), trX(b.Value.Hi)
			cap := (y1 - y0) / 4
			c.StrokeLine2(thin, lo, ym, hi, ym)
			c.StrokeLine2(thin, lo, ym-cap, lo, ym+cap)
			c.StrokeLine2(thin, hi, ym-cap, hi, ym+cap)
			end = max(end, hi)
		}
		if b.Goal > 0 {
			g := trX(b.Goal)
			c.StrokeLine2(draw.LineStyle{Color: black, Width: vg.Points(3)}, g, trY(y-0.45), g, trY(y+0.45))
			end = max(end, g)
		}
		t := b.Text
		if t == "" {
			t = strconv.FormatFloat(b.Value.Center, 'g', 3, 64)
		}
		c.FillText(txt, vg.Point{X: end + vg.Points(5), Y: ym}, t)
	}
}

// BarChart draws horizontal bars, labelled on the left, on a log or
// linear x axis, with a dashed reference line at refLine when it is > 0.
// Bars with values that are not positive are left out on a log axis.
func BarChart(path, title, unit string, bars []Bar, logScale bool, refLine float64) error {
	var keep []Bar
	lo, hi := math.Inf(1), math.Max(refLine, 0)
	for _, b := range bars {
		if logScale && !(b.Value.Lo > 0) {
			continue
		}
		keep = append(keep, b)
		lo = math.Min(lo, math.Min(b.Value.Lo, b.Value.Center))
		hi = math.Max(hi, math.Max(b.Value.Hi, b.Goal))
		if b.Goal > 0 {
			lo = math.Min(lo, b.Goal)
		}
	}
	if len(keep) == 0 {
		return fmt.Errorf("chart %s: no bars to draw", path)
	}
	if refLine > 0 {
		lo = math.Min(lo, refLine)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = unit
	if logScale {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, ticks125{}
		a, _ := decades(lo, hi)
		// Room on the right for the text after the longest bar.
		p.X.Min, p.X.Max = a, hi*math.Pow(hi/a, 0.5)
	} else {
		p.X.Min, p.X.Max = 0, hi*1.45
	}
	labels := make([]string, len(keep))
	for i, b := range keep {
		labels[len(keep)-1-i] = b.Label
	}
	p.Add(plotter.NewGrid())
	p.Add(&hbars{bars: keep, base: p.X.Min, ref: refLine})
	p.NominalY(labels...)
	p.Y.Min, p.Y.Max = -0.6, float64(len(keep))-0.4
	return savePNG(p, path, barChartWidth, barChartHeight(len(keep)))
}

// Series is one line of a line chart: Ys[i] is the figure (with its
// interval) at Xs[i].
type Series struct {
	Name string
	Xs   []float64
	Ys   []Estimate
}

// errXY is a series as plotter.YErrorBars reads it.
type errXY struct {
	plotter.XYs
	plotter.YErrors
}

// LineChart draws series against a numeric x axis, with a legend and the
// intervals as error bars.
func LineChart(path, title, xUnit, yUnit string, series []Series, logX, logY bool) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xUnit, yUnit
	p.Legend.Top, p.Legend.Left = true, true
	points := 0
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	p.Add(plotter.NewGrid())
	for i, s := range series {
		if len(s.Xs) != len(s.Ys) {
			return fmt.Errorf("chart %s: series %s has %d x and %d y values", path, s.Name, len(s.Xs), len(s.Ys))
		}
		var d errXY
		for j, x := range s.Xs {
			y := s.Ys[j]
			if (logX && !(x > 0)) || (logY && !(y.Lo > 0)) || bad(x) || bad(y.Lo) || bad(y.Hi) {
				return fmt.Errorf("chart %s: series %s: point (%v, %v) cannot be drawn on this chart's axes", path, s.Name, x, y.Center)
			}
			d.XYs = append(d.XYs, plotter.XY{X: x, Y: y.Center})
			d.YErrors = append(d.YErrors, struct{ Low, High float64 }{y.Center - y.Lo, y.Hi - y.Center})
			xlo, xhi = math.Min(xlo, x), math.Max(xhi, x)
			ylo, yhi = math.Min(ylo, y.Lo), math.Max(yhi, y.Hi)
			points++
		}
		if len(d.XYs) == 0 {
			continue
		}
		col := palette[i%len(palette)]
		l, pts, err := plotter.NewLinePoints(d.XYs)
		if err != nil {
			return fmt.Errorf("chart %s: series %s: %w", path, s.Name, err)
		}
		l.Color, l.Width = col, vg.Points(2)
		pts.Color, pts.Shape, pts.Radius = col, draw.CircleGlyph{}, vg.Points(3)
		eb, err := plotter.NewYErrorBars(d)
		if err != nil {
			return fmt.Errorf("chart %s: series %s: %w", path, s.Name, err)
		}
		eb.Color = col
		p.Add(l, pts, eb)
		p.Legend.Add(s.Name, l, pts)
	}
	if points == 0 {
		return errors.New("chart " + path + ": no data")
	}
	if logX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, ticks125{}
		p.X.Min, p.X.Max = decades(xlo, xhi)
	}
	if logY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, ticks125{}
		p.Y.Min, p.Y.Max = decades(ylo, yhi)
	}
	return savePNG(p, path, lineChartW, lineChartH)
}

// masksName matches a sweep's sub-benchmark: .../masks=N/SERIES.
var masksName = regexp.MustCompile(`/masks=(\d+)/([^/]+)$`)

// Charts draws the charts the results allow and returns them.
func (r *Results) Charts(rows []Row, dir string) ([]Chart, error) {
	var charts []Chart
	// Ratios against goals.
	var bars []Bar
	for i, row := range rows {
		if !row.ChartRatio || !(row.Ratio.Lo > 0) {
			continue
		}
		col := amber
		switch row.Met {
		case metYes:
			col = green
		case metNo:
			col = red
		}
		f := func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
		bars = append(bars, Bar{Label: fmt.Sprintf("%d. %s", i+1, shorten(row.What, 64)), Value: row.Ratio, Goal: row.GoalValue, Color: col,
			Text: f(row.Ratio.Center) + "× [" + f(row.Ratio.Lo) + ", " + f(row.Ratio.Hi) + "]"})
	}
	if len(bars) > 0 {
		c := Chart{"ratios.png", "Speed-up over the same-run baseline, with its interval (black tick: goal; green: met, red: missed, amber: unclear)"}
		if err := BarChart(filepath.Join(dir, c.File), "Speed-up over the same-run baseline", "times faster than the baseline (log scale); whiskers: the confidence interval (its level: see the table)", bars, true, 1); err != nil {
			return nil, err
		}
		charts = append(charts, c)
	}
	// Mpps per stage.
	var stages []Bar
	addNs := func(label, pkg, name, unit string) {
		if ns, ok := r.Est(pkg, name, unit); ok && ns.Lo > 0 {
			mpps := ns.inverse(1e3)
			stages = append(stages, Bar{Label: label, Value: mpps, Text: fmt.Sprintf("%.3g Mpps (%s)", mpps.Center, nsE(ns))})
		}
	}
	// addMppsOf adds a bar for a benchmark's metric in Mpps and reports
	// whether it had one (a rate whose interval reaches 0 has no bar on
	// the log axis).
	addMppsOf := func(label, pkg, name, unit string) bool {
		v, ok := r.Est(pkg, name, unit)
		if ok && v.Lo > 0 {
			stages = append(stages, Bar{Label: label, Value: v, Color: orange, Text: mppsE(v)})
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
	addMpps("AF_PACKET rx, ring port (V2 slots / V3 blocks)", "userdp", "BenchmarkNetdevRx/ring")
	addMpps("AF_PACKET rx, recvmmsg", "userdp", "BenchmarkNetdevRx/mmsg")
	addMpps("AF_XDP rx, copy mode", "userdp", "BenchmarkNetdevRx/xdp")
	addMpps("AF_PACKET tx, sendmmsg", "userdp", "BenchmarkNetdevTx/mmsg")
	addMpps("AF_XDP tx, copy mode", "userdp", "BenchmarkNetdevTx/xdp")
	if len(stages) > 0 {
		c := Chart{"stages.png", "Packets per second per stage, one core, with intervals (blue: from ns/op; orange: measured Mpps; dashed: 10 Mpps target)"}
		if err := BarChart(filepath.Join(dir, c.File), "Packets per second per stage, one core", "million packets per second (log scale); whiskers: the confidence interval (its level: see the table)", stages, true, 10); err != nil {
			return nil, err
		}
		charts = append(charts, c)
	}
	// Lookup time against the number of masks, and the tracker's
	// against the number of connections.
	for _, chart := range []func(string) (Chart, bool, error){r.masksChart, r.ctChart} {
		if c, ok, err := chart(dir); err != nil {
			return nil, err
		} else if ok {
			charts = append(charts, c)
		}
	}
	// How the table's cost grows (chart_scale.go).
	sc, err := r.scaleCharts(dir)
	if err != nil {
		return nil, err
	}
	return append(charts, sc...), nil
}

// masksChart draws bench/sweep's time per packet against the number of
// masks, when the results have it.
func (r *Results) masksChart(dir string) (Chart, bool, error) {
	series := map[string][]xy{}
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
			n, err := strconv.ParseFloat(m[1], 64)
			if err != nil || !(n > 0) {
				continue
			}
			y, ok := r.Est(p, name, "ns/lookup")
			if !ok {
				y, ok = r.Est(p, name, "ns/op")
			}
			if ok && y.Lo > 0 {
				series[m[2]] = append(series[m[2]], xy{n, y})
			}
		}
	}
	if len(series) == 0 {
		return Chart{}, false, nil
	}
	names := make([]string, 0, len(series))
	for n := range series {
		names = append(names, n)
	}
	sort.Strings(names)
	ss := seriesOf(series, names)
	c := Chart{"masks.png", "Time per packet against the number of masks, 1,000 flows, with intervals (bench/sweep: userdp's whole pipeline vs extract + plain tuple-space lookup)"}
	if err := LineChart(filepath.Join(dir, c.File), "ns per packet vs number of masks, 1,000 flows", "masks (log scale)", "ns per packet (log scale)", ss, true, true); err != nil {
		return Chart{}, false, err
	}
	return c, true, nil
}

// xy is a point of a line chart.
type xy struct {
	x float64
	y Estimate
}

// seriesOf makes a line chart's series of the points of each name, in
// the order of names, each sorted by x.
func seriesOf(points map[string][]xy, names []string) []Series {
	var ss []Series
	for _, n := range names {
		pts := points[n]
		sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
		s := Series{Name: n}
		for _, p := range pts {
			s.Xs = append(s.Xs, p.x)
			s.Ys = append(s.Ys, p.y)
		}
		ss = append(ss, s)
	}
	return ss
}

func shorten(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return string(rs[:n-1]) + "…"
}
