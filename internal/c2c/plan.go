package c2c

import (
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/inventory"
)

// Topology is what sysfs says about the CPUs.
type Topology struct {
	Hostname string
	Model    string
	Online   []int
	// L3Domains are the CPUs sharing each last-level cache, as
	// cache/index3/shared_cpu_list gives them; empty when sysfs has none.
	L3Domains [][]int
	// SMTSiblings are the hardware threads of each core that has more
	// than one.
	SMTSiblings [][]int
}

// ReadTopology reads the CPU topology below fs (the live host, or a
// captured tree) through package inventory.
func ReadTopology(fs *hostfs.FS) (Topology, error) {
	inv, err := inventory.Collect(fs, inventory.Options{})
	if err != nil {
		return Topology{}, err
	}
	if len(inv.CPU.Online) == 0 {
		return Topology{}, fmt.Errorf("no online CPU in %s", fs.Display("sys/devices/system/cpu/online"))
	}
	return Topology{Hostname: inv.Host.Hostname, Model: inv.CPU.Model, Online: inv.CPU.Online,
		L3Domains: inv.CPU.L3Domains, SMTSiblings: inv.CPU.SMTSiblings}, nil
}

// Allowed returns the CPUs this process may run on (its affinity mask,
// which taskset or a cgroup cpuset can narrow).
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("reading this process's CPU affinity: %w", err)
	}
	var cpus []int
	for c := 0; c <= maxAffinityCPU; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Mode says which CPUs a plan measures.
const (
	ModeAll   = "all"    // every online CPU the process may use, every pair
	ModeCPUs  = "cpus"   // the CPUs --cpus named, every pair
	ModePerL3 = "per-l3" // one CPU per L3 domain, plus a second in each
)

// Plan is what a measurement will do: the CPUs of the matrix and the
// pairs to measure (a < b).
type Plan struct {
	Mode  string
	CPUs  []int
	Pairs [][2]int
}

// ErrBadCPUs marks a CPU list that cannot be measured.
var ErrBadCPUs = errors.New("cannot measure these CPUs")

// NewPlan picks the CPUs and pairs. cpus, when not empty, are the CPUs to
// measure (every pair); perL3 measures one CPU per L3 domain (every pair
// of those) plus, in each domain, the pair of that CPU and another core
// of the domain (not an SMT sibling where the domain has another core),
// so that a 128-CPU host with 16 domains takes 136 pairs, not 8128.
// Neither: every usable CPU, every pair.
func NewPlan(topo Topology, allowed, cpus []int, perL3 bool) (Plan, error) {
	usable := intersect(topo.Online, allowed)
	switch {
	case len(cpus) > 0 && perL3:
		return Plan{}, fmt.Errorf("%w: --cpus and --per-l3 each choose the CPUs: give one", ErrBadCPUs)
	case len(cpus) > 0:
		if err := checkCPUs(cpus, topo.Online, allowed); err != nil {
			return Plan{}, err
		}
		return allPairs(ModeCPUs, cpus), nil
	case perL3:
		return perL3Plan(topo, usable)
	}
	if len(usable) < 2 {
		return Plan{}, fmt.Errorf("%w: this process may run on CPU %s only: a core-to-core matrix needs two (taskset or a cgroup cpuset limits it)", ErrBadCPUs, cpulist.Format(usable))
	}
	return allPairs(ModeAll, usable), nil
}

func checkCPUs(cpus, online, allowed []int) error {
	if len(cpus) < 2 {
		return fmt.Errorf("%w: --cpus %s: give at least two CPUs", ErrBadCPUs, cpulist.Format(cpus))
	}
	for _, c := range cpus {
		switch {
		case !slices.Contains(online, c):
			return fmt.Errorf("%w: CPU %d is not online (online: %s)", ErrBadCPUs, c, cpulist.Format(online))
		case c > maxAffinityCPU:
			return fmt.Errorf("%w: CPU %d is beyond the %d CPUs an affinity mask here can name", ErrBadCPUs, c, maxAffinityCPU+1)
		case !slices.Contains(allowed, c):
			return fmt.Errorf("%w: CPU %d is outside this process's CPU affinity (allowed: %s; taskset or a cgroup cpuset limits it)",
				ErrBadCPUs, c, cpulist.Format(allowed))
		}
	}
	return nil
}

func allPairs(mode string, cpus []int) Plan {
	p := Plan{Mode: mode, CPUs: slices.Clone(cpus)}
	slices.Sort(p.CPUs)
	for i, a := range p.CPUs {
		for _, b := range p.CPUs[i+1:] {
			p.Pairs = append(p.Pairs, [2]int{a, b})
		}
	}
	return p
}

func perL3Plan(topo Topology, usable []int) (Plan, error) {
	if len(topo.L3Domains) == 0 {
		return Plan{}, fmt.Errorf("%w: --per-l3: sysfs names no L3 domain here (no level-3 cache in /sys/devices/system/cpu/cpu*/cache): use --cpus", ErrBadCPUs)
	}
	var reps []int
	var inner [][2]int
	for _, dom := range topo.L3Domains {
		d := intersect(dom, usable)
		if len(d) == 0 {
			continue
		}
		rep := d[0]
		reps = append(reps, rep)
		if second, ok := otherCore(rep, d, topo.SMTSiblings); ok {
			inner = append(inner, [2]int{rep, second})
		}
	}
	p := allPairs(ModePerL3, reps)
	p.Pairs = append(p.Pairs, inner...)
	for _, pr := range inner {
		p.CPUs = append(p.CPUs, pr[1])
	}
	slices.Sort(p.CPUs)
	if len(p.Pairs) == 0 {
		return Plan{}, fmt.Errorf("%w: --per-l3: this process may use one CPU (%s) of one L3 domain: nothing to pair", ErrBadCPUs, cpulist.Format(usable))
	}
	return p, nil
}

// otherCore returns a CPU of dom other than rep, on another core where
// there is one: SMT siblings share more than the L3, so their hand-off
// says nothing about the domain.
func otherCore(rep int, dom []int, smt [][]int) (int, bool) {
	core := []int{rep}
	for _, s := range smt {
		if slices.Contains(s, rep) {
			core = s
		}
	}
	fallback, ok := 0, false
	for _, c := range dom {
		switch {
		case c == rep:
		case !slices.Contains(core, c):
			return c, true
		case !ok:
			fallback, ok = c, true
		}
	}
	return fallback, ok
}

// intersect returns the members of a that are in b, in a's order.
func intersect(a, b []int) []int {
	var out []int
	for _, c := range a {
		if slices.Contains(b, c) {
			out = append(out, c)
		}
	}
	return out
}
