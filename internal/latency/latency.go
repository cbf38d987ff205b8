// Package latency turns round-trip times into the distribution a latency
// result carries (end.latency in docs/schema/): the sample count, min,
// p25, p50, p90, p99, p99.9, p99.99, max, mean and standard deviation in
// microseconds, with the percentiles taken as sockperf takes them.
//
// Two ways in: Summarize over a slice of samples (exact), and a Recorder,
// a fixed-size log-linear histogram that a hot loop feeds without
// allocating (percentiles within 0.4%; min, max, mean and stdev exact).
package latency

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Summary is a latency result: end.latency.
type Summary struct {
	// Samples is the number of round trips measured (warm-up and
	// cool-down excluded); 0 when the tool did not say.
	Samples int64 `json:"samples"`
	RTTUs   RTT   `json:"rtt_us"`
	// Dropped and OutOfOrder count lost and reordered messages (UDP).
	Dropped    int64 `json:"dropped"`
	OutOfOrder int64 `json:"out_of_order"`
	// Notes say what is missing and why ("too few samples for p99.99").
	Notes []string `json:"notes,omitempty"`
}

// RTT is the round-trip distribution in microseconds. A nil field is
// unknown: no samples, or too few for that percentile (see Enough).
// Stdev is the sample standard deviation (divided by n−1), as sockperf's.
type RTT struct {
	Min   *float64 `json:"min"`
	P25   *float64 `json:"p25"`
	P50   *float64 `json:"p50"`
	P90   *float64 `json:"p90"`
	P99   *float64 `json:"p99"`
	P999  *float64 `json:"p99_9"`
	P9999 *float64 `json:"p99_99"`
	Max   *float64 `json:"max"`
	Mean  *float64 `json:"mean"`
	Stdev *float64 `json:"stdev"`
}

// Percentile is one of the percentiles a Summary reports, as parts per
// million (p99.9 is 999000) so that the index and the "enough samples"
// rule are exact integer arithmetic.
type Percentile struct {
	Name string // "p99.9", as notes and tables print it
	PPM  int64
	// field points at the RTT field that holds it.
	field func(*RTT) **float64
}

// Percentiles are the levels of RTT, lowest first.
var Percentiles = []Percentile{
	{"p25", 250_000, func(r *RTT) **float64 { return &r.P25 }},
	{"p50", 500_000, func(r *RTT) **float64 { return &r.P50 }},
	{"p90", 900_000, func(r *RTT) **float64 { return &r.P90 }},
	{"p99", 990_000, func(r *RTT) **float64 { return &r.P99 }},
	{"p99.9", 999_000, func(r *RTT) **float64 { return &r.P999 }},
	{"p99.99", 999_900, func(r *RTT) **float64 { return &r.P9999 }},
}

// Set stores v as this percentile in r.
func (p Percentile) Set(r *RTT, v *float64) { *p.field(r) = v }

// Get returns this percentile of r.
func (p Percentile) Get(r *RTT) *float64 { return *p.field(r) }

// Index is the position in n ascending samples that sockperf reports as
// the ppm/10^6 percentile: int(0.5 + p·n) − 1, here in integers (sockperf
// computes it in doubles, where p·n can land a hair under a whole number).
// It is −1 when n is too small for any sample to qualify.
func Index(ppm, n int64) int64 { return (ppm*n+500_000)/1_000_000 - 1 }

// Enough reports whether n samples can say anything about the ppm/10^6
// percentile: n ≥ 1/(1−p), i.e. at least one sample lies above it.
// Below that, sockperf still prints the top samples under the
// percentile's name; a Summary leaves it null with a note instead.
func Enough(ppm, n int64) bool { return n*(1_000_000-ppm) >= 1_000_000 }

// tooFew is the note for a percentile left out.
func tooFew(p Percentile, n int64) string {
	need := (1_000_000 + (1_000_000 - p.PPM) - 1) / (1_000_000 - p.PPM)
	return fmt.Sprintf("too few samples for %s: %d (it needs at least %d)", p.Name, n, need)
}

// Micros converts a duration to microseconds.
func Micros(d time.Duration) float64 { return float64(d) / 1e3 }

func ptr(v float64) *float64 { return &v }

// Summarize computes the distribution of rtts exactly. It sorts a copy:
// rtts is left as it was.
func Summarize(rtts []time.Duration) Summary {
	n := int64(len(rtts))
	s := Summary{Samples: n}
	if n == 0 {
		s.Notes = []string{"no samples"}
		return s
	}
	sorted := slices.Clone(rtts)
	slices.Sort(sorted)
	// Welford's running mean and sum of squared deviations: no
	// cancellation when the spread is small beside the mean.
	var mean, m2 float64
	for i, d := range sorted {
		x := float64(d)
		delta := x - mean
		mean += delta / float64(i+1)
		m2 += delta * (x - mean)
	}
	s.RTTUs.Min = ptr(Micros(sorted[0]))
	s.RTTUs.Max = ptr(Micros(sorted[n-1]))
	s.RTTUs.Mean = ptr(mean / 1e3)
	if n > 1 {
		s.RTTUs.Stdev = ptr(math.Sqrt(m2/float64(n-1)) / 1e3)
	}
	for _, p := range Percentiles {
		if !Enough(p.PPM, n) {
			s.Notes = append(s.Notes, tooFew(p, n))
			continue
		}
		p.Set(&s.RTTUs, ptr(Micros(sorted[Index(p.PPM, n)])))
	}
	return s
}
