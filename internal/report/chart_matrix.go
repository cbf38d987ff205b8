package report

import (
	"fmt"
	"math"
	"slices"

	"github.com/linerate/linerate/internal/fleet"
)

// matrixGeom is the layout of a fleet's host × host matrix.
type matrixGeom struct {
	left, top, cell float64
	w, h            int
	vertical        bool // column labels run up the page
}

// labelW is the width of a label of n characters at 11 px, roughly.
func labelW(n int) float64 { return 6.6 * float64(n) }

func newMatrixGeom(n, longest int) matrixGeom {
	g := matrixGeom{cell: math.Max(8, math.Min(44, 600/float64(n)))}
	g.left = 24 + labelW(longest)
	g.vertical = labelW(longest)+6 > g.cell
	g.top = 56
	if g.vertical {
		g.top = 44 + labelW(longest)
	}
	g.w = int(math.Max(chartW, g.left+float64(n)*g.cell+150))
	// Room under the matrix for the axis note, and for the legend when
	// it does not fit on the right (see matrixLegend).
	g.h = int(g.top + float64(n)*g.cell + 30)
	if float64(g.w)-(g.left+float64(n)*g.cell+18) < 120 {
		g.h += 210
	}
	return g
}

// labels writes the hosts' names along the rows and the columns, every
// name when the cells are large enough and every n-th one otherwise, the
// marked ones always and in the blamed style (a fleet's outliers, a
// mesh's suspects), and the axes' title below the grid.
func (g matrixGeom) labels(s *scene, names []string, rowMark, colMark map[int]bool, title string) {
	n := len(names)
	every := 1
	if g.cell < 13 {
		every = int(math.Ceil(13 / g.cell))
	}
	for i := 0; i < n; i++ {
		y := g.top + float64(i)*g.cell
		x := g.left + float64(i)*g.cell
		rowClass, colClass := "tick", "tick"
		if rowMark[i] {
			rowClass = "tick fl-blamed"
		}
		if colMark[i] {
			colClass = "tick fl-blamed"
		}
		if i%every == 0 || rowMark[i] || colMark[i] {
			s.text(rowClass, g.left-6, y+g.cell/2+4, "end", names[i])
			if g.vertical {
				s.vtext(colClass, x+g.cell/2+4, g.top-8-labelW(len([]rune(names[i])))/2, names[i])
			} else {
				s.text(colClass, x+g.cell/2, g.top-8, "middle", names[i])
			}
		}
	}
	s.text("axis-title", g.left, g.top+float64(n)*g.cell+18, "start", title)
}

