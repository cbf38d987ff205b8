package tune

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/placement"
)

// governors sets the performance governor on the CPUs local to the
// selected NICs that doctor found scaling down.
func (p *planner) governors() {
	const id = "cpu.governor_not_performance"
	if p.finding(id, "") == nil {
		return
	}
	local := []int{}
	for _, n := range p.nics {
		local = union(local, placement.LocalCPUs(&p.in.Inventory.CPU, &n.NIC))
	}
	for _, c := range local {
		dir := fmt.Sprintf("sys/devices/system/cpu/cpu%d/cpufreq/", c)
		cur, err := p.in.FS.ReadString(dir + "scaling_governor")
		if err != nil || cur == "performance" {
			continue
		}
		if avail, err := p.in.FS.ReadString(dir + "scaling_available_governors"); err == nil && !slices.Contains(strings.Fields(avail), "performance") {
			p.note(id, fmt.Sprintf("cpu%d", c), "cpu%d offers no performance governor (%s): left at %s", c, avail, cur)
			continue
		}
		path := p.in.FS.Display(dir + "scaling_governor")
		p.add(Change{
			Kind: KindGovernor, Target: fmt.Sprintf("cpu%d", c), Path: path,
			Before: cur, After: "performance", Finding: id,
			Source:  "tuned throughput-performance and latency-performance: governor=performance",
			Command: "echo performance > " + path,
		})
	}
}

// mtu sets --mtu on the selected NICs; without it, an MTU finding is
// advice, because the peer and every switch port must match.
func (p *planner) mtu() {
	const id = "mtu.not_jumbo"
	for _, n := range p.nics {
		f := p.finding(id, n.Interface)
		if p.opts.MTU == 0 {
			if f != nil {
				p.note(id, n.Interface, "MTU %d on %s: tune changes it only when asked (--mtu 9000), once the peer and every switch port on the path carry 9000; prove the path first: linerate doctor --iface %s --peer PEER (or ping -M do -s 8972 PEER)",
					derefInt(n.MTU), n.Interface, n.Interface)
			}
			continue
		}
		if n.MTU != nil && *n.MTU == p.opts.MTU {
			continue
		}
		c := Change{
			Kind: KindMTU, Target: n.Interface, Interface: n.Interface,
			Before: strconv.Itoa(derefInt(n.MTU)), After: strconv.Itoa(p.opts.MTU),
			Source:  "--mtu: the peer and every switch port must carry it too",
			Command: fmt.Sprintf("ip link set dev %s mtu %d", n.Interface, p.opts.MTU),
		}
		if f != nil {
			c.Finding = id
		}
		p.add(c)
	}
}

func derefInt(v *int) int {
	if v == nil {
		return 0
	}
	return *v
}

// channels raises the queue count of NICs doctor found with too few
// (queues.too_few): to the finding's target, min(8, CPUs of the NIC's
// node) capped at the driver's maximum — what fixed the XL710 40 GbE host in a
// Gen2 x4 slot.
func (p *planner) channels() {
	const id = "queues.too_few"
	for _, n := range p.nics {
		f := p.finding(id, n.Interface)
		if f == nil {
			continue
		}
		node := len(placement.LocalCPUs(&p.in.Inventory.CPU, &n.NIC))
		want := uint64(min(8, node))
		if t, ok := f.Evidence["target"].(int); ok && t > 0 {
			want = uint64(t)
		}
		before, after, ok := p.channelTarget(n, want)
		if !ok {
			continue
		}
		p.add(Change{
			Kind: KindChannels, Target: n.Interface, Interface: n.Interface,
			Before: before.String(), After: after.String(), Finding: id,
			Source:  fmt.Sprintf("min(8, %d CPUs on the NIC's node), at most the driver's maximum: one queue per CPU that can serve it (Intel tuning guide)", node),
			Command: fmt.Sprintf("ethtool -L %s %s", n.Interface, after),
		})
		p.note(id, n.Interface, "the new queues of %s bring new IRQs, which this plan cannot know yet: run linerate tune again after applying to place them", n.Interface)
	}
}

