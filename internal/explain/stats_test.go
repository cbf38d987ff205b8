package explain

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestBucketEdges pins the bucket rule at its edges: one run's gap is 5%
// of it (no gaps to take a median of); a neighbour exactly one gap away
// stays in the bucket; where 5% of the median is the larger term it
// decides.
func TestBucketEdges(t *testing.T) {
	if g := bucketGap([]float64{9.5}); !(math.Abs(g-0.475) < 1e-12) { // NaN fails too
		t.Errorf("one run: gap %g, want 5%% of 9.5", g)
	}
	for _, tt := range []struct {
		gbps []float64
		want [][]int
	}{
		// median 10, 5% of it 0.5, median gap 0: 10.5 is exactly one gap up.
		{[]float64{10, 10, 10, 10.5}, [][]int{{0, 1, 2, 3}}},
		{[]float64{10, 10, 10, 10.6}, [][]int{{0, 1, 2}, {3}}},
		// median gap 0.1 (3× is 0.3), 5% of the median 10.2 is 0.51: the
		// 0.5 step is inside it.
		{[]float64{10, 10.1, 10.2, 10.3, 10.8}, [][]int{{0, 1, 2, 3, 4}}},
	} {
		if got := splitBuckets(tt.gbps); !slices.EqualFunc(got, tt.want, slices.Equal) {
			t.Errorf("splitBuckets(%v) = %v, want %v", tt.gbps, got, tt.want)
		}
	}
}

// TestMinMaxCoverageEdges: two runs cover the median half the time, and
// the note of a campaign of two says so.
func TestMinMaxCoverageEdges(t *testing.T) {
	if c := minMaxCoverage(2); c != 0.5 {
		t.Errorf("minMaxCoverage(2) = %g, want 0.5", c)
	}
	if c := minMaxCoverage(1); c != 0 {
		t.Errorf("minMaxCoverage(1) = %g, want 0", c)
	}
	ci := medianCI([]float64{9, 10})
	if ci.OK() || !strings.Contains(ci.Note, "2 runs (min to max covers the median with 50% confidence)") {
		t.Errorf("two runs: %+v", ci)
	}
}

// TestCompareRunsSmallestP: 1 run against 39 can reach p = 2/40 = 0.05 at
// best, which is α itself and never below it: the note says no
// difference can be shown.
func TestCompareRunsSmallestP(t *testing.T) {
	if p := minUTestP(1, 39); p != 0.05 {
		t.Fatalf("minUTestP(1, 39) = %g, want 0.05", p)
	}
	b := make([]float64, 39)
	for i := range b {
		b[i] = 10 + float64(i)/10
	}
	ch := CompareRuns([]float64{5}, b)
	if ch.Significant || !strings.Contains(ch.Note, "cannot show a difference") || math.IsNaN(ch.P) {
		t.Errorf("1 against 39: %+v", ch)
	}
}
