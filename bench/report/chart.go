package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// A small chart renderer on the standard library's image package, with
// basicfont's 7×13 bitmap face for text.

var (
	white  = color.RGBA{255, 255, 255, 255}
	black  = color.RGBA{0, 0, 0, 255}
	grey   = color.RGBA{200, 200, 200, 255}
	dark   = color.RGBA{90, 90, 90, 255}
	green  = color.RGBA{46, 139, 87, 255}
	red    = color.RGBA{200, 60, 50, 255}
	blue   = color.RGBA{50, 100, 200, 255}
	orange = color.RGBA{230, 140, 20, 255}
	purple = color.RGBA{140, 70, 170, 255}
)

// palette colours the series of a line chart in order.
var palette = []color.RGBA{blue, orange, green, purple, red, dark}

const charW, charH = 7, 13 // basicfont.Face7x13's advance and height

type canvas struct{ img *image.RGBA }

func newCanvas(w, h int) *canvas {
	c := &canvas{img: image.NewRGBA(image.Rect(0, 0, w, h))}
	c.fill(0, 0, w, h, white)
	return c
}

func (c *canvas) fill(x0, y0, x1, y1 int, col color.RGBA) {
	if x0 > x1 {
		x0, x1 = x1, x0
	}
	if y0 > y1 {
		y0, y1 = y1, y0
	}
	r := image.Rect(x0, y0, x1, y1).Intersect(c.img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c.img.SetRGBA(x, y, col)
		}
	}
}

// line draws a line of the given thickness (Bresenham, square pen).
func (c *canvas) line(x0, y0, x1, y1, thick int, col color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		c.fill(x0-thick/2, y0-thick/2, x0-thick/2+thick, y0-thick/2+thick, col)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

// dashed draws a dashed horizontal or vertical line.
func (c *canvas) dashed(x0, y0, x1, y1 int, col color.RGBA) {
	n := max(abs(x1-x0), abs(y1-y0))
	for i := 0; i <= n; i++ {
		if i%8 < 5 {
			x := x0 + (x1-x0)*i/max(n, 1)
			y := y0 + (y1-y0)*i/max(n, 1)
			c.fill(x, y, x+2, y+2, col)
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// asciiFor replaces what basicfont cannot draw.
var asciiFor = strings.NewReplacer("µ", "u", "…", "...", "×", "x", "≥", ">=", "≤", "<=", "—", "-", "→", "->")

// text draws s with its top-left corner at (x, y).
func (c *canvas) text(x, y int, s string, col color.RGBA) {
	s = asciiFor.Replace(s)
	d := font.Drawer{Dst: c.img, Src: image.NewUniform(col), Face: basicfont.Face7x13,
		Dot: fixed.P(x, y+basicfont.Face7x13.Ascent)}
	d.DrawString(s)
}

func textWidth(s string) int { return len([]rune(asciiFor.Replace(s))) * charW }

func (c *canvas) textRight(x, y int, s string, col color.RGBA) { c.text(x-textWidth(s), y, s, col) }
func (c *canvas) textCenter(x, y int, s string, col color.RGBA) {
	c.text(x-textWidth(s)/2, y, s, col)
}

func (c *canvas) save(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing chart: %w", err)
	}
	if err := png.Encode(f, c.img); err != nil {
		f.Close()
		return fmt.Errorf("writing chart %s: %w", path, err)
	}
	return f.Close()
}

// axis maps values to pixels, linearly or logarithmically.
type axis struct {
	lo, hi   float64
	log      bool
	p0, p1   int // pixel positions of lo and hi
	ticks    []float64
	tickFmt  func(float64) string
	unitName string
}

func (a *axis) pos(v float64) int {
	var f float64
	if a.log {
		v = math.Max(v, a.lo)
		f = (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	} else {
		f = (v - a.lo) / (a.hi - a.lo)
	}
	if math.IsNaN(f) {
		f = 0
	}
	f = math.Max(-0.02, math.Min(1.02, f))
	return a.p0 + int(math.Round(f*float64(a.p1-a.p0)))
}

// niceLinear returns an axis from 0 to a round value above hi with about
// five ticks.
func niceLinear(hi float64) (top float64, ticks []float64) {
	if hi <= 0 || math.IsNaN(hi) || math.IsInf(hi, 0) {
		hi = 1
	}
	raw := hi / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := p
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			step = m * p
			break
		}
	}
	top = math.Ceil(hi/step) * step
	for v := 0.0; v <= top+step/2; v += step {
		ticks = append(ticks, v)
	}
	return top, ticks
}

// niceLog returns a log axis covering [lo, hi] on decades with 1-2-5
// ticks.
func niceLog(lo, hi float64) (a, b float64, ticks []float64) {
	if lo <= 0 || math.IsNaN(lo) {
		lo = hi / 10
	}
	if hi <= lo {
		hi = lo * 10
	}
	a = math.Pow(10, math.Floor(math.Log10(lo)))
	b = math.Pow(10, math.Ceil(math.Log10(hi)))
	for d := a; d < b*1.01; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := d * m; v <= b*1.0001 && v >= a {
				ticks = append(ticks, v)
			}
		}
	}
	return a, b, ticks
}

func fmtTick(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1e6 && math.Mod(v, 1e6) == 0:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3 && math.Mod(v, 1e3) == 0:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}