// channelTarget returns the settings that change: from the driver's
// counts and maxima live, from the tree's ethtool facts below a captured
// tree (else its sysfs queue count, with the maximum unknown).
func (p *planner) channelTarget(n *doctor.NICReport, want uint64) (before, after settings, ok bool) {
	const id = "queues.too_few"
	var ch Channels
	if p.in.Devices != nil {
		c, err := p.in.Devices.Channels(n.Interface)
		if err != nil {
			p.note(id, n.Interface, "%v: queues left alone", err)
			return nil, nil, false
		}
		ch = c
	} else if c := n.Channels; c != nil {
		ch = Channels{RX: u32(c.RX), TX: u32(c.TX), Other: u32(c.Other), Combined: u32(c.Combined),
			MaxRX: u32(c.RXMax), MaxTX: u32(c.TXMax), MaxOther: u32(c.OtherMax), MaxCombined: u32(c.CombinedMax)}
	} else {
		p.note(id, n.Interface, "%s: the NIC's maximum queue count is not in a captured tree (ethtool -l %s shows it); the live plan caps %d at it", n.Interface, n.Interface, want)
		return settings{{"combined", uint64(n.Queues.RX)}}, settings{{"combined", want}}, true
	}
	// Combined channels where the driver has them; RX and TX apart where
	// it has only those (veth).
	var names []string
	if ch.MaxCombined > 0 {
		names = []string{"combined"}
		want = min(want, uint64(ch.MaxCombined))
	} else if ch.MaxRX > 0 && ch.MaxTX > 0 {
		names = []string{"rx", "tx"}
		want = min(want, uint64(ch.MaxRX), uint64(ch.MaxTX))
	}
	cur := ch.settings()
	for _, name := range names {
		if v, _ := cur.get(name); v < want {
			before = append(before, setPair{name, v})
			after = append(after, setPair{name, want})
		}
	}
	if len(after) == 0 {
		p.note(id, n.Interface, "%s already has the most queues its driver allows (%s): nothing to raise", n.Interface, cur)
		return nil, nil, false
	}
	return before, after, true
}

// rings raises ring sizes: the RX ring to the target of doctor's
// ring.small finding, and — with the throughput profile — both rings of
// every PCI NIC to the hardware maximum (fasterdata's 100G advice,
// tuned#660's request).
func (p *planner) rings() {
	const id = "ring.small"
	for _, n := range p.nics {
		f := p.finding(id, n.Interface)
		profile := raisesRings(p.opts.Profile) && n.Kind == "pci"
		if f == nil && !profile {
			continue
		}
		r, ok := p.ringsOf(n, f != nil)
		if !ok {
			continue
		}
		var before, after settings
		for _, s := range []struct {
			name     string
			cur, max uint32
			wanted   bool
		}{{"rx", r.RX, r.MaxRX, true}, {"tx", r.TX, r.MaxTX, profile}} {
			if s.wanted && s.cur < s.max {
				before = append(before, setPair{s.name, uint64(s.cur)})
				after = append(after, setPair{s.name, uint64(s.max)})
			}
		}
		if len(after) == 0 {
			continue
		}
		c := Change{
			Kind: KindRings, Target: n.Interface, Interface: n.Interface,
			Before: before.String(), After: after.String(),
			Source:  "fasterdata 100G: rings at the hardware maximum",
			Command: fmt.Sprintf("ethtool -G %s %s", n.Interface, after),
		}
		if f != nil {
			c.Finding = id
			c.Source = "ring.small: the RX ring at its maximum, so that a burst or a busy CPU finds buffers (" + c.Source + ")"
		}
		p.add(c)
	}
}

// ringsOf reads a NIC's rings: from the driver live, from the tree's
// ethtool facts below a captured tree (found says whether a finding asks;
// without one a tree's rings are not worth a note each).
func (p *planner) ringsOf(n *doctor.NICReport, found bool) (Rings, bool) {
	if p.in.Devices != nil {
		r, err := p.in.Devices.Rings(n.Interface)
		if err != nil {
			p.note("", n.Interface, "%v: rings left alone", err)
			return Rings{}, false
		}
		return r, true
	}
	if r := n.Rings; r != nil && r.RX != nil && r.RXMax != nil {
		return Rings{RX: u32(r.RX), TX: u32(r.TX), RXMini: u32(r.RXMini), RXJumbo: u32(r.RXJumbo),
			MaxRX: u32(r.RXMax), MaxTX: u32(r.TXMax), MaxRXMini: u32(r.RXMiniMax), MaxRXJumbo: u32(r.RXJumboMax)}, true
	}
	if !found {
		p.note("", n.Interface, "%s: ring sizes are not in a captured tree; the live plan raises them to the NIC's maximum (ethtool -g %s)", n.Interface, n.Interface)
	}
	return Rings{}, false
}

