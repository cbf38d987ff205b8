package fleet

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// model is a Runner over a model fleet for the simulation of the designs
// at scale: every test runs at base Gbit/s with a 2% spread, and like a
// real fleet it has noise a re-test clears: 1% of tries dip to 50–85%
// for no lasting reason, and 3% are contended (their record says so) and
// run at 60%. Planted faults cap a host's send side, a host's receive
// side or one direction of a path at 20–60% of base, whatever the try.
type model struct {
	base    float64
	sendCap map[int]float64
	recvCap map[int]float64
	pathCap map[[2]int]float64
	idx     map[string]int
	seed    uint64
	mu      sync.Mutex
	tries   map[[2]int]int
}

func (m *model) Run(_ context.Context, s Spec) (Measurement, error) {
	from, to := m.idx[s.From.Name], m.idx[s.To.Name]
	m.mu.Lock()
	m.tries[[2]int{from, to}]++
	try := m.tries[[2]int{from, to}]
	m.mu.Unlock()
	// The noise of a try depends on the seed, the test and the try
	// only: a parallel leg's order does not change the outcome.
	rng := rand.New(rand.NewPCG(m.seed, uint64(from)<<40|uint64(to)<<16|uint64(try)))
	noise := 1 + 0.02*rng.NormFloat64()
	dip, contended := rng.Float64() < 0.01, rng.Float64() < 0.03
	depth := 0.5 + 0.35*rng.Float64()
	g := m.base * noise
	if c, ok := m.sendCap[from]; ok {
		g = min(g, c*noise)
	}
	if c, ok := m.recvCap[to]; ok {
		g = min(g, c*noise)
	}
	if c, ok := m.pathCap[[2]int{from, to}]; ok {
		g = min(g, c*noise)
	}
	out := Measurement{}
	switch {
	case contended:
		g *= 0.6
		out.Contention = "CPU 3 was 55% busy with other work"
	case dip:
		g *= depth
	}
	out.Gbps = max(g, 0)
	return out, nil
}

// simFaults is what a simulation plants.
type simFaults struct{ send, recv, path int }

// simOutcome is one simulated run.
type simOutcome struct {
	planted, found, falseBlamed int
	tests, legs                 int
	missed, extra               []string
}

// simulate runs the sampled design over a model of n hosts (k partners,
// with --concurrent) with faults planted at random by seed: send and
// receive sides on distinct hosts, and paths the sample tests between
// healthy hosts (a path the sample never tests cannot be found by it).
func simulate(t testing.TB, n, k int, seed int64, f simFaults) simOutcome {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 99))
	hosts := fleetOf(n)
	m := &model{base: 95, sendCap: map[int]float64{}, recvCap: map[int]float64{}, pathCap: map[[2]int]float64{},
		idx: map[string]int{}, seed: uint64(seed), tries: map[[2]int]int{}}
	for i, h := range hosts {
		m.idx[h.Name] = i
	}
	capOf := func() float64 { return m.base * (0.2 + 0.4*rng.Float64()) }
	want := map[string]bool{}
	perm := rng.Perm(n)
	faulty := map[int]bool{}
	for i := 0; i < f.send; i++ {
		h := perm[i]
		m.sendCap[h], faulty[h] = capOf(), true
		want[fmt.Sprintf("host %s %s", hosts[h].Name, DirSend)] = true
	}
	for i := f.send; i < f.send+f.recv; i++ {
		h := perm[i]
		m.recvCap[h], faulty[h] = capOf(), true
		want[fmt.Sprintf("host %s %s", hosts[h].Name, DirReceive)] = true
	}
	sched, err := SampledSchedule(n, k, seed)
	if err != nil {
		t.Fatal(err)
	}
	pairs := sched.Pairs()
	for _, pi := range rng.Perm(len(pairs)) {
		if len(m.pathCap) == f.path {
			break
		}
		p := pairs[pi]
		if faulty[p.A] || faulty[p.B] {
			continue
		}
		faulty[p.A], faulty[p.B] = true, true // one fault per host: each is found alone
		m.pathCap[[2]int{p.A, p.B}] = capOf()
		a, c := min(p.A, p.B), max(p.A, p.B)
		dir := DirSend
		if p.A != a {
			dir = DirReceive
		}
		want[fmt.Sprintf("path %s-%s %s", hosts[a].Name, hosts[c].Name, dir)] = true
	}
	o := Options{Pattern: Pattern{Kind: PatternPairs}, Design: DesignSampled, Partners: k, Seed: seed,
		Duration: 10 * time.Second, Streams: 1, Parallel: true}
	res, err := Run(context.Background(), hosts, o, m)
	if err != nil {
		t.Fatal(err)
	}
	out := simOutcome{planted: len(want), tests: res.Tests, legs: res.Legs}
	got := map[string]bool{}
	for _, ol := range res.Outliers {
		got[ol.Kind+" "+ol.Name+" "+ol.Direction] = true
	}
	for w := range want {
		if got[w] {
			out.found++
		} else {
			out.missed = append(out.missed, w)
		}
	}
	for g := range got {
		if !want[g] {
			out.falseBlamed++
			out.extra = append(out.extra, g)
		}
	}
	slices.Sort(out.missed)
	slices.Sort(out.extra)
	return out
}

