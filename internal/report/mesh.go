package report

import (
	"errors"
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/mesh"
)

// BuildMesh makes the report of an always-on mesh from its
// linerate.mesh/v1 document (`linerate mesh status --json`): the
// verdict, the heatmaps of the pairs (round trips and loss, each pair's
// state marked), the suspects with their evidence, the pairs that are
// not ok, the hosts with their own evidence and their agents' cost, and
// the mesh's settings.
func BuildMesh(d *mesh.Doc, title, version string) (*Model, error) {
	if d == nil || d.Schema != mesh.Schema {
		return nil, errors.New("report: not a linerate.mesh/v1 document (linerate mesh status --json writes one)")
	}
	if len(d.Hosts) < 2 {
		return nil, fmt.Errorf("report: a mesh of %d hosts", len(d.Hosts))
	}
	r, err := newRenderer()
	if err != nil {
		return nil, err
	}
	css, err := assets.ReadFile("assets/fleet.css")
	if err != nil {
		return nil, fmt.Errorf("report: read fleet.css: %w", err)
	}
	r.chartCSS += "\n" + template.CSS(css)
	if title == "" {
		title = fmt.Sprintf("linerate mesh %s: %d hosts, %s", d.Name, len(d.Hosts), d.At.Local().Format(time.DateTime))
	}
	m := &Model{Title: title, Verdict: d.Verdict, version: version, r: r}
	mb := &meshBuilder{d: d, r: r}
	for _, mk := range []func() (*section, error){mb.heatmapSection, mb.suspectsSection, mb.pairsSection, mb.hostsSection, mb.settingsSection} {
		s, err := mk()
		if err != nil {
			return nil, err
		}
		m.sections = append(m.sections, s)
	}
	return m, nil
}

type meshBuilder struct {
	d *mesh.Doc
	r *renderer
}

func (mb *meshBuilder) heatmapSection() (*section, error) {
	s := &section{ID: "mesh-heatmap", Title: "Mesh"}
	s.addText("Each cell is one pair over the last %s s, from the row's host (which probes) to the column's. Darker is slower (round trips) or lossier; a degraded pair is outlined, a pair with no answer crossed, a pair whose own record showed contention (inconclusive) dashed, one not judged yet left empty. A suspected host's row (send side) or column (receive side) is framed.",
		num(mb.d.Settings.WindowS, 0))
	for _, k := range []meshMetric{meshRTT, meshLoss} {
		c, err := mb.heatmap(k)
		if err != nil {
			return nil, err
		}
		s.addChart(c)
	}
	return s, nil
}

// meshMetric is what a mesh heatmap's cells show.
type meshMetric int

const (
	meshRTT meshMetric = iota
	meshLoss
)

// heatmap draws the pairs' round trips (p50, µs) or loss, rows probing,
// columns probed, the fill the pair's figure against the worst.
func (mb *meshBuilder) heatmap(k meshMetric) (*chart, error) {
	d := mb.d
	n := len(d.Hosts)
	idx := map[string]int{}
	names := make([]string, n)
	longest := 3
	for i, h := range d.Hosts {
		idx[h.Name] = i
		names[i] = clip(h.Name, 14)
		longest = max(longest, len([]rune(names[i])))
	}
	value := func(p mesh.PairStatus) (float64, bool) {
		if k == meshRTT {
			if p.RTTUS == nil {
				return 0, false
			}
			return p.RTTUS.P50, true
		}
		if p.Loss == nil {
			return 0, false
		}
		return *p.Loss, true
	}
	cells := map[[2]int]mesh.PairStatus{}
	hi := 0.0
	for _, p := range d.Pairs {
		i, ok1 := idx[p.Src]
		j, ok2 := idx[p.Dst]
		if !ok1 || !ok2 {
			continue
		}
		cells[[2]int{i, j}] = p
		if v, ok := value(p); ok {
			hi = math.Max(hi, v)
		}
	}
	if k == meshLoss {
		hi = math.Max(hi, 0.01) // a scale of at least 1%: a few lost probes are not black
	}
	sendSus, recvSus := map[int]bool{}, map[int]bool{}
	for _, su := range d.Suspects {
		i, ok := idx[su.Name]
		if su.Kind != mesh.KindHost || !ok {
			continue
		}
		sendSus[i] = su.Side == mesh.SideSend || su.Side == mesh.SideBoth
		recvSus[i] = su.Side == mesh.SideReceive || su.Side == mesh.SideBoth
	}
	g := newMatrixGeom(n, longest)
	s := &scene{}
	g.labels(s, names, sendSus, recvSus, "rows probe, columns are probed")
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			x, y := g.left+float64(j)*g.cell, g.top+float64(i)*g.cell
			if i == j {
				s.rect("fl-self", x+0.5, y+0.5, g.cell-1, g.cell-1, "")
				continue
			}
			p, ok := cells[[2]int{i, j}]
			title := d.Hosts[i].Name + " → " + d.Hosts[j].Name + ": " + meshCellText(p)
			v, known := value(p)
			switch {
			case !ok || p.State == mesh.Unknown:
				s.rect("fl-untested", x+0.5, y+0.5, g.cell-1, g.cell-1, title)
				continue
			case p.State == mesh.Down:
				s.rect("fl-failed", x+0.5, y+0.5, g.cell-1, g.cell-1, title)
				s.line("fl-cross", x+3, y+3, x+g.cell-3, y+g.cell-3)
				s.line("fl-cross", x+g.cell-3, y+3, x+3, y+g.cell-3)
				continue
			case !known:
				s.rect("fl-untested", x+0.5, y+0.5, g.cell-1, g.cell-1, title)
			default:
				op := v / hi
				s.cell("fl-cell", x+0.5, y+0.5, g.cell-1, g.cell-1, math.Max(op, 0.04), title)
				if g.cell >= 36 {
					s.text(matrixTextClass(op), x+g.cell/2, y+g.cell/2+4, "middle", meshCellNum(k, v))
				}
			}
			switch {
			case p.State == mesh.Degraded:
				s.rect("fl-slow", x+1.5, y+1.5, g.cell-3, g.cell-3, "")
			case p.Inconclusive != "":
				s.rect("ms-inconclusive", x+1.5, y+1.5, g.cell-3, g.cell-3, "")
			}
		}
	}
	span := float64(n) * g.cell
	for i := range sendSus {
		if sendSus[i] {
			s.rect("fl-frame", g.left-1, g.top+float64(i)*g.cell-1, span+2, g.cell+2, "")
		}
	}
	for j := range recvSus {
		if recvSus[j] {
			s.rect("fl-frame", g.left+float64(j)*g.cell-1, g.top-1, g.cell+2, span+2, "")
		}
	}
	mb.legend(s, g, span, hi, k)
	if k == meshRTT {
		return mb.r.render("mesh-rtt", "Round trips: p50 from each row's host to each column's, µs",
			"Heatmap of the mesh's pairs: rows probe, columns are probed; darker is a longer round trip; degraded pairs outlined, pairs without an answer crossed, suspected hosts framed.",
			g.w, g.h, s)
	}
	return mb.r.render("mesh-loss", "Loss: share of each row's probes that never reached the column's host",
		"Heatmap of the mesh's pairs: rows probe, columns are probed; darker is more loss; degraded pairs outlined, pairs without an answer crossed, suspected hosts framed.",
		g.w, g.h, s)
}

