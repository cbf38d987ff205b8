package report

import (
	"math"
	"slices"
	"strconv"

	"github.com/linerate/linerate/internal/result"
)

// heatColumn is one CPU column of a heatmap; domain indexes l3 (-1: none).
type heatColumn struct {
	cpu, domain int
}

// heatColumns orders CPUs by L3 domain, so that a domain is a contiguous
// block, then the CPUs no domain names.
func heatColumns(l3 [][]int, seen []int) []heatColumn {
	var cols []heatColumn
	placed := map[int]bool{}
	for d, dom := range l3 {
		for _, c := range dom {
			cols = append(cols, heatColumn{cpu: c, domain: d})
			placed[c] = true
		}
	}
	for _, c := range seen {
		if !placed[c] {
			cols = append(cols, heatColumn{cpu: c, domain: -1})
		}
	}
	return cols
}

// metric is one row of a heatmap group.
type metric struct {
	name  string
	class string
	value func(result.CPUSample) float64
}

func metrics() []metric {
	return []metric{
		{"busy", "hm-busy", func(s result.CPUSample) float64 { return s.Busy }},
		{"softirq", "hm-softirq", func(s result.CPUSample) float64 { return s.SoftIRQ }},
		{"irq", "hm-irq", func(s result.CPUSample) float64 { return s.IRQ }},
	}
}

// heatmapChart draws, for one end of the runs, each group's average busy,
// softirq and hard-IRQ share per CPU, CPUs grouped by L3 domain; the CPUs
// the benchmark threads ran on are outlined and those the NIC's IRQs are
// routed to are dotted.
func (b *builder) heatmapChart(id, role string, groups []runGroup) (*chart, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	host := hostOf(groups[0].runs[0], role)
	avgs := make([]map[int]result.CPUSample, len(groups))
	var seen []int
	for i, g := range groups {
		avgs[i] = cpuAverages(g.runs, role)
		for c := range avgs[i] {
			if !slices.Contains(seen, c) {
				seen = append(seen, c)
			}
		}
	}
	if len(seen) == 0 {
		return nil, nil // no per-CPU samples on this end
	}
	slices.Sort(seen)
	l3 := b.l3Of(host)
	cols := heatColumns(l3, seen)
	g := newHeatGeom(len(cols), len(groups), len(l3))
	s := &scene{}
	xs := g.columnsX(cols)
	b.heatHeader(s, g, cols, xs, l3)
	for gi, grp := range groups {
		b.heatGroup(s, g, gi, grp, role, cols, xs, avgs[gi])
	}
	ly := g.top + float64(len(groups))*g.groupH + 14
	s.rect("app-mark", g.left, ly-9, 12, 10, "")
	s.text("legend", g.left+16, ly, "start", "benchmark threads ran here")
	s.circle("irq-mark", g.left+220, ly-4, 3, "")
	s.text("legend", g.left+228, ly, "start", "NIC IRQs routed here")
	s.text("legend", g.left+400, ly, "start", "cells: % of the CPU's time")
	title := "Per-CPU load on " + host + " (" + role + ")"
	return b.r.render(id, title,
		"Heatmap: rows are busy, softirq and hard-IRQ shares (%) per bucket, columns are CPUs grouped by L3 domain.",
		g.w, g.h, s)
}

// markRow is the height of the row under each group that dots the CPUs
// the NIC's IRQs are routed to.
const markRow = 10.0

// heatGeom is a heatmap's layout.
type heatGeom struct {
	left, top, cellW, cellH, groupH, domainGap float64
	w, h                                       int
}

func newHeatGeom(ncols, ngroups, ndomains int) heatGeom {
	g := heatGeom{left: 170, top: 46, cellH: 18, domainGap: 8}
	g.cellW = math.Max(8, math.Min(44, 560/float64(ncols)))
	g.groupH = 3*g.cellH + markRow + 12
	gaps := float64(max(ndomains-1, 0)) * g.domainGap
	g.w = int(math.Max(chartW, g.left+float64(ncols)*g.cellW+gaps+20))
	g.h = int(g.top + float64(ngroups)*g.groupH + 28)
	return g
}

// columnsX places each column, leaving a gap between L3 domains.
func (g heatGeom) columnsX(cols []heatColumn) []float64 {
	xs := make([]float64, len(cols))
	x := g.left
	for i, c := range cols {
		if i > 0 && c.domain != cols[i-1].domain {
			x += g.domainGap
		}
		xs[i] = x
		x += g.cellW
	}
	return xs
}

