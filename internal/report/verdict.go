package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/result"
)

// Thresholds of the verdict.
const (
	// nearCeiling: a result at or above this share of the ceiling is
	// limited by the ceiling's bottleneck.
	nearCeiling = 0.9
	// hotCPU: a CPU at or above this busy share (%) on average over the
	// best runs is saturated.
	hotCPU = 90.0
)

// measured is the best result of the dataset.
type measured struct {
	gbps   float64
	what   string  // what the number is
	runIDs []int64 // the runs behind it (TCP)
	point  *Point  // the campaign point, when it is one
	rdma   bool
}

// best finds the best campaign point median, else the best run, and the
// best perftest average; the higher of the two is the result.
func (b *builder) best() *measured {
	var m *measured
	better := func(c *measured) {
		if c != nil && (m == nil || c.gbps > m.gbps) {
			m = c
		}
	}
	for ci := range b.ds.Campaigns {
		for pi := range b.ds.Campaigns[ci].Points {
			p := &b.ds.Campaigns[ci].Points[pi]
			better(&measured{gbps: p.MedianGbps, runIDs: p.RunIDs, point: p,
				what: fmt.Sprintf("median of %d run%s, %d stream%s, placement %s", len(p.RunIDs), plural(len(p.RunIDs)), p.Streams, plural(p.Streams), orDash(p.Placement))})
		}
	}
	if m == nil {
		for i := range b.ds.Runs {
			r := &b.ds.Runs[i]
			if r.Result.Error != "" { // cut short: what it measured is no result
				continue
			}
			better(&measured{gbps: runGbps(&r.Result), runIDs: []int64{r.Result.RunID}, what: "run " + strconv.FormatInt(r.Result.RunID, 10)})
		}
	}
	for _, r := range b.ds.Perftest {
		if r.Latency == nil {
			better(&measured{gbps: r.AverageGbps, rdma: true, what: r.Test + " average"})
		}
	}
	if m != nil && !known(m.gbps) {
		return nil
	}
	return m
}

// verdict is the report's first sentence, and what tuning did when the
// data show runs before and after it.
func (b *builder) verdict() string { return b.verdictHead() + b.tuneNote() }

// verdictHead is what was achieved against the ceiling, and what limits it.
func (b *builder) verdictHead() string {
	m, p := b.best(), b.path
	switch {
	case m == nil && (p == nil || p.ceiling == 0):
		return "Nothing was measured, and no ceiling is known: the data hold no run and no line rate."
	case m == nil:
		return fmt.Sprintf("Nothing was measured; the ceiling is %s Gbit/s, set by %s.", gbps(p.ceiling), p.factor())
	case p == nil || p.ceiling == 0:
		return fmt.Sprintf("Achieved %s Gbit/s (%s); no ceiling is known, as no line rate was reported for the path.", gbps(m.gbps), m.what)
	}
	head := fmt.Sprintf("Achieved %s of %s Gbit/s (%s of the ceiling, %s of the %s Gbit/s line rate)",
		gbps(m.gbps), gbps(p.ceiling), pct(m.gbps, p.ceiling), pct(m.gbps, p.line.gbps), lineText(p.line.gbps))
	if m.gbps >= nearCeiling*p.ceiling {
		return head + ": the limiting factor is " + p.factor() + "."
	}
	if pt := m.point; pt != nil && len(pt.Buckets) > 1 {
		return fmt.Sprintf("%s: the limiting factor is placement, not the %s ceiling: the runs fall into %d buckets from %s to %s Gbit/s (see Variance and placement).",
			head, p.bottleneck, len(pt.Buckets), gbps(pt.MinGbps), gbps(pt.MaxGbps))
	}
	if h := b.hottest(m.runIDs); h != nil && h.sample.Busy >= hotCPU {
		return fmt.Sprintf("%s: the limiting factor is CPU %d of %s (%s), %s%% busy with %s%% in softirq, well below the %s ceiling.",
			head, h.cpu, h.host, h.role, num(h.sample.Busy, 1), num(h.sample.SoftIRQ, 1), p.bottleneck)
	}
	if f := b.worstFinding(); f != nil {
		return fmt.Sprintf("%s: the result is well below the %s ceiling; the most severe finding is %s on %s.", head, p.bottleneck, f.ID, f.Subject)
	}
	return head + ": the result is well below the " + p.bottleneck + " ceiling, and no finding explains why."
}

