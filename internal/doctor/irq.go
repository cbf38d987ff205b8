package doctor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/placement"
)

// A CPU serves an IRQ when it took at least servedShare of the IRQ's
// interrupts and at least servedMin of them: fewer are left over from
// boot, before the affinity was set (the 100 GbE home lab whose
// ConnectX-5 trained at x4: 2 interrupts on CPU N for compN, and 12 more where an idle queue's IRQ first landed).
const (
	servedShare = 0.01
	servedMin   = 100
)

// ServedOn returns the CPUs that served a real share of q's interrupts:
// at least 1% of them and at least 100 (tune attributes IRQ moves by it).
func ServedOn(q inventory.IRQ) []int {
	var out []int
	for _, c := range q.ServedOn(servedShare) {
		if q.Counts[strconv.Itoa(c)] >= servedMin {
			out = append(out, c)
		}
	}
	return out
}

// irqCPUs returns the CPUs a NIC's IRQs are routed to (effective affinity,
// else affinity) and those that served a real share of them.
func irqCPUs(v *nicView) (routed, served []int) {
	r, s := map[int]bool{}, map[int]bool{}
	for _, q := range v.IRQs {
		markAll(r, q.AffinityOrEffective())
		markAll(s, ServedOn(q))
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

// affinityFix gives the steps that route every IRQ of a NIC to the
// placement's IRQ CPUs, saying which CPUs stay free for the application
// and why, then how to check and keep it.
func affinityFix(v *nicView, pl placement.Placement, app []int, ib bool) []Fix {
	var irqs []string
	for _, q := range v.IRQs {
		irqs = append(irqs, strconv.Itoa(q.IRQ))
	}
	list := cpulist.Format(pl.IRQCPUs)
	n := len(irqs)
	action := fmt.Sprintf("Route the %d IRQ%s of %s to %s%s", n, plural(n), v.Interface, cpusPhrase(pl.IRQCPUs), freeCPUs(pl, app))
	fixes := []Fix{
		do(action, shell(fmt.Sprintf("for irq in %s; do echo %s > /proc/irq/$irq/smp_affinity_list; done", strings.Join(irqs, " "), list))...).
			persist("IRQ affinity is lost at reboot and when the driver reloads: apply it again then (linerate tune --apply does, journaled)").
			verify("Check where the kernel put them (a kernel-managed IRQ refuses the write)",
				shell(fmt.Sprintf(`for irq in %s; do echo "$irq: $(cat /proc/irq/$irq/effective_affinity_list)"; done`, strings.Join(irqs, " ")))...),
	}
	if ib {
		fixes = append(fixes, do("irqbalance is running and will move them back within 10 s: ban these IRQs first (see irqbalance.running)"))
	}
	argv := []string{"linerate", "tune", "--iface", v.Interface}
	if len(app) > 0 {
		argv = append(argv, "--app-cpus", cpulist.Format(app))
	}
	return append(fixes, do("Or let linerate place them by L3 domain, journaled", append(argv, "--apply")...))
}

// freeCPUs says which CPUs the placement keeps free for the application,
// and why: ", keeping CPU 6 free for your application: it shares L3
// domain 6-11 with them, so packets stay in one cache while no interrupt
// takes its cycles (run it there: taskset -c 6 …)".
func freeCPUs(pl placement.Placement, app []int) string {
	free := pl.AppCPUs
	if len(free) == 0 {
		return ""
	}
	who := "your application"
	if len(app) > 0 {
		who = "the application (--app-cpus)"
	}
	why := "no interrupt takes its cycles"
	if len(pl.L3Domain) > 0 && len(cpulist.Subtract(free, pl.L3Domain)) == 0 {
		why = fmt.Sprintf("it shares L3 domain %s with them, so packets stay in one cache while no interrupt takes its cycles", cpulist.Format(pl.L3Domain))
	}
	run := ""
	if len(app) == 0 {
		run = fmt.Sprintf(" (run it there: taskset -c %s …)", cpulist.Format(free))
	}
	return fmt.Sprintf(", keeping %s free for %s: %s%s", cpusPhrase(free), who, why, run)
}

// irqSpansL3: a NIC's IRQs land in more than one L3 domain (CCD/CCX), so
// packets cross the die between the interrupt and the application — the
// 100 GbE home lab's "better" 84 Gbit/s bucket.
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
		out = append(out, Finding{
			ID: "irq.spans_l3_domains", Severity: Warning, Subject: v.Interface,
			Summary: fmt.Sprintf("IRQs of %s are routed to or served on CPUs of %d L3 domains (%s): traffic crosses caches between interrupt and application, and throughput varies from run to run",
				v.Interface, len(byDomain), strings.Join(parts, "; ")),
			Evidence: ev,
			Fix:      affinityFix(v, d.irqTarget(v), d.opts.AppCPUs, d.inv.Host.IRQBalance.Running),
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

// irqTarget proposes where a NIC's IRQs go: package placement's rule —
// local to its NUMA node, in one L3 domain (the application's, with
// --app-cpus), off the application's CPUs — which tune applies. When no
// CPU is left for them, every local CPU.
func (d *diag) irqTarget(v *nicView) placement.Placement {
	p, _ := placement.Place(&d.inv.CPU, placement.Request{NIC: v.NIC, AppCPUs: d.opts.AppCPUs})
	if len(p.IRQCPUs) == 0 {
		p.IRQCPUs, p.AppCPUs = d.localCPUs(v), nil
	}
	return p
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
			Summary: fmt.Sprintf("%d of %d IRQs of %s (NUMA node %d, CPUs %s) are routed to %s on another node: each packet crosses the socket interconnect",
				len(irqs), len(v.IRQs), v.Interface, *v.NUMANode, cpulist.Format(local), cpusPhrase(remote)),
			Evidence: map[string]any{"nic_numa_node": *v.NUMANode, "node_cpus": cpulist.Format(local), "remote_cpus": cpulist.Format(remote), "irqs": irqs},
			Fix: append(affinityFix(v, d.irqTarget(v), d.opts.AppCPUs, d.inv.Host.IRQBalance.Running),
				do(fmt.Sprintf("Run the application on the same node, with its memory there too: numactl --cpunodebind=%d --membind=%d followed by its command", *v.NUMANode, *v.NUMANode))),
		})
	}
	return out
}

// irqOnAppCPU: with --app-cpus, a NIC IRQ routed to or served on the
// application's own CPU takes cycles the application needs — the 100 GbE
// home lab's "worst" 65 Gbit/s bucket.
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
			s := cpulist.Intersect(union(q.AffinityOrEffective(), ServedOn(q)), app)
			// A default mask covering every CPU is not a placement; only
			// what the IRQ is routed to or served on counts.
			if len(q.Effective) == 0 && len(q.Affinity) == len(d.inv.CPU.Online) {
				s = cpulist.Intersect(ServedOn(q), app)
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
		out = append(out, Finding{
			ID: "irq.on_app_cpu", Severity: Warning, Subject: v.Interface,
			Summary: fmt.Sprintf("%d IRQ%s of %s share the application's %s: interrupts and softirqs steal the application's cycles",
				len(hits), plural(len(hits)), v.Interface, cpusPhrase(shared)),
			Evidence: map[string]any{"app_cpus": cpulist.Format(app), "shared_cpus": cpulist.Format(shared), "irqs": names},
			Fix:      affinityFix(v, d.irqTarget(v), d.opts.AppCPUs, d.inv.Host.IRQBalance.Running),
		})
	}
	return out
}
