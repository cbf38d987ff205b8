package report

import (
	"math"
	"slices"
	"strconv"
)

// isSweep reports whether a campaign varies the number of streams.
func isSweep(c *Campaign) bool {
	for _, p := range c.Points {
		if p.Streams != c.Points[0].Streams {
			return true
		}
	}
	return false
}

// sweepChart draws throughput against streams: each point's median as a
// dot, its 95% interval as a thick bar and min–max as a thin whisker, one
// colour per placement.
func (b *builder) sweepChart(id string, c *Campaign) (*chart, error) {
	var streams []int
	var placements []string
	yMax := 0.0
	for _, p := range c.Points {
		if !slices.Contains(streams, p.Streams) {
			streams = append(streams, p.Streams)
		}
		if !slices.Contains(placements, p.Placement) {
			placements = append(placements, p.Placement)
		}
		yMax = math.Max(yMax, p.MaxGbps)
	}
	slices.Sort(streams)
	path := b.campaignPath(c)
	if path != nil {
		yMax = math.Max(yMax, path.line.gbps)
	}
	f := newFrame(yMax*1.02, chartW, chartH)
	f.top = 36
	f.y.p1 = f.top
	slot := (f.right - f.left) / float64(len(streams))
	xOf := func(n, series int) float64 {
		i := slices.Index(streams, n)
		// Series sit side by side within a slot so that bars never overlap.
		off := (float64(series) - float64(len(placements)-1)/2) * math.Min(14, slot/float64(len(placements)+1))
		return f.left + slot*(float64(i)+0.5) + off
	}
	s := &scene{}
	f.drawY(s, "Gbit/s")
	for _, n := range streams {
		x := xOf(n, (len(placements)-1)/2)
		s.line("axis", x, f.bottom, x, f.bottom+tickLen)
		s.text("tick", f.left+slot*(float64(slices.Index(streams, n))+0.5), f.bottom+tickLen+14, "middle", strconv.Itoa(n))
	}
	f.drawXBase(s, "parallel streams")
	ceilingRefs(s, f, path)
	var leg []series
	for si, pl := range placements {
		class := seriesClass(si)
		leg = append(leg, series{label: "placement " + orDash(pl), class: class})
		var xs, ys []float64
		for _, p := range c.Points {
			if p.Placement != pl {
				continue
			}
			x := xOf(p.Streams, si)
			s.line("whisker "+class, x, f.y.at(p.MinGbps), x, f.y.at(p.MaxGbps))
			s.line("cap "+class, x-4, f.y.at(p.MinGbps), x+4, f.y.at(p.MinGbps))
			s.line("cap "+class, x-4, f.y.at(p.MaxGbps), x+4, f.y.at(p.MaxGbps))
			if p.CI95Gbps != nil {
				s.line("ci "+class, x, f.y.at(p.CI95Gbps[0]), x, f.y.at(p.CI95Gbps[1]))
			}
			xs, ys = append(xs, x), append(ys, f.y.at(p.MedianGbps))
		}
		s.path("ln "+class, polyline(xs, ys), "")
		for i := range xs {
			s.circle("dot "+class, xs[i], ys[i], 4.5, "")
		}
		b.sweepTitles(s, c, pl)
	}
	legend(s, f.left, 16, leg)
	return b.r.render(id, "Sweep: throughput against parallel streams",
		"Median Gbit/s per number of streams (dots), 95% confidence interval (thick bar) and min–max (thin whisker), one colour per placement.",
		chartW, chartH, s)
}

// sweepTitles gives the last dots drawn their tooltips, in point order.
func (b *builder) sweepTitles(s *scene, c *Campaign, pl string) {
	var pts []Point
	for _, p := range c.Points {
		if p.Placement == pl {
			pts = append(pts, p)
		}
	}
	start := len(s.shapes) - len(pts)
	for i, p := range pts {
		s.shapes[start+i].Title = strconv.Itoa(p.Streams) + " stream" + plural(p.Streams) + ": median " + gbps(p.MedianGbps) +
			" Gbit/s, min " + gbps(p.MinGbps) + ", max " + gbps(p.MaxGbps)
	}
}
