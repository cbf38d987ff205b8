package report

import (
	"math"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/gap"
	"github.com/linerate/linerate/internal/result"
)

// gapRow is one bar of the gap chart: a run, or a campaign point.
type gapRow struct {
	name string
	g    *result.Gap
}

// gapRows are the campaigns' points (their gap, or their runs' merged)
// and the runs outside campaigns, in the report's order.
func (b *builder) gapRows() []gapRow {
	var rows []gapRow
	inCampaign := map[int64]bool{}
	for ci := range b.ds.Campaigns {
		c := &b.ds.Campaigns[ci]
		for _, p := range c.Points {
			var gs []*result.Gap
			for _, id := range p.RunIDs {
				inCampaign[id] = true
				if r := b.runs[id]; r != nil {
					gs = append(gs, r.Result.End.Gap)
				}
			}
			g := p.Gap
			if g == nil {
				g = gap.Merge(gs)
			}
			if g != nil {
				rows = append(rows, gapRow{name: campaignName(ci, c) + ", " + pointLabel(p), g: g})
			}
		}
	}
	for _, id := range sortedIDs(b.runList()) {
		if r := b.runs[id]; !inCampaign[id] && r.Result.End.Gap != nil {
			rows = append(rows, gapRow{name: "Run " + strconv.FormatInt(id, 10), g: r.Result.End.Gap})
		}
	}
	return rows
}

func (b *builder) runList() []*Run {
	rs := make([]*Run, 0, len(b.ds.Runs))
	for i := range b.ds.Runs {
		rs = append(rs, &b.ds.Runs[i])
	}
	return rs
}

// gapNote is what held the best result, and its fix, for the verdict
// (" Limit: …" from its runs' gaps, merged); "" when its runs have none.
func (b *builder) gapNote() string {
	m := b.best()
	if m == nil {
		return ""
	}
	var gs []*result.Gap
	for _, id := range m.runIDs {
		if r := b.runs[id]; r != nil {
			gs = append(gs, r.Result.End.Gap)
		}
	}
	l := explain.GapLines(gap.Merge(gs))
	if len(l) == 0 || !strings.HasPrefix(l[0], "Limit: ") || strings.HasPrefix(l[0], "Limit: none") {
		return ""
	}
	note := " " + l[0]
	if len(l) > 1 && strings.HasPrefix(l[1], "Fix: ") {
		note += " " + l[1]
	}
	return note
}

// gapSection leads with each run's (and point's) dominant limit and its
// fix, and draws the gap: the ceiling split into the measured goodput
// and the causes' shares, or, where no ceiling is known, the run's time
// split by cause.
func (b *builder) gapSection() (*section, error) {
	const id, title = "gap", "Where the gigabits went"
	rows := b.gapRows()
	if len(rows) == 0 {
		return omitted(id, title, "Where the gigabits went: no run in this data set has TCP's own account (the native engine's TCP runs have it)."), nil
	}
	s := &section{ID: id, Title: title}
	var lead []item
	for _, r := range rows {
		if l := explain.GapLines(r.g); len(l) > 0 {
			lead = append(lead, item{Lead: r.name, Text: strings.Join(l, " ")})
		}
	}
	s.Blocks = append(s.Blocks, block{Items: lead})
	c, err := b.gapChart(id, rows)
	if err != nil {
		return nil, err
	}
	s.addChart(c)
	t := &table{ID: "gap-shares", Caption: "Shares of the gap by cause",
		Head: []string{"Run or point", "Measured (Gbit/s)", "Ceiling (Gbit/s)", "Dominant", "Shares", "Unaccounted"},
		Num:  []bool{false, true, true, false, false, true}}
	for _, r := range rows {
		var sh []string
		for _, x := range r.g.Shares {
			v := x.Cause + " " + pct(x.Share, 1)
			if x.Gbps != nil {
				v += " (" + gbps(*x.Gbps) + " Gbit/s)"
			}
			sh = append(sh, v)
		}
		ceil := "—"
		if r.g.CeilingGbps != nil {
			ceil = gbps(*r.g.CeilingGbps)
		}
		t.Rows = append(t.Rows, []string{r.name, gbps(r.g.MeasuredGbps), ceil, orDash(r.g.Dominant), strings.Join(sh, ", "), pct(r.g.UnaccountedShare, 1)})
		t.Classes = append(t.Classes, "")
	}
	s.addTable(t)
	s.addText(gapIntro)
	return s, nil
}

const gapIntro = "TCP's own account (TCP_INFO per stream and interval: time busy, limited by the receiver's window, limited by the send buffer) split by what the run's other evidence names: doctor's findings and qdisc on both ends, NIC and qdisc counters, the load of the threads' CPUs. Where the ceiling is known a bar is the ceiling, split into the measured goodput and the causes' shares of the missing gigabits; where it is not (a veth has no line rate) a bar is the run's time, split by cause."

