package explain

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/linerate/linerate/internal/latency"
	"github.com/linerate/linerate/internal/result"
)

// LatencyPoint is a ping-pong point's round trips across its runs
// (points[].latency of the summary, docs/schema/bench-v1.md): medians,
// minima and maxima over the runs of each run's p50, p99 and p99.9, in
// µs. A field is null when no run had that percentile (too few samples).
type LatencyPoint struct {
	Protocol string `json:"protocol"` // "tcp" or "udp"
	Size     int    `json:"size"`     // message bytes
	// Runs is how many runs measured a p50 (a run that measured no round
	// trip has none and is left out of every figure here).
	Runs           int      `json:"runs"`
	MedianP50Us    *float64 `json:"median_p50_us"`
	MinP50Us       *float64 `json:"min_p50_us"`
	MaxP50Us       *float64 `json:"max_p50_us"`
	MedianP99Us    *float64 `json:"median_p99_us"`
	MinP99Us       *float64 `json:"min_p99_us"`
	MaxP99Us       *float64 `json:"max_p99_us"`
	MedianP999Us   *float64 `json:"median_p99_9_us"`
	MinP999Us      *float64 `json:"min_p99_9_us"`
	MaxP999Us      *float64 `json:"max_p99_9_us"`
	MedianRatePerS float64  `json:"median_rate_per_s"` // round trips per second
	// Samples, Dropped and OutOfOrder are totals over the runs (the last
	// two count for UDP only).
	Samples    int64 `json:"samples"`
	Dropped    int64 `json:"dropped"`
	OutOfOrder int64 `json:"out_of_order"`
	// Buckets group the runs whose p50s lie close together (BucketRule,
	// on p50 instead of throughput), lowest p50 first.
	Buckets []LatencyBucket `json:"buckets"`
}

// LatencyBucket is a group of a ping-pong point's runs with close p50s.
type LatencyBucket struct {
	RunIDs      []int64 `json:"run_ids"`
	MedianP50Us float64 `json:"median_p50_us"`
	MinP50Us    float64 `json:"min_p50_us"`
	MaxP50Us    float64 `json:"max_p50_us"`
}

// SummarizeLatency is the latency figures of a ping-pong point made of
// outs (the report recomputes them for part of a campaign's runs).
func SummarizeLatency(outs []Outcome) *LatencyPoint {
	lp, _, _ := summarizeLatency(outs)
	return lp
}

// latencyOf is what one percentile of each run's round trips says across
// runs: median, min and max, each nil when no run had it.
func latencyOf(outs []Outcome, get func(*latency.RTT) *float64) (med, lo, hi *float64) {
	var vs []float64
	for _, o := range outs {
		if l := o.Run.End.Latency; l != nil {
			if v := get(&l.RTTUs); v != nil {
				vs = append(vs, *v)
			}
		}
	}
	if len(vs) == 0 {
		return nil, nil, nil
	}
	m, a, b := round3(Median(vs)), round3(slices.Min(vs)), round3(slices.Max(vs))
	return &m, &a, &b
}

// summarizeLatency computes a ping-pong point's latency figures, and the
// indexes into outs of the runs that measured a p50 with those p50s.
func summarizeLatency(outs []Outcome) (*LatencyPoint, []int, []float64) {
	lp := &LatencyPoint{Buckets: []LatencyBucket{}}
	lp.MedianP50Us, lp.MinP50Us, lp.MaxP50Us = latencyOf(outs, func(r *latency.RTT) *float64 { return r.P50 })
	lp.MedianP99Us, lp.MinP99Us, lp.MaxP99Us = latencyOf(outs, func(r *latency.RTT) *float64 { return r.P99 })
	lp.MedianP999Us, lp.MinP999Us, lp.MaxP999Us = latencyOf(outs, func(r *latency.RTT) *float64 { return r.P999 })
	var idx []int
	var p50s, rates []float64
	for i, o := range outs {
		l := o.Run.End.Latency
		if l == nil {
			continue
		}
		lp.Protocol, lp.Size = l.Protocol, l.Size
		lp.Samples += l.Samples
		lp.Dropped += l.Dropped
		lp.OutOfOrder += l.OutOfOrder
		if l.RTTUs.P50 != nil {
			idx, p50s, rates = append(idx, i), append(p50s, *l.RTTUs.P50), append(rates, l.RatePerSecond)
		}
	}
	lp.Runs = len(p50s)
	if len(rates) > 0 {
		lp.MedianRatePerS = math.Round(Median(rates))
	}
	for _, g := range splitBuckets(p50s) {
		b := LatencyBucket{RunIDs: []int64{}}
		var vals []float64
		for _, k := range g {
			if id := outs[idx[k]].ID; id != 0 {
				b.RunIDs = append(b.RunIDs, id)
			}
			vals = append(vals, p50s[k])
		}
		b.MedianP50Us, b.MinP50Us, b.MaxP50Us = round3(Median(vals)), round3(slices.Min(vals)), round3(slices.Max(vals))
		lp.Buckets = append(lp.Buckets, b)
	}
	return lp, idx, p50s
}

