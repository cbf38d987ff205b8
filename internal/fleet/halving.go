package fleet

import (
	"cmp"
	"context"
	"slices"
)

// maxHalvingRounds bounds the halving re-tests: each round decides at
// least one suspect, and the suspects halve, so a fleet of 16 hosts
// needs at most 5.
const maxHalvingRounds = 8

// halve runs the re-tests of the RDMA matrix by halving, as ClusterKit
// re-tests its bad pairs (Options.Halving), once the ordinary re-tests
// have let noise come back:
//
//  1. The bad pairs are the pairs with a direction still slow and
//     neither end blamed yet. A host in two or more of them is a
//     suspect; when none is, both ends of every bad pair are.
//     Suspects already cleared are not suspected again.
//  2. The suspects are ranked by their bad pairs, the most first, and
//     the first half (rounded up) is re-tested this round.
//  3. The hosts known good for this round are the hosts outside that
//     half, up and not blamed, whose every bad pair is with a host of
//     the half: the half would explain all their bad pairs.
//  4. Each slow direction between a host of the half and a host known
//     good is tested again (once over all rounds); then each host of
//     the half is blamed when its pairs with the known good hosts are
//     bad with more than half of them, and cleared otherwise.
//  5. The next round starts again from 1: the pairs a blamed host
//     explains are no longer bad, so the hosts that were suspects only
//     through it drop out, and the suspects left halve again.
//
// It ends when no bad pair is left, or no suspect, or no host is known
// good. A run without re-tests (--retests 0) has none of these either. A bad pair whose two ends were cleared is its path's. The rounds
// are kept for the document (Result.Halving); the final blame is the
// judgement's over every try, the halving's re-tests among them.
func (r *run) halve(ctx context.Context) {
	if !r.haveLimit || r.opts.Retests == 0 {
		return
	}
	n := len(r.hosts)
	st := func(from, to int) string {
		return r.res[[2]int{from, to}].status(r.limit, true, r.need())
	}
	paired := map[[2]int]bool{}
	for _, p := range r.pairs {
		paired[[2]int{min(p.A, p.B), max(p.A, p.B)}] = true
	}
	isPaired := func(a, c int) bool { return paired[[2]int{min(a, c), max(a, c)}] }
	blamed, decided, retested := map[int]bool{}, map[int]bool{}, map[[2]int]bool{}
	for round := 1; round <= maxHalvingRounds && ctx.Err() == nil; round++ {
		// 1. the bad pairs left, and each host's share of them
		count := make([]int, n)
		badWith := make([][]int, n)
		for k := range paired {
			a, c := k[0], k[1]
			if blamed[a] || blamed[c] || st(a, c) != StatusSlow && st(c, a) != StatusSlow {
				continue
			}
			count[a]++
			count[c]++
			badWith[a] = append(badWith[a], c)
			badWith[c] = append(badWith[c], a)
		}
		var suspects []int
		for _, least := range []int{2, 1} {
			for h := range n {
				if count[h] >= least && !decided[h] && r.down[h] == nil {
					suspects = append(suspects, h)
				}
			}
			if len(suspects) > 0 {
				break
			}
		}
		if len(suspects) == 0 {
			return
		}
		// 2. the half with the most bad pairs
		slices.SortStableFunc(suspects, func(x, y int) int { return cmp.Compare(count[y], count[x]) })
		half := suspects[:(len(suspects)+1)/2]
		in := map[int]bool{}
		for _, h := range half {
			in[h] = true
		}
		// 3. the hosts known good for this round
		var good []int
		for h := range n {
			if in[h] || blamed[h] || r.down[h] != nil {
				continue
			}
			if !slices.ContainsFunc(badWith[h], func(p int) bool { return !in[p] }) {
				good = append(good, h)
			}
		}
		if len(good) == 0 {
			return
		}
		// 4. the half's slow directions with the good hosts, again
		var tests []Test
		for _, h := range half {
			for _, g := range good {
				if !isPaired(h, g) {
					continue
				}
				for _, d := range [][2]int{{h, g}, {g, h}} {
					if st(d[0], d[1]) == StatusSlow && !retested[d] {
						retested[d] = true
						tests = append(tests, Test{From: d[0], To: d[1]})
					}
				}
			}
		}
		if !r.runTests(ctx, tests, kindRetest) {
			return
		}
		hr := HalvingRound{Round: round, Suspects: r.hostNames(half), Good: r.hostNames(good), Tests: len(tests),
			Blamed: []string{}, Cleared: []string{}}
		for _, h := range half {
			decided[h] = true
			bad, all := 0, 0
			for _, g := range good {
				if !isPaired(h, g) {
					continue
				}
				s1, s2 := st(h, g), st(g, h)
				if s1 == StatusSlow || s2 == StatusSlow {
					bad++
					all++
				} else if s1 == StatusOK && s2 == StatusOK {
					all++
				}
			}
			switch {
			case all == 0:
				// no known good partner measured it: neither blamed nor
				// cleared, and not suspected again
			case 2*bad > all:
				blamed[h] = true
				hr.Blamed = append(hr.Blamed, r.hosts[h].Name)
			default:
				hr.Cleared = append(hr.Cleared, r.hosts[h].Name)
			}
		}
		r.halving = append(r.halving, hr)
	}
}

// hostNames names hosts by index.
func (r *run) hostNames(idx []int) []string {
	out := make([]string, 0, len(idx))
	for _, i := range idx {
		out = append(out, r.hosts[i].Name)
	}
	return out
}
