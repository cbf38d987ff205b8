package c2c

import (
	"bufio"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/cpulist"
)

// synthetic builds a full matrix over cpus where lat(a, b) gives each
// pair's one-way ns.
func synthetic(cpus []int, lat func(a, b int) float64) [][]*float64 {
	m := emptyMatrix(len(cpus))
	for i, a := range cpus {
		for j := i + 1; j < len(cpus); j++ {
			v := lat(a, cpus[j])
			m[i][j], m[j][i] = &v, &v
		}
	}
	return m
}

// domainOf returns which of the groups holds cpu.
func domainOf(groups [][]int, cpu int) int {
	for i, g := range groups {
		if slices.Contains(g, cpu) {
			return i
		}
	}
	return -1
}

// twoDomains is a simulated 12-CPU part with two L3 domains (0-5, 6-11):
// 18 ns inside, 74 ns across, each pair off by up to ±15%.
func twoDomains(seed uint64) (cpus []int, l3 [][]int, lat func(a, b int) float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	l3 = [][]int{cpulist.MustParse("0-5"), cpulist.MustParse("6-11")}
	lat = func(a, b int) float64 {
		base := 74.0
		if domainOf(l3, a) == domainOf(l3, b) {
			base = 18
		}
		return base * (0.85 + 0.3*rng.Float64())
	}
	return cpulist.MustParse("0-11"), l3, lat
}

func groupsString(gs [][]int) string {
	var parts []string
	for _, g := range gs {
		parts = append(parts, cpulist.Format(g))
	}
	return strings.Join(parts, " | ")
}

// TestClusterSimulated: a simulated two-domain topology with noise and
// one outlier pair (preempted mid-measurement) is told apart, whatever
// the outlier's size, and a one-domain part with the same noise and
// outlier stays one group.
func TestClusterSimulated(t *testing.T) {
	for _, c := range []struct {
		name    string
		outlier float64 // ns of pair 1↔2 (inside domain 0)
		domains int
		want    string
	}{
		{"two domains, no outlier", 0, 2, "0-5 | 6-11"},
		{"two domains, outlier 5 µs", 5_000, 2, "0-5 | 6-11"},
		{"two domains, outlier 10 ms", 10_000_000, 2, "0-5 | 6-11"},
		{"two domains, outlier just above across", 90, 2, "0-5 | 6-11"},
		{"one domain, outlier 5 µs", 5_000, 1, "0-11"},
		{"one domain, no outlier", 0, 1, "0-11"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for seed := range uint64(20) {
				cpus, l3, lat := twoDomains(seed)
				if c.domains == 1 {
					l3 = [][]int{cpus}
					rng := rand.New(rand.NewPCG(seed, 9))
					lat = func(a, b int) float64 { return 60 * (0.85 + 0.3*rng.Float64()) }
				}
				m := synthetic(cpus, lat)
				if c.outlier > 0 {
					v := c.outlier
					m[1][2], m[2][1] = &v, &v
				}
				got := Cluster(cpus, m)
				if s := groupsString(got.Groups); s != c.want {
					t.Fatalf("seed %d: groups %s, want %s (threshold %.1f)", seed, s, c.want, got.Threshold)
				}
				r := &Result{CPUs: cpus, MatrixNs: m, Mode: ModeAll}
				r.Judge(l3)
				if !r.Agrees {
					t.Fatalf("seed %d: does not agree with sysfs: %s", seed, r.Verdict)
				}
				if c.domains == 2 && (*r.InsideNs < 15 || *r.InsideNs > 21 || *r.AcrossNs < 63 || *r.AcrossNs > 85) {
					t.Fatalf("seed %d: inside %.1f, across %.1f ns", seed, *r.InsideNs, *r.AcrossNs)
				}
			}
		})
	}
}

// readSeedMatrix reads core-to-core-latency's lower-triangle table of
// "mean±err" cells.
func readSeedMatrix(t *testing.T, path string) ([]int, [][]*float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[int][]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		cpu, err := strconv.Atoi(fields[0])
		if err != nil || (len(fields) > 1 && !strings.Contains(fields[1], "±")) {
			continue
		}
		rows[cpu] = []float64{} // row 0 has no cells
		for _, cell := range fields[1:] {
			v, err := strconv.ParseFloat(strings.Split(cell, "±")[0], 64)
			if err != nil {
				t.Fatalf("cell %q: %v", cell, err)
			}
			rows[cpu] = append(rows[cpu], v)
		}
		if len(rows[cpu]) != cpu {
			t.Fatalf("row %d has %d cells", cpu, len(rows[cpu]))
		}
	}
	n := len(rows)
	cpus := make([]int, n)
	m := emptyMatrix(n)
	for i := range n {
		cpus[i] = i
		for j, v := range rows[i] {
			m[i][j], m[j][i] = &v, &v
		}
	}
	return cpus, m
}

// TestClusterRyzen9900X: the Ryzen 9 9900X matrix its owner measured (the
// 100 GbE home lab whose ConnectX-5 trained at x4) splits into its two CCDs, as sysfs declares them.
func TestClusterRyzen9900X(t *testing.T) {
	cpus, m := readSeedMatrix(t, "testdata/seed000-core-to-core-latency.txt")
	if len(cpus) != 12 {
		t.Fatalf("%d CPUs", len(cpus))
	}
	r := &Result{CPUs: cpus, MatrixNs: m, Mode: ModeAll}
	r.Judge([][]int{cpulist.MustParse("0-5,12-17"), cpulist.MustParse("6-11,18-23")})
	if groupsString(r.Clusters) != "0-5 | 6-11" || !r.Agrees {
		t.Fatalf("clusters %s, agrees %v", groupsString(r.Clusters), r.Agrees)
	}
	// Medians by hand: the 30 pairs inside a CCD are 18-23 ns, median 20;
	// the 36 across 206-228, the 18th and 19th sorted are 215 and 216.
	want := "sysfs says 2 L3 domains; the matrix agrees: 20 ns inside, 216 ns across"
	if r.Verdict != want {
		t.Fatalf("verdict %q\nwant    %q", r.Verdict, want)
	}
}