// matrixChart draws the fleet's matrix: rows send, columns receive, the
// fill of a cell its Gbit/s against the best test's; slow tests are
// outlined, failed ones crossed; an outlier host's row (send side) or
// column (receive side) is framed and its name marked.
func (fb *fleetBuilder) matrixChart() (*chart, error) {
	res := fb.res
	n := len(res.Hosts)
	idx := map[string]int{}
	longest := 3
	names := make([]string, n)
	for i, h := range res.Hosts {
		idx[h.Name] = i
		names[i] = clip(h.Name, 14)
		longest = max(longest, len([]rune(names[i])))
	}
	type cellData struct {
		g      *float64
		status string
		err    string
		dir    fleet.Direction
	}
	cells := map[[2]int]cellData{}
	hi := 0.0
	// A latency run's cells are typical latencies: the lowest (lo) is the
	// darkest, a cell's fill lo over its own.
	lat, lo := res.Metric == fleet.MetricLatency, math.Inf(1)
	for _, p := range res.Pairs {
		a, b := idx[p.A], idx[p.B]
		ab, ba := p.AToBGbps, p.BToAGbps
		if lat {
			ab, ba = p.AToBUs, p.BToAUs
		}
		if p.AToB.Status != fleet.StatusUntested {
			cells[[2]int{a, b}] = cellData{ab, p.AToB.Status, p.AToB.Error, p.AToB}
		}
		if p.BToA.Status != fleet.StatusUntested {
			cells[[2]int{b, a}] = cellData{ba, p.BToA.Status, p.BToA.Error, p.BToA}
		}
		for _, g := range []*float64{ab, ba} {
			if g != nil {
				hi = math.Max(hi, *g)
				lo = math.Min(lo, *g)
			}
		}
	}
	sendOut, recvOut := map[int]bool{}, map[int]bool{}
	for _, o := range res.Outliers {
		if o.Kind != fleet.KindHost {
			continue
		}
		i, ok := idx[o.Name]
		if !ok {
			continue
		}
		if o.Direction == fleet.DirSend || o.Direction == fleet.DirBoth {
			sendOut[i] = true
		}
		if o.Direction == fleet.DirReceive || o.Direction == fleet.DirBoth {
			recvOut[i] = true
		}
	}

	g := newMatrixGeom(n, longest)
	s := &scene{}
	g.labels(s, names, sendOut, recvOut, "rows send, columns receive")
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			x, y := g.left+float64(j)*g.cell, g.top+float64(i)*g.cell
			if i == j {
				s.rect("fl-self", x+0.5, y+0.5, g.cell-1, g.cell-1, "")
				continue
			}
			c, tested := cells[[2]int{i, j}]
			from, to := res.Hosts[i].Name, res.Hosts[j].Name
			switch {
			case !tested:
				why := "not in the pattern"
				if res.Design == fleet.DesignSampled {
					why = "not in the sample"
				}
				s.rect("fl-untested", x+0.5, y+0.5, g.cell-1, g.cell-1, from+" → "+to+": "+why)
			case c.status == fleet.StatusFailed:
				s.rect("fl-failed", x+0.5, y+0.5, g.cell-1, g.cell-1, from+" → "+to+": failed: "+c.err)
				s.line("fl-cross", x+3, y+3, x+g.cell-3, y+g.cell-3)
				s.line("fl-cross", x+g.cell-3, y+3, x+3, y+g.cell-3)
			case c.g == nil:
				s.rect("fl-untested", x+0.5, y+0.5, g.cell-1, g.cell-1, from+" → "+to+": not run")
			default:
				v := *c.g
				op := 0.0
				if hi > 0 {
					op = v / hi
				}
				title := from + " → " + to + ": " + gbpsOrZero(v) + " Gbit/s"
				if lat {
					op = 0
					if v > 0 {
						op = lo / v
					}
					title = from + " → " + to + ": " + num(v, 2) + " µs typical" + p99Note(c.dir)
				}
				switch c.status {
				case fleet.StatusSlow:
					title += " (slow)"
				case fleet.StatusInconclusive:
					title += " (inconclusive: " + firstNonEmpty(c.dir.TriesContention) + ")"
				}
				other := res.Parallel && fleet.OtherLoad(c.dir)
				if other {
					title += "; " + loadNote(c.dir)
				}
				s.cell("fl-cell", x+0.5, y+0.5, g.cell-1, g.cell-1, math.Max(op, 0.04), title)
				switch c.status {
				case fleet.StatusSlow:
					s.rect("fl-slow", x+1.5, y+1.5, g.cell-3, g.cell-3, "")
				case fleet.StatusInconclusive:
					s.rect("fl-inconclusive", x+1.5, y+1.5, g.cell-3, g.cell-3, "")
				}
				if other {
					r := math.Max(1.5, math.Min(3, g.cell/10))
					s.circle("fl-otherload", x+g.cell-2-r, y+2+r, r, "")
				}
				if g.cell >= 36 {
					prec := matrixPrec(hi)
					if lat {
						prec = 2
					}
					s.text(matrixTextClass(op), x+g.cell/2, y+g.cell/2+4, "middle", num(v, prec))
				}
			}
		}
	}
	span := float64(n) * g.cell
	for i := range sendOut {
		s.rect("fl-frame", g.left-1, g.top+float64(i)*g.cell-1, span+2, g.cell+2, "")
	}
	for j := range recvOut {
		s.rect("fl-frame", g.left+float64(j)*g.cell-1, g.top-1, g.cell+2, span+2, "")
	}
	if lat {
		fb.latencyLegend(s, g, span, lo)
		return fb.r.render("fleet-matrix", "Pair matrix: typical latency (µs) from each row's host to each column's",
			"Heatmap of the fleet's latency tests: rows are senders, columns receivers; darker is quicker (the best test darkest); slow tests outlined, inconclusive ones dashed, failed tests crossed, outlier hosts framed.",
			g.w, g.h, s)
	}
	fb.matrixLegend(s, g, span, hi)
	return fb.r.render("fleet-matrix", "Pair matrix: Gbit/s from each row's host to each column's",
		"Heatmap of the fleet's tests: rows are senders, columns receivers; darker is faster; slow tests outlined, inconclusive ones dashed, failed tests crossed, figures of re-tests run with another number of tests at once dotted, outlier hosts framed.",
		g.w, g.h, s)
}

// matrixPrec is how many decimals the matrix's numbers get: about three
// significant digits of its fastest test, so that a fleet below 1 Gbit/s
// (a shaped lab, a slow link) does not read as a wall of 0.2 and 0.0.
func matrixPrec(hi float64) int {
	switch {
	case hi >= 10:
		return 1
	case hi >= 1:
		return 2
	}
	return 3
}

