package report

import (
	"math"
)

// Chart geometry shared by the x/y charts: a fixed canvas with margins for
// tick labels and axis titles.
const (
	chartW   = 760
	chartH   = 320
	marginL  = 64
	marginR  = 20
	marginT  = 24
	marginB  = 52
	tickLen  = 4
	labelGap = 8
)

// scale maps a data range onto a pixel range.
type scale struct {
	d0, d1 float64 // data
	p0, p1 float64 // pixels
}

func (s scale) at(v float64) float64 {
	if s.d1 == s.d0 {
		return (s.p0 + s.p1) / 2
	}
	return s.p0 + (v-s.d0)/(s.d1-s.d0)*(s.p1-s.p0)
}

// niceTicks returns about n round ticks (1, 2 or 5 × 10^k apart) covering
// [lo, hi], and the rounded range.
func niceTicks(lo, hi float64, n int) (float64, float64, []float64) {
	if hi <= lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / float64(n))
	lo = math.Floor(lo/step) * step
	hi = math.Ceil(hi/step) * step
	var ticks []float64
	for v := lo; v <= hi+step/2; v += step {
		ticks = append(ticks, math.Round(v/step)*step)
	}
	return lo, hi, ticks
}

func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// tickText formats a tick value with as few decimals as its step needs.
func tickText(v, step float64) string {
	prec := 0
	for step < 1 && prec < 3 {
		step *= 10
		prec++
	}
	if step != math.Trunc(step) && prec < 3 {
		prec++
	}
	return num(v, prec)
}

// frame draws the plot area's grid, axes, ticks and axis titles for a
// numeric y axis; the x axis is left to the caller (numeric or
// categorical).
type frame struct {
	x, y   scale
	yTicks []float64
	left   float64
	right  float64
	top    float64
	bottom float64
}

// newFrame makes a frame over the standard canvas for y in [0, yMax].
func newFrame(yMax float64, w, h int) *frame {
	_, hi, ticks := niceTicks(0, yMax, 5)
	f := &frame{left: marginL, right: float64(w) - marginR, top: marginT, bottom: float64(h) - marginB, yTicks: ticks}
	f.y = scale{d0: 0, d1: hi, p0: f.bottom, p1: f.top}
	return f
}

// drawY draws horizontal grid lines, y tick labels and the y-axis title.
func (f *frame) drawY(s *scene, title string) {
	step := 1.0
	if len(f.yTicks) > 1 {
		step = f.yTicks[1] - f.yTicks[0]
	}
	for _, v := range f.yTicks {
		y := f.y.at(v)
		s.line("grid", f.left, y, f.right, y)
		s.text("tick", f.left-labelGap, y+4, "end", tickText(v, step))
	}
	s.line("axis", f.left, f.top, f.left, f.bottom)
	s.vtext("axis-title", 16, (f.top+f.bottom)/2, title)
}

// drawXNumeric draws x ticks for a numeric x axis, its baseline and title.
func (f *frame) drawXNumeric(s *scene, ticks []float64, title string) {
	step := 1.0
	if len(ticks) > 1 {
		step = ticks[1] - ticks[0]
	}
	for _, v := range ticks {
		x := f.x.at(v)
		s.line("axis", x, f.bottom, x, f.bottom+tickLen)
		s.text("tick", x, f.bottom+tickLen+14, "middle", tickText(v, step))
	}
	f.drawXBase(s, title)
}

// drawXBase draws the x baseline and the x-axis title.
func (f *frame) drawXBase(s *scene, title string) {
	s.line("axis", f.left, f.bottom, f.right, f.bottom)
	s.text("axis-title", (f.left+f.right)/2, f.bottom+40, "middle", title)
}

// refLine draws a labelled horizontal reference (a ceiling) if it is on
// the chart.
func (f *frame) refLine(s *scene, v float64, label string, below bool) {
	if !known(v) || v > f.y.d1 {
		return
	}
	y := f.y.at(v)
	s.line("ref", f.left, y, f.right, y)
	ly := y - 4
	if below {
		ly = y + 13
	}
	s.text("ref-label", f.right-4, ly, "end", label)
}

// seriesClass names the colour class of series i (k0 … k7).
func seriesClass(i int) string {
	return "k" + num(float64(i%8), 0)
}
