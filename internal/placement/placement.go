// Package placement decides where a NIC's IRQs and its application run.
// The rule is ours (no prior tool places IRQs by L3 domain and the
// application's CPUs; docs/architecture.md): a NIC's IRQs go to CPUs of
// its NUMA node, inside the L3 domain the application runs in, but never on
// the application's own CPUs. On the 100 GbE home lab whose ConnectX-5
// trained at x4, the application on CPU 6 (L3 domain
// 6-11), IRQs on 7-11, gave a steady 98.5 Gbit/s where irqbalance's spread
// gave 65, 84 or 99 from run to run. Doctor proposes it, tune applies it.
package placement

import (
	"fmt"
	"slices"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/inventory"
)

// Placement is where one NIC's IRQs go and where its application should
// run.
type Placement struct {
	Interface string `json:"interface"`
	NUMANode  int    `json:"numa_node"`
	L3Domain  []int  `json:"l3_domain"`
	IRQCPUs   []int  `json:"irq_cpus"`
	AppCPUs   []int  `json:"app_cpus"`
	// Basis says how the CPUs were chosen.
	Basis string `json:"basis"`
	// MovesIRQs is false when no finding or option asks for the IRQs to
	// move; AppCPUs then keep clear of where they already are. Set by tune.
	MovesIRQs bool `json:"moves_irqs"`
}

// Request is what one NIC's placement depends on.
type Request struct {
	NIC     *inventory.NIC
	AppCPUs []int // --app-cpus
	IRQCPUs []int // --irq-cpus
}

// placer computes placements over one host's CPU topology.
type placer struct {
	cpu *inventory.CPU
}

// Place computes where a NIC's IRQs and its application go. Notes explain
// any compromise. IRQCPUs is empty when no CPU can take the IRQs.
func Place(cpu *inventory.CPU, r Request) (Placement, []string) {
	pl := placer{cpu: cpu}
	local := LocalCPUs(cpu, r.NIC)
	p := Placement{Interface: r.NIC.Interface, NUMANode: -1}
	if r.NIC.NUMANode != nil {
		p.NUMANode = *r.NIC.NUMANode
	}
	switch {
	case len(r.IRQCPUs) > 0:
		return pl.placeGiven(p, r, local)
	case len(r.AppCPUs) > 0:
		return pl.placeByApp(p, r, local)
	}
	return pl.placeFree(p, r.NIC, local, nil)
}

// placeGiven takes --irq-cpus as they are; the application goes where
// the user said, or to the rest of the IRQ CPUs' L3 domain.
func (pl placer) placeGiven(p Placement, r Request, local []int) (Placement, []string) {
	var notes []string
	p.IRQCPUs = r.IRQCPUs
	p.L3Domain = pl.domainOf(r.IRQCPUs[0], local)
	p.Basis = "--irq-cpus"
	if out := cpulist.Subtract(r.IRQCPUs, local); len(out) > 0 {
		notes = append(notes, fmt.Sprintf("--irq-cpus %s: CPUs %s are not on %s's NUMA node (CPUs %s): its packets cross the socket interconnect",
			cpulist.Format(r.IRQCPUs), cpulist.Format(out), r.NIC.Interface, cpulist.Format(local)))
	}
	p.AppCPUs = r.AppCPUs
	if len(p.AppCPUs) == 0 {
		p.AppCPUs = cpulist.Subtract(p.L3Domain, r.IRQCPUs)
	}
	return p, notes
}

// placeByApp puts the IRQs in the L3 domains of the application's CPUs
// that are local to the NIC, off those CPUs.
func (pl placer) placeByApp(p Placement, r Request, local []int) (Placement, []string) {
	var dom []int
	for _, c := range r.AppCPUs {
		if cpulist.Contains(local, c) {
			dom = union(dom, pl.domainOf(c, local))
		}
	}
	if len(dom) == 0 {
		// Locality wins over the application's cache: a remote IRQ costs
		// every packet a trip across the sockets.
		p, notes := pl.placeFree(p, r.NIC, local, r.AppCPUs)
		notes = append(notes, fmt.Sprintf("--app-cpus %s are not on %s's NUMA node %d: run the application on CPUs %s instead (e.g. numactl --cpunodebind=%d)",
			cpulist.Format(r.AppCPUs), r.NIC.Interface, p.NUMANode, cpulist.Format(p.AppCPUs), p.NUMANode))
		return p, notes
	}
	p.L3Domain, p.AppCPUs, p.Basis = dom, r.AppCPUs, "the L3 domain of --app-cpus"
	p.IRQCPUs = cpulist.Subtract(dom, r.AppCPUs)
	if len(p.IRQCPUs) > 0 {
		return p, nil
	}
	p.IRQCPUs = cpulist.Subtract(local, r.AppCPUs)
	if len(p.IRQCPUs) == 0 {
		return p, []string{fmt.Sprintf("--app-cpus %s cover every CPU local to %s: no CPU is left for its IRQs, so they stay where they are", cpulist.Format(r.AppCPUs), r.NIC.Interface)}
	}
	return p, []string{fmt.Sprintf("--app-cpus %s fill their L3 domain: %s's IRQs go to other CPUs of its node (%s), across an L3 boundary",
		cpulist.Format(r.AppCPUs), r.NIC.Interface, cpulist.Format(p.IRQCPUs))}
}

