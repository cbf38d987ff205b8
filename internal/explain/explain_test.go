package explain

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/result"
)

// ryzenX4Topology is the Ryzen 9 9900X of the 100 GbE home lab whose
// ConnectX-5 trained at x4: two CCDs, CPUs 0-5
// and 6-11, each with its own L3; one NUMA node.
func ryzenX4Topology() Topology {
	return Topology{
		L3Domains: [][]int{{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}},
		NUMANodes: map[string][]int{"0": {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
	}
}

// syntheticRun is a 10-interval run at gbps with the server (the
// receiver) pinned to CPU 6 and softirq load on the CPUs given (cpu →
// {busy, softirq}); the other CPUs idle at 1% busy.
func syntheticRun(gbps float64, load map[int][2]float64) *result.Result {
	r := &result.Result{Schema: result.Schema, Engine: "iperf3"}
	r.Start = result.Start{Streams: 1, DurationS: 10, Direction: result.Send,
		Placement: result.Placement{Client: []int{6}, Server: []int{6}, Source: "user"},
		Client:    result.HostInfo{BootID: "crow"}, Server: result.HostInfo{BootID: "vulture"}}
	for i := range 10 {
		per := map[string]result.CPUSample{}
		for cpu := range 12 {
			s := result.CPUSample{Busy: 1}
			if l, ok := load[cpu]; ok {
				s = result.CPUSample{Busy: l[0], SoftIRQ: l[1], NetRX: uint64(l[1] * 1000)}
			}
			per[strconv.Itoa(cpu)] = s
		}
		r.Intervals = append(r.Intervals, result.Interval{Start: float64(i), End: float64(i + 1),
			Sum: result.Sum{BitsPerSecond: gbps * 1e9}, CPU: result.HostCPUs{Client: map[string]result.CPUSample{"6": {Busy: 70}}, Server: per}})
	}
	r.End = result.End{Seconds: 10, SumReceived: result.Received{BitsPerSecond: gbps * 1e9},
		CPU: result.EndCPU{ClientSeconds: 7, ServerSeconds: 9}}
	return r
}

// ryzenX4Runs are the three buckets of that home lab: worst (~65 Gbit/s, the
// NIC's softirq on the server's own CPU 6), better (~84, softirq split
// between CPU 0 of the other CCD and CPU 7), best (~99, softirq on CPUs
// 7-10 of the application's CCD).
func ryzenX4Runs() []*result.Result {
	worst := map[int][2]float64{6: {92, 41}}
	better := map[int][2]float64{6: {85, 2}, 0: {45, 30}, 7: {40, 28}}
	best := map[int][2]float64{6: {80, 2}, 7: {35, 22}, 8: {34, 21}, 9: {36, 23}, 10: {33, 20}}
	return []*result.Result{
		syntheticRun(64.6, worst), syntheticRun(98.8, best), syntheticRun(84.9, better),
		syntheticRun(64.5, worst), syntheticRun(99.0, best), syntheticRun(64.7, worst), syntheticRun(83.7, better),
	}
}

func TestSplitBuckets(t *testing.T) {
	var gbps []float64
	for _, r := range ryzenX4Runs() {
		gbps = append(gbps, r.Gbps())
	}
	got := splitBuckets(gbps)
	want := [][]int{{3, 0, 5}, {6, 2}, {1, 4}}
	if len(got) != 3 {
		t.Fatalf("buckets %v, want 3", got)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("buckets %v, want %v", got, want)
		}
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("buckets %v, want %v", got, want)
			}
		}
	}
	// Unimodal noise stays one bucket: the gap never exceeds 5% of the median.
	if b := splitBuckets([]float64{9.1, 9.3, 9.2, 9.6, 9.4, 9.0}); len(b) != 1 {
		t.Errorf("noise split into %v", b)
	}
	// A wide but even spread stays one bucket: no gap stands out.
	if b := splitBuckets([]float64{10, 12, 14, 16, 18, 20, 22}); len(b) != 1 {
		t.Errorf("even spread split into %v", b)
	}
	if b := splitBuckets([]float64{10, 10.1, 20, 20.2}); len(b) != 2 {
		t.Errorf("two modes: %v", b)
	}
	if b := splitBuckets([]float64{5}); len(b) != 1 {
		t.Errorf("one run: %v", b)
	}
}

