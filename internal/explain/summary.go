package explain

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/result"
)

// CampaignSchema names the JSON document of a campaign's summary.
const CampaignSchema = "linerate.campaign/v1"

// Summary is a campaign's result, the linerate.campaign/v1 document.
type Summary struct {
	Schema      string         `json:"schema"`
	CampaignID  int64          `json:"campaign_id,omitempty"`
	Engine      string         `json:"engine"`
	Peer        string         `json:"peer"`
	Label       string         `json:"label,omitempty"`
	Points      []PointSummary `json:"points"`
	Best        *Best          `json:"best"`
	Explanation []string       `json:"explanation"`
	// CIMethod states how the points' intervals are computed;
	// BucketRule how repeats are split into buckets.
	CIMethod   string `json:"ci_method"`
	BucketRule string `json:"bucket_rule"`
}

// PointSummary is the statistics of one campaign point.
type PointSummary struct {
	Streams   int     `json:"streams"`
	Placement string  `json:"placement"`
	RunIDs    []int64 `json:"run_ids"`
	// Runs is how many runs the point made (RunIDs lists only those
	// stored: none with --no-store).
	Runs       int     `json:"runs"`
	MedianGbps float64 `json:"median_gbps"`
	MinGbps    float64 `json:"min_gbps"`
	MaxGbps    float64 `json:"max_gbps"`
	// CI95Gbps is the median's distribution-free interval of at least
	// 95% confidence (CILevel is its actual level); null below six runs,
	// and CINote says why (CIMethod).
	CI95Gbps *[2]float64 `json:"ci95_gbps"`
	CILevel  float64     `json:"ci_level,omitempty"`
	CINote   string      `json:"ci_note,omitempty"`
	Buckets  []Bucket    `json:"buckets"`
	// CeilingGbps is the TCP goodput ceiling of the path (doctor's limits
	// for the client's NIC); CeilingShare the median's share of it.
	CeilingGbps  *float64 `json:"ceiling_gbps"`
	CeilingShare *float64 `json:"ceiling_share"`
	// CPU seconds each end spent per Gbit moved — equivalently, cores
	// busy per Gbit/s — medians over the point's runs; nil when the
	// driver does not report that end's CPU time.
	CPUPerGbit CPUCost `json:"cpu_s_per_gbit"`
	// Latency is a ping-pong campaign's round trips (bench --latency),
	// absent otherwise; its Gbit/s fields above then count the ping-pong's
	// bytes only, and its throughput buckets are left empty.
	Latency *LatencyPoint `json:"latency,omitempty"`
	// Gap is where the point's missing gigabits went, its runs' time
	// added up (package gap); absent where its runs have no TCP account.
	Gap *result.Gap `json:"gap,omitempty"`
	// Transactions is a transaction campaign's (bench --rr/--crr),
	// absent otherwise; its Gbit/s fields above then count the
	// requests' and responses' bytes only.
	Transactions *TransactionsPoint `json:"transactions,omitempty"`
}

// CPUCost is CPU seconds per Gbit on each end.
type CPUCost struct {
	Client *float64 `json:"client"`
	Server *float64 `json:"server"`
}

// Bucket is a group of a point's repeats whose throughputs lie close
// together (see BucketRule).
type Bucket struct {
	// Name is the bucket's place among its point's, slowest first:
	// "low", "high"; "low", "middle", "high"; "bucket 2 of 4" (BucketName).
	Name       string  `json:"name"`
	RunIDs     []int64 `json:"run_ids"`
	MedianGbps float64 `json:"median_gbps"`
	MinGbps    float64 `json:"min_gbps"`
	MaxGbps    float64 `json:"max_gbps"`
	// Softirq is the receiver's CPUs that served its softirq work, on
	// average over the bucket's runs.
	Softirq []int `json:"receiver_softirq_cpus"`
}

// Best is the fastest point (of a ping-pong campaign: the one of lowest
// median p50 round trip), and the command that reproduces it.
type Best struct {
	Streams    int     `json:"streams"`
	Placement  string  `json:"placement"`
	MedianGbps float64 `json:"median_gbps"`
	Command    string  `json:"command"`
	// MedianP50Us and MedianP99Us are the best ping-pong point's (absent
	// for throughput campaigns).
	MedianP50Us *float64 `json:"median_p50_us,omitempty"`
	MedianP99Us *float64 `json:"median_p99_us,omitempty"`
	// MedianPerSecond is the best transaction point's transactions per
	// second, the figure it is best by (absent for other campaigns).
	MedianPerSecond *float64 `json:"median_per_second,omitempty"`
}

