package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

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
func (b *builder) best() *measured { return b.bestOf(nil) }

// bestOf is best over the runs keep accepts (nil: all, and perftest too).
func (b *builder) bestOf(keep func(id int64) bool) *measured {
	var m *measured
	better := func(c *measured) {
		if c != nil && (m == nil || c.gbps > m.gbps) {
			m = c
		}
	}
	kept := func(ids []int64) bool { return keep == nil || len(ids) > 0 && keep(ids[0]) }
	for ci := range b.ds.Campaigns {
		for pi := range b.ds.Campaigns[ci].Points {
			p := &b.ds.Campaigns[ci].Points[pi]
			if kept(p.RunIDs) && p.Latency == nil && p.Transactions == nil { // a ping-pong's or a transaction's bytes are no throughput
				better(&measured{gbps: p.MedianGbps, runIDs: p.RunIDs, point: p,
					what: fmt.Sprintf("median of %d run%s, %d stream%s, placement %s", len(p.RunIDs), plural(len(p.RunIDs)), p.Streams, plural(p.Streams), orDash(p.Placement))})
			}
		}
	}
	if m == nil {
		for i := range b.ds.Runs {
			r := &b.ds.Runs[i]
			if r.Result.Error != "" || r.Result.End.Latency != nil || r.Result.End.Transactions != nil { // cut short, a ping-pong or transactions: no throughput result
				continue
			}
			if ids := []int64{r.Result.RunID}; kept(ids) {
				better(&measured{gbps: runGbps(&r.Result), runIDs: ids, what: "run " + strconv.FormatInt(r.Result.RunID, 10)})
			}
		}
	}
	if keep == nil {
		for _, r := range b.ds.Perftest {
			if r.Latency == nil {
				better(&measured{gbps: r.AverageGbps, rdma: true, what: r.Test + " average"})
			}
		}
	}
	if m != nil && !known(m.gbps) {
		return nil
	}
	return m
}

// verdict is the report's first sentence (one per label when the report
// holds several), and what tuning did when the data show runs before and
// after it.
func (b *builder) verdict() string { return b.verdictHead() + b.gapNote() + b.tuneNote() }

// verdictHead is what was achieved against the ceiling, and what limits
// it: for the whole data set, or — when the runs took different paths (two
// labs, two NICs) — for each label against its own path's ceiling. Labels
// over one path share its verdict; the comparison section sets them apart.
func (b *builder) verdictHead() string {
	gs := b.labelGroups()
	if len(gs) < 2 || len(b.allPaths()) < 2 {
		m := b.best()
		if l := b.latencyVerdict(); m == nil && l != "" {
			return l
		}
		if t := b.transactionsVerdict(); m == nil && t != "" {
			return t
		}
		return verdictSentence(b.verdictFacts(m, b.path))
	}
	var parts []string
	for _, g := range gs {
		parts = append(parts, g.title()+": "+verdictSentence(b.verdictFacts(b.bestOf(g.has), g.path)))
	}
	return strings.Join(parts, " ")
}

// verdictFacts gathers what the verdict sentence is made of.
func (b *builder) verdictFacts(m *measured, p *path) verdictFacts {
	v := verdictFacts{}
	if p != nil && p.ceiling > 0 {
		v.ceiling, v.line, v.factor, v.bottleneck = p.ceiling, p.line.gbps, p.factor(), p.bottleneck
	}
	if m == nil {
		return v
	}
	v.measured, v.gbps, v.what = true, m.gbps, m.what
	if pt := m.point; pt != nil && len(pt.Buckets) > 1 {
		v.buckets, v.bucketMin, v.bucketMax = len(pt.Buckets), pt.MinGbps, pt.MaxGbps
	}
	v.hot = b.hottest(m.runIDs)
	v.finding = b.worstFinding(p)
	return v
}

// verdictFacts are the numbers a verdict states; verdictSentence words
// them, and never in a way its own numbers contradict.
type verdictFacts struct {
	measured   bool
	gbps       float64 // the best result
	what       string  // what the result is ("median of 5 runs, …")
	ceiling    float64 // 0 when unknown
	line       float64
	factor     string // what binds the ceiling, in words
	bottleneck string // "PCIe", "line rate"
	// buckets > 1: the best point's runs fell into that many groups.
	buckets              int
	bucketMin, bucketMax float64
	hot                  *hot // the busiest CPU over the best runs
	finding              *doctor.Finding
}

