package report

import (
	"math"
	"strconv"
)

// series is one coloured group of a chart with its legend label.
type series struct {
	label string
	class string
}

// legend draws series labels in a row above the plot area, as many as
// fit; the rest are counted ("+3 more"): the tables name every group.
func legend(s *scene, x, y float64, items []series) {
	const right = chartW - 90
	for i, it := range items {
		w := 24 + 7*float64(len([]rune(it.label)))
		if x+w > right && i > 0 {
			s.text("legend muted", x, y, "start", "+"+strconv.Itoa(len(items)-i)+" more")
			return
		}
		s.rect("swatch "+it.class, x, y-9, 12, 10, "")
		s.text("legend", x+16, y, "start", it.label)
		x += w
	}
}

// runGroup is runs drawn in one colour: a bucket, or a point.
type runGroup struct {
	label string
	runs  []*Run
}

// timeChart draws each run's throughput per interval, coloured by group,
// against the ceiling and the line rate.
func (b *builder) timeChart(id, title string, groups []runGroup) (*chart, error) {
	xMax, yMax, n := 0.0, 0.0, 0
	for _, g := range groups {
		for _, r := range g.runs {
			n++
			for _, iv := range r.Result.Intervals {
				if !iv.Omitted {
					xMax = math.Max(xMax, iv.End)
					yMax = math.Max(yMax, iv.Sum.BitsPerSecond/1e9)
				}
			}
		}
	}
	if n == 0 || xMax == 0 {
		return nil, nil
	}
	path := b.groupsPath(groups)
	if path != nil {
		yMax = math.Max(yMax, path.line.gbps)
	}
	f := newFrame(yMax*1.02, chartW, chartH)
	f.top = 36
	f.y.p1 = f.top
	_, xHi, xTicks := niceTicks(0, xMax, 8)
	f.x = scale{d0: 0, d1: xHi, p0: f.left, p1: f.right}
	s := &scene{}
	f.drawY(s, "Gbit/s")
	f.drawXNumeric(s, xTicks, "time since the end of the warm-up (s)")
	ceilingRefs(s, f, path)
	thin := ""
	if n > 40 {
		thin = " thin" // many runs: thin lines so that the bundle stays readable
	}
	var leg []series
	for gi, g := range groups {
		class := seriesClass(gi)
		leg = append(leg, series{label: g.label, class: class})
		for _, r := range g.runs {
			var xs, ys []float64
			for _, iv := range r.Result.Intervals {
				if !iv.Omitted {
					// At the interval's middle: the rate is its average.
					xs = append(xs, f.x.at((iv.Start+iv.End)/2))
					ys = append(ys, f.y.at(iv.Sum.BitsPerSecond/1e9))
				}
			}
			s.path("ln "+class+thin, polyline(xs, ys), "run "+strconv.FormatInt(r.Result.RunID, 10)+" ("+g.label+"): "+gbps(runGbps(&r.Result))+" Gbit/s")
		}
	}
	legend(s, f.left, 16, leg)
	return b.r.render(id, title, "Throughput of every run per interval, in Gbit/s over seconds, one line per run, coloured by group.", chartW, chartH, s)
}

// groupsPath is the one path all the groups' runs took; nil when they
// took several (a chart of two labs draws no one ceiling).
func (b *builder) groupsPath(groups []runGroup) *path {
	var p *path
	for _, g := range groups {
		for _, r := range g.runs {
			q := b.pathOf(r)
			if p != nil && q != p {
				return nil
			}
			p = q
		}
	}
	return p
}

// ceilingRefs draws a path's ceiling and line rate as reference lines.
func ceilingRefs(s *scene, f *frame, p *path) {
	if p == nil || p.ceiling == 0 {
		return
	}
	// Labels sit above their lines, the ceiling's below when the two
	// lines are too close for both to fit between them.
	tight := f.y.at(p.ceiling)-f.y.at(p.line.gbps) < 16
	if p.line.gbps > p.ceiling {
		f.refLine(s, p.line.gbps, "line rate "+gbps(p.line.gbps), false)
	}
	f.refLine(s, p.ceiling, "ceiling "+gbps(p.ceiling)+" ("+p.bottleneck+")", tight && p.line.gbps > p.ceiling)
}