// meshCellNum writes a cell's figure: µs, or loss in percent.
func meshCellNum(k meshMetric, v float64) string {
	if k == meshLoss {
		if v == 0 {
			return "0"
		}
		return num(100*v, 1) + "%"
	}
	if v >= 100 {
		return num(v, 0)
	}
	return num(v, 1)
}

// meshCellText is a pair in words, for its cell's tooltip and its row.
func meshCellText(p mesh.PairStatus) string {
	var parts []string
	parts = append(parts, string(p.State))
	if p.RTTUS != nil {
		parts = append(parts, fmt.Sprintf("RTT p50 %s µs, p99 %s µs", num(p.RTTUS.P50, 1), num(p.RTTUS.P99, 1)))
	}
	if p.Loss != nil {
		parts = append(parts, "loss "+num(100**p.Loss, 2)+"%")
	}
	if p.GoodputGbps != nil {
		parts = append(parts, gbpsOrZero(*p.GoodputGbps)+" Gbit/s")
	}
	if p.Why != "" {
		parts = append(parts, p.Why)
	}
	if p.Inconclusive != "" {
		parts = append(parts, "inconclusive: "+p.Inconclusive)
	}
	return strings.Join(parts, "; ")
}

// legend draws a heatmap's scale and marks, right of it when there is
// room, else under it.
func (mb *meshBuilder) legend(s *scene, g matrixGeom, span, hi float64, k meshMetric) {
	x, y := g.left+span+18, g.top+8
	if float64(g.w)-x < 120 {
		x, y = g.left, g.top+span+40
	}
	s.text("legend", x, y, "start", map[meshMetric]string{meshRTT: "RTT p50, µs", meshLoss: "loss"}[k])
	for i := 0; i <= 4; i++ {
		v := hi * float64(i) / 4
		yy := y + 8 + float64(i)*16
		s.cell("fl-cell", x, yy, 14, 14, math.Max(float64(i)/4, 0.04), "")
		s.text("legend", x+20, yy+11, "start", meshCellNum(k, v))
	}
	y += 8 + 5*16 + 8
	for _, mark := range []struct{ class, text string }{{"fl-slow", "degraded"}, {"ms-inconclusive", "inconclusive"}, {"fl-failed", "down"}, {"fl-frame", "suspected host"}} {
		if mark.class == "fl-failed" {
			s.rect("fl-failed", x, y, 14, 14, "")
			s.line("fl-cross", x+3, y+3, x+11, y+11)
			s.line("fl-cross", x+11, y+3, x+3, y+11)
		} else {
			s.rect(mark.class, x+1, y+1, 12, 12, "")
		}
		s.text("legend", x+20, y+11, "start", mark.text)
		y += 20
	}
}