// irqFindings are doctor's IRQ placement findings, in the order a moved
// IRQ is attributed to them.
func irqFindings() []string {
	return []string{"irq.remote_numa", "irq.on_app_cpu", "irq.spans_l3_domains"}
}

// irqs places each selected NIC's IRQs and, where irqbalance runs, bans
// the moved IRQs from it first.
func (p *planner) irqs() {
	var moved []int
	for _, n := range p.nics {
		if len(n.IRQs) == 0 {
			continue
		}
		pl, notes := placement.Place(&p.in.Inventory.CPU, placement.Request{NIC: &n.NIC, AppCPUs: p.opts.AppCPUs, IRQCPUs: p.opts.IRQCPUs})
		for _, t := range notes {
			p.note("", n.Interface, "%s", t)
		}
		found := p.irqFindingsFor(n.Interface)
		pl.MovesIRQs = len(pl.IRQCPUs) > 0 && (len(found) > 0 || len(p.opts.IRQCPUs) > 0)
		if !pl.MovesIRQs {
			pl.IRQCPUs, pl.AppCPUs = appBesideIRQs(pl, n.IRQs)
		} else {
			moved = append(moved, p.moveIRQs(n, pl, found)...)
		}
		if p.opts.Profile == Latency {
			p.note("", n.Interface, "%s", coalesceAdvice(n.Interface))
		}
		p.plan.Placements = append(p.plan.Placements, pl)
	}
	if len(moved) > 0 {
		p.irqbalance(moved)
	}
}

// irqFindingsFor returns the IRQ findings doctor raised about iface.
func (p *planner) irqFindingsFor(iface string) map[string]bool {
	out := map[string]bool{}
	for _, id := range irqFindings() {
		if p.finding(id, iface) != nil {
			out[id] = true
		}
	}
	return out
}

// appBesideIRQs returns, when the IRQs stay, the CPUs they are routed to
// and where the application should run: in the chosen domain, off those.
func appBesideIRQs(pl Placement, irqs []inventory.IRQ) (routed, app []int) {
	routed = []int{}
	for _, q := range irqs {
		routed = union(routed, q.AffinityOrEffective())
	}
	if free := cpulist.Subtract(pl.L3Domain, routed); len(free) > 0 {
		return routed, free
	}
	return routed, pl.AppCPUs
}

// moveIRQs plans one affinity change per IRQ that is not yet on the
// placement's CPUs — an IRQ already there stays (placement.Moves), so the
// plan and its revert stay small — and returns every IRQ of the NIC (all
// of them are to be banned).
func (p *planner) moveIRQs(n *doctor.NICReport, pl Placement, found map[string]bool) []int {
	target := placement.Moves(n.IRQs, pl.IRQCPUs)
	var all []int
	for _, q := range sortedIRQs(n.IRQs) {
		all = append(all, q.IRQ)
		cpu, moves := target[q.IRQ]
		if !moves {
			continue
		}
		rel := fmt.Sprintf("proc/irq/%d/smp_affinity_list", q.IRQ)
		p.add(Change{
			Kind: KindIRQ, Target: fmt.Sprintf("irq %d", q.IRQ), Path: p.in.FS.Display(rel),
			Interface: n.Interface, Detail: q.Name,
			Before: cpulist.Format(q.Affinity), After: strconv.Itoa(cpu),
			Finding: p.attribute(q, found),
			Source:  fmt.Sprintf("%s's IRQs on %s (%s); to the one holding the fewest", n.Interface, cpulist.Format(pl.IRQCPUs), pl.Basis),
			Command: fmt.Sprintf("echo %d > %s", cpu, p.in.FS.Display(rel)),
		})
	}
	return all
}

func sortedIRQs(irqs []inventory.IRQ) []inventory.IRQ {
	s := slices.Clone(irqs)
	slices.SortFunc(s, func(a, b inventory.IRQ) int { return a.IRQ - b.IRQ })
	return s
}

