package report

import (
	"fmt"
	"math"
	"strconv"
)

// varianceSection explains run-to-run variance: bench's explanation, the
// buckets, the runs as dots, and the per-CPU picture of each bucket on
// both ends.
func (b *builder) varianceSection() (*section, error) {
	const id, title = "variance", "Variance and placement"
	s := &section{ID: id, Title: title}
	for ci := range b.ds.Campaigns {
		c := &b.ds.Campaigns[ci]
		if !repeated(c) {
			continue
		}
		if err := b.campaignVariance(s, ci, c); err != nil {
			return nil, err
		}
	}
	if len(s.Blocks) == 0 {
		return omitted(id, title, "Variance and placement: no repeated runs (bench --repeat) in this data set."), nil
	}
	return s, nil
}

// repeated reports whether some point of a campaign ran more than once.
func repeated(c *Campaign) bool {
	for _, p := range c.Points {
		if len(p.RunIDs) > 1 {
			return true
		}
	}
	return false
}

func (b *builder) campaignVariance(s *section, ci int, c *Campaign) error {
	s.addHeading(campaignName(ci, c))
	if len(c.Explanation) > 0 {
		var items []item
		for _, e := range c.Explanation {
			items = append(items, item{Text: e})
		}
		s.Blocks = append(s.Blocks, block{Items: items})
	}
	groups := b.campaignGroups(c)
	if !isPingPong(c) && !isTransactions(c) { // their spread is in their explanation and table, in µs or per second, not Gbit/s
		s.addTable(b.bucketTable(ci, c))
		dc, err := b.dotsChart(fmt.Sprintf("dots-c%d", ci+1), groups)
		if err != nil {
			return err
		}
		s.addChart(dc)
	}
	if len(groups) > maxHeatGroups {
		s.addText("The per-CPU picture is left out: %d groups are more than %d rows can show.", len(groups), maxHeatGroups)
		return nil
	}
	for _, role := range []string{"client", "server"} {
		hc, err := b.heatmapChart(fmt.Sprintf("cpu-c%d-%s", ci+1, role), role, groups)
		if err != nil {
			return err
		}
		s.addChart(hc)
	}
	return nil
}

// maxHeatGroups bounds a heatmap's row groups (buckets or points).
const maxHeatGroups = 12

// bucketTable has one row per bucket (or per point without buckets).
func (b *builder) bucketTable(ci int, c *Campaign) *table {
	t := &table{ID: fmt.Sprintf("buckets-c%d", ci+1), Caption: campaignName(ci, c) + ": buckets",
		Head: []string{"Point", "Bucket", "Runs", "Run IDs", "Median (Gbit/s)", "Min (Gbit/s)", "Max (Gbit/s)", "% of ceiling", "What sets it apart"},
		Num:  []bool{false, false, true, false, true, true, true, true, false}}
	ceiling := ceilingOf(b.campaignPath(c), true)
	for _, p := range c.Points {
		if len(p.Buckets) == 0 {
			lo, hi := spread(b.runsOf(p.RunIDs))
			t.Rows = append(t.Rows, []string{pointLabel(p), "—", strconv.Itoa(len(p.RunIDs)), idRanges(sortedIDs(b.runsOf(p.RunIDs))),
				gbps(p.MedianGbps), gbps(lo), gbps(hi), pct(p.MedianGbps, ceiling), "—"})
			continue
		}
		for _, bk := range p.Buckets {
			runs := b.runsOf(bk.RunIDs)
			lo, hi := spread(runs)
			t.Rows = append(t.Rows, []string{pointLabel(p), bk.Name, strconv.Itoa(len(bk.RunIDs)), idRanges(sortedIDs(runs)),
				gbps(bk.MedianGbps), gbps(lo), gbps(hi), pct(bk.MedianGbps, ceiling), orDash(bucketWhy(bk))})
		}
	}
	return t
}

// spread is the lowest and highest throughput of some runs.
func spread(runs []*Run) (lo, hi float64) {
	lo = math.Inf(1)
	for _, r := range runs {
		g := runGbps(&r.Result)
		lo, hi = math.Min(lo, g), math.Max(hi, g)
	}
	if len(runs) == 0 {
		lo = 0
	}
	return lo, hi
}
