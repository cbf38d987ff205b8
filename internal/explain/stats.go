package explain

import (
	"fmt"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// Median returns the median of xs (NaN for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func relChange(a, b float64) float64 {
	if a == 0 {
		return math.NaN()
	}
	return (b - a) / a
}

// bucketGap is the rule that splits a point's repeats into buckets: sort
// the throughputs and split wherever two neighbours differ by more than
// max(5% of the median, 3 × the median gap between neighbours). The
// median gap is the run-to-run noise of a bucket (most neighbours sit in
// the same bucket); the median absolute deviation would not do, as the
// buckets themselves inflate it (the x4 home lab's 65/84/99 Gbit/s runs have a
// MAD of 15 Gbit/s). The 5% floor keeps tight points from splitting on
// noise. Fewer than four runs never split: one gap is its own median, and
// three times the median of two gaps, 1.5 × (g1 + g2), exceeds the larger
// of them; so a campaign needs four repeats or more to show buckets.
func bucketGap(gbps []float64) float64 {
	s := slices.Clone(gbps)
	slices.Sort(s)
	gaps := make([]float64, 0, len(s))
	for i := 1; i < len(s); i++ {
		gaps = append(gaps, s[i]-s[i-1])
	}
	g := 0.0
	if len(gaps) > 0 {
		g = Median(gaps)
	}
	return math.Max(0.05*Median(gbps), 3*g)
}

// splitBuckets returns the indexes of gbps grouped into buckets, slowest
// bucket first, each bucket in ascending throughput.
func splitBuckets(gbps []float64) [][]int {
	if len(gbps) == 0 {
		return nil
	}
	order := make([]int, len(gbps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(gbps[a], gbps[b]) })
	gap := bucketGap(gbps)
	buckets := [][]int{{order[0]}}
	for k := 1; k < len(order); k++ {
		if gbps[order[k]]-gbps[order[k-1]] > gap {
			buckets = append(buckets, nil)
		}
		buckets[len(buckets)-1] = append(buckets[len(buckets)-1], order[k])
	}
	return buckets
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ciLevel is the confidence asked of a median's interval.
const ciLevel = 0.95

// CIMethod says how campaign points' intervals are computed, as the
// summary states it.
const CIMethod = "95% distribution-free interval of the median from order statistics of the runs' throughputs (golang.org/x/perf/benchmath); none below 6 runs"

// MedianCI is the median of a sample of whole runs and, when the sample
// supports one, its distribution-free confidence interval: the order
// statistics x(l) ≤ median ≤ x(h) chosen so that the population median
// lies between them with probability Level ≥ 95% (the number of runs
// below the median is binomial(n, ½), whatever the runs' distribution).
// Below six runs no pair of order statistics reaches 95%: the widest,
// min to max, covers the median with 1 − 2·½ⁿ (75% at 3 runs, 94% at 5),
// so there is no interval and Note says why.
type MedianCI struct {
	Median float64
	Lo, Hi float64 // NaN when there is no interval
	Level  float64 // the interval's actual confidence, ≥ 0.95; 0 with none
	Note   string  // why there is no interval
}

// OK reports whether there is an interval.
func (c MedianCI) OK() bool { return c.Level > 0 }

// medianCI computes the median of xs and its 95% order-statistic
// interval.
func medianCI(xs []float64) MedianCI {
	n := len(xs)
	if n == 0 {
		return MedianCI{Median: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Note: "no runs"}
	}
	s := benchmath.NewSample(slices.Clone(xs), &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(s, ciLevel)
	out := MedianCI{Median: sum.Center, Lo: sum.Lo, Hi: sum.Hi, Level: sum.Confidence}
	if math.IsInf(sum.Lo, 0) || math.IsInf(sum.Hi, 0) || n < 2 {
		out.Lo, out.Hi, out.Level = math.NaN(), math.NaN(), 0
		out.Note = fmt.Sprintf("too few runs for a 95%% interval: %d run%s (min to max covers the median with %.0f%% confidence); 6 or more give one",
			n, plural(n), 100*minMaxCoverage(n))
	}
	return out
}

// minMaxCoverage is the probability that the population median lies
// between the smallest and the largest of n runs: 1 − 2·½ⁿ (0 for one
// run, which is a point).
func minMaxCoverage(n int) float64 {
	if n < 2 {
		return 0
	}
	return 1 - 2*math.Pow(0.5, float64(n))
}

// Change is how B's runs differ from A's: the relative change of the
// median, and whether the two samples differ at all by a two-sided
// Mann-Whitney U test over whole runs (each run one value; a run's
// intervals are not independent samples, adjacent TCP intervals are
// correlated).
type Change struct {
	MedianA  float64 `json:"median_a_gbps"`
	MedianB  float64 `json:"median_b_gbps"`
	Relative float64 `json:"change"` // (B-A)/A: -0.1 is 10% slower
	// P is the U test's p-value; Significant says P < Alpha.
	P           float64 `json:"p_value"`
	Alpha       float64 `json:"alpha"`
	Significant bool    `json:"significant"`
	NA          int     `json:"n_a"`
	NB          int     `json:"n_b"`
	// Note says why a difference could not be shown, when the samples
	// are too small for the test to ever reach Alpha.
	Note string `json:"note,omitempty"`
}

// CompareRuns compares two samples of whole runs' throughputs.
func CompareRuns(a, b []float64) Change {
	ch := Change{MedianA: Median(a), MedianB: Median(b), NA: len(a), NB: len(b), P: 1,
		Alpha: benchmath.DefaultThresholds.CompareAlpha}
	ch.Relative = relChange(ch.MedianA, ch.MedianB)
	if len(a) == 0 || len(b) == 0 {
		ch.Note = "one side has no runs"
		return ch
	}
	sa := benchmath.NewSample(slices.Clone(a), &benchmath.DefaultThresholds)
	sb := benchmath.NewSample(slices.Clone(b), &benchmath.DefaultThresholds)
	c := benchmath.AssumeNothing.Compare(sa, sb)
	ch.P, ch.Significant = c.P, c.P < c.Alpha
	if !ch.Significant && minUTestP(len(a), len(b)) >= c.Alpha {
		ch.Note = fmt.Sprintf("%d run%s against %d cannot show a difference at α = %.2f whatever they measure (the smallest p-value they allow is %.2f): repeat each side, 4 runs or more (--repeat)",
			len(a), plural(len(a)), len(b), c.Alpha, minUTestP(len(a), len(b)))
	}
	return ch
}

// minUTestP is the smallest two-sided p-value the exact Mann-Whitney U
// test can give for samples of n and m: both orderings where one sample
// lies wholly below the other, 2 / C(n+m, n).
func minUTestP(n, m int) float64 {
	c := 1.0
	for i := 1; i <= n; i++ {
		c = c * float64(m+i) / float64(i)
	}
	return math.Min(1, 2/c)
}
