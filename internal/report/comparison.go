package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/result"
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
	// Runs of another kind (a ping-pong, a UDP stream at a rate) are shown
	// by their own figure and compared only with the baseline's kind:
	// their Gbit/s are not a throughput, and no change is computed across
	// kinds.
	mixed := slices.ContainsFunc(samples, func(sm labelSample) bool { return sm.kind != result.KindTCP || sm.rate != "" })
	if mixed {
		s.addText("Labels of other kinds than bulk TCP are shown by their own figure (the median RTT p50 of a latency run, the received goodput of a UDP run at its rate, the transactions per second of a transaction run) and compared only with a baseline of the same kind and rate, as linerate compare does.")
	}
	medianHead := "Median (Gbit/s)"
	if mixed {
		medianHead = "Median"
	}
	t := &table{ID: "comparison", Caption: "Labels side by side",
		Head: []string{"Label", "Runs", "What was measured", medianHead, "Ceiling (Gbit/s)", "% of ceiling", "Change", "p (U test)", "Reading"},
		Num:  []bool{false, true, false, true, true, true, true, true, false}}
	for i, g := range gs {
		sm := samples[i]
		ceiling := ceilingOf(g.path, true)
		change, p, reading := "—", "—", "the baseline"
		switch {
		case i == 0:
		case sm.kind != base.kind || sm.rate != base.rate:
			reading = fmt.Sprintf("not compared: %s, the baseline %s", sm.kindText(), base.kindText())
		case len(sm.values) == 0 || len(base.values) == 0:
			reading = "no finished run to compare"
		default:
			ch := explain.CompareRuns(base.values, sm.values)
			if !math.IsNaN(ch.Relative) && !math.IsInf(ch.Relative, 0) {
				change = fmt.Sprintf("%+.1f%%", 100*ch.Relative)
			}
			p = num(ch.P, 3)
			reading = changeReading(ch, sm.kind)
		}
		ceilText, share := "—", "—"
		if ceiling > 0 && sm.kind == result.KindTCP && sm.rate == "" {
			ceilText, share = gbps(ceiling), pct(median(sm.values), ceiling)
		}
		med := gbps(median(sm.values))
		if mixed {
			med = sm.valueText(median(sm.values))
		}
		t.Rows = append(t.Rows, []string{g.label, idRanges(sm.ids), sm.what, med, ceilText, share, change, p, reading})
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
	ids []int64
	// values are each run's figure of the kind: goodput in Gbit/s (tcp,
	// udp), RTT p50 in µs (latency), transactions per second.
	values []float64
	kind   result.Kind
	rate   string // the pace asked, "" unpaced
	what   string // "native, 1 stream, send, placement auto"
	run    *Run   // the first, for what it measured
}

// kindText is "a latency run at 1000/s", "a tcp run".
func (sm labelSample) kindText() string {
	s := "a " + string(sm.kind) + " run"
	if sm.rate != "" {
		s += " at " + sm.rate
	}
	return s
}

// valueText is a median of the sample's figure with its unit.
func (sm labelSample) valueText(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	switch sm.kind {
	case result.KindLatency:
		return strconv.FormatFloat(v, 'f', 1, 64) + " µs RTT p50"
	case result.KindTransactions:
		return strconv.FormatFloat(v, 'f', 0, 64) + "/s"
	}
	return gbps(v) + " Gbit/s"
}

// runValue is a run's figure of its kind; ok is false when the run lacks
// it (too few round trips for a p50).
func runValue(r *result.Result) (float64, bool) {
	switch r.Kind() {
	case result.KindLatency:
		if p := r.End.Latency.RTTUs.P50; p != nil {
			return *p, true
		}
		return 0, false
	case result.KindTransactions:
		if t := r.End.Transactions; t != nil {
			return t.PerSecond, true
		}
		return 0, false
	}
	return runGbps(r), true
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
	if len(sm.ids) == 0 {
		// No throughput point (a label of ping-pongs or transactions):
		// the label's finished runs like its first.
		var first *Run
		for i := range b.ds.Runs {
			r := &b.ds.Runs[i]
			if !g.has(r.Result.RunID) || r.Result.Error != "" {
				continue
			}
			if first == nil {
				first = r
			}
			if runWhat(r) == runWhat(first) && r.Result.Kind() == first.Result.Kind() && r.Result.Rate() == first.Result.Rate() {
				sm.ids = append(sm.ids, r.Result.RunID)
			}
		}
	}
	slices.Sort(sm.ids)
	for _, id := range sm.ids {
		r := b.runs[id]
		if sm.run == nil {
			sm.run = r
			sm.what = runWhat(r)
			sm.kind, sm.rate = r.Result.Kind(), r.Result.Rate()
			if sm.kind != result.KindTCP || sm.rate != "" {
				sm.what = strings.TrimPrefix(sm.kindText(), "a ") + ": " + sm.what
			}
		}
		if v, ok := runValue(&r.Result); ok {
			sm.values = append(sm.values, v)
		}
	}
	if sm.kind == "" {
		sm.kind = result.KindTCP
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

// changeReading words a U test's result for the kind's figure (a higher
// RTT is slower, a higher goodput or transaction rate faster).
func changeReading(ch explain.Change, kind result.Kind) string {
	slower := ch.Relative < 0
	if kind == result.KindLatency {
		slower = ch.Relative > 0
	}
	switch {
	case !ch.Significant && ch.Note != "":
		return "too few runs to tell"
	case !ch.Significant:
		return "no significant difference"
	case slower:
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
