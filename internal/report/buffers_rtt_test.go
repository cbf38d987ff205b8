package report

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestBuffersAtMeasuredRTT: doctor judges socket buffers at an assumed
// 1 ms; beside bench runs the findings section judges them again at the
// RTT the runs measured (the median over runs of each run's median
// smoothed RTT), scaling the autotuned flow's cap by 1 ms over it, so the
// page does not say "tops out near X" beside a measurement far above X
// without saying why. A finding without the figures is left as doctor
// wrote it.
func TestBuffersAtMeasuredRTT(t *testing.T) {
	ds := loadFixture(t, "seed000")
	const auto = 0.8 // Gbit/s at 1 ms, as a doctor of this version records it
	for hi := range ds.Hosts {
		for fi := range ds.Hosts[hi].Findings {
			if f := &ds.Hosts[hi].Findings[fi]; f.ID == "sysctl.socket_buffers_small" {
				f.Evidence["autotuned_flow_gbps"] = auto
			}
		}
	}
	// The expected RTT, from the runs between the two hosts made before
	// the tune (the runs under it had other buffers).
	var perRun, best []float64
	for _, r := range ds.Runs {
		if r.Result.Error != "" || !r.Result.Unpaced() || r.TuneID != "" {
			continue
		}
		var rtts []float64
		for _, iv := range r.Result.Intervals {
			for _, s := range iv.Streams {
				if s.RTTus > 0 {
					rtts = append(rtts, float64(s.RTTus))
				}
			}
		}
		if len(rtts) > 0 {
			slices.Sort(rtts)
			perRun = append(perRun, median(rtts))
			best = append(best, runGbps(&r.Result))
		}
	}
	if len(perRun) == 0 {
		t.Fatal("the fixture's runs carry no RTT")
	}
	rtt := median(perRun)
	want := fmt.Sprintf("At the RTT the bench measured on this path (%s, the median TCP smoothed RTT of %d runs) instead of the assumed 1 ms, the same buffers let an autotuned flow reach about %s Gbit/s",
		rttText(rtt), len(perRun), num(auto*1000/rtt, 1))
	page := string(renderHTML(t, ds))
	if !strings.Contains(page, want) {
		t.Errorf("the findings section lacks %q", want)
	}
	if at := auto * 1000 / rtt; slices.Max(best) > 1.1*at && !strings.Contains(page, "the buffers are not what limits this bench") {
		t.Errorf("the best run (%.2f) beats the %.2f Gbit/s the model allows at the measured RTT, and the page does not say so", slices.Max(best), at)
	}
	plain := string(renderHTML(t, loadFixture(t, "seed000")))
	if strings.Contains(plain, "At the RTT the bench measured") {
		t.Error("a finding without the flow's cap was judged again")
	}
}
