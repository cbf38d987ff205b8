package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/linerate/linerate/internal/result"
)

// resultsSection shows each campaign's points and every run, each against
// the ceiling; perftest's results are in the RDMA section.
func (b *builder) resultsSection() (*section, error) {
	const id, title = "results", "Results"
	if len(b.ds.Runs) == 0 {
		if len(b.ds.Perftest) > 0 {
			return omitted(id, title, "Results: no TCP bench run in this data set; perftest's RDMA results are in the RDMA section."), nil
		}
		return omitted(id, title, "Results: no bench run and no perftest result in this data set."), nil
	}
	s := &section{ID: id, Title: title}
	inCampaign := map[int64]bool{}
	for ci := range b.ds.Campaigns {
		c := &b.ds.Campaigns[ci]
		if err := b.campaignResults(s, ci, c); err != nil {
			return nil, err
		}
		for _, p := range c.Points {
			for _, rid := range p.RunIDs {
				inCampaign[rid] = true
			}
		}
	}
	// Loose ping-pong runs stay off the throughput chart, as ping-pong
	// campaigns do: their bytes over time say nothing the latency section's
	// percentiles do not.
	var loose []*Run
	for i := range b.ds.Runs {
		if r := &b.ds.Runs[i]; !inCampaign[r.Result.RunID] && r.Result.End.Latency == nil && r.Result.End.Transactions == nil {
			loose = append(loose, r)
		}
	}
	if len(loose) > 0 {
		s.addHeading("Runs outside campaigns")
		c, err := b.timeChart("time-runs", "Throughput over time: runs outside campaigns", []runGroup{{label: "runs", runs: loose}})
		if err != nil {
			return nil, err
		}
		s.addChart(c)
	}
	if len(b.ds.Runs) > 0 {
		s.addTable(b.runsTable())
		b.nicCounters(s)
	}
	return s, nil
}

// campaignName is "Campaign 4 (before-tune)": the database's number,
// which history shows too, else its place in the report.
func campaignName(ci int, c *Campaign) string {
	id := int64(ci + 1)
	if c.CampaignID > 0 {
		id = c.CampaignID
	}
	n := "Campaign " + strconv.FormatInt(id, 10)
	if c.Label != "" {
		n += " (" + c.Label + ")"
	}
	return n
}

// campaignResults adds one campaign's table and charts.
func (b *builder) campaignResults(s *section, ci int, c *Campaign) error {
	runs := 0
	for _, p := range c.Points {
		runs += len(p.RunIDs)
	}
	s.addHeading(fmt.Sprintf("%s: %d point%s, %d run%s", campaignName(ci, c), len(c.Points), plural(len(c.Points)), runs, plural(runs)))
	if isPingPong(c) {
		// Round trips: a ping-pong's bytes over time say nothing its
		// percentiles do not.
		s.addTable(latencyPointsTable(ci, c))
		return nil
	}
	if isTransactions(c) {
		s.addTable(transactionsPointsTable(ci, c))
		return nil
	}
	s.addTable(b.pointsTable(ci, c))
	tc, err := b.timeChart(fmt.Sprintf("time-c%d", ci+1), "Throughput over time: "+campaignName(ci, c), b.campaignGroups(c))
	if err != nil {
		return err
	}
	s.addChart(tc)
	if isSweep(c) {
		sc, err := b.sweepChart(fmt.Sprintf("sweep-c%d", ci+1), c)
		if err != nil {
			return err
		}
		s.addChart(sc)
	}
	return nil
}

// latencyPointsTable has one row per point of a ping-pong campaign: the
// medians across its runs of their percentiles, with their ranges.
func latencyPointsTable(ci int, c *Campaign) *table {
	t := &table{ID: fmt.Sprintf("points-c%d", ci+1), Caption: campaignName(ci, c) + ": round trips per point, µs (median of the runs' percentiles, min–max across runs)",
		Head: []string{"Placement", "Runs", "p50", "p50 min–max", "p99", "p99 min–max", "p99.9", "Round trips", "Per second", "Dropped", "Out of order"},
		Num:  []bool{false, true, true, true, true, true, true, true, true, true, true}}
	for _, p := range c.Points {
		l := p.Latency
		if l == nil {
			continue
		}
		class := ""
		if c.Best != nil && c.Best.Streams == p.Streams && c.Best.Placement == p.Placement {
			class = "best"
		}
		t.Rows = append(t.Rows, []string{orDash(p.Placement), strconv.Itoa(len(p.RunIDs)),
			usText(l.MedianP50Us), usText(l.MinP50Us) + "–" + usText(l.MaxP50Us),
			usText(l.MedianP99Us), usText(l.MinP99Us) + "–" + usText(l.MaxP99Us), usText(l.MedianP999Us),
			strconv.FormatInt(l.Samples, 10), strconv.FormatFloat(l.MedianRatePerS, 'f', 0, 64),
			strconv.FormatInt(l.Dropped, 10), strconv.FormatInt(l.OutOfOrder, 10)})
		t.Classes = append(t.Classes, class)
	}
	return t
}

