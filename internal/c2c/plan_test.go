package c2c

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/hostfs"
)

func topology(t *testing.T, host string) Topology {
	t.Helper()
	fs, err := hostfs.New(filepath.Join("..", "..", "testdata", "hosts", host))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := ReadTopology(fs)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// TestPlanPerL3 reads the captured trees' L3 domains and SMT siblings and
// picks one CPU per domain plus another core of it.
func TestPlanPerL3(t *testing.T) {
	for _, c := range []struct {
		host, cpus string
		pairs      [][2]int
	}{
		// Zen 4, SMT: 0's sibling is 16, so the second core is 1.
		{"ryzen-7950x-cx5-x8-roce", "0-1,8-9", [][2]int{{0, 8}, {0, 1}, {8, 9}}},
		{"ryzen-9900x-cx5-x4", "0-1,6-7", [][2]int{{0, 6}, {0, 1}, {6, 7}}},
		{"xeon-xl710-gen2-x4", "0-1,10-11", [][2]int{{0, 10}, {0, 1}, {10, 11}}},
	} {
		t.Run(c.host, func(t *testing.T) {
			topo := topology(t, c.host)
			p, err := NewPlan(topo, topo.Online, nil, true)
			if err != nil {
				t.Fatal(err)
			}
			if cpulist.Format(p.CPUs) != c.cpus || p.Mode != ModePerL3 {
				t.Fatalf("CPUs %s (%s), want %s", cpulist.Format(p.CPUs), p.Mode, c.cpus)
			}
			if len(p.Pairs) != len(c.pairs) {
				t.Fatalf("pairs %v, want %v", p.Pairs, c.pairs)
			}
			for i := range p.Pairs {
				if p.Pairs[i] != c.pairs[i] {
					t.Fatalf("pairs %v, want %v", p.Pairs, c.pairs)
				}
			}
		})
	}
}

// TestPlanPerL3Scale: 16 domains of 4 cores × 2 threads (a 128-CPU part,
// threads n and n+64 on one core) take 120 pairs of representatives and
// 16 inside pairs, not 8128.
func TestPlanPerL3Scale(t *testing.T) {
	topo := Topology{Online: cpulist.MustParse("0-127")}
	for d := range 16 {
		var dom []int
		for c := d * 4; c < d*4+4; c++ {
			dom = append(dom, c, c+64)
			topo.SMTSiblings = append(topo.SMTSiblings, []int{c, c + 64})
		}
		slices.Sort(dom)
		topo.L3Domains = append(topo.L3Domains, dom)
	}
	p, err := NewPlan(topo, topo.Online, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Pairs) != 136 || len(p.CPUs) != 32 {
		t.Fatalf("%d pairs over %d CPUs, want 136 over 32", len(p.Pairs), len(p.CPUs))
	}
	if p.Pairs[120] != [2]int{0, 1} {
		t.Fatalf("first inside pair %v, want 0-1 (1 is another core, 64 is 0's sibling)", p.Pairs[120])
	}
	all, _ := NewPlan(topo, topo.Online, nil, false)
	if len(all.Pairs) != 128*127/2 {
		t.Fatalf("all pairs: %d", len(all.Pairs))
	}
}

// TestPlanBadInput: each refusal names the cause and what to do.
func TestPlanBadInput(t *testing.T) {
	topo := topology(t, "ryzen-9900x-cx5-x4") // CPUs 0-11 online
	allowed := cpulist.MustParse("0-7")
	for _, c := range []struct {
		name    string
		cpus    string
		perL3   bool
		allowed []int
		topo    Topology
		want    string
	}{
		{"offline", "0,12", false, allowed, topo, "CPU 12 is not online (online: 0-11)"},
		{"not allowed", "0,9", false, allowed, topo, "CPU 9 is outside this process's CPU affinity (allowed: 0-7; taskset or a cgroup cpuset limits it)"},
		{"one CPU", "3", false, allowed, topo, "--cpus 3: give at least two CPUs"},
		{"both flags", "0,1", true, allowed, topo, "--cpus and --per-l3 each choose the CPUs: give one"},
		{"one allowed", "", false, []int{4}, topo, "this process may run on CPU 4 only"},
		{"no L3", "", true, allowed, Topology{Online: []int{0, 1}}, "--per-l3: sysfs names no L3 domain here"},
		{"per-l3, one CPU usable", "", true, []int{2}, topo, "--per-l3: this process may use one CPU (2)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cpus []int
			if c.cpus != "" {
				cpus = cpulist.MustParse(c.cpus)
			}
			_, err := NewPlan(c.topo, c.allowed, cpus, c.perL3)
			if err == nil || !errors.Is(err, ErrBadCPUs) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatal("error spans lines")
			}
		})
	}
}

func TestPlanCPUs(t *testing.T) {
	topo := topology(t, "ryzen-9900x-cx5-x4")
	p, err := NewPlan(topo, topo.Online, []int{7, 2, 4}, false)
	if err != nil {
		t.Fatal(err)
	}
	if cpulist.Format(p.CPUs) != "2,4,7" || len(p.Pairs) != 3 || p.Pairs[0] != [2]int{2, 4} || p.Mode != ModeCPUs {
		t.Fatalf("%+v", p)
	}
}
