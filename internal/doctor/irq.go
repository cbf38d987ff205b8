package doctor

import (
	"fmt"
	"github.com/linerate/linerate/internal/placement"
	"slices"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/inventory"
)

// servedShare is the share of an IRQ's interrupts a CPU must have served
// to count as serving it: smaller counts are left over from boot, before
// the affinity was set (seed 000: 2 interrupts on CPU N for compN).
const servedShare = 0.01

// irqCPUs returns the CPUs a NIC's IRQs are routed to (effective affinity,
// else affinity) and those that served a real share of them.
func irqCPUs(v *nicView) (routed, served []int) {
	r, s := map[int]bool{}, map[int]bool{}
	for _, q := range v.IRQs {
		for _, c := range q.AffinityOrEffective() {
			r[c] = true
		}
		for _, c := range q.ServedOn(servedShare) {
			s[c] = true
		}
	}
	return keys(r), keys(s)
}

func keys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func markAll(m map[int]bool, cpus []int) {
	for _, c := range cpus {
		m[c] = true
	}
}

func union(a, b []int) []int {
	m := map[int]bool{}
	for _, c := range a {
		m[c] = true
	}
	for _, c := range b {
		m[c] = true
	}
	return keys(m)
}

// affinityFix gives the commands that route every IRQ of a NIC to cpus.
func affinityFix(v *nicView, cpus, app []int, ib bool) []string {
	var irqs []string
	for _, q := range v.IRQs {
		irqs = append(irqs, fmt.Sprint(q.IRQ))
	}
	list := cpulist.Format(cpus)
	fix := []string{
		fmt.Sprintf("for irq in %s; do echo %s > /proc/irq/$irq/smp_affinity_list; done", strings.Join(irqs, " "), list),
		fmt.Sprintf("check where they landed: grep . /proc/irq/{%s}/effective_affinity_list", strings.Join(irqs, ",")),
	}
	if ib {
		fix = append(fix, "irqbalance is running and will move them back: ban these IRQs first (see irqbalance.running)")
	}
	appArg := "<your application's CPUs>"
	if len(app) > 0 {
		appArg = cpulist.Format(app)
	}
	return append(fix, fmt.Sprintf("or placed by L3 domain and journaled: linerate tune --iface %s --app-cpus %s --apply", v.Interface, appArg))
}

// irqSpansL3: a NIC's IRQs land in more than one L3 domain (CCD/CCX), so
// packets cross the die between the interrupt and the application — seed
// 000's "better" 84 Gbit/s bucket.
func irqSpansL3(d *diag) []Finding {
	cpu := &d.inv.CPU
	if len(cpu.L3Domains) < 2 {
		return nil
	}
	var out []Finding
	for _, v := range d.carrying() {
		routed, served := irqCPUs(v)
		all := union(routed, served)
		byDomain := map[int][]int{}
		for _, c := range all {
			if dom := cpu.L3Of(c); dom >= 0 {
				byDomain[dom] = append(byDomain[dom], c)
			}
		}
		if len(byDomain) < 2 {
			continue
		}
		var parts []string
		ev := map[string]any{"routed_to": cpulist.Format(routed), "served_on": cpulist.Format(served)}
		doms := map[string]string{}
		for _, dom := range keys(boolKeys(byDomain)) {
			d := cpulist.Format(cpu.L3Domains[dom])
			parts = append(parts, fmt.Sprintf("L3 %s: CPUs %s", d, cpulist.Format(byDomain[dom])))
			doms[d] = cpulist.Format(byDomain[dom])
		}
		ev["by_l3_domain"] = doms
		target := d.irqTarget(v)
		out = append(out, Finding{
			ID: "irq.spans_l3_domains", Severity: Warning, Subject: v.Interface,
			Summary: fmt.Sprintf("IRQs of %s are routed to or served on CPUs of %d L3 domains (%s): traffic crosses caches between interrupt and application, and throughput varies from run to run",
				v.Interface, len(byDomain), strings.Join(parts, "; ")),
			Evidence: ev,
			Fix:      affinityFix(v, target, d.opts.AppCPUs, d.inv.Host.IRQBalance.Running),
		})
	}
	return out
}

