package fleet

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSampledSchedule: for n hosts and k partners the sampled design gives
// every host k partners (k−1 for at most one host when n·k is odd), each
// pair once, in rounds of disjoint pairs; the same seed gives the same
// schedule and another seed another.
func TestSampledSchedule(t *testing.T) {
	for _, n := range []int{6, 7, 12, 13, 64, 101, 1000} {
		for _, k := range []int{2, 3, 4, 5} {
			if k >= n-1 {
				continue
			}
			s, err := SampledSchedule(n, k, 42)
			if err != nil {
				t.Fatal(err)
			}
			deg := make([]int, n)
			seen := map[[2]int]bool{}
			for ri, round := range s.Rounds {
				busy := map[int]bool{}
				for _, p := range round {
					key := [2]int{min(p.A, p.B), max(p.A, p.B)}
					if p.A == p.B || seen[key] || busy[p.A] || busy[p.B] {
						t.Fatalf("n=%d k=%d round %d: pair %v repeated or a host twice", n, k, ri, p)
					}
					seen[key], busy[p.A], busy[p.B] = true, true, true
					deg[p.A]++
					deg[p.B]++
				}
			}
			short := 0
			for h, d := range deg {
				switch {
				case d == k:
				case d == k-1 && n*k%2 == 1:
					short++
				default:
					t.Errorf("n=%d k=%d: host %d has %d partners", n, k, h, d)
				}
			}
			if short > 1 {
				t.Errorf("n=%d k=%d: %d hosts short of a partner", n, k, short)
			}
			if want := k + n%2; len(s.Rounds) > want {
				t.Errorf("n=%d k=%d: %d rounds, want at most %d", n, k, len(s.Rounds), want)
			}
			again, _ := SampledSchedule(n, k, 42)
			other, _ := SampledSchedule(n, k, 43)
			if fmt.Sprint(again.Rounds) != fmt.Sprint(s.Rounds) {
				t.Errorf("n=%d k=%d: seed 42 gave two schedules", n, k)
			}
			if n > 12 && fmt.Sprint(other.Rounds) == fmt.Sprint(s.Rounds) {
				t.Errorf("n=%d k=%d: seeds 42 and 43 gave one schedule", n, k)
			}
		}
	}
	for _, bad := range []struct{ n, k int }{{2, 1}, {12, 1}, {12, 11}, {5, 4}, {maxHosts + 1, 4}} {
		if _, err := SampledSchedule(bad.n, bad.k, 1); err == nil {
			t.Errorf("n=%d k=%d accepted", bad.n, bad.k)
		}
	}
}

// TestRunSampled: the sampled design finds a send side, a receive side,
// both, and a path the sample tests, blames nothing else, and records its
// design, partners, seed and every test it ran.
func TestRunSampled(t *testing.T) {
	const n, k = 12, 4
	// A pair the sample of seed 7 tests, for the path fault.
	s, err := SampledSchedule(n, k, 7)
	if err != nil {
		t.Fatal(err)
	}
	pp := s.Rounds[1][2]
	a, c := fmt.Sprintf("h%02d", pp.A+1), fmt.Sprintf("h%02d", pp.B+1)
	path := [2]string{a, c}
	pathName := min(a, c) + "-" + max(a, c)
	pathDirWant := DirSend
	if a > c {
		pathDirWant = DirReceive
	}
	tests := []struct {
		name     string
		parallel bool
		net      *fakeNet
		want     string
	}{
		{"healthy", true, &fakeNet{base: 9.5}, ""},
		{"send-and-receive", true, &fakeNet{base: 9.5, sendCap: map[string]float64{"h03": 1}, recvCap: map[string]float64{"h09": 1}},
			"host h03 send slow; host h09 receive slow"},
		{"both-sides", false, &fakeNet{base: 9.5, sendCap: map[string]float64{"h05": 2}, recvCap: map[string]float64{"h05": 2}},
			"host h05 both slow"},
		{"path", true, &fakeNet{base: 9.5, pathCap: map[[2]string]float64{path: 3}}, "path " + pathName + " " + pathDirWant + " slow"},
		{"flaky-comes-back", true, &fakeNet{base: 9.5, flaky: map[[2]string]int{path: 1}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts()
			o.Design, o.Partners, o.Seed, o.Parallel = DesignSampled, k, 7, tt.parallel
			res := runFake(t, n, o, tt.net)
			if got := outliers(res); got != tt.want {
				t.Errorf("outliers %q, want %q\n%s", got, tt.want, res.Verdict)
			}
			if res.Design != DesignSampled || res.Partners != k || res.Seed != 7 || res.Pattern != PatternPairs {
				t.Errorf("design %q, %d partners, seed %d, pattern %q", res.Design, res.Partners, res.Seed, res.Pattern)
			}
			if res.Tests != tt.net.calls || res.Tests > 72 {
				t.Errorf("%d tests in the document, %d run; at most 72", res.Tests, tt.net.calls)
			}
			probes := 0
			for _, p := range res.Pairs {
				if p.Probe {
					probes++
					if (p.AToB.Status == StatusUntested) == (p.BToA.Status == StatusUntested) {
						t.Errorf("probe %s-%s tested both ways or neither: %s/%s", p.A, p.B, p.AToB.Status, p.BToA.Status)
					}
				}
			}
			if tt.name == "path" && probes < 2 {
				t.Errorf("%d probes: a path is told from its hosts by testing both against good hosts", probes)
			}
			if tt.want == "" && probes > 0 {
				t.Errorf("%d probes in a run with nothing to blame", probes)
			}
			for _, spec := range tt.net.specs {
				if spec.Probe && !tt.parallel && spec.AtOnce != 1 {
					t.Errorf("a serial probe ran with %d at once", spec.AtOnce)
				}
			}
		})
	}
}