// BucketName names bucket i of n, as a point's buckets are listed: from
// the slowest up.
func BucketName(i, n int) string {
	switch n {
	case 2:
		return []string{"low", "high"}[i]
	case 3:
		return []string{"low", "middle", "high"}[i]
	}
	return fmt.Sprintf("bucket %d of %d", i+1, n)
}

// BucketRule is the rule that splits repeats into buckets, as the summary
// states it.
const BucketRule = "sort the runs' throughputs; " + bucketSplit

// LatencyBucketRule is BucketRule as a ping-pong campaign applies it, to
// its runs' p50 round trips (points[].latency.buckets).
const LatencyBucketRule = "sort the runs' p50 round trips; " + bucketSplit

// bucketSplit is where both rules split (splitBuckets).
const bucketSplit = "split wherever two neighbours differ by more than max(5% of the median, 3 × the median gap between neighbours)"

// Design is a campaign as asked, in the terms its summary uses: its
// points (every stream count crossed with every placement, in the order
// Outcome.Point indexes them) and what they vary.
type Design struct {
	// Driver is the --engine value.
	Driver, Peer, Label string
	Points              []Point
	// Sweep is true when the campaign varies the stream count,
	// Placements when it varies the placement; PingPong when its runs
	// measure round trips (--latency) rather than throughput.
	Sweep, Placements, PingPong bool
}

// Point is one combination of a campaign's design.
type Point struct {
	Streams int
	// Placement is the -A pair as the campaign writes it ("6,7",
	// "auto").
	Placement string
	// Command reproduces the point with one run.
	Command string
}

// Outcome is one finished run of a campaign: its point and its result.
type Outcome struct {
	Point int // index into Design.Points
	ID    int64
	Run   *result.Result
}

// Summarize computes a campaign's summary from its finished runs. topo
// names CPUs in explanations; ceiling (Gbit/s, nil when unknown) is the
// path's goodput ceiling.
func Summarize(d Design, outs []Outcome, topo Topology, ceiling *float64) *Summary {
	s := &Summary{Schema: CampaignSchema, Engine: d.Driver, Peer: d.Peer, Label: d.Label,
		Points: []PointSummary{}, Explanation: []string{}, CIMethod: CIMethod, BucketRule: BucketRule}
	points := d.Points
	byPoint := make([][]Outcome, len(points))
	for _, o := range outs {
		byPoint[o.Point] = append(byPoint[o.Point], o)
	}
	runsOf := map[int][]*result.Result{}
	pingPong := d.PingPong
	if pingPong {
		s.BucketRule = LatencyBucketRule
	}
	var few []fewPoint
	for i, p := range points {
		if len(byPoint[i]) == 0 {
			continue // the campaign was cut short before this point ran
		}
		ps, expl := summarizePoint(p, byPoint[i], topo, ceiling, pingPong)
		s.Points = append(s.Points, ps)
		s.Explanation = append(s.Explanation, expl...)
		runsOf[len(s.Points)-1] = runs(byPoint[i])
		if n := len(byPoint[i]); !pingPong && (n == 2 || n == 3) {
			few = append(few, fewPoint{fmt.Sprintf("%d stream%s, placement %s", p.Streams, plural(p.Streams), ps.Placement), n})
		}
	}
	if note := fewRunsNote(few); note != "" {
		s.Explanation = append(s.Explanation, note)
	}
	if len(s.Points) == 0 {
		return s
	}
	s.Explanation = append(s.Explanation, explainOtherLoad(runs(outs))...)
	best := 0
	for i, p := range s.Points {
		if p.MedianGbps > s.Points[best].MedianGbps {
			best = i
		}
	}
	if pingPong {
		// The lowest p50; points without one come last.
		best = max(LowestP50(len(s.Points), func(i int) *LatencyPoint { return s.Points[i].Latency }), 0)
	}
	if isTransactionsSummary(s) {
		for i, p := range s.Points {
			if p.Transactions.MedianPerSecond > s.Points[best].Transactions.MedianPerSecond {
				best = i
			}
		}
	}
	bp := s.Points[best]
	s.Best = &Best{Streams: bp.Streams, Placement: bp.Placement, MedianGbps: bp.MedianGbps,
		Command: commandOf(points, bp)}
	if t := bp.Transactions; t != nil {
		v := t.MedianPerSecond
		s.Best.MedianPerSecond = &v
		s.Explanation = append(s.Explanation, fmt.Sprintf("Most transactions per second: %d flows, placement %s (%.0f/s): %s",
			bp.Streams, bp.Placement, v, s.Best.Command))
		return s
	}
	if pingPong {
		s.Best.MedianP50Us, s.Best.MedianP99Us = bp.Latency.MedianP50Us, bp.Latency.MedianP99Us
		s.Explanation = append(s.Explanation, compareLatencyPoints(d, s, runsOf, best, topo)...)
		return s
	}
	s.Explanation = append(s.Explanation, fairnessSentences(s.Points, runsOf)...)
	s.Explanation = append(s.Explanation, comparePoints(d, s, runsOf, best, topo)...)
	return s
}