func TestExplainRyzenX4(t *testing.T) {
	spec := designOf("iperf3", "192.168.88.3", nil, []string{"6,6"}, iperf3Command("192.168.88.3", 10))
	var outs []Outcome
	for i, r := range ryzenX4Runs() {
		outs = append(outs, Outcome{Point: 0, ID: int64(i + 1), Run: r})
	}
	ceiling := 98.9
	s := Summarize(spec, outs, ryzenX4Topology(), &ceiling)
	if len(s.Points) != 1 || len(s.Points[0].Buckets) != 3 {
		t.Fatalf("points %+v", s.Points)
	}
	p := s.Points[0]
	if p.MedianGbps != 83.7 || p.MinGbps != 64.5 || p.MaxGbps != 99 || p.CI95Gbps[0] > p.MedianGbps || p.CI95Gbps[1] < p.MedianGbps {
		t.Errorf("stats %+v", p)
	}
	if p.CeilingShare == nil || math.Abs(*p.CeilingShare-83.7/98.9) > 0.001 {
		t.Errorf("ceiling share %v", p.CeilingShare)
	}
	if p.CPUPerGbit.Client == nil || p.CPUPerGbit.Server == nil {
		t.Errorf("cpu cost %+v", p.CPUPerGbit)
	}
	if ids := p.Buckets[0].RunIDs; len(ids) != 3 || ids[0] != 4 {
		t.Errorf("slow bucket runs %v", ids)
	}
	text := strings.Join(s.Explanation, "\n")
	t.Log("\n" + text)
	for _, want := range []string{
		"fell into 3 buckets",
		"The 3 slow runs (64.5-64.7 Gbit/s): on the receiver (server), NET_RX softirq on CPU 6 (92% busy), the application's own CPU 6.",
		"The 2 middle runs (83.7-84.9 Gbit/s): on the receiver (server), NET_RX softirq on CPUs 0,7 (40-45% busy), across L3 domains 0 (CPUs 0-5) and 1 (CPUs 6-11); the application's CPU 6 is in L3 domain 1 (CPUs 6-11).",
		"The 2 fast runs (98.8-99.0 Gbit/s): on the receiver (server), NET_RX softirq on CPUs 7-10 (33-36% busy), in L3 domain 1 (CPUs 6-11) with the application's CPU 6 but off its core.",
		"What differs: in the slow runs the receiver's softirq work shared the application's core; in the fast runs it ran on other CPUs of the application's L3 domain, off its core.",
		"Reproduce it with: linerate bench 192.168.88.3 --engine iperf3 -t 10 -P 1 -A 6,6",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q", want)
		}
	}
	if s.Best == nil || s.Best.MedianGbps != 83.7 || s.Best.Placement != "6,6" {
		t.Errorf("best %+v", s.Best)
	}
}

func TestExplainNoDifference(t *testing.T) {
	same := map[int][2]float64{3: {50, 20}}
	b := [][]*result.Result{{syntheticRun(10, same)}, {syntheticRun(20, same)}}
	out := explainBuckets("x", b, 1, ryzenX4Topology())
	if !strings.Contains(out[len(out)-1], "does not tell the buckets apart") {
		t.Errorf("got %q", out[len(out)-1])
	}
}

func TestExplainPlacements(t *testing.T) {
	// The lab: both ends on one 2-CPU machine. 0,0 shares CPU 0; 0,1 does not.
	lab := Topology{L3Domains: [][]int{{0, 1}}, NUMANodes: map[string][]int{"0": {0, 1}}}
	mk := func(gbps float64, client, server int, load map[int][2]float64) *result.Result {
		r := syntheticRun(gbps, load)
		r.Start.Placement = result.Placement{Client: []int{client}, Server: []int{server}}
		r.Start.Client.BootID, r.Start.Server.BootID = "lab", "lab"
		for i := range r.Intervals {
			r.Intervals[i].CPU.Client = r.Intervals[i].CPU.Server
		}
		return r
	}
	spec := designOf("iperf3", "lab:t", nil, []string{"0,0", "0,1"}, iperf3Command("lab:t", 3))
	shared := map[int][2]float64{0: {99, 35}, 1: {3, 1}}
	apart := map[int][2]float64{0: {97, 20}, 1: {88, 30}}
	outs := []Outcome{
		{Point: 0, ID: 1, Run: mk(7.1, 0, 0, shared)}, {Point: 1, ID: 2, Run: mk(13.9, 0, 1, apart)},
		{Point: 0, ID: 3, Run: mk(7.3, 0, 0, shared)}, {Point: 1, ID: 4, Run: mk(14.1, 0, 1, apart)},
	}
	s := Summarize(spec, outs, lab, nil)
	text := strings.Join(s.Explanation, "\n")
	t.Log("\n" + text)
	for _, want := range []string{
		"Placement 0,1 ran 1.94× as fast as 0,0 (median 14.00 vs 7.20 Gbit/s, 1 stream).",
		"With 0,0: client and server threads shared CPU 0 (99% busy) on one machine",
		"with 0,1: client on CPU 0 (97% busy), server on CPU 1 (88% busy)",
		"Reproduce it with: linerate bench lab:t --engine iperf3 -t 3 -P 1 -A 0,1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q", want)
		}
	}
	if s.Best.Placement != "0,1" || s.Points[0].CeilingShare != nil {
		t.Errorf("best %+v, share %v", s.Best, s.Points[0].CeilingShare)
	}
}