// matrixLegend draws the scale and the marks, right of the matrix when
// there is room, else under it.
func (fb *fleetBuilder) matrixLegend(s *scene, g matrixGeom, span, hi float64) {
	x, y := g.left+span+18, g.top+8
	if float64(g.w)-x < 120 {
		x, y = g.left, g.top+span+40
	}
	s.text("legend", x, y, "start", "Gbit/s")
	for k := 0; k <= 4; k++ {
		v := hi * float64(k) / 4
		yy := y + 8 + float64(k)*16
		s.cell("fl-cell", x, yy, 14, 14, math.Max(float64(k)/4, 0.04), "")
		s.text("legend", x+20, yy+11, "start", num(v, matrixPrec(hi)))
	}
	y += 8 + 5*16 + 8
	s.rect("fl-cell", x, y, 14, 14, "")
	s.shapes[len(s.shapes)-1].Opacity = "0.3"
	s.rect("fl-slow", x+1, y+1, 12, 12, "")
	s.text("legend", x+20, y+11, "start", "slow")
	y += 20
	s.rect("fl-cell", x, y, 14, 14, "")
	s.shapes[len(s.shapes)-1].Opacity = "0.3"
	s.rect("fl-inconclusive", x+1, y+1, 12, 12, "")
	s.text("legend", x+20, y+11, "start", "inconclusive")
	if fb.res.Parallel {
		y += 20
		s.rect("fl-cell", x, y, 14, 14, "")
		s.shapes[len(s.shapes)-1].Opacity = "0.3"
		s.circle("fl-otherload", x+11, y+3, 2, "")
		s.text("legend", x+20, y+11, "start", "re-test, other load")
	}
	y += 20
	s.rect("fl-failed", x, y, 14, 14, "")
	s.line("fl-cross", x+3, y+3, x+11, y+11)
	s.line("fl-cross", x+11, y+3, x+3, y+11)
	s.text("legend", x+20, y+11, "start", "failed")
	y += 20
	s.rect("fl-frame", x, y, 14, 14, "")
	s.text("legend", x+20, y+11, "start", "outlier host")
}

// matrixTextClass keeps a cell's number readable on its fill.
func matrixTextClass(op float64) string {
	if op >= 0.55 {
		return "hm-t s80"
	}
	return "hm-t"
}

// loadNote says how a direction's figure was measured against its first
// try: "measured alone in a re-test; the first try ran with 3 tests at
// once (9.83 Gbit/s)".
func loadNote(d fleet.Direction) string {
	best := 0
	for i, g := range d.TriesGbps {
		if g > d.TriesGbps[best] {
			best = i
		}
	}
	at := "alone"
	if k := d.TriesAtOnce[best]; k > 1 {
		at = fmt.Sprintf("with %d tests at once", k)
	}
	return fmt.Sprintf("measured %s in a re-test; the first try ran with %d tests at once (%s Gbit/s)", at, d.TriesAtOnce[0], gbpsOrZero(d.TriesGbps[0]))
}

func firstNonEmpty(xs []string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return "contended"
}

// p99Note is a latency direction's best try's 99th percentile, for a
// cell's tooltip: " (99th percentile 1.15 µs)".
func p99Note(d fleet.Direction) string {
	if len(d.TriesUs) == 0 || len(d.TriesP99Us) != len(d.TriesUs) {
		return ""
	}
	best := slices.Index(d.TriesUs, slices.Min(d.TriesUs))
	if d.TriesP99Us[best] <= 0 {
		return ""
	}
	return " (99th percentile " + num(d.TriesP99Us[best], 2) + " µs)"
}

// latencyLegend is matrixLegend of a latency run: each shade's typical
// latency (the best test's darkest, four times it the lightest).
func (fb *fleetBuilder) latencyLegend(s *scene, g matrixGeom, span, lo float64) {
	x, y := g.left+span+18, g.top+8
	if float64(g.w)-x < 120 {
		x, y = g.left, g.top+span+40
	}
	s.text("legend", x, y, "start", "µs")
	for k := 4; k >= 1; k-- {
		yy := y + 8 + float64(4-k)*16
		s.cell("fl-cell", x, yy, 14, 14, float64(k)/4, "")
		s.text("legend", x+20, yy+11, "start", num(lo*4/float64(k), 2))
	}
	y += 8 + 4*16 + 8
	s.rect("fl-cell", x, y, 14, 14, "")
	s.shapes[len(s.shapes)-1].Opacity = "0.3"
	s.rect("fl-slow", x+1, y+1, 12, 12, "")
	s.text("legend", x+20, y+11, "start", "slow")
}