// compareLatencyPoints explains a ping-pong campaign across points: the
// placement of lowest round trips against the highest, then the best.
func compareLatencyPoints(d Design, s *Summary, runsOf map[int][]*result.Result, best int, topo Topology) []string {
	var out []string
	if worst := worstLatency(s.Points, best); d.Placements && worst >= 0 {
		if e := explainLatencyPlacements(&s.Points[best], &s.Points[worst], runsOf[best], runsOf[worst], topo); e != "" {
			out = append(out, e)
		}
	}
	return append(out, bestLatencySentence(s))
}

// commandOf is the command that reproduces the point ps summarises.
func commandOf(points []Point, ps PointSummary) string {
	for _, p := range points {
		if p.Streams == ps.Streams && p.Placement == ps.Placement {
			return p.Command
		}
	}
	return ""
}

func runs(outs []Outcome) []*result.Result {
	out := make([]*result.Result, len(outs))
	for i, o := range outs {
		out[i] = o.Run
	}
	return out
}

func summarizePoint(p Point, outs []Outcome, topo Topology, ceiling *float64, pingPong bool) (PointSummary, []string) {
	gbps := make([]float64, len(outs))
	ps := PointSummary{Streams: p.Streams, Placement: p.Placement, RunIDs: []int64{}, Runs: len(outs), Buckets: []Bucket{}}
	for i, o := range outs {
		gbps[i] = o.Run.Gbps()
		if o.ID != 0 { // 0: not stored (--no-store)
			ps.RunIDs = append(ps.RunIDs, o.ID)
		}
	}
	ps.MedianGbps, ps.MinGbps, ps.MaxGbps = round3(Median(gbps)), round3(slices.Min(gbps)), round3(slices.Max(gbps))
	if ci := medianCI(gbps); ci.OK() {
		ps.CI95Gbps, ps.CILevel = &[2]float64{round3(ci.Lo), round3(ci.Hi)}, round4(ci.Level)
	} else {
		ps.CINote = ci.Note
	}
	if ceiling != nil && *ceiling > 0 {
		share := round3(Median(gbps) / *ceiling)
		ps.CeilingGbps, ps.CeilingShare = ceiling, &share
	}
	ps.CPUPerGbit = cpuCost(outs)
	name := fmt.Sprintf("%d stream%s, placement %s", p.Streams, plural(p.Streams), ps.Placement)
	if ps.Transactions = SummarizeTransactions(outs); ps.Transactions != nil {
		// A transaction's bytes follow from its count: its variance is
		// told in transactions per second, not in Gbit/s buckets.
		return ps, append(explainNICPoint(name, runs(outs)), transactionsSentence(&ps))
	}
	if pingPong {
		// A ping-pong's bytes follow from its round trips: its variance is
		// told in µs, by the runs' p50s, not in Gbit/s buckets.
		lp, idx, p50s := summarizeLatency(outs)
		ps.Latency = lp
		return ps, explainLatencyPoint("placement "+ps.Placement, outs, lp, idx, p50s, topo)
	}
	groups := splitBuckets(gbps)
	var bucketRuns [][]*result.Result
	side := receiver(outs[0].Run.Start.Direction)
	for _, g := range groups {
		var b Bucket
		var vals []float64
		var rs []*result.Result
		var loads []endLoad
		for _, i := range g {
			if outs[i].ID != 0 {
				b.RunIDs = append(b.RunIDs, outs[i].ID)
			}
			vals = append(vals, gbps[i])
			rs = append(rs, outs[i].Run)
			loads = append(loads, loadOf(outs[i].Run, side))
		}
		b.Name = BucketName(len(ps.Buckets), len(groups))
		b.MedianGbps, b.MinGbps, b.MaxGbps = round3(Median(vals)), round3(slices.Min(vals)), round3(slices.Max(vals))
		b.Softirq = meanLoad(loads).softirqCPUs()
		ps.Buckets = append(ps.Buckets, b)
		bucketRuns = append(bucketRuns, rs)
	}
	if n := len(outs); n == 2 || n == 3 {
		// What the counters say; Summarize says once, for every such
		// point, why there is no more (fewRunsNote).
		return ps, explainNICPoint(name, runs(outs))
	}
	if len(groups) < 2 {
		return ps, explainNICPoint(name, runs(outs))
	}
	return ps, explainBuckets(name, bucketRuns, bucketGap(gbps), topo)
}