// factor says what binds the ceiling, in words.
func (p *path) factor() string {
	switch {
	case p.bottleneck == "PCIe":
		return "PCIe: the link of " + p.pcie.where + " (" + p.pcie.detail + ") carries at most " + gbps(p.pcie.gbps) + " Gbit/s"
	case p.mtu.gbps > 0 && p.ceiling == p.mtu.gbps:
		return fmt.Sprintf("the line rate itself, of which TCP/IP headers and Ethernet framing at MTU %d leave %s Gbit/s for payload", p.mtu.mtu, gbps(p.mtu.gbps))
	}
	return "the line rate itself (" + p.line.text() + ")"
}

// lineText is a line rate as people say it: "100", "25", "2.5".
func lineText(g float64) string {
	return strconv.FormatFloat(math.Round(g*100)/100, 'f', -1, 64)
}

// hot is the busiest CPU over some runs.
type hot struct {
	host, role string
	cpu        int
	sample     result.CPUSample
}

// hottest finds the CPU with the highest average busy share over the runs'
// measured intervals, on either end.
func (b *builder) hottest(ids []int64) *hot {
	runs := b.runsOf(ids)
	if len(runs) == 0 {
		return nil
	}
	var h *hot
	for _, role := range []string{"client", "server"} {
		avg := cpuAverages(runs, role)
		for _, c := range sortedCPUs(avg) {
			if s := avg[c]; h == nil || s.Busy > h.sample.Busy {
				h = &hot{host: hostOf(runs[0], role), role: role, cpu: c, sample: s}
			}
		}
	}
	return h
}

// worstFinding is the first finding of the highest severity over the
// hosts (doctor sorts findings most severe first).
func (b *builder) worstFinding() *doctor.Finding {
	var w *doctor.Finding
	for i := range b.ds.Hosts {
		for j := range b.ds.Hosts[i].Findings {
			f := &b.ds.Hosts[i].Findings[j]
			if w == nil || f.Severity.Rank() > w.Severity.Rank() {
				w = f
			}
		}
	}
	return w
}

// runsOf returns the runs with these IDs, skipping unknown ones.
func (b *builder) runsOf(ids []int64) []*Run {
	var out []*Run
	for _, id := range ids {
		if r := b.runs[id]; r != nil {
			out = append(out, r)
		}
	}
	return out
}

// hostOf is the hostname of one end of a run.
func hostOf(r *Run, role string) string {
	if role == "server" {
		return r.Result.Start.Server.Hostname
	}
	return r.Result.Start.Client.Hostname
}

// cpuAverages averages each CPU's samples of one end over the runs'
// measured (not omitted) intervals; a CPU missing from an interval counts
// as idle there.
func cpuAverages(runs []*Run, role string) map[int]result.CPUSample {
	sum := map[int]result.CPUSample{}
	n := 0
	for _, r := range runs {
		for i := range r.Result.Intervals {
			iv := &r.Result.Intervals[i]
			if iv.Omitted {
				continue
			}
			n++
			samples := iv.CPU.Client
			if role == "server" {
				samples = iv.CPU.Server
			}
			for k, s := range samples {
				c, err := strconv.Atoi(k)
				if err != nil {
					continue
				}
				t := sum[c]
				t.Busy += s.Busy
				t.SoftIRQ += s.SoftIRQ
				t.IRQ += s.IRQ
				sum[c] = t
			}
		}
	}
	for c, t := range sum {
		sum[c] = result.CPUSample{Busy: t.Busy / float64(n), SoftIRQ: t.SoftIRQ / float64(n), IRQ: t.IRQ / float64(n)}
	}
	return sum
}

// sortedCPUs returns a map's CPU numbers in order.
func sortedCPUs[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}