// verdictSentence is the verdict's wording, table-tested in
// verdict_test.go.
func verdictSentence(v verdictFacts) string {
	switch {
	case !v.measured && v.ceiling == 0:
		return "Nothing was measured, and no ceiling is known: the data hold no run and no line rate."
	case !v.measured:
		return fmt.Sprintf("Nothing was measured; the ceiling is %s Gbit/s, set by %s.", gbps(v.ceiling), v.factor)
	case v.ceiling == 0:
		return fmt.Sprintf("Achieved %s Gbit/s (%s); no ceiling is known, as no line rate was reported for the path.", gbps(v.gbps), v.what)
	}
	head := fmt.Sprintf("Achieved %s of %s Gbit/s (%s of the ceiling, %s of the %s Gbit/s line rate)",
		gbps(v.gbps), gbps(v.ceiling), pct(v.gbps, v.ceiling), pct(v.gbps, v.line), lineText(v.line))
	if v.gbps >= nearCeiling*v.ceiling {
		return head + ": the limiting factor is " + v.factor + "."
	}
	gap := gapText(v.gbps, v.ceiling, v.bottleneck)
	if v.buckets > 1 {
		return fmt.Sprintf("%s: the limiting factor is placement, not the %s ceiling: the runs fall into %d buckets from %s to %s Gbit/s (see Variance and placement).",
			head, v.bottleneck, v.buckets, gbps(v.bucketMin), gbps(v.bucketMax))
	}
	if h := v.hot; h != nil && h.sample.Busy >= hotCPU {
		return fmt.Sprintf("%s: the limiting factor is CPU %d of %s, %s%% busy with %s%% in softirq; the result is %s.",
			head, h.cpu, h.where(), num(h.sample.Busy, 1), num(h.sample.SoftIRQ, 1), gap)
	}
	if f := v.finding; f != nil {
		return fmt.Sprintf("%s: the result is %s; the most severe finding is %s on %s.", head, gap, f.ID, f.Subject)
	}
	return head + ": the result is " + gap + ", and no finding explains why."
}

// gapText says how far below the ceiling a result is, in the verdict's
// own numbers: "11.7% below the line rate ceiling"; "well below" only
// under half of it.
func gapText(g, ceiling float64, bottleneck string) string {
	share := g / ceiling
	if share < 0.5 {
		return fmt.Sprintf("well below the %s ceiling (less than half of it)", bottleneck)
	}
	return fmt.Sprintf("%s below the %s ceiling", num(100*(1-share), 1)+"%", bottleneck)
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
	// shared names both ends when they are network namespaces of one
	// kernel (a lab): their CPUs are the same CPUs, and the busy one
	// works for both.
	shared string
}

// where is "lr-ux2-a (client)", or for a lab "lr-ux2-a and lr-ux2-b
// (network namespaces of one kernel: both ends share its CPUs)".
func (h *hot) where() string {
	if h.shared != "" {
		return h.shared + " (network namespaces of one kernel: both ends share its CPUs)"
	}
	return h.host + " (" + h.role + ")"
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
	if st := runs[0].Result.Start; h != nil && st.Client.BootID != "" && st.Client.BootID == st.Server.BootID {
		h.shared = st.Client.Hostname
		if st.Server.Hostname != st.Client.Hostname {
			h.shared += " and " + st.Server.Hostname
		}
	}
	return h
}

// worstFinding is the first finding of the highest severity over the
// hosts of a path, or of every host when the path is unknown (doctor sorts
// findings most severe first).
func (b *builder) worstFinding(p *path) *doctor.Finding {
	var w *doctor.Finding
	for i := range b.ds.Hosts {
		if p != nil && !p.has(&b.ds.Hosts[i]) {
			continue
		}
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

// latencyVerdict is the verdict of a data set that measured round trips
// and no throughput: the lowest median p50 of the ping-pong campaigns,
// else of the ping-pong runs; "" when there is neither.
func (b *builder) latencyVerdict() string {
	var best *Best
	var where string
	for ci := range b.ds.Campaigns {
		c := &b.ds.Campaigns[ci]
		if bc := c.Best; bc != nil && bc.MedianP50Us != nil && (best == nil || *bc.MedianP50Us < *best.MedianP50Us) {
			best, where = bc, campaignName(ci, c)
		}
	}
	// The lowest p50 of a run outside the campaigns too (another engine,
	// another placement): it can be lower than every campaign's median,
	// and "the lowest" must not hide it.
	inCampaign := map[int64]bool{}
	for ci := range b.ds.Campaigns {
		for _, p := range b.ds.Campaigns[ci].Points {
			for _, id := range p.RunIDs {
				inCampaign[id] = true
			}
		}
	}
	var loose *Run
	for i := range b.ds.Runs {
		r := &b.ds.Runs[i]
		if l := r.Result.End.Latency; l != nil && l.RTTUs.P50 != nil && !inCampaign[r.Result.RunID] &&
			(loose == nil || *l.RTTUs.P50 < *loose.Result.End.Latency.RTTUs.P50) {
			loose = r
		}
	}
	if best != nil {
		s := fmt.Sprintf("Round trips, not throughput, were measured: the lowest median p50 of a campaign is %s µs (p99 %s µs), placement %s of %s",
			usText(best.MedianP50Us), usText(best.MedianP99Us), orDash(best.Placement), where)
		if loose != nil && *loose.Result.End.Latency.RTTUs.P50 < *best.MedianP50Us {
			s += fmt.Sprintf("; run %s (%s engine), outside the campaigns, had a lower p50 of %s µs", runName(loose), orDash(loose.Result.Engine), usText(loose.Result.End.Latency.RTTUs.P50))
		}
		return s + " (see Latency and packet rate)."
	}
	if loose == nil { // no campaign: every run is loose
		return ""
	}
	l := loose.Result.End.Latency
	return fmt.Sprintf("Round trips, not throughput, were measured: the lowest p50 is %s µs (p99 %s µs), run %s (see Latency and packet rate).",
		usText(l.RTTUs.P50), usText(l.RTTUs.P99), runName(loose))
}