// gapClass is a cause's colour class, from the chart palette (k0, the
// measured goodput's blue, left out), the waterfall's "lost" grey for
// what is unaccounted.
func gapClass(cause string) string {
	switch cause {
	case "":
		return "lost"
	case gap.AppLimited, gap.Pacing:
		return "bar ceiling" // asked for: grey, not a fault
	}
	k := map[string]int{gap.SenderBuffer: 2, gap.ReceiverWindow: 1, gap.Network: 3, gap.PathRate: 6,
		gap.SenderCPU: 4, gap.ReceiverCPU: 5, gap.NICDrops: 7}[cause]
	return "swatch " + seriesClass(k)
}

// gapChart draws one stacked bar per row. With every row's ceiling known
// the axis is Gbit/s (measured, then each cause's Gbit/s, then the
// unaccounted rest, up to the ceiling); otherwise it is the share of the
// run's time, and the measured goodput is written beside the bar.
func (b *builder) gapChart(id string, rows []gapRow) (*chart, error) {
	inGbps := true
	xMax := 0.0
	for _, r := range rows {
		if r.g.CeilingGbps == nil {
			inGbps = false
		} else {
			xMax = math.Max(xMax, *r.g.CeilingGbps)
		}
	}
	const left, right, top, rowH, barH = 230.0, 24.0, 16.0, 48.0, 22.0
	legendH := 44.0
	h := int(top + rowH*float64(len(rows)) + 40 + legendH)
	axis := "share of the run's time (%)"
	if !inGbps {
		xMax = 100
	} else {
		axis = "Gbit/s"
	}
	_, hi, ticks := niceTicks(0, xMax, 6)
	if !inGbps {
		hi, ticks = 100, []float64{0, 20, 40, 60, 80, 100}
	}
	x := scale{d0: 0, d1: hi, p0: left, p1: chartW - right}
	s := &scene{}
	bottom := top + rowH*float64(len(rows))
	for _, v := range ticks {
		s.line("grid", x.at(v), top, x.at(v), bottom)
		s.text("tick", x.at(v), bottom+18, "middle", tickText(v, ticks[1]-ticks[0]))
	}
	s.line("axis", left, bottom, chartW-right, bottom)
	s.text("axis-title", (left+chartW-right)/2, bottom+34, "middle", axis)
	for i, r := range rows {
		y := top + rowH*float64(i) + 6
		s.text("wf-name", left-10, y+15, "end", clip(r.name, 32))
		at := 0.0
		seg := func(class string, v float64, what string) {
			if v <= 0 {
				return
			}
			s.rect(class, x.at(at), y, x.at(at+v)-x.at(at), barH, what)
			at += v
		}
		if inGbps {
			seg("bar measured", r.g.MeasuredGbps, "measured: "+gbps(r.g.MeasuredGbps)+" Gbit/s")
			for _, sh := range r.g.Shares {
				if sh.Gbps != nil {
					seg(gapClass(sh.Cause), *sh.Gbps, sh.Cause+": "+gbps(*sh.Gbps)+" Gbit/s, "+pct(sh.Share, 1)+" of the gap")
				}
			}
			seg(gapClass(""), *r.g.CeilingGbps-at, "unaccounted: "+pct(r.g.UnaccountedShare, 1)+" of the gap")
		} else {
			for _, sh := range r.g.Shares {
				seg(gapClass(sh.Cause), 100*sh.Share, sh.Cause+": "+pct(sh.Share, 1)+" of the run's time")
			}
			seg(gapClass(""), 100-at, "unaccounted: "+pct(r.g.UnaccountedShare, 1)+" of the run's time")
		}
		label := gbps(r.g.MeasuredGbps) + " Gbit/s measured"
		if r.g.Dominant != "" {
			share := r.g.Shares[0].Share
			label += "; " + r.g.Dominant + " " + pct(share, 1)
		}
		s.text("wf-detail", left, y+barH+14, "start", label)
	}
	// The legend: every cause drawn, in the model's order.
	used := map[string]bool{}
	for _, r := range rows {
		for _, sh := range r.g.Shares {
			used[sh.Cause] = true
		}
		if r.g.UnaccountedShare > 0 {
			used[""] = true
		}
	}
	names := append(gap.Causes(), "")
	lx, ly := left, bottom+46
	if inGbps {
		s.rect("bar measured", lx, ly, 12, 12, "measured")
		s.text("legend", lx+16, ly+10, "start", "measured")
		lx += 16 + 7*float64(len("measured")) + 14
	}
	for _, c := range names {
		if !used[c] {
			continue
		}
		n := c
		if c == "" {
			n = "unaccounted"
		}
		w := 16 + 7*float64(len(n)) + 14
		if lx+w > chartW-right {
			lx, ly = left, ly+18
		}
		s.rect(gapClass(c), lx, ly, 12, 12, n)
		s.text("legend", lx+16, ly+10, "start", n)
		lx += w
	}
	title := "The gap by cause: share of each run's time"
	desc := "One stacked bar per run or campaign point: the share of the sending sockets' time each cause held, and what no evidence named."
	if inGbps {
		title = "The gap by cause: ceiling → measured"
		desc = "One stacked bar per run or campaign point, in Gbit/s: the measured goodput, then each cause's share of the missing gigabits, up to the ceiling."
	}
	return b.r.render(id, title, desc, chartW, int(math.Max(float64(h), ly+30)), s)
}
