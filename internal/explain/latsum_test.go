package explain

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/latency"
	"github.com/linerate/linerate/internal/result"
)

// pingRun is a finished ping-pong run: its percentiles (nil: too few
// samples), round trips and, over UDP, losses. Its Gbit/s is the
// ping-pong's bytes: higher for the point of higher p50 below, so that a
// summary ranking by Gbit/s would pick the wrong best.
func pingRun(p50, p99 float64, p999 *float64, samples, dropped, ooo int64, proto string, gbps float64) *result.Result {
	r := &result.Result{}
	r.Start.Placement = result.Placement{Client: []int{0}, Server: []int{1}}
	r.End.Seconds = 2
	r.End.SumReceived.BitsPerSecond = gbps * 1e9
	r.End.Latency = &result.Latency{Summary: latency.Summary{Samples: samples, Dropped: dropped, OutOfOrder: ooo,
		RTTUs: latency.RTT{P50: &p50, P99: &p99, P999: p999}}, Protocol: proto, Size: 64, RatePerSecond: float64(samples) / 2}
	return r
}

func f64(v float64) *float64 { return &v }

// pingDesign is a ping-pong campaign's design (native, lab:x, 64-byte
// messages) over the placements given ("auto" when none), each point's
// command as bench writes it.
func pingDesign(udp bool, placements ...string) Design {
	if len(placements) == 0 {
		placements = []string{"auto"}
	}
	d := Design{Driver: "native", Peer: "lab:x", PingPong: true, Placements: len(placements) > 1}
	for _, p := range placements {
		cmd := "linerate bench lab:x -t 10"
		if p != "auto" {
			cmd += " -A " + p
		}
		cmd += " --latency --size 64"
		if udp {
			cmd += " --udp"
		}
		d.Points = append(d.Points, Point{Streams: 1, Placement: p, Command: cmd})
	}
	return d
}