// TestPlan: --plan's figures: the schedule's tests and legs, and an
// estimate within the targets at 10 s a test with --concurrent (64 hosts
// in 5 minutes, 1,000 in 15), agents started over ssh.
func TestPlan(t *testing.T) {
	ssh := StartCost{PerHostS: 3, AtOnce: 8, How: "ssh, 8 at a time"}
	tests := []struct {
		n        int
		design   string
		parallel bool
		tests    int
		legs     int
		maxS     float64
	}{
		{6, "", false, 30, 10, 0},
		{6, DesignAll, true, 30, 10, 0},
		{64, DesignSampled, true, 256, 8, 300},
		{1000, DesignSampled, true, 4000, 8, 900},
		{1000, "", true, 4000, 8, 900}, // sampled is the default beyond 16 hosts
		{17, DesignAll, true, 17 * 16, 34, 0},
	}
	for _, tt := range tests {
		o := opts()
		o.Design, o.Parallel, o.Seed = tt.design, tt.parallel, 3
		p, err := NewPlan(fleetOf(tt.n), o, ssh)
		if err != nil {
			t.Fatal(err)
		}
		if p.Tests != tt.tests || p.Legs != tt.legs || p.Hosts != tt.n {
			t.Errorf("n=%d %s: %d tests in %d legs, want %d in %d", tt.n, tt.design, p.Tests, p.Legs, tt.tests, tt.legs)
		}
		if tt.maxS > 0 && p.EstimateS > tt.maxS {
			t.Errorf("n=%d %s: estimate %g s, over the %g s target", tt.n, tt.design, p.EstimateS, tt.maxS)
		}
		if p.EstimateS != p.StartS+p.ScheduleS+p.ReserveS && p.EstimateS != float64(int(p.StartS+p.ScheduleS+p.ReserveS+0.5)) {
			t.Errorf("n=%d: estimate %g is not %g + %g + %g", tt.n, p.EstimateS, p.StartS, p.ScheduleS, p.ReserveS)
		}
		slot := 10 + testOverheadS
		if want := float64(tt.legs) * slot; tt.parallel && p.ScheduleS != want {
			t.Errorf("n=%d: schedule %g s, want %g", tt.n, p.ScheduleS, want)
		}
		if want := float64(tt.tests) * slot; !tt.parallel && p.ScheduleS != want {
			t.Errorf("n=%d serial: schedule %g s, want %g", tt.n, p.ScheduleS, want)
		}
		var b strings.Builder
		if err := p.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{fmt.Sprintf("fleet plan: %d hosts", tt.n), "estimate: ", "round 1: ", "nothing was run"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("plan text lacks %q:\n%s", want, b.String())
			}
		}
		// The plan's schedule is the run's.
		f := &fakeNet{base: 9.5}
		if tt.n <= 64 {
			o.Retests = -1
			res, err := Run(t.Context(), fleetOf(tt.n), o, f)
			if err != nil {
				t.Fatal(err)
			}
			if res.Tests != p.Tests || res.Legs != p.Legs || res.Rounds != p.Rounds || res.Design != p.Design {
				t.Errorf("n=%d: run %d tests, %d legs, %d rounds, %s; planned %d, %d, %d, %s", tt.n, res.Tests, res.Legs, res.Rounds, res.Design,
					p.Tests, p.Legs, p.Rounds, p.Design)
			}
		}
	}
	o := opts()
	o.Design = DesignSampled
	if _, err := NewPlan(fleetOf(4), o, ssh); err == nil || !strings.Contains(err.Error(), "--design all") {
		t.Errorf("4 hosts, 4 partners: %v", err)
	}
	o.Pattern = Pattern{Kind: PatternRing}
	if _, err := NewPlan(fleetOf(20), o, ssh); err == nil || !strings.Contains(err.Error(), "drop --pattern") {
		t.Errorf("sampled ring: %v", err)
	}
}

// TestPlanText pins the plan's wording for a small fleet.
func TestPlanText(t *testing.T) {
	o := opts()
	o.Duration, o.Parallel = 2*time.Second, true
	p, err := NewPlan(fleetOf(4), o, StartCost{PerHostS: 0.5, AtOnce: 8, How: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	p.WriteText(&b)
	want := "fleet plan: 4 hosts, design all, pattern pairs: 12 tests in 3 rounds, 6 legs, each leg's tests at once\n" +
		"estimate: 32 s = agents 1 s (lab) + 6 legs × 3.5s = 21 s (each test 2s and about 1.5s to set up) + 11 s for re-tests (about 3 tests when one host is slow)\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("plan text:\n%s\nwant it to start:\n%s", b.String(), want)
	}
	if lines := strings.Count(b.String(), "\n  round "); lines != 3 {
		t.Errorf("%d round lines", lines)
	}
	if !slices.Equal(p.Schedule[0][0][:], []string{"h01", "h04"}) {
		t.Errorf("round 1 starts %v", p.Schedule[0][0])
	}
}