// cpuCost is the median over runs of CPU seconds per Gbit moved, per end.
func cpuCost(outs []Outcome) CPUCost {
	var c, s []float64
	for _, o := range outs {
		gbit := o.Run.Gbps() * o.Run.End.Seconds
		if gbit <= 0 {
			continue
		}
		if v := o.Run.End.CPU.ClientSeconds; v > 0 {
			c = append(c, v/gbit)
		}
		if v := o.Run.End.CPU.ServerSeconds; v > 0 {
			s = append(s, v/gbit)
		}
	}
	var out CPUCost
	if len(c) > 0 {
		v := round4(Median(c))
		out.Client = &v
	}
	if len(s) > 0 {
		v := round4(Median(s))
		out.Server = &v
	}
	return out
}

// comparePoints explains the campaign across points: for a placement
// campaign, the best placement against the worst of the same stream
// count; for a sweep, where adding streams stopped paying.
func comparePoints(d Design, s *Summary, runsOf map[int][]*result.Result, best int, topo Topology) []string {
	var out []string
	bp := s.Points[best]
	if d.Placements {
		worst := -1
		for i, p := range s.Points {
			if p.Streams == bp.Streams && i != best && (worst < 0 || p.MedianGbps < s.Points[worst].MedianGbps) {
				worst = i
			}
		}
		if worst >= 0 {
			out = append(out, explainPlacements(&s.Points[best], &s.Points[worst], runsOf[best], runsOf[worst], topo))
		}
	}
	if d.Sweep {
		out = append(out, kneeSentence(s.Points, bp.Placement))
	}
	out = append(out, fmt.Sprintf("Best: %d stream%s, placement %s, median %.2f Gbit/s. Reproduce it with: %s",
		bp.Streams, plural(bp.Streams), bp.Placement, bp.MedianGbps, s.Best.Command))
	return out
}

// fewPoint is a point of 2 or 3 runs: too few for buckets.
type fewPoint struct {
	name string
	runs int
}

// fewRunsNote says, once for all of a campaign's points of 2 or 3 runs,
// that they cannot fall into buckets, and how many runs would: a sweep of
// four such points says it once, not four times.
func fewRunsNote(few []fewPoint) string {
	const why = "cannot fall into buckets (the rule needs 4 or more: with fewer, no gap between neighbours can exceed 3 × their median gap), so there is no variance to explain: run --repeat 4 or more for that."
	switch len(few) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("%s: %d runs %s", few[0].name, few[0].runs, why)
	}
	names := make([]string, len(few))
	lo, hi := few[0].runs, few[0].runs
	for i, f := range few {
		names[i] = f.name
		lo, hi = min(lo, f.runs), max(hi, f.runs)
	}
	count := strconv.Itoa(lo)
	if hi != lo {
		count = fmt.Sprintf("%d or %d", lo, hi)
	}
	return fmt.Sprintf("%s: %s runs each %s", strings.Join(names, "; "), count, why)
}

// kneeSentence finds where adding streams stopped paying (less than 5%
// more than the previous count) for one placement.
func kneeSentence(points []PointSummary, placement string) string {
	var prev *PointSummary
	for i := range points {
		p := &points[i]
		if p.Placement != placement {
			continue
		}
		if prev != nil && p.MedianGbps < prev.MedianGbps*1.05 {
			// Say the change as it was: fewer Gbit/s is "less", not
			// "less than 5% more".
			how := "no change"
			switch ch := 100 * (p.MedianGbps/prev.MedianGbps - 1); {
			case math.Round(ch) < 0:
				how = fmt.Sprintf("%.0f%% less", -ch)
			case math.Round(ch) > 0:
				how = fmt.Sprintf("only %.0f%% more, under the 5%% that counts", ch)
			}
			return fmt.Sprintf("Streams stop paying after %d: %d streams gave %.2f Gbit/s against %.2f with %d (%s).",
				prev.Streams, p.Streams, p.MedianGbps, prev.MedianGbps, prev.Streams, how)
		}
		prev = p
	}
	if prev == nil {
		return ""
	}
	return fmt.Sprintf("Throughput still grew at %d streams (%.2f Gbit/s): the sweep did not reach the knee.", prev.Streams, prev.MedianGbps)
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
func round4(x float64) float64 { return math.Round(x*10000) / 10000 }