// attribute names the finding an IRQ's move answers: remote node first,
// then the application's CPUs, then the L3 spread.
func (p *planner) attribute(q inventory.IRQ, found map[string]bool) string {
	routed := q.AffinityOrEffective()
	served := doctor.ServedOn(q)
	for _, id := range irqFindings() {
		if !found[id] {
			continue
		}
		switch id {
		case "irq.remote_numa":
			if len(cpulist.Subtract(routed, p.localOf(q))) > 0 {
				return id
			}
		case "irq.on_app_cpu":
			if len(cpulist.Intersect(union(routed, served), p.opts.AppCPUs)) > 0 {
				return id
			}
		default:
			return id
		}
	}
	for _, id := range irqFindings() {
		if found[id] {
			return id
		}
	}
	return ""
}

// localOf returns the local CPUs of the NIC owning IRQ q.
func (p *planner) localOf(q inventory.IRQ) []int {
	for _, n := range p.nics {
		if slices.ContainsFunc(n.IRQs, func(r inventory.IRQ) bool { return r.IRQ == q.IRQ }) {
			return placement.LocalCPUs(&p.in.Inventory.CPU, &n.NIC)
		}
	}
	return p.in.Inventory.CPU.Online
}

// untunable notes the findings no setting fixes, so the plan does not
// look like the whole answer.
func (p *planner) untunable() {
	tunable := []string{
		"sysctl.socket_buffers_small", "cpu.governor_not_performance", "queues.too_few", "ring.small",
		"mtu.not_jumbo", "irqbalance.running", "irq.remote_numa", "irq.on_app_cpu", "irq.spans_l3_domains",
	}
	for _, f := range p.rep.Findings {
		switch {
		case slices.Contains(roceFindings, f.ID) && !p.opts.RoCE:
			p.note(f.ID, f.Subject, "left alone without --roce (PFC, trust, ECN and MRRS must match the switches: ask for them by name): %s", f.Summary)
		case !slices.Contains(tunable, f.ID) && !slices.Contains(roceFindings, f.ID):
			p.note(f.ID, f.Subject, "not a setting (see linerate doctor): %s", f.Summary)
		}
	}
}

// irqbalanceFiles are where irqbalance's service reads its arguments:
// Debian and Ubuntu, then RHEL and SUSE.
func irqbalanceFiles() []string {
	return []string{"etc/default/irqbalance", "etc/sysconfig/irqbalance"}
}

// irqbalance bans the moved IRQs from a running irqbalance, which would
// otherwise move them back at its next pass (every 10 s). It edits the
// configuration file and restarts the service; it never stops it (other
// devices still need balancing) and never creates a file.
func (p *planner) irqbalance(irqs []int) {
	const id = "irqbalance.running"
	ib := p.in.Inventory.Host.IRQBalance
	if !ib.Running {
		return
	}
	var bans []string
	for _, q := range irqs {
		bans = append(bans, fmt.Sprintf("--banirq=%d", q))
	}
	for _, rel := range irqbalanceFiles() {
		cur, err := p.in.FS.ReadFile(rel)
		if hostfs.IsNotExist(err) {
			continue
		}
		if err != nil {
			p.note(id, "irqbalance", "reading %s: %v: irqbalance will move the pinned IRQs back; ban them yourself (IRQBALANCE_ARGS=\"%s\")", p.in.FS.Display(rel), err, strings.Join(bans, " "))
			return
		}
		before, after := string(cur), banIRQs(string(cur), irqs)
		if before == after {
			return
		}
		path := p.in.FS.Display(rel)
		p.add(Change{
			Kind: KindIRQBalance, Target: path, Path: path,
			Before: argsLine(before), After: argsLine(after), Finding: id,
			Source:  "irqbalance(1): banned IRQs keep the affinity they are given; the service restarts to read the file",
			Command: fmt.Sprintf("set %s in %s; systemctl restart irqbalance", argsLine(after), path),
		})
		return
	}
	p.note(id, "irqbalance", "irqbalance runs (pid %s) but neither /etc/default/irqbalance nor /etc/sysconfig/irqbalance exists here: it will move the pinned IRQs back within 10 s; tune creates no files and stops no services: add IRQBALANCE_ARGS=\"%s\" to its configuration and restart it",
		joinInts(ib.PIDs), strings.Join(bans, " "))
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// union returns the sorted set of CPUs in a or b.
func union(a, b []int) []int {
	m := slices.Concat(a, b)
	slices.Sort(m)
	return slices.Compact(m)
}
