package report

import (
	"fmt"
	"strconv"

	"github.com/linerate/linerate/internal/explain"
)

// tuningSection shows each tune journal's changes with their values before
// and after, and the runs on that host before and after it.
func (b *builder) tuningSection() (*section, error) {
	const id, title = "tuning", "Tuning applied"
	if len(b.ds.Tunes) == 0 {
		return omitted(id, title, "Tuning applied: no tune journal in this data set (linerate tune --apply records one)."), nil
	}
	s := &section{ID: id, Title: title}
	for ji := range b.ds.Tunes {
		j := &b.ds.Tunes[ji]
		head := fmt.Sprintf("Tune %s on %s", j.ID, orDash(j.Host))
		if j.Profile != "" {
			head += ", profile " + j.Profile
		}
		if j.Applied != "" {
			head += ", applied " + j.Applied
		}
		if j.Reverted {
			head += " (reverted since)"
		}
		s.addHeading(head)
		if j.NotFound != "" {
			s.addText("The journal of tune %s could not be read here: %s. Its changes are not listed.", j.ID, j.NotFound)
		}
		s.addTable(changesTable(ji, j))
		if err := b.beforeAfter(s, ji, j); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func changesTable(ji int, j *TuneJournal) *table {
	t := &table{ID: fmt.Sprintf("tune-%d-changes", ji+1), Caption: fmt.Sprintf("Changes of tune %s", j.ID),
		Head: []string{"Kind", "Target", "Before", "After", "Answers finding"}}
	for _, c := range j.Changes {
		t.Rows = append(t.Rows, []string{c.Kind, c.Target, orDash(c.Before), orDash(c.After), orDash(c.Finding)})
	}
	return t
}

// tuneRuns splits the unpaced TCP runs on j's host into those made
// without a tune and those made under j.
func (b *builder) tuneRuns(j *TuneJournal) (before, after []*Run) {
	for i := range b.ds.Runs {
		r := &b.ds.Runs[i]
		if j.Host != "" && r.Result.Start.Client.Hostname != j.Host && r.Result.Start.Server.Hostname != j.Host {
			continue
		}
		if r.Result.Error != "" { // cut short: no sample of before or after
			continue
		}
		if !r.Result.Unpaced() { // a ping-pong's or a paced run's Gbit/s are no throughput
			continue
		}
		switch r.TuneID {
		case "":
			before = append(before, r)
		case j.ID:
			after = append(after, r)
		}
	}
	return before, after
}

// tuneNote is the verdict's sentence on tuning: what the first journal
// with runs before and after it did to the median.
func (b *builder) tuneNote() string {
	for ji := range b.ds.Tunes {
		j := &b.ds.Tunes[ji]
		before, after := b.tuneRuns(j)
		if len(before) == 0 || len(after) == 0 {
			continue
		}
		mb, ma := medianGbps(before), medianGbps(after)
		note := fmt.Sprintf(" Tune %s (%d change%s) took the median from %s to %s Gbit/s (%s%s, %s)",
			j.ID, len(j.Changes), plural(len(j.Changes)), gbps(mb), gbps(ma), sign(ma-mb), pct(ma-mb, mb), tuneSignificance(before, after))
		if c := b.ceilingGbps(true); c > 0 {
			// What was achieved of the ceiling, before and after.
			note += fmt.Sprintf(": from %s to %s of the %s Gbit/s ceiling", pct(mb, c), pct(ma, c), gbps(c))
		}
		return note + "."
	}
	return ""
}

// tuneSignificance words the two-sided Mann-Whitney U test of the runs
// before a tune against those after, over whole runs, as linerate compare
// does: "p = 0.057, not significant". A change of the median the test
// does not support is no effect of the tune.
func tuneSignificance(before, after []*Run) string {
	gb := func(runs []*Run) []float64 {
		out := make([]float64, 0, len(runs))
		for _, r := range runs {
			out = append(out, runGbps(&r.Result))
		}
		return out
	}
	ch := explain.CompareRuns(gb(before), gb(after))
	switch {
	case ch.Significant:
		return fmt.Sprintf("p = %.2g, significant by the U test over whole runs", ch.P)
	case ch.Note != "":
		return fmt.Sprintf("p = %.2g, not significant: too few runs to tell (%d against %d)", ch.P, len(before), len(after))
	}
	return fmt.Sprintf("p = %.2g, not significant by the U test over whole runs: within the runs' spread", ch.P)
}

// medianGbps is the runs' median throughput, rounded to 3 decimals as
// bench rounds a campaign point's median: the same runs show the same
// figure in the results and the tuning sections (rounding the raw median
// straight to 2 decimals could differ in the last digit).
func medianGbps(runs []*Run) float64 {
	vals := make([]float64, 0, len(runs))
	for _, r := range runs {
		vals = append(vals, runGbps(&r.Result))
	}
	return round3(median(vals))
}

// beforeAfter compares the runs on the journal's host without a tune with
// those made under this journal.
func (b *builder) beforeAfter(s *section, ji int, j *TuneJournal) error {
	before, after := b.tuneRuns(j)
	if len(before) == 0 || len(after) == 0 {
		s.addText("No runs on %s both before and after this tune, so no comparison.", orDash(j.Host))
		return nil
	}
	t := &table{ID: fmt.Sprintf("tune-%d-bench", ji+1), Caption: fmt.Sprintf("Bench before and after tune %s", j.ID),
		Head: []string{"Phase", "Runs", "Median (Gbit/s)", "Min (Gbit/s)", "Max (Gbit/s)", "CPU client (s per Gbit)", "CPU server (s per Gbit)"},
		Num:  []bool{false, true, true, true, true, true, true}}
	var meds [2]float64
	for i, ph := range []struct {
		name string
		runs []*Run
	}{{"before", before}, {"after", after}} {
		lo, hi := spread(ph.runs)
		cl, sv, _ := cpuCost(ph.runs)
		meds[i] = medianGbps(ph.runs)
		t.Rows = append(t.Rows, []string{ph.name, strconv.Itoa(len(ph.runs)), gbps(meds[i]), gbps(lo), gbps(hi), cl, sv})
	}
	s.addText("Median throughput went from %s to %s Gbit/s (%s%s, %s), and the spread from %s to %s Gbit/s.",
		gbps(meds[0]), gbps(meds[1]), sign(meds[1]-meds[0]), pct(meds[1]-meds[0], meds[0]), tuneSignificance(before, after),
		num(spreadWidth(before), 2), num(spreadWidth(after), 2))
	s.addTable(t)
	c, err := b.dotsChart(fmt.Sprintf("tune-%d-dots", ji+1), []runGroup{{label: "before", runs: before}, {label: "after " + j.ID, runs: after}})
	if err != nil {
		return err
	}
	if c != nil {
		c.Title = "Runs before and after tune " + j.ID
	}
	s.addChart(c)
	return nil
}

func sign(v float64) string {
	if v > 0 {
		return "+"
	}
	return ""
}

func spreadWidth(runs []*Run) float64 {
	lo, hi := spread(runs)
	return hi - lo
}