// heatHeader labels the L3 domains and the CPU numbers.
func (b *builder) heatHeader(s *scene, g heatGeom, cols []heatColumn, xs []float64, l3 [][]int) {
	every := 1
	if g.cellW < 16 {
		every = int(math.Ceil(16 / g.cellW)) // label every n-th CPU when columns are narrow
	}
	for i, c := range cols {
		if i%every == 0 {
			s.text("tick", xs[i]+g.cellW/2, g.top-6, "middle", strconv.Itoa(c.cpu))
		}
	}
	for d, dom := range l3 {
		first, last := -1, -1
		for i, c := range cols {
			if c.domain == d {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		if first < 0 {
			continue
		}
		x0, x1 := xs[first], xs[last]+g.cellW
		s.line("l3", x0, g.top-22, x1, g.top-22)
		s.text("l3-label", (x0+x1)/2, g.top-27, "middle", "L3 "+cpus(dom))
	}
	s.text("tick muted", g.left-8, g.top-6, "end", "CPU")
}

// heatGroup draws one group's three rows.
func (b *builder) heatGroup(s *scene, g heatGeom, gi int, grp runGroup, role string, cols []heatColumn, xs []float64, avg map[int]result.CPUSample) {
	y0 := g.top + float64(gi)*g.groupH
	s.text("hm-group", 8, y0+g.cellH-5, "start", clip(grp.label, 16))
	app, irq := placementOf(grp.runs, role)
	for mi, m := range metrics() {
		y := y0 + float64(mi)*g.cellH
		s.text("tick muted", g.left-8, y+g.cellH-5, "end", m.name)
		for i, c := range cols {
			v := m.value(avg[c.cpu])
			title := "CPU " + strconv.Itoa(c.cpu) + " " + m.name + ": " + num(v, 1) + "%"
			s.cell("hm "+m.class, xs[i]+0.5, y+0.5, g.cellW-1, g.cellH-1, v/100, title)
			// Numbers only where there is room and load worth reading:
			// a row of 1s is noise that hides the hot cells.
			if g.cellW >= 22 && v >= 5 {
				s.text(textClass(v), xs[i]+g.cellW/2, y+g.cellH-5, "middle", num(v, 0))
			}
		}
	}
	for i, c := range cols {
		if slices.Contains(app, c.cpu) {
			s.rect("app-mark", xs[i]+0.5, y0+0.5, g.cellW-1, 3*g.cellH-1, "")
		}
		if slices.Contains(irq, c.cpu) {
			s.circle("irq-mark", xs[i]+g.cellW/2, y0+3*g.cellH+markRow/2+1, 2.5, "CPU "+strconv.Itoa(c.cpu)+": NIC IRQs routed here")
		}
	}
}

// textClass picks a cell's text colour class by how strong its fill is,
// so that numbers stay readable on pale and saturated cells alike.
func textClass(v float64) string {
	switch {
	case v >= 80:
		return "hm-t s80"
	case v >= 55:
		return "hm-t s55"
	}
	return "hm-t"
}

// placementOf returns the CPUs that one end's threads ran on, and those the
// NIC's IRQs were routed to, in at least half of the runs.
func placementOf(runs []*Run, role string) (app, irq []int) {
	appN, irqN := map[int]int{}, map[int]int{}
	for _, r := range runs {
		st := r.Result.Start
		a, q := st.Placement.Client, st.Client.IRQCPUs
		if role == "server" {
			a, q = st.Placement.Server, st.Server.IRQCPUs
		}
		for _, c := range a {
			appN[c]++
		}
		for _, c := range q {
			irqN[c]++
		}
	}
	for _, c := range sortedCPUs(appN) {
		if 2*appN[c] >= len(runs) {
			app = append(app, c)
		}
	}
	for _, c := range sortedCPUs(irqN) {
		if 2*irqN[c] >= len(runs) {
			irq = append(irq, c)
		}
	}
	return app, irq
}

// l3Of is a host's L3 domains from its doctor report (nil when unknown).
func (b *builder) l3Of(host string) [][]int {
	for i := range b.ds.Hosts {
		if b.ds.Hosts[i].Host.Hostname == host {
			return b.ds.Hosts[i].CPU.L3Domains
		}
	}
	return nil
}
