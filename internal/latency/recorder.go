package latency

import (
	"math"
	"math/bits"
	"time"
)

// Recorder collects round-trip times in a hot loop: Record neither
// allocates nor takes a lock, and its memory is fixed (about 60 KiB)
// however long the run.
//
// Why a histogram and not a slice of every sample: a ping-pong at
// sockperf's ceiling (600 k round trips/s) for 60 s is 36 M samples,
// 288 MB as durations; the histogram is the same 60 KiB for 1 s or 1 h,
// and two of them merge (one per thread). Its price is resolution: a
// value is kept as the bucket it falls in, buckets are 1/128 of a power
// of two wide above 256 ns and 1 ns below, and a percentile is reported as
// its bucket's midpoint, so it is within 0.4% of the exact sample — well
// under the run-to-run spread of any latency measured over a network.
// Min, max, mean and standard deviation are kept exactly.
//
// A Recorder is not safe for concurrent use: give each thread its own
// and Merge them afterwards.
type Recorder struct {
	counts    [numBuckets]uint64
	n         uint64
	min, max  time.Duration
	mean, m2  float64 // Welford's running mean and squared deviations, in ns
	negatives uint64  // samples below zero (a clock step), counted as 0
}

// The bucket layout is HdrHistogram's idea, hand-rolled: the Go port
// (HdrHistogram/hdrhistogram-go) wants a highest trackable value up front
// and rejects samples above it, where a 10 s stall must still count as the
// max, and the whole histogram here is some 40 lines. Values below 2·sub
// are their own bucket; above, each power of two [2^k, 2^(k+1)) is cut
// into sub equal buckets.
const (
	subBits = 7
	sub     = 1 << subBits // buckets per power of two: width ≤ 1/128 of the value
	linear  = 2 * sub      // values 0..255 ns are exact
	// The top bucket group holds values of 63 bits, the most a positive
	// Duration has.
	numBuckets = linear + (63-subBits-1)*sub
)

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// bucket is the index of the bucket holding v ≥ 0.
func bucket(v uint64) int {
	if v < linear {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1 // v>>shift is in [sub, 2·sub)
	return linear + (shift-1)*sub + int(v>>shift) - sub
}

// bounds returns the lowest value of bucket i and its width.
func bounds(i int) (lo, width uint64) {
	if i < linear {
		return uint64(i), 1
	}
	shift := (i-linear)/sub + 1
	return uint64(sub+(i-linear)%sub) << shift, 1 << shift
}

// Record adds one round-trip time.
func (r *Recorder) Record(d time.Duration) {
	if d < 0 {
		r.negatives++
		d = 0
	}
	r.counts[bucket(uint64(d))]++
	r.n++
	if r.n == 1 || d < r.min {
		r.min = d
	}
	if d > r.max {
		r.max = d
	}
	x := float64(d)
	delta := x - r.mean
	r.mean += delta / float64(r.n)
	r.m2 += delta * (x - r.mean)
}

// Count returns the number of samples recorded.
func (r *Recorder) Count() int64 { return int64(r.n) }

// Reset empties the recorder, keeping its memory.
func (r *Recorder) Reset() { *r = Recorder{} }

// Merge adds o's samples to r (Chan et al.'s pairwise update of the
// running mean and squared deviations).
func (r *Recorder) Merge(o *Recorder) {
	if o.n == 0 {
		return
	}
	if r.n == 0 {
		*r = *o
		return
	}
	for i, c := range o.counts {
		r.counts[i] += c
	}
	n := float64(r.n + o.n)
	delta := o.mean - r.mean
	r.m2 += o.m2 + delta*delta*float64(r.n)*float64(o.n)/n
	r.mean += delta * float64(o.n) / n
	r.n += o.n
	r.min = min(r.min, o.min)
	r.max = max(r.max, o.max)
	r.negatives += o.negatives
}

// Summary returns the distribution recorded so far. Percentiles use
// sockperf's index over the samples in bucket order, report the bucket's
// midpoint (within 0.4%) and are exact at the ends: the first sample is
// the min, the last the max.
func (r *Recorder) Summary() Summary {
	n := int64(r.n)
	s := Summary{Samples: n}
	if n == 0 {
		s.Notes = []string{"no samples"}
		return s
	}
	s.RTTUs.Min = ptr(Micros(r.min))
	s.RTTUs.Max = ptr(Micros(r.max))
	s.RTTUs.Mean = ptr(r.mean / 1e3)
	if n > 1 {
		s.RTTUs.Stdev = ptr(math.Sqrt(r.m2/float64(n-1)) / 1e3)
	}
	for _, p := range Percentiles {
		if !Enough(p.PPM, n) {
			s.Notes = append(s.Notes, tooFew(p, n))
			continue
		}
		p.Set(&s.RTTUs, ptr(Micros(r.at(Index(p.PPM, n)))))
	}
	if r.negatives > 0 {
		s.Notes = append(s.Notes, "clock stepped back during the run: some samples counted as 0")
	}
	return s
}

// at returns the value of the sample at position idx (0-based) in
// ascending order: exact at the ends, else its bucket's midpoint clamped
// to [min, max].
func (r *Recorder) at(idx int64) time.Duration {
	switch {
	case idx <= 0:
		return r.min
	case idx >= int64(r.n)-1:
		return r.max
	}
	var seen uint64
	for i, c := range r.counts {
		seen += c
		if seen > uint64(idx) {
			lo, w := bounds(i)
			mid := time.Duration(lo + w/2)
			return min(max(mid, r.min), r.max)
		}
	}
	return r.max
}
