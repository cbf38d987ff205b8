package explain

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/result"
)

// labRun is a run of the 2-CPU lab (both ends on one machine): client
// and server pinned as given, per-CPU {busy, softirq} on both ends, and
// the share of CPU 1 other work took (0: none).
func labRun(gbps float64, client, server int, load map[int][2]float64, otherOnCPU1 float64) *result.Result {
	r := syntheticRun(gbps, load)
	r.Start.Placement = result.Placement{Client: []int{client}, Server: []int{server}}
	r.Start.Client.BootID, r.Start.Server.BootID = "lab", "lab"
	for i := range r.Intervals {
		r.Intervals[i].CPU.Client = r.Intervals[i].CPU.Server
	}
	if otherOnCPU1 > 0 {
		r.End.Foreign.Client = &result.Foreign{CPU: map[string]float64{"1": otherOnCPU1},
			Top: []result.Proc{{PID: 3245, Name: "iperf3", CPUPct: otherOnCPU1 - 2, CPU: 1}}}
	}
	return r
}

// TestExplainRanksByEvidence: the walkthrough's two variance
// explanations. (1) The buckets' per-CPU maps are nearly the same (busy
// 96/56 against 99/52, softirq 35/7 against 33/10), so CPU 1 crossing the
// softirq line (7 against 10) is no cause; other load on CPU 1 during the
// slow runs only is, and is named first. (2) The receiver ran on CPU 1 in
// the slow runs and on CPU 1, 1 and 0 in the fast ones: the buckets'
// unions differ ({1} against {0, 1}) but the runs do not all show it, so
// no "receiving application ran on" sentence.
func TestExplainRanksByEvidence(t *testing.T) {
	lab := Topology{L3Domains: [][]int{{0, 1}}, NUMANodes: map[string][]int{"0": {0, 1}}}
	slowLoad := map[int][2]float64{0: {96, 35}, 1: {56, 7}}
	fastLoad := map[int][2]float64{0: {99, 33}, 1: {52, 10}}
	b := [][]*result.Result{
		{labRun(9.1, 0, 1, slowLoad, 36), labRun(9.2, 0, 1, slowLoad, 38)},
		{labRun(12.0, 0, 1, fastLoad, 0), labRun(12.1, 0, 1, fastLoad, 0), labRun(12.2, 0, 1, fastLoad, 0)},
	}
	text := strings.Join(explainBuckets("1 stream", b, 1, lab), "\n")
	if !strings.Contains(text, "What differs: other load. In 2 of the 2 slow runs other work kept a CPU above 20% busy (at worst CPU 1 was 38% busy with pid 3245 (iperf3, 36% of a CPU), not this test), against 0 of the 3 fast runs.") {
		t.Errorf("other load not named first:\n%s", text)
	}
	if strings.Contains(text, "softirq work ran on") || strings.Contains(text, "softirq work shared") || strings.Contains(text, "L3 domain, off its core;") {
		t.Errorf("a softirq difference of 7 against 10 points named as a cause:\n%s", text)
	}

	// (2) placement of the receiver: 1, 1 / 1, 1, 0 — and no other load.
	b = [][]*result.Result{
		{labRun(9.1, 0, 1, slowLoad, 0), labRun(9.2, 0, 1, slowLoad, 0), labRun(9.15, 0, 1, slowLoad, 0)},
		{labRun(12.0, 0, 1, slowLoad, 0), labRun(12.1, 0, 1, slowLoad, 0), labRun(12.2, 0, 0, slowLoad, 0)},
	}
	text = strings.Join(explainBuckets("1 stream", b, 1, lab), "\n")
	if strings.Contains(text, "What differs") || !strings.Contains(text, "does not tell the buckets apart") {
		t.Errorf("a difference two of three fast runs do not show named as a cause:\n%s", text)
	}

	// A placement every run shows is named: server on CPU 1 in every
	// slow run, on CPU 0 in every fast one.
	b[1][0].Start.Placement.Server, b[1][1].Start.Placement.Server = []int{0}, []int{0}
	text = strings.Join(explainBuckets("1 stream", b, 1, lab), "\n")
	if !strings.Contains(text, "What differs: the receiving application ran on CPU 1 in the slow runs and on CPU 0 in the fast runs.") {
		t.Errorf("a consistent placement difference not named:\n%s", text)
	}
}