// TestMedianCI checks the order-statistic interval on fixed samples.
// By hand, for n = 10: the number of runs below the population median
// is binomial(10, ½), so [x(2), x(9)] misses it when 0 or 1 runs lie
// below or 0 or 1 above: 2 × (1 + 10)/1024 = 0.0215, coverage 0.9785.
// [x(3), x(8)] would miss with 2 × 56/1024 = 0.109: below 95%. For n = 6,
// [min, max] misses with 2/64: coverage 0.96875, the first n to reach
// 95%; for n = 5, min to max covers 1 − 2/32 = 93.75%: no interval.
func TestMedianCI(t *testing.T) {
	ten := []float64{9.7, 9.1, 9.9, 9.3, 9.5, 9.0, 9.8, 9.2, 9.6, 9.4} // sorted: 9.0 9.1 … 9.9
	c := medianCI(ten)
	if !c.OK() || c.Median != 9.45 || c.Lo != 9.1 || c.Hi != 9.8 || math.Abs(c.Level-0.978515625) > 1e-9 {
		t.Errorf("n=10: %+v", c)
	}
	six := medianCI([]float64{5, 3, 4, 6, 1, 2})
	if !six.OK() || six.Lo != 1 || six.Hi != 6 || six.Level != 0.96875 {
		t.Errorf("n=6: %+v", six)
	}
	for n, want := range map[int]string{5: "5 runs (min to max covers the median with 94% confidence)",
		3: "3 runs (min to max covers the median with 75% confidence)", 1: "1 run (min to max covers the median with 0% confidence)"} {
		c := medianCI(ten[:n])
		if c.OK() || !math.IsNaN(c.Lo) || !strings.Contains(c.Note, "too few runs for a 95% interval: "+want) {
			t.Errorf("n=%d: %+v", n, c)
		}
	}
}

// TestCompareRuns checks the U test on fixed samples. By hand: {1,2,3}
// against {4,5,6} is the most extreme of the C(6,3) = 20 equally likely
// splits on either side, p = 2/20 = 0.1, which can never reach 0.05;
// five against five wholly apart gives 2/C(10,5) = 2/252 = 0.00794.
func TestCompareRuns(t *testing.T) {
	c := CompareRuns([]float64{1, 2, 3}, []float64{4, 5, 6})
	if math.Abs(c.P-0.1) > 1e-12 || c.Significant || c.Note == "" || c.MedianA != 2 || c.MedianB != 5 || c.Relative != 1.5 {
		t.Errorf("3 vs 3: %+v", c)
	}
	c = CompareRuns([]float64{10, 10.2, 9.9, 10.1, 10.05}, []float64{9, 9.1, 8.9, 9.05, 8.95})
	if math.Abs(c.P-2.0/252) > 1e-12 || !c.Significant || c.Note != "" || c.Relative >= 0 {
		t.Errorf("5 vs 5: %+v", c)
	}
	c = CompareRuns([]float64{10}, []float64{11})
	if c.P != 1 || c.Significant || !strings.Contains(c.Note, "1 run against 1 cannot show a difference") {
		t.Errorf("1 vs 1: %+v", c)
	}
	if p := minUTestP(4, 4); math.Abs(p-2.0/70) > 1e-12 {
		t.Errorf("min p 4 vs 4 = %v", p)
	}
}

// TestSummaryInterval: a campaign of 3 runs prints no 95% interval and
// says why; one of 10 prints the order-statistic interval [x(2), x(9)];
// both count their runs though none was stored (--no-store: ID 0).
func TestSummaryInterval(t *testing.T) {
	spec := designOf("native", "lab:t", nil, nil, nil)
	gb := []float64{9.7, 9.1, 9.9, 9.3, 9.5, 9.0, 9.8, 9.2, 9.6, 9.4}
	outs := func(n int) []Outcome {
		var o []Outcome
		for _, g := range gb[:n] {
			o = append(o, Outcome{Run: syntheticRun(g, nil)})
		}
		return o
	}
	var b strings.Builder
	s3 := Summarize(spec, outs(3), Topology{}, nil)
	if err := WriteSummary(&b, s3); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if p := s3.Points[0]; p.CI95Gbps != nil || p.Runs != 3 || len(p.RunIDs) != 0 ||
		!strings.Contains(text, "none (see below)") || strings.Contains(text, "9.10-9.90") ||
		!strings.Contains(text, "95% CI: too few runs for a 95% interval: 3 runs (min to max covers the median with 75% confidence); 6 or more give one.") ||
		!strings.Contains(text, "    3 ") {
		t.Errorf("3 runs: %+v\n%s", p, text)
	}
	if j, _ := json.Marshal(s3.Points[0]); !strings.Contains(string(j), `"ci95_gbps":null,`) || !strings.Contains(string(j), `"ci_note":"too few runs`) {
		t.Errorf("3 runs, JSON: %s", j)
	}
	b.Reset()
	s10 := Summarize(spec, outs(10), Topology{}, nil)
	if err := WriteSummary(&b, s10); err != nil {
		t.Fatal(err)
	}
	text = b.String()
	if p := s10.Points[0]; p.CI95Gbps == nil || *p.CI95Gbps != [2]float64{9.1, 9.8} || p.CILevel != 0.9785 || p.CINote != "" ||
		!strings.Contains(text, "9.10-9.80") || strings.Contains(text, "95% CI:") || !strings.Contains(text, "   10 ") {
		t.Errorf("10 runs: %+v\n%s", p, text)
	}
}