// pointsTable has one row per campaign point.
func (b *builder) pointsTable(ci int, c *Campaign) *table {
	t := &table{ID: fmt.Sprintf("points-c%d", ci+1), Caption: campaignName(ci, c) + ": per point",
		Head: []string{"Streams", "Placement", "Runs", "Median (Gbit/s)", "95% CI (Gbit/s)", "Min–max (Gbit/s)", "% of ceiling", "Retr. per run", "CPU s per Gbit, client / server"},
		Num:  []bool{true, false, true, true, true, true, true, true, true}}
	ceiling := ceilingOf(b.campaignPath(c), true)
	for _, p := range c.Points {
		runs := b.runsOf(p.RunIDs)
		ci95 := "—"
		if p.CI95Gbps != nil {
			ci95 = gbps(p.CI95Gbps[0]) + "–" + gbps(p.CI95Gbps[1])
		}
		cl, sv, retr := cpuCost(runs)
		class := ""
		if c.Best != nil && c.Best.Streams == p.Streams && c.Best.Placement == p.Placement {
			class = "best"
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(p.Streams), orDash(p.Placement), strconv.Itoa(len(p.RunIDs)),
			gbps(p.MedianGbps), ci95, gbps(p.MinGbps) + "–" + gbps(p.MaxGbps), pct(p.MedianGbps, ceiling), retr, cl + " / " + sv})
		t.Classes = append(t.Classes, class)
	}
	return t
}

// cpuCost is each end's CPU cost in CPU seconds per Gbit moved (its
// process's CPU time over goodput × seconds: the unit bench prints and
// stores as cpu_s_per_gbit), the median over the runs, and the median
// retransmits per run.
func cpuCost(runs []*Run) (client, server, retr string) {
	if len(runs) == 0 {
		return "—", "—", "—"
	}
	var cs, ss, rs []float64
	for _, r := range runs {
		if c, s, ok := cpuPerGbit(&r.Result); ok {
			cs, ss = append(cs, c), append(ss, s)
		}
		rs = append(rs, float64(r.Result.End.SumSent.Retransmits))
	}
	client, server = "—", "—"
	if len(cs) > 0 {
		client, server = num(median(cs), 3), num(median(ss), 3)
	}
	return client, server, num(median(rs), 0)
}

// cpuPerGbit is one run's CPU seconds per Gbit moved on each end; ok is
// false when nothing was moved or no CPU time was recorded.
func cpuPerGbit(res *result.Result) (client, server float64, ok bool) {
	sec := res.End.Seconds
	if sec <= 0 {
		sec = res.Start.DurationS
	}
	gbit := runGbps(res) * sec
	if gbit <= 0 || res.End.CPU.ClientSeconds+res.End.CPU.ServerSeconds <= 0 {
		return 0, 0, false
	}
	return res.End.CPU.ClientSeconds / gbit, res.End.CPU.ServerSeconds / gbit, true
}

// campaignGroups colours a campaign's runs by bucket when it has buckets,
// else by point.
func (b *builder) campaignGroups(c *Campaign) []runGroup {
	var groups []runGroup
	for _, p := range c.Points {
		prefix := ""
		if len(c.Points) > 1 {
			prefix = pointLabel(p) + " · "
		}
		if len(p.Buckets) == 0 {
			groups = append(groups, runGroup{label: pointLabel(p), runs: b.runsOf(p.RunIDs)})
			continue
		}
		for _, bk := range p.Buckets {
			groups = append(groups, runGroup{label: prefix + bk.Name, runs: b.runsOf(bk.RunIDs)})
		}
	}
	return groups
}

// pointLabel is "4 streams, 6,6".
func pointLabel(p Point) string {
	l := strconv.Itoa(p.Streams) + " stream" + plural(p.Streams)
	if p.Placement != "" {
		l += ", " + p.Placement
	}
	return l
}

