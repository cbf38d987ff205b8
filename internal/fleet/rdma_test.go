package fleet

import (
	"slices"
	"testing"
)

// TestRDMARule: ClusterKit's rule for RDMA (a test below 93% of the best
// is bad) blames a host that sends at 91% of the others, which the
// default rule (90% of the median) lets pass.
func TestRDMARule(t *testing.T) {
	blamed := func(o Options) []string {
		res := runFake(t, 6, o, &fakeNet{base: 100, sendCap: map[string]float64{"h03": 91}})
		var out []string
		for _, x := range res.Outliers {
			out = append(out, x.Kind+" "+x.Name+" "+x.Direction)
		}
		if o.FromBest && (res.SlowBelowGbps == nil || res.MedianGbps == nil || *res.SlowBelowGbps <= *res.MedianGbps*0.93) {
			t.Errorf("slow below %v with a median of %v: not 93%% of the best", res.SlowBelowGbps, res.MedianGbps)
		}
		return out
	}
	if got := blamed(opts()); len(got) != 0 {
		t.Errorf("the median rule blamed %v", got)
	}
	o := opts()
	o.ThresholdPct, o.FromBest = RDMAThresholdPct, true
	if got := blamed(o); !slices.Equal(got, []string{"host h03 send"}) {
		t.Errorf("the RDMA rule blamed %v, want h03's send side", got)
	}
}