// placeFree chooses the local L3 domain most of the NIC's IRQs already use
// (the smallest change), keeps its first core for the application and
// gives the IRQs the rest. CPUs in avoid are never chosen.
func (pl placer) placeFree(p Placement, nic *inventory.NIC, local, avoid []int) (Placement, []string) {
	usable := cpulist.Subtract(local, avoid)
	if len(usable) == 0 {
		return p, []string{fmt.Sprintf("no CPU local to %s is free for its IRQs", nic.Interface)}
	}
	start := pl.busiestCPU(nic, usable)
	p.Basis = "the local L3 domain most of its IRQs already use"
	if start < 0 {
		start, p.Basis = usable[0], "the first local L3 domain"
	}
	p.L3Domain = pl.domainOf(start, usable)
	p.AppCPUs = cpulist.Intersect(pl.coreOf(p.L3Domain[0]), p.L3Domain)
	p.IRQCPUs = cpulist.Subtract(p.L3Domain, p.AppCPUs)
	if len(p.IRQCPUs) > 0 {
		return p, nil
	}
	p.IRQCPUs = p.L3Domain
	return p, []string{fmt.Sprintf("%s's L3 domain %s holds one core: its IRQs share it with the application", nic.Interface, cpulist.Format(p.L3Domain))}
}

// LocalCPUs returns the CPUs local to the NIC: the kernel's
// local_cpulist for its PCI function where it reports one (the online
// CPUs of it), else the CPUs of its NUMA node, else every online CPU
// (node unknown, -1, or not reported). Doctor, tune and the engine's
// thread placement all use it, so they agree on what "local" is.
func LocalCPUs(cpu *inventory.CPU, n *inventory.NIC) []int {
	if len(n.LocalCPUs) > 0 {
		if c := cpulist.Intersect(n.LocalCPUs, cpu.Online); len(c) > 0 {
			return c
		}
	}
	if n.NUMANode != nil && *n.NUMANode >= 0 {
		if c := cpu.NodeCPUs(*n.NUMANode); len(c) > 0 {
			return c
		}
	}
	return cpu.Online
}

// domainOf returns the L3 domain of cpu within within; without L3 facts,
// within itself.
func (pl placer) domainOf(cpu int, within []int) []int {
	if d := pl.cpu.L3Of(cpu); d >= 0 {
		if c := cpulist.Intersect(pl.cpu.L3Domains[d], within); len(c) > 0 {
			return c
		}
	}
	return within
}

// busiestCPU returns a CPU of the usable L3 domain to which most of the
// NIC's IRQs are routed (ties: the lowest domain), or -1 when none is.
func (pl placer) busiestCPU(nic *inventory.NIC, usable []int) int {
	votes := map[int]int{} // L3 domain index → IRQs routed there
	first := map[int]int{} // L3 domain index → a usable CPU in it
	for _, q := range nic.IRQs {
		seen := map[int]bool{}
		for _, c := range q.AffinityOrEffective() {
			d := pl.cpu.L3Of(c)
			if !cpulist.Contains(usable, c) || seen[d] {
				continue
			}
			seen[d] = true
			votes[d]++
			if _, ok := first[d]; !ok {
				first[d] = c
			}
		}
	}
	best, n := -1, 0
	for d, k := range votes {
		if k > n || (k == n && d < best) {
			best, n = d, k
		}
	}
	if best == -1 {
		return -1
	}
	return first[best]
}

// coreOf returns cpu with its SMT siblings.
func (pl placer) coreOf(cpu int) []int { return pl.cpu.CoreOf(cpu) }

// Moves places a NIC's IRQs on cpus with as few changes as it takes: an
// IRQ whose affinity already lies inside cpus stays where it is; each
// other one, in IRQ-number order, goes to the CPU of cpus that holds the
// fewest of the NIC's IRQs so far (ties: the lowest CPU). It returns the
// IRQs that move, with their CPU. On the x4 home lab's host, of 13 IRQs only the
// one on CPU 3 leaves 7-11; the others, already there, keep their CPUs,
// so the change and its revert stay small. No CPUs: nothing moves.
func Moves(irqs []inventory.IRQ, cpus []int) map[int]int {
	out := map[int]int{}
	if len(cpus) == 0 {
		return out
	}
	load := make(map[int]int, len(cpus))
	sorted := slices.Clone(irqs)
	slices.SortFunc(sorted, func(a, b inventory.IRQ) int { return a.IRQ - b.IRQ })
	var moving []inventory.IRQ
	for _, q := range sorted {
		if len(q.Affinity) > 0 && len(cpulist.Subtract(q.Affinity, cpus)) == 0 {
			if len(q.Affinity) == 1 {
				load[q.Affinity[0]]++
			}
			continue
		}
		moving = append(moving, q)
	}
	for _, q := range moving {
		best := cpus[0]
		for _, c := range cpus {
			if load[c] < load[best] || (load[c] == load[best] && c < best) {
				best = c
			}
		}
		load[best]++
		out[q.IRQ] = best
	}
	return out
}

// union returns the sorted set of CPUs in a or b.
func union(a, b []int) []int {
	m := slices.Concat(a, b)
	slices.Sort(m)
	return slices.Compact(m)
}