func boolKeys(m map[int][]int) map[int]bool {
	out := map[int]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// carrying returns the selected NICs whose link is up: IRQ placement
// matters only where packets arrive.
func (d *diag) carrying() []*nicView {
	var out []*nicView
	for _, v := range d.nics {
		if v.Operstate == "up" {
			out = append(out, v)
		}
	}
	return out
}

// irqTarget proposes CPUs for a NIC's IRQs: package placement's rule —
// local to its NUMA node, in one L3 domain (the application's, with
// --app-cpus), off the application's CPUs — which tune applies.
func (d *diag) irqTarget(v *nicView) []int {
	p, _ := placement.Place(&d.inv.CPU, placement.Request{NIC: v.NIC, AppCPUs: d.opts.AppCPUs})
	if len(p.IRQCPUs) == 0 {
		return d.localCPUs(v)
	}
	return p.IRQCPUs
}

// irqRemoteNUMA: a NIC's IRQs routed to CPUs of another NUMA node than
// the NIC's: every packet crosses the socket interconnect.
func irqRemoteNUMA(d *diag) []Finding {
	if len(d.inv.CPU.NUMANodes) < 2 {
		return nil
	}
	var out []Finding
	for _, v := range d.carrying() {
		if v.NUMANode == nil || *v.NUMANode < 0 {
			continue
		}
		local := d.inv.CPU.NodeCPUs(*v.NUMANode)
		remoteSet := map[int]bool{}
		var irqs []int
		for _, q := range v.IRQs {
			r := cpulist.Subtract(q.AffinityOrEffective(), local)
			if len(r) > 0 {
				markAll(remoteSet, r)
				irqs = append(irqs, q.IRQ)
			}
		}
		if len(remoteSet) == 0 {
			continue
		}
		remote := keys(remoteSet)
		out = append(out, Finding{
			ID: "irq.remote_numa", Severity: Warning, Subject: v.Interface,
			Summary: fmt.Sprintf("%d of %d IRQs of %s (NUMA node %d, CPUs %s) are routed to CPUs %s on another node: each packet crosses the socket interconnect",
				len(irqs), len(v.IRQs), v.Interface, *v.NUMANode, cpulist.Format(local), cpulist.Format(remote)),
			Evidence: map[string]any{"nic_numa_node": *v.NUMANode, "node_cpus": cpulist.Format(local), "remote_cpus": cpulist.Format(remote), "irqs": irqs},
			Fix: append(affinityFix(v, d.irqTarget(v), d.opts.AppCPUs, d.inv.Host.IRQBalance.Running),
				fmt.Sprintf("run the application on the same node: numactl --cpunodebind=%d --membind=%d <command>", *v.NUMANode, *v.NUMANode)),
		})
	}
	return out
}

// irqOnAppCPU: with --app-cpus, a NIC IRQ routed to or served on the
// application's own CPU takes cycles the application needs — seed 000's
// "worst" 65 Gbit/s bucket.
func irqOnAppCPU(d *diag) []Finding {
	app := d.opts.AppCPUs
	if len(app) == 0 {
		return nil
	}
	var out []Finding
	for _, v := range d.carrying() {
		var hits []inventory.IRQ
		sharedSet := map[int]bool{}
		for _, q := range v.IRQs {
			s := cpulist.Intersect(union(q.AffinityOrEffective(), q.ServedOn(servedShare)), app)
			// A default mask covering every CPU is not a placement; only
			// what the IRQ is routed to or served on counts.
			if len(q.Effective) == 0 && len(q.Affinity) == len(d.inv.CPU.Online) {
				s = cpulist.Intersect(q.ServedOn(servedShare), app)
			}
			if len(s) > 0 {
				hits = append(hits, q)
				markAll(sharedSet, s)
			}
		}
		if len(hits) == 0 {
			continue
		}
		shared := keys(sharedSet)
		var names []string
		for _, q := range hits {
			names = append(names, fmt.Sprintf("%d (%s)", q.IRQ, q.Name))
		}
		target := d.irqTarget(v)
		out = append(out, Finding{
			ID: "irq.on_app_cpu", Severity: Warning, Subject: v.Interface,
			Summary: fmt.Sprintf("%d IRQ(s) of %s share the application's CPUs %s: interrupts and softirqs steal the application's cycles",
				len(hits), v.Interface, cpulist.Format(shared)),
			Evidence: map[string]any{"app_cpus": cpulist.Format(app), "shared_cpus": cpulist.Format(shared), "irqs": names},
			Fix:      affinityFix(v, target, d.opts.AppCPUs, d.inv.Host.IRQBalance.Running),
		})
	}
	return out
}
