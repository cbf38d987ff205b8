package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Resamples is how many bootstrap resamples an interval is computed from.
// 2,000 keeps the 2.5th and 97.5th percentiles stable to about a
// hundredth of the spread, in well under a millisecond for 100 runs.
const Resamples = 2000

// bootstrapSeed fixes the resampling RNG, so the same runs always give the
// same interval (and tests are deterministic).
const bootstrapSeed = 0x6c696e6572617465 // "linerate"

// median returns the median of xs (NaN for none).
func median(xs []float64) float64 {
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

// bootstrapMedianCI returns a 95% percentile-bootstrap interval of the
// median of xs: the 2.5th and 97.5th percentiles of the medians of
// Resamples resamples drawn with replacement. One value gives [x, x].
func bootstrapMedianCI(xs []float64) [2]float64 {
	return bootstrap(len(xs), func(idx []int) float64 {
		s := make([]float64, len(idx))
		for i, j := range idx {
			s[i] = xs[j]
		}
		return median(s)
	})
}

// bootstrap resamples n indexes Resamples times and returns the 95%
// percentile interval of stat over the resamples.
func bootstrap(n int, stat func(idx []int) float64) [2]float64 {
	if n == 0 {
		return [2]float64{math.NaN(), math.NaN()}
	}
	rng := rand.New(rand.NewPCG(bootstrapSeed, uint64(n)))
	vals := make([]float64, Resamples)
	idx := make([]int, n)
	for b := range vals {
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		vals[b] = stat(idx)
	}
	slices.Sort(vals)
	return [2]float64{percentile(vals, 2.5), percentile(vals, 97.5)}
}

// percentile of sorted values, linear between ranks.
func percentile(sorted []float64, p float64) float64 {
	pos := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

// bootstrapChangeCI returns a 95% interval of the relative change of the
// median from a to b, (median(b)-median(a))/median(a), resampling both
// samples independently.
func bootstrapChangeCI(a, b []float64) [2]float64 {
	if len(a) == 0 || len(b) == 0 {
		return [2]float64{math.NaN(), math.NaN()}
	}
	rng := rand.New(rand.NewPCG(bootstrapSeed, uint64(len(a))<<32|uint64(len(b))))
	vals := make([]float64, Resamples)
	ra, rb := make([]float64, len(a)), make([]float64, len(b))
	for i := range vals {
		for j := range ra {
			ra[j] = a[rng.IntN(len(a))]
		}
		for j := range rb {
			rb[j] = b[rng.IntN(len(b))]
		}
		vals[i] = relChange(median(ra), median(rb))
	}
	slices.Sort(vals)
	return [2]float64{percentile(vals, 2.5), percentile(vals, 97.5)}
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
// buckets themselves inflate it (seed 000's 65/84/99 Gbit/s runs have a
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
		g = median(gaps)
	}
	return math.Max(0.05*median(gbps), 3*g)
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

// Change is the relative change of the median from sample A to sample B,
// with a 95% bootstrap interval (Resamples resamples of each sample).
type Change struct {
	MedianA  float64    `json:"median_a_gbps"`
	MedianB  float64    `json:"median_b_gbps"`
	Relative float64    `json:"change"`      // (B-A)/A: -0.1 is 10% slower
	CI95     [2]float64 `json:"change_ci95"` // NaN-free only when both samples are non-empty
}

// CompareSamples measures how B's median throughput differs from A's.
func CompareSamples(a, b []float64) Change {
	return Change{MedianA: median(a), MedianB: median(b), Relative: relChange(median(a), median(b)), CI95: bootstrapChangeCI(a, b)}
}

// IntervalGbps returns the goodput of each measured (not warm-up)
// interval of a stored linerate.bench/v1 document, in Gbit/s.
func IntervalGbps(result []byte) ([]float64, error) {
	var r Run
	if err := json.Unmarshal(result, &r); err != nil {
		return nil, fmt.Errorf("reading a stored run: %w", err)
	}
	var out []float64
	for _, iv := range r.Intervals {
		if !iv.Omitted && iv.End > iv.Start {
			out = append(out, iv.Sum.BitsPerSecond/1e9)
		}
	}
	return out, nil
}
