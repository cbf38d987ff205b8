package report

import (
	"math"
)

// waterfallRow is one bar of the ceiling waterfall.
type waterfallRow struct {
	name, detail string  // detail names the end, for the table
	short        string  // detail without the end, for the chart
	own          float64 // the stage's own rate
	value        float64 // the ceiling after this stage (or the measured rate)
	prev         float64 // the ceiling before it
	measured     bool
}

// waterfallRows cascades the stages: each ceiling is the lowest so far;
// the measured rate comes last, against the final ceiling.
func waterfallRows(p *path, m *measured) []waterfallRow {
	if p == nil || p.line.gbps == 0 {
		return nil
	}
	rows := []waterfallRow{{name: p.line.name, detail: p.line.text(), short: p.line.detail, own: p.line.gbps, value: p.line.gbps, prev: p.line.gbps}}
	cur := p.line.gbps
	for _, st := range []stage{p.pcie, p.mtu} {
		if st.gbps == 0 {
			continue
		}
		next := math.Min(cur, st.gbps)
		rows = append(rows, waterfallRow{name: st.name, detail: st.text(), short: st.detail, own: st.gbps, value: next, prev: cur})
		cur = next
	}
	if m != nil {
		rows = append(rows, waterfallRow{name: "Measured", detail: m.what, short: m.what, own: m.gbps, value: m.gbps, prev: cur, measured: true})
	}
	return rows
}

// waterfallChart draws line rate → PCIe → MTU goodput → measured as
// horizontal bars on one Gbit/s axis, each stage's loss shaded.
// id and the title's suffix (" — label \"capped\"") tell apart the
// waterfalls of a report with one per path.
func (b *builder) waterfallChart(id, suffix string, rows []waterfallRow) (*chart, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	const left, right, top, rowH = 200.0, 24.0, 16.0, 58.0
	h := int(top + rowH*float64(len(rows)) + 56)
	xMax := 0.0
	for _, r := range rows {
		xMax = math.Max(xMax, math.Max(r.own, r.prev))
	}
	_, hi, ticks := niceTicks(0, xMax, 6)
	x := scale{d0: 0, d1: hi, p0: left, p1: chartW - right}
	s := &scene{}
	bottom := top + rowH*float64(len(rows))
	for _, v := range ticks {
		s.line("grid", x.at(v), top, x.at(v), bottom)
		s.text("tick", x.at(v), bottom+18, "middle", tickText(v, ticks[1]-ticks[0]))
	}
	s.line("axis", left, bottom, chartW-right, bottom)
	s.text("axis-title", (left+chartW-right)/2, bottom+42, "middle", "Gbit/s")
	for i, r := range rows {
		y := top + rowH*float64(i) + 8
		b.waterfallBar(s, x, y, r)
	}
	return b.r.render(id, "Ceiling waterfall: line rate → PCIe → MTU goodput → measured"+suffix,
		"Horizontal bars in Gbit/s: each stage's ceiling is the lowest so far; the shaded part is what the stage costs.",
		chartW, h, s)
}

// waterfallBar draws one row: its name, the bar, the lost part and labels.
func (b *builder) waterfallBar(s *scene, x scale, y float64, r waterfallRow) {
	const barH = 22.0
	s.text("wf-name", x.p0-10, y+15, "end", r.name)
	class := "bar ceiling"
	switch {
	case r.measured:
		class = "bar measured"
	case r.value < r.prev:
		class = "bar binding"
	}
	s.rect(class, x.p0, y, x.at(r.value)-x.p0, barH, r.name+": "+gbps(r.value)+" Gbit/s")
	if r.prev > r.value {
		s.rect("lost", x.at(r.value), y, x.at(r.prev)-x.at(r.value), barH, "lost: "+gbps(r.prev-r.value)+" Gbit/s")
	}
	label := gbps(r.value)
	switch {
	case r.measured:
		label += " (" + pct(r.value, r.prev) + " of the ceiling)"
	case r.own > r.value:
		label = gbps(r.own) + ": does not bind"
	case r.prev > r.value:
		label += " (−" + gbps(r.prev-r.value) + ")"
	}
	lx, anchor := x.at(math.Max(r.value, r.prev))+6, "start"
	// labelW is about how wide the label is drawn (7 px a character).
	labelW := 7 * float64(len([]rune(label)))
	switch {
	case lx > x.p1-150 && x.at(r.value)-x.p0 < labelW+12:
		// A bar too short to hold its label inside (a result far below
		// the ceiling): the label goes after the bar, over the lost part.
		s.text("bar-label", x.at(r.value)+6, y+15, "start", label)
	case lx > x.p1-150:
		lx, anchor = x.at(r.value)-6, "end"
		s.text("bar-label inverse", lx, y+15, anchor, label)
	default:
		s.text("bar-label", lx, y+15, anchor, label)
	}
	s.text("wf-detail", x.p0, y+barH+14, "start", r.short)
}
