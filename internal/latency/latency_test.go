package latency

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func us(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x * 1e3)
	}
	return out
}

func seq(n int, unit time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * unit
	}
	return out
}

// want is a percentile's expected value in µs; nil expects null.
func f(v float64) *float64 { return &v }

func TestIndexAndEnough(t *testing.T) {
	for _, c := range []struct {
		ppm, n int64
		index  int64
		enough bool
	}{
		// int(0.5 + 0.25·10) − 1 = int(3.0) − 1 = 2; 10·0.75 ≥ 1.
		{250_000, 10, 2, true},
		// int(0.5 + 0.5·10) − 1 = int(5.5) − 1 = 4.
		{500_000, 10, 4, true},
		// int(0.5 + 0.99·10) − 1 = int(10.4) − 1 = 9: the max; 10·0.01 < 1.
		{990_000, 10, 9, false},
		// int(0.5 + 0.99·100) − 1 = 98; 100·0.01 = 1: just enough.
		{990_000, 100, 98, true},
		// int(0.5 + 0.9999·1549) − 1 = int(1549.345) − 1 = 1548, the max,
		// which sockperf printed as p99.990 in the --mps=1000 capture.
		{999_900, 1549, 1548, false},
		// int(0.5 + 0.9999·10000) − 1 = int(9999.5) − 1 = 9998.
		{999_900, 10_000, 9998, true},
		{999_900, 9_999, 9997, false},
		// int(0.5 + 0.25·1) − 1 = −1: sockperf prints no line then.
		{250_000, 1, -1, false},
		// int(0.5 + 0.5·2) − 1 = 0; 2·0.5 = 1: enough.
		{500_000, 2, 0, true},
	} {
		if got := Index(c.ppm, c.n); got != c.index {
			t.Errorf("Index(%d, %d) = %d, want %d", c.ppm, c.n, got, c.index)
		}
		if got := Enough(c.ppm, c.n); got != c.enough {
			t.Errorf("Enough(%d, %d) = %v, want %v", c.ppm, c.n, got, c.enough)
		}
	}
}

func TestSummarize(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      []time.Duration
		want    RTT
		notes   []string // substrings, one per note, in order
		samples int64
	}{
		{
			// Sorted 1..10 µs. p25 = index 2 = 3, p50 = index 4 = 5, p90
			// = int(9.5) − 1 = 8 → 9. Mean 5.5; sample variance
			// Σ(x − 5.5)² / 9 = 82.5 / 9 = 9.1667, stdev 3.0277.
			name: "ten", in: us(7, 1, 10, 3, 5, 2, 9, 4, 6, 8), samples: 10,
			want:  RTT{Min: f(1), P25: f(3), P50: f(5), P90: f(9), Max: f(10), Mean: f(5.5), Stdev: f(3.0276503540974917)},
			notes: []string{"p99: 10 (it needs at least 100)", "p99.9: 10 (it needs at least 1000)", "p99.99: 10 (it needs at least 10000)"},
		},
		{
			// One sample: min = max = mean, no spread, no percentile.
			name: "one", in: us(42), samples: 1,
			want:  RTT{Min: f(42), Max: f(42), Mean: f(42)},
			notes: []string{"p25: 1 (it needs at least 2)", "p50", "p90", "p99:", "p99.9", "p99.99"},
		},
		{
			// [1, 3]: p25 = int(1.0) − 1 = 0 → 1; p50 = int(1.5) − 1 = 0 →
			// 1. Mean 2, stdev √((1 + 1)/1) = 1.4142.
			name: "two", in: us(3, 1), samples: 2,
			want:  RTT{Min: f(1), P25: f(1), P50: f(1), Max: f(3), Mean: f(2), Stdev: f(math.Sqrt2)},
			notes: []string{"p90: 2 (it needs at least 10)", "p99:", "p99.9", "p99.99"},
		},
		{
			// 1..100 µs: p25 = int(25.5) − 1 = 24 → 25; p50 = int(50.5) −
			// 1 = 49 → 50; p90 = int(90.5) − 1 = 89 → 90; p99 = int(99.5)
			// − 1 = 98 → 99. Mean 50.5; variance n(n+1)/12 = 841.67,
			// stdev 29.0115.
			name: "hundred", in: seq(100, time.Microsecond), samples: 100,
			want:  RTT{Min: f(1), P25: f(25), P50: f(50), P90: f(90), P99: f(99), Max: f(100), Mean: f(50.5), Stdev: f(29.011491975882016)},
			notes: []string{"p99.9: 100 (it needs at least 1000)", "p99.99: 100 (it needs at least 10000)"},
		},
		{
			// 1..10000 ns: p99.9 = int(9990.5) − 1 = 9989 → 9990 ns;
			// p99.99 = int(9999.5) − 1 = 9998 → 9999 ns; p25 = int(2500.5)
			// − 1 = 2499 → 2500 ns. Mean 5000.5 ns, stdev
			// √(10000·10001/12) = 2886.896 ns.
			name: "ten thousand", in: seq(10_000, time.Nanosecond), samples: 10_000,
			want: RTT{Min: f(0.001), P25: f(2.5), P50: f(5), P90: f(9), P99: f(9.9), P999: f(9.99), P9999: f(9.999),
				Max: f(10), Mean: f(5.0005), Stdev: f(2.886895679907165)},
		},
		{
			name: "none", samples: 0, notes: []string{"no samples"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := slices.Clone(c.in)
			s := Summarize(c.in)
			if !slices.Equal(before, c.in) {
				t.Error("Summarize reordered its input")
			}
			if s.Samples != c.samples {
				t.Errorf("samples %d, want %d", s.Samples, c.samples)
			}
			compareRTT(t, s.RTTUs, c.want, 1e-9)
			if len(s.Notes) != len(c.notes) {
				t.Fatalf("notes %q, want %d", s.Notes, len(c.notes))
			}
			for i, n := range c.notes {
				if !strings.Contains(s.Notes[i], n) {
					t.Errorf("note %d %q lacks %q", i, s.Notes[i], n)
				}
			}
		})
	}
}

// compareRTT checks every field: both null, or both set and within rel.
func compareRTT(t *testing.T, got, want RTT, rel float64) {
	t.Helper()
	fields := []struct {
		name string
		g, w *float64
	}{
		{"min", got.Min, want.Min}, {"max", got.Max, want.Max}, {"mean", got.Mean, want.Mean}, {"stdev", got.Stdev, want.Stdev},
	}
	for _, p := range Percentiles {
		fields = append(fields, struct {
			name string
			g, w *float64
		}{p.Name, p.Get(&got), p.Get(&want)})
	}
	for _, fl := range fields {
		switch {
		case fl.g == nil && fl.w == nil:
		case fl.g == nil || fl.w == nil:
			t.Errorf("%s: got %v, want %v", fl.name, show(fl.g), show(fl.w))
		case math.Abs(*fl.g-*fl.w) > rel*math.Abs(*fl.w):
			t.Errorf("%s: got %.6g, want %.6g (±%g)", fl.name, *fl.g, *fl.w, rel)
		}
	}
}

func show(v *float64) any {
	if v == nil {
		return "null"
	}
	return *v
}