// Bar is one bar of a horizontal bar chart.
type Bar struct {
	Label string
	Value float64
	// Goal draws a marker at this value when > 0.
	Goal  float64
	Color color.RGBA
	// Text is written after the bar (the value by default).
	Text string
}

// BarChart draws horizontal bars with their labels on the left.
func BarChart(path, title, unit string, bars []Bar, logScale bool, refLine float64) error {
	labelW := 0
	for _, b := range bars {
		labelW = max(labelW, textWidth(b.Label))
	}
	const rowH, top, right, bottom = 26, 48, 170, 50
	left := labelW + 20
	w := max(left+520+right, textWidth(title)+40)
	h := top + len(bars)*rowH + bottom
	c := newCanvas(w, h)
	c.text(12, 12, title, black)
	hi := refLine
	lo := math.Inf(1)
	for _, b := range bars {
		hi = math.Max(hi, math.Max(b.Value, b.Goal))
		if b.Value > 0 {
			lo = math.Min(lo, b.Value)
		}
		if b.Goal > 0 {
			lo = math.Min(lo, b.Goal)
		}
	}
	ax := axis{log: logScale, p0: left, p1: w - right}
	if logScale {
		ax.lo, ax.hi, ax.ticks = niceLog(lo, hi)
	} else {
		ax.hi, ax.ticks = niceLinear(hi * 1.05)
	}
	y0, y1 := top, top+len(bars)*rowH
	for _, t := range ax.ticks {
		x := ax.pos(t)
		c.fill(x, y0, x+1, y1, grey)
		c.textCenter(x, y1+6, fmtTick(t), dark)
	}
	c.textCenter((ax.p0+ax.p1)/2, y1+26, unit, black)
	if refLine > 0 {
		x := ax.pos(refLine)
		c.dashed(x, y0-6, x, y1, dark)
	}
	for i, b := range bars {
		y := top + i*rowH
		c.textRight(left-8, y+6, b.Label, black)
		col := b.Color
		if col == (color.RGBA{}) {
			col = blue
		}
		base := ax.p0
		if b.Value > 0 || !logScale {
			c.fill(base, y+4, ax.pos(b.Value), y+rowH-4, col)
		}
		txt := b.Text
		if txt == "" {
			txt = fmt.Sprintf("%.3g", b.Value)
		}
		c.text(ax.pos(b.Value)+5, y+6, txt, black)
		if b.Goal > 0 {
			x := ax.pos(b.Goal)
			c.fill(x-1, y+1, x+2, y+rowH-1, black)
		}
	}
	c.line(ax.p0, y0, ax.p0, y1, 1, black)
	c.line(ax.p0, y1, ax.p1, y1, 1, black)
	return c.save(path)
}

// Series is one line of a line chart.
type Series struct {
	Name   string
	Xs, Ys []float64
}

// LineChart draws series against a numeric x axis, with a legend.
func LineChart(path, title, xUnit, yUnit string, series []Series, logX, logY bool) error {
	const w, h, left, right, top, bottom = 820, 490, 80, 200, 58, 56
	c := newCanvas(w, h)
	c.text(12, 12, title, black)
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for i := range s.Xs {
			xlo, xhi = math.Min(xlo, s.Xs[i]), math.Max(xhi, s.Xs[i])
			ylo, yhi = math.Min(ylo, s.Ys[i]), math.Max(yhi, s.Ys[i])
		}
	}
	if math.IsInf(xlo, 0) {
		return fmt.Errorf("chart %s: no data", path)
	}
	ax := axis{log: logX, p0: left, p1: w - right}
	if logX {
		ax.lo, ax.hi, ax.ticks = niceLog(xlo, xhi)
	} else {
		ax.hi, ax.ticks = niceLinear(xhi)
	}
	ay := axis{log: logY, p0: h - bottom, p1: top}
	if logY {
		ay.lo, ay.hi, ay.ticks = niceLog(ylo, yhi)
	} else {
		ay.hi, ay.ticks = niceLinear(yhi * 1.05)
	}
	for _, t := range ax.ticks {
		x := ax.pos(t)
		c.fill(x, top, x+1, h-bottom, grey)
		c.textCenter(x, h-bottom+6, fmtTick(t), dark)
	}
	for _, t := range ay.ticks {
		y := ay.pos(t)
		c.fill(left, y, w-right, y+1, grey)
		c.textRight(left-6, y-6, fmtTick(t), dark)
	}
	c.line(left, top, left, h-bottom, 1, black)
	c.line(left, h-bottom, w-right, h-bottom, 1, black)
	c.textCenter((left+w-right)/2, h-bottom+26, xUnit, black)
	c.text(8, top-18, yUnit, black)
	for i, s := range series {
		col := palette[i%len(palette)]
		for j := range s.Xs {
			x, y := ax.pos(s.Xs[j]), ay.pos(s.Ys[j])
			if j > 0 {
				c.line(ax.pos(s.Xs[j-1]), ay.pos(s.Ys[j-1]), x, y, 2, col)
			}
			c.fill(x-3, y-3, x+4, y+4, col)
		}
		ly := top + 10 + i*20
		c.fill(w-right+14, ly+4, w-right+34, ly+8, col)
		c.text(w-right+40, ly, s.Name, black)
	}
	return c.save(path)
}