// explainLatencyPoint explains the spread of a ping-pong point's p50s in
// latency terms: the range of a few runs, or the buckets of four or more
// with where each bucket's threads and softirq work ran. It claims no
// cause the telemetry does not show.
func explainLatencyPoint(name string, outs []Outcome, lp *LatencyPoint, idx []int, p50s []float64, t Topology) []string {
	out := explainNICPoint(name, runs(outs))
	switch n := len(p50s); {
	case n == 0:
		return append(out, fmt.Sprintf("%s: no run measured a round trip.", name))
	case n == 2 || n == 3:
		return append(out, fmt.Sprintf("%s: p50 round trip %s over the %d runs (p99 %s); %d runs cannot fall into buckets (the rule needs 4 or more), so there is no variance to explain: run --repeat 4 or more for that.",
			name, usRange(*lp.MinP50Us, *lp.MaxP50Us), n, usRangeOpt(lp.MinP99Us, lp.MaxP99Us), n))
	case len(lp.Buckets) < 2:
		return out
	}
	groups := splitBuckets(p50s)
	names := bucketNames(len(groups), "low", "high") // from the lowest p50
	s := []string{fmt.Sprintf("%s: the %d runs fell into %d buckets by p50 round trip (split where neighbouring p50s differ by more than %.2f µs = max(5%% of the median, 3 × the median gap between neighbours)).",
		name, len(p50s), len(groups), bucketGap(p50s))}
	bucketRuns := make([][]*result.Result, len(groups))
	for i, g := range groups {
		for _, k := range g {
			bucketRuns[i] = append(bucketRuns[i], outs[idx[k]].Run)
		}
		b := lp.Buckets[i]
		s = append(s, fmt.Sprintf("The %d %s-latency run%s (p50 %s): %s.", len(g), names[i], plural(len(g)),
			usRange(b.MinP50Us, b.MaxP50Us), placementFacts(bucketRuns[i], t)))
	}
	last := len(groups) - 1
	s = append(s, explainNICBuckets(bucketRuns[last], bucketRuns[0], names[last]+"-latency", names[0]+"-latency")...)
	return append(out, s...)
}

// explainLatencyPlacements compares the placement of lowest median p50
// with the highest of the same stream count.
func explainLatencyPlacements(best, worst *PointSummary, bestRuns, worstRuns []*result.Result, t Topology) string {
	b, w := best.Latency, worst.Latency
	if b == nil || w == nil || b.MedianP50Us == nil || w.MedianP50Us == nil {
		return ""
	}
	s := fmt.Sprintf("Placement %s had the lowest round trips: median p50 %.1f µs against %.1f µs with %s (p99 %s against %s).",
		best.Placement, *b.MedianP50Us, *w.MedianP50Us, worst.Placement, usOpt(b.MedianP99Us), usOpt(w.MedianP99Us))
	return s + " With " + worst.Placement + ": " + placementFacts(worstRuns, t) + "; with " + best.Placement + ": " + placementFacts(bestRuns, t) + "."
}

// LowestP50 is the index of the point of lowest median p50 round trip
// (the first on a tie), -1 when no point has one; lat gives point i's
// latency figures (nil: not a ping-pong point).
func LowestP50(n int, lat func(i int) *LatencyPoint) int {
	best := -1
	for i := range n {
		l := lat(i)
		if l == nil || l.MedianP50Us == nil {
			continue
		}
		if best < 0 || *l.MedianP50Us < *lat(best).MedianP50Us {
			best = i
		}
	}
	return best
}

// worstLatency is the index of the point of stream count streams, other
// than best, with the highest median p50; -1 when there is none.
func worstLatency(points []PointSummary, best int) int {
	worst := -1
	for i, p := range points {
		if i == best || p.Streams != points[best].Streams || p.Latency == nil || p.Latency.MedianP50Us == nil {
			continue
		}
		if worst < 0 || *p.Latency.MedianP50Us > *points[worst].Latency.MedianP50Us {
			worst = i
		}
	}
	return worst
}

// bestLatencySentence names the best ping-pong point and its command.
func bestLatencySentence(s *Summary) string {
	b := s.Best
	return fmt.Sprintf("Best: placement %s, median p50 round trip %s µs, p99 %s µs. Reproduce it with: %s",
		b.Placement, usOpt(b.MedianP50Us), usOpt(b.MedianP99Us), b.Command)
}

func usOpt(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

func usRange(lo, hi float64) string {
	if fmt.Sprintf("%.1f", lo) == fmt.Sprintf("%.1f", hi) {
		return fmt.Sprintf("%.1f µs", lo)
	}
	return fmt.Sprintf("%.1f-%.1f µs", lo, hi)
}

func usRangeOpt(lo, hi *float64) string {
	if lo == nil || hi == nil {
		return "unknown"
	}
	return usRange(*lo, *hi)
}

// writeLatencySummary writes a ping-pong campaign's points: round trips
// in µs, medians across runs with their min-max.
func writeLatencySummary(b *strings.Builder, s *Summary) {
	udp := false
	for _, p := range s.Points {
		udp = udp || (p.Latency != nil && p.Latency.Protocol == "udp")
	}
	fmt.Fprintf(b, "round trip in µs: median of the runs' percentiles (min-max across runs)\n")
	fmt.Fprintf(b, "%-10s %5s %-22s %-22s %-22s %12s %13s", "placement", "runs", "p50", "p99", "p99.9", "round trips", "per second")
	if udp {
		fmt.Fprintf(b, " %8s %12s", "dropped", "out of order")
	}
	b.WriteString("\n")
	for _, p := range s.Points {
		l := p.Latency
		if l == nil {
			continue
		}
		fmt.Fprintf(b, "%-10s %5d %-22s %-22s %-22s %12d %13.0f", p.Placement, p.Runs,
			usCell(l.MedianP50Us, l.MinP50Us, l.MaxP50Us), usCell(l.MedianP99Us, l.MinP99Us, l.MaxP99Us),
			usCell(l.MedianP999Us, l.MinP999Us, l.MaxP999Us), l.Samples, l.MedianRatePerS)
		if udp {
			fmt.Fprintf(b, " %8d %12d", l.Dropped, l.OutOfOrder)
		}
		b.WriteString("\n")
	}
}

// usCell is "23.4 (21.0-25.1)", or "-" when unknown.
func usCell(med, lo, hi *float64) string {
	if med == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f (%.1f-%.1f)", *med, *lo, *hi)
}
