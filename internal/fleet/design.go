package fleet

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// The designs of a fleet run.
const (
	// DesignAll tests every pair of the pattern, both ways.
	DesignAll = "all"
	// DesignSampled tests each host with Partners partners (a random
	// regular graph), then each suspect against hosts already proven good.
	DesignSampled = "sampled"
)

// Defaults and bounds of the sampled design.
const (
	DefaultPartners = 4
	// maxAllByDefault is the largest fleet whose default design is all:
	// 16 hosts are 240 tests, 30 legs with --concurrent; beyond, the
	// matrix grows with the square of the fleet and sampled is the
	// default.
	maxAllByDefault = 16
	// maxProbeRounds bounds the sampled design's rounds of probes: each
	// suspect side gets at most this many tests against good hosts.
	maxProbeRounds = 4
)

// DesignFor is the design a fleet of n hosts gets when none is asked:
// all up to 16 hosts, sampled beyond.
func DesignFor(n int) string {
	if n <= maxAllByDefault {
		return DesignAll
	}
	return DesignSampled
}

// SampledSchedule schedules the sampled design over n hosts: each host
// with k partners, a random k-regular graph drawn with seed. The graph is
// k rounds of the circle method (each a perfect matching, so the
// schedule is k rounds of disjoint pairs) chosen at random among its n−1,
// over the hosts in a random order. For odd n each chosen round leaves
// one host out; those hosts are paired among themselves in one more
// round, so that every host has k partners but one when k is odd (n·k
// odd has no k-regular graph).
func SampledSchedule(n, k int, seed int64) (Schedule, error) {
	if n < 3 {
		return Schedule{}, fmt.Errorf("the sampled design needs at least 3 hosts, not %d", n)
	}
	if n > maxHosts {
		return Schedule{}, fmt.Errorf("%d hosts: at most %d", n, maxHosts)
	}
	if k < 2 {
		return Schedule{}, fmt.Errorf("--partners %d: at least 2 (one partner cannot tell a host from the path between them)", k)
	}
	if k >= n-1 {
		return Schedule{}, fmt.Errorf("--partners %d with %d hosts: each host has only %d others; --design all tests every pair", k, n, n-1)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6c696e6572617465)) // "linerate"
	perm := rng.Perm(n)
	all := circle(n)
	picked := rng.Perm(len(all))[:k]
	slices.Sort(picked)
	s := Schedule{Hosts: n}
	partners := map[[2]int]bool{}
	var byes []int
	for _, ri := range picked {
		in := make([]bool, n)
		var round []Pair
		for _, p := range all[ri] {
			a, b := perm[p.A], perm[p.B]
			round = append(round, Pair{A: a, B: b})
			partners[[2]int{min(a, b), max(a, b)}] = true
			in[p.A], in[p.B] = true, true
		}
		for i := range in {
			if !in[i] {
				byes = append(byes, perm[i])
			}
		}
		s.Rounds = append(s.Rounds, round)
	}
	// Odd n: pair the hosts each chosen round left out, avoiding pairs
	// already drawn.
	var extra []Pair
	used := map[int]bool{}
	for i, a := range byes {
		if used[a] {
			continue
		}
		for _, b := range byes[i+1:] {
			if !used[b] && !partners[[2]int{min(a, b), max(a, b)}] {
				extra = append(extra, Pair{A: a, B: b})
				used[a], used[b] = true, true
				break
			}
		}
	}
	if len(extra) > 0 {
		s.Rounds = append(s.Rounds, extra)
	}
	return s, nil
}

// newSeed draws a seed for a sampled design that was given none: a
// positive number that fits a JSON number exactly.
func newSeed() int64 { return 1 + rand.Int64N(1<<53-1) }

// pack puts tests into legs in which no host is twice, in order: each
// test goes into the first leg it fits.
func pack(tests []Test) [][]Test {
	var legs [][]Test
	var busy []map[int]bool
	for _, t := range tests {
		placed := false
		for i := range legs {
			if !busy[i][t.From] && !busy[i][t.To] {
				legs[i] = append(legs[i], t)
				busy[i][t.From], busy[i][t.To] = true, true
				placed = true
				break
			}
		}
		if !placed {
			legs = append(legs, []Test{t})
			busy = append(busy, map[int]bool{t.From: true, t.To: true})
		}
	}
	return legs
}
