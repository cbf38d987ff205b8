package explain

import (
	"strings"
	"testing"
)

// TestSweepTexts: a sweep of four points of 2 runs each says once, for
// all four, that 2 runs cannot fall into buckets; the knee sentence says
// a drop as a drop (the walkthrough's 34.58 with 1 stream, 32.14 with 2:
// "7% less", not "less than 5% more").
func TestSweepTexts(t *testing.T) {
	d := designOf("native", "h", []int{1, 2, 4, 8}, nil, nil)
	gbps := map[int][]float64{0: {34.5, 34.66}, 1: {32.1, 32.18}, 2: {31, 31.2}, 3: {30, 30.4}}
	var outs []Outcome
	for pt, gs := range gbps {
		for _, g := range gs {
			r := syntheticRun(g, nil)
			r.Start.Streams = d.Points[pt].Streams
			outs = append(outs, Outcome{Point: pt, Run: r})
		}
	}
	s := Summarize(d, outs, Topology{}, nil)
	text := strings.Join(s.Explanation, "\n")
	if n := strings.Count(text, "cannot fall into buckets"); n != 1 {
		t.Errorf("said %d times, want once:\n%s", n, text)
	}
	if !strings.Contains(text, "1 stream, placement auto; 2 streams, placement auto; 4 streams, placement auto; 8 streams, placement auto: 2 runs each cannot fall into buckets") {
		t.Errorf("the note does not name the four points:\n%s", text)
	}
	if !strings.Contains(text, "Streams stop paying after 1: 2 streams gave 32.14 Gbit/s against 34.58 with 1 (7% less).") {
		t.Errorf("knee:\n%s", text)
	}
	// 3% more is "only 3% more".
	k := kneeSentence([]PointSummary{{Streams: 1, Placement: "auto", MedianGbps: 30}, {Streams: 2, Placement: "auto", MedianGbps: 30.9}}, "auto")
	if !strings.Contains(k, "(only 3% more, under the 5% that counts)") {
		t.Errorf("knee at +3%%: %q", k)
	}
}
