package mesh

import (
	"math"
	"slices"
)

// madScale turns a median absolute deviation into an estimate of the
// standard deviation of normal data (1 / Φ⁻¹(3/4)).
const madScale = 1.4826

// median returns the median of xs (NaN for none); xs is reordered.
func median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// medianMAD returns the median of xs and its median absolute deviation;
// xs is overwritten.
func medianMAD(xs []float64) (med, mad float64) {
	med = median(xs)
	for i, x := range xs {
		xs[i] = math.Abs(x - med)
	}
	return med, median(xs)
}

// binomTail is P(X ≥ k) for X ~ Binomial(n, p), summed in log space so
// that it holds for the few hundred probes of a window and tiny p.
func binomTail(n, k int, p float64) float64 {
	switch {
	case k <= 0:
		return 1
	case k > n:
		return 0
	case p <= 0:
		return 0
	case p >= 1:
		return 1
	}
	lp, lq := math.Log(p), math.Log1p(-p)
	lgn, _ := math.Lgamma(float64(n + 1))
	var sum float64
	for i := k; i <= n; i++ {
		lgi, _ := math.Lgamma(float64(i + 1))
		lgr, _ := math.Lgamma(float64(n - i + 1))
		term := math.Exp(lgn - lgi - lgr + float64(i)*lp + float64(n-i)*lq)
		sum += term
		if term < sum*1e-12 && float64(i) > float64(n)*p {
			break // the rest of the tail adds nothing visible
		}
	}
	return min(sum, 1)
}

// Quantile returns the value at quantile q (0..1) of sorted xs, by the
// index sockperf and linerate's latency reports use: int(0.5 + q·N) − 1,
// clamped; 0 for none.
func Quantile(sorted []uint32, q float64) uint32 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	i := int(0.5+q*float64(n)) - 1
	return sorted[min(max(i, 0), n-1)]
}