// TestSampledFindsPlantedFaults: over a model of 1,000 hosts with noise,
// for each of 5 seeds, the sampled design with 4 partners finds 3 slow
// send sides, 3 slow receive sides and 3 slow paths, and blames nothing
// else, within 900 s at 10 s a test (docs/benchmarks.md has the figures of
// many more seeds: scripts/bench-fleet-sim.sh).
func TestSampledFindsPlantedFaults(t *testing.T) {
	seeds := 5
	if testing.Short() {
		seeds = 2
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		o := simulate(t, 1000, 4, seed, simFaults{send: 3, recv: 3, path: 3})
		if o.found != o.planted || o.falseBlamed != 0 {
			t.Errorf("seed %d: found %d of %d (missed %q), %d blamed wrongly (%q)", seed, o.found, o.planted, o.missed, o.falseBlamed, o.extra)
		}
		if s := float64(o.legs) * (10 + testOverheadS); s > 900 {
			t.Errorf("seed %d: %d legs, %g s at 10 s a test", seed, o.legs, s)
		}
	}
}

// BenchmarkFleetSimulation runs the sampled design over models of 64 and
// 1,000 hosts with planted faults, one seed per iteration (-benchtime
// 200x: 200 seeds), and reports per run: the faults found (%), the
// hosts or paths blamed that were not planted, the tests and legs run,
// and the legs' time at 10 s a test (11.5 s a leg).
func BenchmarkFleetSimulation(b *testing.B) {
	for _, c := range []struct {
		n, k int
		f    simFaults
	}{
		{64, 4, simFaults{send: 1, recv: 1, path: 1}},
		{1000, 4, simFaults{send: 3, recv: 3, path: 3}},
		{1000, 4, simFaults{send: 10, recv: 10, path: 10}},
	} {
		name := fmt.Sprintf("hosts=%d/partners=%d/faults=%ds+%dr+%dp", c.n, c.k, c.f.send, c.f.recv, c.f.path)
		b.Run(name, func(b *testing.B) {
			var planted, found, wrong, tests, legs, worstLegs int
			var missed []string
			for i := 0; i < b.N; i++ {
				o := simulate(b, c.n, c.k, int64(i+1), c.f)
				planted += o.planted
				found += o.found
				wrong += o.falseBlamed
				tests += o.tests
				legs += o.legs
				worstLegs = max(worstLegs, o.legs)
				missed = append(missed, o.missed...)
			}
			if len(missed) > 0 {
				b.Logf("missed: %s", strings.Join(missed[:min(len(missed), 10)], "; "))
			}
			n := float64(b.N)
			b.ReportMetric(100*float64(found)/math.Max(1, float64(planted)), "found%")
			b.ReportMetric(float64(wrong)/n, "false/run")
			b.ReportMetric(float64(tests)/n, "tests/run")
			b.ReportMetric(float64(legs)/n, "legs/run")
			b.ReportMetric(float64(worstLegs)*(10+testOverheadS), "worst-s")
		})
	}
}
