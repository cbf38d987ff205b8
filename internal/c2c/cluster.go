package c2c

import (
	"cmp"
	"math"
	"slices"
)

// minRatio is how much slower the slow pairs must be than the fast ones,
// median to median, for the matrix to count as having groups at all. On
// parts with several L3 domains the step is 3× to 10× (Zen 4: 16 ns inside
// a CCD, 73 across; Zen 5 before its 2024 firmware: 20 and 215); inside
// one domain the spread of a mesh or ring, and a VM's noise, stay under
// 1.5×.
const minRatio = 1.5

// Clustering is how the matrix groups the CPUs.
type Clustering struct {
	// Groups are the CPUs that hand a cache line to each other fast, each
	// ascending, ordered by their first CPU.
	Groups [][]int
	// Threshold is the one-way time, in ns, that separates "inside" from
	// "across"; 0 when the matrix shows no step (one group).
	Threshold float64
	// Inside and Across are the medians of the measured pairs within a
	// group and between groups, in ns; NaN when there is no such pair.
	Inside, Across float64
}

// edge is one measured pair, by index into the CPU list.
type edge struct {
	i, j int
	ns   float64
}

// Cluster groups cpus by the matrix m of one-way times (m[i][j] for
// cpus[i] and cpus[j]; nil where not measured). The method, in full:
//
//  1. Take the measured pairs' times on a log scale (the steps between
//     cache levels are ratios, not differences).
//  2. Split them in two with Otsu's rule: the cut of the sorted list that
//     maximises the between-group variance.
//  3. If the slower group's median is under minRatio × the faster one's,
//     there is no step: all CPUs form one group.
//  4. Otherwise join every two CPUs whose pair is below the cut (the
//     geometric middle of the two values around it) and take the
//     connected components (single linkage). Two or more components are
//     the answer.
//  5. One component means the slow group was a few outliers (a pair hit
//     by preemption): drop it and go back to 2 with the faster pairs.
//
// Single linkage makes a slow outlier inside a domain harmless: the
// domain's other pairs still join its CPUs. It would merge two domains
// on a pair measured too fast, which a cache cannot do.
func Cluster(cpus []int, m [][]*float64) Clustering {
	var edges []edge
	for i := range cpus {
		for j := i + 1; j < len(cpus); j++ {
			if v := m[i][j]; v != nil && *v > 0 && !math.IsInf(*v, 0) {
				edges = append(edges, edge{i, j, *v})
			}
		}
	}
	logs := make([]float64, len(edges))
	for k, e := range edges {
		logs[k] = math.Log(e.ns)
	}
	slices.Sort(logs)
	c := Clustering{Groups: components(cpus, edges, math.Inf(1))}
	for len(logs) >= 2 {
		k := otsu(logs)
		if median(logs[k:])-median(logs[:k]) < math.Log(minRatio) {
			break
		}
		t := math.Exp((logs[k-1] + logs[k]) / 2)
		if g := components(cpus, edges, t); len(g) > 1 {
			c.Groups, c.Threshold = g, t
			break
		}
		logs = logs[:k]
	}
	c.Inside, c.Across = insideAcross(cpus, edges, c.Groups)
	return c
}

// otsu returns the cut k (1 ≤ k < len(xs)) of ascending xs into xs[:k]
// and xs[k:] that maximises k·(n−k)·(mean₀ − mean₁)², Otsu's
// between-class variance up to a constant factor.
func otsu(xs []float64) int {
	n := len(xs)
	var total float64
	for _, x := range xs {
		total += x
	}
	best, bestK := -1.0, 1
	var left float64
	for k := 1; k < n; k++ {
		left += xs[k-1]
		m0, m1 := left/float64(k), (total-left)/float64(n-k)
		if v := float64(k) * float64(n-k) * (m0 - m1) * (m0 - m1); v > best {
			best, bestK = v, k
		}
	}
	return bestK
}

// median of ascending xs.
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// components joins the CPUs of every edge faster than t and returns the
// groups as CPU numbers.
func components(cpus []int, edges []edge, t float64) [][]int {
	parent := make([]int, len(cpus))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, e := range edges {
		if e.ns < t {
			parent[find(e.i)] = find(e.j)
		}
	}
	byRoot := map[int][]int{}
	for i, c := range cpus {
		r := find(i)
		byRoot[r] = append(byRoot[r], c)
	}
	var groups [][]int
	for _, g := range byRoot {
		slices.Sort(g)
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b []int) int { return cmp.Compare(a[0], b[0]) })
	return groups
}

// insideAcross returns the median one-way time of the measured pairs
// within a group and between groups (NaN where there is none).
func insideAcross(cpus []int, edges []edge, groups [][]int) (inside, across float64) {
	groupOf := map[int]int{}
	for g, cs := range groups {
		for _, c := range cs {
			groupOf[c] = g
		}
	}
	var in, out []float64
	for _, e := range edges {
		if groupOf[cpus[e.i]] == groupOf[cpus[e.j]] {
			in = append(in, e.ns)
		} else {
			out = append(out, e.ns)
		}
	}
	return medianOf(in), medianOf(out)
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	return median(xs)
}
