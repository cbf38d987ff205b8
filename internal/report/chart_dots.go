package report

import (
	"math"
	"slices"
	"strconv"
)

// dotsChart draws every run as a dot in its group's column, with the
// group's median as a bar: buckets side by side show how far apart they
// are and how tight each one is.
func (b *builder) dotsChart(id string, groups []runGroup) (*chart, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	yMax := 0.0
	for _, g := range groups {
		for _, r := range g.runs {
			yMax = math.Max(yMax, runGbps(&r.Result))
		}
	}
	path := b.groupsPath(groups)
	if path != nil {
		yMax = math.Max(yMax, path.line.gbps)
	}
	// Narrower for few groups, so that one group's dots are not lost in
	// a wide empty plot.
	w := int(math.Max(440, math.Min(chartW, 150*float64(len(groups))+140)))
	f := newFrame(yMax*1.02, w, chartH)
	f.bottom -= 14 // room for two lines of group labels
	f.y.p0 = f.bottom
	s := &scene{}
	f.drawY(s, "Gbit/s")
	f.drawXBase(s, "")
	ceilingRefs(s, f, path)
	slot := (f.right - f.left) / float64(len(groups))
	spread := math.Min(slot*0.3, 40)
	for gi, g := range groups {
		cx := f.left + slot*(float64(gi)+0.5)
		class := seriesClass(gi)
		vals := make([]float64, 0, len(g.runs))
		for i, r := range g.runs {
			v := runGbps(&r.Result)
			vals = append(vals, v)
			s.circle("dot "+class, cx+jitter(i)*spread, f.y.at(v), 4, "run "+strconv.FormatInt(r.Result.RunID, 10)+": "+gbps(v)+" Gbit/s")
		}
		med := median(vals)
		s.line("median", cx-spread-8, f.y.at(med), cx+spread+8, f.y.at(med))
		s.text("tick", cx, f.bottom+18, "middle", clip(g.label, int(slot/6.5)))
		s.text("tick muted", cx, f.bottom+34, "middle", strconv.Itoa(len(g.runs))+" run"+plural(len(g.runs))+", median "+gbps(med))
	}
	return b.r.render(id, "Runs grouped by bucket",
		"Each run's throughput in Gbit/s as a dot, grouped by bucket (or point), with each group's median as a bar.",
		w, chartH, s)
}

// jitter spreads dots of one column deterministically over [-1, 1]: a
// low-discrepancy sequence, so that equal values do not hide each other.
func jitter(i int) float64 {
	const golden = 0.6180339887498949
	v := math.Mod(float64(i)*golden, 1)
	return 2*v - 1
}

// median of vals (0 for none).
func median(vals []float64) float64 {
	if len(vals) == 0 {
		return 0
	}
	v := slices.Clone(vals)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