// runsTable has one row per run: a latency run shows its typical round
// trip where the others show goodput and CPU cost (the ping-pong's bytes
// say nothing of the path's rate), and a UDP run no retransmits.
func (b *builder) runsTable() *table {
	t := &table{ID: "runs", Caption: "Every run",
		Head: []string{"Run", "Label", "Engine", "Streams", "Placement, client / server", "Gbit/s", "% of ceiling", "Retr.", "CPU s per Gbit, client / server", "Tune"},
		Num:  []bool{true, false, false, true, false, true, true, true, true, false}}
	for i := range b.ds.Runs {
		r := &b.ds.Runs[i]
		ceiling := ceilingOf(b.pathOf(r), true)
		res := &r.Result
		cl, sv, _ := cpuCost([]*Run{r})
		g := runGbps(res)
		eng := orDash(res.Engine)
		if d := res.Start.Direction; d != "" && d != result.Send {
			eng += ", " + string(d)
		}
		rate, share, retr := gbps(g), pct(g, ceiling), strconv.FormatUint(res.End.SumSent.Retransmits, 10)
		switch {
		case res.Error != "": // a run cut short: what it measured is no result
			rate, share = "failed: "+res.Error, "—"
		case res.End.Latency != nil: // its bytes are round trips, not goodput
			rate, share = "p50 "+usText(res.End.Latency.RTTUs.P50)+" µs (latency)", "—"
			cl, sv = "—", "—" // CPU per Gbit of a few kbit/s means nothing
		case res.End.Transactions != nil: // its bytes are requests and responses, not goodput
			rate, share = strconv.FormatFloat(res.End.Transactions.PerSecond, 'f', 0, 64)+" transactions/s", "—"
			cl, sv = "—", "—" // its CPU is per transaction, in the Transactions section
		}
		if res.Start.Protocol == result.UDP { // UDP retransmits nothing: its loss is in the UDP table
			retr = "—"
		}
		t.Rows = append(t.Rows, []string{strconv.FormatInt(res.RunID, 10), orDash(r.Label), eng,
			strconv.Itoa(res.Start.Streams), cpus(res.Start.Placement.Client) + " / " + cpus(res.Start.Placement.Server),
			rate, share, retr, cl + " / " + sv, orDash(r.TuneID)})
	}
	return t
}

// ceilingGbps is the ceiling of the first run's path to compare results
// with: with the MTU stage for TCP, without it for RDMA (which has its own
// framing).
func (b *builder) ceilingGbps(tcp bool) float64 { return ceilingOf(b.path, tcp) }

// ceilingOf is a path's ceiling (see ceilingGbps); 0 when unknown.
func ceilingOf(p *path, tcp bool) float64 {
	if p == nil || p.line.gbps == 0 {
		return 0
	}
	if tcp {
		return p.ceiling
	}
	c := p.line.gbps
	if p.pcie.gbps > 0 {
		c = math.Min(c, p.pcie.gbps)
	}
	return c
}

// pcieRaw is the lowest raw PCIe rate over the path's ends.
func (b *builder) pcieRaw() float64 {
	raw := 0.0
	if b.path == nil {
		return 0
	}
	for _, e := range b.path.ends {
		if e.nic != nil && e.nic.PCIe != nil && e.nic.PCIe.RawGbps != nil {
			if v := *e.nic.PCIe.RawGbps; raw == 0 || v < raw {
				raw = v
			}
		}
	}
	return raw
}

// perftestTables adds the RDMA bandwidth and latency tables.
func (b *builder) perftestTables(s *section) {
	bw := &table{ID: "rdma-bandwidth", Caption: "RDMA bandwidth (perftest)",
		Head: []string{"Test", "Device", "Size (bytes)", "Iterations", "Peak (Gbit/s)", "Average (Gbit/s)", "Msg rate (Mpps)", "% of line rate", "% of PCIe raw", "% of ceiling"},
		Num:  []bool{false, false, true, true, true, true, true, true, true, true}}
	lat := &table{ID: "rdma-latency", Caption: "RDMA latency (perftest), microseconds",
		Head: []string{"Test", "Device", "Size (bytes)", "Iterations", "Min", "Typical", "Average", "P99", "P99.9", "Max"},
		Num:  []bool{false, false, true, true, true, true, true, true, true, true}}
	line, raw, ceiling := 0.0, b.pcieRaw(), b.ceilingGbps(false)
	if b.path != nil {
		line = b.path.line.gbps
	}
	for _, r := range b.ds.Perftest {
		if l := r.Latency; l != nil {
			lat.Rows = append(lat.Rows, []string{r.Test, orDash(r.Device), strconv.Itoa(r.SizeBytes), strconv.Itoa(r.Iterations),
				num(l.MinUs, 2), num(l.TypicalUs, 2), num(l.AvgUs, 2), num(l.P99Us, 2), num(l.P999Us, 2), num(l.MaxUs, 2)})
			continue
		}
		bw.Rows = append(bw.Rows, []string{r.Test, orDash(r.Device), strconv.Itoa(r.SizeBytes), strconv.Itoa(r.Iterations),
			gbps(r.PeakGbps), gbps(r.AverageGbps), num(r.MsgRateMpps, 6), pct(r.AverageGbps, line), pct(r.AverageGbps, raw), pct(r.AverageGbps, ceiling)})
	}
	if len(bw.Rows) > 0 {
		s.addHeading("RDMA bandwidth")
		s.addText("%% of PCIe raw compares with the link's rate after line coding (%s Gbit/s); %% of ceiling with what it carries after TLP and DLLP overhead (%s Gbit/s), the figure that binds.", gbps(raw), gbps(ceiling))
		s.addTable(bw)
	}
	if len(lat.Rows) > 0 {
		s.addHeading("RDMA latency")
		s.addTable(lat)
	}
}

// sortedIDs returns run IDs in order.
func sortedIDs(runs []*Run) []int64 {
	ids := make([]int64, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.Result.RunID)
	}
	slices.Sort(ids)
	return ids
}