func TestSummarizeLatency(t *testing.T) {
	type point struct {
		placement              string
		runs                   int
		medP50, minP50, maxP50 float64
		medP99, minP99, maxP99 float64
		medP999                *float64
		samples, dropped, ooo  int64
		rate                   float64
		buckets                int
	}
	for _, tc := range []struct {
		name     string
		design   Design
		outs     []Outcome
		want     []point
		best     string
		bestP50  float64
		bestP99  float64
		explains []string // substrings of the explanation, in order
	}{{
		name:   "tcp, two placements, three runs each: the best is the lowest p50, not the highest Gbit/s",
		design: pingDesign(false, "0,0", "0,1"),
		outs: []Outcome{
			{Point: 0, ID: 1, Run: pingRun(30, 60, f64(90), 1000, 0, 0, "tcp", 0.2)},
			{Point: 1, ID: 2, Run: pingRun(22, 40, f64(70), 1000, 0, 0, "tcp", 0.1)},
			{Point: 0, ID: 3, Run: pingRun(28, 50, nil, 1200, 0, 0, "tcp", 0.2)},
			{Point: 1, ID: 4, Run: pingRun(20, 45, f64(80), 1100, 0, 0, "tcp", 0.1)},
			{Point: 0, ID: 5, Run: pingRun(35, 70, f64(100), 900, 0, 0, "tcp", 0.2)},
			{Point: 1, ID: 6, Run: pingRun(21, 42, f64(75), 1300, 0, 0, "tcp", 0.1)},
		},
		want: []point{
			{"0,0", 3, 30, 28, 35, 60, 50, 70, f64(95), 3100, 0, 0, 500, 1},
			{"0,1", 3, 21, 20, 22, 42, 40, 45, f64(75), 3400, 0, 0, 550, 1},
		},
		best: "0,1", bestP50: 21, bestP99: 42,
		explains: []string{
			"placement 0,0: p50 round trip 28.0-35.0 µs over the 3 runs (p99 50.0-70.0 µs)",
			"placement 0,1: p50 round trip 20.0-22.0 µs over the 3 runs (p99 40.0-45.0 µs)",
			"Placement 0,1 had the lowest round trips: median p50 21.0 µs against 30.0 µs with 0,0 (p99 42.0 against 60.0).",
			"Best: placement 0,1, median p50 round trip 21.0 µs, p99 42.0 µs. Reproduce it with: linerate bench lab:x -t 10 -A 0,1 --latency --size 64",
		},
	}, {
		name:   "udp, one placement, five runs in two buckets: losses summed, buckets by p50",
		design: pingDesign(true, "2,3"),
		outs: []Outcome{
			{Point: 0, ID: 11, Run: pingRun(20, 30, f64(40), 100, 1, 0, "udp", 1)},
			{Point: 0, ID: 12, Run: pingRun(41, 60, f64(80), 100, 0, 2, "udp", 1)},
			{Point: 0, ID: 13, Run: pingRun(20.5, 31, f64(41), 100, 3, 0, "udp", 1)},
			{Point: 0, ID: 14, Run: pingRun(40, 58, f64(79), 100, 0, 0, "udp", 1)},
			{Point: 0, ID: 15, Run: pingRun(21, 32, f64(42), 100, 0, 1, "udp", 1)},
		},
		want: []point{{"2,3", 5, 21, 20, 41, 32, 30, 60, f64(42), 500, 4, 3, 50, 2}},
		best: "2,3", bestP50: 21, bestP99: 32,
		explains: []string{
			"placement 2,3: the 5 runs fell into 2 buckets by p50 round trip (split where neighbouring p50s differ by more than 2.25 µs",
			"The 3 low-latency runs (p50 20.0-21.0 µs): client on CPU 0",
			"The 2 high-latency runs (p50 40.0-41.0 µs): client on CPU 0",
			"Best: placement 2,3, median p50 round trip 21.0 µs, p99 32.0 µs. Reproduce it with: linerate bench lab:x -t 10 -A 2,3 --latency --size 64 --udp",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(tc.design, tc.outs, Topology{}, nil)
			if len(s.Points) != len(tc.want) {
				t.Fatalf("%d points, want %d", len(s.Points), len(tc.want))
			}
			for i, w := range tc.want {
				p := s.Points[i]
				l := p.Latency
				if p.Placement != w.placement || l == nil {
					t.Fatalf("point %d: placement %q latency %v, want %q with latency", i, p.Placement, l, w.placement)
				}
				got := []float64{*l.MedianP50Us, *l.MinP50Us, *l.MaxP50Us, *l.MedianP99Us, *l.MinP99Us, *l.MaxP99Us, l.MedianRatePerS}
				want := []float64{w.medP50, w.minP50, w.maxP50, w.medP99, w.minP99, w.maxP99, w.rate}
				for k := range got {
					if got[k] != want[k] {
						t.Errorf("point %s: figures %v, want %v", p.Placement, got, want)
						break
					}
				}
				if (l.MedianP999Us == nil) != (w.medP999 == nil) || (l.MedianP999Us != nil && *l.MedianP999Us != *w.medP999) {
					t.Errorf("point %s: median p99.9 %v, want %v", p.Placement, l.MedianP999Us, w.medP999)
				}
				if l.Runs != w.runs || l.Samples != w.samples || l.Dropped != w.dropped || l.OutOfOrder != w.ooo || len(l.Buckets) != w.buckets {
					t.Errorf("point %s: runs %d samples %d dropped %d ooo %d buckets %d, want %d %d %d %d %d", p.Placement,
						l.Runs, l.Samples, l.Dropped, l.OutOfOrder, len(l.Buckets), w.runs, w.samples, w.dropped, w.ooo, w.buckets)
				}
				if len(p.Buckets) != 0 {
					t.Errorf("point %s: throughput buckets %v for a ping-pong", p.Placement, p.Buckets)
				}
			}
			if s.Best == nil || s.Best.Placement != tc.best || s.Best.MedianP50Us == nil || *s.Best.MedianP50Us != tc.bestP50 || *s.Best.MedianP99Us != tc.bestP99 {
				t.Fatalf("best %+v, want placement %s p50 %g p99 %g", s.Best, tc.best, tc.bestP50, tc.bestP99)
			}
			all := strings.Join(s.Explanation, "\n")
			if strings.Contains(all, "Gbit/s") {
				t.Errorf("a ping-pong's explanation speaks of Gbit/s:\n%s", all)
			}
			at := 0
			for _, e := range tc.explains {
				k := strings.Index(all[at:], e)
				if k < 0 {
					t.Fatalf("explanation lacks %q after offset %d:\n%s", e, at, all)
				}
				at += k + len(e)
			}
		})
	}
}