// TestClusterSMT: a Zen 4 shape (16 cores × 2 threads, two CCDs; SMT
// siblings 5 ns apart, 16 ns inside a CCD, 73 across) splits at the CCDs,
// not at the cores.
func TestClusterSMT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	cpus := cpulist.MustParse("0-31")
	l3 := [][]int{cpulist.MustParse("0-7,16-23"), cpulist.MustParse("8-15,24-31")}
	m := synthetic(cpus, func(a, b int) float64 {
		noise := 0.9 + 0.2*rng.Float64()
		switch {
		case a%16 == b%16:
			return 5.3 * noise
		case domainOf(l3, a) == domainOf(l3, b):
			return 15.7 * noise
		}
		return 72.7 * noise
	})
	r := &Result{CPUs: cpus, MatrixNs: m, Mode: ModeAll}
	r.Judge(l3)
	if !r.Agrees {
		t.Fatalf("clusters %s: %s", groupsString(r.Clusters), r.Verdict)
	}
}

// TestClusterSparse: a --per-l3 matrix (one CPU per domain and a second
// in each; the seconds are measured against their own domain's first CPU
// only) groups each pair with its domain.
func TestClusterSparse(t *testing.T) {
	cpus := []int{0, 1, 8, 9, 16, 17}
	l3 := [][]int{{0, 1, 2}, {8, 9, 10}, {16, 17, 18}}
	m := emptyMatrix(len(cpus))
	set := func(i, j int, v float64) { m[i][j], m[j][i] = &v, &v }
	set(0, 2, 80)
	set(0, 4, 95)
	set(2, 4, 77)
	set(0, 1, 21)
	set(2, 3, 19)
	set(4, 5, 24)
	r := &Result{CPUs: cpus, MatrixNs: m, Mode: ModePerL3}
	r.Judge(l3)
	if groupsString(r.Clusters) != "0-1 | 8-9 | 16-17" || !r.Agrees {
		t.Fatalf("clusters %s: %s", groupsString(r.Clusters), r.Verdict)
	}
	if want := "sysfs says 3 L3 domains; the matrix agrees: 21 ns inside, 80 ns across"; r.Verdict != want {
		t.Fatalf("verdict %q", r.Verdict)
	}
}

// TestVerdicts: the sentence for each case a user meets.
func TestVerdicts(t *testing.T) {
	two := func(v float64) [][]*float64 { return synthetic([]int{0, 1}, func(int, int) float64 { return v }) }
	cpus, _, lat := twoDomains(3)
	split := synthetic(cpus, lat)
	for _, c := range []struct {
		name string
		r    Result
		l3   [][]int
		want string
	}{
		{"this VM", Result{CPUs: []int{0, 1}, MatrixNs: two(61.04), Mode: ModeAll}, [][]int{{0, 1}},
			"sysfs says 1 L3 domain; the matrix agrees: 61 ns between the two CPUs"},
		{"fast", Result{CPUs: []int{0, 1}, MatrixNs: two(5.34), Mode: ModeAll}, [][]int{{0, 1}},
			"sysfs says 1 L3 domain; the matrix agrees: 5.3 ns between the two CPUs"},
		{"no sysfs", Result{CPUs: []int{0, 1}, MatrixNs: two(61), Mode: ModeAll}, nil,
			"sysfs names no L3 domain; the matrix finds 1 group (0-1): 61 ns between the two CPUs"},
		{"sysfs lies", Result{CPUs: cpus, MatrixNs: split, Mode: ModeAll}, [][]int{cpus},
			"sysfs says 1 L3 domain, but the matrix finds 2 groups (0-5 | 6-11): "},
		{"one pair across", Result{CPUs: []int{0, 1}, MatrixNs: two(214), Mode: ModeCPUs}, [][]int{{0, 2}, {1, 3}},
			"sysfs says 2 L3 domains; no pair measured lies inside one, so the matrix cannot check them: 214 ns across"},
		{"subset", Result{CPUs: []int{0, 1}, MatrixNs: two(20), Mode: ModeCPUs}, [][]int{{0, 1, 2}, {3, 4}},
			"sysfs says 2 L3 domains (1 among the CPUs measured); the matrix agrees: 20 ns between the two CPUs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.r.Judge(c.l3)
			if !strings.HasPrefix(c.r.Verdict, c.want) || c.r.Agrees != strings.Contains(c.want, "agrees") {
				t.Fatalf("verdict %q\nwant    %q", c.r.Verdict, c.want)
			}
		})
	}
}

func TestOtsu(t *testing.T) {
	// Two tight groups: the cut falls between them.
	if k := otsu([]float64{1, 1.1, 1.2, 5, 5.1}); k != 3 {
		t.Fatalf("cut %d, want 3", k)
	}
	// All equal: any cut gives 0; the first is kept, and the ratio rule
	// then finds no step.
	if k := otsu([]float64{2, 2, 2}); k != 1 {
		t.Fatalf("cut %d, want 1", k)
	}
	if got := Cluster([]int{0, 1, 2}, synthetic([]int{0, 1, 2}, func(int, int) float64 { return 40 })); len(got.Groups) != 1 || got.Threshold != 0 || math.Abs(got.Inside-40) > 1e-9 {
		t.Fatalf("uniform: %+v", got)
	}
}
