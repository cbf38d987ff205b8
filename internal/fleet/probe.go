package fleet

import "context"

// resolve is the sampled design's second part: while slow tests are left
// that no blamed side explains, it tests their suspects against hosts
// already proven good. A slow test A→B has three explanations: A's send
// side, B's receive side, or the path. One test of A toward a host whose
// receive side is proven good halves them: slow, and A's send side is
// the likelier; fine, and A is cleared. Each round tests, for every slow
// test left, the side with the larger share of slow tests (both when they
// are even), each against a fresh good host, until each side is blamed
// (slow with most of its partners, the good hosts among them) or cleared
// (fine with more good hosts than not); a slow test whose two ends are
// both cleared is its path's. Probes run in legs of disjoint tests, at
// once with Parallel, and a slow probe is re-tested as any slow test is.
func (r *run) resolve(ctx context.Context) {
	if !r.haveLimit {
		return
	}
	for round := 1; round <= maxProbeRounds && ctx.Err() == nil; round++ {
		j := r.judge()
		want := r.suspects(j)
		if len(want) == 0 {
			return
		}
		probes := r.probesFor(j, want)
		if len(probes) == 0 {
			return
		}
		for _, p := range probes {
			r.pairs = append(r.pairs, testedPair{Pair: Pair{A: p.t.From, B: p.t.To}, round: len(r.sched.Rounds) + round, probe: true})
			r.suspect[[2]int{p.t.From, p.t.To}] = p.s.send
		}
		tests := make([]Test, len(probes))
		for i, p := range probes {
			tests[i] = p.t
		}
		if !r.runTests(ctx, tests, kindProbe) {
			return
		}
		r.retest(ctx, tests)
	}
}

// suspects lists the sides to probe next: for each slow test no blamed
// side explains, the end not cleared yet with the larger share of slow
// tests, or both when the shares are even.
func (r *run) suspects(j *judgement) []side {
	var want []side
	seen := map[side]bool{}
	share := func(s side) float64 {
		m, sl, _, _ := j.counts(s)
		if m == 0 {
			return 0
		}
		return float64(sl) / float64(m)
	}
	for _, d := range j.unexplained() {
		snd, rcv := sidesOf(d[0], d[1])
		var cands []side
		for _, s := range []side{snd, rcv} {
			if !j.cleared(s) && r.down[s.host] == nil {
				cands = append(cands, s)
			}
		}
		if len(cands) == 2 {
			switch fs, fr := share(snd), share(rcv); {
			case fs > fr:
				cands = cands[:1]
			case fr > fs:
				cands = cands[1:]
			}
		}
		for _, s := range cands {
			if !seen[s] {
				seen[s] = true
				want = append(want, s)
			}
		}
	}
	return want
}

// probe is one test of a suspect side against a host proven good.
type probe struct {
	s side
	t Test
}

// probesFor picks, for each side of want, a host proven good on the other
// side that has never been paired with the suspect: the one used least in
// this round, drawn at random (with the run's seed) among those.
func (r *run) probesFor(j *judgement, want []side) []probe {
	paired := map[[2]int]bool{}
	for _, p := range r.pairs {
		paired[[2]int{min(p.A, p.B), max(p.A, p.B)}] = true
	}
	// Good sides, each list in a random order.
	goodSend, goodRecv := []int{}, []int{}
	for _, h := range r.rng.Perm(len(r.hosts)) {
		if j.good(side{host: h, send: true}) {
			goodSend = append(goodSend, h)
		}
		if j.good(side{host: h}) {
			goodRecv = append(goodRecv, h)
		}
	}
	used := map[int]int{}
	var out []probe
	for _, s := range want {
		pool := goodRecv
		if !s.send {
			pool = goodSend
		}
		best := -1
		for _, g := range pool {
			if g == s.host || paired[[2]int{min(g, s.host), max(g, s.host)}] {
				continue
			}
			if best < 0 || used[g] < used[best] {
				best = g
			}
		}
		if best < 0 {
			continue // no good host left to try: the slow test stays as it is
		}
		used[best]++
		paired[[2]int{min(best, s.host), max(best, s.host)}] = true
		t := Test{From: s.host, To: best}
		if !s.send {
			t = Test{From: best, To: s.host}
		}
		out = append(out, probe{s: s, t: t})
	}
	return out
}