// TestSummarizeLatencyBuckets pins the buckets of the UDP case above:
// their runs and p50s, lowest first.
func TestSummarizeLatencyBuckets(t *testing.T) {
	outs := []Outcome{
		{Point: 0, ID: 11, Run: pingRun(20, 30, nil, 100, 0, 0, "udp", 1)},
		{Point: 0, ID: 12, Run: pingRun(41, 60, nil, 100, 0, 0, "udp", 1)},
		{Point: 0, ID: 13, Run: pingRun(20.5, 31, nil, 100, 0, 0, "udp", 1)},
		{Point: 0, ID: 14, Run: pingRun(40, 58, nil, 100, 0, 0, "udp", 1)},
	}
	s := Summarize(pingDesign(true), outs, Topology{}, nil)
	b, err := json.Marshal(s.Points[0].Latency.Buckets)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"run_ids":[11,13],"median_p50_us":20.25,"min_p50_us":20,"max_p50_us":20.5},{"run_ids":[14,12],"median_p50_us":40.5,"min_p50_us":40,"max_p50_us":41}]`
	if string(b) != want {
		t.Errorf("buckets\n%s\nwant\n%s", b, want)
	}
	if s.BucketRule != LatencyBucketRule {
		t.Errorf("bucket rule %q, want the p50 one", s.BucketRule)
	}
	if p := s.Points[0].Latency; p.MedianP999Us != nil || p.MinP999Us != nil || p.MaxP999Us != nil {
		t.Errorf("p99.9 known in no run, yet summarized as %v %v %v", p.MedianP999Us, p.MinP999Us, p.MaxP999Us)
	}
}

// TestSummarizeThroughputHasNoLatency: a TCP stream campaign keeps its
// Gbit/s best and gets no latency fields.
func TestSummarizeThroughputHasNoLatency(t *testing.T) {
	spec := designOf("native", "lab:x", nil, nil, nil)
	mk := func(g float64) *result.Result {
		r := &result.Result{}
		r.End.Seconds, r.End.SumReceived.BitsPerSecond = 2, g*1e9
		return r
	}
	s := Summarize(spec, []Outcome{{Run: mk(9)}, {Run: mk(8)}}, Topology{}, nil)
	b, _ := json.Marshal(s)
	for _, no := range []string{`"latency"`, `"median_p50_us"`} {
		if bytes.Contains(b, []byte(no)) {
			t.Errorf("throughput summary carries %s: %s", no, b)
		}
	}
	if s.BucketRule != BucketRule {
		t.Errorf("bucket rule %q, want the throughput one", s.BucketRule)
	}
	if s.Best.MedianGbps != 8.5 {
		t.Errorf("best median %g Gbit/s, want 8.5", s.Best.MedianGbps)
	}
}

func TestWriteSummaryLatency(t *testing.T) {
	outs := []Outcome{
		{Point: 0, Run: pingRun(30, 60, f64(90), 1000, 1, 2, "udp", 0.2)},
		{Point: 0, Run: pingRun(28, 50, nil, 1200, 0, 0, "udp", 0.2)},
		{Point: 0, Run: pingRun(35, 70, f64(100), 900, 0, 0, "udp", 0.2)},
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, Summarize(pingDesign(true, "0,1"), outs, Topology{}, nil)); err != nil {
		t.Fatal(err)
	}
	want := "round trip in µs: median of the runs' percentiles (min-max across runs)\n" +
		"placement   runs p50                    p99                    p99.9                   round trips    per second  dropped out of order\n" +
		"0,1            3 30.0 (28.0-35.0)       60.0 (50.0-70.0)       95.0 (90.0-100.0)              3100           500        1            2\n"
	if got := b.String(); !strings.HasPrefix(got, want) {
		t.Errorf("summary\n%s\nwant it to begin\n%s", got, want)
	}
	if strings.Contains(b.String(), "Gbit") {
		t.Errorf("latency summary speaks of Gbit/s:\n%s", b.String())
	}
}