func (mb *meshBuilder) suspectsSection() (*section, error) {
	const id, title = "mesh-suspects", "Suspects"
	s := &section{ID: id, Title: title}
	if len(mb.d.Suspects) == 0 {
		s.addText("Nothing suspected: %s", mb.d.Verdict)
		return s, nil
	}
	var items []item
	for _, su := range mb.d.Suspects {
		lead := su.Name + " (" + su.Side + " side)"
		next := []string{"linerate doctor   # on " + su.Name + ": NIC, PCIe, IRQs, optics"}
		if su.Kind == mesh.KindPath && len(su.Hosts) == 2 {
			lead = su.Name + " (" + map[string]string{mesh.SideSend: su.Hosts[0] + " → " + su.Hosts[1], mesh.SideReceive: su.Hosts[1] + " → " + su.Hosts[0], mesh.SideBoth: "both ways"}[su.Side] + ")"
			next = []string{"linerate bench <address of " + su.Hosts[1] + "> --repeat 5   # from " + su.Hosts[0] + ": the path alone"}
		}
		items = append(items, item{Class: "warning", Badge: su.Kind, Lead: lead + ", since " + su.Since.Local().Format(time.DateTime),
			Text: strings.Join(su.Evidence, "; "), Code: next})
	}
	s.Blocks = append(s.Blocks, block{Items: items})
	return s, nil
}

func (mb *meshBuilder) pairsSection() (*section, error) {
	const id, title = "mesh-pairs", "Pairs not ok"
	t := &table{ID: "mesh-pairs", Caption: "Pairs degraded, down, not judged yet, or inconclusive",
		Head: []string{"From", "To", "State", "Since", "RTT p50 (µs)", "RTT p99 (µs)", "Loss", "Why"},
		Num:  []bool{false, false, false, false, true, true, true, false}}
	for _, p := range mb.d.Pairs {
		if p.State == mesh.OK && p.Inconclusive == "" {
			continue
		}
		p50, p99, loss := "—", "—", "—"
		if p.RTTUS != nil {
			p50, p99 = num(p.RTTUS.P50, 1), num(p.RTTUS.P99, 1)
		}
		if p.Loss != nil {
			loss = num(100**p.Loss, 2) + "%"
		}
		why, class := p.Why, "crit"
		if p.State == mesh.OK {
			why, class = "inconclusive: "+p.Inconclusive, "warn"
		}
		t.Rows = append(t.Rows, []string{p.Src, p.Dst, string(p.State), p.Since.Local().Format(time.TimeOnly), p50, p99, loss, orDash(why)})
		t.Classes = append(t.Classes, class)
	}
	if len(t.Rows) == 0 {
		return omitted(id, title, fmt.Sprintf("Pairs not ok: none; all %d are ok.", len(mb.d.Pairs))), nil
	}
	s := &section{ID: id, Title: title}
	s.addTable(t)
	return s, nil
}

func (mb *meshBuilder) hostsSection() (*section, error) {
	s := &section{ID: "mesh-hosts", Title: "Hosts"}
	s.addText("Each host's own record over the last minute, as its agent read it: its NIC's counters, its module's flags and its CPUs' other load; and what its agent cost.")
	t := &table{ID: "mesh-hosts", Caption: "Hosts and their evidence",
		Head: []string{"Host", "Address", "Agent", "Agent CPU", "Agent memory", "Evidence"},
		Num:  []bool{false, false, false, true, true, false}}
	for _, h := range mb.d.Hosts {
		state, cpu, mem, class := "up", "—", "—", ""
		if !h.Up {
			state, class = "down: "+h.Error, "crit"
		}
		if h.AgentCPUPct != nil {
			cpu = num(*h.AgentCPUPct, 2) + "%"
		}
		if h.AgentRSSBytes != nil {
			mem = num(float64(*h.AgentRSSBytes)/1e6, 1) + " MB"
		}
		t.Rows = append(t.Rows, []string{h.Name, h.Address, state, cpu, mem, orDash(strings.Join(h.Evidence.Sentences(), "; "))})
		t.Classes = append(t.Classes, class)
	}
	s.addTable(t)
	return s, nil
}

func (mb *meshBuilder) settingsSection() (*section, error) {
	d := mb.d
	s := &section{ID: "mesh-settings", Title: "Settings"}
	every := "never"
	if d.Settings.ThroughputEveryS > 0 {
		every = (time.Duration(d.Settings.ThroughputEveryS) * time.Second).String()
	}
	t := &table{ID: "mesh-settings", Caption: "Settings", Head: []string{"Setting", "Value"}}
	t.Rows = [][]string{
		{"Name", d.Name + " (" + d.Source + ")"},
		{"Hosts", fmt.Sprintf("%d, %d directed pairs", len(d.Hosts), len(d.Hosts)*(len(d.Hosts)-1))},
		{"Probes", fmt.Sprintf("%s per second to each peer, over %d source ports", num(d.Settings.ProbeRate, 1), d.Settings.Flows)},
		{"Throughput tests", "each pair every " + every},
		{"Figures over", num(d.Settings.WindowS, 0) + " s"},
		{"Up since", d.Started.Local().Format(time.DateTime)},
		{"Status taken", d.At.Local().Format(time.DateTime)},
	}
	s.addTable(t)
	return s, nil
}
