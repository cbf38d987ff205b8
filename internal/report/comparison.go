package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/explain"
)

// comparisonSection sets the labels of a report of several side by side:
// each label's sample (the runs of its best point), its median against
// its own path's ceiling, and its change from the first label with the
// same two-sided Mann-Whitney U test `linerate compare` uses, and says in
// what the labels' runs differ.
func (b *builder) comparisonSection() (*section, error) {
	const id, title = "comparison", "Comparison of labels"
	gs := b.labelGroups()
	if len(gs) < 2 {
		return omitted(id, title, "Comparison of labels: the report holds one label."), nil
	}
	s := &section{ID: id, Title: title}
	samples := make([]labelSample, len(gs))
	for i, g := range gs {
		samples[i] = b.sampleOf(g)
	}
	base := samples[0]
	s.addText("Each label's sample is the runs of its best point (one value per run); the change is of the median from label %q, tested with a two-sided Mann-Whitney U test over whole runs (α = 0.05), as linerate compare does. Each label is measured against its own path's ceiling.", gs[0].label)
	t := &table{ID: "comparison", Caption: "Labels side by side",
		Head: []string{"Label", "Runs", "What was measured", "Median (Gbit/s)", "Ceiling (Gbit/s)", "% of ceiling", "Change", "p (U test)", "Reading"},
		Num:  []bool{false, true, false, true, true, true, true, true, false}}
	for i, g := range gs {
		sm := samples[i]
		ceiling := ceilingOf(g.path, true)
		change, p, reading := "—", "—", "the baseline"
		if i > 0 {
			ch := explain.CompareRuns(base.gbps, sm.gbps)
			change, p = fmt.Sprintf("%+.1f%%", 100*ch.Relative), num(ch.P, 3)
			reading = changeReading(ch)
		}
		ceilText := "—"
		if ceiling > 0 {
			ceilText = gbps(ceiling)
		}
		t.Rows = append(t.Rows, []string{g.label, idRanges(sm.ids), sm.what, gbps(median(sm.gbps)), ceilText, pct(median(sm.gbps), ceiling), change, p, reading})
	}
	s.addTable(t)
	var diffs []item
	for i := 1; i < len(gs); i++ {
		if d := differences(gs[0], samples[0], gs[i], samples[i]); len(d) > 0 {
			diffs = append(diffs, item{Lead: fmt.Sprintf("%q and %q differ in", gs[0].label, gs[i].label), Text: strings.Join(d, "; ")})
		}
	}
	if len(diffs) > 0 {
		s.Blocks = append(s.Blocks, block{Items: diffs})
	}
	return s, nil
}

// labelSample is the runs a label is compared by.
type labelSample struct {
	ids  []int64
	gbps []float64
	what string // "native, 1 stream, send, placement auto"
	run  *Run   // the first, for what it measured
}

// sampleOf is the runs of the label's best point (its campaign's, else
// those of the label's best run's kind).
func (b *builder) sampleOf(g *labelGroup) labelSample {
	var sm labelSample
	if m := b.bestOf(g.has); m != nil {
		sm.ids = slices.Clone(m.runIDs)
		if m.point == nil { // loose runs: all of the label's runs like the best one
			first := b.runs[m.runIDs[0]]
			sm.ids = nil
			for i := range b.ds.Runs {
				r := &b.ds.Runs[i]
				if g.has(r.Result.RunID) && runWhat(r) == runWhat(first) {
					sm.ids = append(sm.ids, r.Result.RunID)
				}
			}
		}
	}
	slices.Sort(sm.ids)
	for _, id := range sm.ids {
		r := b.runs[id]
		if sm.run == nil {
			sm.run = r
			sm.what = runWhat(r)
		}
		sm.gbps = append(sm.gbps, runGbps(&r.Result))
	}
	return sm
}

// runWhat is what a run measured: "native, 1 stream, send, placement auto".
func runWhat(r *Run) string {
	st := r.Result.Start
	dir := string(st.Direction)
	if dir == "" {
		dir = "send"
	}
	place := "auto"
	if strings.Contains(st.Placement.Source, "user") {
		place = cpus(st.Placement.Client) + "/" + cpus(st.Placement.Server)
	}
	return fmt.Sprintf("%s, %d stream%s, %s, placement %s", orDash(r.Result.Engine), st.Streams, plural(st.Streams), dir, place)
}

// changeReading words a U test's result.
func changeReading(ch explain.Change) string {
	switch {
	case !ch.Significant && ch.Note != "":
		return "too few runs to tell"
	case !ch.Significant:
		return "no significant difference"
	case ch.Relative < 0:
		return "significantly slower"
	}
	return "significantly faster"
}

// differences lists what sets two labels' runs apart: the path (hosts,
// line rate, MTU) and what was measured.
func differences(ga *labelGroup, a labelSample, gb *labelGroup, b labelSample) []string {
	var out []string
	add := func(what, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s %s vs %s", what, x, y))
		}
	}
	pathOf := func(p *path) (hosts, line, mtu string) {
		if p == nil {
			return "unknown", "unknown", "unknown"
		}
		line, mtu = "unknown", "unknown"
		if p.line.gbps > 0 {
			line = lineText(p.line.gbps) + " Gbit/s"
		}
		for _, e := range p.ends {
			if e.nic != nil && e.nic.MTU != nil {
				mtu = strconv.Itoa(*e.nic.MTU)
				break
			}
		}
		return p.hostsText(), line, mtu
	}
	ha, la, ma := pathOf(ga.path)
	hb, lb, mb := pathOf(gb.path)
	add("hosts", ha, hb)
	add("line rate", la, lb)
	add("MTU", ma, mb)
	if a.run != nil && b.run != nil {
		add("runs", a.what, b.what)
	}
	return out
}
