package report

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/result"
)

// TestVerdictSentence table-tests the verdict's wording with the
// walkthrough's cases: 88% of the ceiling is "11.7% below", never "well
// below"; a busy CPU of a lab is named as both ends' (the namespaces share
// one kernel's CPUs), not as the client's.
func TestVerdictSentence(t *testing.T) {
	labCPU := &hot{host: "lr-ux2-a", role: "client", cpu: 1, sample: result.CPUSample{Busy: 91.5, SoftIRQ: 40},
		shared: "lr-ux2-a and lr-ux2-b"}
	hostCPU := &hot{host: "crow", role: "server", cpu: 6, sample: result.CPUSample{Busy: 99, SoftIRQ: 61}}
	capped := verdictFacts{measured: true, gbps: 8.75, what: "median of 5 runs", ceiling: 9.90, line: 10,
		factor: "the line rate itself", bottleneck: "line rate"}
	cases := []struct {
		name      string
		v         func(v verdictFacts) verdictFacts
		want, not []string
	}{
		{"walkthrough D28: 88% of the ceiling, a lab CPU busy", func(v verdictFacts) verdictFacts { v.hot = labCPU; return v },
			[]string{"Achieved 8.75 of 9.90 Gbit/s (88.4% of the ceiling, 87.5% of the 10 Gbit/s line rate)",
				"the limiting factor is CPU 1 of lr-ux2-a and lr-ux2-b (network namespaces of one kernel: both ends share its CPUs), 91.5% busy",
				"11.6% below the line rate ceiling"},
			[]string{"well below", "(client)"}},
		{"a host's CPU at 45% of the ceiling", func(v verdictFacts) verdictFacts { v.gbps, v.hot = 4.4, hostCPU; return v },
			[]string{"CPU 6 of crow (server), 99.0% busy with 61.0% in softirq", "well below the line rate ceiling (less than half of it)"}, nil},
		{"at the ceiling", func(v verdictFacts) verdictFacts { v.gbps, v.hot = 9.89, labCPU; return v },
			[]string{"(99.9% of the ceiling", ": the limiting factor is the line rate itself."}, []string{"CPU", "below"}},
		{"exactly 90% is at the ceiling", func(v verdictFacts) verdictFacts { v.gbps = 8.91; return v },
			[]string{"(90.0% of the ceiling", "the limiting factor is the line rate itself"}, []string{"below"}},
		{"a CPU under the hot mark is no cause", func(v verdictFacts) verdictFacts {
			h := *hostCPU
			h.sample.Busy = 89.9
			v.hot = &h
			return v
		}, []string{"11.6% below the line rate ceiling, and no finding explains why"}, []string{"CPU 6"}},
		{"a finding", func(v verdictFacts) verdictFacts {
			v.gbps, v.finding = 3, &doctor.Finding{ID: "pcie.link_downgraded", Subject: "enp1s0"}
			return v
		}, []string{"well below the line rate ceiling (less than half of it); the most severe finding is pcie.link_downgraded on enp1s0"}, nil},
		{"buckets", func(v verdictFacts) verdictFacts { v.buckets, v.bucketMin, v.bucketMax = 2, 6.1, 9.5; return v },
			[]string{"the limiting factor is placement, not the line rate ceiling: the runs fall into 2 buckets from 6.10 to 9.50 Gbit/s"}, nil},
		{"no ceiling (the healthy lab: veth has no line rate)", func(v verdictFacts) verdictFacts { v.ceiling = 0; return v },
			[]string{"Achieved 8.75 Gbit/s (median of 5 runs); no ceiling is known"}, []string{"of the ceiling"}},
		{"nothing measured", func(v verdictFacts) verdictFacts { v.measured = false; return v },
			[]string{"Nothing was measured; the ceiling is 9.90 Gbit/s, set by the line rate itself."}, nil},
		{"nothing at all", func(verdictFacts) verdictFacts { return verdictFacts{} },
			[]string{"Nothing was measured, and no ceiling is known"}, nil},
	}
	for _, c := range cases {
		got := verdictSentence(c.v(capped))
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s:\n%s\nlacks %q", c.name, got, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(got, w) {
				t.Errorf("%s:\n%s\nsays %q", c.name, got, w)
			}
		}
	}
}

// TestGapTextNeverContradicts: over shares from 1% to 89.9%, "well below"
// is said only under half the ceiling, and otherwise the gap stated is
// 100% minus the share the verdict's head states.
func TestGapTextNeverContradicts(t *testing.T) {
	for i := 10; i < 900; i++ {
		g := float64(i) / 100
		txt := gapText(g, 10, "PCIe")
		share := g / 10
		if strings.Contains(txt, "well below") != (share < 0.5) {
			t.Errorf("%.1f%% of the ceiling: %q", 100*share, txt)
		}
		if share >= 0.5 && !strings.HasPrefix(txt, num(100-100*share, 1)+"% below") {
			t.Errorf("%.1f%% of the ceiling: %q", 100*share, txt)
		}
	}
}
